/**
 * The OpenAI-compatible adapter: one Layer for any server that speaks OpenAI's chat
 * completions — OpenAI itself, DeepSeek, local servers (Ollama, vLLM, llama.cpp, LM Studio),
 * OpenRouter and other gateways — given a base URL, a key and a model. It registers an adapter
 * serving the models into the `ModelRegistry` (with their context windows and prices, so
 * `registry.info(model)` knows them), streams over `effect/http` and decodes SSE.
 *
 * What differs between servers is a {@link Profile.Profile}: plain data naming the base URL,
 * the environment variable holding the key, extra headers, the models and their prices, and the
 * quirks of the wire. Pass a shipped profile's name (`Profiles`) or a profile of your own:
 *
 * @example
 * ```ts
 * import { OpenAiCompat } from "@dsh/openai"
 * import { Model } from "@dsh/model"
 * import { Layer } from "effect"
 *
 * // OpenAI, the key from OPENAI_API_KEY
 * const OpenAi = OpenAiCompat.layer({ model: "gpt-5.4-mini" })
 * // a local Ollama, no key
 * const Local = OpenAiCompat.layer({ profile: "ollama", model: { name: "qwen3:8b", contextWindow: 40_960 } })
 * // a server nobody shipped a profile for
 * const Other = OpenAiCompat.layer({
 *   profile: { name: "together", baseUrl: "https://api.together.xyz/v1", apiKeyEnv: "TOGETHER_API_KEY" },
 *   model: "moonshotai/Kimi-K2-Instruct"
 * })
 * const ModelLive = Local.pipe(Layer.provideMerge(Model.layer))
 * ```
 *
 * Settings come from the options, else from the environment through Effect's `Config` (the
 * profile's `apiKeyEnv` and `baseUrlEnv`), else from the profile:
 *
 * | option | default |
 * |---|---|
 * | `profile` | `"openai"` |
 * | `apiKey` (a `Redacted`) | the profile's `apiKeyEnv`; without one, a server that needs a key fails the Layer with `OpenAiConfigError` (`LLM_CONFIG`) saying how to set it, and one that does not gets no `Authorization` header |
 * | `baseUrl` | the profile's `baseUrlEnv`, else its `baseUrl` |
 * | `model` / `models` | the profile's `defaultModels` (names, or entries with a context window and prices) |
 * | `headers` | the profile's, these on top (checked: a name or value HTTP cannot carry fails the Layer) |
 * | `thinking`, `reasoningEffort` | not sent; sent where the profile's quirks say (refused at build time when its server has no such setting) |
 * | `idleTimeout` | 60 seconds |
 * | `retry.times` / `retry.schedule` / `retry.maxRetryAfter` | 2 / exponential from 500 ms, jittered / 60 seconds |
 *
 * A request may override `thinking` and `reasoningEffort` with
 * `providerOptions: { <profile name>: { thinking, reasoningEffort } }`; anything else there is
 * refused with `LlmInvalidRequestError` before a byte is sent.
 *
 * Failures are `LlmError`s with stable codes (see `Failure`). Retries happen only before the
 * first byte of a response body arrived — connection failures, 408, 429 (waiting at least what
 * `Retry-After` says, and not at all when it says more than `maxRetryAfter`), 5xx, a stall
 * before the body started — so a partly streamed answer is never silently repeated. The idle
 * timeout bounds the wait for the response headers and every gap between two reads of the body
 * (keep-alive comments count as data: they prove the server is alive). Interrupting the
 * stream, or stopping it early, aborts the request and closes the connection. The key is held as
 * `Redacted`, written only into the `Authorization` header, and no error carries the HTTP
 * client's error (which holds the request) as a cause; every message is scrubbed of it.
 *
 * @since 0.1.0
 */
