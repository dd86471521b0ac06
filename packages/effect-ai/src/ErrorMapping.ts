/**
 * How effect/ai failures become dsh `LlmError`s with stable codes.
 *
 * An `AiError` carries a `reason` (one of effect/ai's semantic error classes); the reason, not
 * the HTTP status, decides the dsh class, because it is what every effect/ai provider reports
 * consistently. The status, when a reason carries one (`reason.http.response.status`), is kept
 * on the classes that have a `status` field. The mapping is chosen by what a caller should do
 * next, which is what `LlmError.isRetryable` and the codes encode:
 *
 * | effect/ai reason | dsh error | code | why |
 * |---|---|---|---|
 * | `RateLimitError` | `LlmRateLimitError` | `LLM_RATE_LIMIT` | `retryAfter` becomes `retryAfterMillis` |
 * | `QuotaExhaustedError` | `LlmAuthError` | `LLM_AUTH` | retrying cannot help: the account must be fixed (billing), like bad credentials; a throttling code would make retry layers spin |
 * | `AuthenticationError` | `LlmAuthError` | `LLM_AUTH` | |
 * | `InvalidRequestError` whose message says the context window was exceeded ("maximum context length is …", "prompt is too long: …") | `LlmContextOverflowError` | `LLM_CONTEXT_OVERFLOW` | the loop compacts the history and asks again; `limit` and `requested` when the words name them |
 * | `InvalidRequestError`, `InvalidUserInputError` | `LlmInvalidRequestError` | `LLM_INVALID_REQUEST` | |
 * | `ContentPolicyError` | `LlmInvalidRequestError` | `LLM_INVALID_REQUEST` | raised when the provider refuses the request's content; the same request fails again (a filtered *answer* is a `content-filter` finish instead) |
 * | `UnsupportedSchemaError`, `ToolConfigurationError`, `ToolkitRequiredError` | `LlmInvalidRequestError` | `LLM_INVALID_REQUEST` | the tools or prompt as sent cannot be used |
 * | `NetworkError` (`TransportError`) | `LlmTransportError` | `LLM_TRANSPORT` | |
 * | `NetworkError` (`EncodeError`, `InvalidUrlError`) | `LlmInvalidRequestError` | `LLM_INVALID_REQUEST` | the request could not be built or addressed; resending it fails the same way |
 * | `InternalProviderError` | `LlmServerError` | `LLM_SERVER` | |
 * | `InvalidResponseError`, `InvalidOutputError`, `StructuredOutputError` | `LlmProtocolError` | `LLM_PROTOCOL` | the provider's answer did not decode |
 * | `ToolNotFoundError`, `ToolParameterValidationError` | `LlmProtocolError` | `LLM_PROTOCOL` | a tool call in the answer broke the protocol (e.g. a provider that parses arguments itself met arguments that are not JSON) |
 * | `InvalidToolResultError`, `ToolResultEncodingError` | `LlmProtocolError` | `LLM_PROTOCOL` | only raised when effect/ai runs tool handlers, which the bridge never lets it do |
 * | `UnknownError` with an HTTP status | by status: 401/402/403 auth, 408 transport, 429 rate limit (`retryAfterMillis` from the response's `retry-after-ms` / `Retry-After`), 400/413/422 saying the context was exceeded overflow, 5xx server, other 4xx invalid request | | as the native adapters read statuses |
 * | `UnknownError` without a status | `LlmServerError` | `LLM_SERVER` | the provider failed without saying how; treated as its side (retryable), which is the safe guess for an unclassified failure |
 * | a reason this module does not know (a newer effect) | `LlmServerError` | `LLM_SERVER` | same reasoning as `UnknownError` |
 * | a failure that is not an `AiError` | `LlmProtocolError` | `LLM_PROTOCOL` | the provider broke `LanguageModel`'s own error contract |
 * | a defect (the provider's stream died: a thrown exception, `Effect.die`) | `LlmProtocolError` | `LLM_PROTOCOL` | the same: a provider reports failures as `AiError`s, so dying is breaking its contract (typically its code met an answer it could not handle); the message keeps the defect's message |
 *
 * An `error` part inside the response stream is mapped by {@link fromErrorPart}: an `AiError`
 * or reason by the table, anything else to `LlmServerError` (an error the provider reported
 * in its stream, which is what `LLM_SERVER` covers).
 *
 * Every mapped error keeps the original as its `cause`.
 *
 * @since 0.1.0
 */
