import { Assembler, Content, FinishReason, Ids, LlmError, Message, StreamChunk, Usage } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema, Stream } from "effect"

type Chunk = StreamChunk.StreamChunk
type Block = Content.ContentBlock

const S = StreamChunk
const c1 = Ids.callId("call_1")
const c2 = Ids.callId("call_2")
const c3 = Ids.callId("call_3")
const usage = Usage.make({ inputTokens: 12, outputTokens: 34 })

// `[kind, index]` pairs, `index` undefined when the anomaly has none.
const kinds = (anomalies: ReadonlyArray<Assembler.Anomaly>) => anomalies.map((a) => [a.kind, a.index])

// Feeds chunks one by one, recording what each push reported.
const feed = (chunks: ReadonlyArray<Chunk>) => {
  const assembler = Assembler.make()
  const pushed = chunks.map((chunk) => assembler.push(chunk))
  return { assembler, pushed }
}

describe("Assembler: well-formed input", () => {
  const content: ReadonlyArray<Block> = [
    Content.reasoning("Let me look 🤔", "sig=="),
    Content.text("Reading the file. "),
    Content.toolCall(c1, "read_file", "{\"path\":\"a.txt\"}"),
    Content.image("image/png", "iVBOR"),
    { type: "custom", kind: "citation", data: { url: "https://x" } },
    Content.toolCall(c2, "ls", "{}")
  ]

  it("assembles toChunks back into the message with no anomalies", () => {
    for (const fragment of [Assembler.whole, Assembler.pieces(1), Assembler.pieces(3)]) {
      const result = Assembler.assemble(Assembler.toChunks(content, { usage, fragment }))
      expect(result.message).toStrictEqual({ role: "assistant", content })
      expect(result.anomalies).toStrictEqual([])
      expect(result.usage).toStrictEqual(usage)
      expect(result.finishReason).toStrictEqual(FinishReason.toolCalls)
    }
  })

  it("push returns no anomalies for well-formed chunks", () => {
    const { assembler, pushed } = feed(Assembler.toChunks(content, { usage }))
    expect(pushed.every((a) => a.length === 0)).toBe(true)
    expect(assembler.finished()).toBe(true)
    expect(assembler.openBlocks()).toBe(0)
  })

  it("an empty response is just a finish", () => {
    const result = Assembler.assemble([S.finish(FinishReason.stop)])
    expect(result).toStrictEqual({
      message: { role: "assistant", content: [] },
      finishReason: FinishReason.stop,
      usage: undefined,
      anomalies: []
    })
  })

  it("a later usage chunk replaces an earlier one", () => {
    const later = Usage.make({ inputTokens: 12, outputTokens: 40, reasoningTokens: 3 })
    const result = Assembler.assemble([S.usage(usage), S.usage(later), S.finish(FinishReason.stop)])
    expect(result.usage).toStrictEqual(later)
  })

  it("a reasoning block whose block-end adds a signature is not an anomaly", () => {
    const { assembler, pushed } = feed([
      S.blockStart(0, "reasoning"),
      S.reasoningDelta(0, "think"),
      S.reasoningDelta(0, "ing"),
      S.blockEnd(0, Content.reasoning("thinking", "opaque-signature")),
      S.finish(FinishReason.stop)
    ])
    expect(pushed).toStrictEqual([[], [], [], [], []])
    const result = assembler.done()
    expect(result.anomalies).toStrictEqual([])
    expect(result.message.content).toStrictEqual([Content.reasoning("thinking", "opaque-signature")])
  })

  it("a signed reasoning block-end whose text differs is still a mismatch", () => {
    const result = Assembler.assemble([
      S.blockStart(0, "reasoning"),
      S.reasoningDelta(0, "think"),
      S.blockEnd(0, Content.reasoning("thought", "sig")),
      S.finish(FinishReason.stop)
    ])
    expect(kinds(result.anomalies)).toStrictEqual([["block-end-mismatch", 0]])
    expect(result.message.content).toStrictEqual([Content.reasoning("thought", "sig")])
  })

  it("interleaved parallel tool calls that end out of order come out ordered by index", () => {
    const chunks: Array<Chunk> = [
      S.blockStart(0, "tool-call"),
      S.blockStart(1, "tool-call"),
      S.blockStart(2, "tool-call"),
      S.toolCallDelta(1, c2, "{\"b\":", "beta"),
      S.toolCallDelta(0, c1, "{\"a\":", "alpha"),
      S.toolCallDelta(2, c3, "{\"c\":", "gamma"),
      S.toolCallDelta(1, c2, "2}"),
      S.toolCallDelta(2, c3, "3}"),
      S.toolCallDelta(0, c1, "1}"),
      S.blockEnd(2, Content.toolCall(c3, "gamma", "{\"c\":3}")),
      S.blockEnd(0, Content.toolCall(c1, "alpha", "{\"a\":1}")),
      S.blockEnd(1, Content.toolCall(c2, "beta", "{\"b\":2}")),
      S.finish(FinishReason.toolCalls)
    ]
    const result = Assembler.assemble(chunks)
    expect(result.anomalies).toStrictEqual([])
    expect(result.message.content).toStrictEqual([
      Content.toolCall(c1, "alpha", "{\"a\":1}"),
      Content.toolCall(c2, "beta", "{\"b\":2}"),
      Content.toolCall(c3, "gamma", "{\"c\":3}")
    ])
  })

  it("the tool name may arrive in a later fragment than the first", () => {
    const result = Assembler.assemble([
      S.blockStart(0, "tool-call"),
      S.toolCallDelta(0, c1, "{"),
      S.toolCallDelta(0, c1, "}", "late_name"),
      S.blockEnd(0, Content.toolCall(c1, "late_name", "{}")),
      S.finish(FinishReason.toolCalls)
    ])
    expect(result.anomalies).toStrictEqual([])
    expect(result.message.content).toStrictEqual([Content.toolCall(c1, "late_name", "{}")])
  })
})