import { AdapterSettings, LlmError, type ModelInfo, type ModelRequest } from "@dsh/llm"
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
import * as Decoder from "./Decoder.ts"
import * as Failure from "./Failure.ts"
import { OpenAiConfigError } from "./OpenAiError.ts"
import * as Profile from "./Profile.ts"
import * as Profiles from "./Profiles.ts"
import * as RequestBody from "./RequestBody.ts"

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
  /** The server: a shipped profile's name (`Profiles.names`) or a profile (default `"openai"`). */
  readonly profile?: Profiles.Name | (string & {}) | Profile.Profile
  /** The API key; the profile's `apiKeyEnv` when omitted. */
  readonly apiKey?: Redacted.Redacted<string>
  /** The API's base URL; the profile's `baseUrlEnv`, else its `baseUrl`. */
  readonly baseUrl?: string
  /** The one model to serve (a name, or an entry with its context window and prices). */
  readonly model?: string | Profile.Model
  /** The models to serve (and send as `model`); the profile's `defaultModels` when neither is given. */
  readonly models?: ReadonlyArray<string | Profile.Model>
  /**
   * Headers sent with every request, on top of the profile's. Names must be HTTP tokens and
   * values strings a header can carry (no line break); anything else fails the build.
   */
  readonly headers?: Readonly<Record<string, string>>
  /** Thinking on or off; the model's default when omitted. */
  readonly thinking?: boolean
  /** The reasoning effort (one the profile allows); the model's default when omitted. */
  readonly reasoningEffort?: string
  /** The longest wait for response headers or between two reads of the body (default 60 seconds). */
  readonly idleTimeout?: Duration.Input
  readonly retry?: RetryOptions
}

/**
 * How the messages of configuration errors name the Layer being built (`"OpenAiCompat.layer"`
 * unless an adapter built on this one says otherwise, as `DeepSeek.layer` does).
 *
 * @since 0.1.0
 * @category models
 */
export interface Context {
  readonly layer?: string
  /** The option names the Layer takes, when it takes fewer than {@link Options} (an adapter built on this one). */
  readonly optionNames?: ReadonlyArray<string>
}

const optionNames = ["profile", "apiKey", "baseUrl", "model", "models", "headers", "thinking", "reasoningEffort", "idleTimeout", "retry"]

const retryNames = ["times", "schedule", "maxRetryAfter"]

/**
 * The settings an adapter runs with, after options, environment and profile were resolved.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  readonly profile: Profile.Resolved
  /** `undefined` for a server that takes no key and was given none. */
  readonly apiKey: Redacted.Redacted<string> | undefined
  /** Without a trailing slash. */
  readonly baseUrl: string
  /** Where requests go: the base URL and the profile's path. */
  readonly endpoint: string
  readonly headers: Readonly<Record<string, string>>
  readonly models: ReadonlyArray<string>
  /** What is known about the models served (those with an entry). */
  readonly info: ReadonlyArray<ModelInfo.ModelInfo>
  readonly thinking: boolean | undefined
  readonly reasoningEffort: string | undefined
  readonly idleTimeout: Duration.Duration
  readonly retry: {
    readonly times: number
    readonly schedule: Schedule.Schedule<unknown, LlmError.LlmError>
    readonly maxRetryAfter: Duration.Duration
  }
  /** Appended to the message of an authentication failure: where the key comes from. */
  readonly keyHint: string
}

/**
 * The default retry delays: 500 ms, then 1 s, 2 s, …, each jittered.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultSchedule: Schedule.Schedule<unknown, LlmError.LlmError> = Schedule.exponential("500 millis", 2).pipe(
  Schedule.jittered
)

const configError = (setting: string, message: string) => new OpenAiConfigError({ setting, message })

// Options may come from a config file, past the types (`AdapterSettings`).
const checked = <A>(setting: string, result: Result.Result<A, string>): Effect.Effect<A, OpenAiConfigError> =>
  Result.isSuccess(result) ? Effect.succeed(result.success) : Effect.fail(configError(setting, result.failure))

const oneLine = (text: string) => text.replaceAll(/\s*\n\s*/g, " ")

const decodeProfile = Schema.decodeUnknownEffect(Profile.Profile)
const decodeModel = Schema.decodeUnknownEffect(Profile.Model)

