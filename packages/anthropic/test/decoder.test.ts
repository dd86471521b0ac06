/**
 * Totality and the decoder's own rules: whatever bytes arrive, decoding ends in a typed
 * `LlmError` with a catalog code or in a `finish` — never a defect, never an unbounded message;
 * the SSE parser's line rules; the stream ending at message_stop; time in proportion to size.
 */
import { Decoder } from "@dsh/anthropic"
import { Fixture } from "@dsh/anthropic/testing"
import { ErrorCode, type FinishReason, LlmError, type StreamChunk } from "@dsh/llm"
import { ChunkContract } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Stream } from "effect"
import { type Outcome, run } from "./util.ts"

const opening = [Fixture.data(Fixture.messageStart()), Fixture.data(Fixture.blockStart(0, { type: "text", text: "" }))]
const closing = [
  Fixture.data(Fixture.blockStop(0)),
  Fixture.data(Fixture.messageDelta("end_turn")),
  Fixture.data(Fixture.messageStop)
]

const depth = 100_000
const deepArray = "[".repeat(depth) + "]".repeat(depth)
const deepObject = "{\"a\":".repeat(depth) + "1" + "}".repeat(depth)
const mebibytes11 = "x".repeat(11 * 1024 * 1024)
// `data: ` and then raw bytes
const dataBytes = (...bytes: ReadonlyArray<number>): Fixture.Write => ({ bytes: [100, 97, 116, 97, 58, 32, ...bytes] })

type Wanted =
  | { readonly fails: ErrorCode.ErrorCode; readonly includes?: string }
  | { readonly finish: FinishReason.Kind; readonly text?: string }

