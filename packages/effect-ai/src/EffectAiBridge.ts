/**
 * The bridge: any effect/ai `LanguageModel` — so every provider Effect supports — as a dsh
 * model adapter registered under the model names you give it.
 *
 * Per request, the bridge converts the dsh request into a `Prompt` and a handler-less toolkit
 * (see `PromptConversion`), calls `streamText`, and translates the parts into the chunk
 * protocol (see `PartTranslation`), mapping failures to `LlmError`s (see `ErrorMapping`). A
 * provider stream that dies (a defect) ends in an `LlmProtocolError` carrying the defect's
 * message, never a defect of the dsh stream.
 *
 * **Tools are never executed by effect/ai.** The dsh loop runs tools (through its registry and
 * execution middleware), so the bridge calls `streamText` with
 * `disableToolCallResolution: true`: tool calls come out as parts and nothing looks for a
 * handler. Without it, effect/ai would try to run every call the model makes — with a toolkit
 * that has no handlers that is a defect (a `TypeError` inside `Toolkit.handle`). The bridge
 * also asks for `toolCallValidation: "deferred"`, so a call to a tool that was not offered
 * reaches the loop (whose registry answers it with an `UNKNOWN_TOOL` result the model can act
 * on) instead of failing the whole response with `InvalidOutputError`.
 *
 * **Sampling options.** effect/ai's provider-agnostic options have `toolChoice` (passed
 * through) but no temperature, output limit or stop sequences: those are each provider's own
 * configuration (e.g. a provider's `Config` service). The `configure` option receives every
 * request and the part stream and may provide such configuration; without it,
 * `temperature`, `maxTokens` and `stop` are not applied.
 *
 * @since 0.1.0
 */
import { AdapterSettings, HarnessError, type LlmError, type ModelRequest, type StreamChunk } from "@dsh/llm"
import { type Adapter, layerAdapter, type ModelErrors, type ModelRegistry } from "@dsh/model"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { type AiError, LanguageModel, type Prompt, type Response } from "effect/ai"
import * as ErrorMapping from "./ErrorMapping.ts"
import * as PartTranslation from "./PartTranslation.ts"
import * as PromptConversion from "./PromptConversion.ts"

/**
 * The part stream of one request, as `configure` sees it.
 *
 * @since 0.1.0
 * @category models
 */
export type Parts = Stream.Stream<Response.AnyPart, AiError.AiError>

/**
 * @since 0.1.0
 * @category models
 */
export interface Options extends PromptConversion.Options {
  /** The model names the adapter serves; requests for them are routed to this model. */
  readonly models: ReadonlyArray<string>
  /** The adapter's name, used in errors and traces. Default `"effect-ai"`. */
  readonly name?: string
  /**
   * Adjusts each request's part stream, typically by providing the provider's configuration
   * from the request's `temperature`, `maxTokens`, `stop` or `providerOptions`, e.g.
   * `(request, parts) => parts.pipe(Stream.provideService(ProviderConfig, { temperature: request.temperature }))`.
   * The provider reads its configuration when the stream runs, so what is provided here
   * reaches it.
   */
  readonly configure?: (request: ModelRequest.ModelRequest, parts: Parts) => Parts
}

