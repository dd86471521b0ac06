/**
 * The typed failures of the permission policy. Only building a policy can fail: a call the
 * policy refuses is not a failure but a `TOOL_DENIED` tool result, and a prompt that fails
 * ends in a denial too.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import * as Schema from "effect/Schema"

/**
 * One thing wrong with a policy: the index of the rule (absent for the policy as a whole),
 * the field, and what is wrong in words.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Problem = Schema.Struct({
  rule: Schema.optionalKey(Schema.Int),
  field: Schema.optionalKey(Schema.String),
  message: Schema.String
})

/**
 * @since 0.1.0
 * @category models
 */
export interface Problem extends Schema.Schema.Type<typeof Problem> {}

/**
 * A policy was built from bad rules. `problems` lists every one, each with its rule's index
 * and field; the message lists the same in words:
 *
 * ```text
 * Invalid permission policy (2 problems):
 * - rules[0].decision: Expected "allow" | "deny" | "ask", got "permit"
 * - rules[2].command: "git status; rm -rf /" is a shell line, not a command pattern (it holds ";")
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class PolicyInvalidError extends Schema.TaggedError<PolicyInvalidError>()("PolicyInvalidError", {
  ...HarnessError.fields("POLICY_INVALID"),
  problems: Schema.Array(Problem)
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [PolicyInvalidError] as const
