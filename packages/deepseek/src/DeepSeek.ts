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
 * @since 0.1.0
 */
import { LlmError, type ModelRequest } from "@dsh/llm"
import { type Adapter, layerAdapter, type ModelErrors, type ModelRegistry } from "@dsh/model"
import { NodeHttpClient } from "@effect/platform-node"
import { Config, Duration, Effect, Layer, Option, Redacted, Schedule, Schema, Sink, Stream } from "effect"
import { HttpClient, type HttpClientError, HttpClientRequest, type HttpClientResponse } from "effect/http"
import * as Decoder from "./Decoder.ts"
import { DeepSeekConfigError } from "./DeepSeekError.ts"
import * as Failure from "./Failure.ts"
import * as RequestBody from "./RequestBody.ts"

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
export const defaultSchedule: Schedule.Schedule<unknown, LlmError.LlmError> = Schedule.exponential("500 millis", 2).pipe(
  Schedule.jittered
)

const provider = "DeepSeek"
const keyHint = "Set the DEEPSEEK_API_KEY environment variable, or pass `apiKey: Redacted.make(key)` to DeepSeek.layer."

const configError = (setting: string, message: string) => new DeepSeekConfigError({ setting, message })

const readApiKey: Effect.Effect<Redacted.Redacted<string>, DeepSeekConfigError> = Config.option(
  Config.Redacted("DEEPSEEK_API_KEY")
).pipe(
  Effect.mapError(() => configError("apiKey", `DEEPSEEK_API_KEY could not be read. ${keyHint}`)),
  Effect.flatMap(Option.match({
    onNone: () => Effect.fail(configError("apiKey", `No DeepSeek API key is configured. ${keyHint}`)),
    onSome: Effect.succeed
  }))
)

const readBaseUrl: Effect.Effect<string, DeepSeekConfigError> = Config.option(Config.String("DEEPSEEK_BASE_URL")).pipe(
  Effect.mapError(() => configError("baseUrl", "DEEPSEEK_BASE_URL could not be read")),
  Effect.map(Option.getOrElse(() => defaultBaseUrl))
)

const checkBaseUrl = (raw: string, apiKey: Redacted.Redacted<string>): Effect.Effect<string, DeepSeekConfigError> => {
  const trimmed = raw.trim().replace(/\/+$/, "")
  // a URL may carry credentials: its text is scrubbed of the key before it is quoted
  const quoted = Failure.scrub(JSON.stringify(raw), apiKey)
  let url: URL
  try {
    url = new URL(trimmed)
  } catch {
    return Effect.fail(configError(
      "baseUrl",
      `The DeepSeek base URL ${quoted} is not a URL (set DEEPSEEK_BASE_URL or the baseUrl option, e.g. ${defaultBaseUrl})`
    ))
  }
  return url.protocol === "http:" || url.protocol === "https:"
    ? Effect.succeed(trimmed)
    : Effect.fail(configError("baseUrl", `The DeepSeek base URL ${quoted} is not an http(s) URL`))
}

