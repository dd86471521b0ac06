/**
 * The invariants checker of dsh: a dev/test Layer that consumes every session log as a Stream
 * and fails on any violation of the event contract.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as InvariantErrors from "./InvariantError.ts"
/** @since 0.1.0 */
export { InvariantError } from "./InvariantError.ts"
/** @since 0.1.0 */
export { Invariants } from "./Invariants.ts"
/** @since 0.1.0 */
export * as Rules from "./Rules.ts"