import { LlmError } from "@dsh/llm"
import * as Duration from "effect/Duration"
import * as Predicate from "effect/Predicate"
import { AiError } from "effect/ai"

/**
 * The HTTP status a reason carries, if any.
 */
const statusOf = (reason: AiError.AiErrorReason): number | undefined => {
  const http = (reason as { readonly http?: { readonly response?: { readonly status?: unknown } } }).http
  const status = http?.response?.status
  return typeof status === "number" ? status : undefined
}

// The response's headers that are not redacted, by lower-case name.
const plainHeaders = (reason: AiError.AiErrorReason): Record<string, string> => {
  const http = (reason as { readonly http?: { readonly response?: { readonly headers?: unknown } } }).http
  const headers = http?.response?.headers
  if (typeof headers !== "object" || headers === null) return {}
  const plain: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) if (typeof value === "string") plain[name.toLowerCase()] = value
  return plain
}

const withStatus = (status: number | undefined): { readonly status?: number } =>
  status === undefined ? {} : { status }

const retryAfterMillis = (retryAfter: Duration.Duration | undefined): { readonly retryAfterMillis?: number } => {
  if (retryAfter === undefined) return {}
  const millis = Duration.toMillis(retryAfter)
  // an infinite or negative hint is no hint: the field must be a finite non-negative integer
  return Number.isFinite(millis) && millis >= 0 ? { retryAfterMillis: LlmError.boundedWait(millis) } : {}
}

/**
 * The dsh error for an HTTP status, for failures that carry nothing more specific.
 *
 * @since 0.1.0
 * @category mapping
 */
export const fromStatus = (status: number, message: string, cause?: unknown): LlmError.LlmError => {
  const base = cause === undefined ? { message } : { message, cause }
  if (status === 401 || status === 402 || status === 403) return new LlmError.LlmAuthError({ ...base, status })
  if (status === 408) return new LlmError.LlmTransportError(base)
  if (status === 429) return new LlmError.LlmRateLimitError(base)
  if ((status === 400 || status === 413 || status === 422) && LlmError.saysContextOverflow(message)) return overflow(base)
  if (status >= 500) return new LlmError.LlmServerError({ ...base, status })
  if (status >= 400) return new LlmError.LlmInvalidRequestError({ ...base, status })
  // a non-error status reported as a failure: the provider's own protocol went wrong
  return new LlmError.LlmProtocolError({ message: `${message} (HTTP ${status})`, ...(cause === undefined ? {} : { cause }) })
}

const overflow = (base: { readonly message: string; readonly cause?: unknown }): LlmError.LlmError =>
  new LlmError.LlmContextOverflowError({ ...base, ...LlmError.overflowCounts(base.message) })

/**
 * Maps an `AiError` reason. `message` defaults to the reason's own message; `cause` to the
 * reason; `now` (epoch ms, for a `Retry-After` that is a date) to the current time.
 *
 * @since 0.1.0
 * @category mapping
 */