describe("Assembler: each documented anomaly", () => {
  it("duplicate-block-start: ignores the chunk (keeps what was built)", () => {
    const { assembler, pushed } = feed([
      S.blockStart(0, "text"),
      S.textDelta(0, "a"),
      S.blockStart(0, "text"),
      S.textDelta(0, "b"),
      S.blockEnd(0, Content.text("ab")),
      S.finish(FinishReason.stop)
    ])
    expect(kinds(pushed[2]!)).toStrictEqual([["duplicate-block-start", 0]])
    const result = assembler.done()
    expect(kinds(result.anomalies)).toStrictEqual([["duplicate-block-start", 0]])
    expect(result.message.content).toStrictEqual([Content.text("ab")])
  })

  it("duplicate-block-start of another type does not retype the open block", () => {
    const result = Assembler.assemble([
      S.blockStart(0, "text"),
      S.blockStart(0, "reasoning"),
      S.textDelta(0, "still text"),
      S.finish(FinishReason.stop)
    ])
    expect(kinds(result.anomalies)).toStrictEqual([["duplicate-block-start", 0], ["unclosed-block", 0]])
    expect(result.message.content).toStrictEqual([Content.text("still text")])
  })

  it("index-reused: opens a new block at that index; both are kept in arrival order", () => {
    const { assembler, pushed } = feed([
      S.blockStart(0, "text"),
      S.textDelta(0, "first"),
      S.blockEnd(0, Content.text("first")),
      S.blockStart(1, "text"),
      S.textDelta(1, "later index"),
      S.blockEnd(1, Content.text("later index")),
      S.blockStart(0, "reasoning"),
      S.reasoningDelta(0, "second"),
      S.blockEnd(0, Content.reasoning("second")),
      S.finish(FinishReason.stop)
    ])
    expect(kinds(pushed[6]!)).toStrictEqual([["index-reused", 0]])
    const result = assembler.done()
    expect(kinds(result.anomalies)).toStrictEqual([["index-reused", 0]])
    expect(result.message.content).toStrictEqual([
      Content.text("first"),
      Content.reasoning("second"),
      Content.text("later index")
    ])
  })

  for (
    const [name, delta, built] of [
      ["text-delta", S.textDelta(2, "hi"), Content.text("hi")],
      ["reasoning-delta", S.reasoningDelta(2, "hm"), Content.reasoning("hm")],
      ["tool-call-delta", S.toolCallDelta(2, c1, "{}", "f"), Content.toolCall(c1, "f", "{}")]
    ] as const
  ) {
    it(`delta-without-start (${name}): opens the block implicitly, typed by the delta`, () => {
      const { assembler, pushed } = feed([delta])
      expect(kinds(pushed[0]!)).toStrictEqual([["delta-without-start", 2]])
      expect(assembler.openBlocks()).toBe(1)
      expect(assembler.snapshot()).toStrictEqual([built])
      // the implicitly opened block accepts its block-end without a mismatch
      expect(assembler.push(S.blockEnd(2, built))).toStrictEqual([])
      assembler.push(S.finish(FinishReason.stop))
      const result = assembler.done()
      expect(kinds(result.anomalies)).toStrictEqual([["delta-without-start", 2]])
      expect(result.message.content).toStrictEqual([built])
    })
  }

  it("delta-without-start then finish closes the implicit block with its deltas", () => {
    const result = Assembler.assemble([
      S.reasoningDelta(4, "a"),
      S.reasoningDelta(4, "b"),
      S.finish(FinishReason.length)
    ])
    expect(kinds(result.anomalies)).toStrictEqual([["delta-without-start", 4], ["unclosed-block", 4]])
    expect(result.message.content).toStrictEqual([Content.reasoning("ab")])
  })

  it("delta-after-end: drops the delta", () => {
    const { assembler, pushed } = feed([
      S.blockStart(0, "text"),
      S.textDelta(0, "done"),
      S.blockEnd(0, Content.text("done")),
      S.textDelta(0, " and more"),
      S.toolCallDelta(0, c1, "{}", "f"),
      S.finish(FinishReason.stop)
    ])
    expect(kinds(pushed[3]!)).toStrictEqual([["delta-after-end", 0]])
    expect(kinds(pushed[4]!)).toStrictEqual([["delta-after-end", 0]])
    expect(assembler.openBlocks()).toBe(0)
    const result = assembler.done()
    expect(kinds(result.anomalies)).toStrictEqual([["delta-after-end", 0], ["delta-after-end", 0]])
    expect(result.message.content).toStrictEqual([Content.text("done")])
  })

  it("delta-type-mismatch: drops the delta (text into a tool call, text into an image)", () => {
    const { assembler, pushed } = feed([
      S.blockStart(0, "tool-call"),
      S.toolCallDelta(0, c1, "{\"a\":", "f"),
      S.textDelta(0, "oops"),
      S.toolCallDelta(0, c1, "1}"),
      S.blockEnd(0, Content.toolCall(c1, "f", "{\"a\":1}")),
      S.blockStart(1, "image"),
      S.textDelta(1, "not an image"),
      S.blockEnd(1, Content.image("image/png", "AAAA")),
      S.blockStart(2, "text"),
      S.reasoningDelta(2, "private"),
      S.textDelta(2, "public"),
      S.blockEnd(2, Content.text("public")),
      S.finish(FinishReason.toolCalls)
    ])
    expect(kinds(pushed[2]!)).toStrictEqual([["delta-type-mismatch", 0]])
    expect(kinds(pushed[6]!)).toStrictEqual([["delta-type-mismatch", 1]])
    expect(kinds(pushed[9]!)).toStrictEqual([["delta-type-mismatch", 2]])
    const result = assembler.done()
    expect(kinds(result.anomalies)).toStrictEqual([
      ["delta-type-mismatch", 0],
      ["delta-type-mismatch", 1],
      ["delta-type-mismatch", 2]
    ])
    expect(result.message.content).toStrictEqual([
      Content.toolCall(c1, "f", "{\"a\":1}"),
      Content.image("image/png", "AAAA"),
      Content.text("public")
    ])
  })

  it("tool-call-conflict (id): keeps the first id", () => {
    const { assembler, pushed } = feed([
      S.blockStart(0, "tool-call"),
      S.toolCallDelta(0, c1, "{\"x\":", "f"),
      S.toolCallDelta(0, c2, "1}"),
      S.finish(FinishReason.toolCalls)
    ])
    expect(kinds(pushed[2]!)).toStrictEqual([["tool-call-conflict", 0]])
    const result = assembler.done()
    expect(kinds(result.anomalies)).toStrictEqual([["tool-call-conflict", 0], ["unclosed-block", 0]])
    // the arguments of the conflicting fragment are still appended
    expect(result.message.content).toStrictEqual([Content.toolCall(c1, "f", "{\"x\":1}")])
  })

  it("tool-call-conflict (name): keeps the first name; an empty name is no conflict", () => {
    const { assembler, pushed } = feed([
      S.blockStart(0, "tool-call"),
      S.toolCallDelta(0, c1, "{", "first_name"),
      S.toolCallDelta(0, c1, "", ""),
      S.toolCallDelta(0, c1, "}", "second_name"),
      S.blockEnd(0, Content.toolCall(c1, "first_name", "{}")),
      S.finish(FinishReason.toolCalls)
    ])
    expect(pushed[2]).toStrictEqual([])
    expect(kinds(pushed[3]!)).toStrictEqual([["tool-call-conflict", 0]])
    const result = assembler.done()
    expect(kinds(result.anomalies)).toStrictEqual([["tool-call-conflict", 0]])
    expect(result.message.content).toStrictEqual([Content.toolCall(c1, "first_name", "{}")])
  })

  it("tool-call-conflict on both id and name in one chunk reports both", () => {
    const { pushed } = feed([
      S.toolCallDelta(0, c1, "", "f"),
      S.toolCallDelta(0, c2, "", "g")
    ])
    expect(kinds(pushed[0]!)).toStrictEqual([["delta-without-start", 0]])
    expect(kinds(pushed[1]!)).toStrictEqual([["tool-call-conflict", 0], ["tool-call-conflict", 0]])
  })

  it("end-without-start: accepts the block, in index order", () => {
    const { assembler, pushed } = feed([
      S.blockStart(1, "text"),
      S.textDelta(1, "after"),
      S.blockEnd(1, Content.text("after")),
      S.blockEnd(0, Content.image("image/gif", "R0lG")),
      S.finish(FinishReason.stop)
    ])
    expect(kinds(pushed[3]!)).toStrictEqual([["end-without-start", 0]])
    const result = assembler.done()
    expect(kinds(result.anomalies)).toStrictEqual([["end-without-start", 0]])
    expect(result.message.content).toStrictEqual([Content.image("image/gif", "R0lG"), Content.text("after")])
  })

  it("duplicate-block-end: drops the chunk", () => {
    const { assembler, pushed } = feed([
      S.blockStart(0, "text"),
      S.textDelta(0, "once"),
      S.blockEnd(0, Content.text("once")),
      S.blockEnd(0, Content.text("twice")),
      S.finish(FinishReason.stop)
    ])
    expect(kinds(pushed[3]!)).toStrictEqual([["duplicate-block-end", 0]])
    const result = assembler.done()
    expect(kinds(result.anomalies)).toStrictEqual([["duplicate-block-end", 0]])
    expect(result.message.content).toStrictEqual([Content.text("once")])
  })

  it("duplicate-block-end also for a block accepted without start", () => {
    const result = Assembler.assemble([
      S.blockEnd(3, Content.text("a")),
      S.blockEnd(3, Content.text("b")),
      S.finish(FinishReason.stop)
    ])
    expect(kinds(result.anomalies)).toStrictEqual([["end-without-start", 3], ["duplicate-block-end", 3]])
    expect(result.message.content).toStrictEqual([Content.text("a")])
  })

  it("block-end-mismatch: keeps block-end's block", () => {
    const { assembler, pushed } = feed([
      S.blockStart(0, "text"),
      S.textDelta(0, "ab"),
      S.blockEnd(0, Content.text("xy")),
      S.blockStart(1, "text"),
      S.textDelta(1, "same text"),
      S.blockEnd(1, Content.reasoning("same text")),
      S.blockStart(2, "tool-call"),
      S.toolCallDelta(2, c1, "{}", "f"),
      S.blockEnd(2, Content.toolCall(c2, "f", "{}")),
      S.blockStart(3, "image"),
      S.blockEnd(3, { type: "custom", kind: "k", data: 1 }),
      S.finish(FinishReason.stop)
    ])
    expect(kinds(pushed[2]!)).toStrictEqual([["block-end-mismatch", 0]])
    expect(kinds(pushed[5]!)).toStrictEqual([["block-end-mismatch", 1]])
    expect(kinds(pushed[8]!)).toStrictEqual([["block-end-mismatch", 2]])
    expect(kinds(pushed[10]!)).toStrictEqual([["block-end-mismatch", 3]])
    const result = assembler.done()
    expect(result.anomalies.map((a) => a.kind)).toStrictEqual(Array(4).fill("block-end-mismatch"))
    expect(result.message.content).toStrictEqual([
      Content.text("xy"),
      Content.reasoning("same text"),
      Content.toolCall(c2, "f", "{}"),
      { type: "custom", kind: "k", data: 1 }
    ])
  })

  it("an opaque block (image, custom, unknown type) ends without a mismatch when the types agree", () => {
    const result = Assembler.assemble([
      S.blockStart(0, "image"),
      S.blockEnd(0, Content.image("image/png", "AA")),
      S.blockStart(1, "custom"),
      S.blockEnd(1, { type: "custom", kind: "k", data: null }),
      S.blockStart(2, "tool-result"),
      S.blockEnd(2, Content.toolResult({ toolCallId: c1, content: [] })),
      S.finish(FinishReason.stop)
    ])
    expect(result.anomalies).toStrictEqual([])
    expect(result.message.content.map((b) => b.type)).toStrictEqual(["image", "custom", "tool-result"])
  })

  it("unclosed-block: a finish closing two open blocks returns two anomalies", () => {
    const { assembler, pushed } = feed([
      S.blockStart(1, "tool-call"),
      S.toolCallDelta(1, c1, "{\"partial\":", "f"),
      S.blockStart(0, "text"),
      S.textDelta(0, "cut sh"),
      S.finish(FinishReason.length)
    ])
    expect(kinds(pushed[4]!)).toStrictEqual([["unclosed-block", 0], ["unclosed-block", 1]])
    expect(assembler.openBlocks()).toBe(0)
    expect(assembler.finished()).toBe(true)
    const result = assembler.done()
    expect(result.finishReason).toStrictEqual(FinishReason.length)
    expect(kinds(result.anomalies)).toStrictEqual([["unclosed-block", 0], ["unclosed-block", 1]])
    expect(result.message.content).toStrictEqual([
      Content.text("cut sh"),
      Content.toolCall(c1, "f", "{\"partial\":")
    ])
  })

  it("unclosed-block: an open block without deltas of its kind (image, custom) is dropped", () => {
    const { assembler, pushed } = feed([
      S.blockStart(0, "image"),
      S.blockStart(1, "text"),
      S.textDelta(1, "kept"),
      S.blockStart(2, "custom"),
      S.finish(FinishReason.stop)
    ])
    expect(kinds(pushed[4]!)).toStrictEqual([["unclosed-block", 0], ["unclosed-block", 1], ["unclosed-block", 2]])
    expect(assembler.done().message.content).toStrictEqual([Content.text("kept")])
  })

  it("unclosed-block at the end of input, then missing-finish", () => {
    const { assembler, pushed } = feed([S.blockStart(0, "text"), S.textDelta(0, "no end")])
    expect(pushed).toStrictEqual([[], []])
    const result = assembler.done()
    expect(kinds(result.anomalies)).toStrictEqual([["unclosed-block", 0], ["missing-finish", undefined]])
    expect(result.message.content).toStrictEqual([Content.text("no end")])
    expect(result.finishReason).toBeUndefined()
  })

  it("duplicate-finish: ignores it", () => {
    const { assembler, pushed } = feed([
      S.finish(FinishReason.stop),
      S.finish(FinishReason.error("LLM_SERVER", "late failure"))
    ])
    expect(kinds(pushed[1]!)).toStrictEqual([["duplicate-finish", undefined]])
    expect("index" in pushed[1]![0]!).toBe(false)
    const result = assembler.done()
    expect(result.finishReason).toStrictEqual(FinishReason.stop)
    expect(kinds(result.anomalies)).toStrictEqual([["duplicate-finish", undefined]])
  })

  it("chunk-after-finish: ignores every kind of chunk", () => {
    const late = Usage.make({ inputTokens: 999 })
    const after: Array<Chunk> = [
      S.blockStart(1, "text"),
      S.textDelta(0, "x"),
      S.reasoningDelta(5, "y"),
      S.toolCallDelta(0, c1, "{}", "f"),
      S.blockEnd(0, Content.text("replaced?")),
      S.usage(late)
    ]
    const { assembler, pushed } = feed([
      S.blockStart(0, "text"),
      S.textDelta(0, "the answer"),
      S.blockEnd(0, Content.text("the answer")),
      S.usage(usage),
      S.finish(FinishReason.stop),
      ...after
    ])
    expect(pushed.slice(5).map(kinds)).toStrictEqual(after.map(() => [["chunk-after-finish", undefined]]))
    expect(assembler.openBlocks()).toBe(0)
    const result = assembler.done()
    expect(result.message.content).toStrictEqual([Content.text("the answer")])
    expect(result.usage).toStrictEqual(usage)
    expect(result.finishReason).toStrictEqual(FinishReason.stop)
    expect(result.anomalies).toHaveLength(after.length)
  })

  it("missing-finish: the result has no finish reason", () => {
    const { assembler } = feed([
      S.blockStart(0, "text"),
      S.textDelta(0, "hello"),
      S.blockEnd(0, Content.text("hello")),
      S.usage(usage)
    ])
    expect(assembler.finished()).toBe(false)
    const result = assembler.done()
    expect(result.finishReason).toBeUndefined()
    expect(kinds(result.anomalies)).toStrictEqual([["missing-finish", undefined]])
    expect(result.message.content).toStrictEqual([Content.text("hello")])
    expect(result.usage).toStrictEqual(usage)
  })

  it("every anomaly carries a message", () => {
    const result = Assembler.assemble([
      S.textDelta(0, "a"),
      S.blockStart(0, "text"),
      S.blockEnd(1, Content.text("b")),
      S.blockEnd(1, Content.text("b")),
      S.finish(FinishReason.stop),
      S.finish(FinishReason.stop),
      S.usage(usage)
    ])
    expect(result.anomalies.length).toBeGreaterThan(4)
    for (const anomaly of result.anomalies) expect(anomaly.message.length).toBeGreaterThan(0)
  })
})

