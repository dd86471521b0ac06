/**
 * The DeepSeek wire: the JSON DeepSeek's chat completions endpoint (`POST /chat/completions`,
 * OpenAI-compatible) takes and streams back — `@dsh/openai`'s `Wire`, re-exported, which
 * accepts DeepSeek's own fields (`reasoning_content`, `prompt_cache_hit_tokens`, `thinking`)
 * besides the others'.
 *
 * @since 0.1.0
 */
import { Wire } from "@dsh/openai"

/**
 * A tool call as the assistant message of a request carries it.
 *
 * @since 0.1.0
 * @category request
 */
export type ToolCall = Wire.ToolCall

/**
 * A message of a request.
 *
 * @since 0.1.0
 * @category request
 */
export type Message = Wire.Message

/**
 * A tool the model may call.
 *
 * @since 0.1.0
 * @category request
 */
export type Tool = Wire.Tool

/**
 * How the model may use tools.
 *
 * @since 0.1.0
 * @category request
 */
export type ToolChoice = Wire.ToolChoice

/**
 * The body of `POST /chat/completions`.
 *
 * @since 0.1.0
 * @category request
 */
export type ChatRequest = Wire.ChatRequest

/**
 * A fragment of a tool call inside a delta.
 *
 * @since 0.1.0
 * @category response
 */
export const ToolCallDelta = Wire.ToolCallDelta

/**
 * @since 0.1.0
 * @category response
 */
export type ToolCallDelta = Wire.ToolCallDelta

/**
 * What one chunk adds to a choice.
 *
 * @since 0.1.0
 * @category response
 */
export const Delta = Wire.Delta

/**
 * @since 0.1.0
 * @category response
 */
export type Delta = Wire.Delta

/**
 * One choice of a chunk.
 *
 * @since 0.1.0
 * @category response
 */
export const Choice = Wire.Choice

/**
 * @since 0.1.0
 * @category response
 */
export type Choice = Wire.Choice

/**
 * Token counts (`prompt_cache_hit_tokens` + `prompt_cache_miss_tokens` = `prompt_tokens`).
 *
 * @since 0.1.0
 * @category response
 */
export const Usage = Wire.Usage

/**
 * @since 0.1.0
 * @category response
 */
export type Usage = Wire.Usage

/**
 * An error a server reports instead of an answer.
 *
 * @since 0.1.0
 * @category response
 */
export const ErrorDetail = Wire.ErrorDetail

/**
 * One `data:` payload of the stream.
 *
 * @since 0.1.0
 * @category response
 */
export const ChatChunk = Wire.ChatChunk

/**
 * @since 0.1.0
 * @category response
 */
export type ChatChunk = Wire.ChatChunk

/**
 * The JSON body of an error response.
 *
 * @since 0.1.0
 * @category response
 */
export const ErrorBody = Wire.ErrorBody
