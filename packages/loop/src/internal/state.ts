/**
 * The state of an agent's loop, as plain records passed explicitly to the functions that read
 * and change it: what never changes ({@link Env}), what the agent's handle and its driver share
 * ({@link AgentState}), the control of one turn ({@link Run}) and what a running turn and its
 * open step hold ({@link Turn}, {@link Step}).
 *
 * @internal
 */
import type { Agent, AgentHooks } from "@dsh/agent"
import type { Content, Ids } from "@dsh/llm"
import type { Model } from "@dsh/model"
import type { SystemPrompt } from "@dsh/prompt"
import type { Compaction, FlushCheckpoint, Session, SessionEvent } from "@dsh/session"
import type { ToolRegistry } from "@dsh/tools"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import type * as Latch from "effect/Latch"
import type * as Scope from "effect/Scope"
import type * as SubscriptionRef from "effect/SubscriptionRef"
import { fire, makeSignal, type Signal, timer } from "./bounded.ts"
import type { Failure } from "./failure.ts"
import type { Output } from "./output.ts"

/** The services and settings of one agent; nothing here changes while it lives. */
export interface Env {
  readonly model: Model["Service"]
  readonly checkpoint: FlushCheckpoint["Service"]
  readonly registry: ToolRegistry["Service"]
  readonly prompt: SystemPrompt["Service"]
  readonly hooks: AgentHooks["Service"]
  readonly session: Session.Session
  readonly agentId: Ids.AgentId
  readonly options: Agent.Options
  readonly maxSteps: number
  readonly maxInvalidArgs: number
  readonly abortGrace: Duration.Duration
  /** The scope the agent lives in (closed at its disposal): what its tool calls start to outlive them. */
  readonly agentScope: Scope.Scope
  /** When and how the history is compacted. */
  readonly budget: Budget
}

/** The compaction settings of an agent, resolved (see `Agent.CompactionOptions`). */
export interface Budget {
  /** The context window in tokens, when known: without it nothing is compacted automatically. */
  readonly window: number | undefined
  /** The share of the window a request may fill; `false`: only on demand and on overflow. */
  readonly threshold: number | false
  readonly keepTurns: number
  /** The size from which old tool results are pruned; `undefined`: never pruned. */
  readonly pruneMinChars: number | undefined
  readonly summarizer: Compaction.Summarizer
}

/** The size of the request as of an event: what the provider reported, or an estimate. */
export interface Size {
  /** The last event it accounts for. */
  readonly seq: number
  readonly tokens: number
  /** The characters of the settings it accounts for (they change with the prompt and the tools). */
  readonly settings: number
}

/** `agent.compact()` waiting for the driver. */
export interface CompactJob {
  readonly done: Deferred.Deferred<Agent.CompactionReport, Agent.RunError>
}

/** A message waiting for a turn. */
export interface Pending {
  readonly content: ReadonlyArray<Content.ContentBlock>
  readonly source: string
  readonly trigger: "send" | "steer"
  /** `agent.run`'s: told how the turn that took the message ended. */
  readonly waiter?: Deferred.Deferred<TurnReport>
  /** `agent.run`'s answer Schema: such a message ends its turn's batch. */
  readonly output?: Output
  /**
   * The agents `agent.run`'s caller runs inside (it is a tool or a listener of theirs), which
   * wait for the turn that takes the message: that turn runs inside them too (see
   * {@link InsideAgents}).
   */
  readonly callers?: ReadonlySet<string>
  /** When it arrived, among the agent's messages (set when it is queued). */
  readonly arrival?: number
}

/** How a turn's work ended, as far as the work itself knows. */
export type Outcome =
  | { readonly _tag: "Completed" }
  | { readonly _tag: "Aborted" }
  | { readonly _tag: "Limit"; readonly name: string; readonly message: string; readonly tool?: string }
  | { readonly _tag: "Failed"; readonly failure: Failure }