const hostile: ReadonlyArray<readonly [string, ReadonlyArray<Fixture.Write>, Wanted]> = [
  ["an event nested 100 000 levels deep", [...opening, `data: ${deepArray}\n\n`], { fails: "LLM_PROTOCOL", includes: "not a JSON object" }],
  ["a deep value under a key nobody reads", [...opening, `data: {"type":"ping","x":${deepObject}}\n\n`, ...closing], { finish: "stop" }],
  ["a deep value where the delta belongs", [...opening, `data: {"type":"content_block_delta","index":0,"delta":${deepArray}}\n\n`], {
    fails: "LLM_PROTOCOL",
    includes: "no delta object"
  }],
  ["a deep value where the text belongs", [...opening, `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${deepArray}}}\n\n`], {
    fails: "LLM_PROTOCOL"
  }],
  ["a deep message_start", [`data: {"type":"message_start","message":${deepObject}}\n\n`], { fails: "LLM_PROTOCOL" }],
  ["a deep tool input at the block's start", [
    Fixture.data(Fixture.messageStart()),
    `data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":${deepObject}}}\n\n`,
    Fixture.data(Fixture.blockStop(0)),
    Fixture.data(Fixture.messageDelta("tool_use")),
    Fixture.data(Fixture.messageStop)
  ], { fails: "LLM_PROTOCOL" }],
  ["a deep server block", [
    Fixture.data(Fixture.messageStart()),
    `data: {"type":"content_block_start","index":0,"content_block":{"type":"mystery","x":${deepObject}}}\n\n`,
    Fixture.data(Fixture.blockStop(0)),
    Fixture.data(Fixture.messageDelta("end_turn")),
    Fixture.data(Fixture.messageStop)
  ], { finish: "stop" }],
  ["a deep error", [...opening, `data: {"type":"error","error":${deepObject}}\n\n`], { fails: "LLM_SERVER" }],
  ["a 200 body that is an error as JSON, not events", ['{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'], {
    fails: "LLM_SERVER",
    includes: "Overloaded"
  }],
  ["a 200 body that is a rate-limit error as JSON, across reads", ['{"type":"error",', '"error":{"type":"rate_limit_error","message":"slow down"}}\n'], {
    fails: "LLM_RATE_LIMIT"
  }],
  ["a 200 body of JSON that is no error", ['{"type":"message","content":[]}'], { fails: "LLM_PROTOCOL", includes: "without any event" }],
  ["a deep event: error that is not an object", [`event: error\ndata: ${deepArray}\n\n`], { fails: "LLM_SERVER" }],
  ["a line of 11 MiB that never ends", [...opening, `data: "${mebibytes11}`], { fails: "LLM_PROTOCOL", includes: "grew beyond" }],
  ["an event of 11 MiB", [...opening, `data: "${mebibytes11}"\n\n`, ...closing], { fails: "LLM_PROTOCOL", includes: "grew beyond" }],
  ["a byte that is never UTF-8", [...opening, dataBytes(255, 10, 10)], { fails: "LLM_PROTOCOL", includes: "not valid UTF-8" }],
  ["an encoded lone surrogate", [...opening, dataBytes(34, 0xed, 0xa0, 0x80, 34, 10, 10)], { fails: "LLM_PROTOCOL", includes: "not valid UTF-8" }],
  ["an overlong encoding", [...opening, dataBytes(34, 0xc0, 0xaf, 34, 10, 10)], { fails: "LLM_PROTOCOL", includes: "not valid UTF-8" }],
  ["a body cut inside a character", [...opening, dataBytes(34, 0xe6, 0x95)], { fails: "LLM_PROTOCOL", includes: "UTF-8" }],
  ...["42", "null", "\"text\"", "[]", "true", "1e400"].map((json): readonly [string, ReadonlyArray<Fixture.Write>, Wanted] => [
    `data: ${json}`,
    [...opening, `data: ${json}\n\n`],
    { fails: "LLM_PROTOCOL", includes: "not a JSON object" }
  ]),
  ["an object without a type", [...opening, `data: {"index":0}\n\n`], { fails: "LLM_PROTOCOL", includes: "without a type" }],
  ["a type that is not a string", [...opening, `data: {"type":7}\n\n`], { fails: "LLM_PROTOCOL", includes: "without a type" }],
  ["an index beyond any integer", [...opening, `data: {"type":"content_block_delta","index":1e308,"delta":{"type":"text_delta","text":"x"}}\n\n`], {
    fails: "LLM_PROTOCOL",
    includes: "index"
  }],
  ["a negative index", [...opening, `data: {"type":"content_block_stop","index":-1}\n\n`], { fails: "LLM_PROTOCOL", includes: "index" }],
  ["usage counts beyond any integer", [`data: {"type":"message_start","message":{"usage":{"input_tokens":1e400}}}\n\n`], { fails: "LLM_PROTOCOL" }],
  ["a stop reason of 100 000 characters", [...opening, Fixture.data(Fixture.blockStop(0)), Fixture.data(Fixture.messageDelta("z".repeat(100_000))), Fixture.data(Fixture.messageStop)], {
    finish: "other"
  }],
  ["a stop reason that is not a string", [...opening, Fixture.data(Fixture.blockStop(0)), `data: {"type":"message_delta","delta":{"stop_reason":7}}\n\n`], {
    fails: "LLM_PROTOCOL"
  }],
  ["a second message_start", [...opening, Fixture.data(Fixture.messageStart())], { fails: "LLM_PROTOCOL", includes: "second message_start" }],
  ["a block started twice", [...opening, Fixture.data(Fixture.blockStart(0, { type: "text", text: "" }))], { fails: "LLM_PROTOCOL", includes: "started twice" }],
  ["a delta after its block stopped", [...opening, Fixture.data(Fixture.blockStop(0)), Fixture.data(Fixture.textDelta(0, "late"))], {
    fails: "LLM_PROTOCOL",
    includes: "after its content_block_stop"
  }],
  ["a tool_use without a name", [Fixture.data(Fixture.messageStart()), Fixture.data(Fixture.blockStart(0, { type: "tool_use", id: "t", input: {} }))], {
    fails: "LLM_PROTOCOL",
    includes: "has no name"
  }],
  ["a redacted_thinking without data", [Fixture.data(Fixture.messageStart()), Fixture.data(Fixture.blockStart(0, { type: "redacted_thinking" }))], {
    fails: "LLM_PROTOCOL",
    includes: "has no data"
  }],
  ["a server block whose streamed input is not JSON", [
    Fixture.data(Fixture.messageStart()),
    Fixture.data(Fixture.blockStart(0, { type: "server_tool_use", id: "s", name: "web_search", input: {} })),
    Fixture.data(Fixture.inputJsonDelta(0, "{\"query\": ")),
    Fixture.data(Fixture.blockStop(0))
  ], { fails: "LLM_PROTOCOL", includes: "is not JSON" }],
  ["a message_stop before any stop reason", [...opening, Fixture.data(Fixture.blockStop(0)), Fixture.data(Fixture.messageStop)], {
    fails: "LLM_PROTOCOL",
    includes: "before any stop_reason"
  }],
  ["an error event whose message is 1 MB", [...opening, Fixture.data(Fixture.errorEvent("overloaded_error", "m".repeat(1_000_000)))], { fails: "LLM_SERVER" }],
  ["an error event that is a bare JSON string", ["event: error\ndata: \"overloaded\"\n\n"], { fails: "LLM_SERVER", includes: "overloaded" }],
  ["text after a retry: field and an id: field", [
    "retry: 1000\nid: 7\n\n",
    ...opening,
    "id: 8\nretry: x\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n",
    ...closing
  ], { finish: "stop", text: "ok" }],
  ["a data field without a colon, and fields nobody knows", [
    ...opening,
    "data\nfoo: bar\nevent\n\n",
    ...closing
  ], { fails: "LLM_PROTOCOL", includes: "not JSON" }]
]

/** Longest message an error may carry here: what the decoder quotes is bounded. */
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
    if (wanted.includes !== undefined) expect(failure!.message).toContain(wanted.includes)
    expect(failure!.message.length).toBeLessThan(messageBound)
    return
  }
  expect(failure?.message).toBeUndefined()
  expect(ChunkContract.check(outcome.chunks)).toStrictEqual([])
  const reason = outcome.assembled.finishReason!
  expect(reason.kind).toBe(wanted.finish)
  expect(JSON.stringify(reason).length).toBeLessThan(messageBound)
  if (wanted.text !== undefined) expect(outcome.assembled.message.content).toStrictEqual([{ type: "text", text: wanted.text }])
}

