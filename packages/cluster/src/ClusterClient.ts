/**
 * Reaching agents on the cluster from any process: {@link layer}, a client-only member of the
 * cluster (it hosts nothing; it finds each session's runner through the database), and
 * {@link agent}, a handle on the agent of one session id with the agent's calls — `send`,
 * `steer`, `inject`, `abort`, `run`, `events`, `status` — whose message ids it chooses
 * (a fresh UUID each, unless given one to retry with).
 *
 * @since 0.1.0
 */
import { InvalidInputError } from "@dsh/agent"
import { AdapterSettings, type Content, HarnessError } from "@dsh/llm"
import type { SessionEvent } from "@dsh/session"
import { NodeClusterSocket } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import type * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { ClusterError, MessageStorage, Runners, Sharding } from "effect/cluster"
import type { SqlClient, SqlError } from "effect/sql"
import { type Accepted, AgentEntity, Message, type MessageError, type RunError, type StatusReply, type TurnReply } from "./AgentEntity.ts"
import * as ClusterConfig from "./internal/config.ts"
import * as Database from "./internal/database.ts"
import { ClusterConfigError } from "./ClusterErrors.ts"
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
 * A client-only member of the cluster. Fails to build with the database's `SqlError` when it
 * cannot be reached, and with `ClusterConfigError` (`CONFIG_INVALID`), before anything
 * starts, for options past their types (a database that is no URL, a sharding setting that is
 * no duration or count, an unknown key), each named.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<
  Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage | SqlClient.SqlClient,
  SqlError.SqlError | Config.ConfigError | ClusterConfigError
> => {
  const shape = ClusterConfig.objectProblems("the options", options, "{ database, sharding? }")
  const unknown = shape.length > 0 ? undefined : AdapterSettings.unknownKeys("the options object", options, ["database", "sharding"])
  const problems = shape.length > 0 ? shape : [
    ...(unknown === undefined ? [] : [unknown]),
    ...ClusterConfig.databaseProblems(options.database),
    ...ClusterConfig.shardingProblems(options.sharding)
  ]
  if (problems.length > 0) {
    return Layer.unwrap(Effect.fail(new ClusterConfigError({ message: `the cluster client was not started: ${problems.join("; ")}` })))
  }
  const url = typeof options.database === "string" ? Redacted.make(options.database) : options.database
  const sharding = NodeClusterSocket.layer({
    clientOnly: true,
    storage: "sql",
    shardingConfig: ClusterConfig.complete(options.sharding, undefined)
  }).pipe(Layer.provide(Database.reachable))
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
 * on its runner (idle), the stream subscribes again, which starts it again. A `from` that is no
 * `seq` (an integer ≥ 0) or a `checkEvery` that is no duration above zero fails the stream with
 * `InvalidInputError` before anything is sent.
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
  readonly events: (from?: number, options?: EventsOptions) => Stream.Stream<SessionEvent.SessionEvent, InvalidInputError | ClientError>
  /** The agent's status, its next `seq` and its runner. */
  readonly status: Effect.Effect<StatusReply, InvalidInputError | ClientError>
}

const encodePayload = Schema.encodeUnknownResult(Message)

/**
 * The most JSON a message may hold. A runner reads the stored messages through a PostgreSQL
 * client whose messages are at most 16 MiB: one larger message would fail every read of its
 * shard's mailbox, stalling every session there, for good.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxMessageBytes = 4 * 1024 * 1024

/**
 * The payload of a message, or the agent's refusal of it (`InvalidInputError`, nothing sent):
 * what the types allow always encodes, but JavaScript and decoded JSON can pass a block of no
 * known type, an empty `messageId` or a `source` that is no string, which the protocol cannot
 * carry (encoding it on the way out would be a defect).
 */
const payloadOf = (sessionId: string, input: Input, options: MessageOptions | undefined) => {
  const payload = {
    messageId: options?.messageId ?? crypto.randomUUID(),
    input,
    ...(options?.source === undefined ? {} : { source: options.source })
  }
  const idProblem = messageIdProblem(payload.messageId)
  if (idProblem !== undefined) {
    return Effect.fail(
      new InvalidInputError({
        message: `a message for the agent of session ${JSON.stringify(sessionId)} was refused: its messageId ${idProblem}`,
        agentId: sessionId
      })
    )
  }
  const encoded = encodePayload(payload)
  const bytes = Result.isSuccess(encoded) ? Buffer.byteLength(JSON.stringify(encoded.success)) : 0
  if (bytes > maxMessageBytes) {
    return Effect.fail(
      new InvalidInputError({
        message: `a message for the agent of session ${JSON.stringify(sessionId)} was refused: it is ${bytes} bytes of JSON, ` +
          `more than the ${maxMessageBytes} a cluster message may hold (the runners read stored messages in batches of at most 16 MiB)`,
        agentId: sessionId
      })
    )
  }
  return Result.isSuccess(encoded)
    ? Effect.succeed(payload)
    : Effect.fail(
      new InvalidInputError({
        message: `a message for the agent of session ${JSON.stringify(sessionId)} was refused: it must be text or content ` +
          `blocks, with a non-empty messageId and a text source: ${encoded.failure.message}`,
        agentId: sessionId
      })
    )
}

/**
 * How often `events` checks where the agent runs, or why it cannot be asked: `from` must be a
 * `seq` (the protocol cannot carry another: encoding it would be a defect) and `checkEvery` a
 * duration longer than zero.
 */
const eventsSettings = (from: number, options: EventsOptions | undefined): Result.Result<Duration.Duration, string> => {
  if (!(Number.isSafeInteger(from) && from >= 0)) return Result.fail(`from must be a seq (an integer ≥ 0), got ${HarnessError.describe(from)}`)
  return AdapterSettings.duration("checkEvery", options?.checkEvery ?? Duration.seconds(1), "positive")
}

