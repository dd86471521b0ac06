/**
 * The stream-chunk protocol every model adapter speaks.
 *
 * A response is a sequence of blocks, each opened by `block-start`, grown by deltas of its
 * kind and closed by `block-end` carrying the finished block; then `usage`, then exactly one
 * `finish`. The contract every adapter obeys and every consumer may rely on:
 *
 * - `usage` comes before `finish`, and nothing comes after `finish`;
 * - deltas for a block come between its `block-start` and its `block-end`;
 * - every `tool-call-delta` carries its call's `id`; `name` arrives at least once;
 * - tool-call arguments stay raw JSON strings end to end;
 * - an adapter reports failure either by failing the stream with a typed `LlmError` or by
 *   ending with `finish` of kind `error`/`aborted`.
 *
 * `index` is the block's position in the assembled message.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { ContentBlock } from "./Content.ts"
import { describe } from "./HarnessError.ts"
import { FinishReason } from "./FinishReason.ts"
import { CallId } from "./Ids.ts"
import { Usage } from "./Usage.ts"

const Index = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * @since 0.1.0
 * @category schemas
 */
export const BlockStart = Schema.Struct({
  type: Schema.tag("block-start"),
  index: Index,
  blockType: Schema.String
})

/**
 * @since 0.1.0
 * @category schemas
 */
export const TextDelta = Schema.Struct({
  type: Schema.tag("text-delta"),
  index: Index,
  delta: Schema.String
})

/**
 * @since 0.1.0
 * @category schemas
 */
export const ReasoningDelta = Schema.Struct({
  type: Schema.tag("reasoning-delta"),
  index: Index,
  delta: Schema.String
})

/**
 * A fragment of a tool call. `name` may arrive in any fragment (usually the first).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolCallDelta = Schema.Struct({
  type: Schema.tag("tool-call-delta"),
  index: Index,
  id: CallId,
  name: Schema.optionalKey(Schema.String),
  argumentsDelta: Schema.String
})

/**
 * @since 0.1.0
 * @category schemas
 */
export const BlockEnd = Schema.Struct({
  type: Schema.tag("block-end"),
  index: Index,
  block: ContentBlock
})

/**
 * @since 0.1.0
 * @category schemas
 */
export const UsageChunk = Schema.Struct({
  type: Schema.tag("usage"),
  usage: Usage
})

/**
 * @since 0.1.0
 * @category schemas
 */
export const Finish = Schema.Struct({
  type: Schema.tag("finish"),
  reason: FinishReason
})

/**
 * @since 0.1.0
 * @category schemas
 */
export const StreamChunk = Schema.Union([
  BlockStart,
  TextDelta,
  ReasoningDelta,
  ToolCallDelta,
  BlockEnd,
  UsageChunk,
  Finish
]).annotate({ identifier: "StreamChunk" })

/**
 * @since 0.1.0
 * @category models
 */
export type StreamChunk = typeof StreamChunk.Type

/**
 * @since 0.1.0
 * @category models
 */
export type BlockStart = typeof BlockStart.Type
/**
 * @since 0.1.0
 * @category models
 */
export type TextDelta = typeof TextDelta.Type
/**
 * @since 0.1.0
 * @category models
 */
export type ReasoningDelta = typeof ReasoningDelta.Type
/**
 * @since 0.1.0
 * @category models
 */
export type ToolCallDelta = typeof ToolCallDelta.Type
/**
 * @since 0.1.0
 * @category models
 */
export type BlockEnd = typeof BlockEnd.Type
/**
 * @since 0.1.0
 * @category models
 */
export type UsageChunk = typeof UsageChunk.Type
/**
 * @since 0.1.0
 * @category models
 */
export type Finish = typeof Finish.Type

const isIndex = (value: unknown): boolean => typeof value === "number" && Number.isSafeInteger(value) && value >= 0

const isString = (value: unknown): boolean => typeof value === "string"
const isOptionalString = (value: unknown): boolean => value === undefined || typeof value === "string"

// Hand-written like the deltas' checks: a Schema check of each block, usage and finish costs
// more than the rest of their handling in a turn (several µs each before V8 optimizes it).
const isContentBlock = (block: unknown): boolean => {
  if (typeof block !== "object" || block === null) return false
  const b = block as Record<string, unknown>
  switch (b["type"]) {
    case "text":
      return isString(b["text"])
    case "reasoning":
      return isString(b["text"]) && isOptionalString(b["signature"])
    case "tool-call":
      return isString(b["id"]) && isString(b["name"]) && isString(b["arguments"])
    case "image":
      return isString(b["mediaType"]) && isString(b["data"])
    default:
      // custom blocks and tool results are rare in an answer: their Schema says
      return isAnyContentBlock(block)
  }
}

const isAnyContentBlock = Schema.is(ContentBlock)

