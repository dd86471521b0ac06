/**
 * Totality: whatever bytes the server sends, the adapter's stream ends in a typed `LlmError`
 * with a catalog code or in a `finish` chunk — never a defect, never a RangeError, never an
 * unbounded message. Each hostile response goes through the whole adapter and the fake server
 * on 127.0.0.1.
 */
import { Decoder } from "@dsh/deepseek"
import { Fixture } from "@dsh/deepseek/testing"
import { ErrorCode, type FinishReason, LlmError, type StreamChunk } from "@dsh/llm"
import { ChunkContract } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, type Schema } from "effect"
import { type Outcome, request, streamWith } from "./util.ts"

const text = (delta: { readonly [key: string]: Schema.Json }, finish?: string) =>
  Fixture.data(Fixture.chunk(delta, finish === undefined ? {} : { finish }))
const opening = Fixture.data(Fixture.chunk({ role: "assistant", content: "" }))
const stop = Fixture.data(Fixture.chunk({ content: "" }, { finish: "stop" }))

const depth = 100_000
const deepArray = "[".repeat(depth) + "]".repeat(depth)
const deepObject = "{\"a\":".repeat(depth) + "1" + "}".repeat(depth)

type Wanted =
  | { readonly fails: ErrorCode.ErrorCode; readonly tag?: string; readonly includes?: string }
  | { readonly finish: Partial<FinishReason.FinishReason> & { readonly kind: FinishReason.Kind } }

interface Hostile {
  readonly name: string
  readonly writes: ReadonlyArray<Fixture.Write>
  readonly wanted: Wanted
}

// every response opens like a real one: a role chunk, then the hostile part
const entry = (name: string, writes: ReadonlyArray<Fixture.Write>, wanted: Wanted): Hostile => ({
  name,
  writes: [opening, ...writes],
  wanted
})
const fails = (code: ErrorCode.ErrorCode, includes?: string, tag?: string): Wanted => ({
  fails: code,
  ...(includes === undefined ? {} : { includes }),
  ...(tag === undefined ? {} : { tag })
})
const ends = (finish: Extract<Wanted, { finish: unknown }>["finish"]): Wanted => ({ finish })

const errorEvent = (error: unknown): Fixture.Write => `data: ${JSON.stringify({ error })}\n\n`
// `data: ` and then raw bytes
const dataBytes = (...bytes: ReadonlyArray<number>): Fixture.Write => ({ bytes: [100, 97, 116, 97, 58, 32, ...bytes] })
const mebibytes11 = "x".repeat(11 * 1024 * 1024)

