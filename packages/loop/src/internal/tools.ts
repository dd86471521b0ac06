/**
 * Tool dispatch for one step: the calls of the logged assistant message, in order, a run of
 * consecutive concurrency-safe calls at once and any other call alone. Every call of a batch is
 * announced (`tool/call`) before any of them runs; results are kept in the step as they finish
 * and logged in call order once the batch is done, so an abort mid-batch keeps what finished.
 * A result that arrives after the turn was closed is dropped with a log line.
 *
 * @internal
 */
import type { Content, HarnessError } from "@dsh/llm"
import { Closing } from "@dsh/session"
import { ToolContext } from "@dsh/tools"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { dropLate, logInTurn } from "./events.ts"
import * as Output from "./output.ts"
import type { AgentState, Env, Step, Turn } from "./state.ts"

/** Runs the calls of a step's message, batch by batch. */
export const dispatchTools = Effect.fnUntraced(function*(
  env: Env,
  state: AgentState,
  turn: Turn,
  step: Step,
  calls: ReadonlyArray<Content.ToolCallBlock>
): Effect.fn.Return<void, HarnessError.HarnessError> {
  // a lone call is its own batch: no lookup of whether it may run beside others
  if (calls.length === 1) return yield* runBatch(env, state, turn, step, calls)
  let from = 0
  while (from < calls.length) {
    const batch = yield* nextBatch(env, calls, from)
    from += batch.length
    yield* runBatch(env, state, turn, step, batch)
  }
})

/** The calls from `from` that run together: consecutive concurrency-safe calls, or one call. */
const nextBatch = Effect.fnUntraced(function*(
  env: Env,
  calls: ReadonlyArray<Content.ToolCallBlock>,
  from: number
): Effect.fn.Return<ReadonlyArray<Content.ToolCallBlock>> {
  const batch = [calls[from]!]
  if (!(yield* isConcurrencySafe(env, calls[from]!))) return batch
  while (from + batch.length < calls.length && (yield* isConcurrencySafe(env, calls[from + batch.length]!))) {
    batch.push(calls[from + batch.length]!)
  }
  return batch
})

// A turn's typed answer is taken here, decoded like any tool's arguments.
const resultOf = (env: Env, turn: Turn, step: Step, call: Content.ToolCallBlock): Effect.Effect<Content.ToolResultBlock> => {
  const output = turn.output
  if (output !== undefined && call.name === output.schema.name) return Effect.sync(() => Output.acceptCall(output, call))
  return env.registry.execute(call).pipe(ToolContext.within({
    agentId: env.agentId,
    session: env.session,
    turn: turn.number,
    step: step.number,
    callId: call.id,
    agentScope: env.agentScope
  }))
}

const isConcurrencySafe = (env: Env, call: Content.ToolCallBlock): Effect.Effect<boolean> =>
  Effect.map(env.registry.lookup(call.name), Option.match({ onNone: () => false, onSome: (tool) => tool.concurrencySafe }))

const runBatch = Effect.fnUntraced(function*(
  env: Env,
  state: AgentState,
  turn: Turn,
  step: Step,
  batch: ReadonlyArray<Content.ToolCallBlock>
): Effect.fn.Return<void, HarnessError.HarnessError> {
  for (const call of batch) {
    yield* logInTurn(env, state, turn, "tool/call", {
      turn: turn.number,
      step: step.number,
      callId: call.id,
      name: call.name,
      arguments: call.arguments
    })
  }
  if (batch.some((call) => !isAnswer(turn, call))) yield* checkpointCalls(env, state, turn, step)
  yield* batch.length === 1
    ? execute(env, turn, step, batch[0]!)
    : Effect.forEach(batch, (call) => execute(env, turn, step, call), { concurrency: batch.length, discard: true })
  for (const call of batch) {
    yield* logInTurn(env, state, turn, "tool/result", Closing.resultData(turn.number, step.number, call.id, step.results.get(call.id)!))
  }
})

// The typed answer runs nothing outside the loop: there is nothing a crash could leave half done.
const isAnswer = (turn: Turn, call: Content.ToolCallBlock): boolean =>
  turn.output !== undefined && call.name === turn.output.schema.name

/**
 * The flush checkpoint before a batch's calls run (ADR 0033): a process that dies while one
 * runs leaves the message and the calls in the log, and the resume answers them
 * `TOOL_OUTCOME_UNKNOWN` instead of losing the turn. A failed flush is recorded (an `error`
 * event) and the calls run all the same, as after a turn's end.
 */
const checkpointCalls = (env: Env, state: AgentState, turn: Turn, step: Step): Effect.Effect<void, HarnessError.HarnessError> =>
  env.checkpoint.flush(env.session).pipe(
    Effect.catch((error) =>
      logInTurn(env, state, turn, "error", {
        turn: turn.number,
        step: step.number,
        message: `the flush checkpoint before the calls of step ${step.number} ran failed: ${error.message}`,
        code: error.code
      })
    )
  )

// A finished result is kept even when an abort lands right after it: the turn's closing logs it.
const execute = (env: Env, turn: Turn, step: Step, call: Content.ToolCallBlock): Effect.Effect<void> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(restore(resultOf(env, turn, step, call)), (result) => {
      if (turn.closed) return dropLate(env, turn, `the result of tool call ${call.id} (${call.name})`)
      step.results.set(call.id, result)
      return Effect.void
    })
  )