describe("Assembler: the incremental interface", () => {
  it("done() is idempotent", () => {
    const { assembler } = feed([S.blockStart(0, "text"), S.textDelta(0, "open")])
    const first = assembler.done()
    const second = assembler.done()
    expect(second).toBe(first)
    expect(kinds(second.anomalies)).toStrictEqual([["unclosed-block", 0], ["missing-finish", undefined]])
    expect(second.message.content).toStrictEqual([Content.text("open")])
    expect(assembler.openBlocks()).toBe(0)
  })

  it("snapshot() shows ended blocks and the partial open ones in index order", () => {
    const assembler = Assembler.make()
    expect(assembler.snapshot()).toStrictEqual([])
    assembler.push(S.blockStart(3, "text"))
    assembler.push(S.textDelta(3, "wor"))
    assembler.push(S.blockStart(0, "reasoning"))
    assembler.push(S.reasoningDelta(0, "think"))
    assembler.push(S.blockStart(1, "image"))
    assembler.push(S.blockStart(2, "tool-call"))
    assembler.push(S.toolCallDelta(2, c1, "{\"q\":", "search"))
    assembler.push(S.blockStart(4, "text"))
    assembler.push(S.blockEnd(4, Content.text("")))
    // the open image has nothing to show yet
    expect(assembler.openBlocks()).toBe(4)
    expect(assembler.snapshot()).toStrictEqual([
      Content.reasoning("think"),
      Content.toolCall(c1, "search", "{\"q\":"),
      Content.text("wor"),
      Content.text("")
    ])
    assembler.push(S.textDelta(3, "ld"))
    assembler.push(S.blockEnd(1, Content.image("image/png", "AA")))
    expect(assembler.snapshot()).toStrictEqual([
      Content.reasoning("think"),
      Content.image("image/png", "AA"),
      Content.toolCall(c1, "search", "{\"q\":"),
      Content.text("world"),
      Content.text("")
    ])
    // snapshots do not disturb the assembly
    assembler.push(S.blockEnd(0, Content.reasoning("think")))
    assembler.push(S.toolCallDelta(2, c1, "1}"))
    assembler.push(S.blockEnd(2, Content.toolCall(c1, "search", "{\"q\":1}")))
    assembler.push(S.blockEnd(3, Content.text("world")))
    assembler.push(S.finish(FinishReason.stop))
    const result = assembler.done()
    expect(result.anomalies).toStrictEqual([])
    expect(result.message.content).toStrictEqual([
      Content.reasoning("think"),
      Content.image("image/png", "AA"),
      Content.toolCall(c1, "search", "{\"q\":1}"),
      Content.text("world"),
      Content.text("")
    ])
  })

  it("snapshot() places an open block after the ended blocks sharing its index", () => {
    const assembler = Assembler.make()
    assembler.push(S.blockStart(0, "text"))
    assembler.push(S.textDelta(0, "a"))
    assembler.push(S.blockEnd(0, Content.text("a")))
    assembler.push(S.blockEnd(1, Content.text("z")))
    assembler.push(S.blockStart(0, "text"))
    assembler.push(S.textDelta(0, "b"))
    expect(assembler.snapshot()).toStrictEqual([Content.text("a"), Content.text("b"), Content.text("z")])
  })

  it.effect("collect assembles a chunk stream", () =>
    Effect.gen(function*() {
      const content = [Content.text("Hello, "), Content.toolCall(c1, "greet", "{\"who\":\"🌍\"}")]
      const chunks = Assembler.toChunks(content, { usage, fragment: Assembler.pieces(2) })
      const result = yield* Assembler.collect(Stream.fromIterable(chunks))
      expect(result).toStrictEqual({
        message: { role: "assistant", content },
        finishReason: FinishReason.toolCalls,
        usage,
        anomalies: []
      })
    }))

  it.effect("collect uses a fresh assembler on every run", () =>
    Effect.gen(function*() {
      const collect = Assembler.collect(Stream.fromIterable(Assembler.toChunks([Content.text("once")])))
      const first = yield* collect
      const second = yield* collect
      expect(second).toStrictEqual(first)
      expect(second.message.content).toStrictEqual([Content.text("once")])
    }))

  it.effect("collect fails with the stream's failure", () =>
    Effect.gen(function*() {
      const failure = new LlmError.LlmTransportError({ message: "socket hang up" })
      const stream = Stream.concat(
        Stream.fromIterable([S.blockStart(0, "text"), S.textDelta(0, "par")]),
        Stream.fail(failure)
      )
      expect(yield* Effect.flip(Assembler.collect(stream))).toBe(failure)
    }))

  it.effect("collect reports anomalies like assemble", () =>
    Effect.gen(function*() {
      const chunks = [S.textDelta(1, "x"), S.blockEnd(1, Content.text("y"))]
      const result = yield* Assembler.collect(Stream.fromIterable(chunks))
      expect(result).toStrictEqual(Assembler.assemble(chunks))
      expect(kinds(result.anomalies)).toStrictEqual([
        ["delta-without-start", 1],
        ["block-end-mismatch", 1],
        ["missing-finish", undefined]
      ])
    }))
})

