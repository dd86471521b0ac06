/**
 * One step: one model request and its tool executions. The step assembles the system prompt,
 * derives the request from the log (request middleware), logs what was asked, streams the
 * model (every chunk logged as it arrives), turns the finish into a failure when the model did
 * not answer, runs the step-result middleware, gives the calls distinct ids, logs the message
 * and the usage, then dispatches the tools. A failure fails the step; the turn records it and
 * closes the step from the log.
 *
 * @internal
 */
import type { Hooks } from "@dsh/agent"
import { Assembler, type FinishReason, type HarnessError, Message, type ModelRequest, type StreamChunk } from "@dsh/llm"
import { SessionEvent } from "@dsh/session"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { uniqueCallIds } from "./calls.ts"
import { reported } from "./compaction.ts"
import { dropLate, listening, logInTurn } from "./events.ts"
import { describeCause, modelCode, seamOutput, throughSeam, typedError } from "./failure.ts"
import type { AgentState, Env, Step, Turn } from "./state.ts"
import { dispatchTools } from "./tools.ts"

/** What a step that ran to its end produced. */
export interface StepResult {
  readonly message: Message.Message
  readonly hadToolCalls: boolean
  /** The answer stopped at the output token limit (finish `length`): it may be cut off. */
  readonly cutShort: boolean
}

/**
 * The model did not answer: a finish of kind `error` or `aborted`, or no finish at all. `code`
 * is a catalog code; `reportedCode` keeps a provider's own code; `error` is the typed error the
 * finish stands for (what `agent.run` fails with).
 */
export class StepFailure extends Data.TaggedError("StepFailure")<{
  readonly code: HarnessError.HarnessError["code"]
  readonly message: string
  readonly reportedCode?: string
  readonly error: HarnessError.HarnessError
}> {}

/** The step's failure for a finish that is not an answer, with the typed error of its code. */
const finishFailure = (code: HarnessError.HarnessError["code"], message: string, reportedCode?: string): StepFailure =>
  new StepFailure({
    code,
    message,
    ...(reportedCode === undefined ? {} : { reportedCode }),
    error: typedError(code, message)
  })

/** Runs a step to its end, in its span. */
export const runStep = (
  env: Env,
  state: AgentState,
  turn: Turn,
  step: Step
): Effect.Effect<StepResult, HarnessError.HarnessError | StepFailure> =>
  stepWork(env, state, turn, step).pipe(
    // one exit hook for both: an interruption (an abort) is ABORTED, whatever else failed with it
    Effect.onError((cause) =>
      Effect.annotateCurrentSpan("dsh.error_code", Cause.hasInterrupts(cause) ? "ABORTED" : describeCause(cause).code)
    ),
    // the call site would always be this line: not worth an Error per step
    Effect.withSpan("Agent.step", { attributes: { "dsh.step": step.number } }, { captureStackTrace: false }),
    // every span inside the step (model call, prompt assembly, tool calls) says whose it is
    Effect.annotateSpans({ "dsh.session": env.session.id, "dsh.agent": env.agentId, "dsh.turn": turn.number, "dsh.step": step.number })
  )

