/**
 * `dsh replay <file>`: re-runs a recorded session against its own recording, with the current
 * tools and prompt, and reports the first difference — or that it replays identically.
 *
 * The model is `Replay` of the testing kit: it answers the k-th request with the k-th recorded
 * step's chunks if the request still equals what the recording asked (model, system prompt,
 * tools, settings, derived messages), else the turn ends with `REPLAY_MISMATCH` naming the first
 * difference. Everything else runs for real: the tools, the prompt assembly, the loop.
 *
 * The user's part is replayed from the log as a {@link Plan}: each recorded agent in turn (a
 * session resumed three times had three), with its id; each message sent when the recording
 * shows it was (at once, after the agent went idle, or queued during the work before: a turn, a
 * compaction), each steering and injected message, each compaction asked for (by `/compact`
 * while idle, or by a program's `agent.compact()` while a turn ran), each abort, each disposal.
 * Every action is tied to the event
 * after which the recording shows it happened, and a listener on the agent runs it when the
 * replay logs that same event — so the replayed log can equal the recording event for event.
 * An event a capability logs itself (a permission decision, after which a turn was aborted while
 * its tool ran) reaches no listener: its actions run when a reader of the log sees it.
 * The same listener compares each event with the recording as it is logged and stops the replay
 * at the first difference; at the end the whole logs are compared (`time` aside).
 *
 * A process that ended without disposing its agent (a crash, a kill; its `disposed` line may
 * be the one that tore) and whose session a later process resumed is replayed when it ended
 * between turns: the replay stops that agent where the recording's did and leaves what the
 * stopping logged out of the replayed log, so the resume's repairs and the next agent follow
 * as recorded. What cannot be replayed ends the replay where it happened, as a difference: a
 * process that ended inside a turn or a compaction, or whose recording stops there.
 *
 * @since 0.1.0
 */
import { Agent, AgentHooks, type Agents } from "@dsh/agent"
import { type Content, ScopedList } from "@dsh/llm"
import type { ModelRegistry } from "@dsh/model"
import { PermissionEvent, PermissionPrompt } from "@dsh/permissions"
import { JsonlSessions, type Session, type SessionErrors, type SessionEvent, SessionEvent as Events, SessionStore } from "@dsh/session"
import { Replay as Cassette } from "@dsh/testing"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Config from "./Config.ts"
import { ConfigInvalidError } from "./ConfigInvalidError.ts"
import * as Io from "./Io.ts"
import * as Report from "./Report.ts"
import * as Runtime from "./Runtime.ts"
import * as Store from "./Store.ts"

// ---------------------------------------------------------------------------------------------
// the plan

/**
 * What the user (or the command) did to an agent.
 *
 * @since 0.1.0
 * @category models
 */
export type Action =
  | { readonly _tag: "Send"; readonly content: ReadonlyArray<Content.ContentBlock> }
  | { readonly _tag: "Steer"; readonly content: ReadonlyArray<Content.ContentBlock> }
  | { readonly _tag: "Inject"; readonly content: ReadonlyArray<Content.ContentBlock>; readonly source: string }
  | { readonly _tag: "Abort"; readonly reason: string | undefined }
  /**
   * `agent.compact()`: while the agent was idle (`/compact`), whether it compacted anything or
   * not, or while a turn or another compaction ran (a program's call; it runs after that work).
   */
  | { readonly _tag: "Compact" }
  /** The agent's scope closes: it is disposed (mid-turn, or at the end of its part). */
  | { readonly _tag: "Close" }
  /**
   * The agent's process ended here, between turns, without disposing it (a crash or a kill)
   * and a later process resumed the session: the replay stops the agent, and what stopping it
   * logs is no part of the replayed log.
   */
  | { readonly _tag: "End" }
  /** The recording stops here without its agent being disposed (the process ended). */
  | { readonly _tag: "Cut"; readonly why: string }

/**
 * One recorded agent's part of the session.
 *
 * @since 0.1.0
 * @category models
 */
