/**
 * Serialization: a dsh `ModelRequest` as the body of Anthropic's `POST /v1/messages`.
 *
 * The body is deterministic: every wire object is built here field by field in a fixed key
 * order (nothing of the input is spread into it), and each message is serialized on its own,
 * without looking at its neighbours, so one history always gives the same bytes, and the
 * messages of step k are serialized in step k+1 exactly as they were (only the cache
 * breakpoints move, and Anthropic leaves `cache_control` out of its cache key). `messages` is
 * the last key, so the body of step k+1 starts with the body of step k up to the markers.
 *
 * **Prompt caching.** Anthropic caches prefixes in the order tools → system → messages, up to
 * blocks marked with `cache_control` (at most four per request). The body marks:
 *
 * 1. the last tool definition (the tools are the same at every step);
 * 2. the system prompt;
 * 3. the end of the previous step's request — the last message before the last assistant
 *    message — which the previous request wrote to the cache, so this one reads it back even
 *    when the step appended many blocks (a lookup only searches ~20 blocks back from a
 *    breakpoint);
 * 4. the last message, which the next step will extend.
 *
 * A message is marked on its last block that can carry `cache_control` (text, image,
 * `tool_use`, `tool_result`; never thinking); a message without one passes the mark to the
 * nearest earlier message that has one. Marks are `{"type": "ephemeral"}` (five minutes), or
 * with `"ttl": "1h"` when the cache option says so; `cache: "off"` sends none. A prefix shorter
 * than the model's minimum (1,024 to 4,096 tokens) is simply not cached.
 *
 * How content maps to the wire:
 *
 * | dsh | Anthropic |
 * |---|---|
 * | `request.system` | `system: [{type: "text", text}]` |
 * | text block | `{type: "text", text}`; an empty one is left out (the API refuses empty text) |
 * | image block (user side) | `{type: "image", source: {type: "base64", media_type, data}}` for the types the API reads (JPEG, PNG, GIF, WebP); any other is the text `[image (media/type) omitted: …]`, since the API refuses the whole request over it and the history keeps it for every later request |
 * | `reasoning` with a `signature` (assistant) | `{type: "thinking", thinking, signature}`, unchanged |
 * | `reasoning` without one | left out: the API refuses thinking it cannot verify (another provider's reasoning) |
 * | `tool-call` (assistant) | `{type: "tool_use", id, name, input}`, `input` the model's argument text written verbatim (an empty one is `{}`; text that is not a JSON object is sent as `{"invalid_arguments": "<text>"}`, since the API takes only objects) |
 * | `tool-result` (user side) | `{type: "tool_result", tool_use_id, content, is_error}`; its text and images as blocks, `is_error: true` for a failed call; results come first in their message, as the API requires |
 * | `custom` `anthropic:redacted-thinking` (assistant) | `{type: "redacted_thinking", data}` |
 * | `custom` `anthropic:server-block` (assistant) | the block as the API sent it |
 * | any other `custom` block | `<custom kind="…">{JSON data}</custom>` as text |
 * | a `system` message in the history | a `user` message (the API has no system role in `messages`) |
 * | blocks with no wire form on their side (a tool call in a user message, an image in an assistant message) | left out |
 *
 * A message left with no blocks is left out. Consecutive messages of one role are not merged
 * (the API joins them itself; merging here would rewrite an earlier message when a later one
 * arrives). Tool parameters and custom data are the caller's own JSON, passed through in their
 * key order.
 *
 * @since 0.1.0
 */
import { Content, type Message, type ModelRequest } from "@dsh/llm"
import type * as Wire from "./Wire.ts"

/**
 * The adapter settings serialization depends on.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  /** `max_tokens`: the API requires it. */
  readonly maxTokens: number
  /** Sent when set; the model's default otherwise. */
  readonly thinking: Wire.Thinking | undefined
  /** `output_config.effort`, sent when set. */
  readonly effort: string | undefined
  /** The cache breakpoints' lifetime, or none. */
  readonly cache: "5m" | "1h" | "off"
}

// The argument text a tool_use carries to `encode`, which writes it verbatim as `input`.
const rawInput: unique symbol = Symbol("@dsh/anthropic/RequestBody/rawInput")

