import { Assembler, Content, FinishReason, Ids, StreamChunk as S, Usage } from "@dsh/llm"
import { ChunkContract } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"

const id = Ids.callId
const hi = Content.text("hi")

/** The rule and position of each violation (messages are for humans). */
const found = (chunks: ReadonlyArray<S.StreamChunk>) =>
  ChunkContract.check(chunks).map(({ position, rule }) => ({ rule, position }))

const allKinds: ReadonlyArray<Content.ContentBlock> = [
  Content.reasoning("step by step", "opaque-signature"),
  Content.text("Here is the plan: ✓ 🚀"),
  Content.toolCall(id("call_1"), "bash", `{"command":"ls -la"}`),
  Content.toolCall(id("call_2"), "read", ""),
  Content.toolResult({ toolCallId: id("call_0"), content: [Content.text("ok")], isError: false }),
  Content.image("image/png", "iVBORw0KGgo="),
  { type: "custom", kind: "citation", data: { url: "https://example.com", n: [1, 2] } },
  Content.text("")
]

describe("ChunkContract.check on well-formed sequences", () => {
  const fragmenters: ReadonlyArray<readonly [string, Assembler.Fragmenter]> = [
    ["whole", Assembler.whole],
    ["pieces(1)", Assembler.pieces(1)],
    ["pieces(3)", Assembler.pieces(3)],
    ["pieces(1000)", Assembler.pieces(1000)],
    ["words", (text) => text.split(/(?= )/)]
  ]
  for (const [name, fragment] of fragmenters) {
    it(`returns [] for Assembler.toChunks cut by ${name}`, () => {
      const chunks = Assembler.toChunks(allKinds, { fragment, usage: Usage.make({ inputTokens: 3 }) })
      expect(chunks.length).toBeGreaterThan(allKinds.length * 2)
      expect(ChunkContract.check(chunks)).toStrictEqual([])
    })
  }

  it("returns [] for every finish kind, with and without usage, and for an empty answer", () => {
    const reasons = [
      FinishReason.stop,
      FinishReason.length,
      FinishReason.toolCalls,
      FinishReason.contentFilter,
      FinishReason.error("LLM_SERVER", "boom"),
      FinishReason.aborted(),
      FinishReason.other("pause_turn")
    ]
    for (const finish of reasons) {
      expect(ChunkContract.check(Assembler.toChunks([hi], { finish }))).toStrictEqual([])
      expect(ChunkContract.check(Assembler.toChunks([hi], { finish, usage: Usage.empty }))).toStrictEqual([])
    }
    expect(ChunkContract.check(Assembler.toChunks([]))).toStrictEqual([])
    expect(ChunkContract.check([S.finish(FinishReason.stop)])).toStrictEqual([])
  })

  it("accepts interleaved blocks, several usage chunks and a block-end adding a signature", () => {
    const interleaved = [
      S.blockStart(0, "reasoning"),
      S.blockStart(1, "tool-call"),
      S.reasoningDelta(0, "thin"),
      S.toolCallDelta(1, id("c"), `{"a"`, "tool"),
      S.reasoningDelta(0, "king"),
      S.toolCallDelta(1, id("c"), `:1}`),
      S.usage(Usage.make({ inputTokens: 1 })),
      S.blockEnd(0, Content.reasoning("thinking", "sig")),
      S.blockEnd(1, Content.toolCall(id("c"), "tool", `{"a":1}`)),
      S.usage(Usage.make({ inputTokens: 1, outputTokens: 9 })),
      S.finish(FinishReason.toolCalls)
    ]
    expect(ChunkContract.check(interleaved)).toStrictEqual([])
  })
})

