/**
 * The shapes of Anthropic's Messages API (`POST /v1/messages` with `stream: true`): what a
 * request body holds, and what the events of a streamed answer carry.
 *
 * Requests are plain TypeScript types (this package builds them, field by field, in
 * `RequestBody`). Events are checked before anything reads them: the rare ones (a message's
 * start and end, a block's start, an error) through the Schemas below, the frequent one
 * (`content_block_delta`, one per few characters of the answer) by {@link readDelta}, a
 * hand-written check of the same rules, because it runs hundreds of thousands of times per
 * long answer. Fields the adapter does not read are allowed and ignored, so additions to the
 * API do not break decoding.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

// ---------------------------------------------------------------------------------------------
// requests
// ---------------------------------------------------------------------------------------------

/**
 * A cache breakpoint: everything up to and including the block carrying it is a prompt-cache
 * prefix. `ttl` is sent only for the one-hour cache.
 *
 * @since 0.1.0
 * @category request
 */
export interface CacheControl {
  readonly type: "ephemeral"
  readonly ttl?: "1h"
}

/**
 * @since 0.1.0
 * @category request
 */
export interface TextBlock {
  readonly type: "text"
  readonly text: string
  readonly cache_control?: CacheControl
}

/**
 * @since 0.1.0
 * @category request
 */
export interface ImageBlock {
  readonly type: "image"
  readonly source: { readonly type: "base64"; readonly media_type: string; readonly data: string }
  readonly cache_control?: CacheControl
}

/**
 * A thinking block sent back as the model wrote it, with its signature.
 *
 * @since 0.1.0
 * @category request
 */
export interface ThinkingBlock {
  readonly type: "thinking"
  readonly thinking: string
  readonly signature: string
}

/**
 * Thinking the API returned encrypted; sent back as it came.
 *
 * @since 0.1.0
 * @category request
 */
export interface RedactedThinkingBlock {
  readonly type: "redacted_thinking"
  readonly data: string
}

/**
 * A tool call as the assistant message of a request carries it. `input` is a JSON object;
 * `RequestBody.encode` writes the model's own argument text there verbatim.
 *
 * @since 0.1.0
 * @category request
 */
export interface ToolUseBlock {
  readonly type: "tool_use"
  readonly id: string
  readonly name: string
  readonly input: unknown
  readonly cache_control?: CacheControl
}

/**
 * @since 0.1.0
 * @category request
 */
export interface ToolResultBlock {
  readonly type: "tool_result"
  readonly tool_use_id: string
  readonly content?: ReadonlyArray<TextBlock | ImageBlock>
  readonly is_error?: true
  readonly cache_control?: CacheControl
}

/**
 * A block of a kind this package does not model (a server tool's call or result), sent back
 * as the API returned it.
 *
 * @since 0.1.0
 * @category request
 */
export interface OtherBlock {
  readonly type: string
  readonly [key: string]: unknown
}

/**
 * @since 0.1.0
 * @category request
 */
export type ContentBlock =
  | TextBlock
  | ImageBlock
  | ThinkingBlock
  | RedactedThinkingBlock
  | ToolUseBlock
  | ToolResultBlock
  | OtherBlock

/**
 * @since 0.1.0
 * @category request
 */
export interface Message {
  readonly role: "user" | "assistant"
  readonly content: ReadonlyArray<ContentBlock>
}

/**
 * @since 0.1.0
 * @category request
 */
export interface Tool {
  readonly name: string
  readonly description: string
  readonly input_schema: unknown
  readonly cache_control?: CacheControl
}

/**
 * @since 0.1.0
 * @category request
 */
export type ToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "any" }
  | { readonly type: "none" }
  | { readonly type: "tool"; readonly name: string }

/**
 * Extended thinking: on with a token budget (older models), adaptive (the model decides;
 * newer models), or off.
 *
 * @since 0.1.0
 * @category request
 */
export type Thinking =
  | { readonly type: "enabled"; readonly budget_tokens: number }
  | { readonly type: "adaptive" }
  | { readonly type: "disabled" }

/**
 * The body of `POST /v1/messages`, keys in the order they are written.
 *
 * @since 0.1.0
 * @category request
 */
export interface MessagesRequest {
  readonly model: string
  readonly max_tokens: number
  readonly system?: ReadonlyArray<TextBlock>
  readonly tools?: ReadonlyArray<Tool>
  readonly tool_choice?: ToolChoice
  readonly thinking?: Thinking
  readonly output_config?: { readonly effort: string }
  readonly temperature?: number
  readonly stop_sequences?: ReadonlyArray<string>
  readonly stream: true
  readonly messages: ReadonlyArray<Message>
}

// ---------------------------------------------------------------------------------------------
// events
// ---------------------------------------------------------------------------------------------

// The API writes `null` for absent values in places (`stop_reason`, cache counts).
const optional = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * Token counts. `input_tokens` excludes what was read from or written to the prompt cache
 * (`cache_read_input_tokens`, `cache_creation_input_tokens`); `output_tokens` includes
 * thinking. `message_start` carries the input counts; `message_delta` the final output count
 * and, on newer API versions, the input counts again (cumulative, not increments).
 *
 * @since 0.1.0
 * @category events
 */
export const Usage = Schema.Struct({
  input_tokens: optional(Count),
  output_tokens: optional(Count),
  cache_creation_input_tokens: optional(Count),
  cache_read_input_tokens: optional(Count)
})

