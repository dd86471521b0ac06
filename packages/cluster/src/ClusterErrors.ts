/**
 * The failures of agents on Effect Cluster that dsh defines itself. The others a client meets
 * are the agent's own (`AgentDisposedError`, `InvalidInputError`, the turn's typed failure of a
 * `Run`) and `effect/cluster`'s (`MailboxFull`, `PersistenceError`, …: the cluster's machinery).
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import { SessionEvent } from "@dsh/session"
import * as Schema from "effect/Schema"

/**
 * A `Run` (the one-call turn) whose message was taken by a turn that ended before the answer
 * reached the caller: the runner hosting the agent died mid-turn and the next owner closed the
 * turn when it resumed the session (`reason.kind === "interrupted"`), or the agent was moved
 * or disposed meanwhile (`disposed`, `aborted`). The message is in the session log, once; send
 * a new message to continue.
 *
 * @since 0.1.0
 * @category errors
 */
export class TurnInterruptedError extends Schema.TaggedError<TurnInterruptedError>()("TurnInterruptedError", {
  ...HarnessError.fields("TURN_INTERRUPTED"),
  sessionId: Schema.String,
  turn: Schema.Int,
  reason: SessionEvent.TurnEndReason
}) {}

/**
 * A runner or client Layer given options past their types (`ClusterRunner.layer`,
 * `ClusterClient.layer`): a port out of range, a database URL that is no text, a sharding
 * setting that is no duration or count, an unknown key. The message names each; nothing is
 * started.
 *
 * @since 0.1.0
 * @category errors
 */
export class ClusterConfigError extends Schema.TaggedError<ClusterConfigError>()("ClusterConfigError", {
  ...HarnessError.fields("CONFIG_INVALID")
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [TurnInterruptedError, ClusterConfigError] as const
