/**
 * Serializing for DeepSeek: `@dsh/openai`'s request body with the `deepseek` profile's quirks
 * (`thinking: {type}`, `reasoning_effort`, reasoning passed back as `reasoning_content` on
 * tool-calling messages, `stream_options.include_usage`). See `@dsh/openai`'s `RequestBody` for
 * the mapping and its two properties (same history, same bytes; step k+1 starts with step k).
 *
 * @since 0.1.0
 */
import type { Content, Message, ModelRequest } from "@dsh/llm"
import { Profile, Profiles, RequestBody, type Wire } from "@dsh/openai"

/**
 * The adapter settings serialization depends on.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  /** Thinking mode on (`true`), off (`false`), or the provider's default (`undefined`: not sent). */
  readonly thinking: boolean | undefined
  /** Sent only when thinking is not off. */
  readonly reasoningEffort: "high" | "max" | undefined
}

const quirks = Profile.resolveQuirks(Profiles.deepseek.quirks)

const withQuirks = (settings: Settings): RequestBody.Settings => ({
  thinking: settings.thinking,
  reasoningEffort: settings.reasoningEffort,
  quirks
})

/**
 * A block as text, for the string content of system, user and tool messages; `undefined` for
 * blocks that have no text form there.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderBlock: (block: Content.ContentBlock) => string | undefined = RequestBody.renderBlock

/**
 * The text of a `tool` message for a tool result.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderToolResult: (block: Content.ToolResultBlock) => string = RequestBody.renderToolResult

/**
 * The wire messages of one dsh message (a user message with tool results becomes several).
 *
 * @since 0.1.0
 * @category serialization
 */
export const message = (m: Message.Message, settings: Settings): ReadonlyArray<Wire.Message> =>
  RequestBody.message(m, withQuirks(settings))

/**
 * The wire messages of a request: the system prompt, then the history.
 *
 * @since 0.1.0
 * @category serialization
 */
export const messages = (request: ModelRequest.ModelRequest, settings: Settings): Array<Wire.Message> =>
  RequestBody.messages(request, withQuirks(settings))

/**
 * The request body as an object, keys in wire order.
 *
 * @since 0.1.0
 * @category serialization
 */
export const make = (request: ModelRequest.ModelRequest, settings: Settings): Wire.ChatRequest =>
  RequestBody.make(request, withQuirks(settings))

/**
 * The request body as the bytes sent (a JSON string).
 *
 * @since 0.1.0
 * @category serialization
 */
export const encode = (request: ModelRequest.ModelRequest, settings: Settings): string =>
  RequestBody.encode(request, withQuirks(settings))
