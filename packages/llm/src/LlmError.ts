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