export interface Segment {
  readonly agentId: string
  /** The seq of its first event (its first `idle`). */
  readonly start: number
  /** The events before it that no agent logged (a resume's repairs), appended as they are. */
  readonly preamble: ReadonlyArray<SessionEvent.SessionEvent>
  /** What happens right after the agent is created. */
  readonly initial: ReadonlyArray<Action>
  /** What happens once the event of that seq is logged. */
  readonly after: ReadonlyMap<number, ReadonlyArray<Action>>
}

/**
 * The replay of a recording.
 *
 * @since 0.1.0
 * @category models
 */
export interface Plan {
  readonly segments: ReadonlyArray<Segment>
  /** The model the recording's first request named. */
  readonly model: string | undefined
}

interface Building {
  readonly agentId: string
  readonly start: number
  readonly preamble: Array<SessionEvent.SessionEvent>
  readonly initial: Array<Action>
  readonly after: Map<number, Array<Action>>
  /**
   * The first event of the work the driver ran last (a turn's `turn/start`, an asked-for
   * compaction's first event): what is asked for while it runs is asked for there.
   */
  lastWork: { readonly kind: "turn" | "compaction"; readonly start: number } | undefined
  lastTurnEnd: number | undefined
  disposed: boolean
  /** Its process ended: a resume's `session/repair` follows its last event. */
  ended: boolean
  /** The last event the agent logged itself. */
  last: SessionEvent.SessionEvent
}

const add = (segment: Building, at: number, action: Action) => {
  if (at <= segment.start) {
    segment.initial.push(action)
    return
  }
  const list = segment.after.get(at)
  if (list === undefined) segment.after.set(at, [action])
  else list.push(action)
}

const isAborted = (event: SessionEvent.SessionEvent): boolean =>
  event.type === "tool/result" && event.data.error?.code === "ABORTED"

/**
 * The seq after which a turn that ended by an abort or a disposal was stopped: the last event
 * before what the closing logged (the partial message of an unfinished step, the calls answered
 * `ABORTED`, `step/end`, `turn/end`). Stopping there, the replay's closing logs the same events.
 *
 * @since 0.1.0
 * @category plan
 */
export const stopPoint = (events: ReadonlyArray<SessionEvent.SessionEvent>, turnEnd: number): number => {
  let turnStart = turnEnd
  while (turnStart > 0 && events[turnStart]!.type !== "turn/start") turnStart--
  const finished = new Set<string>()
  const aborted = new Set<string>()
  for (let i = turnStart; i <= turnEnd; i++) {
    const event = events[i]!
    if (event.type === "assistant/chunk" && event.data.chunk.type === "finish") finished.add(`${event.data.turn}/${event.data.step}`)
    if (event.type === "tool/result" && isAborted(event)) aborted.add(event.data.callId)
  }
  for (let i = turnEnd; i > turnStart; i--) {
    const event = events[i]!
    const closing = event.type === "turn/end" || event.type === "step/end" || isAborted(event) ||
      (event.type === "tool/call" && aborted.has(event.data.callId)) ||
      (event.type === "assistant/message" && !finished.has(`${event.data.turn}/${event.data.step}`))
    if (!closing) return event.seq
  }
  return events[turnStart]!.seq
}

/**
 * Reads the plan off a recorded log.
 *
 * @since 0.1.0
 * @category plan
 */
export const plan = (events: ReadonlyArray<SessionEvent.SessionEvent>): Plan => {
  const segments: Array<Building> = []
  let current: Building | undefined
  let pending: Array<SessionEvent.SessionEvent> = []
  let model: string | undefined
  events.forEach((event, index) => {
    if (event.type === "agent/status" && (current === undefined || isOver(current) || current.agentId !== event.data.agentId)) {
      if (current !== undefined && !current.disposed) add(current, current.last.seq, endOf(current, "resumed"))
      current = startSegment(event, pending)
      pending = []
      segments.push(current)
      return
    }
    // a resume's repairs: the agent before it never logged its end (the process died), and
    // what follows until the next agent is the resume's, appended as recorded
    if (current !== undefined && event.type === "session/repair") current.ended = true
    if (current === undefined || isOver(current)) {
      pending.push(event)
      return
    }
    current.last = event
    if (event.type === "model/request") model ??= event.data.model
    else readEvent(events, index, current)
  })
  const open = current as Building | undefined
  if (open !== undefined && !open.disposed) add(open, open.last.seq, endOf(open, "recording ends"))
  return { segments, model }
}