const resolveProfile = (profile: Options["profile"]): Effect.Effect<Profile.Resolved, OpenAiConfigError> => {
  if (profile === undefined) return Effect.succeed(Profile.resolve(Profiles.openai))
  if (typeof profile === "string") {
    const shipped = Profiles.get(profile)
    return shipped === undefined
      ? Effect.fail(configError(
        "profile",
        `There is no shipped profile named ${JSON.stringify(profile)} (shipped: ${Profiles.names.join(", ")}); ` +
          "pass a profile of your own as data instead"
      ))
      : Effect.succeed(Profile.resolve(shipped))
  }
  // a profile may have come from a config file through a cast: it is checked like one
  return decodeProfile(profile, { errors: "all" }).pipe(
    Effect.mapBoth({
      onFailure: (error) => configError("profile", `The profile is invalid: ${oneLine(error.message)}`),
      onSuccess: Profile.resolve
    })
  )
}

const keyHintOf = (profile: Profile.Resolved, layer: string) =>
  profile.apiKeyEnv === undefined
    ? `Pass \`apiKey: Redacted.make(key)\` to ${layer}.`
    : `Set the ${profile.apiKeyEnv} environment variable, or pass \`apiKey: Redacted.make(key)\` to ${layer}.`

const readEnv = <A>(name: string | undefined, config: (name: string) => Config.Config<A>, setting: string) =>
  name === undefined ? Effect.succeed(Option.none<A>()) : Config.option(config(name)).pipe(
    Effect.mapError(() => configError(setting, `${name} could not be read`))
  )

// Extra headers (the options' or a profile's), checked as the request will need them: a name
// or a value Node refuses would otherwise make every request die rather than fail.
const checkHeaders = (
  headers: unknown,
  setting: string,
  where: string
): Effect.Effect<Readonly<Record<string, string>>, OpenAiConfigError> => {
  if (headers === undefined) return Effect.succeed({})
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) {
    return Effect.fail(configError(setting, `${where} must be an object of header names and string values, got ${AdapterSettings.shown(headers)}`))
  }
  for (const [name, value] of Object.entries(headers)) {
    if (!AdapterSettings.isHeaderName(name)) {
      return Effect.fail(configError(setting, `${where} holds a header name that is no HTTP token: ${JSON.stringify(name)}`))
    }
    if (typeof value !== "string") {
      return Effect.fail(configError(setting, `${where} gives the header ${name} ${AdapterSettings.shown(value)}, not a string`))
    }
    if (!AdapterSettings.isHeaderValue(value)) {
      return Effect.fail(configError(
        setting,
        `${where} gives the header ${name} a value an HTTP header cannot carry (a line break, a control character or a character beyond Latin-1)`
      ))
    }
  }
  return Effect.succeed(headers as Readonly<Record<string, string>>)
}

// The key option as given: a `Redacted` holding a string (a plain string, from a config file or
// untyped code, is refused rather than sent). What it holds is never quoted.
const checkKeyType = (key: unknown, profile: Profile.Resolved, hint: string): Effect.Effect<void, OpenAiConfigError> =>
  Redacted.isRedacted(key) && typeof Redacted.value(key) === "string" ? Effect.void : Effect.fail(configError(
    "apiKey",
    `The ${profile.displayName} API key must be a Redacted<string> (\`apiKey: Redacted.make(key)\`), got ${
      Redacted.isRedacted(key) ? "a Redacted holding no string" : key === null ? "null" : `a ${typeof key}`
    }. ${hint}`
  ))

// A key goes into a header: one holding a line break (read from a file with its newline) would
// make every request die in Node's client rather than fail.
const checkKeyText = (
  key: Redacted.Redacted<string>,
  profile: Profile.Resolved,
  hint: string
): Effect.Effect<Redacted.Redacted<string>, OpenAiConfigError> =>
  AdapterSettings.isHeaderValue(Redacted.value(key)) ? Effect.succeed(key) : Effect.fail(configError(
    "apiKey",
    `The ${profile.displayName} API key holds a character an HTTP header cannot carry (a line break, a control character or a character beyond Latin-1: was it read with its trailing newline?). ${hint}`
  ))

