/**
 * The DeepSeek adapter: a Layer that registers an adapter serving DeepSeek's models into the
 * `ModelRegistry`, so `Model.stream`/`Model.generate` route requests for those names to
 * DeepSeek's chat completions API, streamed over `effect/http` and decoded from SSE.
 *
 * Settings come from the options, else from the environment through Effect's `Config`:
 *
 * | option | environment | default |
 * |---|---|---|
 * | `apiKey` (a `Redacted`) | `DEEPSEEK_API_KEY` | none: building the Layer fails with `DeepSeekConfigError` (`LLM_CONFIG`) saying how to set it |
 * | `baseUrl` | `DEEPSEEK_BASE_URL` | `https://api.deepseek.com` |
 * | `models` | | `deepseek-v4-flash`, `deepseek-v4-pro` |
 * | `thinking` | | not sent (the model's default) |
 * | `reasoningEffort` (`high` \| `max`) | | not sent |
 * | `idleTimeout` | | 60 seconds |
 * | `retry.times` / `retry.schedule` / `retry.maxRetryAfter` | | 2 / exponential from 500 ms, jittered / 60 seconds |
 *
 * A request may override `thinking` and `reasoningEffort` with
 * `providerOptions: { deepseek: { thinking: true, reasoningEffort: "max" } }`; anything else
 * there is refused with `LlmInvalidRequestError` before a byte is sent.
 *
 * Failures are `LlmError`s with stable codes (see `Failure` for the status table). Retries
 * happen only before the first byte of a response body arrived — connection failures, 408,
 * 429 (waiting at least what `Retry-After` says, and not at all when it says more than
 * `maxRetryAfter`), 5xx, a stall before the body started — so a partly streamed answer is never
 * silently repeated. The idle timeout bounds the wait for the response headers and every gap
 * between two reads of the body (`: keep-alive` comments count as data: they prove the server
 * is alive). Interrupting the stream, or stopping it early, aborts the request and closes the
 * connection. The API key is held as `Redacted`; it is written only into the `Authorization`
 * header, and no error carries the HTTP client's error (which holds the request) as a cause.
 *
 * It is `@dsh/openai`'s OpenAI-compatible adapter with the `deepseek` profile
 * (`Profiles.deepseek`: reasoning passed back as `reasoning_content`, cache hits from
 * `prompt_cache_hit_tokens`, the `thinking` switch, efforts `high` and `max`, a strict end of
 * stream, the models' context windows and prices), its configuration errors reported as
 * `DeepSeekConfigError`.
 *
 * @since 0.1.0
 */
import { AdapterSettings, type LlmError } from "@dsh/llm"
import type { Adapter, ModelErrors, ModelRegistry } from "@dsh/model"
import { layerAdapter } from "@dsh/model"
import { OpenAiCompat, type OpenAiError, type Profile, Profiles } from "@dsh/openai"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import type * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type { HttpClient } from "effect/http"
import { DeepSeekConfigError } from "./DeepSeekError.ts"

/**
 * How much reasoning a thinking model does.
 *
 * @since 0.1.0
 * @category models
 */
export type ReasoningEffort = "high" | "max"

/**
 * When and how often a failed request is sent again (only ever before its response body
 * started).
 *
 * @since 0.1.0
 * @category models
 */
export interface RetryOptions {
  /** How many times a request is retried (default 2: three attempts at most). 0 turns retries off. */
  readonly times?: number
  /** The delays between attempts (default: exponential from 500 ms, doubling, jittered). */
  readonly schedule?: Schedule.Schedule<unknown, LlmError.LlmError>
  /**
   * The longest `Retry-After` the adapter waits out (default 60 seconds). A 429 asking for
   * more fails at once with `LlmRateLimitError`, whose `retryAfterMillis` says how long.
   */
  readonly maxRetryAfter?: Duration.Input
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The API key; `DEEPSEEK_API_KEY` when omitted. */
  readonly apiKey?: Redacted.Redacted<string>
  /** The API's base URL; `DEEPSEEK_BASE_URL`, else `https://api.deepseek.com`. */
  readonly baseUrl?: string
  /** The model names the adapter serves (and sends as `model`). */
  readonly models?: ReadonlyArray<string>
  /** Thinking mode on or off; the model's default when omitted. */
  readonly thinking?: boolean
  /** The reasoning effort of thinking mode; the model's default when omitted. */
  readonly reasoningEffort?: ReasoningEffort
  /** The longest wait for response headers or between two reads of the body (default 60 seconds). */
  readonly idleTimeout?: Duration.Input
  readonly retry?: RetryOptions
}

/**
 * The settings an adapter runs with, after options and environment were resolved.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  readonly apiKey: Redacted.Redacted<string>
  /** Without a trailing slash. */
  readonly baseUrl: string
  readonly models: ReadonlyArray<string>
  readonly thinking: boolean | undefined
  readonly reasoningEffort: ReasoningEffort | undefined
  readonly idleTimeout: Duration.Duration
  readonly retry: {
    readonly times: number
    readonly schedule: Schedule.Schedule<unknown, LlmError.LlmError>
    readonly maxRetryAfter: Duration.Duration
  }
}

