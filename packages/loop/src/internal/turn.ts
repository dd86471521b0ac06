/**
 * One turn, from `turn/start` to its flush checkpoint.
 *
 * The turn's work (its listeners, steering, steps and continuation decisions) runs in a fiber
 * of its own, the **body**; the turn itself supervises it. When the body returns, fails, or an
 * abort (or the agent's disposal) arrives, the turn closes: it marks itself closed — from then
 * on nothing the body does is logged — records a failure as an `error` event, closes what the
 * log leaves open (`Closing`: the partial answer, every call of the open step answered, from
 * its finished result or `ABORTED`, then `step/end`) and logs `turn/end`. After an abort the
 * body is interrupted and given `abortGrace` to stop; work that ignores the interruption is
 * detached and its late results dropped. So every `turn/start` gets its `turn/end`, whatever
 * failed or hung, and an abort is prompt.
 *
 * @internal
 */
import { Content, type HarnessError } from "@dsh/llm"
import { Closing, type SessionEvent } from "@dsh/session"
import { ToolResult } from "@dsh/tools"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import { awaitFiber, graceFromNow, type Signal, untilDeadline } from "./bounded.ts"
import { compact, compactIfNeeded, isOverflow, type Log } from "./compaction.ts"
import { appendAnnounced, logInTurn, notify } from "./events.ts"
import { describeCause, throughSeam } from "./failure.ts"
import * as Output from "./output.ts"
import { type AgentState, type Env, InsideAgents, type Outcome, type Pending, type Run, type Step, type Turn, type TurnReport } from "./state.ts"
import { runStep, type StepFailure, type StepResult } from "./step.ts"

const completed: Outcome = { _tag: "Completed" }
const aborted: Outcome = { _tag: "Aborted" }

/** Runs a turn for queued messages under its run; never fails. Reports how it ended. */
export const runTurn = (
  env: Env,
  state: AgentState,
  run: Run,
  messages: ReadonlyArray<Pending>
): Effect.Effect<TurnReport> =>
  Effect.suspend(() => {
    const number = ++state.lastTurn
    return turnWork(env, state, run, messages, number).pipe(
      Effect.withSpan("Agent.turn", {}, { captureStackTrace: false }),
      Effect.annotateSpans({ "dsh.session": env.session.id, "dsh.agent": env.agentId, "dsh.turn": number })
    )
  })

/**
 * Opens the turn, runs its body in a fiber of its own, closes the turn and flushes it. The
 * loop's units are generators made once (`Effect.fnUntraced`): V8 makes a generator closure
 * created per call cost ~2 µs at its first run.
 */
const turnWork = Effect.fnUntraced(function*(
  env: Env,
  state: AgentState,
  run: Run,
  messages: ReadonlyArray<Pending>,
  number: number
): Effect.fn.Return<TurnReport> {
  const turn = yield* openTurn(env, state, run, number, messages)
  const body = yield* Effect.forkDetach(insideCallers(turnBody(env, state, turn), messages))
  const outcome = yield* awaitBody(env, turn, body)
  // after an abort, the closing and the flush get a grace of their own (not none)
  const window = turn.run.abort === undefined ? undefined : yield* graceFromNow(env.abortGrace)
  const deadline = window?.deadline ?? turn.run.deadline
  yield* closeTurn(env, state, turn, outcome, deadline)
  yield* flushTurn(env, state, turn, deadline)
  if (window !== undefined) yield* window.cancel
  const report: TurnReport = { turn: number, start: turn.start, outcome, abort: run.abort, output: turn.output }
  return report
})

/**
 * Runs the turn's work inside the agents whose `agent.run` callers wait for it (a tool of
 * theirs called it): a `run` back into one of them from this turn is refused at once, where it
 * would wait for the very turn that waits for it.
 */
const insideCallers = <A, E>(work: Effect.Effect<A, E>, messages: ReadonlyArray<Pending>): Effect.Effect<A, E> => {
  const callers = messages.flatMap((pending) => (pending.callers === undefined ? [] : [...pending.callers]))
  if (callers.length === 0) return work
  return Effect.flatMap(Effect.service(InsideAgents), (inside) =>
    Effect.provideService(work, InsideAgents, new Set([...inside, ...callers])))
}

/**
 * Logs `turn/start` and the messages, before anything can fail or be aborted: a message taken
 * for a turn is always logged.
 */
const openTurn = Effect.fnUntraced(function*(
  env: Env,
  state: AgentState,
  run: Run,
  number: number,
  messages: ReadonlyArray<Pending>
): Effect.fn.Return<Turn> {
  const start = yield* env.session.append("turn/start", { turn: number, trigger: messages[0]?.trigger ?? "send" })
  const opened: Array<SessionEvent.SessionEvent> = [start]
  for (const pending of messages) {
    opened.push(yield* env.session.append("user/message", { content: pending.content, source: pending.source }))
  }
  const turn: Turn = {
    number,
    run,
    start: start.seq,
    opened,
    closed: false,
    dropped: 0,
    step: undefined,
    invalidArgs: new Map(),
    output: messages.find((pending) => pending.output !== undefined)?.output,
    overflowed: false,
    compactionFailed: false,
    failureLogged: false
  }
  state.turn = turn
  return turn
})

