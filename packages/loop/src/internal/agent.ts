/**
 * The agent's handle and its disposal. The handle only queues, signals and reads: `send` and
 * `steer` queue messages and wake the driver, `inject` appends context at once, `abort` aborts
 * the running turn (or the one the queued messages will start) and waits for it to end.
 * Disposal aborts whatever runs, lets the driver close it within the abort grace, and logs the
 * last status.
 *
 * @internal
 */
import { type Agent, AgentDisposedError, InvalidInputError, type TurnResult } from "@dsh/agent"
import { Content, HarnessError } from "@dsh/llm"
import type { SessionEvent } from "@dsh/session"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Latch from "effect/Latch"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import { awaitSignal } from "./bounded.ts"
import { setStatus, tell, tellSettled } from "./driver.ts"
import { announceWithinGrace } from "./events.ts"
import {
  type AgentState,
  becomeBusy,
  becomeIdle,
  type Env,
  InsideAgents,
  makeRun,
  type Pending,
  requestAbort,
  settleRun
} from "./state.ts"
import { abortQueuedCompactions, failQueuedCompactions, requestCompaction } from "./manual.ts"
import { run } from "./run.ts"
import { closeTurn } from "./turn.ts"

const decodeBlocks = Schema.decodeUnknownResult(Schema.Array(Content.ContentBlock))

/**
 * The content of a message: text as one text block, blocks checked against their Schema (the
 * types allow nothing else, but JavaScript and decoded JSON do; a malformed block in the log
 * could never be persisted nor sent).
 */
const contentOf = (
  env: Env,
  input: Agent.Input,
  options: Agent.MessageOptions | undefined
): Effect.Effect<ReadonlyArray<Content.ContentBlock>, InvalidInputError> => {
  // options of another kind (past the types: `run("q", 5)`) would be read as none
  if (options !== undefined && (typeof options !== "object" || options === null || Array.isArray(options))) {
    return invalidInput(env, `its options must be an object, got ${typeof options === "string" ? JSON.stringify(options) : HarnessError.describe(options)}`)
  }
  if (options?.source !== undefined && typeof options.source !== "string") {
    return invalidInput(env, `its source must be a string, got ${HarnessError.describe(options.source)}`)
  }
  if (typeof input === "string") return Effect.succeed([Content.text(input)])
  if (!Array.isArray(input)) return invalidInput(env, `it must be text or content blocks, got ${HarnessError.describe(input)}`)
  const decoded = decodeBlocks(input)
  if (Result.isFailure(decoded)) {
    return invalidInput(env, `it must be text or content blocks: ${HarnessError.describe(decoded.failure.message)}`)
  }
  const paired = decoded.success.find((block) => block.type === "tool-call" || block.type === "tool-result")
  // calls and results are the loop's to pair: one sent in would leave a call no result answers,
  // or a result of no call, which providers refuse for every later request of the session
  return paired === undefined
    ? Effect.succeed(input)
    : invalidInput(env, `a ${paired.type} block is the loop's to log (a message carries text, images and custom blocks)`)
}

const invalidInput = (env: Env, problem: string) =>
  Effect.fail(new InvalidInputError({ message: `a message for agent ${env.agentId} was refused: ${problem}`, agentId: env.agentId }))

/** The state of a new agent, before its first status. */
export const makeState = Effect.fnUntraced(function*(
  lastTurn: number,
  lastSettings: string | undefined,
  summarizedThrough: number
): Effect.fn.Return<AgentState> {
  const idle = Deferred.makeUnsafe<void>()
  Deferred.doneUnsafe(idle, Effect.void)
  return {
    queued: [],
    steering: [],
    arrivals: 0,
    wake: yield* Latch.make(false),
    statusRef: yield* SubscriptionRef.make<Agent.Status>("idle"),
    status: undefined,
    current: undefined,
    turn: undefined,
    next: undefined,
    idle,
    disposing: false,
    lastTurn,
    lastSettings,
    loggedSettings: undefined,
    handle: undefined,
    compactions: [],
    size: undefined,
    summarizedThrough,
    nothingToCompactAt: undefined,
    untold: undefined,
    untoldCompaction: undefined
  }
})