const isOver = (segment: Building): boolean => segment.disposed || segment.ended

const startSegment = (event: SessionEvent.SessionEvent & { readonly type: "agent/status" }, preamble: Array<SessionEvent.SessionEvent>): Building => ({
  agentId: event.data.agentId,
  start: event.seq,
  preamble,
  initial: [],
  after: new Map(),
  lastWork: undefined,
  lastTurnEnd: undefined,
  disposed: false,
  ended: false,
  last: event
})

/**
 * How the part of an agent that was never disposed ends: where a later process resumed the
 * session after it ended between turns, the replay stops the agent there too and goes on;
 * inside a turn or a compaction (or where the recording ends) it cannot go on.
 */
const endOf = (segment: Building, then: "resumed" | "recording ends"): Action =>
  then === "resumed" && isBetweenTurns(segment.last) ? { _tag: "End" } : { _tag: "Cut", why: cutWhy(segment) }

/** Whether an agent whose last event this is had no work running: a turn just ended, or idle. */
const isBetweenTurns = (last: SessionEvent.SessionEvent): boolean =>
  last.type === "turn/end" || (last.type === "agent/status" && last.data.status === "idle")

/** The actions one event of the agent's own shows. */
const readEvent = (events: ReadonlyArray<SessionEvent.SessionEvent>, index: number, segment: Building): void => {
  const event = events[index]!
  switch (event.type) {
    case "agent/status":
      if (event.data.status === "running" && isAskedCompaction(events[index + 1])) {
        add(segment, events[index - 1]?.seq ?? segment.start, { _tag: "Compact" })
      }
      if (event.data.status === "disposed") {
        segment.disposed = true
        const before = events[index - 1]
        const midTurn = before?.type === "turn/end" && before.data.reason.kind === "disposed"
        add(segment, midTurn ? stopPoint(events, index - 1) : (before?.seq ?? segment.start), { _tag: "Close" })
      }
      return
    case "turn/start":
      return readTurnStart(events, index, segment)
    case "compaction/applied":
    case "compaction/failed":
      return readCompaction(events, index, segment)
    case "steering/message":
      add(segment, event.seq - 1, { _tag: "Steer", content: event.data.content })
      return
    case "context/message":
      add(segment, event.seq - 1, { _tag: "Inject", content: event.data.content, source: event.data.source })
      return
    case "turn/end":
      segment.lastTurnEnd = event.seq
      if (event.data.reason.kind === "aborted") add(segment, stopPoint(events, index), { _tag: "Abort", reason: event.data.reason.reason })
      return
    default:
      return
  }
}

/**
 * A turn's messages, sent when the log shows they were: while the agent was idle (the event
 * before its `running`), else while the work before the turn ran (they were queued behind it).
 * Steering that came too late for a turn was sent as it ended; for a compaction, while it ran.
 */
const readTurnStart = (events: ReadonlyArray<SessionEvent.SessionEvent>, index: number, segment: Building): void => {
  const event = events[index] as SessionEvent.SessionEvent & { readonly type: "turn/start" }
  const batch: Array<ReadonlyArray<Content.ContentBlock>> = []
  for (let i = index + 1; i < events.length; i++) {
    const next = events[i]!
    if (next.type !== "user/message") break
    batch.push(next.data.content)
  }
  const steered = event.data.trigger === "steer"
  const previous = events[index - 1]
  const at = steered
    ? (segment.lastWork?.kind === "compaction" ? segment.lastWork.start : segment.lastTurnEnd) ?? segment.start
    : previous?.type === "agent/status" && previous.data.status === "running"
    ? events[index - 2]?.seq ?? segment.start
    : segment.lastWork?.start ?? segment.start
  for (const content of batch) add(segment, at, { _tag: steered ? "Steer" : "Send", content })
  segment.lastWork = { kind: "turn", start: event.seq }
}