const decodeWrites = (writes: ReadonlyArray<Fixture.Write>) =>
  run(Decoder.decode(Stream.fromIterable(Fixture.chunks({ description: "", writes }))))

describe("hostile responses end typed, never as defects", () => {
  for (const [name, writes, wanted] of hostile) {
    it.effect(name, () => Effect.map(decodeWrites(writes), (outcome) => judge(outcome, wanted)), 30_000)
  }
})

// A small deterministic generator (mulberry32): the same mutations every run.
const random = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe("mutated fixtures", () => {
  it("every fixture with bytes flipped, dropped or cut ends typed, and never throws", () => {
    const next = random(2026)
    const sources = Fixture.names().map(Fixture.load).filter((f) => (f.status ?? 200) === 200).map(Fixture.body)
    let failures = 0
    const untyped: Array<string> = []
    const unfinished: Array<number> = []
    for (let round = 0; round < 2_000; round++) {
      const source = sources[round % sources.length]!
      const bytes = Uint8Array.from(source)
      const edits = 1 + Math.floor(next() * 4)
      for (let e = 0; e < edits; e++) bytes[Math.floor(next() * bytes.length)] = Math.floor(next() * 256)
      const cut = bytes.subarray(0, Math.floor(bytes.length * (0.5 + next() / 2)) + 1)
      const decoder = Decoder.make()
      const out: Array<StreamChunk.StreamChunk> = []
      let failure: LlmError.LlmError | undefined
      for (let at = 0; at < cut.length && failure === undefined;) {
        const size = 1 + Math.floor(next() * 64)
        failure = decoder.feed(cut.subarray(at, at + size), out)
        at += size
      }
      failure ??= decoder.end(out)
      if (failure !== undefined) {
        failures++
        if (!ErrorCode.isErrorCode(failure.code) || failure.message.length >= messageBound) untyped.push(failure.message.slice(0, 200))
      } else if (!decoder.done() || out.at(-1)?.type !== "finish") {
        unfinished.push(round)
      }
    }
    expect(untyped).toStrictEqual([])
    expect(unfinished).toStrictEqual([])
    // the mutations do break most answers: the test exercises the failure paths
    expect(failures).toBeGreaterThan(500)
  })
})

describe("the stream", () => {
  it.effect("ends at message_stop without pulling the input further", () =>
    Effect.gen(function*() {
      let pulled = 0
      const body = Fixture.chunks(Fixture.load("text"))
      const endless = Stream.fromIterable(body).pipe(
        Stream.concat(Stream.forever(Stream.succeed(new TextEncoder().encode(": more\n\n")))),
        Stream.tap(() => Effect.sync(() => void pulled++))
      )
      const outcome = yield* run(Decoder.decode(endless))
      expect(outcome.assembled.finishReason?.kind).toBe("stop")
      expect(pulled).toBe(body.length)
    }))

  it.effect("passes the chunks of a read before the failure found later in that read", () =>
    Effect.gen(function*() {
      const outcome = yield* decodeWrites([
        [...opening, Fixture.data(Fixture.textDelta(0, "kept"))].map((w) => Fixture.payloadText(w as Fixture.Payload)).join("") +
        "data: nope\n\n"
      ])
      expect(outcome.failure?.code).toBe("LLM_PROTOCOL")
      expect(outcome.chunks.filter((c) => c.type === "text-delta").map((c) => c.type === "text-delta" && c.delta)).toStrictEqual(["kept"])
    }))
})

describe("hostile responses cost time in proportion to their size", () => {
  // one assembler per block: a snapshot of the whole answer per block-end would be quadratic
  const blocks = 20_000
  for (const kind of ["text", "tool_use"] as const) {
    it(`20 000 ${kind} blocks`, () => {
      let text = Fixture.eventText(Fixture.messageStart())
      for (let i = 0; i < blocks; i++) {
        text += kind === "text"
          ? Fixture.eventText(Fixture.blockStart(i, { type: "text", text: "" })) + Fixture.eventText(Fixture.textDelta(i, "t"))
          : Fixture.eventText(Fixture.blockStart(i, { type: "tool_use", id: `t${i}`, name: "f", input: {} })) +
            Fixture.eventText(Fixture.inputJsonDelta(i, "{}"))
        text += Fixture.eventText(Fixture.blockStop(i))
      }
      text += Fixture.eventText(Fixture.messageDelta("end_turn")) + Fixture.eventText(Fixture.messageStop)
      const started = performance.now()
      const decoder = Decoder.make()
      const out: Array<StreamChunk.StreamChunk> = []
      expect(decoder.feed(new TextEncoder().encode(text), out)).toBeUndefined()
      const took = performance.now() - started
      expect(out.filter((c) => c.type === "block-end").length).toBe(blocks)
      expect(took).toBeLessThan(5_000)
    })
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
    expect([failure?._tag, failure?.message.startsWith("Anthropic stream: decoding the response failed: TypeError:")])
      .toStrictEqual(["LlmProtocolError", true])
    expect(decoder.feed(bytes, [])).toBe(failure)
    expect(decoder.end()).toBe(failure)
  })
})
