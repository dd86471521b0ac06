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
 * shows it was (at once, after the agent went idle, or queued during the turn before), each
 * steering and injected message, each abort, each disposal. Every action is tied to the event
 * after which the recording shows it happened, and a listener on the agent runs it when the
 * replay logs that same event — so the replayed log can equal the recording event for event.
 * The same listener compares each event with the recording as it is logged and stops the replay
 * at the first difference; at the end the whole logs are compared (`time` aside).
 *
 * What cannot be replayed ends the replay where it happened, as a difference: a process that
 * ended without disposing its agent (a crash, a kill), a turn started by late steering.
 *
 * @since 0.1.0
 */
import { Agent, AgentHooks, type Agents } from "@dsh/agent"
import type { Content } from "@dsh/llm"
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
  /** `agent.compact()` while the agent was idle (`/compact`), whether it compacted anything or not. */
  | { readonly _tag: "Compact" }
  /** The agent's scope closes: it is disposed (mid-turn, or at the end of its part). */
  | { readonly _tag: "Close" }
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
  /** The seq of the turn/start of the turn before the one being read. */
  lastTurnStart: number | undefined
  lastTurnEnd: number | undefined
  disposed: boolean
  last: number
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
    if (event.type === "agent/status" && (current === undefined || current.disposed || current.agentId !== event.data.agentId)) {
      if (current !== undefined && !current.disposed) add(current, current.last, { _tag: "Cut", why: cutWhy(current) })
      current = {
        agentId: event.data.agentId,
        start: event.seq,
        preamble: pending,
        initial: [],
        after: new Map(),
        lastTurnStart: undefined,
        lastTurnEnd: undefined,
        disposed: false,
        last: event.seq
      }
      pending = []
      segments.push(current)
      return
    }
    if (current === undefined || current.disposed) {
      pending.push(event)
      return
    }
    const segment = current
    segment.last = event.seq
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
      case "turn/start": {
        const batch: Array<ReadonlyArray<Content.ContentBlock>> = []
        for (let i = index + 1; i < events.length; i++) {
          const next = events[i]!
          if (next.type !== "user/message") break
          batch.push(next.data.content)
        }
        const steered = event.data.trigger === "steer"
        const previous = events[index - 1]
        const at = steered
          ? segment.lastTurnEnd ?? segment.start
          : previous?.type === "agent/status" && previous.data.status === "running"
          ? events[index - 2]?.seq ?? segment.start
          : segment.lastTurnStart ?? segment.start
        for (const content of batch) add(segment, at, { _tag: steered ? "Steer" : "Send", content })
        segment.lastTurnStart = event.seq
        return
      }
      case "steering/message":
        add(segment, event.seq - 1, { _tag: "Steer", content: event.data.content })
        return
      case "context/message":
        add(segment, event.seq - 1, { _tag: "Inject", content: event.data.content, source: event.data.source })
        return
      case "model/request":
        model ??= event.data.model
        return
      case "turn/end":
        segment.lastTurnEnd = event.seq
        if (event.data.reason.kind === "aborted") add(segment, stopPoint(events, index), { _tag: "Abort", reason: event.data.reason.reason })
        return
      default:
        return
    }
  })
  if (current !== undefined && !(current as Building).disposed) {
    const open = current as Building
    add(open, open.last, { _tag: "Cut", why: cutWhy(open) })
  }
  return { segments, model }
}

/**
 * Whether what follows an agent's `running` is an asked-for compaction rather than a turn: the
 * manual compaction's events, or straight `idle` again (there was nothing to compact).
 */
const isAskedCompaction = (next: SessionEvent.SessionEvent | undefined): boolean =>
  next !== undefined &&
  ((next.type === "agent/status" && next.data.status === "idle") ||
    ((next.type === "compaction/applied" || next.type === "compaction/failed") && next.data.reason === "manual"))

const cutWhy = (segment: Building): string =>
  `the recording's agent ${segment.agentId} stops at seq ${segment.last} without being disposed ` +
  "(its process ended: a crash or a kill), so the replay cannot go on from there"

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

