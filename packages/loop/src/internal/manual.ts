/**
 * `agent.compact()`: a compaction asked for, run by the driver between turns (after the running
 * one, before the messages queued meanwhile) under a run of its own, so `abort` and disposal
 * stop it as they stop a turn. Its events are logged between turns; a summarizer's failure is
 * recorded as `compaction/failed` and fails the call with its typed error.
 *
 * @internal
 */
import { type Agent, AgentDisposedError, InvalidInputError } from "@dsh/agent"
import type { SessionEvent } from "@dsh/session"
import { ToolErrors } from "@dsh/tools"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Latch from "effect/Latch"
import * as Option from "effect/Option"
import { awaitFiber } from "./bounded.ts"
import { compact, type Log, type Outcome } from "./compaction.ts"
import { announce } from "./events.ts"
import { describeCause } from "./failure.ts"
import { type AgentState, becomeBusy, type CompactJob, type Env, InsideAgents, makeRun, requeueSteering, settleRun } from "./state.ts"

/** Queues a compaction for the driver and waits for its report. */
export const requestCompaction = Effect.fnUntraced(function*(env: Env, state: AgentState): Effect.fn.Return<Agent.CompactionReport, Agent.RunError> {
  if ((yield* InsideAgents).has(env.agentId)) {
    return yield* new InvalidInputError({
      message: `agent ${env.agentId}: compact() was called from inside the agent's own turn (a tool or a listener), ` +
        "which would wait for itself; call it from outside, or let the automatic compaction run",
      agentId: env.agentId
    })
  }
  if (state.disposing) return yield* disposedError(env)
  const job: CompactJob = { done: Deferred.makeUnsafe() }
  state.compactions.push(job)
  becomeBusy(state)
  Latch.openUnsafe(state.wake)
  return yield* Deferred.await(job.done).pipe(
    Effect.onInterrupt(() =>
      Effect.sync(() => {
        const queued = state.compactions.indexOf(job)
        if (queued >= 0) state.compactions.splice(queued, 1)
      })
    )
  )
})

const disposedError = (env: Env) =>
  new AgentDisposedError({ message: `agent ${env.agentId} is disposed`, agentId: env.agentId })

/**
 * Runs one asked-for compaction to its end, or until an abort: then it is interrupted (the
 * summarizer's call recorded as `compaction/failed`, code `ABORTED`) and given the abort grace
 * to stop; nothing it does after that is logged.
 */
export const runCompaction = Effect.fnUntraced(function*(env: Env, state: AgentState, job: CompactJob): Effect.fn.Return<void> {
  const run = makeRun()
  state.current = run
  let closed = false
  // Once disposal began nothing is applied any more, but a failure is still recorded (the
  // summarizer's interruption by the disposal), as a turn's closing is, before `disposed`.
  const log: Log = (type, data) =>
    Effect.flatMap(
      env.session.appendIf(() => !closed && (type === "compaction/failed" || !state.disposing), type, data),
      (event) => (event === undefined ? Effect.void : announce(env, state, event as SessionEvent.SessionEvent))
    )
  const work = yield* Effect.forkDetach(compact(env, state, log, "manual"))
  let ended = yield* awaitFiber(work, run.aborted)
  if (Option.isNone(ended)) {
    work.interruptUnsafe()
    ended = yield* awaitFiber(work, run.deadline)
    // the summarizer did not stop within the grace: its own record of the abort would come too
    // late to be logged, so the compaction's end is recorded here, before the log closes to it
    if (Option.isNone(ended)) {
      yield* Effect.ignore(log("compaction/failed", {
        kind: "summary",
        reason: "manual",
        code: "ABORTED",
        message: "the summarizing call did not stop within the abort grace; it was detached"
      }))
    }
  }
  closed = true
  state.current = undefined
  // steering sent while the compaction ran had no turn to join: it starts the next one
  requeueSteering(state)
  yield* settleRun(run)
  const aborted = run.abort === undefined
    ? undefined
    : run.abort.disposal
    ? disposedError(env)
    : new ToolErrors.AbortedError({
      message: `the compaction was aborted${run.abort.reason === undefined ? "" : `: ${run.abort.reason}`}`
    })
  // told once the agent settles (idle) or goes on to more work, as a turn's `run` callers are
  state.untoldCompaction = { job, exit: jobExit(env, Option.getOrUndefined(ended), aborted) }
})

/** What a compaction job's waiter gets for how its work ended. */
const jobExit = (
  env: Env,
  exit: Exit.Exit<Outcome, unknown> | undefined,
  aborted: Agent.RunError | undefined
): Exit.Exit<Agent.CompactionReport, Agent.RunError> => {
  if (exit === undefined || (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause))) {
    return Exit.fail(aborted ?? disposedError(env))
  }
  if (Exit.isFailure(exit)) return Exit.fail(describeCause(exit.cause).error as Agent.RunError)
  const { failure, report } = exit.value
  return failure === undefined ? Exit.succeed(report) : Exit.fail(failure as Agent.RunError)
}

/**
 * Fails the compactions asked for that have not started: `abort()` stops them as it stops the
 * turn queued messages would start.
 */
export const abortQueuedCompactions = (state: AgentState, reason: string | undefined): void =>
  failQueued(state, new ToolErrors.AbortedError({ message: `the compaction was aborted before it started${reason === undefined ? "" : `: ${reason}`}` }))

const failQueued = (state: AgentState, error: Agent.RunError): void => {
  for (const job of state.compactions.splice(0, state.compactions.length)) Deferred.doneUnsafe(job.done, Exit.fail(error))
}

/** Fails the compactions no driver will run: the agent was disposed. */
export const failQueuedCompactions = (env: Env, state: AgentState): void => failQueued(state, disposedError(env))
