/**
 * How a failed call becomes a typed `LlmError`: HTTP statuses, Anthropic's error types,
 * `retry-after`, transport failures. Every message built here names the provider and says what
 * happened in words, with the API's `request-id` when it sent one (what Anthropic's support asks
 * for); none carries the API key (each is scrubbed of it as a last line of defence) and none
 * keeps the HTTP client's error as a `cause`, because that error holds the request and its
 * `x-api-key` header.
 *
 * | status | Anthropic's error type | error | retried |
 * |---|---|---|---|
 * | 400 | `invalid_request_error` | `LlmInvalidRequestError` | no |
 * | 400 | `invalid_request_error` saying the prompt does not fit ("prompt is too long: 212345 tokens > 200000 maximum", "input length and `max_tokens` exceed context limit: …") | `LlmContextOverflowError` with the `limit` and `requested` tokens named | no (the loop compacts and retries) |
 * | 401 | `authentication_error` | `LlmAuthError` | no |
 * | 402 | `billing_error` | `LlmAuthError` | no |
 * | 403 | `permission_error` | `LlmAuthError` | no |
 * | 404 | `not_found_error` | `LlmInvalidRequestError` | no |
 * | 413 | `request_too_large` | `LlmInvalidRequestError` | no |
 * | 408 | | `LlmTransportError` | yes |
 * | 429 | `rate_limit_error` | `LlmRateLimitError`, `retryAfterMillis` from `retry-after` | yes |
 * | 500 | `api_error` | `LlmServerError` | yes |
 * | 504 | `timeout_error` | `LlmServerError` | yes |
 * | 529 | `overloaded_error` | `LlmServerError` (status 529) | yes |
 * | other 4xx / 5xx | | `LlmInvalidRequestError` / `LlmServerError` | no / yes |
 * | anything else not 2xx | | `LlmProtocolError` | no |
 *
 * The status decides (what a proxy in between sends is still an HTTP status); the error type is
 * quoted in the message. An error inside the stream (an `error` event) has no status of its
 * own: its type decides, by the same table ({@link fromStreamError}).
 *
 * @since 0.1.0
 */
import { AdapterSettings, HarnessError, LlmError } from "@dsh/llm"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
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
 * A value as JSON text cut to an excerpt, for quoting what a server sent. Total: a value
 * `JSON.stringify` cannot write (nested too deep for its recursion) is described instead.
 *
 * @since 0.1.0
 * @category utils
 */
export const quote = (value: unknown, length = 120): string => {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch {
    return "(a value too deeply nested to quote)"
  }
  return excerpt(text ?? String(value), length)
}

/**
 * Replaces every occurrence of the key in a text that stands on its own (not inside a longer
 * word: a placeholder key such as `EMPTY` or `k` must not mangle the words of a message).
 * Messages are built from the provider's words and from network errors, neither of which
 * should hold the key; this makes sure.
 *
 * @since 0.1.0
 * @category utils
 */