interface ToolUse extends Wire.ToolUseBlock {
  readonly [rawInput]: string
}

const hasRawInput = (block: Wire.ContentBlock): block is ToolUse => rawInput in block

/**
 * The `input` a tool call's argument text stands for, and the JSON text written for it: the
 * text itself when it is a JSON object (so the model's bytes, number precision included, reach
 * the API unchanged), `{}` for empty text, else `{"invalid_arguments": text}`.
 *
 * @since 0.1.0
 * @category serialization
 */
export const toolInput = (args: string): { readonly value: unknown; readonly text: string } => Content.argumentsObject(args)

const escapeAttribute = (value: string) =>
  value.replaceAll("&", "&amp;").replaceAll("\"", "&quot;").replaceAll("<", "&lt;")

const customText = (block: Content.CustomBlock): Wire.TextBlock => ({
  type: "text",
  text: `<custom kind="${escapeAttribute(block.kind)}">${JSON.stringify(block.data)}</custom>`
})

const redactedKind = "anthropic:redacted-thinking"
const serverKind = "anthropic:server-block"

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

// The image types the Messages API reads; it refuses a request holding any other.
const readableImageTypes = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"])

// An image the API cannot read (an SVG a tool returned) would fail this request and every
// later one, since the history keeps it: it is sent as a note instead.
const imageBlock = (block: Content.ImageBlock): Wire.ImageBlock | Wire.TextBlock =>
  readableImageTypes.has(block.mediaType.toLowerCase())
    ? { type: "image", source: { type: "base64", media_type: block.mediaType.toLowerCase(), data: block.data } }
    : { type: "text", text: `[image (${block.mediaType}) omitted: Anthropic reads JPEG, PNG, GIF and WebP images only]` }

const resultContent = (blocks: ReadonlyArray<Content.ToolResultContent>): Array<Wire.TextBlock | Wire.ImageBlock> => {
  const out: Array<Wire.TextBlock | Wire.ImageBlock> = []
  for (const block of blocks) {
    if (block.type === "text") {
      if (block.text !== "") out.push({ type: "text", text: block.text })
    } else if (block.type === "image") {
      out.push(imageBlock(block))
    } else {
      out.push(customText(block))
    }
  }
  return out
}

const toolResult = (block: Content.ToolResultBlock): Wire.ToolResultBlock => {
  const content = resultContent(block.content)
  if (content.length === 0) {
    return block.isError ? { type: "tool_result", tool_use_id: block.toolCallId, is_error: true } : {
      type: "tool_result",
      tool_use_id: block.toolCallId
    }
  }
  return block.isError
    ? { type: "tool_result", tool_use_id: block.toolCallId, content, is_error: true }
    : { type: "tool_result", tool_use_id: block.toolCallId, content }
}

const userSide = (blocks: ReadonlyArray<Content.ContentBlock>): Array<Wire.ContentBlock> => {
  const results: Array<Wire.ContentBlock> = []
  const others: Array<Wire.ContentBlock> = []
  for (const block of blocks) {
    switch (block.type) {
      case "tool-result":
        results.push(toolResult(block))
        break
      case "text":
        if (block.text !== "") others.push({ type: "text", text: block.text })
        break
      case "image":
        others.push(imageBlock(block))
        break
      case "custom":
        // thinking and server blocks are the assistant's; a user message cannot carry them
        if (block.kind !== redactedKind && block.kind !== serverKind) others.push(customText(block))
        break
      case "reasoning":
      case "tool-call":
        break
    }
  }
  return results.length === 0 ? others : others.length === 0 ? results : [...results, ...others]
}

const toolUse = (block: Content.ToolCallBlock): ToolUse => {
  const input = toolInput(block.arguments)
  return { type: "tool_use", id: block.id, name: block.name, input: input.value, [rawInput]: input.text }
}

const assistantCustom = (block: Content.CustomBlock): Wire.ContentBlock | undefined => {
  if (block.kind === redactedKind) {
    const data = isRecord(block.data) ? block.data["data"] : undefined
    return typeof data === "string" ? { type: "redacted_thinking", data } : undefined
  }
  if (block.kind === serverKind) {
    const sent = isRecord(block.data) ? block.data["block"] : undefined
    return isRecord(sent) && typeof sent["type"] === "string" ? sent as Wire.OtherBlock : undefined
  }
  return customText(block)
}

