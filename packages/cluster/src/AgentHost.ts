/**
 * Serves the agent entity (`AgentEntity`) on a runner: for each session id the runner owns, an
 * agent created on the runner's agent graph (`Agents`), its session resumed from PostgreSQL
 * (`PgSessions`) when the database has it — a turn the previous owner left open is closed
 * `interrupted` before the agent serves (the crash-closing of `resume`) — or new when not.
 *
 * Use {@link layer} inside a composition of your own (tools, prompt sections, hooks), or
 * `ClusterRunner.layer` for the whole runner process.
 *
 * @since 0.1.0
 */
import { type Agent, type Agents, AgentHooks, type Hooks, InvalidInputError } from "@dsh/agent"
import { AdapterSettings, History, type Message, ScopedList } from "@dsh/llm"
import type { FlushCheckpoint } from "@dsh/session"
import type { PgSessions } from "@dsh/sql-sessions"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import { Entity, type Sharding } from "effect/cluster"
import type { SqlClient } from "effect/sql"
import { AgentEntity, MessageId } from "./AgentEntity.ts"
import * as Host from "./internal/host.ts"

/**
 * How the host creates the agent of a session it serves: `Agents.create`'s options but the
 * session and the id, which the entity gives, and the entity's own.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends Omit<Agent.Options, "session" | "id"> {
  /**
   * How long a hosted agent waits without a message before the runner stops it (its session is
   * flushed and let go; the next message resumes it): 5 minutes by default.
   */
  readonly maxIdleTime?: Duration.Input
  /**
   * How long a new owner keeps retrying a session another writer still holds (the previous
   * owner's writer lock, until PostgreSQL ends its connection or it closes the session) before
   * the entity fails and the cluster retries it: 30 seconds by default.
   */
  readonly lockWait?: Duration.Input
}

/**
 * The request middleware that takes the message id blocks (`AgentEntity.MessageId`) out of
 * every model request: they are for the log, not for the model. {@link layer} registers it.
 *
 * @since 0.1.0
 * @category middleware
 */
export const withoutMessageIds: Hooks.RequestMiddleware = {
  name: "dsh.cluster/without-message-ids",
  around: (input, next) => {
    const messages = History.toArray(input.request.messages)
    if (!messages.some(carriesId)) return next(input)
    return next({ ...input, request: { ...input.request, messages: History.fromIterable(messages.map(stripIds)) } })
  }
}

const carriesId = (message: Message.Message): boolean => message.content.some(MessageId.is)

const stripIds = (message: Message.Message): Message.Message =>
  carriesId(message) ? { ...message, content: message.content.filter((block) => !MessageId.is(block)) } : message

/** The handlers of a hosted agent. */
const serving = (hosted: Host.Hosted) =>
  AgentEntity.of({
    Send: ({ payload }) => Host.deliver(hosted, "send", payload),
    Steer: ({ payload }) => Host.deliver(hosted, "steer", payload),
    Inject: ({ payload }) => Host.deliver(hosted, "inject", payload),
    Abort: ({ payload }) => hosted.agent.abort(payload.reason),
    Run: ({ payload }) => Host.run(hosted, payload),
    Events: ({ payload }) => hosted.session.streamFrom(payload.from),
    Status: () =>
      Effect.all({ status: hosted.agent.status, nextSeq: hosted.session.seq }).pipe(
        Effect.map(({ nextSeq, status }) => ({ status, nextSeq, runner: hosted.runner }))
      )
  })

/**
 * The handlers of an agent the runner cannot create (its options out of their ranges, a
 * session id no session may have): every call fails with the refusal, typed, instead of
 * waiting on an entity the cluster would retry forever; there is nothing to abort.
 */
const refusing = (refusal: InvalidInputError) =>
  AgentEntity.of({
    Send: () => Effect.fail(refusal),
    Steer: () => Effect.fail(refusal),
    Inject: () => Effect.fail(refusal),
    Abort: () => Effect.void,
    Run: () => Effect.fail(refusal),
    Events: () => Stream.fail(refusal),
    Status: () => Effect.fail(refusal)
  })

/** A duration setting of the host, above zero, or why it cannot be used. */
const durationSetting = (name: string, input: Duration.Input | undefined, fallback: Duration.Duration): Result.Result<Duration.Duration, string> =>
  input === undefined ? Result.succeed(fallback) : AdapterSettings.duration(`agent.${name}`, input, "positive")

/**
 * The entity's handlers on this runner, and {@link withoutMessageIds} on the agent hooks. It
 * requires the agent graph (`Agents`, `AgentHooks`, `FlushCheckpoint`), `PgSessions` with its
 * `SqlClient` (the same database as the cluster's storage) and `Sharding`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<never, never, Agents | AgentHooks | FlushCheckpoint | PgSessions.PgSessions | SqlClient.SqlClient | Sharding.Sharding> => {
  const { lockWait, maxIdleTime, ...agent } = options
  const lock = durationSetting("lockWait", lockWait, Duration.seconds(30))
  const idle = durationSetting("maxIdleTime", maxIdleTime, Duration.minutes(5))
  // a setting that cannot be used makes every agent one the runner cannot create, as agent
  // options out of their ranges do: each call is refused with it, typed
  const problem = Result.isFailure(lock) ? lock.failure : Result.isFailure(idle) ? idle.failure : undefined
  const handlers = problem === undefined
    ? Host.open({ agent, lockWait: Result.getOrThrow(lock) }).pipe(
      Effect.map(serving),
      Effect.catch((refusal) => Effect.succeed(refusing(refusal)))
    )
    : Effect.map(Entity.CurrentAddress, ({ entityId }) =>
      refusing(new InvalidInputError({ message: `the agent of session ${entityId} cannot be created: ${problem}`, agentId: entityId })))
  const entity = AgentEntity.toLayer(
    handlers,
    // handlers of one agent run side by side (a long Events stream, a Send queued behind a
    // running turn, an Abort for it); the agent orders the messages it is given
    { concurrency: "unbounded", maxIdleTime: Result.getOrElse(idle, () => Duration.minutes(5)) }
  )
  const hooks = Layer.effectDiscard(AgentHooks.use((hooks) => ScopedList.inOpenScope(hooks.request.register(withoutMessageIds))))
  return Layer.merge(entity, hooks)
}
