/**
 * The DeepSeek wire: the JSON DeepSeek's chat completions endpoint (`POST /chat/completions`,
 * OpenAI-compatible) takes and streams back.
 *
 * The request types are plain interfaces: the adapter builds request bodies itself, in a fixed
 * key order, so that one history always serializes to the same bytes (see `RequestBody`).
 * What comes back is untrusted input, so the stream chunk and the error body are Schemas,
 * decoded before anything reads them. They accept what OpenAI-compatible servers send besides
 * DeepSeek's own fields (`prompt_tokens_details.cached_tokens`, `null` for absent values), so
 * the decoder and the test fixtures serve other OpenAI-compatible adapters too.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

// ---------------------------------------------------------------------------------------------
// requests
// ---------------------------------------------------------------------------------------------

/**
 * A tool call as the assistant message of a request carries it.
 *
 * @since 0.1.0
 * @category request
 */
export interface ToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

/**
 * A message of a request.
 *
 * @since 0.1.0
 * @category request
 */
export type Message =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string }
  | {
    readonly role: "assistant"
    readonly content: string
    readonly reasoning_content?: string
    readonly tool_calls?: ReadonlyArray<ToolCall>
  }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string }

/**
 * A tool the model may call.
 *
 * @since 0.1.0
 * @category request
 */
export interface Tool {
  readonly type: "function"
  readonly function: {
    readonly name: string
    readonly description: string
    readonly parameters: unknown
    readonly strict?: boolean
  }
}

/**
 * How the model may use tools.
 *
 * @since 0.1.0
 * @category request
 */
export type ToolChoice =
  | "auto"
  | "none"
  | "required"
  | { readonly type: "function"; readonly function: { readonly name: string } }

/**
 * The body of `POST /chat/completions`.
 *
 * @since 0.1.0
 * @category request
 */
export interface ChatRequest {
  readonly model: string
  readonly messages: ReadonlyArray<Message>
  readonly tools?: ReadonlyArray<Tool>
  readonly tool_choice?: ToolChoice
  readonly thinking?: { readonly type: "enabled" | "disabled" }
  readonly reasoning_effort?: "high" | "max"
  readonly temperature?: number
  readonly max_tokens?: number
  readonly stop?: ReadonlyArray<string>
  readonly stream: true
  readonly stream_options: { readonly include_usage: true }
}

// ---------------------------------------------------------------------------------------------
// responses
// ---------------------------------------------------------------------------------------------

// Servers write `null` for absent values as often as they leave keys out.
const optional = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * A fragment of a tool call inside a delta. `index` says which call it continues (some servers
 * leave it out, or give every call the same one); the id and name usually arrive once, the
 * arguments in fragments.
 *
 * @since 0.1.0
 * @category response
 */
export const ToolCallDelta = Schema.Struct({
  index: optional(Count),
  id: optional(Schema.String),
  type: optional(Schema.String),
  function: optional(Schema.Struct({
    name: optional(Schema.String),
    arguments: optional(Schema.String)
  }))
})

/**
 * @since 0.1.0
 * @category response
 */
export type ToolCallDelta = typeof ToolCallDelta.Type

/**
 * What one chunk adds to a choice.
 *
 * @since 0.1.0
 * @category response
 */
export const Delta = Schema.Struct({
  role: optional(Schema.String),
  content: optional(Schema.String),
  reasoning_content: optional(Schema.String),
  tool_calls: optional(Schema.Array(ToolCallDelta))
})

/**
 * @since 0.1.0
 * @category response
 */
export type Delta = typeof Delta.Type

/**
 * @since 0.1.0
 * @category response
 */
export const Choice = Schema.Struct({
  index: Count,
  delta: optional(Delta),
  finish_reason: optional(Schema.String)
})

/**
 * Token counts. DeepSeek reports its prompt cache as `prompt_cache_hit_tokens` +
 * `prompt_cache_miss_tokens` (= `prompt_tokens`); OpenAI-compatible servers report hits as
 * `prompt_tokens_details.cached_tokens`.
 *
 * @since 0.1.0
 * @category response
 */
export const Usage = Schema.Struct({
  prompt_tokens: Count,
  completion_tokens: Count,
  total_tokens: optional(Count),
  prompt_cache_hit_tokens: optional(Count),
  prompt_cache_miss_tokens: optional(Count),
  prompt_tokens_details: optional(Schema.Struct({ cached_tokens: optional(Count) })),
  completion_tokens_details: optional(Schema.Struct({ reasoning_tokens: optional(Count) }))
})

/**
 * @since 0.1.0
 * @category response
 */
export type Usage = typeof Usage.Type

/**
 * An error a server reports instead of an answer, in a body or inside the stream.
 *
 * @since 0.1.0
 * @category response
 */
export const ErrorDetail = Schema.Struct({
  message: Schema.String,
  type: optional(Schema.String),
  code: optional(Schema.Union([Schema.String, Schema.Number]))
})

/**
 * One `data:` payload of the stream. The final chunk of a response may carry only `usage`
 * (with `choices: []`); a server that fails mid-stream may send `{ "error": … }`. That error
 * is left unchecked: servers send an `ErrorDetail`, a bare string, a message that is not a
 * string, and each of them still means the server failed (`Failure.fromStreamError` reads
 * whatever it is), where refusing it as a malformed chunk would hide what the server said.
 *
 * @since 0.1.0
 * @category response
 */
export const ChatChunk = Schema.Struct({
  id: optional(Schema.String),
  choices: optional(Schema.Array(Choice)),
  usage: optional(Usage),
  error: optional(Schema.Unknown)
})

/**
 * @since 0.1.0
 * @category response
 */
export type ChatChunk = typeof ChatChunk.Type

/**
 * The JSON body of an error response (`{ "error": { "message": … } }`).
 *
 * @since 0.1.0
 * @category response
 */
export const ErrorBody = Schema.Struct({ error: ErrorDetail })
