/**
 * The Anthropic adapter: a Layer that registers an adapter serving Claude models into the
 * `ModelRegistry`, so `Model.stream`/`Model.generate` route requests for those names to
 * Anthropic's Messages API (`POST {baseUrl}/v1/messages`, `stream: true`), streamed over
 * `effect/http` and decoded from SSE.
 *
 * Settings come from the options, else from the environment through Effect's `Config`:
 *
 * | option | environment | default |
 * |---|---|---|
 * | `apiKey` (a `Redacted`) | `ANTHROPIC_API_KEY` | none: building the Layer fails with `AnthropicConfigError` (`LLM_CONFIG`) saying how to set it |
 * | `baseUrl` | `ANTHROPIC_BASE_URL` | `https://api.anthropic.com` |
 * | `models` | | the names of `Models.catalog` |
 * | `info` | | the `Models.catalog` entries of the served models |
 * | `version` | | `2023-06-01` (the `anthropic-version` header) |
 * | `betas` | | none (the `anthropic-beta` header, comma-separated) |
 * | `maxTokens` | | the model's output limit, at most 32,000 (32,000 for a model without info) |
 * | `thinking` (`"adaptive"` \| `"disabled"` \| `{ budgetTokens }`) | | not sent (the model's default) |
 * | `effort` | | not sent (`output_config.effort`) |
 * | `promptCache` (`"5m"` \| `"1h"` \| `"off"`) | | `"5m"`: cache breakpoints on the stable prefix (see `RequestBody`) |
 * | `idleTimeout` | | 60 seconds |
 * | `retry.times` / `retry.schedule` / `retry.maxRetryAfter` | | 2 / exponential from 500 ms, jittered / 60 seconds |
 *
 * A request may override `thinking`, `effort` and `promptCache` with
 * `providerOptions: { anthropic: { … } }`; anything else there is refused with
 * `LlmInvalidRequestError` before a byte is sent. `request.maxTokens` wins over `maxTokens`.
 *
 * Failures are `LlmError`s with stable codes (see `Failure` for the table: `overloaded_error`
 * and 529 are `LlmServerError`, 429 is `LlmRateLimitError` with `retry-after`). Retries happen
 * only before the first byte of a response body arrived — connection failures, 408, 429
 * (waiting at least what `retry-after` says, and not at all when it says more than
 * `maxRetryAfter`), 5xx and 529, a stall before the body started — so a partly streamed answer
 * is never silently repeated; the API's `x-should-retry` header, when present, overrides the
 * status's verdict. The idle timeout bounds the wait for the response headers and every gap
 * between two reads of the body (the API's `ping` events count: they prove it is alive).
 * Interrupting the stream, or stopping it early, aborts the request and closes the connection.
 * The API key is held as `Redacted`; it is written only into the `x-api-key` header (which
 * Effect's `Headers` redact), and no error carries the HTTP client's error (which holds the
 * request) as a cause.
 *
 * @since 0.1.0
 */
import { AdapterSettings, LlmError, ModelInfo, type ModelRequest } from "@dsh/llm"
import { type Adapter, layerAdapter, type ModelErrors, type ModelRegistry } from "@dsh/model"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import { HttpClient, type HttpClientError, HttpClientRequest, type HttpClientResponse } from "effect/http"
import { AnthropicConfigError } from "./AnthropicError.ts"
import * as Decoder from "./Decoder.ts"
import * as Failure from "./Failure.ts"
import * as Models from "./Models.ts"
import * as RequestBody from "./RequestBody.ts"
import type * as Wire from "./Wire.ts"

/**
 * Extended thinking: adaptive (the model decides how much; the newer models' mode), off, or on
 * with a token budget (older models; the budget must be below `max_tokens`).
 *
 * @since 0.1.0
 * @category models
 */
export type Thinking = "adaptive" | "disabled" | { readonly budgetTokens: number }

/**
 * How long cache breakpoints keep a prefix: five minutes, an hour, or no breakpoints at all.
 *
 * @since 0.1.0
 * @category models
 */
