/**
 * Reaching agents on the cluster from any process: {@link layer}, a client-only member of the
 * cluster (it hosts nothing; it finds each session's runner through the database), and
 * {@link agent}, a handle on the agent of one session id with the agent's calls — `send`,
 * `steer`, `inject`, `abort`, `run`, `events`, `status` — whose message ids it chooses
 * (a fresh UUID each, unless given one to retry with).
 *
 * @since 0.1.0
 */
import type { Content } from "@dsh/llm"
import type { SessionEvent } from "@dsh/session"
import { NodeClusterSocket } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import type * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Stream from "effect/Stream"
import type { ClusterError, MessageStorage, Runners, Sharding } from "effect/cluster"
import type { SqlClient, SqlError } from "effect/sql"
import { type Accepted, AgentEntity, type MessageError, type RunError, type StatusReply, type TurnReply } from "./AgentEntity.ts"
import * as ClusterConfig from "./internal/config.ts"
import * as Follow from "./internal/follow.ts"

/**
 * Options of {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The cluster's PostgreSQL database (the runners' `database`). */
  readonly database: string | Redacted.Redacted<string>
  /** The cluster's sharding settings; `shardsPerGroup` must be the runners'. */
  readonly sharding?: ClusterConfig.Overrides
}

/**
 * A client-only member of the cluster.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage | SqlClient.SqlClient, SqlError.SqlError | Config.ConfigError> => {
  const url = typeof options.database === "string" ? Redacted.make(options.database) : options.database
  const sharding = NodeClusterSocket.layer({
    clientOnly: true,
    storage: "sql",
    shardingConfig: ClusterConfig.complete(options.sharding, undefined)
  })
  return sharding.pipe(Layer.provideMerge(PgClient.layer({ url, applicationName: "dsh cluster client" })))
}

/**
 * Options of a message: its id (a fresh UUID when omitted; give the id of a call whose answer
 * was lost to retry it without sending twice) and its `source`.
 *
 * @since 0.1.0
 * @category models
 */
export interface MessageOptions {
  readonly messageId?: string
  readonly source?: string
}

/**
 * How a call fails on the cluster's side: the entity's mailbox is full, the message is being
 * processed already, the cluster's storage failed, or the session's shard is not (yet) assigned.
 *
 * @since 0.1.0
 * @category models
 */
export type ClientError =
  | ClusterError.MailboxFull
  | ClusterError.AlreadyProcessingMessage
  | ClusterError.PersistenceError
  | ClusterError.EntityNotAssignedToRunner

/**
 * What a message may be: text, or content blocks.
 *
 * @since 0.1.0
 * @category models
 */
export type Input = string | ReadonlyArray<Content.ContentBlock>

/**
 * Options of `events`. A subscription to an agent whose runner dies is not ended by the
 * cluster, so by default the stream checks where the agent runs every `checkEvery` (1 second)
 * and, when it moved, subscribes again from the next `seq` (no event missed or repeated).
 * `follow: false`: one subscription, which ends when the agent stops on its runner (and is left
 * waiting if that runner dies). A following subscriber keeps the agent hosted: when it stops
 * on its runner (idle), the stream subscribes again, which starts it again.
 *
 * @since 0.1.0
 * @category models
 */
export interface EventsOptions {
  readonly follow?: boolean
  readonly checkEvery?: Duration.Input
}

/**
 * A handle on the agent of one session, wherever it runs (see {@link agent}).
 *
 * @since 0.1.0
 * @category models
 */
export interface RemoteAgent {
  readonly sessionId: string
  /** Queues a message; succeeds once it is committed in the session log. */
  readonly send: (input: Input, options?: MessageOptions) => Effect.Effect<Accepted, MessageError | ClientError>
  /** Steers the running turn (a send when idle); succeeds once committed. */
  readonly steer: (input: Input, options?: MessageOptions) => Effect.Effect<Accepted, MessageError | ClientError>
  /** Appends context without starting a turn; succeeds once committed. */
  readonly inject: (input: Input, options?: MessageOptions) => Effect.Effect<Accepted, MessageError | ClientError>
  /** Aborts the running turn. */
  readonly abort: (reason?: string) => Effect.Effect<void, ClientError>
  /** The one-call turn: the turn's result, or its typed failure. */
  readonly run: (input: Input, options?: MessageOptions) => Effect.Effect<TurnReply, RunError | ClientError>
  /**
   * The session's events from `from` (0 by default): the logged ones, then each later one,
   * following the agent when it moves to another runner (see {@link EventsOptions}); it ends
   * only when its consumer stops.
   */
  readonly events: (from?: number, options?: EventsOptions) => Stream.Stream<SessionEvent.SessionEvent, ClientError>
  /** The agent's status, its next `seq` and its runner. */
  readonly status: Effect.Effect<StatusReply, ClientError>
}

const payload = (input: Input, options: MessageOptions | undefined) => ({
  messageId: options?.messageId ?? crypto.randomUUID(),
  input,
  ...(options?.source === undefined ? {} : { source: options.source })
})

/**
 * A handle on the agent of session `sessionId`, wherever it runs. `send`, `steer` and `inject`
 * succeed once the message is committed in the session log (`{ seq, duplicate }`); `run`
 * with the turn's result, or fails with the turn's typed error; `events(from)` streams the
 * session's events from a `seq`, following the agent from runner to runner ({@link EventsOptions});
 * `status` says the agent's status and runner. Each can also fail with the
 * cluster's errors (`MailboxFull`, `PersistenceError`, …). A call waits while no runner holds
 * the session's shard (bound it with `Effect.timeout`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const agent = (sessionId: string): Effect.Effect<RemoteAgent, never, Sharding.Sharding> =>
  Effect.map(AgentEntity.client, (clientFor): RemoteAgent => {
    const client = clientFor(sessionId)
    return {
      sessionId,
      send: (input, options) => client.Send(payload(input, options)),
      steer: (input, options) => client.Steer(payload(input, options)),
      inject: (input, options) => client.Inject(payload(input, options)),
      abort: (reason) => client.Abort(reason === undefined ? {} : { reason }),
      run: (input, options) => client.Run(payload(input, options)),
      events: (from = 0, options) =>
        options?.follow === false
          ? client.Events({ from })
          : Follow.follow(
            { runner: Effect.map(client.Status(), (status) => status.runner), subscribe: (at) => client.Events({ from: at }) },
            from,
            Duration.fromInputUnsafe(options?.checkEvery ?? Duration.seconds(1))
          ),
      status: client.Status()
    }
  })