/**
 * An asked-for compaction's first event. Right after the agent's `running` it was asked while
 * the agent was idle (see the `running` case); right after other work (a turn's end, another
 * compaction) it was asked while that work ran — a program's `agent.compact()` mid-turn — so it
 * is asked at that work's first event, and runs, as recorded, once that work is done.
 */
const readCompaction = (events: ReadonlyArray<SessionEvent.SessionEvent>, index: number, segment: Building): void => {
  if (!startsAskedCompaction(events[index - 1], events[index]!)) return
  const previous = events[index - 1]
  const afterRunning = previous?.type === "agent/status" && previous.data.status === "running"
  if (!afterRunning) add(segment, segment.lastWork?.start ?? segment.start, { _tag: "Compact" })
  segment.lastWork = { kind: "compaction", start: events[index]!.seq }
}

/**
 * Whether an event is the first of an asked-for (`manual`) compaction: a compaction is a prune,
 * a summary, or a prune then a summary, so only a summary right after a manual prune goes on
 * the compaction before it.
 */
const startsAskedCompaction = (previous: SessionEvent.SessionEvent | undefined, event: SessionEvent.SessionEvent): boolean => {
  if (!isManualCompaction(event)) return false
  const continuesPrune = previous !== undefined && isManualCompaction(previous) && previous.type === "compaction/applied" &&
    previous.data.kind === "prune" && event.data.kind === "summary"
  return !continuesPrune
}

const isManualCompaction = (
  event: SessionEvent.SessionEvent
): event is SessionEvent.SessionEvent & { readonly type: "compaction/applied" | "compaction/failed" } =>
  (event.type === "compaction/applied" || event.type === "compaction/failed") && event.data.reason === "manual"

/**
 * Whether what follows an agent's `running` is an asked-for compaction rather than a turn: the
 * manual compaction's events, or straight `idle` again (there was nothing to compact).
 */
const isAskedCompaction = (next: SessionEvent.SessionEvent | undefined): boolean =>
  next !== undefined && ((next.type === "agent/status" && next.data.status === "idle") || isManualCompaction(next))

const cutWhy = (segment: Building): string => {
  const how = segment.ended && !isBetweenTurns(segment.last)
    ? "inside a turn or a compaction (a crash or a kill); a resume closed what it left open"
    : "a crash or a kill"
  return `the recording's agent ${segment.agentId} stops at seq ${segment.last.seq} without being disposed ` +
    `(its process ended: ${how}), so the replay cannot go on from there`
}

// ---------------------------------------------------------------------------------------------
// comparing

/**
 * How a replay ended.
 *
 * @since 0.1.0
 * @category models
 */
export type Verdict =
  | { readonly _tag: "Identical"; readonly events: number; readonly requests: number; readonly turns: number }
  | {
    readonly _tag: "Differs"
    /** The seq of the first event that differs (or is missing, or extra). */
    readonly seq: number
    readonly message: string
    /** `REPLAY_MISMATCH` when the replay model refused a request; else the difference of the logs. */
    readonly mismatch: boolean
  }

const comparable = (event: SessionEvent.SessionEvent | undefined) =>
  event === undefined ? undefined : { type: event.type, seq: event.seq, data: event.data }

const where = (event: SessionEvent.SessionEvent): string => {
  const data = event.data as { readonly turn?: unknown; readonly step?: unknown }
  const turn = typeof data.turn === "number" ? `, turn ${data.turn}` : ""
  const step = typeof data.step === "number" ? ` step ${data.step}` : ""
  return `${event.type}${turn}${step}`
}

/**
 * The first difference of a replayed log from the recorded one (`time` aside), or undefined.
 *
 * @since 0.1.0
 * @category comparing
 */
