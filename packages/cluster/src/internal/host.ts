/**
 * The machinery of a hosted agent: opening the agent of a session on the runner that owns it
 * (resume from PostgreSQL, or a fresh session), delivering messages exactly once into its log
 * (the message id block, looked up before delivering), acknowledging them once committed, and
 * answering a `Run` from the log when its turn is already there.
 */
import { type Agent, Agents, InvalidInputError, TurnDefectError, TurnResult } from "@dsh/agent"
import { Content, type HarnessError } from "@dsh/llm"
import { FlushCheckpoint, type Session, type SessionEvent } from "@dsh/session"
import { PgSessions } from "@dsh/sql-sessions"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Entity } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { MessageId, runErrorClasses, type RunError, type TurnReply } from "../AgentEntity.ts"
import { TurnInterruptedError } from "../ClusterErrors.ts"

/** One hosted agent: its session, and where each message id sits in the log (read lazily). */
export interface Hosted {
  readonly sessionId: string
  readonly agent: Agent.Agent
  readonly session: Session.Session
  readonly runner: string
  readonly checkpoint: FlushCheckpoint["Service"]
  /** message id → the seq and type of the event that logged it */
  readonly index: Map<string, Logged>
  /** the events before this seq are in `index` */
  indexed: number
}

/** Where and as what a message id was logged. */
export interface Logged {
  readonly seq: number
  readonly type: SessionEvent.SessionEvent["type"]
}

/** What the host needs to know of the agent to create. */
export interface OpenOptions {
  readonly agent: Omit<Agent.Options, "session" | "id">
  readonly lockWait: Duration.Duration
}

const lockRetry = Schedule.spaced(Duration.millis(200))

/** The id blocks of a message event (user, steering, context); none for other events. */
export const messageIdsOf = (event: SessionEvent.SessionEvent): ReadonlyArray<string> => {
  if (event.type !== "user/message" && event.type !== "steering/message" && event.type !== "context/message") return []
  const data = event.data as { readonly content: ReadonlyArray<Content.ContentBlock> }
  return data.content.flatMap((block) => {
    const decoded = MessageId.decode(block)
    return decoded === undefined ? [] : [decoded.id]
  })
}

/**
 * The agent of the session this entity is: resumed from the database when it has the session,
 * else new. Fails with the agent's `InvalidInputError` when it cannot be created (the options
 * out of their ranges, an id no session may have): that entity never will be.
 */
export const open = (options: OpenOptions): Effect.Effect<
  Hosted,
  InvalidInputError,
  Agents | FlushCheckpoint | PgSessions.PgSessions | SqlClient.SqlClient | Entity.CurrentAddress | Entity.CurrentRunnerAddress | Scope.Scope
> =>
  Effect.gen(function*() {
    const { entityId } = yield* Entity.CurrentAddress
    const address = yield* Entity.CurrentRunnerAddress
    const agents = yield* Agents
    const checkpoint = yield* FlushCheckpoint
    const stored = yield* isStored(entityId)
    const agent = stored
      ? yield* Effect.flatMap(resumeWhenFree(entityId, options.lockWait), ({ session }) =>
        agents.create({ ...options.agent, session: { resume: session } }))
      : yield* agents.create({ ...options.agent, session: { id: entityId } })
    return {
      sessionId: entityId,
      agent,
      session: agent.session,
      runner: `${address.host}:${address.port}`,
      checkpoint,
      index: new Map(),
      indexed: 0
    }
  }).pipe(
    // a session the database cannot give (the server down, a log that does not decode) is a
    // defect of this entity: the cluster retries it (defectRetryPolicy), the messages wait; an
    // agent refused at its creation would be refused at every retry, so its refusal stands
    Effect.catch((error) => (error._tag === "InvalidInputError" ? refusalOf(error) : Effect.die(error))),
    Effect.withSpan("AgentHost.open")
  )

/**
 * The agent's refusal in the words of the session the caller addressed: the agent has no id
 * of its own the caller knows (a fresh UUID), the session id is what it asked for.
 */
const refusalOf = (error: InvalidInputError): Effect.Effect<never, InvalidInputError, Entity.CurrentAddress> =>
  Effect.flatMap(Entity.CurrentAddress, ({ entityId }) =>
    Effect.fail(
      new InvalidInputError({
        message: `the agent of session ${JSON.stringify(entityId)} cannot be created: ${error.message.replace(/^agent \S+ was not created: /, "")}`,
        agentId: entityId
      })
    ))