const hostile: ReadonlyArray<Hostile> = [
  // deep nesting: JSON.parse copes, and nothing may recurse over the value afterwards
  entry("a data line nested 100 000 levels deep", [`data: ${deepArray}\n\n`], fails("LLM_PROTOCOL", "not a chat completion chunk")),
  entry("a deep value under a key nobody reads", [`data: {"x":${deepObject},"choices":[]}\n\n`, stop, Fixture.done], ends({ kind: "stop" })),
  entry("a deep value where a string belongs", [`data: {"choices":[{"index":0,"delta":{"content":${deepArray}}}]}\n\n`], fails("LLM_PROTOCOL")),
  entry("a deep error object", [`data: {"error":${deepObject}}\n\n`], fails("LLM_SERVER")),
  entry("a deep error code", [`data: {"error":{"message":"m","code":${deepArray}}}\n\n`], fails("LLM_SERVER", ": m")),
  entry("a deep event: error", [`event: error\ndata: ${deepObject}\n\n`], fails("LLM_SERVER")),
  // size
  entry("a line of 11 MiB that never ends", [`data: "${mebibytes11}`], fails("LLM_PROTOCOL", "maximum size")),
  entry("an event of 11 MiB", [`data: "${mebibytes11}"\n\n`, stop, Fixture.done], fails("LLM_PROTOCOL")),
  // encoding
  entry("a byte that is never UTF-8", [dataBytes(255, 10, 10)], fails("LLM_PROTOCOL", "not valid UTF-8")),
  entry("an encoded lone surrogate", [dataBytes(34, 0xed, 0xa0, 0x80, 34, 10, 10)], fails("LLM_PROTOCOL", "not valid UTF-8")),
  entry("an overlong encoding", [dataBytes(34, 0xc0, 0xaf, 34, 10, 10)], fails("LLM_PROTOCOL", "not valid UTF-8")),
  entry("a body cut inside a character", [dataBytes(34, 0xe6, 0x95)], fails("LLM_PROTOCOL", "UTF-8")),
  // JSON that is not a chunk
  ...["42", "null", "\"text\"", "[]", "true", "1e400"].map((json) =>
    entry(`data: ${json}`, [`data: ${json}\n\n`], fails("LLM_PROTOCOL", "not a chat completion chunk"))
  ),
  entry(
    "usage counts beyond any integer",
    [`data: {"choices":[],"usage":{"prompt_tokens":1e400,"completion_tokens":1}}\n\n`],
    fails("LLM_PROTOCOL")
  ),
  entry(
    "a tool-call index beyond any integer",
    [`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1e308,"id":"c","function":{"name":"f"}}]}}]}\n\n`],
    fails("LLM_PROTOCOL")
  ),
  // finish reasons
  entry("an unknown finish_reason", [text({ content: "x" }, "tired"), Fixture.done], ends({ kind: "other", name: "tired", raw: "tired" })),
  entry("a finish_reason of 100 000 characters", [text({ content: "x" }, "z".repeat(100_000)), Fixture.done], ends({ kind: "other" })),
  entry(
    "finish_reason: error",
    [text({ content: "Par" }), text({ content: "" }, "error"), Fixture.done],
    ends({ kind: "error", code: "LLM_SERVER", raw: "error" })
  ),
  entry("a finish_reason that is not a string", [`data: {"choices":[{"index":0,"delta":{},"finish_reason":7}]}\n\n`], fails("LLM_PROTOCOL")),
  // errors the server reports in the stream, with its own codes
  entry(
    "an error with the provider's code upstream_overloaded",
    [errorEvent({ message: "try again later", type: "server_error", code: "upstream_overloaded" })],
    fails("LLM_SERVER", "upstream_overloaded", "LlmServerError")
  ),
  entry(
    "an error coded rate_limit_exceeded",
    [errorEvent({ message: "slow down", type: "requests", code: "rate_limit_exceeded" })],
    fails("LLM_RATE_LIMIT", "rate_limit_exceeded", "LlmRateLimitError")
  ),
  entry("an error typed rate_limit_error", [errorEvent({ message: "slow down", type: "rate_limit_error" })], fails("LLM_RATE_LIMIT")),
  entry("an error coded 429 (a number)", [errorEvent({ message: "slow down", code: 429 })], fails("LLM_RATE_LIMIT", "429")),
  entry("an error coded 502", [errorEvent({ message: "bad gateway", code: 502 })], fails("LLM_SERVER")),
  entry(
    "an error coded invalid_api_key",
    [errorEvent({ message: "bad key", type: "invalid_request_error", code: "invalid_api_key" })],
    fails("LLM_AUTH")
  ),
  entry("an error typed insufficient_quota", [errorEvent({ message: "pay up", type: "insufficient_quota" })], fails("LLM_AUTH")),
  entry(
    "an error coded context_length_exceeded",
    [errorEvent({ message: "too long", type: "invalid_request_error", code: "context_length_exceeded" })],
    fails("LLM_CONTEXT_OVERFLOW", "too long", "LlmContextOverflowError")
  ),
  entry("an error carrying a catalog code", [errorEvent({ message: "relayed", code: "LLM_RATE_LIMIT" })], fails("LLM_RATE_LIMIT")),
  entry(
    "an error carrying a code of another layer",
    [errorEvent({ message: "relayed", code: "TOOL_DENIED" })],
    fails("LLM_SERVER", "TOOL_DENIED")
  ),
  entry("an error that is a bare string", [errorEvent("overloaded")], fails("LLM_SERVER", "overloaded")),
  entry(
    "an error whose message is not a string",
    [errorEvent({ message: 5, code: "upstream_overloaded" })],
    fails("LLM_SERVER", "upstream_overloaded")
  ),
  entry("an error whose message is 1 MB", [errorEvent({ message: "m".repeat(1_000_000) })], fails("LLM_SERVER")),
  entry(
    "an error beside a finish_reason error",
    [`data: {"error":{"message":"upstream died","code":"server_error"},"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}\n\n`],
    fails("LLM_SERVER", "upstream died")
  ),
  entry(
    "event: error coded rate_limit_exceeded",
    [`event: error\ndata: {"error":{"message":"slow down","code":"rate_limit_exceeded"}}\n\n`],
    fails("LLM_RATE_LIMIT")
  ),
  entry("event: error that is plain text", ["event: error\ndata: upstream went away\n\n"], fails("LLM_SERVER", "upstream went away")),
  entry("event: error that is a bare JSON string", ["event: error\ndata: \"overloaded\"\n\n"], fails("LLM_SERVER", "overloaded"))
]

