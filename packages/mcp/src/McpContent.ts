/**
 * What an MCP tool result becomes in dsh: content blocks of a tool result.
 *
 * | MCP content | dsh block |
 * |---|---|
 * | `text` | a text block |
 * | `image` | an image block (its bytes as base64, its MIME type) |
 * | an embedded resource with text | a text block: `[resource <uri> (<mime type>)]` and the text |
 * | an embedded resource with a blob | an image block when its MIME type is an image; its text when its type is textual (`text/*`, JSON, XML, YAML) and it is UTF-8; else a text block describing it (URI, type, size) |
 * | `resource_link` | a text block: `[resource link <uri>] <title>`, its MIME type and description |
 * | `audio` | a text block describing it (type, size): models here take no audio |
 * | no content, but `structuredContent` | a text block with its JSON |
 * | nothing at all | a text block saying so (providers refuse empty tool results) |
 *
 * Text is bounded: past `maxTextLength` characters in all, the rest is cut with a note saying
 * how much was left out, so one call cannot flood the context window. A result with
 * `isError: true` becomes the failure's message ({@link errorText}): its content in words.
 *
 * @since 0.1.0
 */
import { Content } from "@dsh/llm"
import type { McpSchema } from "effect/ai"
import { Base64 } from "effect/encoding"
import { depthOf } from "./InputSchemas.ts"

/**
 * The bounds of a result.
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits {
  /** How many characters of text a result may hold in all. */
  readonly maxTextLength: number
}

/**
 * The default bounds: 100,000 characters (about 25,000 tokens).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultLimits: Limits = { maxTextLength: 100_000 }

// Structured content is written as JSON only when it cannot break `JSON.stringify`.
const maxStructuredDepth = 256

const sizeOf = (bytes: Uint8Array) => `${bytes.length} bytes`

const withMime = (mimeType: string | undefined) => (mimeType === undefined ? "" : ` (${mimeType})`)

// Blobs of a text type are shown as text when they are valid UTF-8.
const isTextual = (mimeType: string | undefined) =>
  mimeType !== undefined && (mimeType.startsWith("text/") || /^application\/(?:json|xml|yaml|javascript)\b|\+(?:json|xml)\b/.test(mimeType))

const strictUtf8 = new TextDecoder("utf-8", { fatal: true })

const utf8 = (bytes: Uint8Array): string | undefined => {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    return undefined
  }
}

const resourceBlock = (block: McpSchema.EmbeddedResource): Content.ToolResultContent => {
  const resource = block.resource
  if ("text" in resource) return Content.text(`[resource ${resource.uri}${withMime(resource.mimeType)}]\n${resource.text}`)
  if (resource.mimeType?.startsWith("image/") === true) return Content.image(resource.mimeType, Base64.encode(resource.blob))
  const text = isTextual(resource.mimeType) ? utf8(resource.blob) : undefined
  if (text !== undefined) return Content.text(`[resource ${resource.uri}${withMime(resource.mimeType)}]\n${text}`)
  return Content.text(
    `[resource ${resource.uri}: ${resource.mimeType ?? "binary data"}, ${sizeOf(resource.blob)}, not shown]`
  )
}

const linkBlock = (block: McpSchema.ResourceLink): Content.ToolResultContent => {
  const lines = [`[resource link ${block.uri}] ${block.title ?? block.name}${withMime(block.mimeType)}`]
  if (block.description !== undefined) lines.push(block.description)
  return Content.text(lines.join("\n"))
}

/**
 * One MCP content block as a dsh block.
 *
 * @since 0.1.0
 * @category conversions
 */
export const block = (block: McpSchema.ContentBlock): Content.ToolResultContent => {
  switch (block.type) {
    case "text":
      return Content.text(block.text)
    case "image":
      return Content.image(block.mimeType, Base64.encode(block.data))
    case "audio":
      return Content.text(`[audio ${block.mimeType}, ${sizeOf(block.data)}, not shown]`)
    case "resource":
      return resourceBlock(block)
    case "resource_link":
      return linkBlock(block)
  }
}

const structured = (value: unknown): string => {
  if (depthOf(value, maxStructuredDepth) > maxStructuredDepth) {
    return `[structured content nested deeper than ${maxStructuredDepth} levels, not shown]`
  }
  return JSON.stringify(value) ?? String(value)
}

// Cuts the text blocks once their total passes the limit; other blocks pass untouched.
const bounded = (blocks: ReadonlyArray<Content.ToolResultContent>, limits: Limits) => {
  let room = limits.maxTextLength
  let cut = 0
  const kept: Array<Content.ToolResultContent> = []
  for (const b of blocks) {
    if (b.type !== "text") {
      kept.push(b)
      continue
    }
    if (b.text.length <= room) {
      room -= b.text.length
      kept.push(b)
      continue
    }
    const head = cutAt(b.text, room)
    cut += b.text.length - head.length
    if (head.length > 0) kept.push(Content.text(head))
    room = 0
  }
  if (cut > 0) {
    kept.push(Content.text(`[… ${cut} more characters cut: the result was longer than ${limits.maxTextLength} characters]`))
  }
  return kept
}

// Never split a surrogate pair: a lone surrogate is not valid UTF-8 on the wire.
const cutAt = (text: string, end: number) => {
  const code = text.charCodeAt(end - 1)
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? end - 1 : end)
}

/**
 * A result's content as dsh blocks (see the module's table), bounded.
 *
 * @since 0.1.0
 * @category conversions
 */
export const toBlocks = (
  result: McpSchema.CallToolResult,
  limits: Limits = defaultLimits
): ReadonlyArray<Content.ToolResultContent> => {
  if (result.content.length > 0) return bounded(result.content.map(block), limits)
  if (result.structuredContent !== undefined) return bounded([Content.text(structured(result.structuredContent))], limits)
  return [Content.text("(the tool returned no content)")]
}

/**
 * A result's content in words, for the message of a failed call: its text blocks, the other
 * blocks described, bounded like {@link toBlocks}.
 *
 * @since 0.1.0
 * @category conversions
 */
export const errorText = (result: McpSchema.CallToolResult, limits: Limits = defaultLimits): string => {
  const text = toBlocks(result, limits).map((b) => (b.type === "text" ? b.text : `[${b.type} ${b.type === "image" ? b.mediaType : b.kind}, not shown]`))
    .join("\n")
  return text === "(the tool returned no content)" ? "the tool reported an error without saying what it was" : text
}
