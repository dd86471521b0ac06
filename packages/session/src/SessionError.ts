/**
 * The typed failures of the session layer.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import * as Schema from "effect/Schema"

/**
 * A session was created with an id the store already holds, or one its persistence holds (a
 * JSONL file, a PostgreSQL row) and is not resuming; or an open session was resumed.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionExistsError extends Schema.TaggedError<SessionExistsError>()("SessionExistsError", {
  ...HarnessError.fields("SESSION_EXISTS"),
  sessionId: Schema.String
}) {}

/**
 * Persisting a session failed. `failures` lists each failed hook's message when several
 * failed at one flush.
 *
 * @since 0.1.0
 * @category errors
 */
export class PersistenceError extends Schema.TaggedError<PersistenceError>()("PersistenceError", {
  ...HarnessError.fields("PERSISTENCE"),
  sessionId: Schema.String,
  failures: Schema.optionalKey(Schema.Array(Schema.String))
}) {}

/**
 * A persisted log has a malformed line that is not a torn last line.
 *
 * @since 0.1.0
 * @category errors
 */
export class CorruptLogError extends Schema.TaggedError<CorruptLogError>()("CorruptLogError", {
  ...HarnessError.fields("CORRUPT_LOG"),
  file: Schema.String,
  line: Schema.Int
}) {}

/**
 * A session already has a writer: another process holds the lock of its file, or another
 * agent drives it. `holder` describes who holds it, when known (e.g. `pid 4242 on host a`).
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionLockedError extends Schema.TaggedError<SessionLockedError>()("SessionLockedError", {
  ...HarnessError.fields("SESSION_LOCKED"),
  sessionId: Schema.String,
  holder: Schema.optionalKey(Schema.String)
}) {}

/**
 * A tool call was running when the process that ran it ended: resuming the session answered
 * it with this error, since whether the tool's effect happened is unknown.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolOutcomeUnknownError extends Schema.TaggedError<ToolOutcomeUnknownError>()("ToolOutcomeUnknownError", {
  ...HarnessError.fields("TOOL_OUTCOME_UNKNOWN"),
  tool: Schema.String,
  callId: Schema.String
}) {}

/**
 * A session was not created: its options are out of their range (see `SessionStore.create`);
 * the message names each problem.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidSessionError extends Schema.TaggedError<InvalidSessionError>()("InvalidSessionError", {
  ...HarnessError.fields("INVALID_SESSION")
}) {}

/**
 * An extension event's data does not fit its definition's Schema: nothing was appended. The
 * message lists every violation with its path.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidEventError extends Schema.TaggedError<InvalidEventError>()("InvalidEventError", {
  ...HarnessError.fields("INVALID_EVENT"),
  /** The event's type (`namespace:name`). */
  eventType: Schema.String
}) {}

/**
 * An event was appended to a session that is closed: nothing was appended. An extension
 * event's `append` fails with it; a core event's (the loop's own) dies with it.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionClosedError extends Schema.TaggedError<SessionClosedError>()("SessionClosedError", {
  ...HarnessError.fields("SESSION_CLOSED"),
  sessionId: Schema.String,
  /** The type of the event that was not appended. */
  eventType: Schema.String
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [
  SessionExistsError,
  PersistenceError,
  CorruptLogError,
  SessionLockedError,
  ToolOutcomeUnknownError,
  InvalidSessionError,
  InvalidEventError,
  SessionClosedError
] as const