const disposed = (env: Env) =>
  Effect.fail(new AgentDisposedError({ message: `agent ${env.agentId} is disposed`, agentId: env.agentId }))

/**
 * Queues a message (steering goes to the running turn) and wakes the driver; refused once the
 * agent is disposed (checked in the same step that queues).
 */
const enqueue = (
  env: Env,
  state: AgentState,
  input: Agent.Input,
  options: Agent.MessageOptions | undefined,
  trigger: Pending["trigger"]
): Effect.Effect<void, AgentDisposedError | InvalidInputError> =>
  Effect.flatMap(
    Effect.suspend(() => contentOf(env, input, options)),
    (content) => queueUnlessDisposed(env, state, { content, source: options?.source ?? "user", trigger })
  )

const queueUnlessDisposed = (env: Env, state: AgentState, pending: Pending): Effect.Effect<void, AgentDisposedError> =>
  Effect.suspend(() => {
    if (state.disposing) return disposed(env)
    queue(state, pending)
    return Effect.void
  })

const queue = (state: AgentState, message: Pending): void => {
  const pending = { ...message, arrival: state.arrivals++ }
  if (pending.trigger === "steer" && state.current !== undefined) state.steering.push(pending)
  else {
    state.queued.push(pending)
    state.next ??= makeRun()
  }
  becomeBusy(state)
  Latch.openUnsafe(state.wake)
}

/**
 * Aborts the running turn, or the turn the queued messages will start; waits until it has
 * ended, unless called from inside this agent (a tool, a listener), which must not wait for
 * the turn it runs in.
 */
const abort = Effect.fnUntraced(function*(env: Env, state: AgentState, reason: string | undefined): Effect.fn.Return<void> {
  // nothing runs yet: what was asked for next is aborted, a queued compaction included
  if (state.current === undefined) abortQueuedCompactions(state, reason)
  const run = state.current ?? state.next
  if (run === undefined) return
  yield* requestAbort(env, run, { reason, disposal: false })
  if ((yield* InsideAgents).has(env.agentId)) return
  yield* Deferred.await(run.settled)
})

/**
 * An abort's reason as text: it is logged in `turn/end` and carried by `TurnAbortedError`, both
 * of which hold a string; anything else (possible past the types) is described.
 */
const reasonOf = (reason: unknown): string | undefined =>
  reason === undefined || typeof reason === "string" ? reason : HarnessError.describe(reason)

/**
 * Refuses a call that waits for a turn of this agent when made from inside one (a tool, a
 * listener): that turn cannot start before the one the caller runs in ends.
 */
const refuseInside = Effect.fnUntraced(function*(env: Env, call: string, instead: string): Effect.fn.Return<void, InvalidInputError> {
  if (!(yield* InsideAgents).has(env.agentId)) return
  return yield* new InvalidInputError({
    message: `agent ${env.agentId}: ${call} was called from inside the agent's own turn (a tool or a listener), ` +
      `or from a turn that turn waits for, which would wait for itself; ${instead}`,
    agentId: env.agentId
  })
})