export const difference = (
  recorded: ReadonlyArray<SessionEvent.SessionEvent>,
  replayed: ReadonlyArray<SessionEvent.SessionEvent>,
  upTo: number = Math.max(recorded.length, replayed.length)
): Verdict | undefined => {
  for (let i = 0; i < upTo; i++) {
    const expected = recorded[i]
    const actual = replayed[i]
    const found = Cassette.firstDifference(comparable(expected), comparable(actual))
    if (found === undefined) continue
    if (actual?.type === "error" && actual.data.code === "REPLAY_MISMATCH") {
      return { _tag: "Differs", seq: i, message: actual.data.message, mismatch: true }
    }
    const shown = expected ?? actual!
    const detail = expected === undefined
      ? `the replay logged ${where(actual!)} past the recording's end`
      : actual === undefined
      ? `the replay stopped before ${where(expected)}, the recording goes on`
      : `${where(expected)}: ${found.description}`
    return { _tag: "Differs", seq: shown.seq, message: `the replay differs from the recording at seq ${shown.seq}: ${detail}`, mismatch: false }
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------
// replaying

type Stop =
  | { readonly _tag: "Close" }
  | { readonly _tag: "End"; readonly seq: number }
  | { readonly _tag: "Cut"; readonly seq: number; readonly why: string }
  | { readonly _tag: "Diverged"; readonly seq: number }

const unknownExtension = (type: string) => Events.define(type as SessionEvent.ExtensionType, Schema.Json)

/** Appends a recorded event no agent logged (a resume's repair) as it is. */
const appendRecorded = (session: Session.Session, event: SessionEvent.SessionEvent) =>
  Events.coreTypes.includes(event.type as SessionEvent.CoreType)
    ? (session.append as (type: string, data: unknown) => Effect.Effect<unknown>)(event.type, event.data)
    // Schema.Json takes any JSON the file held
    : Effect.orDie(session.append(unknownExtension(event.type), event.data as Schema.Json))

/** A compaction to ask for, and the signal that it is asked (queued behind the agent's work). */
type CompactionAsk = Deferred.Deferred<void>

/**
 * Asks for a compaction and returns once the agent has it queued. `compact()` waits for the
 * agent and is refused from inside it (where listeners run), so it is asked from a fiber of the
 * replay's own; waiting for it to be queued keeps the listener from letting the agent's work
 * end first — the compaction then runs after that work, as recorded, not after the next.
 */
const askCompaction = (compactions: Queue.Queue<CompactionAsk>) =>
  Effect.flatMap(Deferred.make<void>(), (asked) => Effect.andThen(Queue.offer(compactions, asked), Deferred.await(asked)))

/**
 * The replay's own fiber that asks for the compactions: each `compact()` is started at once
 * (it queues the compaction before it waits) and left to run; a compaction that fails is
 * logged as the recording's was, and the comparison judges it.
 */
const compactor = (agent: Agent.Agent, compactions: Queue.Queue<CompactionAsk>) =>
  Effect.forever(
    Effect.flatMap(Queue.take(compactions), (asked) =>
      Effect.andThen(Effect.forkScoped(Effect.ignore(agent.compact()), { startImmediately: true }), Deferred.succeed(asked, undefined)))
  )

const settle = (stop: Deferred.Deferred<Stop>, result: Stop) => Effect.sync(() => void Deferred.doneUnsafe(stop, Effect.succeed(result)))

const perform = (
  agent: Agent.Agent,
  action: Action,
  stop: Deferred.Deferred<Stop>,
  seq: number,
  compactions: Queue.Queue<CompactionAsk>
) => {
  switch (action._tag) {
    case "Compact":
      return askCompaction(compactions)
    case "Send":
      return agent.send(action.content)
    case "Steer":
      return agent.steer(action.content)
    case "Inject":
      return agent.inject(action.content, { source: action.source })
    case "Abort":
      return agent.abort(action.reason)
    case "Close":
      return settle(stop, { _tag: "Close" })
    case "End":
      return settle(stop, { _tag: "End", seq })
    case "Cut":
      return settle(stop, { _tag: "Cut", seq, why: action.why })
  }
}

const STALL_SECONDS = 30

/**
 * Whether the agent's listeners see an event as it is logged: the loop's own events. What a
 * capability appends itself (`permission:decision`, `bash:job-started`, …) reaches the log but
 * not the listeners.
 */
const isAnnounced = (event: SessionEvent.SessionEvent | undefined): boolean =>
  event !== undefined && Events.coreTypes.includes(event.type as SessionEvent.CoreType)

/**
 * Runs the actions tied to events no listener sees (an abort while a tool ran, after its
 * permission was logged) when the replay's log holds that event: a reader of the session's
 * stream, since the listener that runs the other actions never hears of them.
 */
const performUnannounced = (
  agent: Agent.Agent,
  session: Session.Session,
  recorded: ReadonlyArray<SessionEvent.SessionEvent>,
  segment: Segment,
  stop: Deferred.Deferred<Stop>,
  compactions: Queue.Queue<CompactionAsk>
) => {
  const unannounced = [...segment.after.keys()].filter((seq) => !isAnnounced(recorded[seq]))
  if (unannounced.length === 0) return Effect.void
  return session.streamFrom(Math.min(...unannounced)).pipe(
    Stream.filter((event) => unannounced.includes(event.seq)),
    Stream.runForEach((event) =>
      Effect.forEach(segment.after.get(event.seq) ?? [], (action) => perform(agent, action, stop, event.seq, compactions), { discard: true })
    ),
    Effect.catch(() => Effect.void)
  )
}

/** One recorded agent's part: the agent, its actions as their events are logged, until its stop. */
const replaySegment = (
  settings: Config.Settings,
  recorded: ReadonlyArray<SessionEvent.SessionEvent>,
  model: string,
  session: Session.Session,
  segment: Segment
): Effect.Effect<
  Stop,
  SessionErrors.SessionExistsError | SessionErrors.SessionLockedError | Agent.AgentDisposedError | Agent.InvalidInputError,
  AgentHooks | Agents | ModelRegistry
> =>
  Effect.gen(function*() {
    for (const event of segment.preamble) yield* appendRecorded(session, event)
    const stop = yield* Deferred.make<Stop>()
    const compactions = yield* Queue.unbounded<CompactionAsk>()
    const hooks = yield* AgentHooks
    yield* ScopedList.inOpenScope(hooks.listeners.register({
      name: "dsh replay",
      around: ({ agent, event }, next) =>
        Effect.gen(function*() {
          yield* next({ agent, event })
          const expected = recorded[event.seq]
          if (Cassette.firstDifference(comparable(expected), comparable(event)) !== undefined) {
            Deferred.doneUnsafe(stop, Effect.succeed({ _tag: "Diverged", seq: event.seq }))
            return
          }
          for (const action of segment.after.get(event.seq) ?? []) yield* perform(agent, action, stop, event.seq, compactions)
        }).pipe(Effect.catch(() => Effect.void))
    }))
    const agent = yield* Runtime.agent({ ...settings, model }, { resume: session }, { id: segment.agentId })
    yield* Effect.forkScoped(compactor(agent, compactions))
    yield* Effect.forkScoped(performUnannounced(agent, session, recorded, segment, stop, compactions))
    for (const action of segment.initial) yield* perform(agent, action, stop, segment.start, compactions)
    const result = yield* Deferred.await(stop).pipe(
      Effect.timeoutOrElse({
        duration: `${STALL_SECONDS} seconds`,
        orElse: () => Effect.succeed<Stop>({ _tag: "Diverged", seq: -1 })
      })
    )
    // stopped where the recording's agent was disposed, or its process ended: the scope closes it
    const stopsAsRecorded = result._tag === "Close" || result._tag === "End"
    if (!stopsAsRecorded && (yield* agent.status) === "running") yield* agent.abort("the replay stopped")
    return result
  }).pipe(Effect.scoped)

/**
 * The step limit the recording ran under, as far as the log shows it — a step limit is not a
 * setting a replay compares, like the prompt or the tools, so it is taken from the recording:
 * the number of steps of a turn that ended at the `max-steps` limit; else no fewer than the
 * most steps a recorded turn took, and at least `configured`.
 *
 * @since 0.1.0
 * @category replaying
 */
export const recordedMaxSteps = (recorded: ReadonlyArray<SessionEvent.SessionEvent>, configured: number): number => {
  let steps = 0
  let most = 0
  for (const event of recorded) {
    if (event.type === "turn/start") steps = 0
    else if (event.type === "step/start") most = Math.max(most, ++steps)
    else if (event.type === "turn/end" && event.data.reason.kind === "limit" && event.data.reason.name === "max-steps") return steps
  }
  return Math.max(configured, most)
}

/**
 * The events an agent logged after `seq` when the replay stopped it where the recording's
 * process ended (`End`) are left out: its `idle`, its `disposed` — the recording has none
 * there. Anything else it logged past `seq` stays, so the comparison shows it.
 */
const endedAt = (events: ReadonlyArray<SessionEvent.SessionEvent>, seq: number, agentId: string): ReadonlyArray<SessionEvent.SessionEvent> => {
  const tail = events.slice(seq + 1)
  const onlyStopping = tail.every((event) => event.type === "agent/status" && event.data.agentId === agentId)
  return onlyStopping ? events.slice(0, seq + 1) : events
}

/**
 * One agent's part on a session of its own, seeded with what the replay logged before it (so
 * an agent stopped where its process ended leaves nothing of its stopping in the log).
 */
const replayPart = (
  settings: Config.Settings,
  recorded: ReadonlyArray<SessionEvent.SessionEvent>,
  model: string,
  sessionId: string,
  before: ReadonlyArray<SessionEvent.SessionEvent>,
  segment: Segment
) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const session = yield* store.create(before.length === 0 ? { id: sessionId } : { id: sessionId, seed: before })
    const stop = yield* replaySegment(settings, recorded, model, session, segment)
    const events = yield* session.events
    return { stop, events: stop._tag === "End" ? endedAt(events, stop.seq, segment.agentId) : events }
  }).pipe(Effect.scoped)

