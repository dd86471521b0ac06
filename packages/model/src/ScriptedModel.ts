/**
 * A scripted model for tests: each request is answered with the next scripted reply, every
 * request is recorded, and nothing depends on time. A reply is a list of steps: chunks to
 * emit, and optionally a failure, a defect or a hang at any position.
 *
 * @example
 * ```ts
 * import { ModelRequest } from "@dsh/llm"
 * import { Model, ScriptedModel } from "@dsh/model"
 * import { Effect, Layer } from "effect"
 *
 * const TestModel = ScriptedModel.layer({
 *   script: [
 *     ScriptedModel.reply.toolCalls([{ name: "bash", arguments: { command: "ls" } }]),
 *     ScriptedModel.reply.text("done")
 *   ]
 * }).pipe(Layer.provideMerge(Model.layer))
 *
 * const program = Effect.gen(function*() {
 *   const model = yield* Model
 *   const first = yield* model.generate(ModelRequest.make("scripted", []))
 *   const requests = yield* (yield* ScriptedModel.ScriptedModel).requests
 * }).pipe(Effect.provide(TestModel))
 * ```
 *
 * @since 0.1.0
 */
import {
  AdapterSettings,
  Assembler,
  type Content,
  type FinishReason,
  Ids,
  type LlmError,
  type ModelRequest,
  ScopedList,
  type StreamChunk,
  type Usage
} from "@dsh/llm"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { AdapterConfigError, type ModelConflictError, ScriptExhaustedError } from "./ModelError.ts"
import { ModelRegistry } from "./ModelRegistry.ts"

/**
 * One step of a reply.
 *
 * @since 0.1.0
 * @category models
 */
export type Step =
  | { readonly _tag: "Emit"; readonly chunk: StreamChunk.StreamChunk }
  | { readonly _tag: "Fail"; readonly error: LlmError.LlmError }
  | { readonly _tag: "Die"; readonly defect: unknown }
  | { readonly _tag: "Hang" }

/**
 * A scripted reply: fixed steps, or steps computed from the request and its number (from 1).
 *
 * @since 0.1.0
 * @category models
 */
export type Reply =
  | ReadonlyArray<Step>
  | ((request: ModelRequest.ModelRequest, requestNumber: number) => ReadonlyArray<Step>)

/**
 * Options shared by the reply builders.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReplyOptions {
  /** A `usage` chunk before `finish`; none when omitted. */
  readonly usage?: Usage.Usage
  /** The finish reason; `tool-calls` when the reply has tool calls, else `stop`. */
  readonly finish?: FinishReason.FinishReason
  /** How deltas are cut; one delta per block when omitted. */
  readonly fragment?: Assembler.Fragmenter
}

