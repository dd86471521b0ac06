/**
 * How a failed call becomes a typed `LlmError`: HTTP statuses and the error bodies the servers
 * really send, `Retry-After`, transport failures, errors reported inside the stream. Every
 * message built here names the provider and says what happened in words; none carries the API
 * key (each is scrubbed of it as a last line of defence) and none keeps the HTTP client's error
 * as a `cause`, because that error holds the request and its `Authorization` header.
 *
 * | status | error | retried |
 * |---|---|---|
 * | 400, 413, 422, other 4xx | `LlmInvalidRequestError` (the provider's message) | no |
 * | 400/413/422 saying the context length was exceeded | `LlmContextOverflowError`, with the `limit` and `requested` tokens the provider named | no (the loop compacts and retries) |
 * | 404 | `LlmInvalidRequestError`: the model is not served (named), or the endpoint does not exist (check the base URL) | no |
 * | 401, 403 | `LlmAuthError` | no |
 * | 402 (no credit), 429 saying `insufficient_quota` (OpenAI) | `LlmAuthError`: an account that cannot pay, which waiting does not fix | no |
 * | 408 | `LlmTransportError` | yes |
 * | 429 | `LlmRateLimitError` with `retryAfterMillis` from `Retry-After` | yes |
 * | 5xx | `LlmServerError` | yes |
 * | anything else that is not 2xx | `LlmProtocolError` | no |
 *
 * The provider's words are read from the body shapes the servers use: OpenAI's
 * `{"error": {"message", "type", "code"}}` (also llama.cpp's, LM Studio's and newer vLLM's),
 * OpenRouter's `{"error": {"code", "message", "metadata": {"provider_name", "raw"}}}`,
 * Ollama's and LM Studio's `{"error": "…"}`, vLLM's older `{"object": "error", "message", …}`,
 * FastAPI's `{"detail": …}`, and an HTML page from a proxy in front of the server (its title or
 * text, not its markup). An error the server reports inside a stream ({@link fromStreamError})
 * becomes the error its own code means, read from the same table when the code is a status.
 *
 * @since 0.1.0
 */
import { AdapterSettings, ErrorCode, HarnessError, LlmError } from "@dsh/llm"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"

/** How much of an unparseable error body a message quotes. */
const excerptLength = 300

/**
 * Cuts text to a readable excerpt.
 *
 * @since 0.1.0
 * @category utils
 */
export const excerpt = (text: string, length = excerptLength): string =>
  text.length <= length ? text : `${text.slice(0, length)}… (${text.length - length} more characters)`

/**
 * Replaces every occurrence of the key in a text that stands on its own (not inside a longer
 * word: a placeholder key such as `EMPTY` or `k` must not mangle the words of a message).
 * Messages are built from the provider's words and from network errors, neither of which
 * should hold the key; this makes sure.
 *
 * @since 0.1.0
 * @category utils
 */
export const scrub = (text: string, apiKey: Redacted.Redacted<string> | undefined): string => {
  if (apiKey === undefined) return text
  return LlmError.scrubKey(text, Redacted.value(apiKey))
}

/**
 * The same error with the key scrubbed from its message (the error itself when the key is not
 * in it).
 *
 * @since 0.1.0
 * @category utils
 */
export const scrubError = <E extends LlmError.LlmError>(error: E, apiKey: Redacted.Redacted<string> | undefined): E => {
  const message = scrub(error.message, apiKey)
  if (message === error.message) return error
  const { _tag: _, code: __, ...fields } = error as LlmError.LlmError & Record<string, unknown>
  const constructor = error.constructor as new(fields: unknown) => E
  return new constructor({ ...fields, message })
}

// A field of a value that may be anything at all (a getter that throws reads as absent).
const field = (value: unknown, key: string): unknown => {
  try {
    return Predicate.isObject(value) && Object.hasOwn(value, key) ? value[key] : undefined
  } catch {
    return undefined
  }
}

const text = (value: unknown): string | undefined =>
  Predicate.isString(value) && value.trim() !== "" ? value.trim() : undefined

/**
 * What an error body says, read from the shapes servers use (see the module's description).
 *
 * @since 0.1.0
 * @category models
 */