export const scrub = (text: string, apiKey: Redacted.Redacted<string>): string => {
  return LlmError.scrubKey(text, Redacted.value(apiKey))
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
 * Milliseconds to wait, from the `retry-after-ms` or `Retry-After` header (delay-seconds or an
 * HTTP date), bounded to a safe integer; `@dsh/llm`'s `LlmError.retryAfterMillis`, which every
 * adapter reads them with.
 *
 * @since 0.1.0
 * @category utils
 */
export const retryAfterMillis: typeof LlmError.retryAfterMillis = LlmError.retryAfterMillis

/**
 * What an error body says: the API's error type and message, and the request id. A body that
 * is not Anthropic's error JSON is quoted as an excerpt, and an HTML page by its title
 * (`AdapterSettings.htmlPage`).
 *
 * @since 0.1.0
 * @category utils
 */
export const readErrorBody = (
  body: string
): { readonly type: string | undefined; readonly message: string | undefined; readonly requestId: string | undefined } => {
  const decoded = decodeErrorBody(body)
  if (decoded._tag === "Some") {
    return {
      type: decoded.value.error.type ?? undefined,
      // the API's words are quoted in a message: bounded, like everything else a message quotes
      message: excerpt(decoded.value.error.message),
      requestId: decoded.value.request_id ?? undefined
    }
  }
  const trimmed = body.trim()
  // a proxy's error page is named by its title, not quoted as markup
  const page = AdapterSettings.htmlPage(trimmed)
  return { type: undefined, message: trimmed === "" ? undefined : page ?? excerpt(trimmed), requestId: undefined }
}

/**
 * The codes of the failures a model call has (`LlmError`'s).
 *
 * @since 0.1.0
 * @category models
 */
export type LlmCode = LlmError.LlmError["code"]

/**
 * Anthropic's error types, the catalog code each means and the HTTP status the API sends
 * with it.
 *
 * @since 0.1.0
 * @category mapping
 */
export const errorTypes: Readonly<Record<string, { readonly code: LlmCode; readonly status: number }>> = {
  invalid_request_error: { code: "LLM_INVALID_REQUEST", status: 400 },
  authentication_error: { code: "LLM_AUTH", status: 401 },
  billing_error: { code: "LLM_AUTH", status: 402 },
  permission_error: { code: "LLM_AUTH", status: 403 },
  not_found_error: { code: "LLM_INVALID_REQUEST", status: 404 },
  request_too_large: { code: "LLM_INVALID_REQUEST", status: 413 },
  rate_limit_error: { code: "LLM_RATE_LIMIT", status: 429 },
  api_error: { code: "LLM_SERVER", status: 500 },
  timeout_error: { code: "LLM_SERVER", status: 504 },
  overloaded_error: { code: "LLM_SERVER", status: 529 }
}

// An error type outside the table (a proxy's, or one added to the API later), read by its words.
const words: ReadonlyArray<readonly [RegExp, LlmCode]> = [
  [/rate.?limit|throttl|too.?many/, "LLM_RATE_LIMIT"],
  [/overload|capacity|unavailable/, "LLM_SERVER"],
  [/auth|api.?key|permission|forbidden|billing|credit|quota/, "LLM_AUTH"],
  [/invalid|not.?found|too.?large|bad.?request/, "LLM_INVALID_REQUEST"]
]

/**
 * The catalog code an error type means: from the table of Anthropic's types, else from its
 * words (`quota_exceeded` → `LLM_AUTH`); anything else is the server failing, `LLM_SERVER`.
 *
 * @since 0.1.0
 * @category mapping
 */
export const errorTypeCode = (type: string | undefined): LlmCode => {
  if (type === undefined) return "LLM_SERVER"
  const known = errorTypes[type]
  if (known !== undefined) return known.code
  const said = type.toLowerCase()
  for (const [pattern, code] of words) if (pattern.test(said)) return code
  return "LLM_SERVER"
}

// How the API says a request does not fit the context window. (`request_too_large`, HTTP 413,
// is about the body's bytes, not tokens: it stays an invalid request.)
const overflowWords = /prompt is too long|exceeds? (?:the )?context (?:limit|window)|context (?:limit|window) exceeded/i

/**
 * Whether an error's words say the request does not fit the model's context window.
 *
 * @since 0.1.0
 * @category mapping
 */
export const isOverflow = (message: string | undefined): boolean => message !== undefined && overflowWords.test(message)

const count = (text: string | undefined): number | undefined => {
  const n = text === undefined ? NaN : Number(text.replaceAll(",", ""))
  return Number.isSafeInteger(n) && n > 0 ? n : undefined
}

/**
 * The token counts a context overflow names: what the request needed (`requested`: the prompt,
 * or the prompt plus `max_tokens`) and the window (`limit`).
 *
 * @since 0.1.0
 * @category mapping
 */
export const overflowCounts = (message: string): { readonly limit?: number; readonly requested?: number } => {
  const tooLong = /prompt is too long:\s*([\d,]+)\s*tokens?\s*>\s*([\d,]+)/i.exec(message)
  const sum = /context limit:\s*([\d,]+)\s*\+\s*([\d,]+)\s*>\s*([\d,]+)/i.exec(message)
  const input = count(sum?.[1])
  const output = count(sum?.[2])
  const requested = count(tooLong?.[1]) ?? (input === undefined || output === undefined ? undefined : input + output)
  const limit = count(tooLong?.[2]) ?? count(sum?.[3])
  return { ...(limit === undefined ? {} : { limit }), ...(requested === undefined ? {} : { requested }) }
}

const requestIdNote = (id: string | undefined) => id === undefined || id === "" ? "" : ` [request-id ${excerpt(id, 100)}]`

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
  const said = readErrorBody(options.body)
  const kind = said.type === undefined ? "" : ` ${excerpt(said.type, 100)}`
  const because = said.message === undefined ? "" : `: ${said.message}`
  const id = requestIdNote(said.requestId ?? options.headers["request-id"])
  const message = (text: string) => scrub(`${text}${id}`, options.apiKey)
  if (status === 401 || status === 403) {
    // a sentence of its own, without a second period after a provider's that ends in one
    const hint = options.authHint === undefined ? "" : `${/[.!?]$/.test(because) ? "" : "."} ${options.authHint}`
    return new LlmError.LlmAuthError({
      message: message(`${provider} rejected the API key (HTTP ${status}${kind})${because}${hint}`),
      status
    })
  }
  if (status === 402) {
    return new LlmError.LlmAuthError({
      message: message(`${provider} refused the request: the account cannot pay for it (HTTP 402${kind})${because}`),
      status
    })
  }
  if (status === 429) {
    const wait = retryAfterMillis(options.headers, options.now)
    const hint = wait === undefined ? "" : ` (retry after ${wait} ms)`
    const text = message(`${provider} throttled the request (HTTP 429${kind})${hint}${because}`)
    return wait === undefined
      ? new LlmError.LlmRateLimitError({ message: text })
      : new LlmError.LlmRateLimitError({ message: text, retryAfterMillis: wait })
  }
  if (status === 408) {
    return new LlmError.LlmTransportError({ message: message(`${provider} timed out reading the request (HTTP 408)${because}`) })
  }
  if (status === 529) {
    return new LlmError.LlmServerError({ message: message(`${provider} is overloaded (HTTP 529${kind})${because}`), status })
  }
  if (status >= 500 && status <= 599) {
    return new LlmError.LlmServerError({ message: message(`${provider} failed (HTTP ${status}${kind})${because}`), status })
  }
  if (status === 400 && isOverflow(said.message)) {
    return new LlmError.LlmContextOverflowError({
      message: message(`${provider} refused the request: it does not fit the model's context window (HTTP 400${kind})${because}`),
      ...overflowCounts(said.message ?? "")
    })
  }
  if (status >= 400 && status <= 499) {
    return new LlmError.LlmInvalidRequestError({
      message: message(`${provider} refused the request (HTTP ${status}${kind})${because}`),
      status
    })
  }
  return new LlmError.LlmProtocolError({
    message: message(`${provider} answered with unexpected HTTP status ${status}${because}`)
  })
}

