/**
 * The pieces under the adapter, alone: delta translation, usage and finish mapping, status
 * mapping and Retry-After parsing.
 */
import { Failure, Translate, type Wire } from "@dsh/deepseek"
import { Assembler, type StreamChunk } from "@dsh/llm"
import { ChunkContract } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Redacted } from "effect"

const key = Redacted.make("sk-unit")

/** Feeds wire chunks then [DONE]; returns the chunks and the first failure. */
const translate = (wire: ReadonlyArray<Wire.ChatChunk>) => {
  const translator = Translate.make()
  const out: Array<StreamChunk.StreamChunk> = []
  for (const chunk of wire) {
    const failure = translator.chunk(chunk, out)
    if (failure !== undefined) return { out, failure }
  }
  return { out, failure: translator.done(out) }
}
const delta = (d: Wire.Delta, finish: string | null = null): Wire.ChatChunk => ({
  choices: [{ index: 0, delta: d, finish_reason: finish }]
})
const finish = (reason: string) => delta({}, reason)

describe("Translate", () => {
  it("maps usage to disjoint counts", () => {
    expect(Translate.usage({
      prompt_tokens: 1100,
      completion_tokens: 60,
      prompt_cache_hit_tokens: 1000,
      prompt_cache_miss_tokens: 100,
      completion_tokens_details: { reasoning_tokens: 40 }
    })).toStrictEqual({ inputTokens: 100, outputTokens: 60, cacheReadTokens: 1000, cacheWriteTokens: 0, reasoningTokens: 40 })
    // OpenAI-compatible: hits as prompt_tokens_details.cached_tokens, misses implied
    expect(Translate.usage({ prompt_tokens: 50, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 30 } }))
      .toStrictEqual({ inputTokens: 20, outputTokens: 5, cacheReadTokens: 30, cacheWriteTokens: 0 })
    expect(Translate.usage({ prompt_tokens: 7, completion_tokens: 1, completion_tokens_details: null }))
      .toStrictEqual({ inputTokens: 7, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 })
  })

  it("maps finish reasons, keeping the provider's word", () => {
    expect(["stop", "tool_calls", "length", "content_filter", "insufficient_system_resource"].map(Translate.finishReason))
      .toStrictEqual([
        { kind: "stop", raw: "stop" },
        { kind: "tool-calls", raw: "tool_calls" },
        { kind: "length", raw: "length" },
        { kind: "content-filter", raw: "content_filter" },
        { kind: "other", name: "insufficient_system_resource", raw: "insufficient_system_resource" }
      ])
    expect(Translate.finishReason("error")).toStrictEqual({
      kind: "error",
      code: "LLM_SERVER",
      message: "the server ended the answer with finish_reason \"error\"",
      raw: "error"
    })
    const long = Translate.finishReason("z".repeat(10_000))
    expect(long.kind === "other" && [long.name.length < 200, long.name === long.raw]).toStrictEqual([true, true])
  })

  it("holds a call's fragments until its id and name are known, then sends them in one delta", () => {
    const { failure, out } = translate([
      delta({ tool_calls: [{ index: 0, function: { arguments: "{\"a\"" } }] }), // no id, no name yet
      delta({ tool_calls: [{ index: 0, id: "c1", function: { arguments: ":" } }] }),
      delta({ tool_calls: [{ index: 0, function: { name: "f", arguments: "1" } }] }),
      delta({ tool_calls: [{ index: 0, id: "c1", function: { name: "f", arguments: "}" } }] }), // repeated id/name
      finish("tool_calls")
    ])
    expect(failure).toBeUndefined()
    expect(out.filter((c) => c.type === "tool-call-delta")).toStrictEqual([
      { type: "tool-call-delta", index: 0, id: "c1", name: "f", argumentsDelta: "{\"a\":1" },
      { type: "tool-call-delta", index: 0, id: "c1", argumentsDelta: "}" }
    ])
    expect(ChunkContract.check(out)).toStrictEqual([])
  })

  it("reassembles a name streamed in pieces and announces it whole, once its arguments begin", () => {
    const { failure, out } = translate([
      delta({ tool_calls: [{ index: 0, id: "call_1", function: { name: "read_" } }] }),
      delta({ tool_calls: [{ index: 0, function: { name: "file", arguments: "{}" } }] }),
      finish("tool_calls")
    ])
    expect(failure).toBeUndefined()
    expect(out.filter((c) => c.type === "tool-call-delta")).toStrictEqual([
      { type: "tool-call-delta", index: 0, id: "call_1", name: "read_file", argumentsDelta: "{}" }
    ])
    expect(Assembler.assemble(out).message.content).toStrictEqual([
      { type: "tool-call", id: "call_1", name: "read_file", arguments: "{}" }
    ])
    expect(ChunkContract.check(out)).toStrictEqual([])
  })

  it("takes a name repeated in every fragment, or resent as a growing prefix, as one name", () => {
    const { failure, out } = translate([
      delta({ tool_calls: [{ index: 0, id: "a", function: { name: "bash", arguments: "" } }] }),
      delta({ tool_calls: [{ index: 0, id: "a", function: { name: "bash", arguments: "{" } }] }),
      delta({ tool_calls: [{ index: 0, id: "a", function: { name: "bash", arguments: "}" } }] }),
      delta({ tool_calls: [{ index: 1, id: "b", function: { name: "read" } }] }),
      delta({ tool_calls: [{ index: 1, id: "b", function: { name: "read_file", arguments: "{}" } }] }),
      finish("tool_calls")
    ])
    expect(failure).toBeUndefined()
    expect(Assembler.assemble(out).message.content).toStrictEqual([
      { type: "tool-call", id: "a", name: "bash", arguments: "{}" },
      { type: "tool-call", id: "b", name: "read_file", arguments: "{}" }
    ])
    expect(ChunkContract.check(out)).toStrictEqual([])
  })

  it("refuses a name that grows after its arguments began streaming under it", () => {
    const { failure } = translate([
      delta({ tool_calls: [{ index: 0, id: "c", function: { name: "rm", arguments: "{" } }] }),
      delta({ tool_calls: [{ index: 0, function: { name: "_dry_run", arguments: "}" } }] }),
      finish("tool_calls")
    ])
    expect([failure?._tag, failure?.message]).toStrictEqual([
      "LlmProtocolError",
      "DeepSeek stream: tool call 0 (c) changed its name to \"rm_dry_run\" after its arguments began streaming as \"rm\""
    ])
  })

  const calls = (out: ReadonlyArray<StreamChunk.StreamChunk>) => {
    expect(ChunkContract.check(out)).toStrictEqual([])
    return Assembler.assemble(out).message.content
  }

  it("takes a different id at an index as another call; a known id goes back to its call", () => {
    const { failure, out } = translate([
      delta({ tool_calls: [{ index: 0, id: "a", function: { name: "f", arguments: "{\"x\"" } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: ":1" } }] }),
      delta({ tool_calls: [{ index: 0, id: "b", function: { name: "g", arguments: "{" } }] }),
      delta({ tool_calls: [{ index: 0, id: "a", function: { arguments: "}" } }] }), // interleaved, by id
      delta({ tool_calls: [{ index: 0, function: { arguments: "}" } }] }), // no id: the index's latest call
      finish("tool_calls")
    ])
    expect(failure).toBeUndefined()
    expect(calls(out)).toStrictEqual([
      { type: "tool-call", id: "a", name: "f", arguments: "{\"x\":1}" },
      { type: "tool-call", id: "b", name: "g", arguments: "{}" }
    ])
  })

  it("takes a new index as another call even when its id repeats an earlier call's", () => {
    const { failure, out } = translate([
      delta({ tool_calls: [{ index: 0, id: "dup", function: { name: "f", arguments: "{\"x\":1}" } }] }),
      delta({ tool_calls: [{ index: 1, id: "dup", function: { name: "g", arguments: "{\"y\"" } }] }),
      delta({ tool_calls: [{ index: 1, function: { arguments: ":2}" } }] }),
      finish("tool_calls")
    ])
    expect(failure).toBeUndefined()
    expect(calls(out)).toStrictEqual([
      { type: "tool-call", id: "dup", name: "f", arguments: "{\"x\":1}" },
      { type: "tool-call", id: "dup", name: "g", arguments: "{\"y\":2}" }
    ])
  })

  it("places fragments without an index: a new id starts a call, anything else continues the latest", () => {
    const single = translate([
      delta({ tool_calls: [{ function: { name: "now", arguments: "{" } }] }), // the id comes late
      delta({ tool_calls: [{ id: "n", function: { arguments: "}" } }] }),
      finish("tool_calls")
    ])
    expect(single.failure).toBeUndefined()
    expect(calls(single.out)).toStrictEqual([{ type: "tool-call", id: "n", name: "now", arguments: "{}" }])
    const two = translate([
      delta({ tool_calls: [{ id: "a", function: { name: "f", arguments: "[" } }, { id: "b", function: { name: "g", arguments: "[" } }] }),
      delta({ tool_calls: [{ id: "a", function: { arguments: "]" } }] }),
      delta({ tool_calls: [{ function: { arguments: "]" } }] }),
      finish("tool_calls")
    ])
    expect(two.failure).toBeUndefined()
    expect(calls(two.out)).toStrictEqual([
      { type: "tool-call", id: "a", name: "f", arguments: "[]" },
      { type: "tool-call", id: "b", name: "g", arguments: "[]" }
    ])
  })

  it("reads an empty finish_reason as none", () => {
    const { failure, out } = translate([delta({ content: "a" }, ""), delta({ content: "b" }, ""), finish("stop")])
    expect(failure).toBeUndefined()
    expect(Assembler.assemble(out).message.content).toStrictEqual([{ type: "text", text: "ab" }])
  })

  it("closes text before a tool call, and starts a new block when content resumes", () => {
    const { out } = translate([
      delta({ reasoning_content: "r1" }),
      delta({ content: "t1" }),
      delta({ tool_calls: [{ index: 0, id: "c", function: { name: "f", arguments: "{}" } }] }),
      delta({ content: "t2" }),
      delta({ reasoning_content: "r2" }),
      finish("stop")
    ])
    expect(out.filter((c) => c.type === "block-end").map((c) => c.type === "block-end" && [c.index, c.block.type]))
      .toStrictEqual([[0, "reasoning"], [1, "text"], [3, "text"], [2, "tool-call"], [4, "reasoning"]])
    expect(ChunkContract.check(out)).toStrictEqual([])
  })

  it("emits usage then finish at [DONE], after every block-end", () => {
    const { out } = translate([
      delta({ content: "x" }),
      { choices: [{ index: 0, delta: { content: "" }, finish_reason: "stop" }], usage: null },
      { choices: [], usage: { prompt_tokens: 3, completion_tokens: 1 } }
    ])
    expect(out.map((c) => c.type)).toStrictEqual(["block-start", "text-delta", "block-end", "usage", "finish"])
  })

  it("reads only choice 0", () => {
    const { out } = translate([
      { choices: [{ index: 1, delta: { content: "other" } }, { index: 0, delta: { content: "mine" } }] },
      finish("stop")
    ])
    expect(out.flatMap((c) => c.type === "text-delta" ? [c.delta] : [])).toStrictEqual(["mine"])
  })

  it("refuses what breaks the protocol", () => {
    expect(translate([delta({ content: "x" })]).failure?.message).toContain("[DONE] arrived before any finish_reason")
    expect(translate([finish("stop"), delta({ content: "late" })]).failure?.message).toContain("after finish_reason")
    expect(translate([delta({ tool_calls: [{ index: 0, function: { name: "f" } }] }), finish("tool_calls")]).failure?.message)
      .toContain("tool call 0 never got an id")
    expect(translate([delta({ tool_calls: [{ index: 0, id: "c" }] }), finish("tool_calls")]).failure?.message)
      .toContain("tool call 0 (c) never got a name")
    const server = translate([{ error: { message: "overloaded" } }]).failure
    expect([server?._tag, server?.code]).toStrictEqual(["LlmServerError", "LLM_SERVER"])
  })
})