export interface Reported {
  /** The provider's explanation, bounded. */
  readonly message: string | undefined
  /** The provider's own code (`"model_not_found"`, `429`, …), if it gave one. */
  readonly code: unknown
  /** The provider's error type (`"invalid_request_error"`, `"NotFoundError"`, …), if it gave one. */
  readonly type: unknown
  /** Token counts the body gave as fields (llama.cpp's `n_ctx` and `n_prompt_tokens`). */
  readonly counts?: { readonly limit?: unknown; readonly requested?: unknown }
}

const describeDetail = (detail: unknown): string | undefined => {
  if (Predicate.isString(detail)) return text(detail)
  if (Array.isArray(detail)) {
    const first = detail[0]
    const msg = text(field(first, "msg")) ?? text(field(first, "message"))
    return msg === undefined ? undefined : detail.length > 1 ? `${msg} (and ${detail.length - 1} more)` : msg
  }
  return undefined
}

/**
 * Reads an error body: the provider's message, code and type.
 *
 * @since 0.1.0
 * @category utils
 */
export const reported = (body: string): Reported => {
  const trimmed = body.trim()
  if (trimmed === "") return { message: undefined, code: undefined, type: undefined }
  const page = AdapterSettings.htmlPage(trimmed)
  if (page !== undefined) return { message: page, code: undefined, type: undefined }
  let json: unknown
  try {
    json = JSON.parse(trimmed)
  } catch {
    return { message: excerpt(trimmed), code: undefined, type: undefined }
  }
  const error = field(json, "error")
  // Ollama, LM Studio: {"error": "model 'x' not found"}
  if (Predicate.isString(error)) return { message: excerpt(error.trim()), code: undefined, type: undefined }
  if (Predicate.isObject(error)) {
    const message = text(field(error, "message"))
    const metadata = field(error, "metadata")
    // OpenRouter names the upstream that failed and quotes what it said
    const upstream = text(field(metadata, "provider_name"))
    const raw = field(metadata, "raw")
    const rawText = Predicate.isString(raw) ? text(raw) : raw === undefined ? undefined : HarnessError.describe(raw)
    const extra = [upstream === undefined ? undefined : `provider ${upstream}`, rawText === undefined ? undefined : `said ${JSON.stringify(excerpt(rawText, 200))}`]
      .filter(Predicate.isString)
    const said = message === undefined ? undefined : extra.length === 0 ? message : `${message} (${extra.join(", ")})`
    return {
      message: said === undefined ? excerpt(trimmed) : excerpt(said),
      code: field(error, "code"),
      type: field(error, "type"),
      counts: { limit: field(error, "n_ctx"), requested: field(error, "n_prompt_tokens") }
    }
  }
  // vLLM before its OpenAI-shaped errors: {"object": "error", "message", "type", "code"}
  const message = text(field(json, "message")) ?? describeDetail(field(json, "detail"))
  return {
    message: message === undefined ? excerpt(trimmed) : excerpt(message),
    code: field(json, "code"),
    type: field(json, "type")
  }
}

/**
 * The provider's explanation in an error body (see {@link reported}), or nothing.
 *
 * @since 0.1.0
 * @category utils
 */
export const providerMessage = (body: string): string | undefined => reported(body).message

/**
 * Milliseconds to wait, from the `retry-after-ms` or `Retry-After` header (delay-seconds or an
 * HTTP date), bounded to a safe integer; `@dsh/llm`'s `LlmError.retryAfterMillis`, which every
 * adapter reads them with.
 *
 * @since 0.1.0
 * @category utils
 */
export const retryAfterMillis: typeof LlmError.retryAfterMillis = LlmError.retryAfterMillis

const isOverflow = (said: Reported): boolean =>
  [said.code, said.type, said.message].some((value) => Predicate.isString(value) && LlmError.saysContextOverflow(value))

/**
 * The token counts a context overflow names: the window (`limit`) and what the request needed
 * (`requested`), from llama.cpp's `n_ctx`/`n_prompt_tokens` or from the message's words.
 *
 * @since 0.1.0
 * @category utils
 */