/**
 * Replays a recording; returns the verdict.
 *
 * @since 0.1.0
 * @category replaying
 */
export const replay = (settings: Config.Settings, recorded: ReadonlyArray<SessionEvent.SessionEvent>, sessionId: string) =>
  Effect.gen(function*() {
    const planned = plan(recorded)
    const model = planned.model ?? settings.model
    const maxSteps = recordedMaxSteps(recorded, settings.maxSteps ?? Agent.defaultMaxSteps)
    let replayed: ReadonlyArray<SessionEvent.SessionEvent> = []
    let cut: { readonly seq: number; readonly why: string } | undefined
    for (const segment of planned.segments) {
      const part = yield* replayPart({ ...settings, maxSteps }, recorded, model, sessionId, replayed, segment)
      replayed = part.events
      if (part.stop._tag === "Cut") {
        cut = part.stop
        break
      }
      if (part.stop._tag === "Diverged") break
    }
    const found = difference(recorded, replayed, cut === undefined ? undefined : cut.seq + 1)
    if (found !== undefined) return found
    if (cut !== undefined) return { _tag: "Differs", seq: cut.seq, message: cut.why, mismatch: false } satisfies Verdict
    const requests = recorded.filter((e) => e.type === "model/request").length
    const turns = recorded.filter((e) => e.type === "turn/start").length
    return { _tag: "Identical", events: recorded.length, requests, turns } satisfies Verdict
  })