describe("Assembler: toChunks and pieces", () => {
  const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff
  const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff
  // Whether a piece was cut inside a surrogate pair of the whole text.
  const splitsAPair = (pieces: ReadonlyArray<string>): boolean =>
    pieces.some((piece, i) => {
      const next = pieces[i + 1]
      return piece.length > 0 && next !== undefined && next.length > 0 &&
        isHigh(piece.charCodeAt(piece.length - 1)) && isLow(next.charCodeAt(0))
    })

  const emoji = "a😀b👍🏽c🇫🇷d𝄞"

  it("pieces(n) cuts into n code points and never splits a surrogate pair", () => {
    for (let n = 1; n <= 6; n++) {
      const pieces = Assembler.pieces(n)(emoji)
      expect(pieces.join("")).toBe(emoji)
      expect(splitsAPair(pieces)).toBe(false)
      for (const piece of pieces.slice(0, -1)) expect(Array.from(piece)).toHaveLength(n)
      expect(Array.from(pieces.at(-1)!).length).toBeGreaterThan(0)
      expect(Array.from(pieces.at(-1)!).length).toBeLessThanOrEqual(n)
    }
    expect(Assembler.pieces(1)("😀😀")).toStrictEqual(["😀", "😀"])
    // a naive cut by UTF-16 units would split the pair
    expect(Assembler.pieces(1)("😀").length).toBe(1)
  })

  it("pieces of an empty string is one empty piece; a size below 1 counts as 1", () => {
    expect(Assembler.pieces(3)("")).toStrictEqual([""])
    expect(Assembler.pieces(0)("ab")).toStrictEqual(["a", "b"])
    expect(Assembler.pieces(-4)("ab")).toStrictEqual(["a", "b"])
    expect(Assembler.whole("abc")).toStrictEqual(["abc"])
  })

  it.prop(
    "pieces(n) is a code-point partition of the text",
    [Schema.String, Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 8 }))],
    ([text, n]) => {
      const pieces = Assembler.pieces(n)(text)
      expect(pieces.join("")).toBe(text)
      expect(pieces.flatMap((p) => Array.from(p))).toStrictEqual(Array.from(text))
      expect(splitsAPair(pieces)).toBe(false)
      expect(pieces.slice(0, -1).every((p) => Array.from(p).length === n)).toBe(true)
    },
    { arbitrary: { runs: 300 } }
  )

  it("toChunks emits start, deltas cut by the fragmenter, end, then usage and finish", () => {
    const content = [
      Content.text("😀😀x"),
      Content.reasoning("🤔ab", "sig"),
      Content.toolCall(c1, "f", "{\"e\":\"👍🏽\"}"),
      Content.image("image/png", "AAAA")
    ]
    const chunks = Assembler.toChunks(content, { usage, finish: FinishReason.length, fragment: Assembler.pieces(2) })
    expect(chunks).toStrictEqual([
      S.blockStart(0, "text"),
      S.textDelta(0, "😀😀"),
      S.textDelta(0, "x"),
      S.blockEnd(0, content[0]!),
      S.blockStart(1, "reasoning"),
      S.reasoningDelta(1, "🤔a"),
      S.reasoningDelta(1, "b"),
      S.blockEnd(1, content[1]!),
      S.blockStart(2, "tool-call"),
      S.toolCallDelta(2, c1, "{\"", "f"),
      S.toolCallDelta(2, c1, "e\""),
      S.toolCallDelta(2, c1, ":\""),
      S.toolCallDelta(2, c1, "👍🏽"),
      S.toolCallDelta(2, c1, "\"}"),
      S.blockEnd(2, content[2]!),
      S.blockStart(3, "image"),
      S.blockEnd(3, content[3]!),
      S.usage(usage),
      S.finish(FinishReason.length)
    ])
  })

  it("toChunks defaults the finish to tool-calls when there is a tool call, else stop; no usage unless given", () => {
    expect(Assembler.toChunks([])).toStrictEqual([S.finish(FinishReason.stop)])
    expect(Assembler.toChunks([Content.text("")]).at(-1)).toStrictEqual(S.finish(FinishReason.stop))
    expect(Assembler.toChunks([Content.text("a"), Content.toolCall(c1, "f", "")]).at(-1)).toStrictEqual(
      S.finish(FinishReason.toolCalls)
    )
    expect(Assembler.toChunks([Content.text("a")]).some((c) => c.type === "usage")).toBe(false)
  })

  it("toChunks sends empty text and empty arguments as one empty delta", () => {
    expect(Assembler.toChunks([Content.text(""), Content.toolCall(c1, "f", "")], { fragment: Assembler.pieces(4) }))
      .toStrictEqual([
        S.blockStart(0, "text"),
        S.textDelta(0, ""),
        S.blockEnd(0, Content.text("")),
        S.blockStart(1, "tool-call"),
        S.toolCallDelta(1, c1, "", "f"),
        S.blockEnd(1, Content.toolCall(c1, "f", "")),
        S.finish(FinishReason.toolCalls)
      ])
  })
})

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

