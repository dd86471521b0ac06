/**
 * How a failed call becomes a typed `LlmError`: HTTP statuses, `Retry-After`, transport
 * failures. Every message built here names the provider and says what happened in words; none
 * carries the API key (each is scrubbed of it as a last line of defence) and none keeps the
 * HTTP client's error as a `cause`, because that error holds the request and its
 * `Authorization` header.
 *
 * | status | error | retried |
 * |---|---|---|
 * | 400, 404, 413, 422, other 4xx | `LlmInvalidRequestError` (the provider's message) | no |
 * | 401, 403 | `LlmAuthError` | no |
 * | 402 (DeepSeek: insufficient balance) | `LlmAuthError` | no |
 * | 408 | `LlmTransportError` | yes |
 * | 429 | `LlmRateLimitError` with `retryAfterMillis` from `Retry-After` | yes |
 * | 5xx | `LlmServerError` | yes |
 * | anything else that is not 2xx | `LlmProtocolError` | no |
 *
 * An error the server reports inside a stream ({@link fromStreamError}) becomes the error its
 * own code means, read from the same table when the code is an HTTP status.
 *
 * @since 0.1.0
 */
import { ErrorCode, HarnessError, LlmError } from "@dsh/llm"
import { Predicate, Redacted, Schema } from "effect"
import * as Wire from "./Wire.ts"

const decodeErrorBody = Schema.decodeUnknownOption(Schema.fromJsonString(Wire.ErrorBody))

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
 * Replaces every occurrence of the key in a text. Messages are built from the provider's words
 * and from network errors, neither of which should hold the key; this makes sure.
 *
 * @since 0.1.0
 * @category utils
 */
export const scrub = (text: string, apiKey: Redacted.Redacted<string>): string => {
  const key = Redacted.value(apiKey)
  return key.length === 0 ? text : text.replaceAll(key, "[redacted]")
}

/**
 * The same error with the key scrubbed from its message (the error itself when the key is not
 * in it).
 *
 * @since 0.1.0
 * @category utils
 */
export const scrubError = <E extends LlmError.LlmError>(error: E, apiKey: Redacted.Redacted<string>): E => {
  const message = scrub(error.message, apiKey)
  if (message === error.message) return error
  const { _tag: _, code: __, ...fields } = error as LlmError.LlmError & Record<string, unknown>
  const constructor = error.constructor as new(fields: unknown) => E
  return new constructor({ ...fields, message })
}

/**
 * The provider's explanation in an error body: the `error.message` of a JSON body, else an
 * excerpt of the body, else nothing.
 *
 * @since 0.1.0
 * @category utils
 */
export const providerMessage = (body: string): string | undefined => {
  const decoded = decodeErrorBody(body)
  if (decoded._tag === "Some") return decoded.value.error.message
  const trimmed = body.trim()
  return trimmed === "" ? undefined : excerpt(trimmed)
}

/**
 * Milliseconds to wait, from the `Retry-After` header (delay-seconds or an HTTP date) or the
 * `retry-after-ms` header some OpenAI-compatible servers send. `undefined` when absent or
 * unreadable; a date in the past is 0.
 *
 * @since 0.1.0
 * @category utils
 */
