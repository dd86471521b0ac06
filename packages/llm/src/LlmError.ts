/**
 * The typed failures of a model call. Adapters fail their streams with these (or end them
 * with a `finish` of kind `error`); each carries a stable code from the catalog.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as HarnessError from "./HarnessError.ts"

/**
 * The provider rejected the credentials (HTTP 401/403), or none were configured.
 *
 * @since 0.1.0
 * @category errors
 */
export class LlmAuthError extends Schema.TaggedError<LlmAuthError>()("LlmAuthError", {
  ...HarnessError.fields("LLM_AUTH"),
  status: Schema.optionalKey(Schema.Int)
}) {}

/**
 * The provider throttled the request (HTTP 429). `retryAfterMillis` is the provider's hint.
 *
 * @since 0.1.0
 * @category errors
 */
export class LlmRateLimitError extends Schema.TaggedError<LlmRateLimitError>()("LlmRateLimitError", {
  ...HarnessError.fields("LLM_RATE_LIMIT"),
  retryAfterMillis: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))
}) {}

/**
 * The provider refused the request as malformed (HTTP 400).
 *
 * @since 0.1.0
 * @category errors
 */
export class LlmInvalidRequestError extends Schema.TaggedError<LlmInvalidRequestError>()("LlmInvalidRequestError", {
  ...HarnessError.fields("LLM_INVALID_REQUEST"),
  status: Schema.optionalKey(Schema.Int)
}) {}

/**
 * The provider failed on its side (HTTP 5xx, or an error reported inside the stream).
 *
 * @since 0.1.0
 * @category errors
 */
export class LlmServerError extends Schema.TaggedError<LlmServerError>()("LlmServerError", {
  ...HarnessError.fields("LLM_SERVER"),
  status: Schema.optionalKey(Schema.Int)
}) {}

/**
 * The response broke the wire or chunk protocol.
 *
 * @since 0.1.0
 * @category errors
 */
export class LlmProtocolError extends Schema.TaggedError<LlmProtocolError>()("LlmProtocolError", {
  ...HarnessError.fields("LLM_PROTOCOL")
}) {}

/**
 * The connection failed or stalled before the response completed.
 *
 * @since 0.1.0
 * @category errors
 */
export class LlmTransportError extends Schema.TaggedError<LlmTransportError>()("LlmTransportError", {
  ...HarnessError.fields("LLM_TRANSPORT")
}) {}

/**
 * The request did not fit the model's context window (a provider's "context length
 * exceeded"). The loop compacts the history and retries the step once before it ends the turn
 * with this code. `limit` and `requested` are the token counts the provider named, when it did.
 *
 * @since 0.1.0
 * @category errors
 */
export class LlmContextOverflowError extends Schema.TaggedError<LlmContextOverflowError>()("LlmContextOverflowError", {
  ...HarnessError.fields("LLM_CONTEXT_OVERFLOW"),
  limit: Schema.optionalKey(Schema.Int),
  requested: Schema.optionalKey(Schema.Int)
}) {}

/**
 * Any failure of a model call.
 *
 * @since 0.1.0
 * @category schemas
 */
export const LlmError = Schema.Union([
  LlmAuthError,
  LlmRateLimitError,
  LlmInvalidRequestError,
  LlmContextOverflowError,
  LlmServerError,
  LlmProtocolError,
  LlmTransportError
])

/**
 * @since 0.1.0
 * @category models
 */
export type LlmError = typeof LlmError.Type

/**
 * The classes of {@link LlmError}, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [
  LlmAuthError,
  LlmRateLimitError,
  LlmInvalidRequestError,
  LlmContextOverflowError,
  LlmServerError,
  LlmProtocolError,
  LlmTransportError
] as const

/**
 * Whether a failure may succeed when retried unchanged (throttling, server and transport
 * failures).
 *
 * @since 0.1.0
 * @category guards
 */
export const isRetryable = (error: LlmError): boolean =>
  error._tag === "LlmRateLimitError" || error._tag === "LlmServerError" || error._tag === "LlmTransportError"

// How servers say a prompt did not fit: OpenAI and OpenRouter ("maximum context length is N
// tokens. However, you requested M"), DeepSeek and vLLM (the same words), llama.cpp
// (`exceed_context_size_error`, "exceeds the available context size"), LM Studio ("context
// length of only N tokens"), Anthropic ("prompt is too long: M tokens > N"), Gemini ("input
// token count … exceeds the maximum").
const overflowWords = /context.?length.?exceeded|exceed\w*.?context|context.?window.?exceeded|maximum context length|context (?:size|length|window) (?:exceeded|of only)|exceeds the (?:available )?context|prompt is too long|too many (?:input )?tokens|input token count.*exceeds the maximum/i