const isCount = (value: unknown): boolean => typeof value === "number" && Number.isSafeInteger(value) && value >= 0

const isUsage = (usage: unknown): boolean => {
  if (typeof usage !== "object" || usage === null) return false
  const u = usage as Record<string, unknown>
  return isCount(u["inputTokens"]) && isCount(u["outputTokens"]) && isCount(u["cacheReadTokens"]) &&
    isCount(u["cacheWriteTokens"]) && (u["reasoningTokens"] === undefined || isCount(u["reasoningTokens"]))
}

const isFinishReason = (reason: unknown): boolean => {
  if (typeof reason !== "object" || reason === null) return false
  const r = reason as Record<string, unknown>
  if (!isOptionalString(r["raw"])) return false
  switch (r["kind"]) {
    case "stop":
    case "length":
    case "tool-calls":
    case "content-filter":
      return true
    case "error":
      return isString(r["code"]) && isString(r["message"])
    case "aborted":
      return isOptionalString(r["reason"])
    case "other":
      return isString(r["name"])
    default:
      return false
  }
}

// what a chunk of a known type lacks, checked by hand: the deltas are most of a stream, and a
// Schema check of each would cost more than the rest of its handling
const fieldProblem = (chunk: Record<string, unknown>): string | undefined => {
  switch (chunk["type"]) {
    case "block-start":
      return !isIndex(chunk["index"]) ? "its index is no integer ≥ 0" : typeof chunk["blockType"] !== "string" ? "its blockType is no string" : undefined
    case "text-delta":
    case "reasoning-delta":
      return !isIndex(chunk["index"]) ? "its index is no integer ≥ 0" : typeof chunk["delta"] !== "string" ? "its delta is no string" : undefined
    case "tool-call-delta":
      return !isIndex(chunk["index"])
        ? "its index is no integer ≥ 0"
        // a missing id is the assembler's to repair (a later delta's id is the call's), and
        // the conformance kit's to report
        : chunk["id"] != null && typeof chunk["id"] !== "string"
        ? "its id is no string"
        : chunk["name"] !== undefined && typeof chunk["name"] !== "string"
        ? "its name is no string"
        : typeof chunk["argumentsDelta"] !== "string"
        ? "its argumentsDelta is no string"
        : undefined
    case "block-end":
      return !isIndex(chunk["index"]) ? "its index is no integer ≥ 0" : !isContentBlock(chunk["block"]) ? "its block is no content block" : undefined
    case "usage":
      return isUsage(chunk["usage"]) ? undefined : "its usage is no usage (token counts)"
    case "finish":
      return isFinishReason(chunk["reason"]) ? undefined : "its reason is no finish reason"
    default:
      return `its type is ${typeof chunk["type"] === "string" ? JSON.stringify(chunk["type"]) : describe(chunk["type"])}, no chunk type`
  }
}

/**
 * Why a value is not a stream chunk, in words naming the field, or `undefined` when it is one.
 * Meant for each chunk of a stream (the deltas are checked without Schema): the model seam
 * refuses a stream holding one that is not, rather than log it or hand it to the assembler.
 *
 * @since 0.1.0
 * @category guards
 */
export const problem = (chunk: unknown): string | undefined =>
  typeof chunk !== "object" || chunk === null || Array.isArray(chunk)
    ? `it is ${describe(chunk)}, not an object`
    : fieldProblem(chunk as Record<string, unknown>)

/**
 * @since 0.1.0
 * @category constructors
 */
export const blockStart = (index: number, blockType: string): StreamChunk => ({ type: "block-start", index, blockType })

/**
 * @since 0.1.0
 * @category constructors
 */
export const textDelta = (index: number, delta: string): StreamChunk => ({ type: "text-delta", index, delta })

/**
 * @since 0.1.0
 * @category constructors
 */
export const reasoningDelta = (index: number, delta: string): StreamChunk => ({
  type: "reasoning-delta",
  index,
  delta
})

/**
 * @since 0.1.0
 * @category constructors
 */
export const toolCallDelta = (
  index: number,
  id: CallId,
  argumentsDelta: string,
  name?: string
): StreamChunk =>
  name === undefined
    ? { type: "tool-call-delta", index, id, argumentsDelta }
    : { type: "tool-call-delta", index, id, name, argumentsDelta }

/**
 * @since 0.1.0
 * @category constructors
 */
export const blockEnd = (index: number, block: ContentBlock): StreamChunk => ({ type: "block-end", index, block })

/**
 * @since 0.1.0
 * @category constructors
 */
export const usage = (usage: Usage): StreamChunk => ({ type: "usage", usage })

/**
 * @since 0.1.0
 * @category constructors
 */
export const finish = (reason: FinishReason): StreamChunk => ({ type: "finish", reason })