/** The handle of an agent. */
export const makeHandle = (env: Env, state: AgentState): Agent.Agent => ({
  id: env.agentId,
  session: env.session,
  send: (input, options) => enqueue(env, state, input, options, "send"),
  run: ((input: Agent.Input, options?: TurnResult.RunOptions<unknown>) =>
    Effect.flatMap(
      Effect.andThen(refuseInside(env, "run()", "call send() to queue the message for the next turn, or call it from outside"), Effect.suspend(() => contentOf(env, input, options))),
      (content) => run(env, state, content, options, (pending) => queueUnlessDisposed(env, state, pending))
    )) as Agent.Agent["run"],
  steer: (input, options) => enqueue(env, state, input, options, "steer"),
  inject: (input, options) =>
    Effect.flatMap(Effect.suspend(() => contentOf(env, input, options)), (content) =>
      // refused once disposed, checked where the event is stored
      Effect.flatMap(
        env.session.appendIf(() => !state.disposing, "context/message", { content, source: options?.source ?? "context" }),
        (event) => (event === undefined ? disposed(env) : announceWithinGrace(env, state, event))
      )),
  abort: (reason) => abort(env, state, reasonOf(reason)),
  status: Effect.sync(() => state.status ?? "idle"),
  statusChanges: SubscriptionRef.changes(state.statusRef).pipe(Stream.takeUntil((status) => status === "disposed")),
  events: eventsUntilDisposed(env, state),
  awaitIdle: Effect.andThen(refuseInside(env, "awaitIdle", "the agent is idle only after the turn it was called from ends; wait from outside"), Effect.suspend(() => Deferred.await(state.idle))),
  compact: () => requestCompaction(env, state)
})

/**
 * The events the agent logs from the subscription on, ending with its `disposed` status: a
 * session may outlive its agent (one resumed from its store), and its stream would go on. A
 * subscription after the disposal ends at once.
 */
const eventsUntilDisposed = (env: Env, state: AgentState): Stream.Stream<SessionEvent.SessionEvent> =>
  Stream.unwrap(Effect.map(env.session.seq, (seq) =>
    // the status is set before its event is appended: read after the seq, it cannot miss it
    state.status === "disposed"
      ? Stream.empty
      : env.session.streamFrom(seq).pipe(Stream.takeUntil((event) => isDisposal(env, event)))))

const isDisposal = (env: Env, event: SessionEvent.SessionEvent): boolean =>
  event.type === "agent/status" && event.data.agentId === env.agentId && event.data.status === "disposed"

/**
 * Disposes the agent: aborts what runs (its turn ends `disposed`) and what is queued, lets the
 * driver finish within the abort grace, then logs `disposed`. Should the driver not finish —
 * a bug, since everything it waits on is bounded — it is interrupted, the open turn is closed
 * here, and the agent is disposed all the same.
 */
export const dispose = Effect.fnUntraced(function*(env: Env, state: AgentState, driver: Fiber.Fiber<void>): Effect.fn.Return<void> {
  state.disposing = true
  const runs = [state.current, state.next].filter((run) => run !== undefined)
  for (const run of runs) yield* requestAbort(env, run, { reason: undefined, disposal: true })
  Latch.openUnsafe(state.wake)
  const running = state.current
  // the driver gives up on the turn's work at the abort deadline; give it as long again to close
  const patience = running === undefined
    ? Effect.never
    : Effect.andThen(awaitSignal(running.deadline), Effect.sleep(env.abortGrace))
  const stopped = yield* Effect.raceFirst(Effect.map(Fiber.await(driver), Option.some), Effect.as(patience, Option.none()))
  if (Option.isNone(stopped) && running !== undefined) {
    driver.interruptUnsafe()
    yield* Effect.logError(`dsh: agent ${env.agentId}: the driver did not stop at disposal (a bug in dsh); interrupted`)
    if (state.turn !== undefined) yield* closeTurn(env, state, state.turn, { _tag: "Aborted" }, running.deadline)
  }
  yield* setStatus(env, state, "disposed")
  // a turn that ended as the disposal began: its callers learn how
  tellSettled(state)
  // messages no turn took: their agent.run callers learn of the disposal
  tell(state.queued, {
    turn: state.lastTurn,
    start: -1,
    outcome: { _tag: "Aborted" },
    abort: { reason: undefined, disposal: true },
    output: undefined
  })
  failQueuedCompactions(env, state)
  for (const run of runs) yield* settleRun(run)
  becomeIdle(state)
})
