/**
 * `agent.run`: a message sent with a waiter, answered with what the turn that took it produced
 * (read from the log, see `TurnResult`), or the typed error of a turn that did not answer.
 *
 * @internal
 */
import { AgentDisposedError, InvalidInputError, InvalidOutputError, TurnAbortedError, TurnLimitError, TurnResult } from "@dsh/agent"
import type { Agent } from "@dsh/agent"
import { type Content, HarnessError } from "@dsh/llm"
import type { SessionEvent } from "@dsh/session"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Output from "./output.ts"
import { type AgentState, type Env, InsideAgents, type Pending, requestAbort, settleRun, type TurnReport } from "./state.ts"

/** Runs a message through a turn: queue it with a waiter, wait, read the result. */
export const run = Effect.fnUntraced(function*(
  env: Env,
  state: AgentState,
  content: ReadonlyArray<Content.ContentBlock>,
  options: TurnResult.RunOptions<unknown> | undefined,
  queue: (pending: Pending) => Effect.Effect<void, AgentDisposedError>
): Effect.fn.Return<TurnResult.TurnResult<unknown>, Agent.RunError> {
  if (options?.output !== undefined && !Schema.isSchema(options.output)) {
    return yield* new InvalidInputError({
      message: `agent ${env.agentId}: run()'s output must be a Schema of the answer, got ${HarnessError.describe(options.output)}`,
      agentId: env.agentId
    })
  }
  if (options?.output !== undefined && (yield* env.registry.names).includes(Output.toolName)) {
    return yield* new InvalidInputError({
      message: `agent ${env.agentId}: run()'s output is answered through a tool named ${Output.toolName}, ` +
        `and a registered tool has that name already: the model could not tell them apart (rename that tool)`,
      agentId: env.agentId
    })
  }
  const output = options?.output === undefined ? undefined : yield* Effect.fromResult(Output.make(options.output))
  const waiter = Deferred.makeUnsafe<TurnReport>()
  const callers = yield* InsideAgents
  const pending: Pending = {
    content,
    source: options?.source ?? "user",
    trigger: "send",
    waiter,
    ...(output === undefined ? {} : { output }),
    ...(callers.size === 0 ? {} : { callers })
  }
  yield* queue(pending)
  const report = yield* Deferred.await(waiter).pipe(Effect.onInterrupt(() => giveUp(env, state, pending)))
  return yield* resultOf(env, report)
})

/**
 * The caller stopped waiting: a message no turn took yet is dropped; the turn that took it is
 * aborted.
 */
const giveUp = (env: Env, state: AgentState, pending: Pending): Effect.Effect<void> =>
  Effect.suspend(() => {
    // by its waiter: the queue holds the message as queued (stamped with its arrival)
    const queued = state.queued.findIndex((waiting) => waiting.waiter === pending.waiter)
    if (queued >= 0) {
      state.queued.splice(queued, 1)
      // no message left for the run that was to take them: an abort waiting on it returns,
      // and one asked for later finds nothing to abort instead of waiting on it for ever
      return state.queued.length === 0 ? dropNextRun(state) : Effect.void
    }
    const running = state.current
    return running === undefined
      ? Effect.void
      : requestAbort(env, running, { reason: "agent.run was interrupted", disposal: false })
  })

const dropNextRun = (state: AgentState): Effect.Effect<void> => {
  const next = state.next
  if (next === undefined) return Effect.void
  state.next = undefined
  return settleRun(next)
}

/** The result of a reported turn, or the error of a turn that did not answer. */
const resultOf = (env: Env, report: TurnReport): Effect.Effect<TurnResult.TurnResult<unknown>, Agent.RunError> => {
  const { outcome, turn } = report
  switch (outcome._tag) {
    case "Failed":
      // the turn's own typed error: one of the classes RunError lists, or another harness error
      return Effect.fail(outcome.failure.error as Agent.RunError)
    case "Aborted":
      return Effect.fail(
        report.abort?.disposal === true
          ? new AgentDisposedError({
            // a message still queued at the disposal was part of no turn
            message: report.start < 0
              ? `agent ${env.agentId} was disposed before a turn took the message`
              : `agent ${env.agentId} was disposed before turn ${turn} answered`,
            agentId: env.agentId
          })
          : new TurnAbortedError({
            message: `turn ${turn} was aborted${report.abort?.reason === undefined ? "" : `: ${report.abort.reason}`}`,
            turn,
            ...(report.abort?.reason === undefined ? {} : { reason: report.abort.reason })
          })
      )
    case "Limit":
      if (report.output !== undefined && outcome.tool === Output.toolName) return Effect.fail(invalidOutput(report))
      return Effect.fail(new TurnLimitError({ message: `turn ${turn} stopped: ${outcome.message}`, turn, limit: outcome.name }))
    case "Completed": {
      if (report.output !== undefined && Option.isNone(report.output.value)) return Effect.fail(invalidOutput(report))
      return Effect.map(env.session.eventsFrom(report.start), (events) =>
        TurnResult.fromEvents(turn, eventsOfTurn(events, turn), report.output === undefined ? undefined : Option.getOrUndefined(report.output.value)))
    }
  }
}

const invalidOutput = (report: TurnReport): InvalidOutputError =>
  new InvalidOutputError({
    message: `turn ${report.turn} gave no answer that decodes through the output Schema${
      report.output?.lastProblem === undefined ? "" : `; the last one: ${report.output.lastProblem}`
    }`,
    turn: report.turn
  })

/** The events of a turn, from its `turn/start` (the first of `events`) to its `turn/end`. */
const eventsOfTurn = (events: ReadonlyArray<SessionEvent.SessionEvent>, turn: number) => {
  const end = events.findIndex((event) => event.type === "turn/end" && event.data.turn === turn)
  return end < 0 ? events : events.slice(0, end + 1)
}