/** Longest message an error may carry here: what the adapter quotes is bounded. */
const messageBound = 2_500

const judge = (outcome: Outcome, wanted: Wanted): void => {
  if (Exit.isFailure(outcome.exit)) {
    expect(Cause.hasDies(outcome.exit.cause), Cause.pretty(outcome.exit.cause).slice(0, 500)).toBe(false)
  }
  const failure = outcome.failure
  if ("fails" in wanted) {
    expect(failure, "the stream should have failed").toBeDefined()
    expect(LlmError.classes.some((c) => failure instanceof c)).toBe(true)
    expect(failure!.code).toBe(wanted.fails)
    if (wanted.tag !== undefined) expect(failure!._tag).toBe(wanted.tag)
    if (wanted.includes !== undefined) expect(failure!.message).toContain(wanted.includes)
    expect(failure!.message.length).toBeLessThan(messageBound)
    return
  }
  expect(failure?.message).toBeUndefined()
  expect(ChunkContract.check(outcome.chunks)).toStrictEqual([])
  const reason = outcome.assembled.finishReason!
  expect(reason).toMatchObject(wanted.finish)
  if (reason.kind === "error") expect(ErrorCode.isErrorCode(reason.code)).toBe(true)
  expect(JSON.stringify(reason).length).toBeLessThan(messageBound)
}

describe("hostile responses end typed, never as defects", () => {
  for (const { name, wanted, writes } of hostile) {
    it.live(name, () =>
      Effect.gen(function*() {
        const { outcome } = yield* streamWith({ description: name, writes }, request("hi"), { idleTimeout: "10 seconds" })
        judge(outcome, wanted)
      }), 30_000)
  }
})

describe("hostile responses cost time in proportion to their size", () => {
  // Before each block-end was built by its own assembler, closing a block took a snapshot of
  // the whole answer: 20 000 blocks took tens of seconds of one synchronous stretch, which no
  // idle timeout or interruption can cut short.
  const blocks = 20_000
  const calls = `data: ${JSON.stringify(Fixture.chunk({
    tool_calls: Array.from({ length: blocks }, (_, i) => ({ index: i, id: `c${i}`, function: { name: "f", arguments: "{}" } }))
  }))}\n\n`
  const alternating = Array.from(
    { length: blocks },
    (_, i) => `data: ${JSON.stringify(Fixture.chunk(i % 2 === 0 ? { reasoning_content: "r" } : { content: "t" }))}\n\n`
  ).join("")
  for (const [name, body, finish] of [["20 000 tool calls", calls, "tool_calls"], ["20 000 alternating blocks", alternating, "stop"]] as const) {
    it.live(name, () =>
      Effect.gen(function*() {
        const writes = [opening, body, Fixture.data(Fixture.chunk({}, { finish })), Fixture.done]
        const started = Date.now()
        const { outcome } = yield* streamWith({ description: name, writes }, request("hi"), { idleTimeout: "30 seconds" })
        const took = Date.now() - started
        expect(outcome.failure?.message).toBeUndefined()
        expect(outcome.assembled.message.content.length).toBe(blocks)
        expect(took).toBeLessThan(5_000)
      }), 60_000)
  }
})

describe("the decoder's last line of defence", () => {
  it("turns anything a step throws into LlmProtocolError, and stays failed", () => {
    const decoder = Decoder.make()
    // an output that refuses the chunks stands in for a step that throws on an unforeseen input
    const refusing: Array<StreamChunk.StreamChunk> = []
    Object.freeze(refusing)
    const bytes = Fixture.body(Fixture.load("text"))
    const failure = decoder.feed(bytes, refusing)
    expect([failure?._tag, failure?.message.startsWith("DeepSeek stream: decoding the response failed: TypeError:")])
      .toStrictEqual(["LlmProtocolError", true])
    expect(decoder.feed(bytes, [])).toBe(failure)
    expect(decoder.end()).toBe(failure)
  })
})