export const retryAfterMillis = (
  headers: Readonly<Record<string, string | undefined>>,
  now: number
): number | undefined => {
  const ms = headers["retry-after-ms"]
  if (ms !== undefined && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Math.ceil(Number(ms))
  const value = headers["retry-after"]?.trim()
  if (value === undefined || value === "") return undefined
  if (/^\d+$/.test(value)) return Number(value) * 1000
  // An HTTP date names a weekday or month, which a bare number or garbage does not.
  if (!/[a-z]/i.test(value)) return undefined
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

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
  readonly apiKey: Redacted.Redacted<string>
  /** Appended to the message of an auth failure: where the key comes from. */
  readonly authHint?: string
}): LlmError.LlmError => {
  const { provider, status } = options
  const said = providerMessage(options.body)
  const because = said === undefined ? "" : `: ${said}`
  const message = (text: string) => scrub(text, options.apiKey)
  if (status === 401 || status === 403) {
    return new LlmError.LlmAuthError({
      message: message(
        `${provider} rejected the API key (HTTP ${status})${because}${options.authHint === undefined ? "" : `. ${options.authHint}`}`
      ),
      status
    })
  }
  if (status === 402) {
    return new LlmError.LlmAuthError({
      message: message(`${provider} refused the request: the account cannot pay for it (HTTP 402)${because}`),
      status
    })
  }
  if (status === 429) {
    const wait = retryAfterMillis(options.headers, options.now)
    const hint = wait === undefined ? "" : ` (retry after ${wait} ms)`
    return wait === undefined
      ? new LlmError.LlmRateLimitError({ message: message(`${provider} throttled the request (HTTP 429)${because}`) })
      : new LlmError.LlmRateLimitError({
        message: message(`${provider} throttled the request (HTTP 429)${hint}${because}`),
        retryAfterMillis: wait
      })
  }
  if (status === 408) {
    return new LlmError.LlmTransportError({ message: message(`${provider} timed out reading the request (HTTP 408)${because}`) })
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
  [/invalid|not.?found|context.?length|bad.?request|unsupported/, "LLM_INVALID_REQUEST"]
]

const asStatus = (value: unknown): number | undefined => {
  const n = typeof value === "number" ? value : typeof value === "string" && /^\d{3}$/.test(value) ? Number(value) : NaN
  return Number.isInteger(n) && n >= 100 && n <= 599 ? n : undefined
}

/**
 * The catalog code an error reported inside a stream means, from the provider's own `code`,
 * `type` and `status` fields: a catalog code of a model call kept as it is (a proxy relaying
 * dsh's own codes), an HTTP status read as {@link fromStatus} reads it, else the words of the
 * code and type (`rate_limit_exceeded` → `LLM_RATE_LIMIT`, `invalid_api_key` → `LLM_AUTH`,
 * `context_length_exceeded` → `LLM_INVALID_REQUEST`); anything else (`upstream_overloaded`,
 * `server_error`, no code at all) is the server failing, `LLM_SERVER`.
 *
 * @since 0.1.0
 * @category mapping
 */
export const streamErrorCode = (fields: {
  readonly code?: unknown
  readonly type?: unknown
  readonly status?: unknown
}): LlmCode => {
  const { code, status, type } = fields
  if (ErrorCode.isErrorCode(code) && llmCodes.has(code)) return code as LlmCode
  const http = asStatus(code) ?? asStatus(status)
  if (http !== undefined) return statusCode(http)
  const said = [code, type, status].filter(Predicate.isString).join(" ").toLowerCase()
  for (const [pattern, mapped] of words) if (pattern.test(said)) return mapped
  return "LLM_SERVER"
}

// A field of a value that may be anything at all (a getter that throws reads as absent).
const field = (value: unknown, key: string): unknown => {
  try {
    return Predicate.isObject(value) && Object.hasOwn(value, key) ? value[key] : undefined
  } catch {
    return undefined
  }
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
 * The typed failure of an error the server reported inside a stream (an `{"error": …}` payload
 * or an `event: error`). The error may be anything — an object with `message`, `code`, `type`,
 * a bare string, a value nested arbitrarily deep — and is read totally: its code decides the
 * class ({@link streamErrorCode}), the message quotes the provider's code and type and its
 * words, bounded.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromStreamError = (provider: string, error: unknown): LlmError.LlmError => {
  const fields = { code: field(error, "code"), type: field(error, "type"), status: field(error, "status") }
  const code = streamErrorCode(fields)
  const status = asStatus(fields.code) ?? asStatus(fields.status)
  const message = `${provider} reported an error in the stream${labels(fields)}: ${excerpt(HarnessError.describe(error))}`
  switch (code) {
    case "LLM_AUTH":
      return new LlmError.LlmAuthError(withStatus(message, status))
    case "LLM_RATE_LIMIT":
      return new LlmError.LlmRateLimitError({ message })
    case "LLM_INVALID_REQUEST":
      return new LlmError.LlmInvalidRequestError(withStatus(message, status))
    case "LLM_PROTOCOL":
      return new LlmError.LlmProtocolError({ message })
    case "LLM_TRANSPORT":
      return new LlmError.LlmTransportError({ message })
    case "LLM_SERVER":
      return new LlmError.LlmServerError(withStatus(message, status))
  }
}
