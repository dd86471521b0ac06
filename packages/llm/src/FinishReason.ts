/**
 * Why a model response ended. `kind` is what consumers switch on; `raw` keeps the provider's
 * own word for it (e.g. `"tool_calls"`).
 *
 * A response that failed ends with `error` (carrying the failure's code) and one that was
 * stopped on purpose with `aborted`: an adapter may report a failure this way instead of
 * failing its stream, and consumers handle both. A provider's reason that fits none of the
 * built-in kinds is an `other` with its own `name`; this is the extension point, so a new
 * reason needs no change to this package.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const raw = Schema.optionalKey(Schema.String)

/**
 * The model finished its answer.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Stop = Schema.Struct({ kind: Schema.tag("stop"), raw })

/**
 * The answer hit the output token limit.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Length = Schema.Struct({ kind: Schema.tag("length"), raw })

/**
 * The model stopped to have tools called.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolCalls = Schema.Struct({ kind: Schema.tag("tool-calls"), raw })

/**
 * The provider filtered the answer.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContentFilter = Schema.Struct({ kind: Schema.tag("content-filter"), raw })

/**
 * The response failed; `code` is a stable error code.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Error = Schema.Struct({
  kind: Schema.tag("error"),
  code: Schema.String,
  message: Schema.String,
  raw
})

/**
 * The response was stopped on purpose.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Aborted = Schema.Struct({
  kind: Schema.tag("aborted"),
  reason: Schema.optionalKey(Schema.String),
  raw
})

/**
 * A reason outside the built-in kinds, named by the adapter that reports it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Other = Schema.Struct({ kind: Schema.tag("other"), name: Schema.String, raw })

/**
 * @since 0.1.0
 * @category schemas
 */
export const FinishReason = Schema.Union([Stop, Length, ToolCalls, ContentFilter, Error, Aborted, Other])
  .annotate({ identifier: "FinishReason" })

/**
 * @since 0.1.0
 * @category models
 */
export type FinishReason = typeof FinishReason.Type

/**
 * @since 0.1.0
 * @category models
 */
export type Kind = FinishReason["kind"]

/**
 * @since 0.1.0
 * @category constructors
 */
export const stop: FinishReason = { kind: "stop" }

/**
 * @since 0.1.0
 * @category constructors
 */
export const length: FinishReason = { kind: "length" }

/**
 * @since 0.1.0
 * @category constructors
 */
export const toolCalls: FinishReason = { kind: "tool-calls" }

/**
 * @since 0.1.0
 * @category constructors
 */
export const contentFilter: FinishReason = { kind: "content-filter" }

/**
 * @since 0.1.0
 * @category constructors
 */
export const error = (code: string, message: string): FinishReason => ({ kind: "error", code, message })

/**
 * @since 0.1.0
 * @category constructors
 */
export const aborted = (reason?: string): FinishReason =>
  reason === undefined ? { kind: "aborted" } : { kind: "aborted", reason }

/**
 * @since 0.1.0
 * @category constructors
 */
export const other = (name: string): FinishReason => ({ kind: "other", name })

/**
 * Whether the response ended in failure (`error` or `aborted`): such a step did not produce
 * a usable answer.
 *
 * @since 0.1.0
 * @category guards
 */
export const isFailure = (reason: FinishReason): boolean => reason.kind === "error" || reason.kind === "aborted"