describe("ChunkContract.check on broken sequences", () => {
  const ok = Assembler.toChunks([hi]) // block-start, text-delta, block-end, finish

  it("finish-once: a missing finish is reported at the end of the sequence", () => {
    expect(found(ok.slice(0, 3))).toStrictEqual([{ rule: "finish-once", position: 3 }])
    expect(found([])).toStrictEqual([{ rule: "finish-once", position: 0 }])
  })

  it("finish-once: a second finish is reported where it arrives", () => {
    expect(found([...ok, S.finish(FinishReason.length)])).toStrictEqual([{ rule: "finish-once", position: 4 }])
  })

  it("nothing-after-finish: any chunk after finish", () => {
    expect(found([...ok, S.textDelta(0, "late")])).toStrictEqual([{ rule: "nothing-after-finish", position: 4 }])
    expect(found([...ok, S.blockStart(1, "text"), S.textDelta(1, "x"), S.blockEnd(1, Content.text("x"))]))
      .toStrictEqual([
        { rule: "nothing-after-finish", position: 4 },
        { rule: "nothing-after-finish", position: 5 },
        { rule: "nothing-after-finish", position: 6 }
      ])
  })

  it("usage-before-finish: usage after finish", () => {
    expect(found([...ok, S.usage(Usage.empty)])).toStrictEqual([
      { rule: "usage-before-finish", position: 4 },
      { rule: "nothing-after-finish", position: 4 }
    ])
    const messages = ChunkContract.check([...ok, S.usage(Usage.empty)]).map((v) => v.message)
    expect(messages.every((m) => m.length > 0)).toBe(true)
  })

  it("delta-inside-block: a delta before its block-start", () => {
    expect(found([S.textDelta(0, "hi"), S.blockEnd(0, hi), S.finish(FinishReason.stop)])).toStrictEqual([
      { rule: "delta-inside-block", position: 0 }
    ])
  })

  it("delta-inside-block: a delta after its block-end", () => {
    expect(found([...ok.slice(0, 3), S.textDelta(0, "!"), S.finish(FinishReason.stop)])).toStrictEqual([
      { rule: "delta-inside-block", position: 3 }
    ])
  })

  it("delta-inside-block: a delta of another kind than its block", () => {
    expect(found([S.blockStart(0, "text"), S.reasoningDelta(0, "x"), ...ok.slice(1)])).toStrictEqual([
      { rule: "delta-inside-block", position: 1 }
    ])
    expect(found([S.blockStart(0, "text"), S.toolCallDelta(0, id("c"), "{}", "t"), ...ok.slice(1)])).toStrictEqual([
      { rule: "delta-inside-block", position: 1 }
    ])
  })

  it("block-start-once: a block started twice, or an ended index started again", () => {
    expect(found([S.blockStart(0, "text"), ...ok])).toStrictEqual([{ rule: "block-start-once", position: 1 }])
    const again = Content.text("again")
    expect(found([
      ...ok.slice(0, 3),
      S.blockStart(0, "text"),
      S.textDelta(0, "again"),
      S.blockEnd(0, again),
      S.finish(FinishReason.stop)
    ])).toStrictEqual([{ rule: "block-start-once", position: 3 }])
  })

  it("block-end-once: an end without start, an end twice, a block left open", () => {
    expect(found([S.blockEnd(0, hi), S.finish(FinishReason.stop)])).toStrictEqual([
      { rule: "block-end-once", position: 0 }
    ])
    expect(found([...ok.slice(0, 3), S.blockEnd(0, hi), S.finish(FinishReason.stop)])).toStrictEqual([
      { rule: "block-end-once", position: 3 }
    ])
    // left open at finish: reported at the finish that closed it
    expect(found([S.blockStart(0, "text"), S.textDelta(0, "hi"), S.finish(FinishReason.stop)])).toStrictEqual([
      { rule: "block-end-once", position: 2 }
    ])
    // left open at the end of the input: both reported at the end
    expect(found([S.blockStart(0, "text"), S.textDelta(0, "hi")])).toStrictEqual([
      { rule: "block-end-once", position: 2 },
      { rule: "finish-once", position: 2 }
    ])
  })

  it("block-end-agrees: block-end disagreeing with what its start and deltas built", () => {
    expect(found([...ok.slice(0, 2), S.blockEnd(0, Content.text("bye")), S.finish(FinishReason.stop)]))
      .toStrictEqual([{ rule: "block-end-agrees", position: 2 }])
    expect(found([...ok.slice(0, 2), S.blockEnd(0, Content.reasoning("hi")), S.finish(FinishReason.stop)]))
      .toStrictEqual([{ rule: "block-end-agrees", position: 2 }])
    expect(found([S.blockStart(0, "image"), S.blockEnd(0, hi), S.finish(FinishReason.stop)])).toStrictEqual([
      { rule: "block-end-agrees", position: 1 }
    ])
    expect(found([
      S.blockStart(0, "tool-call"),
      S.toolCallDelta(0, id("c"), "{}", "bash"),
      S.blockEnd(0, Content.toolCall(id("c"), "bash", `{"x":1}`)),
      S.finish(FinishReason.toolCalls)
    ])).toStrictEqual([{ rule: "block-end-agrees", position: 2 }])
  })

  it("tool-call-identity: an empty id, a changed id or name, a call never named", () => {
    const call = (...deltas: ReadonlyArray<S.StreamChunk>): Array<S.StreamChunk> => [
      S.blockStart(0, "tool-call"),
      ...deltas,
      S.blockEnd(0, Assembler.assemble([S.blockStart(0, "tool-call"), ...deltas]).message.content[0]!),
      S.finish(FinishReason.toolCalls)
    ]
    expect(found(call(S.toolCallDelta(0, id(""), "{}", "bash")))).toStrictEqual([
      { rule: "tool-call-identity", position: 1 }
    ])
    expect(found(call(S.toolCallDelta(0, id("a"), "{", "bash"), S.toolCallDelta(0, id("b"), "}")))).toStrictEqual([
      { rule: "tool-call-identity", position: 2 }
    ])
    expect(found(call(S.toolCallDelta(0, id("a"), "{", "bash"), S.toolCallDelta(0, id("a"), "}", "sh"))))
      .toStrictEqual([{ rule: "tool-call-identity", position: 2 }])
    const unnamed = call(S.toolCallDelta(0, id("a"), "{"), S.toolCallDelta(0, id("a"), "}"))
    expect(found(unnamed)).toStrictEqual([{ rule: "tool-call-identity", position: unnamed.length }])
    // a name repeated identically, or sent later, is fine
    expect(found(call(S.toolCallDelta(0, id("a"), "{"), S.toolCallDelta(0, id("a"), "}", "bash")))).toStrictEqual([])
    expect(found(call(S.toolCallDelta(0, id("a"), "{", "bash"), S.toolCallDelta(0, id("a"), "}", "bash"))))
      .toStrictEqual([])
  })

  it("tool-call-identity: a delta without an id (past the types) is caught, also when it is the call's first", () => {
    const { blockEnd, blockStart, finish } = S
    const delta = (idOf: unknown, argumentsDelta: string, name?: string) =>
      ({ type: "tool-call-delta", index: 0, id: idOf, argumentsDelta, ...(name === undefined ? {} : { name }) }) as S.StreamChunk
    const sequence = (...deltas: ReadonlyArray<S.StreamChunk>) => [
      blockStart(0, "tool-call"),
      ...deltas,
      blockEnd(0, Content.toolCall(id("a"), "bash", "{}")),
      finish(FinishReason.toolCalls)
    ]
    // how an adapter forwarding OpenAI's deltas as they are goes wrong: the id on the first only
    expect(ChunkContract.check(sequence(delta(undefined, "{", "bash"), delta("a", "}")))).toStrictEqual([
      { rule: "tool-call-identity", position: 1, message: "tool-call-delta for block 0 has no id (undefined)" }
    ])
    expect(found(sequence(delta("a", "{", "bash"), delta(null, "}")))).toStrictEqual([
      { rule: "tool-call-identity", position: 2 },
      { rule: "tool-call-identity", position: 2 }
    ])
  })

  it("values that are no chunks break chunk-shape, and check reads them without throwing", () => {
    for (const bad of [null, undefined, 42, { type: "bogus" }, { type: "text-delta", index: "0", delta: "x" }, { type: "usage", usage: { inputTokens: -1 } }]) {
      const chunks = [S.blockStart(0, "text"), bad as unknown as S.StreamChunk, S.textDelta(0, "hi"), S.blockEnd(0, hi), S.finish(FinishReason.stop)]
      expect(found(chunks)).toStrictEqual([{ rule: "chunk-shape", position: 1 }])
    }
  })

  it("every rule of ChunkContract.rules is reachable and has a distinct name", () => {
    const broken: ReadonlyArray<ReadonlyArray<S.StreamChunk>> = [
      ok.slice(0, 3),
      [...ok, S.usage(Usage.empty)],
      [S.textDelta(0, "hi"), S.blockEnd(0, hi), S.finish(FinishReason.stop)],
      [S.blockStart(0, "text"), ...ok],
      [S.blockEnd(0, hi), S.finish(FinishReason.stop)],
      [...ok.slice(0, 2), S.blockEnd(0, Content.text("bye")), S.finish(FinishReason.stop)],
      [S.blockStart(0, "tool-call"), S.toolCallDelta(0, id(""), "{}", "t"), S.finish(FinishReason.toolCalls)],
      [null as unknown as S.StreamChunk, ...ok]
    ]
    const seen = new Set(broken.flatMap((chunks) => ChunkContract.check(chunks).map((v) => v.rule)))
    expect([...seen].sort()).toStrictEqual([...ChunkContract.rules].sort())
    expect(new Set(ChunkContract.rules).size).toBe(ChunkContract.rules.length)
  })
})