/**
 * A tool call to script. `arguments` may be the raw JSON string (sent as is, even if it is
 * not valid JSON), a value to serialize, or `undefined` for a call without arguments (sent
 * as `""`, as providers send such calls). A value JSON cannot write (a function, a symbol, a
 * bigint, a cycle) is refused when the reply is built, with a `TypeError` naming the call.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScriptedCall {
  readonly name: string
  readonly arguments: string | unknown
  readonly id?: string
}

const emit = (chunk: StreamChunk.StreamChunk): Step => ({ _tag: "Emit", chunk })

// `JSON.stringify` answers `undefined` for what it cannot write, which would script a tool call
// without arguments (and chunks that break the contract): refused where the script is written.
const argumentsText = (call: ScriptedCall, position: number): string => {
  if (typeof call.arguments === "string") return call.arguments
  if (call.arguments === undefined) return ""
  let text: string | undefined
  try {
    text = JSON.stringify(call.arguments)
  } catch (cause) {
    throw new TypeError(`ScriptedModel.reply.toolCalls: the arguments of call ${position} ("${call.name}") are not JSON: ${String(cause)}`, { cause })
  }
  if (text === undefined) {
    throw new TypeError(`ScriptedModel.reply.toolCalls: the arguments of call ${position} ("${call.name}") are a ${typeof call.arguments}, not JSON`)
  }
  return text
}

/**
 * Builders for replies.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reply = {
  /** Emits the given chunks as they are (well-formed or not). */
  chunks: (chunks: ReadonlyArray<StreamChunk.StreamChunk>): ReadonlyArray<Step> => chunks.map(emit),
  /** A well-formed response made of these blocks. */
  blocks: (content: ReadonlyArray<Content.ContentBlock>, options: ReplyOptions = {}): ReadonlyArray<Step> =>
    Assembler.toChunks(content, options).map(emit),
  /** A text answer. */
  text: (text: string, options: ReplyOptions = {}): ReadonlyArray<Step> =>
    reply.blocks([{ type: "text", text }], options),
  /** Reasoning followed by a text answer. */
  reasoningThenText: (reasoning: string, text: string, options: ReplyOptions = {}): ReadonlyArray<Step> =>
    reply.blocks([{ type: "reasoning", text: reasoning }, { type: "text", text }], options),
  /**
   * Tool calls, optionally after some text. Calls without an id get `call_<i>` (their
   * position, from 1).
   */
  toolCalls: (
    calls: ReadonlyArray<ScriptedCall>,
    options: ReplyOptions & { readonly text?: string } = {}
  ): ReadonlyArray<Step> =>
    reply.blocks(
      [
        ...(options.text === undefined ? [] : [{ type: "text" as const, text: options.text }]),
        ...calls.map((call, i): Content.ToolCallBlock => ({
          type: "tool-call",
          id: Ids.callId(call.id ?? `call_${i + 1}`),
          name: call.name,
          arguments: argumentsText(call, i + 1)
        }))
      ],
      options
    ),
  /** Fails the stream with `error` after emitting `before`. */
  fail: (error: LlmError.LlmError, before: ReadonlyArray<Step> = []): ReadonlyArray<Step> => [
    ...before,
    { _tag: "Fail", error }
  ],
  /** Keeps the first `position` steps of `steps`, then fails with `error`. */
  failAt: (steps: ReadonlyArray<Step>, position: number, error: LlmError.LlmError): ReadonlyArray<Step> => [
    ...steps.slice(0, position),
    { _tag: "Fail", error }
  ],
  /** Keeps the first `position` steps of `steps`, then dies with `defect` (a bug in the adapter). */
  dieAt: (steps: ReadonlyArray<Step>, position: number, defect: unknown): ReadonlyArray<Step> => [
    ...steps.slice(0, position),
    { _tag: "Die", defect }
  ],
  /** Keeps the first `position` steps of `steps`, then never emits again (the consumer must interrupt). */
  hangAt: (steps: ReadonlyArray<Step>, position: number): ReadonlyArray<Step> => [
    ...steps.slice(0, position),
    { _tag: "Hang" }
  ]
} as const

/**
 * The handle tests use to inspect and extend the script.
 *
 * @since 0.1.0
 * @category services
 */
export class ScriptedModel extends Context.Service<ScriptedModel, {
  /** Every request received so far, in order. */
  readonly requests: Effect.Effect<ReadonlyArray<ModelRequest.ModelRequest>>
  /** How many scripted replies are left. */
  readonly remaining: Effect.Effect<number>
  /** Appends replies to the script. */
  readonly append: (...replies: ReadonlyArray<Reply>) => Effect.Effect<void>
}>()("@dsh/model/ScriptedModel") {}

/**
 * Options of {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly script: ReadonlyArray<Reply>
  /** The model names served; `["scripted"]` by default. */
  readonly models?: ReadonlyArray<string>
  /** The adapter name; `"scripted"` by default. */
  readonly name?: string
}

const run = (step: Step): Effect.Effect<StreamChunk.StreamChunk, LlmError.LlmError> => {
  switch (step._tag) {
    case "Emit":
      return Effect.succeed(step.chunk)
    case "Fail":
      return Effect.fail(step.error)
    case "Die":
      return Effect.die(step.defect)
    case "Hang":
      return Effect.never
  }
}

const stepTags: ReadonlySet<unknown> = new Set(["Emit", "Fail", "Die", "Hang"])

/** What makes a reply past the types no reply: a value that is no step, or a step of no kind. */
const replyProblem = (reply: unknown, where: string): string | undefined => {
  if (typeof reply === "function") return undefined
  if (!Array.isArray(reply)) return `${where} must be a list of steps or a function giving one, got ${AdapterSettings.shown(reply)}`
  for (let i = 0; i < reply.length; i++) {
    const step: unknown = reply[i]
    const tag = typeof step === "object" && step !== null ? (step as { readonly _tag?: unknown })._tag : undefined
    if (!stepTags.has(tag)) {
      return `${where}, step ${i} must be a step (Emit, Fail, Die or Hang; see ScriptedModel.reply), got ` +
        (tag === undefined ? AdapterSettings.shown(step) : `_tag ${AdapterSettings.shown(tag)}`)
    }
    if (tag === "Emit" && !("chunk" in (step as object))) return `${where}, step ${i} is an Emit with no chunk`
    if (tag === "Fail" && !("error" in (step as object))) return `${where}, step ${i} is a Fail with no error`
  }
  return undefined
}