export const overflowCounts = (
  message: string,
  fields: { readonly limit?: unknown; readonly requested?: unknown } = {}
): { readonly limit?: number; readonly requested?: number } => {
  const asCount = (value: unknown) => typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : undefined
  const said = LlmError.overflowCounts(message)
  const limit = asCount(fields.limit) ?? said.limit
  const requested = asCount(fields.requested) ?? said.requested
  return { ...(limit === undefined ? {} : { limit }), ...(requested === undefined ? {} : { requested }) }
}

const saysNoModel = (said: Reported, model: string | undefined): boolean =>
  said.code === "model_not_found" || said.type === "NotFoundError" ||
  (said.message !== undefined && (/\bmodels?\b/i.test(said.message) || (model !== undefined && said.message.includes(model))))

const saysNoQuota = (said: Reported): boolean =>
  [said.code, said.type].some((value) => Predicate.isString(value) && /insufficient.?quota|billing/i.test(value))

/**
 * What a non-2xx response means.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromStatus = (options: {
  readonly provider: string
  readonly status: number
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: string
  readonly now: number
  readonly apiKey: Redacted.Redacted<string> | undefined
  /** Appended to the message of an auth failure: where the key comes from. */
  readonly authHint?: string
  /** The model the request named: a 404 about it names it. */
  readonly model?: string
  /** The URL requested: a 404 that is not about the model names it. */
  readonly endpoint?: string
}): LlmError.LlmError => {
  const { provider, status } = options
  const said = reported(options.body)
  const because = said.message === undefined ? "" : `: ${said.message}`
  const message = (text: string) => scrub(text, options.apiKey)
  // a sentence of its own, without a second period after a provider's that ends in one
  const hint = options.authHint === undefined ? "" : `${/[.!?]$/.test(because) ? "" : "."} ${options.authHint}`
  if (status === 401) {
    return new LlmError.LlmAuthError({ message: message(`${provider} rejected the API key (HTTP 401)${because}${hint}`), status })
  }
  if (status === 403) {
    return new LlmError.LlmAuthError({
      message: message(`${provider} refused the request as forbidden (HTTP 403)${because}${hint}`),
      status
    })
  }
  if (status === 402 || (status === 429 && saysNoQuota(said))) {
    return new LlmError.LlmAuthError({
      message: message(`${provider} refused the request: the account cannot pay for it (HTTP ${status})${because}`),
      status
    })
  }
  if (status === 429) {
    const wait = retryAfterMillis(options.headers, options.now)
    const after = wait === undefined ? "" : ` (retry after ${wait} ms)`
    return wait === undefined
      ? new LlmError.LlmRateLimitError({ message: message(`${provider} throttled the request (HTTP 429)${because}`) })
      : new LlmError.LlmRateLimitError({
        message: message(`${provider} throttled the request (HTTP 429)${after}${because}`),
        retryAfterMillis: wait
      })
  }
  if (status === 404) {
    const text = saysNoModel(said, options.model) && options.model !== undefined
      ? `${provider} does not serve the model ${JSON.stringify(options.model)} (HTTP 404)${because}. ` +
        "Check the name against what the server lists at GET /models"
      : `${provider} has no such endpoint${options.endpoint === undefined ? "" : ` as ${options.endpoint}`} (HTTP 404)${because}. ` +
        "Check the base URL (OpenAI-compatible servers usually serve under /v1)"
    return new LlmError.LlmInvalidRequestError({ message: message(text), status })
  }
  if (status === 408) {
    return new LlmError.LlmTransportError({ message: message(`${provider} timed out reading the request (HTTP 408)${because}`) })
  }
  if ((status === 400 || status === 413 || status === 422) && isOverflow(said)) {
    const counts = overflowCounts(said.message ?? "", said.counts)
    return new LlmError.LlmContextOverflowError({
      message: message(`${provider} refused the request: it does not fit the model's context window (HTTP ${status})${because}`),
      ...counts
    })
  }
  if (status >= 500 && status <= 599) {
    return new LlmError.LlmServerError({ message: message(`${provider} failed (HTTP ${status})${because}`), status })
  }
  if (status >= 400 && status <= 499) {
    return new LlmError.LlmInvalidRequestError({
      message: message(`${provider} refused the request (HTTP ${status})${because}`),
      status
    })
  }
  return new LlmError.LlmProtocolError({
    message: message(`${provider} answered with unexpected HTTP status ${status}${because}`)
  })
}

