/**
 * Failures the loop itself reports.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import { Schema } from "effect"

/**
 * Something inside a turn died with an exception that is not a harness error (a bug). The
 * turn ends with an `error` event carrying this code; the agent goes on.
 *
 * @since 0.1.0
 * @category errors
 */
export class TurnDefectError extends Schema.TaggedError<TurnDefectError>()("TurnDefectError", {
  ...HarnessError.fields("DEFECT")
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [TurnDefectError] as const