/** The turn's work: the listeners of its opening events, then steps until one says stop. */
const turnBody = Effect.fnUntraced(function*(env: Env, state: AgentState, turn: Turn): Effect.fn.Return<Outcome, unknown> {
  for (const event of turn.opened) yield* notify(env, state, event)
  let number = 0
  while (true) {
    if (turn.run.abort !== undefined) return aborted
    if (number >= env.maxSteps) {
      return { _tag: "Limit", name: "max-steps", message: `the turn reached its limit of ${env.maxSteps} steps` }
    }
    number++
    // steering queued before the step is answered by it; only steering that arrives during it forces another
    yield* drainSteering(env, state, turn)
    yield* compactIfNeeded(env, state, logCompaction(env, state, turn), turn)
    const step: Step = { number, calls: [], results: new Map() }
    yield* logInTurn(env, state, turn, "step/start", { turn: turn.number, step: number }, () => (turn.step = step))
    const result = yield* runStep(env, state, turn, step).pipe(
      Effect.catchIf(
        (error) => isOverflow(error) && !turn.overflowed,
        (error) => retryAfterOverflow(env, state, turn, step, error)
      )
    )
    // the step overflowed the window and was closed; the history is compacted: the next step asks again
    if (result === undefined) continue
    const answer = yield* awaitedAnswer(env, state, turn, result)
    const stuck = answer === "answered" ? undefined : countInvalidArgs(env, turn, step)
    // steering that arrived during the turn's last step is not logged in it: no step would
    // answer it, so it stays queued and becomes the next turn's messages
    const last = endsTurn(env, number, answer, stuck)
    const steered = last ? false : yield* drainSteering(env, state, turn)
    yield* logInTurn(env, state, turn, "step/end", { turn: turn.number, step: number }, () => (turn.step = undefined))
    if (stuck !== undefined) return stuck
    if (answer === "answered") return completed
    // the answer is still due: the turn goes on whatever the continuation would say
    if (answer === "asked-again") continue
    const proceed = yield* throughSeam(
      "continuation",
      env.hooks.continuation,
      {
        message: result.message,
        hadToolCalls: result.hadToolCalls,
        steered,
        context: { agentId: env.agentId, sessionId: env.session.id, turn: turn.number, step: number }
      },
      (input) => input.hadToolCalls || input.steered,
      "true or false",
      Predicate.isBoolean
    )
    // steering queued by step-end or continuation listeners forces another step, but the last
    if (!proceed && (last || state.steering.length === 0)) return completed
  }
})

/**
 * Whether the step just run is the turn's last whatever steering arrived meanwhile: its typed
 * answer was given, a tool's invalid arguments reached the limit, or it was the last step
 * `maxSteps` allows.
 */
const endsTurn = (
  env: Env,
  step: number,
  answer: "answered" | "asked-again" | undefined,
  stuck: Outcome | undefined
): boolean => answer === "answered" || stuck !== undefined || step >= env.maxSteps

/** Logs a compaction's events as the turn's (dropped once it is closed). */
const logCompaction = (env: Env, state: AgentState, turn: Turn): Log => (type, data) => logInTurn(env, state, turn, type, data)

/**
 * A step the provider refused as too long for the context window: the failure is recorded
 * (an `error` event of the step), the step is closed from the log, and the history compacted
 * for the overflow. When that compacted anything the step is asked again (once per turn: the
 * turn then owes nothing); otherwise the turn ends with the step's failure.
 */
const retryAfterOverflow = Effect.fnUntraced(function*(
  env: Env,
  state: AgentState,
  turn: Turn,
  step: Step,
  error: HarnessError.HarnessError | StepFailure
): Effect.fn.Return<undefined, HarnessError.HarnessError | StepFailure> {
  turn.overflowed = true
  const { code, message } = describeCause(Cause.fail(error))
  yield* logInTurn(env, state, turn, "error", { turn: turn.number, step: step.number, message, code })
  const closing = Closing.plan(yield* env.session.eventsFrom(turn.start), {
    answer: (call) => step.results.get(call.id) ?? ToolResult.aborted(call, "the request overflowed the context window")
  })
  for (const pending of closing) {
    yield* logInTurn(env, state, turn, pending.type, pending.data as never, () => {
      if (pending.type === "step/end") turn.step = undefined
    })
  }
  const { report } = yield* compact(env, state, logCompaction(env, state, turn), "overflow")
  if (report.applied.length > 0) return undefined
  turn.failureLogged = true
  return yield* Effect.fail(error)
})

