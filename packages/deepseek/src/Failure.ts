/**
 * How a failed DeepSeek call becomes a typed `LlmError`: `@dsh/openai`'s `Failure`, re-exported
 * (HTTP statuses, `Retry-After`, transport failures, errors reported inside the stream; every
 * message scrubbed of the key). DeepSeek's 402 (insufficient balance) is an `LlmAuthError`.
 *
 * @since 0.1.0
 */
import { Failure } from "@dsh/openai"

/**
 * Cuts text to a readable excerpt.
 *
 * @since 0.1.0
 * @category utils
 */
export const excerpt: typeof Failure.excerpt = Failure.excerpt

/**
 * Replaces every occurrence of the key in a text.
 *
 * @since 0.1.0
 * @category utils
 */
export const scrub: typeof Failure.scrub = Failure.scrub

/**
 * The same error with the key scrubbed from its message.
 *
 * @since 0.1.0
 * @category utils
 */
export const scrubError: typeof Failure.scrubError = Failure.scrubError

/**
 * What an error body says: the provider's message, code and type.
 *
 * @since 0.1.0
 * @category models
 */
export type Reported = Failure.Reported

/**
 * Reads an error body in the shapes servers use.
 *
 * @since 0.1.0
 * @category utils
 */
export const reported: typeof Failure.reported = Failure.reported

/**
 * The provider's explanation in an error body, or nothing.
 *
 * @since 0.1.0
 * @category utils
 */
export const providerMessage: typeof Failure.providerMessage = Failure.providerMessage

/**
 * Milliseconds to wait, from `Retry-After` (seconds or an HTTP date) or `retry-after-ms`.
 *
 * @since 0.1.0
 * @category utils
 */
export const retryAfterMillis: typeof Failure.retryAfterMillis = Failure.retryAfterMillis

/**
 * What a non-2xx response means.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromStatus: typeof Failure.fromStatus = Failure.fromStatus

/**
 * The chain of messages of an error and its causes.
 *
 * @since 0.1.0
 * @category utils
 */
export const describe: typeof Failure.describe = Failure.describe

/**
 * The codes of the failures a model call has.
 *
 * @since 0.1.0
 * @category models
 */
export type LlmCode = Failure.LlmCode

/**
 * The catalog code an error reported inside a stream means.
 *
 * @since 0.1.0
 * @category mapping
 */
export const streamErrorCode: typeof Failure.streamErrorCode = Failure.streamErrorCode

/**
 * The typed failure of an error the server reported inside a stream.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromStreamError: typeof Failure.fromStreamError = Failure.fromStreamError