type Stop = { readonly _tag: "Close" } | { readonly _tag: "Cut"; readonly seq: number; readonly why: string } | {
  readonly _tag: "Diverged"
  readonly seq: number
}

const unknownExtension = (type: string) => Events.define(type as SessionEvent.ExtensionType, Schema.Json)

/** Appends a recorded event no agent logged (a resume's repair) as it is. */
const appendRecorded = (session: Session.Session, event: SessionEvent.SessionEvent) =>
  Events.coreTypes.includes(event.type as SessionEvent.CoreType)
    ? (session.append as (type: string, data: unknown) => Effect.Effect<unknown>)(event.type, event.data)
    : session.append(unknownExtension(event.type), event.data as Schema.Json)

const perform = (
  agent: Agent.Agent,
  action: Action,
  stop: Deferred.Deferred<Stop>,
  seq: number,
  compactions: Queue.Queue<void>
) => {
  switch (action._tag) {
    case "Compact":
      // compact() waits for the agent and is refused from inside it (where listeners run): it
      // is asked from a fiber of the replay's own
      return Queue.offer(compactions, undefined)
    case "Send":
      return agent.send(action.content)
    case "Steer":
      return agent.steer(action.content)
    case "Inject":
      return agent.inject(action.content, { source: action.source })
    case "Abort":
      return agent.abort(action.reason)
    case "Close":
      return Effect.sync(() => void Deferred.doneUnsafe(stop, Effect.succeed({ _tag: "Close" })))
    case "Cut":
      return Effect.sync(() => void Deferred.doneUnsafe(stop, Effect.succeed({ _tag: "Cut", seq, why: action.why })))
  }
}

const STALL_SECONDS = 30

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
    const compactions = yield* Queue.unbounded<void>()
    const hooks = yield* AgentHooks
    yield* hooks.listeners.register({
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
    })
    const agent = yield* Runtime.agent({ ...settings, model }, { resume: session }, { id: segment.agentId })
    // a compaction that fails is logged as the recording's was; the comparison judges it
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Queue.take(compactions), Effect.ignore(agent.compact()))))
    for (const action of segment.initial) yield* perform(agent, action, stop, segment.start, compactions)
    const result = yield* Deferred.await(stop).pipe(
      Effect.timeoutOrElse({
        duration: `${STALL_SECONDS} seconds`,
        orElse: () => Effect.succeed<Stop>({ _tag: "Diverged", seq: -1 })
      })
    )
    if (result._tag !== "Close" && (yield* agent.status) === "running") yield* agent.abort("the replay stopped")
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
    const store = yield* SessionStore
    const session = yield* store.create({ id: sessionId })
    let cut: { readonly seq: number; readonly why: string } | undefined
    for (const segment of planned.segments) {
      const stop = yield* replaySegment({ ...settings, maxSteps }, recorded, model, session, segment)
      if (stop._tag === "Cut") {
        cut = stop
        break
      }
      if (stop._tag === "Diverged") break
    }
    const replayed = yield* session.events
    const found = difference(recorded, replayed, cut === undefined ? undefined : cut.seq + 1)
    if (found !== undefined) return found
    if (cut !== undefined) return { _tag: "Differs", seq: cut.seq, message: cut.why, mismatch: false } satisfies Verdict
    const requests = recorded.filter((e) => e.type === "model/request").length
    const turns = recorded.filter((e) => e.type === "turn/start").length
    return { _tag: "Identical", events: recorded.length, requests, turns } satisfies Verdict
  })

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
    if (yield* fs.exists(name).pipe(Effect.orElseSucceed(() => false))) return yield* JsonlSessions.loadFile(name)
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
        Effect.provide(Runtime.layer(settings, Cassette.layer({ events: recording.events }).pipe(Layer.orDie), recordedAnswers(recording.events)))
      )
    }).pipe(Effect.scoped, Report.reported({ configFile: loaded.configFile }))
    if (input.json) yield* io.out(`${JSON.stringify(verdict)}\n`)
    else yield* io.err(describe(verdict, input.file))
    if (verdict._tag === "Differs") return yield* new Report.Exit({ status: Report.Status.differs })
  })