/**
 * Whether a provider's words (an error's message, code or type) say that the request did not
 * fit the model's context window — for adapters that must tell an overflow, which the loop
 * compacts for, from any other refused request.
 *
 * @since 0.1.0
 * @category guards
 */
export const saysContextOverflow = (words: string): boolean => overflowWords.test(words)

const tokenCount = (text: string, pattern: RegExp): number | undefined => {
  const match = pattern.exec(text)
  const n = match === null ? NaN : Number(match[1]!.replaceAll(",", ""))
  return Number.isSafeInteger(n) && n > 0 ? n : undefined
}

/**
 * The token counts an overflow's words name: the window (`limit`) and what the request needed
 * (`requested`), each only when the words give it — the optional fields of
 * {@link LlmContextOverflowError}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const overflowCounts = (message: string): { readonly limit?: number; readonly requested?: number } => {
  const limit = tokenCount(message, /(?:maximum context length is|context (?:length|size|window) of (?:only )?|>)\s*([\d,]+)/i)
  const requested = tokenCount(message, /(?:you requested (?:about )?|resulted in|prompt is too long:)\s*([\d,]+)/i)
  return { ...(limit === undefined ? {} : { limit }), ...(requested === undefined ? {} : { requested }) }
}

/**
 * A text with the API key replaced by `[redacted]` wherever it is written, as it is or
 * URL-encoded: a key of {@link keyLengthScrubbedAnywhere} characters or more inside words too
 * (`Bearer%20<key>`, `<key>-expired`, an escape before it in quoted JSON); a shorter key only
 * where it stands on its own, so that a placeholder key (`EMPTY`, `k`) does not mangle the
 * words of a message. For adapters, whose messages are built from a provider's words and
 * network errors, neither of which should hold the key.
 *
 * @since 0.1.0
 * @category utils
 */
export const scrubKey = (text: string, key: string): string => {
  if (key.length === 0) return text
  const encoded = encodeURIComponent(key)
  const scrubbed = scrubOne(text, key)
  return encoded === key ? scrubbed : scrubOne(scrubbed, encoded)
}

/**
 * The length from which {@link scrubKey} replaces a key inside words too: real keys are
 * longer (`sk-` and 32 characters or more); placeholders for local servers are shorter.
 *
 * @since 0.1.0
 * @category utils
 */
export const keyLengthScrubbedAnywhere = 12

const scrubOne = (text: string, key: string): string => {
  const anywhere = key.length >= keyLengthScrubbedAnywhere
  let scrubbed = ""
  let from = 0
  for (let at = text.indexOf(key, from); at !== -1; at = text.indexOf(key, anywhere ? from : at + 1)) {
    if (at < from || (!anywhere && (partOfWord(text, at - 1) || partOfWord(text, at + key.length)))) continue
    scrubbed += `${text.slice(from, at)}[redacted]`
    from = at + key.length
  }
  return scrubbed + text.slice(from)
}

const partOfWord = (text: string, at: number): boolean => at >= 0 && at < text.length && /[\w-]/.test(text[at]!)

/**
 * Milliseconds to wait before retrying, from a response's headers (names in lower case): the
 * `retry-after-ms` header some OpenAI-compatible servers send, else `retry-after` as
 * delay-seconds (possibly fractional) or an HTTP date. `undefined` when absent or unreadable;
 * a date in the past is 0; a wait past a safe integer is bounded to one ({@link boundedWait}).
 * For adapters building an {@link LlmRateLimitError}.
 *
 * @since 0.1.0
 * @category utils
 */
export const retryAfterMillis = (
  headers: Readonly<Record<string, string | undefined>>,
  now: number
): number | undefined => {
  const ms = headers["retry-after-ms"]
  if (ms !== undefined && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return boundedWait(Number(ms))
  const value = headers["retry-after"]?.trim()
  if (value === undefined || value === "") return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return boundedWait(Number(value) * 1000)
  // An HTTP date names a weekday or month, which a bare number or garbage does not.
  if (!/[a-z]/i.test(value)) return undefined
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : boundedWait(date - now)
}

/**
 * A wait in milliseconds as {@link LlmRateLimitError}'s `retryAfterMillis` holds it: rounded
 * up, at least 0, at most `Number.MAX_SAFE_INTEGER`. A provider asking for longer (a
 * `Retry-After` of twenty digits, a `Duration` of centuries) asks for longer than anyone waits;
 * unbounded, the error's constructor would throw on it. An infinite wait is the longest.
 *
 * @since 0.1.0
 * @category utils
 */
export const boundedWait = (millis: number): number =>
  Number.isNaN(millis) ? 0 : Math.min(Math.max(0, Math.ceil(millis)), Number.MAX_SAFE_INTEGER)