// A field of a value that may be anything at all (a getter that throws reads as absent).
const field = (value: unknown, key: string): unknown => {
  try {
    return Predicate.isObject(value) && Object.hasOwn(value, key) ? value[key] : undefined
  } catch {
    return undefined
  }
}

/**
 * The typed failure of an error the API reported inside the stream (an `error` event). The
 * error may be anything — `{type, message}` as Anthropic sends it, a bare string, a value nested
 * arbitrarily deep — and is read totally: its `type` decides the class ({@link errorTypeCode}),
 * the message quotes the type and the provider's words, bounded. An `overloaded_error` is an
 * `LlmServerError` with status 529; a `rate_limit_error` an `LlmRateLimitError`; an
 * `invalid_request_error` saying the prompt is too long an `LlmContextOverflowError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromStreamError = (provider: string, error: unknown): LlmError.LlmError => {
  const rawType = field(error, "type")
  const type = typeof rawType === "string" && rawType !== "" ? rawType : undefined
  const code = errorTypeCode(type)
  const said = field(error, "message")
  const text = typeof said === "string" ? said : HarnessError.describe(error)
  const label = type === undefined ? "" : ` (${excerpt(type, 100)})`
  const message = `${provider} reported an error in the stream${label}: ${excerpt(text)}`
  const known = type === undefined ? undefined : errorTypes[type]
  const withStatus = known === undefined ? { message } : { message, status: known.status }
  if (code === "LLM_INVALID_REQUEST" && isOverflow(text)) {
    return new LlmError.LlmContextOverflowError({ message, ...overflowCounts(text) })
  }
  switch (code) {
    case "LLM_AUTH":
      return new LlmError.LlmAuthError(withStatus)
    case "LLM_RATE_LIMIT":
      return new LlmError.LlmRateLimitError({ message })
    case "LLM_INVALID_REQUEST":
      return new LlmError.LlmInvalidRequestError(withStatus)
    default:
      return new LlmError.LlmServerError(withStatus)
  }
}