const resolveKey = (
  options: Options,
  profile: Profile.Resolved,
  hint: string
): Effect.Effect<Redacted.Redacted<string> | undefined, OpenAiConfigError> =>
  Effect.gen(function*() {
    if (options.apiKey !== undefined) yield* checkKeyType(options.apiKey, profile, hint)
    const fromEnv = options.apiKey === undefined ? yield* readEnv(profile.apiKeyEnv, Config.Redacted, "apiKey") : Option.none()
    const key = options.apiKey ?? Option.getOrUndefined(fromEnv)
    const empty = key !== undefined && Redacted.value(key).trim() === ""
    if (key === undefined || (empty && options.apiKey === undefined && !profile.apiKeyRequired)) {
      // an empty variable of a server that takes no key says nothing
      if (!profile.apiKeyRequired) return undefined
      return yield* configError("apiKey", `No ${profile.displayName} API key is configured. ${hint}`)
    }
    if (empty) return yield* configError("apiKey", `The ${profile.displayName} API key is empty. ${hint}`)
    return yield* checkKeyText(key, profile, hint)
  })

const checkBaseUrl = (
  raw: string,
  profile: Profile.Resolved,
  apiKey: Redacted.Redacted<string> | undefined
): Effect.Effect<string, OpenAiConfigError> => {
  const where = profile.baseUrlEnv === undefined ? "the baseUrl option" : `${profile.baseUrlEnv} or the baseUrl option`
  // options may come from a config file, past the types
  if (typeof raw !== "string") {
    return Effect.fail(configError("baseUrl", `The ${profile.displayName} base URL must be a string, got ${AdapterSettings.shown(raw)} (set ${where}, e.g. ${profile.baseUrl})`))
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
      `The ${profile.displayName} base URL ${quoted} is not a URL (set ${where}, e.g. ${profile.baseUrl})`
    ))
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return Effect.fail(configError("baseUrl", `The ${profile.displayName} base URL ${quoted} is not an http(s) URL (set ${where}, e.g. ${profile.baseUrl})`))
  }
  return hasQueryOrFragment(trimmed)
    ? Effect.fail(configError(
      "baseUrl",
      `The ${profile.displayName} base URL ${quoted} has a query or a fragment, which the request path (${profile.path}) cannot follow (set ${where}, e.g. ${profile.baseUrl})`
    ))
    : Effect.succeed(trimmed)
}

// Requests go to `<baseUrl><path>`: a `?` or `#` in the base URL would swallow the path.
const hasQueryOrFragment = (url: string): boolean => url.includes("?") || url.includes("#")

const resolveModels = (
  options: Options,
  profile: Profile.Resolved
): Effect.Effect<{ readonly models: ReadonlyArray<string>; readonly info: ReadonlyArray<ModelInfo.ModelInfo> }, OpenAiConfigError> =>
  Effect.gen(function*() {
    const given = options.models ?? (options.model === undefined ? undefined : [options.model])
    if (given !== undefined && !Array.isArray(given)) {
      return yield* configError("models", `models must be an array of model names or entries, got ${AdapterSettings.shown(given)} (one model is \`model\`)`)
    }
    const names: Array<string> = []
    const entries = new Map<string, Profile.Model>()
    for (const model of profile.models) entries.set(model.name, model)
    for (const item of given ?? profile.defaultModels) {
      if (typeof item === "string") {
        names.push(item)
        continue
      }
      const entry = yield* decodeModel(item, { errors: "all" }).pipe(
        Effect.mapError((error) => configError("models", `A model entry is invalid: ${oneLine(error.message)}`))
      )
      names.push(entry.name)
      entries.set(entry.name, entry)
    }
    if (names.some((name) => name.trim() === "")) return yield* configError("models", "A model name is empty")
    if (names.length === 0) {
      return yield* configError(
        "models",
        `The ${profile.displayName} adapter must serve at least one model name` +
          (profile.models.length === 0 ? ` (the ${profile.name} profile lists none: name the model the server serves, e.g. \`model: "…"\`)` : "")
      )
    }
    const unique = [...new Set(names)]
    const info = unique.flatMap((name) => {
      const entry = entries.get(name)
      return entry === undefined ? [] : [Profile.info(profile.name, entry)]
    })
    return { models: unique, info }
  })