// mulberry32: a small seeded generator for choices derived from a generated seed.
const rng = (seed: number) => {
  let a = seed >>> 0
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const Seed = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 2 ** 31 - 1 }))
const blocksArb = Arbitrary.array(Arbitrary.schema(Content.ContentBlock), { maxLength: 7 })

const reindex = (chunk: Chunk, index: number): Chunk => "index" in chunk ? { ...chunk, index } : chunk

// Chunks from the StreamChunk schema, squeezed so that a sequence actually collides: few
// indexes, mostly known block types, two call ids and two names; `finish` rarely (it ends
// everything), and only at the end via `tail`.
const squeeze = (chunk: Chunk): Chunk => {
  switch (chunk.type) {
    case "block-start": {
      const known = ["text", "reasoning", "tool-call", "image", "custom", chunk.blockType]
      return { ...chunk, index: chunk.index % 4, blockType: known[chunk.blockType.length % known.length]! }
    }
    case "tool-call-delta": {
      const { name, ...rest } = chunk
      const squeezed = { ...rest, index: chunk.index % 4, id: Ids.callId(`c${chunk.id.length % 2}`) }
      return name === undefined ? squeezed : { ...squeezed, name: ["", "f", "g"][name.length % 3]! }
    }
    case "text-delta":
    case "reasoning-delta":
    case "block-end":
      return { ...chunk, index: chunk.index % 4 }
    case "usage":
    case "finish":
      return chunk
  }
}
const chunkArb = Arbitrary.map(Arbitrary.schema(S.StreamChunk), squeeze)
const bodyArb = Arbitrary.array(
  Arbitrary.map(chunkArb, (c): Chunk => c.type === "finish" ? S.textDelta(0, c.reason.kind) : c),
  { maxLength: 30 }
)
const chunksArb = Arbitrary.map(
  Arbitrary.all([bodyArb, Arbitrary.array(chunkArb, { maxLength: 4 })]),
  ([body, tail]) => [...body, ...tail]
)