/**
 * The chain of messages of an error and its causes (`fetch failed: connect ECONNREFUSED …`),
 * for a readable transport error without keeping the error itself.
 *
 * @since 0.1.0
 * @category utils
 */
export const describe = (error: unknown): string => {
  const parts: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    if (typeof current === "object" && "message" in current && typeof current.message === "string") {
      const text = current.message
      if (text !== "" && !parts.includes(text)) parts.push(text)
      current = "cause" in current ? current.cause : undefined
    } else {
      if (typeof current === "string" && current !== "") parts.push(current)
      break
    }
  }
  return parts.length === 0 ? "unknown error" : parts.join(": ")
}

/**
 * The codes of the failures a model call has (`LlmError`'s).
 *
 * @since 0.1.0
 * @category models
 */
export type LlmCode = LlmError.LlmError["code"]

const llmCodes: ReadonlySet<string> = new Set<LlmCode>([
  "LLM_AUTH",
  "LLM_RATE_LIMIT",
  "LLM_INVALID_REQUEST",
  "LLM_CONTEXT_OVERFLOW",
  "LLM_SERVER",
  "LLM_PROTOCOL",
  "LLM_TRANSPORT"
])

// The same reading of a status as `fromStatus`.
const statusCode = (status: number): LlmCode => {
  if (status === 401 || status === 402 || status === 403) return "LLM_AUTH"
  if (status === 429) return "LLM_RATE_LIMIT"
  if (status === 408) return "LLM_TRANSPORT"
  if (status >= 400 && status <= 499) return "LLM_INVALID_REQUEST"
  return "LLM_SERVER"
}

// What providers' error codes and types say, tried in order, because one error often says
// two things: "rate_limit_exceeded" with type "invalid_request_error" is a rate limit,
// "insufficient_quota" is an account that cannot pay (an auth failure, as HTTP 402 is), and
// "invalid_api_key" is an auth failure before it is an invalid request.
const words: ReadonlyArray<readonly [RegExp, LlmCode]> = [
  [/rate.?limit|throttl|too.?many.?requests|resource.?exhausted/, "LLM_RATE_LIMIT"],
  [/quota|balance|billing|payment/, "LLM_AUTH"],
  [/auth|api.?key|permission|forbidden|unauthori[sz]ed/, "LLM_AUTH"],
  [/context.?length|exceed\w*.?context|context.?window/, "LLM_CONTEXT_OVERFLOW"],
  [/invalid|not.?found|bad.?request|unsupported/, "LLM_INVALID_REQUEST"]
]

const asStatus = (value: unknown): number | undefined => {
  const n = typeof value === "number" ? value : typeof value === "string" && /^\d{3}$/.test(value) ? Number(value) : NaN
  return Number.isInteger(n) && n >= 100 && n <= 599 ? n : undefined
}

/**
 * The catalog code an error reported inside a stream means, from the provider's own `code`,
 * `type`, `status` and `message` fields: a catalog code of a model call kept as it is (a proxy
 * relaying dsh's own codes), an HTTP status read as {@link fromStatus} reads it (a 400, 413 or
 * 422 whose words say the context was exceeded is `LLM_CONTEXT_OVERFLOW`, a 429 of an
 * exhausted quota `LLM_AUTH`), else the words of the code and type (`rate_limit_exceeded` →
 * `LLM_RATE_LIMIT`, `invalid_api_key` → `LLM_AUTH`, `context_length_exceeded` →
 * `LLM_CONTEXT_OVERFLOW`, `invalid_request_error` → `LLM_INVALID_REQUEST`), else a message
 * saying the context was exceeded; anything else (`upstream_overloaded`, `server_error`, no
 * code at all) is the server failing, `LLM_SERVER`.
 *
 * @since 0.1.0
 * @category mapping
 */