export const fromReason = (
  reason: AiError.AiErrorReason,
  message: string = reason.message,
  cause: unknown = reason,
  now: number = Date.now()
): LlmError.LlmError => {
  const base = { message, cause }
  const status = statusOf(reason)
  switch (reason._tag) {
    case "RateLimitError":
      return new LlmError.LlmRateLimitError({ ...base, ...retryAfterMillis(reason.retryAfter) })
    case "QuotaExhaustedError":
    case "AuthenticationError":
      return new LlmError.LlmAuthError({ ...base, ...withStatus(status) })
    case "InvalidRequestError":
      // the reason's own words: an effect/ai provider reports an overflow as an invalid request
      if (LlmError.saysContextOverflow(reason.message) || LlmError.saysContextOverflow(message)) {
        return overflow(base)
      }
      return new LlmError.LlmInvalidRequestError({ ...base, ...withStatus(status) })
    case "ContentPolicyError":
      return new LlmError.LlmInvalidRequestError({ ...base, ...withStatus(status) })
    case "InvalidUserInputError":
    case "UnsupportedSchemaError":
    case "ToolConfigurationError":
    case "ToolkitRequiredError":
      return new LlmError.LlmInvalidRequestError(base)
    case "NetworkError":
      return reason.reason === "TransportError"
        ? new LlmError.LlmTransportError(base)
        : new LlmError.LlmInvalidRequestError(base)
    case "InternalProviderError":
      return new LlmError.LlmServerError({ ...base, ...withStatus(status) })
    case "InvalidResponseError":
    case "InvalidOutputError":
    case "StructuredOutputError":
    case "ToolNotFoundError":
    case "ToolParameterValidationError":
    case "InvalidToolResultError":
    case "ToolResultEncodingError":
      return new LlmError.LlmProtocolError(base)
    case "UnknownError": {
      if (status === undefined) return new LlmError.LlmServerError(base)
      const mapped = fromStatus(status, message, cause)
      // a 429 the provider module did not classify still says when to retry in its headers
      const wait = mapped._tag === "LlmRateLimitError" ? LlmError.retryAfterMillis(plainHeaders(reason), now) : undefined
      return wait === undefined ? mapped : new LlmError.LlmRateLimitError({ ...base, retryAfterMillis: wait })
    }
    default: {
      // a reason added by a newer effect: unclassified, so treated like `UnknownError`
      const unknown: { readonly _tag: string } = reason
      return new LlmError.LlmServerError({ message: `${unknown._tag}: ${message}`, cause })
    }
  }
}

/**
 * Maps an `AiError` by its reason, keeping the `AiError`'s message (which names the provider
 * module and method) and the error itself as the cause.
 *
 * @since 0.1.0
 * @category mapping
 */
export const fromAiError = (error: AiError.AiError): LlmError.LlmError => fromReason(error.reason, error.message, error)

const describe = (u: unknown): string => {
  if (Predicate.hasProperty(u, "message") && typeof u.message === "string" && u.message !== "") return u.message
  if (typeof u === "string") return u
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

/**
 * Maps whatever an effect/ai stream failed with. Its error type is `AiError`, but a provider
 * can break that promise at run time; such a failure becomes `LlmProtocolError`.
 *
 * @since 0.1.0
 * @category mapping
 */
export const fromFailure = (failure: unknown): LlmError.LlmError => {
  if (AiError.isAiError(failure)) return fromAiError(failure)
  if (AiError.isAiErrorReason(failure)) return fromReason(failure)
  return new LlmError.LlmProtocolError({
    message: `the effect/ai model failed with something that is not an AiError: ${describe(failure)}`,
    cause: failure
  })
}

/**
 * Maps the payload of an `error` part in the response stream: an `AiError` or reason by the
 * table above, anything else to `LlmServerError` (an error event the provider sent).
 *
 * @since 0.1.0
 * @category mapping
 */
export const fromErrorPart = (error: unknown): LlmError.LlmError => {
  if (AiError.isAiError(error)) return fromAiError(error)
  if (AiError.isAiErrorReason(error)) return fromReason(error)
  return new LlmError.LlmServerError({ message: `the provider reported an error in its stream: ${describe(error)}`, cause: error })
}

/**
 * Maps a defect of an effect/ai stream (the provider's code threw, or its stream died) to
 * `LlmProtocolError`, keeping the defect's message readable and the defect as the cause.
 *
 * @since 0.1.0
 * @category mapping
 */
export const fromDefect = (defect: unknown): LlmError.LlmError =>
  new LlmError.LlmProtocolError({ message: `the effect/ai model died: ${describe(defect)}`, cause: defect })