/**
 * The longest session id an agent may have on the cluster: its storage keeps entity ids as
 * `varchar(255)`.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxSessionIdLength = 255

// a UTF-16 code unit of a surrogate pair without its other half
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * Why `id` cannot address an agent, or undefined when it can. The cluster carries and stores
 * entity ids as UTF-8 text: a lone surrogate (no Unicode) would arrive as U+FFFD, so that
 * distinct ids (`"a\ud800"`, `"a\udfff"`) would reach one agent and one session; PostgreSQL
 * keeps no NUL.
 */
const sessionIdProblem = (id: unknown): string | undefined =>
  typeof id !== "string"
    ? `it must be a string, got ${HarnessError.describe(id)}`
    : [...id].length > maxSessionIdLength
    ? `it is ${[...id].length} characters long, more than the ${maxSessionIdLength} the cluster's storage keeps for an entity id`
    : storedTextProblem(id, "so that another id would reach the same agent", "it ")

/**
 * Why an id cannot be stored as text as it is, or undefined: PostgreSQL keeps no NUL, and a
 * lone surrogate (no Unicode) is carried as U+FFFD, `then` what follows from that.
 */
const storedTextProblem = (id: string, then: string, subject = ""): string | undefined =>
  id.includes("\u0000")
    ? `${subject}holds a NUL character, which the cluster's PostgreSQL storage cannot keep`
    : loneSurrogate.test(id)
    ? `${subject}holds a lone surrogate (it is not well-formed Unicode), which the cluster would carry as U+FFFD, ${then}`
    : undefined

/**
 * Why a message id cannot key a message, or undefined when it can: the cluster stores it as
 * text, where a NUL cannot be kept and a lone surrogate turns into U+FFFD — two ids would then
 * be one, and the second message would be taken for the first and dropped.
 */
const messageIdProblem = (id: unknown): string | undefined =>
  typeof id !== "string" || id === ""
    ? `must be a non-empty string, got ${id === "" ? "an empty one" : HarnessError.describe(id)}`
    : storedTextProblem(id, "so that another id would be taken for it")

/** The handle for an id no agent may have: every call fails with `InvalidInputError`, nothing is sent. */
const refusedAgent = (sessionId: string, problem: string): RemoteAgent => {
  const refusal = new InvalidInputError({
    message: `session id ${typeof sessionId === "string" ? JSON.stringify(sessionId.length > 80 ? `${sessionId.slice(0, 80)}…` : sessionId) : HarnessError.describe(sessionId)} cannot address an agent: ${problem}`,
    agentId: String(sessionId)
  })
  return {
    sessionId,
    send: () => Effect.fail(refusal),
    steer: () => Effect.fail(refusal),
    inject: () => Effect.fail(refusal),
    abort: () => Effect.void,
    run: () => Effect.fail(refusal),
    events: () => Stream.fail(refusal),
    status: Effect.fail(refusal)
  }
}

/**
 * A handle on the agent of session `sessionId`, wherever it runs. `send`, `steer` and `inject`
 * succeed once the message is committed in the session log (`{ seq, duplicate }`); `run`
 * with the turn's result, or fails with the turn's typed error; `events(from)` streams the
 * session's events from a `seq`, following the agent from runner to runner ({@link EventsOptions});
 * `status` says the agent's status and runner. Each can also fail with the
 * cluster's errors (`MailboxFull`, `PersistenceError`, …). A call waits while no runner holds
 * the session's shard (bound it with `Effect.timeout`). A message the protocol cannot carry (a
 * block of no known type, an empty `messageId`, possible past the types) fails with
 * `InvalidInputError` before it is sent; every call of a session whose agent the runner cannot
 * create (its options out of range, the empty id) fails with that refusal, and so does every
 * call for an id the cluster cannot carry as it is (a NUL, a lone surrogate), before anything
 * is sent (`abort` succeeds: there is nothing to abort).
 *
 * @since 0.1.0
 * @category constructors
 */
export const agent = (sessionId: string): Effect.Effect<RemoteAgent, never, Sharding.Sharding> =>
  Effect.map(AgentEntity.client, (clientFor): RemoteAgent => {
    const problem = sessionIdProblem(sessionId)
    if (problem !== undefined) return refusedAgent(sessionId, problem)
    const client = clientFor(sessionId)
    return {
      sessionId,
      send: (input, options) => Effect.flatMap(payloadOf(sessionId, input, options), client.Send),
      steer: (input, options) => Effect.flatMap(payloadOf(sessionId, input, options), client.Steer),
      inject: (input, options) => Effect.flatMap(payloadOf(sessionId, input, options), client.Inject),
      // a reason past the types is described, as a local agent's is: the protocol carries text
      abort: (reason) => client.Abort(reason === undefined ? {} : { reason: typeof reason === "string" ? reason : HarnessError.describe(reason) }),
      run: (input, options) => Effect.flatMap(payloadOf(sessionId, input, options), client.Run),
      events: (from = 0, options) => {
        const every = eventsSettings(from, options)
        if (Result.isFailure(every)) {
          return Stream.fail(
            new InvalidInputError({ message: `the events of session ${JSON.stringify(sessionId)} were refused: ${every.failure}`, agentId: sessionId })
          )
        }
        return options?.follow === false
          ? client.Events({ from })
          : Follow.follow(
            { runner: Effect.map(client.Status(), (status) => status.runner), subscribe: (at) => client.Events({ from: at }) },
            from,
            every.success
          )
      },
      status: client.Status()
    }
  })