/**
 * Resolves options against the environment (through the current `ConfigProvider`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const settings = (options: Options = {}): Effect.Effect<Settings, DeepSeekConfigError> =>
  Effect.gen(function*() {
    const apiKey = options.apiKey ?? (yield* readApiKey)
    if (Redacted.value(apiKey).trim() === "") {
      return yield* configError("apiKey", `The DeepSeek API key is empty. ${keyHint}`)
    }
    const baseUrl = yield* checkBaseUrl(options.baseUrl ?? (yield* readBaseUrl), apiKey)
    const models = options.models ?? defaultModels
    if (models.length === 0) return yield* configError("models", "The DeepSeek adapter must serve at least one model name")
    return {
      apiKey,
      baseUrl,
      models,
      thinking: options.thinking,
      reasoningEffort: options.reasoningEffort,
      idleTimeout: Duration.fromInputUnsafe(options.idleTimeout ?? "60 seconds"),
      retry: {
        times: Math.max(0, Math.floor(options.retry?.times ?? 2)),
        schedule: options.retry?.schedule ?? defaultSchedule,
        maxRetryAfter: Duration.fromInputUnsafe(options.retry?.maxRetryAfter ?? "60 seconds")
      }
    }
  })

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

const decodeProviderOptions = Schema.decodeUnknownResult(ProviderOptions)

const overrides = (request: ModelRequest.ModelRequest): Effect.Effect<ProviderOptions, LlmError.LlmInvalidRequestError> => {
  const raw = request.providerOptions?.[name]
  if (raw === undefined) return Effect.succeed({})
  const decoded = decodeProviderOptions(raw, { errors: "all", onExcessProperty: "error" })
  return decoded._tag === "Success" ? Effect.succeed(decoded.success) : Effect.fail(
    new LlmError.LlmInvalidRequestError({
      message: `providerOptions.${name} is invalid (allowed: thinking: boolean, reasoningEffort: "high" | "max"): ${
        decoded.failure.message.replaceAll(/\s*\n\s*/g, " ")
      }`
    })
  )
}

/** The wait a rate-limited response asks for, if any. */
const retryAfter = (error: LlmError.LlmError): number | undefined =>
  error._tag === "LlmRateLimitError" ? error.retryAfterMillis : undefined

/**
 * The adapter itself, for code that registers it by other means than {@link layer}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Adapter, DeepSeekConfigError, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const resolved = yield* settings(options)
    // Scoped requests: every attempt is aborted when the stream's scope closes, including one
    // interrupted after its response headers arrived but before its body was opened (an
    // unscoped response nobody reads is only aborted when it is garbage-collected).
    const client = HttpClient.withScope(yield* HttpClient.HttpClient)
    const endpoint = `${resolved.baseUrl}/chat/completions`
    const idle = resolved.idleTimeout
    const idleText = Duration.format(idle)
    const scrub = (text: string) => Failure.scrub(text, resolved.apiKey)
    const transport = (message: string) => new LlmError.LlmTransportError({ message: scrub(message) })

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

    // One attempt: the response headers and the first read of its body. Everything up to that
    // read may be retried; once a byte arrived the answer has started and is never repeated.
    const open = (request: HttpClientRequest.HttpClientRequest) =>
      Effect.gen(function*() {
        const response = yield* withIdleTimeout(
          Effect.mapError(client.execute(request), (error) => transport(`could not reach ${provider} at ${endpoint}: ${describeHttp(error)}`)),
          "while waiting for the response headers"
        )
        if (response.status < 200 || response.status > 299) {
          const read = Effect.orElseSucceed(response.text, () => "")
          const text = Duration.isFinite(idle)
            ? yield* Effect.map(Effect.timeoutOption(read, idle), Option.getOrElse(() => ""))
            : yield* read
          const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
          return yield* Effect.fail(Failure.fromStatus({
            provider,
            status: response.status,
            headers: response.headers,
            body: text,
            now,
            apiKey: resolved.apiKey,
            authHint: keyHint
          }))
        }
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
      if (!LlmError.isRetryable(error)) return false
      const wait = retryAfter(error)
      return wait === undefined || wait <= maxRetryAfter
    }

    const stream = (request: ModelRequest.ModelRequest) =>
      Stream.unwrap(Effect.gen(function*() {
        const override = yield* overrides(request)
        const thinking = override.thinking ?? resolved.thinking
        const text = RequestBody.encode(request, {
          thinking,
          reasoningEffort: override.reasoningEffort ?? resolved.reasoningEffort
        })
        const http = HttpClientRequest.post(endpoint).pipe(
          HttpClientRequest.bearerToken(resolved.apiKey),
          HttpClientRequest.setHeader("accept", "text/event-stream"),
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

    return { name, models: resolved.models, stream }
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
): Layer.Layer<never, DeepSeekConfigError | ModelErrors.ModelConflictError, ModelRegistry | HttpClient.HttpClient> =>
  layerAdapter(make(options))

/**
 * The adapter's Layer over Node's undici HTTP client (a pooled, keep-alive agent closed with
 * the Layer). Provide `Model.layer` below it:
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
): Layer.Layer<never, DeepSeekConfigError | ModelErrors.ModelConflictError, ModelRegistry> =>
  layerNoDeps(options).pipe(Layer.provide(NodeHttpClient.layerUndici))
