/**
 * Serialization: a dsh `ModelRequest` as the body of DeepSeek's `POST /chat/completions`.
 *
 * The body is deterministic. Every wire object is built here field by field in a fixed key
 * order (nothing of the input is spread into it), so one history always serializes to the same
 * bytes, however its objects were built (by the loop, or decoded from a session log). The
 * messages come first after `model`, and each message is serialized on its own, without
 * looking at its neighbours, so the body of step k+1 starts with step k's messages byte for
 * byte: DeepSeek's prompt cache is a prefix cache, and a history that rewrote its past would
 * pay for every token again at every step.
 *
 * How content maps to the wire (DeepSeek's messages carry strings only):
 *
 * | dsh | DeepSeek |
 * |---|---|
 * | `request.system` | a first `system` message |
 * | system/user message | `content`: its blocks rendered as text and joined with `"\n"` |
 * | `tool-result` block (in a user message) | a `tool` message (`tool_call_id`, its content rendered as text); a failed result is prefixed `Error (CODE): ` so the model reads it as a failure |
 * | text block | its text |
 * | image block | `[image (media/type) omitted: this model reads text only]`: DeepSeek's chat API takes no images, and failing the whole request over one screenshot a tool returned would end the turn |
 * | custom block | `<custom kind="…">{JSON data}</custom>`, so an extension's data stays visible to the model |
 * | assistant message | `content`: its text blocks joined; `tool_calls` from its tool-call blocks (arguments as the raw string the model wrote); `reasoning_content` (its reasoning blocks joined) on a message with tool calls, which thinking mode requires — omitted when thinking is off, and on messages without tool calls (DeepSeek ignores earlier turns' reasoning) |
 * | reasoning/tool-call blocks in a user message, images and results in an assistant message | left out: no wire form |
 *
 * Tool parameters (JSON Schema) and custom block data are the caller's own JSON and are passed
 * through in their key order, not re-sorted: a JSON Schema's property order is what the model
 * reads, and the tool registry generates it deterministically.
 *
 * A user message mixing tool results and other blocks keeps its order: each run of other
 * blocks becomes a `user` message between the `tool` messages. Consecutive messages of one role
 * are not merged (merging would rewrite an earlier step's last message and break the prefix).
 *
 * @since 0.1.0
 */
import type { Content, Message, ModelRequest } from "@dsh/llm"
import type * as Wire from "./Wire.ts"

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

const escapeAttribute = (value: string) =>
  value.replaceAll("&", "&amp;").replaceAll("\"", "&quot;").replaceAll("<", "&lt;")

/**
 * A block as text, for the string content of system, user and tool messages; `undefined` for
 * blocks that have no text form there.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderBlock = (block: Content.ContentBlock): string | undefined => {
  switch (block.type) {
    case "text":
      return block.text
    case "image":
      return `[image (${block.mediaType}) omitted: this model reads text only]`
    case "custom":
      return `<custom kind="${escapeAttribute(block.kind)}">${JSON.stringify(block.data)}</custom>`
    case "reasoning":
    case "tool-call":
    case "tool-result":
      return undefined
  }
}

const renderAll = (blocks: ReadonlyArray<Content.ContentBlock>): string => {
  const parts: Array<string> = []
  for (const block of blocks) {
    const text = renderBlock(block)
    if (text !== undefined) parts.push(text)
  }
  return parts.join("\n")
}

/**
 * The text of a `tool` message for a tool result.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderToolResult = (block: Content.ToolResultBlock): string => {
  const text = renderAll(block.content)
  if (!block.isError) return text
  return block.error === undefined ? `Error: ${text}` : `Error (${block.error.code}): ${text}`
}

const assistant = (message: Message.Message, settings: Settings): Wire.Message => {
  let content = ""
  let reasoning = ""
  let hasReasoning = false
  const calls: Array<Wire.ToolCall> = []
  for (const block of message.content) {
    if (block.type === "text") content += block.text
    else if (block.type === "reasoning") {
      reasoning += block.text
      hasReasoning = true
    } else if (block.type === "tool-call") {
      calls.push({ id: block.id, type: "function", function: { name: block.name, arguments: block.arguments } })
    }
  }
  if (calls.length === 0) return { role: "assistant", content }
  // Thinking mode requires the reasoning of a tool-calling turn back; with thinking off it has
  // no use, and with the provider's default it is sent when there is some.
  const withReasoning = settings.thinking === true || (settings.thinking === undefined && hasReasoning)
  return withReasoning
    ? { role: "assistant", content, reasoning_content: reasoning, tool_calls: calls }
    : { role: "assistant", content, tool_calls: calls }
}

const userSide = (message: Message.Message, out: Array<Wire.Message>): void => {
  let run: Array<Content.ContentBlock> = []
  let hadResult = false
  const flush = () => {
    // a message that is only tool results yields no empty user message
    if (run.length > 0 || !hadResult) out.push({ role: "user", content: renderAll(run) })
    run = []
  }
  for (const block of message.content) {
    if (block.type === "tool-result") {
      if (run.length > 0) flush()
      hadResult = true
      out.push({ role: "tool", tool_call_id: block.toolCallId, content: renderToolResult(block) })
    } else {
      run.push(block)
    }
  }
  flush()
}

/**
 * The wire messages of one dsh message (a user message with tool results becomes several).
 *
 * @since 0.1.0
 * @category serialization
 */