// A generator made once: V8 makes a generator closure created per call cost ~2 µs at its first run.
const stepWork = Effect.fnUntraced(function*(
  env: Env,
  state: AgentState,
  turn: Turn,
  step: Step
): Effect.fn.Return<StepResult, HarnessError.HarnessError | StepFailure> {
  const context: Hooks.StepContext = {
    agentId: env.agentId,
    sessionId: env.session.id,
    turn: turn.number,
    step: step.number
  }
  const request = yield* buildRequest(env, turn, context)
  yield* logRequest(env, state, turn, step, request)
  const assembled = yield* streamAnswer(env, state, turn, step, request)
  const finishReason = yield* answered(env, assembled)
  const result = yield* throughSeam(
    "step-result",
    env.hooks.stepResult,
    { message: assembled.message, finishReason, usage: assembled.usage, context },
    (input) => input.message,
    "an assistant message",
    // the assembler's own message needs no check: only a middleware's replacement does
    (value) => value === assembled.message || isAssistantMessage(value)
  )
  const { calls, message, rewrites } = uniqueCallIds(result)
  yield* logInTurn(env, state, turn, "assistant/message", {
    turn: turn.number,
    step: step.number,
    content: message.content,
    finishReason,
    ...(rewrites === undefined ? {} : { rewrittenCallIds: rewrites })
  }, () => (step.calls = calls))
  const usage = assembled.usage
  if (usage !== undefined) {
    // what the provider counted is the size of the next request, but for what is appended after it
    yield* logInTurn(env, state, turn, "usage", { turn: turn.number, step: step.number, usage }, (event) =>
      reported(state, event.seq, usage))
  }
  yield* dispatchTools(env, state, turn, step, calls)
  return { message, hadToolCalls: calls.length > 0, cutShort: finishReason.kind === "length" }
})

// The shapes the loop reads of what the seams give back (the rest is checked where it is logged).
// The step result is logged as the turn's message, so its blocks are checked too: a made-up
// block type would otherwise enter the log and every later request.
const isAssistantMessage = (value: unknown): boolean =>
  Predicate.isObject(value) && value["role"] === "assistant" && isMessage(value)
const isMessage = Schema.is(Message.Message)
const isAssembly = (value: unknown): boolean =>
  Predicate.isObject(value) && typeof value["system"] === "string" && Array.isArray(value["tools"])
const isRequest = (value: unknown): boolean =>
  Predicate.isObject(value) && typeof value["model"] === "string" && Predicate.isObject(value["messages"])

/** The request: the assembled prompt and the history derived from the log, through the request middleware. */
const buildRequest = Effect.fnUntraced(function*(
  env: Env,
  turn: Turn,
  context: Hooks.StepContext
): Effect.fn.Return<ModelRequest.ModelRequest, HarnessError.HarnessError> {
  const { options } = env
  const registered = yield* env.registry.schemas()
  // a turn that owes a typed answer offers the answer tool, in place of a tool of its name
  const tools = turn.output === undefined
    ? registered
    : [...registered.filter((tool) => tool.name !== turn.output!.schema.name), turn.output.schema]
  const assembly = yield* env.prompt.assemble({
    ...(options.prompt === undefined ? {} : { agentPrompt: options.prompt }),
    tools,
    context
  }).pipe(Effect.flatMap(seamOutput("prompt assembly", { current: env.prompt.middleware }, "an assembly", isAssembly)))
  const base: ModelRequest.ModelRequest = {
    model: options.model,
    messages: yield* env.session.messages,
    ...(assembly.system === "" ? {} : { system: assembly.system }),
    ...(assembly.tools.length === 0 ? {} : { tools: assembly.tools }),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
    ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
    ...(options.providerOptions === undefined ? {} : { providerOptions: options.providerOptions })
  }
  return yield* throughSeam("request", env.hooks.request, { request: base, context }, (input) => input.request, "a model request", isRequest)
})

/**
 * Logs what was asked besides the messages the log already determines: the settings only
 * when they changed since the session's previous request, so a replay can check prompt and
 * tools cheaply.
 */
const logRequest = (
  env: Env,
  state: AgentState,
  turn: Turn,
  step: Step,
  request: ModelRequest.ModelRequest
): Effect.Effect<void, HarnessError.HarnessError> => {
  const settings = SessionEvent.settingsOf(request)
  const base = { turn: turn.number, step: step.number, model: request.model }
  // most steps ask with the settings of the last: proven by reference, without serializing them
  if (sameAsLogged(settings, state.loggedSettings)) return logInTurn(env, state, turn, "model/request", base)
  const encoded = JSON.stringify(settings)
  if (encoded === state.lastSettings) return logInTurn(env, state, turn, "model/request", base)
  return logInTurn(env, state, turn, "model/request", { ...base, settings }, (event) => {
    state.lastSettings = encoded
    state.loggedSettings = event.data.settings
  })
}