/**
 * Logs the steering queued so far; whether there was any. A message leaves the queue in the
 * same synchronous step that logs it, and not at all once the turn is closed: steering is
 * logged or stays queued (for the next turn), never lost.
 */
const drainSteering = Effect.fnUntraced(function*(env: Env, state: AgentState, turn: Turn): Effect.fn.Return<boolean, HarnessError.HarnessError> {
  let steered = false
  while (!turn.closed) {
    const pending = state.steering[0]
    if (pending === undefined) break
    const event = yield* env.session.appendIf(
      () => takeSteering(state, turn, pending),
      "steering/message",
      { turn: turn.number, content: pending.content, source: pending.source }
    )
    if (event === undefined) continue
    steered = true
    yield* notify(env, state, event)
  }
  return steered
})

/** Takes the steering message at the front of the queue, if it is still `pending` and the turn still open. */
const takeSteering = (state: AgentState, turn: Turn, pending: Pending): boolean => {
  if (turn.closed || state.steering[0] !== pending) return false
  state.steering.shift()
  return true
}

/**
 * With a typed answer pending: `answered` once it was given (a `final_answer` call or JSON text
 * that decodes), `asked-again` when the step ended without one — the model is steered to give it,
 * which counts against the `maxInvalidArgs` budget like a failed call; `undefined` without.
 */
const awaitedAnswer = (
  env: Env,
  state: AgentState,
  turn: Turn,
  result: StepResult
): Effect.Effect<"answered" | "asked-again" | undefined, HarnessError.HarnessError> => {
  const output = turn.output
  if (output === undefined) return Effect.succeed(undefined)
  if (Option.isSome(output.value)) return Effect.succeed("answered")
  if (result.hadToolCalls) return Effect.succeed("asked-again")
  const again = Output.acceptText(output, result.message.content, result.cutShort)
  if (again === undefined) return Effect.succeed("answered")
  turn.invalidArgs.set(Output.toolName, (turn.invalidArgs.get(Output.toolName) ?? 0) + 1)
  return Effect.as(
    logInTurn(env, state, turn, "steering/message", { turn: turn.number, content: [Content.text(again)], source: "dsh/output" }),
    "asked-again"
  )
}

/** Counts consecutive `INVALID_ARGS` results per tool; the limit outcome when one reached the limit. */
const countInvalidArgs = (env: Env, turn: Turn, step: Step): Outcome | undefined => {
  for (const call of step.calls) {
    const code = step.results.get(call.id)?.error?.code
    turn.invalidArgs.set(call.name, code === "INVALID_ARGS" ? (turn.invalidArgs.get(call.name) ?? 0) + 1 : 0)
  }
  for (const [tool, count] of turn.invalidArgs) {
    if (count >= env.maxInvalidArgs) {
      return {
        _tag: "Limit",
        name: "invalid-args",
        message: `the model sent invalid arguments to tool "${tool}" ${count} times in a row`,
        tool
      }
    }
  }
  return undefined
}

/**
 * Waits for the body, or for an abort: then interrupts the body and waits for it until the
 * abort deadline; work that does not stop by then is detached.
 */
const awaitBody = Effect.fnUntraced(function*(env: Env, turn: Turn, body: Fiber.Fiber<Outcome, unknown>): Effect.fn.Return<Outcome> {
  const ended = yield* awaitFiber(body, turn.run.aborted)
  if (Option.isSome(ended)) return outcomeOf(turn, ended.value)
  body.interruptUnsafe()
  const stopped = yield* awaitFiber(body, turn.run.deadline)
  if (Option.isNone(stopped)) yield* detach(env, turn, body)
  return aborted
})

/** Says that the body is left running, and says again when it finally ends: what it did then was dropped. */
const detach = (env: Env, turn: Turn, body: Fiber.Fiber<Outcome, unknown>): Effect.Effect<void> => {
  const where = `dsh: agent ${env.agentId}, turn ${turn.number}`
  return Effect.andThen(
    Effect.logWarning(
      `${where}: its work did not stop within the abort grace (an uninterruptible tool body, model stream or ` +
        "listener); detached, and whatever it returns is dropped"
    ),
    Effect.forkDetach(Effect.andThen(
      Fiber.await(body),
      Effect.logWarning(`${where}: the work detached at the abort ended after the turn was closed; its results were dropped`)
    ))
  )
}

/** How an ended body's exit reads as an outcome (an abort that came meanwhile wins over completion). */
const outcomeOf = (turn: Turn, exit: Exit.Exit<Outcome, unknown>): Outcome => {
  if (Exit.isSuccess(exit)) return exit.value._tag === "Completed" && turn.run.abort !== undefined ? aborted : exit.value
  if (Cause.hasInterruptsOnly(exit.cause)) return aborted
  return { _tag: "Failed", failure: describeCause(exit.cause) }
}

