/**
 * The session event of a permission decision, `permission:decision`: one for every call the
 * policy decides, appended to the call's session (`ToolContext.current`) after its
 * `tool/call` and before its `tool/result`. It says which call (`callId`, `tool`), what was
 * decided, which rule decided (its index in the policy, or `"default"`), and why.
 *
 * The decisions:
 *
 * - `allow` / `deny`: the policy decided by itself (a deny is also what the model reads as
 *   `TOOL_DENIED`). An `allow` with `always` was allowed by an earlier "always" answer of the
 *   session; a `deny` of an asking rule means no one could be asked (no `PermissionPrompt`,
 *   or the prompt failed), the reason says which.
 * - `ask-allow` / `ask-deny` / `ask-always`: the user answered yes, no, or always. With
 *   `ask-always`, `always` is the allow rule the answer added for the rest of the session
 *   (absent when no rule could allow exactly that call again: the answer allowed that call
 *   only).
 *
 * The log is where "always" answers are kept: the policy reads a session's `ask-always` rules
 * back from it, so they hold for the rest of the session — on a resumed or forked session too —
 * and nowhere else.
 *
 * @since 0.1.0
 */
import { SessionEvent } from "@dsh/session"
import * as Schema from "effect/Schema"
import { Rule } from "./Policy.ts"

/**
 * What was decided for a call.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Outcome = Schema.Literals(["allow", "deny", "ask-allow", "ask-deny", "ask-always"])

/**
 * @since 0.1.0
 * @category models
 */
export type Outcome = typeof Outcome.Type

/**
 * The data of a decision event.
 *
 * @since 0.1.0
 * @category schemas
 */
export const DecisionData = Schema.Struct({
  callId: Schema.String,
  tool: Schema.String,
  decision: Outcome,
  rule: Schema.Union([Schema.Int, Schema.Literal("default")]),
  reason: Schema.String,
  always: Schema.optionalKey(Rule)
})

/**
 * @since 0.1.0
 * @category models
 */
export interface DecisionData extends Schema.Schema.Type<typeof DecisionData> {}

/**
 * The `permission:decision` event type.
 *
 * @since 0.1.0
 * @category events
 */
export const Decision = SessionEvent.define("permission:decision", DecisionData)

/**
 * The decisions logged in a session's events, in order.
 *
 * @since 0.1.0
 * @category getters
 */
export const decisionsOf = (events: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<DecisionData> =>
  events.flatMap((event) => {
    const data = Decision.decode(event)
    return data === undefined ? [] : [data]
  })