export const streamErrorCode = (fields: {
  readonly code?: unknown
  readonly type?: unknown
  readonly status?: unknown
  readonly message?: unknown
}): LlmCode => {
  const { code, status, type } = fields
  if (ErrorCode.isErrorCode(code) && llmCodes.has(code)) return code as LlmCode
  const said: Reported = { code, type, message: Predicate.isString(fields.message) ? fields.message : undefined }
  const http = asStatus(code) ?? asStatus(status)
  if (http !== undefined) {
    if ((http === 400 || http === 413 || http === 422) && isOverflow(said)) return "LLM_CONTEXT_OVERFLOW"
    if (http === 429 && saysNoQuota(said)) return "LLM_AUTH"
    return statusCode(http)
  }
  const named = [code, type, status].filter(Predicate.isString).join(" ").toLowerCase()
  for (const [pattern, mapped] of words) if (pattern.test(named)) return mapped
  if (isOverflow(said)) return "LLM_CONTEXT_OVERFLOW"
  return "LLM_SERVER"
}

// The provider's own words for the error's kind, quoted in the message: `code x, type y`.
const labels = (fields: Readonly<Record<"code" | "type", unknown>>): string => {
  const parts: Array<string> = []
  for (const key of ["code", "type"] as const) {
    const value = fields[key]
    if ((Predicate.isString(value) && value !== "") || Predicate.isNumber(value)) parts.push(`${key} ${excerpt(String(value), 100)}`)
  }
  return parts.length === 0 ? "" : ` (${parts.join(", ")})`
}

const withStatus = (message: string, status: number | undefined) => status === undefined ? { message } : { message, status }

/**
 * The typed failure of an error the server reported inside a stream (an `{"error": …}` payload,
 * an `event: error`, vLLM's `{"object": "error", …}`). The error may be anything — an object
 * with `message`, `code`, `type`, a bare string, a value nested arbitrarily deep — and is read
 * totally: its code decides the class ({@link streamErrorCode}), the message quotes the
 * provider's code and type and its words, bounded.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromStreamError = (provider: string, error: unknown): LlmError.LlmError => {
  const fields = { code: field(error, "code"), type: field(error, "type"), status: field(error, "status") }
  const code = streamErrorCode({ ...fields, message: field(error, "message") })
  const status = asStatus(fields.code) ?? asStatus(fields.status)
  const message = `${provider} reported an error in the stream${labels(fields)}: ${excerpt(HarnessError.describe(error))}`
  switch (code) {
    case "LLM_AUTH":
      return new LlmError.LlmAuthError(withStatus(message, status))
    case "LLM_RATE_LIMIT":
      return new LlmError.LlmRateLimitError({ message })
    case "LLM_INVALID_REQUEST":
      return new LlmError.LlmInvalidRequestError(withStatus(message, status))
    case "LLM_CONTEXT_OVERFLOW":
      return new LlmError.LlmContextOverflowError({ message, ...overflowCounts(message) })
    case "LLM_PROTOCOL":
      return new LlmError.LlmProtocolError({ message })
    case "LLM_TRANSPORT":
      return new LlmError.LlmTransportError({ message })
    case "LLM_SERVER":
      return new LlmError.LlmServerError(withStatus(message, status))
  }
}

/**
 * A body the decoder found no UTF-8 in, that came with a `content-encoding` (gzip, br, …): the
 * client asked for none and reads bytes as they come, so the failure says what they were — a
 * proxy compressing the stream — rather than leave a reader to guess. Any other error as it is.
 *
 * @since 0.1.0
 * @category utils
 */
export const compressedHint = <E>(error: E, encoding: string | undefined): E | LlmError.LlmProtocolError => {
  if (encoding === undefined || encoding.trim() === "" || encoding.trim().toLowerCase() === "identity") return error
  if (!(error instanceof LlmError.LlmProtocolError) || !error.message.includes("not valid UTF-8")) return error
  return new LlmError.LlmProtocolError({
    message: `${error.message}: it came with content-encoding ${JSON.stringify(excerpt(encoding, 40))}, which the request did not ask for (is a proxy compressing the stream?)`
  })
}