describe("Failure", () => {
  const status = (code: number, body = "", headers: Record<string, string> = {}) =>
    Failure.fromStatus({ provider: "DeepSeek", status: code, headers, body, now: 0, apiKey: key })

  it("maps statuses to typed errors with the provider's message", () => {
    const table = [401, 402, 403, 400, 404, 408, 422, 429, 500, 502, 503, 302].map((code) => {
      const e = status(code, JSON.stringify({ error: { message: `m${code}` } }))
      return [code, e._tag, e.message.includes(`m${code}`)]
    })
    expect(table).toStrictEqual([
      [401, "LlmAuthError", true],
      [402, "LlmAuthError", true],
      [403, "LlmAuthError", true],
      [400, "LlmInvalidRequestError", true],
      [404, "LlmInvalidRequestError", true],
      [408, "LlmTransportError", true],
      [422, "LlmInvalidRequestError", true],
      [429, "LlmRateLimitError", true],
      [500, "LlmServerError", true],
      [502, "LlmServerError", true],
      [503, "LlmServerError", true],
      [302, "LlmProtocolError", true]
    ])
    expect(status(500, "  ").message).toBe("DeepSeek failed (HTTP 500)")
    expect(status(500, "x".repeat(1000)).message.length).toBeLessThan(400)
  })

  it("reads Retry-After as seconds or an HTTP date, and retry-after-ms", () => {
    const now = Date.parse("2026-01-01T00:00:00Z")
    expect(Failure.retryAfterMillis({ "retry-after": "2" }, now)).toBe(2000)
    expect(Failure.retryAfterMillis({ "retry-after": "Thu, 01 Jan 2026 00:00:30 GMT" }, now)).toBe(30_000)
    expect(Failure.retryAfterMillis({ "retry-after": "Wed, 31 Dec 2025 23:00:00 GMT" }, now)).toBe(0)
    expect(Failure.retryAfterMillis({ "retry-after-ms": "1500.2", "retry-after": "9" }, now)).toBe(1501)
    expect(Failure.retryAfterMillis({ "retry-after": "soon" }, now)).toBeUndefined()
    expect(Failure.retryAfterMillis({ "retry-after": "-1" }, now)).toBeUndefined()
    expect(Failure.retryAfterMillis({}, now)).toBeUndefined()
    const limited = status(429, "", { "retry-after": "Thu, 01 Jan 1970 00:00:05 GMT" })
    expect(limited._tag === "LlmRateLimitError" && limited.retryAfterMillis).toBe(5000)
  })

  it("reads the provider's own code of an error in the stream as the catalog code it means", () => {
    const code = (fields: { code?: unknown; type?: unknown; status?: unknown }) => Failure.streamErrorCode(fields)
    expect([
      code({ code: "upstream_overloaded", type: "server_error" }),
      code({ code: "rate_limit_exceeded", type: "invalid_request_error" }),
      code({ type: "rate_limit_error" }),
      code({ status: "RESOURCE_EXHAUSTED" }),
      code({ code: 429 }),
      code({ code: "503" }),
      code({ code: "invalid_api_key", type: "invalid_request_error" }),
      code({ type: "insufficient_quota" }),
      code({ code: "context_length_exceeded" }),
      code({ code: "LLM_TRANSPORT" }),
      code({ code: "TOOL_DENIED" }),
      code({ code: [[["deep"]]] }),
      code({})
    ]).toStrictEqual([
      "LLM_SERVER",
      "LLM_RATE_LIMIT",
      "LLM_RATE_LIMIT",
      "LLM_RATE_LIMIT",
      "LLM_RATE_LIMIT",
      "LLM_SERVER",
      "LLM_AUTH",
      "LLM_AUTH",
      "LLM_CONTEXT_OVERFLOW",
      "LLM_TRANSPORT",
      "LLM_SERVER",
      "LLM_SERVER",
      "LLM_SERVER"
    ])
    const error = Failure.fromStreamError("DeepSeek", { message: "busy", code: "upstream_overloaded", type: "server_error" })
    expect([error._tag, error.message]).toStrictEqual([
      "LlmServerError",
      "DeepSeek reported an error in the stream (code upstream_overloaded, type server_error): busy"
    ])
    const limited = Failure.fromStreamError("DeepSeek", { message: "slow down", code: 429 })
    expect([limited._tag, limited.message]).toStrictEqual(["LlmRateLimitError", "DeepSeek reported an error in the stream (code 429): slow down"])
    const gateway = Failure.fromStreamError("DeepSeek", { message: "bad gateway", code: 502 })
    expect(gateway._tag === "LlmServerError" && gateway.status).toBe(502)
    expect(Failure.fromStreamError("DeepSeek", "overloaded").message).toBe("DeepSeek reported an error in the stream: overloaded")
    const cyclic: Record<string, unknown> = { reason: "loop" }
    cyclic["self"] = cyclic
    expect(Failure.fromStreamError("DeepSeek", cyclic).message).toContain("[Circular]")
  })

  it("scrubs the key from every message it builds", () => {
    expect(status(401, JSON.stringify({ error: { message: "key sk-unit rejected" } })).message).toContain("key [redacted] rejected")
    expect(Failure.describe(new Error("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:9") })))
      .toBe("fetch failed: connect ECONNREFUSED 127.0.0.1:9")
  })
})