/**
 * The permission prompt of a replay, or none: a recording that asked nobody (`dsh run`
 * without `--yes`, whose policy refuses what it would ask) is replayed with no prompt, so its
 * questions are refused as they were (`deny`, not `ask-deny`); one that asked is replayed with
 * {@link recordedAnswers}.
 *
 * @since 0.1.0
 * @category replaying
 */
export const recordedPrompt = (events: ReadonlyArray<SessionEvent.SessionEvent>): Layer.Layer<PermissionPrompt.PermissionPrompt> | undefined =>
  PermissionEvent.decisionsOf(events).some((decision) => decision.decision.startsWith("ask-")) ? recordedAnswers(events) : undefined

/**
 * The permission prompt of a replay: it answers each question as the user answered it in the
 * recording (its `permission:decision` events), and `no` to a question the recording never
 * asked.
 *
 * @since 0.1.0
 * @category replaying
 */
export const recordedAnswers = (events: ReadonlyArray<SessionEvent.SessionEvent>): Layer.Layer<PermissionPrompt.PermissionPrompt> => {
  const answers = new Map<string, PermissionPrompt.Answer>()
  for (const decision of PermissionEvent.decisionsOf(events)) {
    if (decision.decision === "ask-allow") answers.set(decision.callId, "yes")
    else if (decision.decision === "ask-always") answers.set(decision.callId, "always")
    else if (decision.decision === "ask-deny") answers.set(decision.callId, "no")
  }
  return PermissionPrompt.layer((request) => Effect.succeed(answers.get(request.callId) ?? "no"))
}

