/**
 * Testing for dsh: a test Layer with a scripted model, in-memory sessions and the invariants
 * checker, and record and replay: a replay model answering from a recorded session log.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Replay from "./Replay.ts"
/** @since 0.1.0 */
export * as Testing from "./Testing.ts"
