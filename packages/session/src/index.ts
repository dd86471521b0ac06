/**
 * Event-sourced sessions for dsh: the event vocabulary, the append-only log exposed as a
 * gapless Stream, derivation of the message history, the session store, the flush checkpoint
 * and JSONL persistence.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Closing from "./Closing.ts"
/** @since 0.1.0 */
export * as Compaction from "./Compaction.ts"
/** @since 0.1.0 */
export * as Derivation from "./Derivation.ts"
/** @since 0.1.0 */
export { FlushCheckpoint } from "./FlushCheckpoint.ts"
/** @since 0.1.0 */
export type { FlushHook } from "./FlushCheckpoint.ts"
/** @since 0.1.0 */
export * as Freeze from "./Freeze.ts"
/** @since 0.1.0 */
export * as JsonlSessions from "./JsonlSessions.ts"
/** @since 0.1.0 */
export * as Session from "./Session.ts"
/** @since 0.1.0 */
export * as SessionErrors from "./SessionError.ts"
/** @since 0.1.0 */
export * as SessionEvent from "./SessionEvent.ts"
/** @since 0.1.0 */
export { SessionStore } from "./SessionStore.ts"
/** @since 0.1.0 */
export type { Admission, AdmissionError, CreateOptions } from "./SessionStore.ts"