export type PromptCache = "5m" | "1h" | "off"

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
   * The longest `retry-after` the adapter waits out (default 60 seconds). A 429 asking for
   * more fails at once with `LlmRateLimitError`, whose `retryAfterMillis` says how long.
   */
  readonly maxRetryAfter?: Duration.Input
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The API key; `ANTHROPIC_API_KEY` when omitted. */
  readonly apiKey?: Redacted.Redacted<string>
  /** The API's base URL (without `/v1`); `ANTHROPIC_BASE_URL`, else `https://api.anthropic.com`. */
  readonly baseUrl?: string
  /** The model names the adapter serves (and sends as `model`). */
  readonly models?: ReadonlyArray<string>
  /** What is known about the models (context window, prices); replaces the catalog's entry of the same name. */
  readonly info?: ReadonlyArray<ModelInfo.ModelInfo>
  /** The `anthropic-version` header (default `2023-06-01`). */
  readonly version?: string
  /** Beta features to turn on (the `anthropic-beta` header). */
  readonly betas?: ReadonlyArray<string>
  /** `max_tokens` when a request does not set it. */
  readonly maxTokens?: number
  /** Extended thinking; the model's default when omitted. */
  readonly thinking?: Thinking
  /** How hard the model works (`output_config.effort`, e.g. `"low"`, `"medium"`, `"high"`); the model's default when omitted. */
  readonly effort?: string
  /** Prompt-cache breakpoints (default `"5m"`). */
  readonly promptCache?: PromptCache
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
  /** The entries of the served models that have one. */
  readonly info: ReadonlyArray<ModelInfo.ModelInfo>
  readonly version: string
  readonly betas: ReadonlyArray<string>
  readonly maxTokens: number | undefined
  readonly thinking: Thinking | undefined
  readonly effort: string | undefined
  readonly promptCache: PromptCache
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
export const name = "anthropic"

/**
 * @since 0.1.0
 * @category constants
 */
export const defaultBaseUrl = "https://api.anthropic.com"