const checkReasoning = (options: Options, profile: Profile.Resolved): Effect.Effect<void, OpenAiConfigError> => {
  const { quirks } = profile
  // options may come from a config file, past the types
  if (options.thinking !== undefined && typeof options.thinking !== "boolean") {
    return Effect.fail(configError("thinking", `thinking must be true or false, got ${AdapterSettings.shown(options.thinking)}`))
  }
  const given: unknown = options.reasoningEffort
  if (given !== undefined && (typeof given !== "string" || given.trim() === "")) {
    return Effect.fail(configError("reasoningEffort", `reasoningEffort must be the name of an effort, got ${AdapterSettings.shown(given)}`))
  }
  if (options.thinking !== undefined && quirks.thinking === "none") {
    return Effect.fail(configError(
      "thinking",
      `The ${profile.name} profile has no thinking switch (its quirks.thinking is "none"); leave thinking out, or give the profile one`
    ))
  }
  const effort = options.reasoningEffort
  if (effort === undefined) return Effect.void
  if (quirks.reasoningEffort === "none") {
    return Effect.fail(configError(
      "reasoningEffort",
      `The ${profile.name} profile sends no reasoning effort (its quirks.reasoningEffort is "none"); leave reasoningEffort out, or give the profile one`
    ))
  }
  const allowed = quirks.reasoningEfforts
  return allowed === undefined || allowed.includes(effort) ? Effect.void : Effect.fail(configError(
    "reasoningEffort",
    `${profile.displayName} takes no reasoning effort ${JSON.stringify(effort)} (allowed: ${allowed.map((e) => JSON.stringify(e)).join(", ")})`
  ))
}

/**
 * Resolves options against the environment (through the current `ConfigProvider`) and the
 * profile.
 *
 * @since 0.1.0
 * @category constructors
 */
export const settings = (options: Options = {}, context: Context = {}): Effect.Effect<Settings, OpenAiConfigError> =>
  Effect.gen(function*() {
    // options may come from a config file, past the types: \`null\` is not "no options"
    if (typeof options !== "object" || options === null || Array.isArray(options)) {
      return yield* configError("options", `The options must be an object, got ${AdapterSettings.shown(options)}`)
    }
    // a misspelt `baseURL` would otherwise be dropped, and the requests sent to the profile's server
    const unknown = AdapterSettings.unknownKeys(`The options of ${context.layer ?? "OpenAiCompat.layer"}`, options, context.optionNames ?? optionNames)
      ?? (typeof options.retry === "object" && options.retry !== null ? AdapterSettings.unknownKeys("The retry option", options.retry, retryNames) : undefined)
    if (unknown !== undefined) return yield* configError("options", unknown)
    const profile = yield* resolveProfile(options.profile)
    const keyHint = keyHintOf(profile, context.layer ?? "OpenAiCompat.layer")
    const apiKey = yield* resolveKey(options, profile, keyHint)
    const fromEnv = options.baseUrl === undefined ? yield* readEnv(profile.baseUrlEnv, Config.String, "baseUrl") : Option.none()
    const baseUrl = yield* checkBaseUrl(options.baseUrl ?? Option.getOrElse(fromEnv, () => profile.baseUrl), profile, apiKey)
    const { info, models } = yield* resolveModels(options, profile)
    yield* checkReasoning(options, profile)
    const profileHeaders = yield* checkHeaders(profile.headers, "profile", `The ${profile.name} profile's headers`)
    const optionHeaders = yield* checkHeaders(options.headers, "headers", "The headers option")
    return {
      profile,
      apiKey,
      baseUrl,
      endpoint: `${baseUrl}${profile.path}`,
      headers: { ...profileHeaders, ...optionHeaders },
      models,
      info,
      thinking: options.thinking,
      reasoningEffort: options.reasoningEffort,
      idleTimeout: yield* checked("idleTimeout", AdapterSettings.duration("idleTimeout", options.idleTimeout ?? "60 seconds", "positive")),
      retry: {
        times: yield* checked("retry", AdapterSettings.retryCount("retry.times", options.retry?.times ?? 2)),
        schedule: yield* checked("retry", AdapterSettings.schedule("retry.schedule", options.retry?.schedule, defaultSchedule)),
        maxRetryAfter: yield* checked(
          "retry",
          AdapterSettings.duration("retry.maxRetryAfter", options.retry?.maxRetryAfter ?? "60 seconds", "non-negative")
        )
      },
      keyHint
    }
  })