export const message = (m: Message.Message, settings: Settings): ReadonlyArray<Wire.Message> => {
  switch (m.role) {
    case "system":
      return [{ role: "system", content: renderAll(m.content) }]
    case "assistant":
      return [assistant(m, settings)]
    case "user": {
      const out: Array<Wire.Message> = []
      userSide(m, out)
      return out
    }
  }
}

/**
 * The wire messages of a request: the system prompt, then the history.
 *
 * @since 0.1.0
 * @category serialization
 */
export const messages = (request: ModelRequest.ModelRequest, settings: Settings): Array<Wire.Message> => {
  const out: Array<Wire.Message> = []
  if (request.system !== undefined) out.push({ role: "system", content: request.system })
  for (const m of request.messages) for (const w of message(m, settings)) out.push(w)
  return out
}

const toolChoice = (choice: ModelRequest.ToolChoice): Wire.ToolChoice =>
  typeof choice === "string" ? choice : { type: "function", function: { name: choice.tool } }

/**
 * The request body as an object, keys in wire order.
 *
 * @since 0.1.0
 * @category serialization
 */
export const make = (request: ModelRequest.ModelRequest, settings: Settings): Wire.ChatRequest => {
  // Filled key by key, in the order of the wire type: the order is part of the bytes.
  const body: { -readonly [K in keyof Wire.ChatRequest]?: Wire.ChatRequest[K] } = {
    model: request.model,
    messages: messages(request, settings)
  }
  if (request.tools !== undefined && request.tools.length > 0) {
    body.tools = request.tools.map((tool): Wire.Tool => ({
      type: "function",
      function: tool.strict === undefined
        ? { name: tool.name, description: tool.description, parameters: tool.parameters }
        : { name: tool.name, description: tool.description, parameters: tool.parameters, strict: tool.strict }
    }))
  }
  if (request.toolChoice !== undefined) body.tool_choice = toolChoice(request.toolChoice)
  if (settings.thinking !== undefined) body.thinking = { type: settings.thinking ? "enabled" : "disabled" }
  if (settings.reasoningEffort !== undefined && settings.thinking !== false) {
    body.reasoning_effort = settings.reasoningEffort
  }
  if (request.temperature !== undefined) body.temperature = request.temperature
  if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens
  if (request.stop !== undefined && request.stop.length > 0) body.stop = request.stop
  body.stream = true
  body.stream_options = { include_usage: true }
  return body as Wire.ChatRequest
}

/**
 * The request body as the bytes sent (a JSON string).
 *
 * @since 0.1.0
 * @category serialization
 */
export const encode = (request: ModelRequest.ModelRequest, settings: Settings): string =>
  JSON.stringify(make(request, settings))