// ---------------------------------------------------------------------------------------------
// the command

/**
 * What `dsh replay` takes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Input {
  readonly file: string
  readonly json: boolean
  readonly flags: Config.Flags
}

/** The recording: a file, or a session of the sessions directory by its id. */
const recordingOf = (settings: Config.Settings, name: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const kind = yield* fs.stat(name).pipe(Effect.map((info) => info.type), Effect.orElseSucceed(() => undefined))
    // a directory (the sessions directory itself, say) is neither a recording nor a session's id
    if (kind === "Directory") {
      return yield* new ConfigInvalidError({ message: `${name} is a directory, neither a session file nor a session`, field: "file", source: "the command line" })
    }
    if (kind !== undefined) return yield* JsonlSessions.loadFile(name)
    if (settings.sessions === "memory") {
      return yield* new ConfigInvalidError({ message: `no file ${name}`, field: "file", source: "the command line" })
    }
    const directory = settings.sessions.directory
    const id = yield* Store.resolveId(directory, name).pipe(
      Effect.mapError((error) =>
        error._tag === "ConfigInvalidError"
          ? new ConfigInvalidError({ ...error, message: `${name} is neither a file nor a session: ${error.message}` })
          : error
      )
    )
    return yield* JsonlSessions.load(directory, id)
  })

/**
 * The verdict in words.
 *
 * @since 0.1.0
 * @category rendering
 */
export const describe = (verdict: Verdict, file: string): string =>
  verdict._tag === "Identical"
    ? `dsh: ${file} replays identically: ${verdict.turns} turn${verdict.turns === 1 ? "" : "s"}, ${verdict.requests} model request${
      verdict.requests === 1 ? "" : "s"
    }, ${verdict.events} events\n`
    : Report.render(Report.fromCode("REPLAY_MISMATCH", verdict.message))

/**
 * `dsh replay`.
 *
 * @since 0.1.0
 * @category commands
 */
export const command = (input: Input, env: Config.Environment) =>
  Effect.gen(function*() {
    const loaded = yield* Config.load(input.flags, env)
    const io = yield* Io.Io
    const verdict = yield* Effect.gen(function*() {
      const recording = yield* recordingOf(loaded, input.file)
      // the replay is never persisted
      const settings: Config.Settings = { ...loaded, sessions: "memory" }
      return yield* replay(settings, recording.events, recording.header.sessionId).pipe(
        Effect.provide(Runtime.layer(settings, Cassette.layer({ events: recording.events }).pipe(Layer.orDie), recordedPrompt(recording.events)))
      )
    }).pipe(Effect.scoped, Report.reported({ configFile: loaded.configFile }))
    if (input.json) yield* io.out(`${JSON.stringify(verdict)}\n`)
    else yield* io.err(describe(verdict, input.file))
    if (verdict._tag === "Differs") return yield* new Report.Exit({ status: Report.Status.differs })
  })