/**
 * @since 0.1.0
 * @category events
 */
export type Usage = typeof Usage.Type

/**
 * `message_start`: the answer's envelope, before any content.
 *
 * @since 0.1.0
 * @category events
 */
export const MessageStart = Schema.Struct({
  type: Schema.Literal("message_start"),
  message: Schema.Struct({
    id: optional(Schema.String),
    model: optional(Schema.String),
    usage: optional(Usage)
  })
})

/**
 * @since 0.1.0
 * @category events
 */
export type MessageStart = typeof MessageStart.Type

/**
 * `message_delta`: why the answer stopped, and the final usage.
 *
 * @since 0.1.0
 * @category events
 */
export const MessageDelta = Schema.Struct({
  type: Schema.Literal("message_delta"),
  delta: optional(Schema.Struct({
    stop_reason: optional(Schema.String),
    stop_sequence: optional(Schema.String)
  })),
  usage: optional(Usage)
})

/**
 * @since 0.1.0
 * @category events
 */
export type MessageDelta = typeof MessageDelta.Type

/**
 * The block a `content_block_start` opens. `text` and `thinking` usually start empty,
 * `tool_use` with `input: {}` (its input streams as `input_json_delta`s), `redacted_thinking`
 * whole. Any other `type` (a server tool's call or result) is kept as the API sent it: the
 * decoder hands the translator the parsed JSON itself, with every field.
 *
 * @since 0.1.0
 * @category events
 */
export const StartedBlock = Schema.Struct({
  type: Schema.String,
  text: Schema.optionalKey(Schema.String),
  thinking: Schema.optionalKey(Schema.String),
  signature: optional(Schema.String),
  data: Schema.optionalKey(Schema.String),
  id: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(Schema.String),
  input: Schema.optionalKey(Schema.Unknown)
})

/**
 * @since 0.1.0
 * @category events
 */
export type StartedBlock = typeof StartedBlock.Type

/**
 * `content_block_start`.
 *
 * @since 0.1.0
 * @category events
 */
export const BlockStart = Schema.Struct({
  type: Schema.Literal("content_block_start"),
  index: Count,
  content_block: StartedBlock
})

/**
 * @since 0.1.0
 * @category events
 */
export type BlockStart = typeof BlockStart.Type

/**
 * `error`: the API failed after the response started. `error.type` names the failure
 * (`overloaded_error`, `rate_limit_error`, `api_error`, …); it is left unchecked here because
 * whatever a server sends there still means the answer failed, and `Failure.fromStreamError`
 * reads it totally.
 *
 * @since 0.1.0
 * @category events
 */
export const ErrorEvent = Schema.Struct({
  type: Schema.Literal("error"),
  error: Schema.Unknown
})

/**
 * The JSON body of an error response: `{"type": "error", "error": {"type", "message"}}`.
 *
 * @since 0.1.0
 * @category events
 */
export const ErrorBody = Schema.Struct({
  error: Schema.Struct({
    type: optional(Schema.String),
    message: Schema.String
  }),
  request_id: optional(Schema.String)
})

/**
 * What a `content_block_delta` adds to its block: the `delta` object of the event, checked.
 *
 * @since 0.1.0
 * @category events
 */
export type Delta =
  | { readonly type: "text_delta"; readonly text: string }
  | { readonly type: "thinking_delta"; readonly thinking: string }
  | { readonly type: "signature_delta"; readonly signature: string }
  | { readonly type: "input_json_delta"; readonly partial_json: string }

// a safe integer: 1e308 is an integer too, and no block has that index
const isIndex = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value) && value >= 0

/**
 * Reads the `index` of a parsed `content_block_delta` or `content_block_stop` payload: a
 * non-negative safe integer, or what is wrong with it, in words.
 *
 * @since 0.1.0
 * @category events
 */
export const readIndex = (json: Readonly<Record<string, unknown>>): number | string => {
  const index = json["index"]
  return isIndex(index) ? index : "its index is not a non-negative safe integer"
}

/**
 * Checks the `delta` of a parsed `content_block_delta` payload: an object whose `type` is a
 * string; a known type must carry its field as a string. Returns the delta object itself (no
 * copy: this runs once per few characters of an answer), `null` for a delta type this package
 * does not know (e.g. `citations_delta`, skipped), or what is wrong with it, in words.
 *
 * @since 0.1.0
 * @category events
 */
export const readDelta = (json: Readonly<Record<string, unknown>>): Delta | null | string => {
  const delta = json["delta"]
  if (typeof delta !== "object" || delta === null || Array.isArray(delta)) return "it has no delta object"
  const fields = delta as Readonly<Record<string, unknown>>
  switch (fields["type"]) {
    case "text_delta":
      return typeof fields["text"] === "string" ? delta as Delta : "its text_delta has no string text"
    case "thinking_delta":
      return typeof fields["thinking"] === "string" ? delta as Delta : "its thinking_delta has no string thinking"
    case "signature_delta":
      return typeof fields["signature"] === "string" ? delta as Delta : "its signature_delta has no string signature"
    case "input_json_delta":
      return typeof fields["partial_json"] === "string" ? delta as Delta : "its input_json_delta has no string partial_json"
    default:
      return typeof fields["type"] === "string" ? null : "its delta has no type"
  }
}
