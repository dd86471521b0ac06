/**
 * Serialization: a dsh `ModelRequest` as the body of an OpenAI-compatible
 * `POST /chat/completions`, with the quirks of a server profile.
 *
 * The body is deterministic. Every wire object is built here field by field in a fixed key
 * order (nothing of the input is spread into it), so one history always serializes to the same
 * bytes, however its objects were built (by the loop, or decoded from a session log). The
 * messages come first after `model`, and each message is serialized on its own, without
 * looking at its neighbours, so the body of step k+1 starts with step k's messages byte for
 * byte: the servers' prompt caches (DeepSeek's, OpenAI's, vLLM's prefix caching, llama.cpp's
 * slot cache) are prefix caches, and a history that rewrote its past would pay for every token
 * again at every step.
 *
 * How content maps to the wire (messages carry strings only, which every server takes):
 *
 * | dsh | wire |
 * |---|---|
 * | `request.system` | a first `system` message |
 * | system/user message | `content`: its blocks rendered as text and joined with `"\n"` |
 * | `tool-result` block (in a user message) | a `tool` message (`tool_call_id`, its content rendered as text); a failed result is prefixed `Error (CODE): ` so the model reads it as a failure |
 * | text block | its text |
 * | image block | `[image (media/type) omitted: this model reads text only]`: images are not sent (DeepSeek's chat API takes none, and failing the whole request over one screenshot a tool returned would end the turn) |
 * | custom block | `<custom kind="…">{JSON data}</custom>`, so an extension's data stays visible to the model |
 * | assistant message | `content`: its text blocks joined; `tool_calls` from its tool-call blocks (arguments as the raw string the model wrote when it is a JSON object; `{}` for none, `{"invalid_arguments": "<text>"}` for text that is no JSON object — a call cut off by the token limit —, since servers parse them and would refuse every later request); on a message with tool calls, its reasoning blocks joined under the profile's `reasoningPassback` key (`reasoning_content` for DeepSeek, whose thinking mode requires it, empty too; `reasoning` for vLLM) — omitted when thinking is off, when the profile passes nothing back, on messages without tool calls (servers ignore earlier turns' reasoning), and with `thinking` unset on a message without reasoning, unless the profile's switch is `thinking-type` (DeepSeek thinks unless told not to) |
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
 * The settings go where the profile says (`Profile.Thinking`, `Profile.ReasoningEffort`): the
 * thinking switch as `thinking`, `chat_template_kwargs` or OpenRouter's `reasoning` object
 * (or `reasoning_effort: "none"` for Ollama), the effort as `reasoning_effort` or inside
 * `reasoning`, never with thinking off; the output limit as `max_tokens` or
 * `max_completion_tokens`; `stream_options.include_usage` when the profile asks for usage.
 *
 * @since 0.1.0
 */
import { Content, type Message, type ModelRequest } from "@dsh/llm"
import * as Profile from "./Profile.ts"
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
  readonly reasoningEffort: string | undefined
  /** The server's quirks (the defaults of `Profile` when omitted). */
  readonly quirks?: Profile.Quirks | Profile.ResolvedQuirks
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

const assistant = (
  message: Message.Message,
  settings: Settings,
  passback: Profile.ResolvedQuirks["reasoningPassback"],
  thinking: Profile.ResolvedQuirks["thinking"]
): Wire.Message => {
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
      calls.push({ id: block.id, type: "function", function: { name: block.name, arguments: Content.argumentsObject(block.arguments).text } })
    }
  }
  if (calls.length === 0) return { role: "assistant", content }
  // Thinking mode requires the reasoning of a tool-calling turn back, empty too; with thinking
  // off it has no use. With the provider's default it is sent when there is some — and always
  // where that default is on (DeepSeek's `thinking-type` switch): thinking unsaid is thinking on.
  const thinksUnsaid = settings.thinking === undefined && (hasReasoning || thinking === "thinking-type")
  const withReasoning = passback !== "none" && (settings.thinking === true || thinksUnsaid)
  if (!withReasoning) return { role: "assistant", content, tool_calls: calls }
  return passback === "reasoning"
    ? { role: "assistant", content, reasoning, tool_calls: calls }
    : { role: "assistant", content, reasoning_content: reasoning, tool_calls: calls }
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
  const out: Array<Wire.Message> = []
  messageInto(m, settings, Profile.resolveQuirks(settings.quirks), out)
  return out
}

const messageInto = (
  m: Message.Message,
  settings: Settings,
  quirks: Profile.ResolvedQuirks,
  out: Array<Wire.Message>
): void => {
  switch (m.role) {
    case "system":
      out.push({ role: "system", content: renderAll(m.content) })
      return
    case "assistant":
      out.push(assistant(m, settings, quirks.reasoningPassback, quirks.thinking))
      return
    case "user":
      userSide(m, out)
      return
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
  const quirks = Profile.resolveQuirks(settings.quirks)
  for (const m of request.messages) messageInto(m, settings, quirks, out)
  return out
}

const toolChoice = (choice: ModelRequest.ToolChoice): Wire.ToolChoice =>
  typeof choice === "string" ? choice : { type: "function", function: { name: choice.tool } }

// The thinking switch and the effort, where the profile puts them, in wire order.
const reasoningFields = (
  body: { -readonly [K in keyof Wire.ChatRequest]?: Wire.ChatRequest[K] },
  settings: Settings,
  quirks: Profile.ResolvedQuirks
): void => {
  const { thinking } = settings
  // an effort means nothing with thinking off
  const effort = thinking === false ? undefined : settings.reasoningEffort
  switch (quirks.thinking) {
    case "thinking-type":
      if (thinking !== undefined) body.thinking = { type: thinking ? "enabled" : "disabled" }
      break
    case "chat-template-kwargs":
      if (thinking !== undefined) body.chat_template_kwargs = { enable_thinking: thinking }
      break
    case "reasoning-object": {
      const inObject = quirks.reasoningEffort === "reasoning-object" ? effort : undefined
      if (thinking !== undefined || inObject !== undefined) {
        body.reasoning = thinking === undefined
          ? { effort: inObject! }
          : inObject === undefined
          ? { enabled: thinking }
          : { enabled: thinking, effort: inObject }
      }
      break
    }
    case "reasoning-effort-none":
      if (thinking === false) body.reasoning_effort = "none"
      break
    case "none":
      break
  }
  if (effort === undefined) return
  if (quirks.reasoningEffort === "reasoning_effort") body.reasoning_effort = effort
  else if (quirks.reasoningEffort === "reasoning-object" && quirks.thinking !== "reasoning-object") {
    body.reasoning = { effort }
  }
}

/**
 * The request body as an object, keys in wire order.
 *
 * @since 0.1.0
 * @category serialization
 */
export const make = (request: ModelRequest.ModelRequest, settings: Settings): Wire.ChatRequest => {
  const quirks = Profile.resolveQuirks(settings.quirks)
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
  reasoningFields(body, settings, quirks)
  if (request.temperature !== undefined) body.temperature = request.temperature
  if (request.maxTokens !== undefined) {
    if (quirks.maxTokensField === "max_completion_tokens") body.max_completion_tokens = request.maxTokens
    else body.max_tokens = request.maxTokens
  }
  if (request.stop !== undefined && request.stop.length > 0) body.stop = request.stop
  body.stream = true
  if (quirks.includeUsage) body.stream_options = { include_usage: true }
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