/** What `agent.run` learns of the turn that took its message. */
export interface TurnReport {
  readonly turn: number
  /** The `seq` of its `turn/start`. */
  readonly start: number
  readonly outcome: Outcome
  readonly abort: Abort | undefined
  /** Its answer's output state, when it had one. */
  readonly output: Output | undefined
}

/** What stopped a turn from outside: `abort(reason)`, or the agent's disposal. */
export interface Abort {
  readonly reason: string | undefined
  readonly disposal: boolean
}

/**
 * The control of one turn, made when the first message for it is queued (so an abort can
 * target a turn that has not started yet) and settled when the turn is over.
 */
export interface Run {
  abort: Abort | undefined
  /** Fired when `abort` is set. */
  readonly aborted: Signal
  /** Fired `abortGrace` after the abort: whatever the turn still waits on is given up then. */
  readonly deadline: Signal
  /** Done when the turn has ended and its flush has finished or been given up. */
  readonly settled: Deferred.Deferred<void>
  /** The fiber that completes `deadline`; interrupted when the run settles. */
  timer: Fiber.Fiber<void> | undefined
}

/** What the agent's handle and its driver share. */
export interface AgentState {
  /** Messages waiting for the next turn. */
  readonly queued: Array<Pending>
  /** Steering waiting for the running turn's next step. */
  readonly steering: Array<Pending>
  /** How many messages have arrived: the next one's `arrival`. */
  arrivals: number
  /** Opened whenever something is queued or the agent is disposed: what the idle driver waits on. */
  readonly wake: Latch.Latch
  readonly statusRef: SubscriptionRef.SubscriptionRef<Agent.Status>
  /** The last status logged; undefined until the first. */
  status: Agent.Status | undefined
  /** The running turn's control. */
  current: Run | undefined
  /** The running turn itself, once opened. */
  turn: Turn | undefined
  /** The control of the turn the queued messages will start. */
  next: Run | undefined
  /** Done whenever the agent is idle with nothing queued, or disposed: what awaitIdle waits on. */
  idle: Deferred.Deferred<void>
  disposing: boolean
  /** The last turn number of the session (a seeded session continues it). */
  lastTurn: number
  /** The settings of the session's last logged request, as JSON. */
  lastSettings: string | undefined
  /**
   * Those settings as logged (deep-frozen) by this agent, to compare a request's with by
   * reference before serializing them; `undefined` until it logs settings.
   */
  loggedSettings: SessionEvent.RequestSettings | undefined
  /** The handle, for listeners; set once it exists. */
  handle: Agent.Agent | undefined
  /** `agent.compact()` calls waiting for the driver: run between turns, before the queued messages. */
  readonly compactions: Array<CompactJob>
  /** The size of the next request as of the last event accounted for; `undefined` after a compaction. */
  size: Size | undefined
  /** The `through` of the last summary: nothing before it is read again when planning the next. */
  summarizedThrough: number
  /** The turn number as of which compaction found nothing to do (tried again once a later turn ended). */
  nothingToCompactAt: number | undefined
  /**
   * The `agent.run` callers of the turn that just ended, with its report: told once the agent
   * has settled (`idle`) or goes on to more work, so that a `run` returns to an agent whose
   * status agrees with it.
   */
  untold: { readonly batch: ReadonlyArray<Pending>; readonly report: TurnReport } | undefined
  /** The `agent.compact()` caller of the compaction that just ended, with its outcome: told as {@link untold}. */
  untoldCompaction: { readonly job: CompactJob; readonly exit: Exit.Exit<Agent.CompactionReport, Agent.RunError> } | undefined
}

