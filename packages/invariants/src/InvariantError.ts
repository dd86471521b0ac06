/**
 * The failure of the invariants checker.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import * as Schema from "effect/Schema"

/**
 * A session log broke the event contract: which rule, in which session, at which event.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvariantError extends Schema.TaggedError<InvariantError>()("InvariantError", {
  ...HarnessError.fields("INVARIANT"),
  rule: Schema.String,
  sessionId: Schema.String,
  seq: Schema.Int,
  eventType: Schema.String
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [InvariantError] as const