const isStored = (sessionId: string) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.map(
      sql<{ readonly one: number }>`SELECT 1 AS one FROM dsh_sessions WHERE session_id = ${sessionId}`,
      (rows) => rows.length > 0
    )
  )

// The previous owner's writer lock goes when its connection does (a killed runner's at once, a
// stopping one's when it closes the session): until then the resume is SESSION_LOCKED. Retried
// for `lockWait`, then the failure stands (the entity dies and the cluster retries it).
const resumeWhenFree = (sessionId: string, lockWait: Duration.Duration) =>
  PgSessions.PgSessions.use((pg) =>
    pg.resume(sessionId).pipe(
      Effect.retry({
        while: (error) => error._tag === "SessionLockedError",
        schedule: lockRetry,
        times: Math.max(1, Math.ceil(Duration.toMillis(lockWait) / 200))
      })
    ))

/** Where the log holds message `id`, reading the events logged since the last lookup. */
export const lookup = (hosted: Hosted, id: string): Effect.Effect<Logged | undefined> =>
  Effect.map(hosted.session.eventsFrom(hosted.indexed), (events) => {
    for (const event of events) {
      for (const logged of messageIdsOf(event)) if (!hosted.index.has(logged)) hosted.index.set(logged, { seq: event.seq, type: event.type })
      hosted.indexed = event.seq + 1
    }
    return hosted.index.get(id)
  })

/** What a message of each kind is logged as (a steer while idle is a user message). */
const loggedAs: Record<Kind | "run", ReadonlyArray<string>> = {
  send: ["user/message"],
  run: ["user/message"],
  steer: ["steering/message", "user/message"],
  inject: ["context/message"]
}

/**
 * The log holds the id as another kind of message: the cluster keys messages by their RPC, so
 * the two were both delivered, and taking one for the other would answer the wrong message (or
 * look for the turn of a message no turn took, for ever).
 */
const takenAlready = (hosted: Hosted, kind: Kind | "run", id: string, logged: Logged): InvalidInputError | undefined =>
  loggedAs[kind].includes(logged.type)
    ? undefined
    : new InvalidInputError({
      message: `the ${kind} of message ${JSON.stringify(id)} to session ${JSON.stringify(hosted.sessionId)} was refused: ` +
        `that id is taken already by the ${logged.type} at seq ${logged.seq}; give every message an id of its own`,
      agentId: hosted.sessionId
    })

/** The content to give the agent: the input's blocks and the id block. */
export const withId = (input: string | ReadonlyArray<Content.ContentBlock>, id: string): ReadonlyArray<Content.ContentBlock> => [
  ...(typeof input === "string" ? [Content.text(input)] : input),
  MessageId.make({ id })
]

// A flush that fails (the database down for a moment) is retried a few times; one that keeps
// failing leaves the message unacknowledged: the handler dies, the cluster delivers it again.
const commit = (hosted: Hosted) =>
  hosted.checkpoint.flush(hosted.session).pipe(
    Effect.retry({ schedule: Schedule.spaced(Duration.millis(200)), times: 10 }),
    Effect.orDie
  )

/** Waits until message `id` is logged at or after `from`: its seq, or dies when the session closed first. */
const awaitLogged = (hosted: Hosted, id: string, from: number) =>
  hosted.session.streamFrom(from).pipe(
    Stream.filter((event) => messageIdsOf(event).includes(id)),
    Stream.runHead,
    Effect.flatMap(Option.match({
      onNone: () => Effect.die(new Error(`session ${hosted.sessionId} closed before message ${id} was logged`)),
      onSome: (event) => Effect.succeed(event.seq)
    }))
  )

/** How a message is given to the agent. */
export type Kind = "send" | "steer" | "inject"

/**
 * Delivers a message once: when the log holds its id already, only makes sure it is committed;
 * else gives it to the agent, waits until it is logged, and commits it. Acknowledged (this
 * succeeds) once the message is committed.
 */