/**
 * The `anthropic-version` the adapter speaks.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultVersion = "2023-06-01"

/**
 * The largest default `max_tokens`: a model may write more, but a request reserving its whole
 * output limit counts against output rate limits it will rarely use.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMaxTokens = 32_000

/**
 * The default retry delays: 500 ms, then 1 s, 2 s, …, each jittered.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultSchedule: Schedule.Schedule<unknown, LlmError.LlmError> = Schedule.exponential("500 millis", 2).pipe(
  Schedule.jittered
)

const provider = "Anthropic"
const keyHint = "Set the ANTHROPIC_API_KEY environment variable, or pass `apiKey: Redacted.make(key)` to Anthropic.layer."

const configError = (setting: string, message: string) => new AnthropicConfigError({ setting, message })

// Options may come from a config file, past the types (`AdapterSettings`).
const checked = <A>(setting: string, result: Result.Result<A, string>): Effect.Effect<A, AnthropicConfigError> =>
  Result.isSuccess(result) ? Effect.succeed(result.success) : Effect.fail(configError(setting, result.failure))

const readApiKey: Effect.Effect<Redacted.Redacted<string>, AnthropicConfigError> = Config.option(
  Config.Redacted("ANTHROPIC_API_KEY")
).pipe(
  Effect.mapError(() => configError("apiKey", `ANTHROPIC_API_KEY could not be read. ${keyHint}`)),
  Effect.flatMap(Option.match({
    onNone: () => Effect.fail(configError("apiKey", `No Anthropic API key is configured. ${keyHint}`)),
    onSome: Effect.succeed
  }))
)

const readBaseUrl: Effect.Effect<string, AnthropicConfigError> = Config.option(Config.String("ANTHROPIC_BASE_URL")).pipe(
  Effect.mapError(() => configError("baseUrl", "ANTHROPIC_BASE_URL could not be read")),
  Effect.map(Option.getOrElse(() => defaultBaseUrl))
)

// The key option as given: a `Redacted` holding a string (a plain string, from a config file or
// untyped code, is refused rather than sent). What it holds is never quoted.
const checkKeyType = (key: unknown): Effect.Effect<Redacted.Redacted<string>, AnthropicConfigError> =>
  Redacted.isRedacted(key) && typeof Redacted.value(key) === "string"
    ? Effect.succeed(key as Redacted.Redacted<string>)
    : Effect.fail(configError(
      "apiKey",
      `The Anthropic API key must be a Redacted<string> (\`apiKey: Redacted.make(key)\`), got ${
        Redacted.isRedacted(key) ? "a Redacted holding no string" : key === null ? "null" : `a ${typeof key}`
      }. ${keyHint}`
    ))

// The key goes into the x-api-key header: one holding a line break (read from a file with its
// newline) would make every request die in Node's client.
const checkKeyText = (key: Redacted.Redacted<string>): Effect.Effect<Redacted.Redacted<string>, AnthropicConfigError> => {
  const text = Redacted.value(key)
  if (text.trim() === "") return Effect.fail(configError("apiKey", `The Anthropic API key is empty. ${keyHint}`))
  return AdapterSettings.isHeaderValue(text) ? Effect.succeed(key) : Effect.fail(configError(
    "apiKey",
    `The Anthropic API key holds a character an HTTP header cannot carry (a line break, a control character or a character beyond Latin-1: was it read with its trailing newline?). ${keyHint}`
  ))
}

// Requests go to `<baseUrl>/v1/messages`: a `?` or `#` in the base URL would swallow the path.
const hasQueryOrFragment = (url: string): boolean => url.includes("?") || url.includes("#")

const checkBaseUrl = (raw: string, apiKey: Redacted.Redacted<string>): Effect.Effect<string, AnthropicConfigError> => {
  // options may come from a config file, past the types
  if (typeof raw !== "string") {
    return Effect.fail(configError(
      "baseUrl",
      `The Anthropic base URL must be a string, got ${AdapterSettings.shown(raw)} (set ANTHROPIC_BASE_URL or the baseUrl option, e.g. ${defaultBaseUrl})`
    ))
  }
  const trimmed = raw.trim().replace(/\/+$/, "")
  // a URL may carry credentials: its user and password, query and the key are left out of its quote
  const quoted = Failure.scrub(JSON.stringify(AdapterSettings.shownUrl(raw)), apiKey)
  let url: URL
  try {
    url = new URL(trimmed)
  } catch {
    return Effect.fail(configError(
      "baseUrl",
      `The Anthropic base URL ${quoted} is not a URL (set ANTHROPIC_BASE_URL or the baseUrl option, e.g. ${defaultBaseUrl})`
    ))
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return Effect.fail(configError("baseUrl", `The Anthropic base URL ${quoted} is not an http(s) URL`))
  }
  return hasQueryOrFragment(trimmed)
    ? Effect.fail(configError(
      "baseUrl",
      `The Anthropic base URL ${quoted} has a query or a fragment, which the request path (/v1/messages) cannot follow (e.g. ${defaultBaseUrl})`
    ))
    : Effect.succeed(trimmed)
}

const isPositiveInt = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n) && n > 0

const checkThinking = (
  thinking: Thinking | undefined,
  maxTokens: number | undefined
): Effect.Effect<Thinking | undefined, AnthropicConfigError> => {
  // options may come from a config file, past the types
  const given: unknown = thinking
  if (given === undefined || given === "adaptive" || given === "disabled") return Effect.succeed(thinking)
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    return Effect.fail(configError("thinking", `thinking must be "adaptive", "disabled" or { budgetTokens }, got ${AdapterSettings.shown(given)}`))
  }
  const budget: unknown = (given as { readonly budgetTokens?: unknown }).budgetTokens
  if (!isPositiveInt(budget)) {
    return Effect.fail(configError("thinking", `thinking.budgetTokens must be a positive whole number, got ${AdapterSettings.shown(budget)}`))
  }
  // the API refuses a budget that is not below max_tokens
  return maxTokens !== undefined && budget >= maxTokens
    ? Effect.fail(configError("thinking", `thinking.budgetTokens (${budget}) must be below maxTokens (${maxTokens})`))
    : Effect.succeed(thinking)
}

const checkModels = (models: unknown): Effect.Effect<ReadonlyArray<string>, AnthropicConfigError> => {
  if (!Array.isArray(models)) return Effect.fail(configError("models", `models must be an array of model names, got ${AdapterSettings.shown(models)}`))
  if (models.length === 0) return Effect.fail(configError("models", "The Anthropic adapter must serve at least one model name"))
  const wrong = models.find((model) => typeof model !== "string" || model.trim() === "")
  return wrong === undefined
    ? Effect.succeed(models as ReadonlyArray<string>)
    : Effect.fail(configError("models", `A model name must be a non-empty string, got ${AdapterSettings.shown(wrong)}`))
}

const decodeInfo = Schema.decodeUnknownEffect(Schema.Array(ModelInfo.ModelInfo))

const checkInfo = (info: unknown): Effect.Effect<ReadonlyArray<ModelInfo.ModelInfo>, AnthropicConfigError> =>
  info === undefined ? Effect.succeed([]) : decodeInfo(info, { errors: "all" }).pipe(
    Effect.mapError((error) => configError("info", `A model entry is invalid: ${error.message.replaceAll(/\s*\n\s*/g, " ")}`))
  )

// A header's text: the version, each beta.
const checkHeaderText = (setting: string, what: string, value: unknown): Effect.Effect<string, AnthropicConfigError> =>
  typeof value === "string" && value.trim() !== "" && AdapterSettings.isHeaderValue(value)
    ? Effect.succeed(value)
    : Effect.fail(configError(
      setting,
      typeof value === "string" && value.trim() !== ""
        ? `${what} holds a character an HTTP header cannot carry (a line break, a control character or a character beyond Latin-1)`
        : `${what} must be a non-empty string, got ${AdapterSettings.shown(value)}`
    ))

const checkBetas = (betas: unknown): Effect.Effect<ReadonlyArray<string>, AnthropicConfigError> => {
  if (betas === undefined) return Effect.succeed([])
  if (!Array.isArray(betas)) return Effect.fail(configError("betas", `betas must be an array of beta names, got ${AdapterSettings.shown(betas)}`))
  return Effect.forEach(betas, (beta: unknown) => checkHeaderText("betas", "A beta name", beta))
}

const checkEffort = (effort: unknown): Effect.Effect<string | undefined, AnthropicConfigError> =>
  effort === undefined || (typeof effort === "string" && effort.trim() !== "")
    ? Effect.succeed(effort)
    : Effect.fail(configError("effort", `effort must be the name of an effort ("low", "medium", "high", …), got ${AdapterSettings.shown(effort)}`))

const checkPromptCache = (cache: unknown): Effect.Effect<PromptCache, AnthropicConfigError> =>
  cache === undefined ? Effect.succeed("5m") : cache === "5m" || cache === "1h" || cache === "off"
    ? Effect.succeed(cache)
    : Effect.fail(configError("promptCache", `promptCache must be "5m", "1h" or "off", got ${AdapterSettings.shown(cache)}`))

const optionNames = [
  "apiKey", "baseUrl", "models", "info", "version", "betas", "maxTokens", "thinking", "effort", "promptCache", "idleTimeout", "retry"
]

const retryNames = ["times", "schedule", "maxRetryAfter"]

/**
 * Resolves options against the environment (through the current `ConfigProvider`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const settings = (options: Options = {}): Effect.Effect<Settings, AnthropicConfigError> =>
  Effect.gen(function*() {
    // options may come from a config file, past the types: \`null\` is not "no options"
    if (typeof options !== "object" || options === null || Array.isArray(options)) {
      return yield* configError("options", `The options must be an object, got ${AdapterSettings.shown(options)}`)
    }
    // a misspelt `maxToken` would otherwise be dropped, its default kept
    const unknown = AdapterSettings.unknownKeys("The options of Anthropic.layer", options, optionNames)
      ?? (typeof options.retry === "object" && options.retry !== null ? AdapterSettings.unknownKeys("The retry option", options.retry, retryNames) : undefined)
    if (unknown !== undefined) return yield* configError("options", unknown)
    const apiKey = yield* checkKeyText(options.apiKey === undefined ? yield* readApiKey : yield* checkKeyType(options.apiKey))
    const baseUrl = yield* checkBaseUrl(options.baseUrl ?? (yield* readBaseUrl), apiKey)
    const models = yield* checkModels(options.models ?? Models.names)
    if (options.maxTokens !== undefined && !isPositiveInt(options.maxTokens)) {
      return yield* configError("maxTokens", `maxTokens must be a positive whole number, got ${AdapterSettings.shown(options.maxTokens)}`)
    }
    const given = new Map((yield* checkInfo(options.info)).map((entry) => [entry.name, entry]))
    const info = models.flatMap((model) => {
      const entry = given.get(model) ?? Models.find(model)
      return entry === undefined ? [] : [entry]
    })
    return {
      apiKey,
      baseUrl,
      models,
      info,
      version: yield* checkHeaderText("version", "The anthropic-version", options.version ?? defaultVersion),
      betas: yield* checkBetas(options.betas),
      maxTokens: options.maxTokens,
      thinking: yield* checkThinking(options.thinking, options.maxTokens),
      effort: yield* checkEffort(options.effort),
      promptCache: yield* checkPromptCache(options.promptCache),
      idleTimeout: yield* checked("idleTimeout", AdapterSettings.duration("idleTimeout", options.idleTimeout ?? "60 seconds", "positive")),
      retry: {
        times: yield* checked("retry", AdapterSettings.retryCount("retry.times", options.retry?.times ?? 2)),
        schedule: yield* checked("retry", AdapterSettings.schedule("retry.schedule", options.retry?.schedule, defaultSchedule)),
        maxRetryAfter: yield* checked(
          "retry",
          AdapterSettings.duration("retry.maxRetryAfter", options.retry?.maxRetryAfter ?? "60 seconds", "non-negative")
        )
      }
    }
  })

/**
 * The per-request settings a request may carry in `providerOptions.anthropic`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ProviderOptions = Schema.Struct({
  thinking: Schema.optionalKey(Schema.Union([
    Schema.Literals(["adaptive", "disabled"]),
    Schema.Struct({ budgetTokens: Schema.Int.check(Schema.isGreaterThan(0)) })
  ])),
  effort: Schema.optionalKey(Schema.String),
  promptCache: Schema.optionalKey(Schema.Literals(["5m", "1h", "off"]))
})

/**
 * @since 0.1.0
 * @category models
 */
export type ProviderOptions = typeof ProviderOptions.Type

const decodeProviderOptions = Schema.decodeUnknownResult(ProviderOptions)

const overrides = (request: ModelRequest.ModelRequest): Effect.Effect<ProviderOptions, LlmError.LlmInvalidRequestError> => {
  const raw = request.providerOptions?.[name]
  if (raw === undefined) return Effect.succeed({})
  const decoded = decodeProviderOptions(raw, { errors: "all", onExcessProperty: "error" })
  return decoded._tag === "Success" ? Effect.succeed(decoded.success) : Effect.fail(
    new LlmError.LlmInvalidRequestError({
      message:
        `providerOptions.${name} is invalid (allowed: thinking: "adaptive" | "disabled" | { budgetTokens }, effort: string, promptCache: "5m" | "1h" | "off"): ${
          Failure.excerpt(decoded.failure.message.replaceAll(/\s*\n\s*/g, " "), 500)
        }`
    })
  )
}

/**
 * The `thinking` field a setting stands for.
 *
 * @since 0.1.0
 * @category serialization
 */
export const wireThinking = (thinking: Thinking): Wire.Thinking =>
  typeof thinking === "object" ? { type: "enabled", budget_tokens: thinking.budgetTokens } : { type: thinking }

/** The wait a rate-limited response asks for, if any. */
const retryAfter = (error: LlmError.LlmError): number | undefined =>
  error._tag === "LlmRateLimitError" ? error.retryAfterMillis : undefined

/**
 * The adapter itself, for code that registers it by other means than {@link layer}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Adapter, AnthropicConfigError, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const resolved = yield* settings(options)
    // Scoped requests: every attempt is aborted when the stream's scope closes, including one
    // interrupted after its response headers arrived but before its body was opened (an
    // unscoped response nobody reads is only aborted when it is garbage-collected).
    const client = HttpClient.withScope(yield* HttpClient.HttpClient)
    const endpoint = `${resolved.baseUrl}/v1/messages`
    const idle = resolved.idleTimeout
    const idleText = Duration.format(idle)
    const scrub = (text: string) => Failure.scrub(text, resolved.apiKey)
    const transport = (message: string) => new LlmError.LlmTransportError({ message: scrub(message) })
    const outputLimit = new Map(resolved.info.map((entry) => [entry.name, entry.maxOutputTokens]))
    // what the API's `x-should-retry` header said about a failed attempt
    const retryHints = new WeakMap<LlmError.LlmError, boolean>()

    const describeHttp = (error: HttpClientError.HttpClientError) =>
      Failure.describe("cause" in error.reason && error.reason.cause !== undefined ? error.reason.cause : error.reason)

    const withIdleTimeout = <A, E, R>(
      effect: Effect.Effect<A, E, R>,
      what: string
    ): Effect.Effect<A, E | LlmError.LlmTransportError, R> =>
      Duration.isFinite(idle)
        ? Effect.timeoutOrElse(effect, {
          duration: idle,
          orElse: () => Effect.fail(transport(`idle timeout: ${provider} sent nothing for ${idleText} ${what}`))
        })
        : effect

    const body = (response: HttpClientResponse.HttpClientResponse): Stream.Stream<Uint8Array, LlmError.LlmTransportError> => {
      const bytes = response.stream.pipe(
        Stream.mapError((error) => transport(`the connection to ${provider} failed while the answer was streaming: ${describeHttp(error)}`))
      )
      return Duration.isFinite(idle)
        ? Stream.timeoutOrElse(bytes, {
          duration: idle,
          orElse: () => Stream.fail(transport(`idle timeout: ${provider} sent nothing for ${idleText} while streaming`))
        })
        : bytes
    }

    const failed = (response: HttpClientResponse.HttpClientResponse) =>
      Effect.gen(function*() {
        const text = yield* AdapterSettings.readErrorBody(response.stream, idle)
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        const error = Failure.fromStatus({
          provider,
          status: response.status,
          headers: response.headers,
          body: text,
          now,
          apiKey: resolved.apiKey,
          authHint: keyHint
        })
        const hint = response.headers["x-should-retry"]?.trim().toLowerCase()
        if (hint === "true" || hint === "false") retryHints.set(error, hint === "true")
        return yield* Effect.fail(error)
      })

    // One attempt: the response headers and the first read of its body. Everything up to that
    // read may be retried; once a byte arrived the answer has started and is never repeated.
    const open = (request: HttpClientRequest.HttpClientRequest) =>
      Effect.gen(function*() {
        const response = yield* withIdleTimeout(
          // no tracing headers (b3, traceparent): the provider has no use for this process's trace ids
          Effect.mapError(Effect.provideService(client.execute(request), HttpClient.TracerPropagationEnabled, false), (error) => transport(`could not reach ${provider} at ${AdapterSettings.shownUrl(endpoint)}: ${describeHttp(error)}`)),
          "while waiting for the response headers"
        )
        if (response.status < 200 || response.status > 299) return yield* failed(response)
        const [first, rest] = yield* Stream.peel(body(response), Sink.head<Uint8Array>())
        return Option.match(first, {
          onNone: () => Stream.empty,
          onSome: (bytes) => Stream.concat(Stream.succeed(bytes), rest)
        })
      })

    const schedule = resolved.retry.schedule.pipe(
      Schedule.modifyDelay(({ duration, input }) => {
        const wait = retryAfter(input)
        return Effect.succeed(wait !== undefined && wait > Duration.toMillis(duration) ? Duration.millis(wait) : duration)
      })
    )
    const maxRetryAfter = Duration.toMillis(resolved.retry.maxRetryAfter)
    const retryable = (error: LlmError.LlmError) => {
      const hint = retryHints.get(error)
      if (hint === false || (hint === undefined && !LlmError.isRetryable(error))) return false
      const wait = retryAfter(error)
      return wait === undefined || wait <= maxRetryAfter
    }

    const headers: Record<string, string> = {
      "x-api-key": Redacted.value(resolved.apiKey),
      "anthropic-version": resolved.version,
      accept: "text/event-stream"
    }
    if (resolved.betas.length > 0) headers["anthropic-beta"] = resolved.betas.join(",")

    const bodySettings = (request: ModelRequest.ModelRequest, override: ProviderOptions): RequestBody.Settings => {
      const thinking = override.thinking ?? resolved.thinking
      const limit = outputLimit.get(request.model)
      return {
        maxTokens: resolved.maxTokens ?? Math.min(defaultMaxTokens, limit ?? defaultMaxTokens),
        thinking: thinking === undefined ? undefined : wireThinking(thinking),
        effort: override.effort ?? resolved.effort,
        cache: override.promptCache ?? resolved.promptCache
      }
    }

    const stream = (request: ModelRequest.ModelRequest) =>
      Stream.unwrap(Effect.gen(function*() {
        const override = yield* overrides(request)
        const text = RequestBody.encode(request, bodySettings(request, override))
        const http = HttpClientRequest.post(endpoint).pipe(
          HttpClientRequest.setHeaders(headers),
          HttpClientRequest.bodyText(text, "application/json")
        )
        const bytes = resolved.retry.times === 0
          ? yield* open(http)
          : yield* Effect.retry(open(http), { schedule, times: resolved.retry.times, while: retryable })
        return Decoder.decode(bytes, { provider })
      })).pipe(
        // The decoder quotes what the server sent; a server (or a proxy) may echo the key.
        Stream.mapError((error) => Failure.scrubError(error, resolved.apiKey))
      )

    return { name, models: resolved.models, info: resolved.info, stream }
  })

/**
 * The adapter's Layer without an HTTP client: it requires `HttpClient` (any implementation:
 * `FetchHttpClient.layer`, a client with middleware, a test double).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNoDeps = (
  options: Options = {}
): Layer.Layer<never, AnthropicConfigError | ModelErrors.ModelConflictError | ModelErrors.AdapterConfigError, ModelRegistry | HttpClient.HttpClient> =>
  layerAdapter(make(options))

/**
 * The adapter's Layer over Node's own `http`/`https` client (keep-alive agents, closed with
 * the Layer: a connection is reused after a response read to its end, such as an error's body
 * before a retry; a stream's connection is closed at its terminal event). Provide `Model.layer` below it:
 *
 * @example
 * ```ts
 * import { Anthropic } from "@dsh/anthropic"
 * import { Model } from "@dsh/model"
 * import { Layer } from "effect"
 *
 * const ModelLive = Anthropic.layer({ thinking: "adaptive" }).pipe(Layer.provideMerge(Model.layer))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options = {}
): Layer.Layer<never, AnthropicConfigError | ModelErrors.ModelConflictError | ModelErrors.AdapterConfigError, ModelRegistry> =>
  // keep-alive: a connection whose response was read to its end (an error's body, before a
  // retry) is reused; a model stream's is closed at its terminal event, which ends the answer
  // without waiting for the server to end the body
  layerNoDeps(options).pipe(Layer.provide(NodeHttpClient.layerNodeHttpOptions({ keepAlive: true })))