const assistantSide = (blocks: ReadonlyArray<Content.ContentBlock>): Array<Wire.ContentBlock> => {
  const out: Array<Wire.ContentBlock> = []
  for (const block of blocks) {
    switch (block.type) {
      case "text":
        if (block.text !== "") out.push({ type: "text", text: block.text })
        break
      case "reasoning":
        if (block.signature !== undefined && block.signature !== "") {
          out.push({ type: "thinking", thinking: block.text, signature: block.signature })
        }
        break
      case "tool-call":
        out.push(toolUse(block))
        break
      case "custom": {
        const sent = assistantCustom(block)
        if (sent !== undefined) out.push(sent)
        break
      }
      case "image":
      case "tool-result":
        break
    }
  }
  return out
}

/**
 * The wire message of one dsh message; `undefined` when nothing of it has a wire form.
 *
 * @since 0.1.0
 * @category serialization
 */
export const message = (m: Message.Message): Wire.Message | undefined => {
  const content = m.role === "assistant" ? assistantSide(m.content) : userSide(m.content)
  return content.length === 0 ? undefined : { role: m.role === "assistant" ? "assistant" : "user", content }
}

// Messages are immutable data (frozen in session logs, shared between the requests of
// successive steps through `History`): each is translated once, and serialized once unmarked.
interface Serialized {
  readonly wire: Wire.Message | undefined
  text: string | undefined
}

const memo = new WeakMap<Message.Message, Serialized>()

const serializedOf = (m: Message.Message): Serialized => {
  let found = memo.get(m)
  if (found === undefined) {
    found = { wire: message(m), text: undefined }
    memo.set(m, found)
  }
  return found
}

const cacheable = (block: Wire.ContentBlock): boolean =>
  block.type === "text" || block.type === "image" || block.type === "tool_use" || block.type === "tool_result"

const hasCacheable = (m: Wire.Message): boolean => m.content.some(cacheable)

/**
 * The positions of the messages that carry a cache breakpoint: the last message, and the last
 * message before the last assistant message (where the previous step's request ended), each
 * moved back to the nearest message with a block that can carry one. At most two, ascending.
 *
 * @since 0.1.0
 * @category caching
 */
export const cacheAnchors = (messages: ReadonlyArray<Wire.Message>): ReadonlyArray<number> => {
  const nearest = (from: number) => {
    for (let i = from; i >= 0; i--) if (hasCacheable(messages[i]!)) return i
    return -1
  }
  const last = nearest(messages.length - 1)
  if (last < 0) return []
  let lastAssistant = -1
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "assistant") {
      lastAssistant = i
      break
    }
  }
  const previous = lastAssistant <= 0 ? -1 : nearest(lastAssistant - 1)
  return previous >= 0 && previous !== last ? [previous, last] : [last]
}

const control = (settings: Settings): Wire.CacheControl | undefined =>
  settings.cache === "off" ? undefined : settings.cache === "1h" ? { type: "ephemeral", ttl: "1h" } : { type: "ephemeral" }

const mark = <B extends Wire.ContentBlock>(block: B, cc: Wire.CacheControl): B => ({ ...block, cache_control: cc })

const marked = (m: Wire.Message, cc: Wire.CacheControl): Wire.Message => {
  let at = m.content.length - 1
  while (at >= 0 && !cacheable(m.content[at]!)) at--
  const content = m.content.slice()
  content[at] = mark(content[at]!, cc)
  return { role: m.role, content }
}

const toolChoice = (choice: ModelRequest.ToolChoice): Wire.ToolChoice => {
  if (typeof choice !== "string") return { type: "tool", name: choice.tool }
  return choice === "required" ? { type: "any" } : { type: choice }
}