describe("ChunkContract.check, property-based", () => {
  // Tool calls need a non-empty id and name to be well-formed: the generator respects that.
  const NamedToolCall = Schema.Struct({
    type: Schema.tag("tool-call"),
    id: Ids.CallId.check(Schema.isMinLength(1)),
    name: Schema.NonEmptyString,
    arguments: Schema.String
  })
  const Block = Schema.Union([
    Content.TextBlock,
    Content.ReasoningBlock,
    NamedToolCall,
    Content.ToolResultBlock,
    Content.ImageBlock,
    Content.CustomBlock
  ])
  const Blocks = Schema.Array(Block).check(Schema.isMaxLength(8))
  const Size = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 6 }))
  const runs = { arbitrary: { runs: 150 } }

  it.prop("toChunks of any content never violates the contract, and assembles back", [Blocks, Size], ([content, size]) => {
    const chunks = Assembler.toChunks(content, { fragment: Assembler.pieces(size) })
    expect(ChunkContract.check(chunks)).toStrictEqual([])
    expect(Assembler.assemble(chunks).message.content).toStrictEqual(content)
  }, runs)

  it.prop(
    "with any usage and finish reason too",
    [Blocks, Usage.Usage, FinishReason.FinishReason],
    ([content, usage, finish]) => {
      expect(ChunkContract.check(Assembler.toChunks(content, { usage, finish }))).toStrictEqual([])
    },
    runs
  )

  it.prop("cutting the finish off, or adding a chunk after it, is always caught", [Blocks, Size], ([content, size]) => {
    const chunks = Assembler.toChunks(content, { fragment: Assembler.pieces(size) })
    const cut = chunks.slice(0, -1)
    expect(found(cut)).toStrictEqual([{ rule: "finish-once", position: cut.length }])
    expect(found([...chunks, S.finish(FinishReason.stop)])).toStrictEqual([
      { rule: "finish-once", position: chunks.length }
    ])
  }, runs)
})
