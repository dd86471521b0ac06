/**
 * The catalog of stable error codes. A code is public API: tool results, session `error`
 * events and retry/sandbox layers match on it, so a code is never renamed or reused.
 * `docs/errors.md` renders this table and a test keeps the two identical.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * Every code with its meaning and the package that raises it.
 *
 * @since 0.1.0
 * @category catalog
 */
export const catalog = {
  LLM_AUTH: {
    meaning: "The provider rejected the credentials (HTTP 401/403) or none were configured.",
    raisedBy: "@dsh/llm (LlmAuthError), raised by model adapters"
  },
  LLM_RATE_LIMIT: {
    meaning: "The provider throttled the request (HTTP 429); `retryAfterMillis` says when to retry, if known.",
    raisedBy: "@dsh/llm (LlmRateLimitError), raised by model adapters"
  },
  LLM_INVALID_REQUEST: {
    meaning: "The provider refused the request as malformed (HTTP 400); the message carries the provider's reason.",
    raisedBy: "@dsh/llm (LlmInvalidRequestError), raised by model adapters"
  },
  LLM_SERVER: {
    meaning: "The provider failed on its side (HTTP 5xx or an error event in the stream).",
    raisedBy: "@dsh/llm (LlmServerError), raised by model adapters"
  },
  LLM_PROTOCOL: {
    meaning: "The response broke the wire or chunk protocol: malformed SSE or JSON, a stream cut short, chunks out of order.",
    raisedBy: "@dsh/llm (LlmProtocolError), raised by model adapters and by Model.generate for a stream without finish"
  },
  LLM_TRANSPORT: {
    meaning: "The connection failed or stalled before the response completed (network error, idle timeout).",
    raisedBy: "@dsh/llm (LlmTransportError), raised by model adapters"
  },
  NO_MODEL: {
    meaning: "No registered adapter serves the requested model name; the message lists the models that are registered.",
    raisedBy: "@dsh/model (NoModelError), raised by the model registry"
  },
  MODEL_CONFLICT: {
    meaning: "An adapter claimed a model name that another registered adapter already serves.",
    raisedBy: "@dsh/model (ModelConflictError), raised by the model registry"
  },
  MIDDLEWARE: {
    meaning: "A middleware (around any seam) failed or died; the message names the middleware.",
    raisedBy: "@dsh/llm (MiddlewareError), raised by middleware chains"
  },
  SCRIPT_EXHAUSTED: {
    meaning: "The scripted test model received more requests than it was scripted to answer.",
    raisedBy: "@dsh/model (ScriptExhaustedError), raised by the scripted model"
  }
} as const

/**
 * A stable error code.
 *
 * @since 0.1.0
 * @category models
 */
export type ErrorCode = keyof typeof catalog

/**
 * All codes, in catalog order.
 *
 * @since 0.1.0
 * @category catalog
 */
export const codes: ReadonlyArray<ErrorCode> = Object.keys(catalog) as Array<ErrorCode>

/**
 * Schema of a stable error code.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorCode = Schema.Literals(codes as [ErrorCode, ...Array<ErrorCode>])