/** What is wrong with options past their types, named before anything is registered. */
const optionsProblem = (options: unknown): { readonly setting: string; readonly message: string } | undefined => {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    return { setting: "options", message: `its options must be { script, models?, name? }, got ${AdapterSettings.shown(options)}` }
  }
  const unknown = AdapterSettings.unknownKeys("the options object", options, ["script", "models", "name"])
  if (unknown !== undefined) return { setting: "options", message: unknown }
  // `name` and `models` are the registry's to refuse (`ModelRegistry.register`), as any adapter's
  const { script } = options as Partial<Record<keyof Options, unknown>>
  if (!Array.isArray(script)) return { setting: "script", message: `script must be a list of replies, got ${AdapterSettings.shown(script)}` }
  for (let i = 0; i < script.length; i++) {
    const problem = replyProblem(script[i], `script reply ${i}`)
    if (problem !== undefined) return { setting: "script", message: problem }
  }
  return undefined
}

/** The steps of the reply to request `requestNumber`; a computed reply that is no list of steps dies, naming it. */
const stepsOf = (reply: Reply, request: ModelRequest.ModelRequest, requestNumber: number): Stream.Stream<StreamChunk.StreamChunk, LlmError.LlmError> => {
  const steps = typeof reply === "function" ? reply(request, requestNumber) : reply
  const problem = typeof reply === "function" ? replyProblem(steps, `the reply computed for request ${requestNumber}`) : undefined
  return problem === undefined
    ? Stream.fromIterable(steps).pipe(Stream.mapEffect(run))
    : Stream.die(new AdapterConfigError({ message: `the scripted model cannot answer: ${problem}`, setting: "script" }))
}

/**
 * Registers the scripted model as an adapter and provides its {@link ScriptedModel} handle.
 * A request beyond the script dies with `ScriptExhaustedError` (code `SCRIPT_EXHAUSTED`): a
 * test that asks more than it scripted is wrong, not unlucky. Options past their types (no
 * `script` list, a reply that is no list of steps, a step of no kind, an unknown key) fail
 * the Layer with `AdapterConfigError` (`LLM_CONFIG`) naming the setting; replies given to
 * `append` are checked the same way, and a computed reply when it is computed (its stream
 * dies with the error).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<ScriptedModel, ModelConflictError | AdapterConfigError, ModelRegistry> =>
  Layer.effect(
    ScriptedModel,
    Effect.gen(function*() {
      const problem = optionsProblem(options)
      if (problem !== undefined) {
        return yield* new AdapterConfigError({ message: `the scripted model was not made: ${problem.message}`, setting: problem.setting })
      }
      const registry = yield* ModelRegistry
      const script: Array<Reply> = [...options.script]
      const requests: Array<ModelRequest.ModelRequest> = []

      const stream = (request: ModelRequest.ModelRequest) =>
        Stream.unwrap(Effect.sync(() => {
          requests.push(request)
          const requestNumber = requests.length
          const next = script.shift()
          if (next === undefined) {
            return Stream.die(
              new ScriptExhaustedError({
                message: `the scripted model got request ${requestNumber} but was scripted for ${requestNumber - 1}`,
                requestNumber
              })
            )
          }
          return stepsOf(next, request, requestNumber)
        }))

      yield* ScopedList.inOpenScope(
        registry.register({ name: options.name ?? "scripted", models: options.models ?? ["scripted"], stream })
      )

      return ScriptedModel.of({
        requests: Effect.sync(() => requests.slice()),
        remaining: Effect.sync(() => script.length),
        append: (...replies) =>
          Effect.suspend(() => {
            const problem = replies.map((reply, i) => replyProblem(reply, `appended reply ${i}`)).find((p) => p !== undefined)
            // a test that appends no reply has a bug the next request would only hide
            return problem === undefined
              ? Effect.sync(() => void script.push(...replies))
              : Effect.die(new AdapterConfigError({ message: `the scripted model cannot take the replies: ${problem}`, setting: "script" }))
          })
      })
    })
  )