const allKinds: ReadonlyArray<Assembler.AnomalyKind> = [
  "duplicate-block-start",
  "index-reused",
  "delta-without-start",
  "delta-after-end",
  "delta-type-mismatch",
  "tool-call-conflict",
  "end-without-start",
  "duplicate-block-end",
  "block-end-mismatch",
  "unclosed-block",
  "duplicate-finish",
  "chunk-after-finish",
  "missing-finish"
]

describe("Assembler: properties", () => {
  it.prop(
    "(a) assembling the interleaved stream equals assembling each block alone",
    { blocks: blocksArb, seed: Seed },
    ({ blocks, seed }) => {
      const random = rng(seed)
      // each block's own chunks, cut at a random size, at the block's position
      const perBlock = blocks.map((block, i) =>
        Assembler.toChunks([block], { fragment: Assembler.pieces(1 + Math.floor(random() * 5)) })
          .filter((c) => c.type !== "finish")
          .map((c) => reindex(c, i))
      )
      const queues = perBlock.map((chunks) => chunks.slice())
      const interleaved: Array<Chunk> = []
      for (;;) {
        const nonEmpty = queues.filter((q) => q.length > 0)
        if (nonEmpty.length === 0) break
        interleaved.push(nonEmpty[Math.floor(random() * nonEmpty.length)]!.shift()!)
      }
      expect(interleaved).toHaveLength(perBlock.reduce((n, cs) => n + cs.length, 0))

      const whole = Assembler.assemble([...interleaved, S.finish(FinishReason.stop)])
      const alone = perBlock.map((chunks) => Assembler.assemble([...chunks, S.finish(FinishReason.stop)]))
      expect(whole.anomalies).toStrictEqual([])
      expect(whole.message.content).toStrictEqual(alone.flatMap((r) => r.message.content))
      expect(whole.message.content).toStrictEqual(blocks)
    },
    { arbitrary: { runs: 200, size: 10 } }
  )

  it.prop(
    "(b) re-assembling an assembled message is idempotent",
    { chunks: chunksArb, size: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 6 })) },
    ({ chunks, size }) => {
      const first = Assembler.assemble(chunks)
      const again = Assembler.assemble(Assembler.toChunks(first.message.content, { fragment: Assembler.pieces(size) }))
      expect(again.message).toStrictEqual(first.message)
      // the chunks of an assembled message are well-formed
      expect(again.anomalies).toStrictEqual([])
    },
    { arbitrary: { runs: 300, size: 20 } }
  )

  it.prop(
    "(c) only blocks started and not yet ended hold state",
    { chunks: chunksArb },
    ({ chunks }) => {
      // an independent model of which indexes are open
      const open = new Set<number>()
      const ended = new Set<number>()
      let finished = false
      const assembler = Assembler.make()
      for (const chunk of chunks) {
        assembler.push(chunk)
        if (!finished) {
          switch (chunk.type) {
            case "block-start":
              open.add(chunk.index)
              break
            case "text-delta":
            case "reasoning-delta":
            case "tool-call-delta":
              if (!open.has(chunk.index) && !ended.has(chunk.index)) open.add(chunk.index)
              break
            case "block-end":
              open.delete(chunk.index)
              ended.add(chunk.index)
              break
            case "finish":
              open.clear()
              finished = true
              break
            case "usage":
              break
          }
        }
        expect(assembler.openBlocks()).toBe(open.size)
        expect(assembler.finished()).toBe(finished)
      }
      assembler.done()
      expect(assembler.openBlocks()).toBe(0)
    },
    { arbitrary: { runs: 300, size: 20 } }
  )

  it.prop(
    "(d) never throws; the message decodes; finish, usage and post-finish anomalies are as fed",
    { chunks: chunksArb },
    ({ chunks }) => {
      const assembler = Assembler.make()
      const pushed = chunks.flatMap((chunk) => assembler.push(chunk))
      const snapshot = assembler.snapshot()
      const result = assembler.done()
      expect(() => Schema.decodeUnknownSync(Message.Message)(result.message)).not.toThrow()
      expect(Schema.decodeUnknownSync(Schema.Array(Content.ContentBlock))(snapshot)).toHaveLength(snapshot.length)
      expect(result.message.role).toBe("assistant")
      for (const anomaly of result.anomalies) expect(allKinds).toContain(anomaly.kind)
      // push reported every anomaly done() lists, except those of closing at the end
      expect(result.anomalies.slice(0, pushed.length)).toStrictEqual(pushed)

      const firstFinish = chunks.findIndex((c) => c.type === "finish")
      const upToFinish = firstFinish === -1 ? chunks : chunks.slice(0, firstFinish + 1)
      const finish = chunks[firstFinish]
      expect(result.finishReason).toStrictEqual(finish?.type === "finish" ? finish.reason : undefined)
      const usages = upToFinish.flatMap((c) => c.type === "usage" ? [c.usage] : [])
      expect(result.usage).toStrictEqual(usages.at(-1))
      const afterFinish = result.anomalies.filter((a) => a.kind === "chunk-after-finish" || a.kind === "duplicate-finish")
      expect(afterFinish).toHaveLength(firstFinish === -1 ? 0 : chunks.length - firstFinish - 1)
      expect(result.anomalies.filter((a) => a.kind === "missing-finish")).toHaveLength(firstFinish === -1 ? 1 : 0)
    },
    { arbitrary: { runs: 300, size: 20 } }
  )
})