/**
 * Whether settings hold the values of the last logged ones, key for key in the same order,
 * by reference (an array's elements each by reference). The logged settings are deep-frozen,
 * so what holds the same references serializes to the same JSON; anything else is compared
 * as JSON by the caller.
 */
const sameAsLogged = (settings: SessionEvent.RequestSettings, logged: SessionEvent.RequestSettings | undefined): boolean => {
  if (logged === undefined) return false
  const keys = Object.keys(settings)
  const loggedKeys = Object.keys(logged)
  if (keys.length !== loggedKeys.length) return false
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!
    if (key !== loggedKeys[k]) return false
    const value: unknown = settings[key as keyof typeof settings]
    const was: unknown = logged[key as keyof typeof logged]
    if (value === was) continue
    if (!Array.isArray(value) || !Array.isArray(was) || value.length !== was.length) return false
    for (let i = 0; i < value.length; i++) if (value[i] !== was[i]) return false
  }
  return true
}

/**
 * Streams the model, logging each chunk before the assembler takes it. With listeners to run,
 * chunk by chunk (each chunk's listeners before the next is logged); with none, each batch the
 * stream delivers is logged in one synchronous burst (the same events, one Effect per batch
 * instead of several per chunk: the chunks are most of a step's events).
 */
const streamAnswer = (
  env: Env,
  state: AgentState,
  turn: Turn,
  step: Step,
  request: ModelRequest.ModelRequest
) =>
  Effect.suspend(() => {
    const assembler = Assembler.make()
    const open = () => !turn.closed
    const logOne = (chunk: StreamChunk.StreamChunk) =>
      Effect.andThen(
        logInTurn(env, state, turn, "assistant/chunk", { turn: turn.number, step: step.number, chunk }),
        Effect.sync(() => void assembler.push(chunk))
      )
    // the chunks of a batch from the first the closed turn refused: each is dropped (and pushed)
    const logBurst = (chunks: ReadonlyArray<StreamChunk.StreamChunk>) =>
      Effect.flatMap(
        env.session.appendBurst((appendIf) => {
          for (let i = 0; i < chunks.length; i++) {
            const chunk = chunks[i]!
            if (appendIf(open, "assistant/chunk", { turn: turn.number, step: step.number, chunk }) === undefined) return i
            assembler.push(chunk)
          }
          return chunks.length
        }),
        (logged) => (logged === chunks.length ? Effect.void : Effect.forEach(chunks.slice(logged), (chunk) =>
          Effect.andThen(dropLate(env, turn, "assistant/chunk"), Effect.sync(() => void assembler.push(chunk))), { discard: true }))
      )
    return env.model.runStream(
      request,
      (chunks) => (listening(env, state) ? Effect.forEach(chunks, logOne, { discard: true }) : logBurst(chunks))
    ).pipe(Effect.andThen(Effect.sync(() => assembler.done())))
  })

/** The finish of an answer the model gave, or the step's failure when it gave none. */
const answered = (env: Env, assembled: Assembler.Assembled): Effect.Effect<FinishReason.FinishReason, StepFailure> => {
  const finishReason = assembled.finishReason
  if (finishReason === undefined) {
    return finishFailure("LLM_PROTOCOL", `the response of model "${env.options.model}" ended without a finish chunk`)
  }
  if (finishReason.kind === "error") {
    const { code, reportedCode } = modelCode(finishReason.code)
    const named = reportedCode === undefined ? "" : ` (${reportedCode})`
    return finishFailure(code, `the model reported an error${named}: ${finishReason.message}`, reportedCode)
  }
  if (finishReason.kind === "aborted") {
    const why = finishReason.reason === undefined ? "" : `: ${finishReason.reason}`
    return finishFailure("ABORTED", `the model aborted its response${why}`)
  }
  return Effect.succeed(finishReason)
}
