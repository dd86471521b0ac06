/**
 * The driver: the one fiber per agent that runs its turns. It waits for queued messages, moves
 * the agent to `running`, runs a turn for everything queued (and again while more arrives),
 * turns steering that came too late into the next turn's messages, and settles the agent
 * `idle`. A turn never fails (see `runTurn`); a bug of the loop's own is logged and the driver
 * goes on, so the agent always settles.
 *
 * @internal
 */
import type { Agent } from "@dsh/agent"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as SubscriptionRef from "effect/SubscriptionRef"
import { announceWithinGrace } from "./events.ts"
import { describeCause, type Failure } from "./failure.ts"
import { type AgentState, becomeIdle, type Env, makeRun, type Pending, requeueSteering, settleRun, type TurnReport } from "./state.ts"
import { runCompaction } from "./manual.ts"
import { runTurn } from "./turn.ts"

/** Runs turns until the agent is disposed. */
export const driver = Effect.fnUntraced(function*(env: Env, state: AgentState): Effect.fn.Return<void> {
  while (!state.disposing) {
    yield* state.wake.await
    yield* state.wake.close
    if (state.disposing) return
    if (!hasWork(state)) {
      if (state.current === undefined) becomeIdle(state)
      continue
    }
    yield* setStatus(env, state, "running")
    // asked-for compactions run between turns, before the messages queued meanwhile
    while (hasWork(state) && !state.disposing) {
      // more work: the last turn's callers need not wait for it
      tellSettled(state)
      yield* state.compactions.length > 0 ? runCompaction(env, state, state.compactions.shift()!) : nextTurn(env, state)
    }
    // (a disposal ends the driver, and tells the last turn's callers)
    if (state.disposing) return
    yield* setStatus(env, state, "idle")
    if (!hasWork(state)) becomeIdle(state)
    tellSettled(state)
  }
  // a disposal tells the last turn's callers itself, once the agent says `disposed`: told here,
  // a caller would find the agent still `running`
}, (effect, _env, state) => Effect.ensuring(effect, Effect.sync(() => void (state.disposing || tellSettled(state)))))

const hasWork = (state: AgentState): boolean => state.queued.length > 0 || state.compactions.length > 0

/** Runs one turn for the messages queued now, and tells their `agent.run` callers how it ended. */
const nextTurn = (env: Env, state: AgentState): Effect.Effect<void> =>
  Effect.suspend(() => {
    const run = state.next ?? makeRun()
    state.current = run
    const batch = takeBatch(state)
    state.next = state.queued.length === 0 ? undefined : makeRun()
    return runTurn(env, state, run, batch).pipe(
      Effect.tap((report) => Effect.sync(() => void (state.untold = { batch, report }))),
      Effect.catchCause((cause) => {
        if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
        state.untold = { batch, report: failedReport(state.lastTurn, describeCause(cause)) }
        return Effect.logError(`dsh: agent ${env.agentId}: the loop failed running a turn (a bug in dsh)`, cause)
      }),
      Effect.ensuring(Effect.suspend(() => {
        state.current = undefined
        state.turn = undefined
        requeueSteering(state)
        return settleRun(run)
      }))
    )
  })

/**
 * The messages of the next turn: everything queued, except that a message owing a typed answer
 * has a turn of its own — the messages queued before it are answered first, in prose, and
 * those behind it wait for the next turn (its turn answers it alone, through its Schema).
 */
const takeBatch = (state: AgentState): ReadonlyArray<Pending> => {
  const typed = state.queued.findIndex((pending) => pending.output !== undefined)
  return state.queued.splice(0, typed < 0 ? state.queued.length : typed === 0 ? 1 : typed)
}

const failedReport = (turn: number, failure: Failure): TurnReport => ({
  turn,
  start: -1,
  outcome: { _tag: "Failed", failure },
  abort: undefined,
  output: undefined
})

/** Tells the callers of the turn or compaction that ended last (see `AgentState.untold`), once. */
export const tellSettled = (state: AgentState): void => {
  const untold = state.untold
  state.untold = undefined
  if (untold !== undefined) tell(untold.batch, untold.report)
  const compaction = state.untoldCompaction
  state.untoldCompaction = undefined
  if (compaction !== undefined) Deferred.doneUnsafe(compaction.job.done, compaction.exit)
}

/** Tells the `agent.run` callers of these messages how their turn ended (once). */
export const tell = (batch: ReadonlyArray<Pending>, report: TurnReport): void => {
  for (const pending of batch) if (pending.waiter !== undefined) Deferred.doneUnsafe(pending.waiter, Effect.succeed(report))
}


/**
 * Logs a status change (not a repeated status, nothing after `disposed`) and tells its
 * listeners, contained: a listener failing on a status cannot keep the agent from settling.
 */
export const setStatus = (env: Env, state: AgentState, next: Agent.Status): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (state.status === next || state.status === "disposed") return Effect.void
    state.status = next
    return env.session.append("agent/status", { agentId: env.agentId, status: next }).pipe(
      Effect.tap(() => SubscriptionRef.set(state.statusRef, next)),
      Effect.flatMap((event) => announceWithinGrace(env, state, event))
    )
  })