/** A running turn. */
export interface Turn {
  readonly number: number
  readonly run: Run
  /** The `seq` of its `turn/start`. */
  readonly start: number
  /** Its `turn/start` and `user/message` events, whose listeners run first in the turn. */
  readonly opened: ReadonlyArray<SessionEvent.SessionEvent>
  /**
   * Set when the turn is being closed: from then on nothing the turn's own work does is logged
   * (work detached after an abort may still finish; its late events are dropped).
   */
  closed: boolean
  /** How many late events and results of detached work were dropped. */
  dropped: number
  /** The open step. */
  step: Step | undefined
  /** Consecutive `INVALID_ARGS` results per tool name. */
  readonly invalidArgs: Map<string, number>
  /** The typed answer the turn must give, for `agent.run(input, { output })`. */
  readonly output: Output | undefined
  /** Whether a step already overflowed the context window (it is retried once after compacting). */
  overflowed: boolean
  /** Whether an automatic compaction failed in this turn (it is not tried again until the next). */
  compactionFailed: boolean
  /** Whether the failure the turn ends with was logged already (by the step it ended). */
  failureLogged: boolean
}

/** An open step. */
export interface Step {
  readonly number: number
  /** The calls of its logged message, once logged. */
  calls: ReadonlyArray<Content.ToolCallBlock>
  /** Results of the step's calls that finished, logged or not yet (a batch logs in call order). */
  readonly results: Map<Ids.CallId, Content.ToolResultBlock>
}

/**
 * The agents whose fibers the current fiber belongs to, and those waiting for the turn it runs
 * in (whose tool or listener called `agent.run`): an `abort` called from inside an agent (a
 * tool, a listener) must not wait for the turn it runs in, and a `run` there is refused, where
 * it would wait for itself — also through another agent (A's tool runs B, B's tool runs A).
 */
export const InsideAgents = Context.Reference<ReadonlySet<string>>("@dsh/loop/InsideAgents", {
  defaultValue: () => new Set()
})

/** A fresh run. */
export const makeRun = (): Run => ({
  abort: undefined,
  aborted: makeSignal(),
  deadline: makeSignal(),
  settled: Deferred.makeUnsafe<void>(),
  timer: undefined
})

/**
 * Aborts a run: sets its abort (a disposal overrides a plain abort), signals it, and starts
 * the grace timer. Idempotent.
 */
export const requestAbort = (env: Env, run: Run, abort: Abort): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (Deferred.isDoneUnsafe(run.settled)) return Effect.void
    if (run.abort !== undefined) {
      if (abort.disposal && !run.abort.disposal) run.abort = { reason: run.abort.reason, disposal: true }
      return Effect.void
    }
    run.abort = abort
    fire(run.aborted)
    return Effect.asVoid(Effect.tap(timer(env.abortGrace, run.deadline), (fiber) => Effect.sync(() => (run.timer = fiber))))
  })

/** Marks a run settled and stops its grace timer. */
export const settleRun = (run: Run): Effect.Effect<void> =>
  Effect.sync(() => {
    Deferred.doneUnsafe(run.settled, Exit.void)
    run.timer?.interruptUnsafe()
  })

/** Marks the agent busy: awaitIdle waits from now on. */
export const becomeBusy = (state: AgentState): void => {
  if (Deferred.isDoneUnsafe(state.idle)) state.idle = Deferred.makeUnsafe<void>()
}

/** Releases awaitIdle. */
export const becomeIdle = (state: AgentState): void => {
  Deferred.doneUnsafe(state.idle, Exit.void)
}

/**
 * Steering that arrived too late for its turn (or while an asked-for compaction ran) becomes the
 * next turn's messages: never stranded, and in the order the messages arrived (steering typed
 * before a queued message comes first).
 */
export const requeueSteering = (state: AgentState): void => {
  if (state.steering.length === 0) return
  state.queued.push(...state.steering.splice(0, state.steering.length).map((p) => ({ ...p, trigger: "steer" as const })))
  // stable: messages that arrived together keep their order
  state.queued.sort((a, b) => (a.arrival ?? 0) - (b.arrival ?? 0))
  // a disposal settled the runs it found and starts none: a run made now would never settle
  if (!state.disposing) state.next ??= makeRun()
}