/**
 * Closes the turn: from now on the body logs nothing; a failure is recorded as an `error`
 * event; what the log leaves open is closed (see `Closing`); `turn/end`. Idempotent. Listeners
 * of the closing events run contained, given up at the abort deadline, and not at all during
 * disposal.
 */
export const closeTurn = Effect.fnUntraced(function*(
  env: Env,
  state: AgentState,
  turn: Turn,
  outcome: Outcome,
  deadline: Signal
): Effect.fn.Return<void> {
  if (turn.closed) return
  turn.closed = true
  const reason = endReason(turn.run, outcome)
  if (outcome._tag === "Failed" && !turn.failureLogged) {
    const { code, message, reportedCode } = outcome.failure
    yield* appendAnnounced(env, state, "error", {
      turn: turn.number,
      ...(turn.step === undefined ? {} : { step: turn.step.number }),
      message,
      code,
      ...(reportedCode === undefined ? {} : { reportedCode })
    }, deadline)
  }
  const why = closingReason(turn.run, outcome)
  // a turn whose work ended on its own left no step open: only its end is missing
  const closing: ReadonlyArray<Closing.Pending> = turn.step === undefined && (outcome._tag === "Completed" || outcome._tag === "Limit")
    ? [{ type: "turn/end", data: { turn: turn.number, reason } }]
    : Closing.plan(yield* env.session.eventsFrom(turn.start), {
      answer: (call) => turn.step?.results.get(call.id) ?? ToolResult.aborted(call, why),
      reason
    })
  for (const pending of closing) yield* appendAnnounced(env, state, pending.type, pending.data as never, deadline)
  turn.step = undefined
  yield* Effect.annotateCurrentSpan(
    reason.kind === "error" ? { "dsh.turn.end": reason.kind, "dsh.error_code": reason.code } : { "dsh.turn.end": reason.kind }
  )
})

const endReason = (run: Run, outcome: Outcome): SessionEvent.TurnEndReason => {
  switch (outcome._tag) {
    case "Completed":
      return { kind: "completed" }
    case "Limit":
      return { kind: "limit", name: outcome.name, message: outcome.message }
    case "Failed":
      return { kind: "error", message: outcome.failure.message, code: outcome.failure.code }
    case "Aborted":
      if (run.abort?.disposal === true) return { kind: "disposed" }
      // nobody asked: the turn's own work interrupted itself, which the log should say
      if (run.abort === undefined) return { kind: "aborted", reason: selfInterrupted }
      return run.abort.reason === undefined ? { kind: "aborted" } : { kind: "aborted", reason: run.abort.reason }
  }
}

const selfInterrupted = "the turn's work interrupted itself (a middleware, a prompt section or a listener gave Effect.interrupt); no abort was asked for"

/** Why the calls left open were not finished, in the words of their `ABORTED` results. */
const closingReason = (run: Run, outcome: Outcome): string =>
  outcome._tag === "Failed"
    ? `the step failed: ${outcome.failure.message}`
    : run.abort?.disposal === true
    ? "the agent was disposed"
    : run.abort === undefined
    ? selfInterrupted
    : run.abort.reason ?? "the turn was aborted"

/**
 * The flush checkpoint after `turn/end`: a failure is recorded (an `error` event after the
 * turn's end) and never ends anything; a flush still running at the deadline (an abort's) is
 * given up — it goes on in the background, unconfirmed — and recorded as such.
 */
const flushTurn = Effect.fnUntraced(function*(env: Env, state: AgentState, turn: Turn, deadline: Signal): Effect.fn.Return<void> {
  const flushed = yield* untilDeadline(deadline, env.checkpoint.flush(env.session), (exit) =>
    Effect.logWarning(
      `dsh: session ${env.session.id}: the flush given up after turn ${turn.number} ended ${
        Exit.isSuccess(exit) ? "successfully" : `in failure: ${describeCause(exit.cause).message}`
      }, after the abort grace`
    ))
  if (Option.isNone(flushed)) {
    const message = `the flush checkpoint after turn ${turn.number} did not finish within the abort grace; ` +
      "it goes on in the background and what it writes is not confirmed"
    yield* appendAnnounced(env, state, "error", { turn: turn.number, message, code: "ABORTED" }, deadline)
    return yield* Effect.logWarning(`dsh: session ${env.session.id}: ${message}`)
  }
  const exit = flushed.value
  if (Exit.isSuccess(exit)) return
  const { code, message } = describeCause(exit.cause)
  yield* appendAnnounced(env, state, "error", { turn: turn.number, message, code }, deadline)
  yield* Effect.logWarning(`dsh: flushing session ${env.session.id} failed: ${message}`)
})

