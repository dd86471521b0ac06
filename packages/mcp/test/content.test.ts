/**
 * MCP results as dsh content blocks: every MCP content type, the bounds, and the words of an
 * error result.
 */
import { Content } from "@dsh/llm"
import { McpContent } from "@dsh/mcp"
import { describe, expect, it } from "@effect/vitest"
import { McpSchema } from "effect/ai"

const bytes = (text: string) => new TextEncoder().encode(text)

const result = (content: McpSchema.CallToolResult["content"], extra: Partial<McpSchema.CallToolResult> = {}) =>
  new McpSchema.CallToolResult({ content, ...extra })

describe("McpContent", () => {
  it("maps each kind of MCP content", () => {
    const png = Uint8Array.of(0x89, 0x50, 0x4e, 0x47)
    expect(McpContent.toBlocks(result([
      { type: "text", text: "hello" },
      { type: "image", data: png, mimeType: "image/png" },
      { type: "audio", data: Uint8Array.of(1, 2, 3), mimeType: "audio/wav" },
      { type: "resource", resource: { uri: "file:///a.md", mimeType: "text/markdown", text: "# A" } },
      { type: "resource", resource: { uri: "file:///b.png", mimeType: "image/png", blob: png } },
      { type: "resource", resource: { uri: "file:///c.json", mimeType: "application/json", blob: bytes('{"c":1}') } },
      { type: "resource", resource: { uri: "file:///d.bin", blob: Uint8Array.of(0xff, 0xfe) } },
      { type: "resource", resource: { uri: "file:///e.txt", mimeType: "text/plain", blob: Uint8Array.of(0xff) } },
      { type: "resource_link", uri: "file:///f.txt", name: "f.txt", title: "F", mimeType: "text/plain", description: "the f" }
    ]))).toStrictEqual([
      Content.text("hello"),
      Content.image("image/png", "iVBORw=="),
      Content.text("[audio audio/wav, 3 bytes, not shown]"),
      Content.text("[resource file:///a.md (text/markdown)]\n# A"),
      Content.image("image/png", "iVBORw=="),
      Content.text('[resource file:///c.json (application/json)]\n{"c":1}'),
      Content.text("[resource file:///d.bin: binary data, 2 bytes, not shown]"),
      // a textual type that is not UTF-8
      Content.text("[resource file:///e.txt: text/plain, 1 bytes, not shown]"),
      Content.text("[resource link file:///f.txt] F (text/plain)\nthe f")
    ])
  })

  it("structured content is the text when there is no other content; nothing at all says so", () => {
    expect(McpContent.toBlocks(result([], { structuredContent: { temperature: 3 } }))).toStrictEqual([
      Content.text('{"temperature":3}')
    ])
    expect(McpContent.toBlocks(result([]))).toStrictEqual([Content.text("(the tool returned no content)")])
  })

  it("text past the limit is cut, without splitting a surrogate pair, with a note", () => {
    const blocks = McpContent.toBlocks(result([{ type: "text", text: "ab" }, { type: "text", text: "c😀d" }]), {
      maxTextLength: 4
    })
    expect(blocks).toStrictEqual([
      Content.text("ab"),
      Content.text("c"),
      Content.text("[… 3 more characters cut: the result was longer than 4 characters]")
    ])
  })

  it("an error result in words: its text, other blocks named", () => {
    expect(McpContent.errorText(result([{ type: "text", text: "no such file" }, {
      type: "image",
      data: Uint8Array.of(1),
      mimeType: "image/gif"
    }], { isError: true }))).toBe("no such file\n[image image/gif, not shown]")
    expect(McpContent.errorText(result([], { isError: true }))).toBe(
      "the tool reported an error without saying what it was"
    )
  })
})