/**
 * The per-request settings a request may carry in `providerOptions[<profile name>]`, as the
 * profile allows them.
 *
 * @since 0.1.0
 * @category schemas
 */
export const providerOptionsSchema = (profile: Profile.Resolved) => {
  const efforts = profile.quirks.reasoningEfforts
  const fields: Record<string, Schema.optionalKey<Schema.Codec<unknown>>> = {}
  if (profile.quirks.thinking !== "none") fields["thinking"] = Schema.optionalKey(Schema.Boolean)
  if (profile.quirks.reasoningEffort !== "none") {
    fields["reasoningEffort"] = Schema.optionalKey(efforts === undefined ? Schema.String : Schema.Literals(efforts))
  }
  return Schema.Struct(fields)
}

interface Overrides {
  readonly thinking?: boolean
  readonly reasoningEffort?: string
}

const allowedText = (profile: Profile.Resolved): string => {
  const parts: Array<string> = []
  if (profile.quirks.thinking !== "none") parts.push("thinking: boolean")
  if (profile.quirks.reasoningEffort !== "none") {
    const efforts = profile.quirks.reasoningEfforts
    parts.push(`reasoningEffort: ${efforts === undefined ? "string" : efforts.map((e) => JSON.stringify(e)).join(" | ")}`)
  }
  return parts.length === 0 ? "nothing" : parts.join(", ")
}

/** The wait a rate-limited response asks for, if any. */
const retryAfter = (error: LlmError.LlmError): number | undefined =>
  error._tag === "LlmRateLimitError" ? error.retryAfterMillis : undefined

