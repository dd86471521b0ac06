/**
 * Failures the loop itself reports.
 *
 * @since 0.1.0
 */
import { TurnResult } from "@dsh/agent"

/**
 * Something inside a turn died with an exception that is not a harness error (a bug); defined
 * in `@dsh/agent` (`TurnResult.TurnDefectError`), since `agent.run` fails with it.
 *
 * @since 0.1.0
 * @category errors
 */
export const TurnDefectError = TurnResult.TurnDefectError

/**
 * @since 0.1.0
 * @category errors
 */
export type TurnDefectError = TurnResult.TurnDefectError

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [TurnDefectError] as const