export const deliver = (
  hosted: Hosted,
  kind: Kind,
  payload: { readonly messageId: string; readonly input: string | ReadonlyArray<Content.ContentBlock>; readonly source?: string }
) =>
  Effect.gen(function*() {
    const known = yield* lookup(hosted, payload.messageId)
    if (known !== undefined) {
      const taken = takenAlready(hosted, kind, payload.messageId, known)
      if (taken !== undefined) return yield* taken
      yield* commit(hosted)
      return { seq: known.seq, duplicate: true }
    }
    const from = yield* hosted.session.seq
    const content = withId(payload.input, payload.messageId)
    const options = payload.source === undefined ? undefined : { source: payload.source }
    yield* hosted.agent[kind](content, options)
    const seq = yield* awaitLogged(hosted, payload.messageId, from)
    yield* commit(hosted)
    return { seq, duplicate: false }
  }).pipe(Effect.withSpan(`AgentHost.${kind}`, { attributes: { "dsh.session": hosted.sessionId } }))

const knownTags = new Set<string>(runErrorClasses.map((errorClass) => errorClass.fields._tag.schema.literal as string))

/** A turn's failure as the protocol carries it: a class it knows as it is, another as `TurnDefectError`. */
export const toRunError = (error: HarnessError.HarnessError): RunError =>
  knownTags.has(error._tag)
    ? error as RunError
    : new TurnDefectError({ message: `the turn failed with ${error._tag} (${error.code}): ${error.message}` })

const replyOf = (result: {
  readonly turn: number
  readonly text: string
  readonly toolCalls: TurnReply["toolCalls"]
  readonly usage: TurnReply["usage"]
  readonly reason: TurnReply["reason"]
}): TurnReply => ({ turn: result.turn, text: result.text, toolCalls: result.toolCalls, usage: result.usage, reason: result.reason })

/**
 * The one-call turn, once: a message the log holds already is answered from the log (its
 * turn's result, waiting for the turn's end when it still runs here); else `agent.run`.
 */
export const run = (
  hosted: Hosted,
  payload: { readonly messageId: string; readonly input: string | ReadonlyArray<Content.ContentBlock>; readonly source?: string }
): Effect.Effect<TurnReply, RunError> =>
  Effect.gen(function*() {
    const known = yield* lookup(hosted, payload.messageId)
    if (known !== undefined) {
      const taken = takenAlready(hosted, "run", payload.messageId, known)
      return yield* (taken === undefined ? answerFromLog(hosted, known.seq) : Effect.fail(taken))
    }
    const content = withId(payload.input, payload.messageId)
    const options = payload.source === undefined ? {} : { source: payload.source }
    const result = yield* hosted.agent.run(content, options).pipe(Effect.mapError(toRunError))
    return replyOf(result)
  }).pipe(Effect.withSpan("AgentHost.run", { attributes: { "dsh.session": hosted.sessionId } }))

/** The result of the turn that logged the message at `seq`, from the log (after its end). */
const answerFromLog = (hosted: Hosted, seq: number): Effect.Effect<TurnReply, RunError> =>
  Effect.gen(function*() {
    const before = yield* hosted.session.eventsFrom(0)
    const start = turnStartBefore(before, seq)
    if (start === undefined) return yield* Effect.die(new Error(`message at seq ${seq} of ${hosted.sessionId} is in no turn`))
    const events = yield* hosted.session.streamFrom(start.seq).pipe(
      Stream.takeUntil((event) => event.type === "turn/end"),
      Stream.runCollect
    )
    const end = events.at(-1)
    if (end === undefined || end.type !== "turn/end") {
      return yield* Effect.die(new Error(`session ${hosted.sessionId} closed before turn ${start.turn} ended`))
    }
    yield* commit(hosted)
    const result = TurnResult.fromEvents(start.turn, events, undefined)
    if (result.reason.kind === "completed") return replyOf(result)
    return yield* new TurnInterruptedError({
      message: `turn ${start.turn} of session ${hosted.sessionId}, which took message at seq ${seq}, ended ${result.reason.kind} before its answer was delivered`,
      sessionId: hosted.sessionId,
      turn: start.turn,
      reason: result.reason
    })
  })

const turnStartBefore = (events: ReadonlyArray<SessionEvent.SessionEvent>, seq: number) => {
  for (let i = Math.min(seq, events.length - 1); i >= 0; i--) {
    const event = events[i]!
    if (event.type === "turn/start") return { seq: event.seq, turn: (event.data as { readonly turn: number }).turn }
  }
  return undefined
}