/**
 * The adapter for resolved settings.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromSettings = (resolved: Settings): Effect.Effect<Adapter, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    // Scoped requests: every attempt is aborted when the stream's scope closes, including one
    // interrupted after its response headers arrived but before its body was opened (an
    // unscoped response nobody reads is only aborted when it is garbage-collected).
    const client = HttpClient.withScope(yield* HttpClient.HttpClient)
    const { endpoint, profile } = resolved
    const provider = profile.displayName
    const quirks = profile.quirks
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
    const open = (request: HttpClientRequest.HttpClientRequest, model: string) =>
      Effect.gen(function*() {
        const response = yield* withIdleTimeout(
          // no tracing headers (b3, traceparent): the provider has no use for this process's trace ids
          Effect.mapError(Effect.provideService(client.execute(request), HttpClient.TracerPropagationEnabled, false), (error) => transport(`could not reach ${provider} at ${AdapterSettings.shownUrl(endpoint)}: ${describeHttp(error)}`)),
          "while waiting for the response headers"
        )
        if (response.status < 200 || response.status > 299) {
          const text = yield* AdapterSettings.readErrorBody(response.stream, idle)
          const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
          return yield* Effect.fail(Failure.fromStatus({
            provider,
            status: response.status,
            headers: response.headers,
            body: text,
            now,
            apiKey: resolved.apiKey,
            authHint: resolved.keyHint,
            model,
            endpoint: AdapterSettings.shownUrl(endpoint)
          }))
        }
        const [first, rest] = yield* Stream.peel(body(response), Sink.head<Uint8Array>())
        const bytes = Option.match(first, {
          onNone: () => Stream.empty,
          onSome: (bytes) => Stream.concat(Stream.succeed(bytes), rest)
        })
        return { bytes, encoding: response.headers["content-encoding"] }
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

    const decodeOverrides = Schema.decodeUnknownResult(providerOptionsSchema(profile))
    const overrides = (request: ModelRequest.ModelRequest): Effect.Effect<Overrides, LlmError.LlmInvalidRequestError> => {
      const raw = request.providerOptions?.[profile.name]
      if (raw === undefined) return Effect.succeed({})
      const decoded = decodeOverrides(raw, { errors: "all", onExcessProperty: "error" })
      return decoded._tag === "Success" ? Effect.succeed(decoded.success as Overrides) : Effect.fail(
        new LlmError.LlmInvalidRequestError({
          message: `providerOptions.${profile.name} is invalid (allowed: ${allowedText(profile)}): ${oneLine(decoded.failure.message)}`
        })
      )
    }

    const decoderOptions: Decoder.Options = { provider, quirks }
    const headers = { ...resolved.headers, accept: "text/event-stream" }

    const stream = (request: ModelRequest.ModelRequest) =>
      Stream.unwrap(Effect.gen(function*() {
        const override = yield* overrides(request)
        const text = RequestBody.encode(request, {
          thinking: override.thinking ?? resolved.thinking,
          reasoningEffort: override.reasoningEffort ?? resolved.reasoningEffort,
          quirks
        })
        const base = HttpClientRequest.post(endpoint).pipe(
          HttpClientRequest.setHeaders(headers),
          HttpClientRequest.bodyText(text, "application/json")
        )
        const http = resolved.apiKey === undefined ? base : HttpClientRequest.bearerToken(base, resolved.apiKey)
        const opened = resolved.retry.times === 0
          ? yield* open(http, request.model)
          : yield* Effect.retry(open(http, request.model), { schedule, times: resolved.retry.times, while: retryable })
        return Decoder.decode(opened.bytes, decoderOptions).pipe(Stream.mapError((error) => Failure.compressedHint(error, opened.encoding)))
      })).pipe(
        // The decoder quotes what the server sent; a server (or a proxy) may echo the key.
        Stream.mapError((error) => Failure.scrubError(error, resolved.apiKey))
      )

    return { name: profile.name, models: resolved.models, info: resolved.info, stream }
  })

/**
 * The adapter itself, for code that registers it by other means than {@link layer}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Options = {},
  context: Context = {}
): Effect.Effect<Adapter, OpenAiConfigError, HttpClient.HttpClient> =>
  Effect.flatMap(settings(options, context), fromSettings)

/**
 * The adapter's Layer without an HTTP client: it requires `HttpClient` (any implementation:
 * `FetchHttpClient.layer`, a client with middleware, a test double).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNoDeps = (
  options: Options = {}
): Layer.Layer<never, OpenAiConfigError | ModelErrors.ModelConflictError | ModelErrors.AdapterConfigError, ModelRegistry | HttpClient.HttpClient> =>
  layerAdapter(make(options))

/**
 * The adapter's Layer over Node's own `http`/`https` client (keep-alive agents, closed with
 * the Layer: a connection is reused after a response read to its end, such as an error's body
 * before a retry; a stream's connection is closed at its terminal event). Provide `Model.layer` below it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options = {}
): Layer.Layer<never, OpenAiConfigError | ModelErrors.ModelConflictError | ModelErrors.AdapterConfigError, ModelRegistry> =>
  // keep-alive: a connection whose response was read to its end (an error's body, before a
  // retry) is reused; a model stream's is closed at its terminal event, which ends the answer
  // without waiting for the server to end the body
  layerNoDeps(options).pipe(Layer.provide(NodeHttpClient.layerNodeHttpOptions({ keepAlive: true })))