// Everything before `messages`, keys in wire order.
const head = (request: ModelRequest.ModelRequest, settings: Settings): Omit<Wire.MessagesRequest, "messages"> => {
  const cc = control(settings)
  const body: { -readonly [K in keyof Wire.MessagesRequest]?: Wire.MessagesRequest[K] } = {
    model: request.model,
    max_tokens: request.maxTokens ?? settings.maxTokens
  }
  if (request.system !== undefined && request.system !== "") {
    body.system = [cc === undefined ? { type: "text", text: request.system } : { type: "text", text: request.system, cache_control: cc }]
  }
  if (request.tools !== undefined && request.tools.length > 0) {
    const last = request.tools.length - 1
    body.tools = request.tools.map((tool, i): Wire.Tool =>
      i === last && cc !== undefined
        ? { name: tool.name, description: tool.description, input_schema: tool.parameters, cache_control: cc }
        : { name: tool.name, description: tool.description, input_schema: tool.parameters }
    )
  }
  if (request.toolChoice !== undefined) body.tool_choice = toolChoice(request.toolChoice)
  if (settings.thinking !== undefined) body.thinking = settings.thinking
  if (settings.effort !== undefined) body.output_config = { effort: settings.effort }
  if (request.temperature !== undefined) body.temperature = request.temperature
  if (request.stop !== undefined && request.stop.length > 0) body.stop_sequences = request.stop
  body.stream = true
  return body as Omit<Wire.MessagesRequest, "messages">
}

interface Plan {
  readonly head: Omit<Wire.MessagesRequest, "messages">
  readonly messages: ReadonlyArray<Serialized>
  /** Marked copies of the anchored messages, by position. */
  readonly marked: ReadonlyMap<number, Wire.Message>
}

const plan = (request: ModelRequest.ModelRequest, settings: Settings): Plan => {
  const messages: Array<Serialized> = []
  for (const m of request.messages) {
    const serialized = serializedOf(m)
    if (serialized.wire !== undefined) messages.push(serialized)
  }
  const cc = control(settings)
  const anchored = new Map<number, Wire.Message>()
  if (cc !== undefined) {
    const wires = messages.map((s) => s.wire!)
    for (const at of cacheAnchors(wires)) anchored.set(at, marked(wires[at]!, cc))
  }
  return { head: head(request, settings), messages, marked: anchored }
}

/**
 * The request body as an object, keys in wire order (a tool call's `input` parsed from its
 * argument text).
 *
 * @since 0.1.0
 * @category serialization
 */
export const make = (request: ModelRequest.ModelRequest, settings: Settings): Wire.MessagesRequest => {
  const { head, marked, messages } = plan(request, settings)
  return { ...head, messages: messages.map((s, i) => marked.get(i) ?? s.wire!) }
}

const blockText = (block: Wire.ContentBlock): string => {
  if (!hasRawInput(block)) return JSON.stringify(block)
  // written by hand so the argument text goes out verbatim; `cache_control` last, as in `mark`
  const cc = block.cache_control === undefined ? "" : `,"cache_control":${JSON.stringify(block.cache_control)}`
  return `{"type":"tool_use","id":${JSON.stringify(block.id)},"name":${JSON.stringify(block.name)},"input":${
    block[rawInput]
  }${cc}}`
}

const messageText = (m: Wire.Message): string => {
  let content = ""
  for (let i = 0; i < m.content.length; i++) content += (i === 0 ? "" : ",") + blockText(m.content[i]!)
  return `{"role":"${m.role}","content":[${content}]}`
}

/**
 * The request body as the bytes sent (a JSON string). Equal to `JSON.stringify(make(…))`
 * except that a tool call's `input` is its argument text as the model wrote it.
 *
 * @since 0.1.0
 * @category serialization
 */
export const encode = (request: ModelRequest.ModelRequest, settings: Settings): string => {
  const { head, marked, messages } = plan(request, settings)
  const parts: Array<string> = []
  for (let i = 0; i < messages.length; i++) {
    const anchoredAt = marked.get(i)
    if (anchoredAt !== undefined) {
      parts.push(messageText(anchoredAt))
    } else {
      const serialized = messages[i]!
      serialized.text ??= messageText(serialized.wire!)
      parts.push(serialized.text)
    }
  }
  const start = JSON.stringify(head)
  return `${start.slice(0, -1)},"messages":[${parts.join(",")}]}`
}