/**
 * The adapter's name in the registry and the key of its `providerOptions`.
 *
 * @since 0.1.0
 * @category constants
 */
export const name = "deepseek"

/**
 * @since 0.1.0
 * @category constants
 */
export const defaultBaseUrl = "https://api.deepseek.com"

/**
 * @since 0.1.0
 * @category constants
 */
export const defaultModels: ReadonlyArray<string> = ["deepseek-v4-flash", "deepseek-v4-pro"]

/**
 * The default retry delays: 500 ms, then 1 s, 2 s, …, each jittered.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultSchedule: Schedule.Schedule<unknown, LlmError.LlmError> = OpenAiCompat.defaultSchedule

/**
 * The profile the adapter runs with: `@dsh/openai`'s `deepseek` profile, whose default
 * models are {@link defaultModels}.
 *
 * @since 0.1.0
 * @category constants
 */
export const profile: Profile.Profile = Profiles.deepseek

// The same options for the OpenAI-compatible adapter; the model names given are served with
// the profile's entries (context window, prices) where it has them.
const compatOptions = (options: Options): OpenAiCompat.Options => {
  // options that are no object (past the types) go on as they are, for the compat settings to
  // refuse naming them
  if (typeof options !== "object" || options === null || Array.isArray(options)) return options
  const { models, ...rest } = options
  return {
    ...rest,
    profile,
    ...(models === undefined ? { models: defaultModels } : { models })
  }
}

const asDeepSeekError = (error: OpenAiError.OpenAiConfigError) =>
  new DeepSeekConfigError({ setting: error.setting, message: error.message })

// the compat layer's `profile` is DeepSeek's own, set above
const context: OpenAiCompat.Context = {
  layer: "DeepSeek.layer",
  optionNames: ["apiKey", "baseUrl", "models", "thinking", "reasoningEffort", "idleTimeout", "retry", "profile"]
}

// the user's own: a `profile` given here would be dropped for DeepSeek's without a word
const userOptionNames = context.optionNames!.filter((name) => name !== "profile")

const resolved = (options: Options): Effect.Effect<OpenAiCompat.Settings, DeepSeekConfigError> => {
  const unknown = typeof options === "object" && options !== null && !Array.isArray(options)
    ? AdapterSettings.unknownKeys(`The options of ${context.layer}`, options, userOptionNames)
    : undefined
  return unknown === undefined
    ? OpenAiCompat.settings(compatOptions(options), context).pipe(Effect.mapError(asDeepSeekError))
    : Effect.fail(new DeepSeekConfigError({ setting: "options", message: unknown }))
}

/**
 * Resolves options against the environment (through the current `ConfigProvider`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const settings = (options: Options = {}): Effect.Effect<Settings, DeepSeekConfigError> =>
  Effect.map(resolved(options), (s) => ({
    // the deepseek profile needs a key: a resolved one is always there
    apiKey: s.apiKey!,
    baseUrl: s.baseUrl,
    models: s.models,
    thinking: s.thinking,
    reasoningEffort: s.reasoningEffort as ReasoningEffort | undefined,
    idleTimeout: s.idleTimeout,
    retry: s.retry
  }))

/**
 * The per-request settings a request may carry in `providerOptions.deepseek`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ProviderOptions = Schema.Struct({
  thinking: Schema.optionalKey(Schema.Boolean),
  reasoningEffort: Schema.optionalKey(Schema.Literals(["high", "max"]))
})

/**
 * @since 0.1.0
 * @category models
 */
export type ProviderOptions = typeof ProviderOptions.Type

/**
 * The adapter itself, for code that registers it by other means than {@link layer}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Adapter, DeepSeekConfigError, HttpClient.HttpClient> =>
  Effect.flatMap(resolved(options), OpenAiCompat.fromSettings)

/**
 * The adapter's Layer without an HTTP client: it requires `HttpClient` (any implementation:
 * `FetchHttpClient.layer`, a client with middleware, a test double).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNoDeps = (
  options: Options = {}
): Layer.Layer<never, DeepSeekConfigError | ModelErrors.ModelConflictError | ModelErrors.AdapterConfigError, ModelRegistry | HttpClient.HttpClient> =>
  layerAdapter(make(options))

/**
 * The adapter's Layer over Node's own `http`/`https` client (keep-alive agents, closed with
 * the Layer: a connection is reused after a response read to its end, such as an error's body
 * before a retry; a stream's connection is closed at its terminal event). Provide `Model.layer` below it:
 *
 * @example
 * ```ts
 * import { DeepSeek } from "@dsh/deepseek"
 * import { Model } from "@dsh/model"
 * import { Layer } from "effect"
 *
 * const ModelLive = DeepSeek.layer({ thinking: true }).pipe(Layer.provideMerge(Model.layer))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options = {}
): Layer.Layer<never, DeepSeekConfigError | ModelErrors.ModelConflictError | ModelErrors.AdapterConfigError, ModelRegistry> =>
  // keep-alive: a connection whose response was read to its end (an error's body, before a
  // retry) is reused; a model stream's is closed at its terminal event, which ends the answer
  // without waiting for the server to end the body
  layerNoDeps(options).pipe(Layer.provide(NodeHttpClient.layerNodeHttpOptions({ keepAlive: true })))