/**
 * The default adapter name.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultName = "effect-ai"

// The part stream of one request. No toolkit when there are no tools: effect/ai then offers
// none and a tool choice is moot.
const streamParts = (
  languageModel: LanguageModel.LanguageModel,
  request: ModelRequest.ModelRequest,
  prompt: Prompt.Prompt
): Parts => {
  const tools = request.tools ?? []
  return tools.length === 0
    ? languageModel.streamText({ prompt, disableToolCallResolution: true, toolCallValidation: "deferred" })
    : languageModel.streamText({
      prompt,
      toolkit: PromptConversion.toToolkit(tools),
      toolChoice: PromptConversion.toToolChoice(request.toolChoice ?? "auto"),
      disableToolCallResolution: true,
      toolCallValidation: "deferred"
    })
}

// The request's parts with every failure as an `LlmError`. A defect — the provider's stream
// (or `configure`, called inside the suspension so a throw is caught too) dying — is a failure
// of the provider's answer like any other, so it becomes a typed error rather than passing
// through as a crash; interruptions are not defects and pass on untouched.
const providerParts = (
  languageModel: LanguageModel.LanguageModel,
  request: ModelRequest.ModelRequest,
  prompt: Prompt.Prompt,
  options: Options
): Stream.Stream<Response.AnyPart, LlmError.LlmError> =>
  Stream.suspend(() => {
    const raw = streamParts(languageModel, request, prompt)
    return options.configure === undefined ? raw : options.configure(request, raw)
  }).pipe(
    Stream.mapError(ErrorMapping.fromFailure),
    Stream.catchDefect((defect) => Stream.fail(ErrorMapping.fromDefect(defect)))
  )

/**
 * The adapter for an effect/ai model.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (languageModel: LanguageModel.LanguageModel, options: Options): Adapter => ({
  name: options.name ?? defaultName,
  models: options.models,
  stream: (request): Stream.Stream<StreamChunk.StreamChunk, LlmError.LlmError> =>
    Stream.suspend(() => {
      const converted = PromptConversion.toPrompt(request, options)
      if (Result.isFailure(converted)) return Stream.fail(converted.failure)
      return PartTranslation.translate(providerParts(languageModel, request, converted.success, options))
    })
})

/**
 * The bridge's options cannot be used (possible past the types: a config file, JavaScript):
 * `setting` names the one at fault. The Layers fail their build with it.
 *
 * @since 0.1.0
 * @category errors
 */
export class EffectAiConfigError extends Schema.TaggedError<EffectAiConfigError>()("EffectAiConfigError", {
  ...HarnessError.fields("LLM_CONFIG"),
  setting: Schema.String
}) {}

const optionNames = ["models", "name", "configure", "customBlock"]

/** The options, checked: each problem is an `EffectAiConfigError` naming its setting. */
const checked = (options: Options): Effect.Effect<Options, EffectAiConfigError> => {
  const refused = (setting: string, why: string) =>
    Effect.fail(new EffectAiConfigError({ message: `EffectAiBridge: ${why}`, setting }))
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    return refused("options", `the options must be an object { models, name?, configure?, customBlock? }, got ${AdapterSettings.shown(options)}`)
  }
  const unknown = AdapterSettings.unknownKeys("the options object", options, optionNames)
  if (unknown !== undefined) return refused("options", unknown)
  const models: unknown = options.models
  if (!Array.isArray(models) || models.length === 0 || !models.every((model) => typeof model === "string" && model !== "")) {
    return refused("models", `models must be a non-empty list of model names, got ${HarnessError.describe(models)}`)
  }
  if (options.name !== undefined && (typeof options.name !== "string" || options.name === "")) {
    return refused("name", `name must be a non-empty string, got ${HarnessError.describe(options.name)}`)
  }
  for (const setting of ["configure", "customBlock"] as const) {
    if (options[setting] !== undefined && typeof options[setting] !== "function") {
      return refused(setting, `${setting} must be a function, got ${HarnessError.describe(options[setting])}`)
    }
  }
  return Effect.succeed(options)
}

/**
 * The adapter for the `LanguageModel` in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const adapter = (options: Options): Effect.Effect<Adapter, EffectAiConfigError, LanguageModel.LanguageModel> =>
  Effect.gen(function*() {
    const valid = yield* checked(options)
    return make(yield* LanguageModel.LanguageModel, valid)
  })

/**
 * Registers the `LanguageModel` in context as an adapter for `options.models`, for the
 * Layer's lifetime. Provide the effect/ai provider's Layer to it, and it to a `Model` Layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<never, EffectAiConfigError | ModelErrors.ModelConflictError | ModelErrors.AdapterConfigError, ModelRegistry | LanguageModel.LanguageModel> =>
  layerAdapter(adapter(options))

/**
 * Registers a given effect/ai model (or the effect that makes one, like `LanguageModel.make`)
 * as an adapter for `options.models`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = <E = never, R = never>(
  languageModel: LanguageModel.LanguageModel | Effect.Effect<LanguageModel.LanguageModel, E, R>,
  options: Options
): Layer.Layer<never, E | EffectAiConfigError | ModelErrors.ModelConflictError | ModelErrors.AdapterConfigError, ModelRegistry | Exclude<R, Scope.Scope>> =>
  layerAdapter(
    Effect.flatMap(checked(options), (valid) =>
      Effect.map(
        Effect.isEffect(languageModel) ? languageModel : Effect.succeed(languageModel),
        (model) => make(model, valid)
      ))
  )
