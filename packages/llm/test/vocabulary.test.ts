import { Content, FinishReason, HarnessError, History, Ids, Message, ModelInfo, ModelRequest, StreamChunk, Usage } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"

// Encodes to a JSON string and decodes back, as a value crossing a process boundary would.
const viaJson = <A, I>(schema: Schema.Codec<A, I>, value: A): { readonly json: string; readonly back: A } => {
  const json = JSON.stringify(Schema.encodeSync(schema)(value))
  return { json, back: Schema.decodeUnknownSync(schema)(JSON.parse(json)) }
}

const expectRoundTrip = <A, I>(schema: Schema.Codec<A, I>, value: A): void => {
  const { back, json } = viaJson(schema, value)
  expect(back).toStrictEqual(value)
  // every vocabulary schema is plain data: its encoded JSON is the value itself
  expect(JSON.parse(json)).toStrictEqual(value)
}

// What a generated value looks like after JSON: Schema-derived arbitraries also produce
// null-prototype objects (which `toStrictEqual` tells from plain ones) and `-0` inside JSON data
// (which JSON writes as `0`), so compare against a plain copy with `-0` read as `0`.
const plain = <A>(value: A): A => {
  const go = (u: unknown): unknown => {
    if (Object.is(u, -0)) return 0
    if (Array.isArray(u)) return u.map(go)
    if (History.isHistory(u)) return History.fromIterable(History.toArray(u).map((m) => go(m) as Message.Message))
    if (typeof u === "object" && u !== null) {
      return Object.fromEntries(Object.entries(u).map(([k, v]) => [k, go(v)]))
    }
    return u
  }
  return go(value) as A
}

// A request is plain data but for its messages: a History, which encodes (and JSON.stringifies)
// to the array of its messages.
const expectRequestRoundTrip = (request: ModelRequest.ModelRequest): void => {
  const { back, json } = viaJson(ModelRequest.ModelRequest, request)
  expect(back).toStrictEqual(request)
  expect(History.isHistory(back.messages)).toBe(true)
  expect(JSON.parse(json)).toStrictEqual({ ...request, messages: History.toArray(request.messages) })
  expect(JSON.parse(JSON.stringify(request))).toStrictEqual(JSON.parse(json))
}

const accepts = (schema: Schema.Decoder<unknown>, input: unknown): boolean =>
  Schema.decodeUnknownOption(schema)(input)._tag === "Some"

const id = Ids.callId("call_1")

const blocks: ReadonlyArray<Content.ContentBlock> = [
  Content.text("hello, wörld 😀"),
  Content.reasoning("let me think"),
  Content.reasoning("signed thought", "sig-abc=="),
  Content.toolCall(id, "read_file", "{\"path\":\"/etc/hosts\"}"),
  Content.toolResult({ toolCallId: id, content: [Content.text("127.0.0.1 localhost")] }),
  Content.toolResult({
    toolCallId: id,
    content: [
      Content.text("failed"),
      Content.image("image/png", "iVBORw0KGgo="),
      { type: "custom", kind: "diff", data: { hunks: [1, 2], ok: true, note: null } }
    ],
    isError: true,
    error: { tag: "ToolInputError", code: "TOOL_INPUT" }
  }),
  Content.image("image/jpeg", "/9j/4AAQ"),
  { type: "custom", kind: "citation", data: { url: "https://effect.website", page: 3, tags: ["a", "b"], x: null } },
  { type: "custom", kind: "scalar", data: 42.5 }
]

describe("ContentBlock", () => {
  for (const block of blocks) {
    it(`round-trips a ${block.type} block through JSON: ${JSON.stringify(block).slice(0, 60)}`, () => {
      expectRoundTrip(Content.ContentBlock, block)
    })
  }

  it("the constructors build blocks without undefined optional keys", () => {
    expect(Object.keys(Content.reasoning("t"))).toStrictEqual(["type", "text"])
    expect(Content.reasoning("t", "s")).toStrictEqual({ type: "reasoning", text: "t", signature: "s" })
    const result = Content.toolResult({ toolCallId: id, content: [] })
    expect(result).toStrictEqual({ type: "tool-result", toolCallId: id, content: [], isError: false })
    expect("error" in result).toBe(false)
    const failed = Content.toolResult({
      toolCallId: id,
      content: [Content.text("no such file")],
      isError: true,
      error: { tag: "ToolFailedError", code: "TOOL_FAILED" }
    })
    expect(failed).toStrictEqual({
      type: "tool-result",
      toolCallId: id,
      content: [{ type: "text", text: "no such file" }],
      isError: true,
      error: { tag: "ToolFailedError", code: "TOOL_FAILED" }
    })
    expect(Content.toolCall(id, "f", "{}")).toStrictEqual({ type: "tool-call", id, name: "f", arguments: "{}" })
    expect(Content.image("image/png", "AA")).toStrictEqual({ type: "image", mediaType: "image/png", data: "AA" })
  })

  it("rejects an unknown block type, missing fields and wrongly typed fields", () => {
    expect(accepts(Content.ContentBlock, { type: "video", url: "x" })).toBe(false)
    expect(accepts(Content.ContentBlock, { type: "text" })).toBe(false)
    expect(accepts(Content.ContentBlock, { type: "text", text: 1 })).toBe(false)
    expect(accepts(Content.ContentBlock, { type: "tool-call", id: "c", name: "f" })).toBe(false)
    expect(accepts(Content.ContentBlock, { type: "tool-call", id: "c", name: "f", arguments: { a: 1 } })).toBe(false)
    expect(accepts(Content.ContentBlock, { type: "tool-result", toolCallId: "c", content: [], isError: "no" })).toBe(
      false
    )
    // a tool result holds text, image or custom content only
    expect(accepts(Content.ContentBlock, {
      type: "tool-result",
      toolCallId: "c",
      content: [{ type: "tool-call", id: "c", name: "f", arguments: "" }],
      isError: false
    })).toBe(false)
    expect(accepts(Content.ContentBlock, { type: "custom", kind: "k", data: () => 1 })).toBe(false)
    expect(accepts(Content.ContentBlock, { type: "custom", data: 1 })).toBe(false)
  })
})

describe("Content.defineCustom", () => {
  const Citation = Content.defineCustom(
    "citation",
    Schema.Struct({ url: Schema.String, page: Schema.optionalKey(Schema.Int) })
  )
  // a kind whose data has a different encoded form: make must encode through the Schema
  const Stamp = Content.defineCustom("stamp", Schema.Struct({ at: Schema.FiniteFromString }))

  it("make builds a custom block with the kind and the encoded data", () => {
    expect(Citation.kind).toBe("citation")
    expect(Citation.make({ url: "https://a.b", page: 2 })).toStrictEqual({
      type: "custom",
      kind: "citation",
      data: { url: "https://a.b", page: 2 }
    })
    expect(Stamp.make({ at: 12.5 })).toStrictEqual({ type: "custom", kind: "stamp", data: { at: "12.5" } })
  })

  it("is tells blocks of this kind from other custom kinds and other block types", () => {
    expect(Citation.is(Citation.make({ url: "u" }))).toBe(true)
    // `is` does not validate the data
    expect(Citation.is({ type: "custom", kind: "citation", data: 17 })).toBe(true)
    expect(Citation.is(Stamp.make({ at: 1 }))).toBe(false)
    expect(Citation.is({ type: "custom", kind: "Citation", data: { url: "u" } })).toBe(false)
    expect(Citation.is(Content.text("citation"))).toBe(false)
  })

  it("decode returns the data, also after the block crossed JSON inside a message", () => {
    const block = Stamp.make({ at: 7 })
    expect(Stamp.decode(block)).toStrictEqual({ at: 7 })
    const message = Message.make("assistant", [Content.text("see"), block, Citation.make({ url: "https://x.y" })])
    const { back } = viaJson(Message.Message, message)
    expect(back.content.map((b) => Stamp.decode(b))).toStrictEqual([undefined, { at: 7 }, undefined])
    expect(back.content.map((b) => Citation.decode(b))).toStrictEqual([undefined, undefined, { url: "https://x.y" }])
  })

  it("decode gives undefined for another kind, another block type or invalid data", () => {
    expect(Citation.decode(Stamp.make({ at: 1 }))).toBeUndefined()
    expect(Citation.decode(Content.text("{\"url\":\"u\"}"))).toBeUndefined()
    expect(Citation.decode({ type: "custom", kind: "citation", data: { url: 1 } })).toBeUndefined()
    expect(Citation.decode({ type: "custom", kind: "citation", data: { url: "u", page: 1.5 } })).toBeUndefined()
    expect(Citation.decode({ type: "custom", kind: "citation", data: null })).toBeUndefined()
    expect(Stamp.decode({ type: "custom", kind: "stamp", data: { at: "not a number" } })).toBeUndefined()
  })
})

describe("Message", () => {
  for (const role of ["system", "user", "assistant"] as const) {
    it(`round-trips a ${role} message with every kind of block`, () => {
      expectRoundTrip(Message.Message, Message.make(role, blocks))
    })
  }

  it("round-trips an empty message", () => {
    expectRoundTrip(Message.Message, Message.make("assistant", []))
  })

  it("rejects role tool, a missing role and non-block content", () => {
    expect(accepts(Message.Message, { role: "tool", content: [] })).toBe(false)
    expect(accepts(Message.Message, { role: "Assistant", content: [] })).toBe(false)
    expect(accepts(Message.Message, { content: [] })).toBe(false)
    expect(accepts(Message.Message, { role: "user", content: "hi" })).toBe(false)
    expect(accepts(Message.Message, { role: "user", content: [{ type: "audio", data: "" }] })).toBe(false)
    expect(accepts(Message.Message, { role: "user", content: [{ type: "text", text: "ok" }] })).toBe(true)
  })

  it("user, assistant and textOf", () => {
    expect(Message.user("hi")).toStrictEqual({ role: "user", content: [{ type: "text", text: "hi" }] })
    expect(Message.assistant("yo")).toStrictEqual({ role: "assistant", content: [{ type: "text", text: "yo" }] })
    const m = Message.make("assistant", [
      Content.text("a"),
      Content.reasoning("not this"),
      Content.toolCall(id, "f", "{}"),
      Content.text("b")
    ])
    expect(Message.textOf(m)).toBe("ab")
    expect(Message.textOf(Message.make("user", []))).toBe("")
  })
})

const usageFull = Usage.make({ inputTokens: 10, outputTokens: 20, cacheReadTokens: 3, cacheWriteTokens: 4, reasoningTokens: 5 })

const finishReasons: ReadonlyArray<FinishReason.FinishReason> = [
  FinishReason.stop,
  { kind: "stop", raw: "end_turn" },
  FinishReason.length,
  { kind: "length", raw: "max_tokens" },
  FinishReason.toolCalls,
  { kind: "tool-calls", raw: "tool_calls" },
  FinishReason.contentFilter,
  FinishReason.error("LLM_SERVER", "upstream died"),
  { kind: "error", code: "LLM_SERVER", message: "m", raw: "error" },
  FinishReason.aborted(),
  FinishReason.aborted("user pressed ctrl-c"),
  FinishReason.other("pause_turn"),
  { kind: "other", name: "refusal", raw: "refusal" }
]

describe("FinishReason", () => {
  for (const reason of finishReasons) {
    it(`round-trips ${JSON.stringify(reason)}`, () => {
      expectRoundTrip(FinishReason.FinishReason, reason)
    })
  }

  it("covers every kind", () => {
    expect(new Set(finishReasons.map((r) => r.kind))).toStrictEqual(
      new Set(["stop", "length", "tool-calls", "content-filter", "error", "aborted", "other"])
    )
  })

  it("rejects unknown kinds and missing fields", () => {
    expect(accepts(FinishReason.FinishReason, { kind: "done" })).toBe(false)
    expect(accepts(FinishReason.FinishReason, { kind: "other" })).toBe(false)
    expect(accepts(FinishReason.FinishReason, { kind: "error", message: "m" })).toBe(false)
    expect(accepts(FinishReason.FinishReason, { kind: "stop", raw: 1 })).toBe(false)
    expect(accepts(FinishReason.FinishReason, "stop")).toBe(false)
  })

  it("aborted without a reason has no reason key; isFailure is true for error and aborted only", () => {
    expect(FinishReason.aborted()).toStrictEqual({ kind: "aborted" })
    expect("reason" in FinishReason.aborted()).toBe(false)
    expect(finishReasons.filter(FinishReason.isFailure).map((r) => r.kind)).toStrictEqual([
      "error",
      "error",
      "aborted",
      "aborted"
    ])
  })
})

const chunks: ReadonlyArray<StreamChunk.StreamChunk> = [
  StreamChunk.blockStart(0, "text"),
  StreamChunk.blockStart(7, "some-future-type"),
  StreamChunk.textDelta(0, "Hel"),
  StreamChunk.textDelta(0, ""),
  StreamChunk.reasoningDelta(1, "hmm"),
  StreamChunk.toolCallDelta(2, id, "{\"a\":", "f"),
  StreamChunk.toolCallDelta(2, id, "1}"),
  ...blocks.map((b, i) => StreamChunk.blockEnd(i, b)),
  StreamChunk.usage(Usage.empty),
  StreamChunk.usage(usageFull),
  ...finishReasons.map(StreamChunk.finish)
]

describe("StreamChunk", () => {
  for (const chunk of chunks) {
    it(`round-trips ${JSON.stringify(chunk).slice(0, 80)}`, () => {
      expectRoundTrip(StreamChunk.StreamChunk, chunk)
    })
  }

  it("covers every chunk type", () => {
    expect(new Set(chunks.map((c) => c.type))).toStrictEqual(
      new Set(["block-start", "text-delta", "reasoning-delta", "tool-call-delta", "block-end", "usage", "finish"])
    )
  })

  it("toolCallDelta without a name has no name key", () => {
    expect(StreamChunk.toolCallDelta(0, id, "{}")).toStrictEqual({
      type: "tool-call-delta",
      index: 0,
      id,
      argumentsDelta: "{}"
    })
  })

  it("rejects a negative or non-integer index, unknown chunk types and bad payloads", () => {
    expect(accepts(StreamChunk.StreamChunk, { type: "text-delta", index: 0, delta: "x" })).toBe(true)
    expect(accepts(StreamChunk.StreamChunk, { type: "text-delta", index: -1, delta: "x" })).toBe(false)
    expect(accepts(StreamChunk.StreamChunk, { type: "text-delta", index: 1.5, delta: "x" })).toBe(false)
    expect(accepts(StreamChunk.StreamChunk, { type: "block-start", index: 0.5, blockType: "text" })).toBe(false)
    expect(accepts(StreamChunk.StreamChunk, { type: "block-end", index: -3, block: Content.text("") })).toBe(false)
    expect(accepts(StreamChunk.StreamChunk, { type: "block-end", index: 0, block: { type: "nope" } })).toBe(false)
    expect(accepts(StreamChunk.StreamChunk, { type: "tool-call-delta", index: 0, argumentsDelta: "" })).toBe(false)
    expect(accepts(StreamChunk.StreamChunk, { type: "image-delta", index: 0, delta: "" })).toBe(false)
    expect(accepts(StreamChunk.StreamChunk, { type: "finish", reason: { kind: "whatever" } })).toBe(false)
    expect(accepts(StreamChunk.StreamChunk, { type: "usage", usage: { ...Usage.empty, outputTokens: -1 } })).toBe(
      false
    )
  })
})

describe("Usage", () => {
  it("round-trips with and without reasoningTokens", () => {
    expectRoundTrip(Usage.Usage, Usage.empty)
    expectRoundTrip(Usage.Usage, usageFull)
  })

  it("rejects negative, fractional and missing counts", () => {
    expect(accepts(Usage.Usage, { ...Usage.empty, inputTokens: -1 })).toBe(false)
    expect(accepts(Usage.Usage, { ...Usage.empty, cacheReadTokens: 0.5 })).toBe(false)
    expect(accepts(Usage.Usage, { ...Usage.empty, reasoningTokens: -2 })).toBe(false)
    expect(accepts(Usage.Usage, { ...Usage.empty, outputTokens: Number.NaN })).toBe(false)
    expect(accepts(Usage.Usage, { inputTokens: 1, outputTokens: 1, cacheReadTokens: 1 })).toBe(false)
  })

  it("make fills omitted counts with zero and adds no reasoningTokens", () => {
    expect(Usage.make({})).toStrictEqual({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 })
    const u = Usage.make({ outputTokens: 9 })
    expect(u).toStrictEqual({ inputTokens: 0, outputTokens: 9, cacheReadTokens: 0, cacheWriteTokens: 0 })
    expect("reasoningTokens" in u).toBe(false)
    expect(Usage.make({ reasoningTokens: 0 }).reasoningTokens).toBe(0)
  })

  it("add sums each count; reasoningTokens is present iff either side has it", () => {
    const a = Usage.make({ inputTokens: 1, outputTokens: 2, cacheReadTokens: 3, cacheWriteTokens: 4 })
    const b = Usage.make({ inputTokens: 10, outputTokens: 20, cacheReadTokens: 30, cacheWriteTokens: 40 })
    const ab = Usage.add(a, b)
    expect(ab).toStrictEqual({ inputTokens: 11, outputTokens: 22, cacheReadTokens: 33, cacheWriteTokens: 44 })
    expect("reasoningTokens" in ab).toBe(false)
    expect(Usage.add(a, { ...b, reasoningTokens: 7 }).reasoningTokens).toBe(7)
    expect(Usage.add({ ...a, reasoningTokens: 5 }, b).reasoningTokens).toBe(5)
    expect(Usage.add({ ...a, reasoningTokens: 5 }, { ...b, reasoningTokens: 7 }).reasoningTokens).toBe(12)
    // a reported zero is still reported
    expect(Usage.add({ ...a, reasoningTokens: 0 }, b)).toHaveProperty("reasoningTokens", 0)
  })

  it("totalInput counts uncached and cached input but not output", () => {
    expect(Usage.totalInput(usageFull)).toBe(10 + 3 + 4)
    expect(Usage.totalInput(Usage.empty)).toBe(0)
    expect(Usage.totalInput(Usage.make({ outputTokens: 100, reasoningTokens: 50 }))).toBe(0)
  })

  it.prop("add is a commutative, field-wise sum with empty as identity", [Usage.Usage, Usage.Usage, Usage.Usage], ([a, b, c]) => {
    const sum = Usage.add(a, b)
    expect(sum.inputTokens).toBe(a.inputTokens + b.inputTokens)
    expect(sum.outputTokens).toBe(a.outputTokens + b.outputTokens)
    expect(sum.cacheReadTokens).toBe(a.cacheReadTokens + b.cacheReadTokens)
    expect(sum.cacheWriteTokens).toBe(a.cacheWriteTokens + b.cacheWriteTokens)
    const either = a.reasoningTokens !== undefined || b.reasoningTokens !== undefined
    expect("reasoningTokens" in sum).toBe(either)
    if (either) expect(sum.reasoningTokens).toBe((a.reasoningTokens ?? 0) + (b.reasoningTokens ?? 0))
    expect(Usage.add(b, a)).toStrictEqual(sum)
    expect(Usage.add(Usage.add(a, b), c)).toStrictEqual(Usage.add(a, Usage.add(b, c)))
    expect(Usage.add(a, Usage.empty)).toStrictEqual(plain(a))
    expect(Usage.totalInput(sum)).toBe(Usage.totalInput(a) + Usage.totalInput(b))
    expect(accepts(Usage.Usage, sum)).toBe(true)
  }, { arbitrary: { runs: 200 } })
})

describe("ToolSchema, ModelRequest", () => {
  const tool: ModelRequest.ToolSchema = {
    name: "read_file",
    description: "Reads a file",
    parameters: {
      type: "object",
      properties: { path: { type: "string" }, limit: { type: "integer", minimum: 1 } },
      required: ["path"],
      additionalProperties: false
    },
    strict: true
  }

  it("round-trips a ToolSchema with and without strict", () => {
    expectRoundTrip(ModelRequest.ToolSchema, tool)
    expectRoundTrip(ModelRequest.ToolSchema, { name: "t", description: "", parameters: {} })
  })

  it("rejects a ToolSchema whose parameters are not a JSON object", () => {
    expect(accepts(ModelRequest.ToolSchema, { name: "t", description: "", parameters: "object" })).toBe(false)
    expect(accepts(ModelRequest.ToolSchema, { name: "t", description: "", parameters: { f: () => 1 } })).toBe(false)
    expect(accepts(ModelRequest.ToolSchema, { name: "t", parameters: {} })).toBe(false)
    expect(accepts(ModelRequest.ToolSchema, { name: "t", description: "", parameters: {}, strict: "yes" })).toBe(
      false
    )
  })

  const full = ModelRequest.make("deepseek-chat", [Message.user("hi"), Message.make("assistant", blocks)], {
    system: "You are terse.",
    tools: [tool, { name: "noop", description: "does nothing", parameters: {} }],
    toolChoice: { tool: "read_file" },
    temperature: 0.7,
    maxTokens: 1024,
    stop: ["\n\n", "END"],
    providerOptions: { deepseek: { thinking: "enabled", budget: 2048 }, openai: null }
  })

  it("make puts the options, the model and the messages in one request", () => {
    expect(full.model).toBe("deepseek-chat")
    expect(full.messages).toHaveLength(2)
    expect(History.toArray(full.messages)).toStrictEqual([Message.user("hi"), Message.make("assistant", blocks)])
    expect(full.maxTokens).toBe(1024)
    const minimal = ModelRequest.make("m", [])
    expect(minimal).toStrictEqual({ model: "m", messages: History.empty })
    // a history is taken as it is
    const history = History.make(Message.user("hi"))
    expect(ModelRequest.make("m", history).messages).toBe(history)
  })

  it("round-trips a request with all options, and one with none", () => {
    expectRequestRoundTrip(full)
    expectRequestRoundTrip(ModelRequest.make("m", []))
  })

  for (const toolChoice of ["auto", "none", "required", { tool: "x" }] as const) {
    it(`round-trips toolChoice ${JSON.stringify(toolChoice)}`, () => {
      expectRequestRoundTrip(ModelRequest.make("m", [], { toolChoice }))
    })
  }

  it("temperature 0 is allowed", () => {
    expect(accepts(ModelRequest.ModelRequest, { model: "m", messages: [], temperature: 0 })).toBe(true)
  })

  it("rejects invalid options", () => {
    const base = { model: "m", messages: [] }
    expect(accepts(ModelRequest.ModelRequest, { ...base, temperature: -0.1 })).toBe(false)
    expect(accepts(ModelRequest.ModelRequest, { ...base, temperature: Number.POSITIVE_INFINITY })).toBe(false)
    expect(accepts(ModelRequest.ModelRequest, { ...base, maxTokens: 0 })).toBe(false)
    expect(accepts(ModelRequest.ModelRequest, { ...base, maxTokens: 10.5 })).toBe(false)
    expect(accepts(ModelRequest.ModelRequest, { ...base, toolChoice: "sometimes" })).toBe(false)
    expect(accepts(ModelRequest.ModelRequest, { ...base, toolChoice: { name: "x" } })).toBe(false)
    expect(accepts(ModelRequest.ModelRequest, { ...base, stop: "END" })).toBe(false)
    expect(accepts(ModelRequest.ModelRequest, { ...base, messages: [{ role: "tool", content: [] }] })).toBe(false)
    expect(accepts(ModelRequest.ModelRequest, { messages: [] })).toBe(false)
  })
})

describe("ErrorInfo", () => {
  it("round-trips and rejects a missing code", () => {
    expectRoundTrip(HarnessError.ErrorInfo, { tag: "LlmAuthError", code: "LLM_AUTH" })
    expect(accepts(HarnessError.ErrorInfo, { tag: "LlmAuthError" })).toBe(false)
    expect(accepts(HarnessError.ErrorInfo, { tag: 1, code: "X" })).toBe(false)
  })
})

describe("Ids", () => {
  it("each id schema round-trips a string and rejects a non-string", () => {
    expectRoundTrip(Ids.CallId, Ids.callId("call_42"))
    expectRoundTrip(Ids.SessionId, Ids.sessionId("sess-1"))
    expectRoundTrip(Ids.AgentId, Ids.agentId(""))
    for (const schema of [Ids.CallId, Ids.SessionId, Ids.AgentId]) {
      expect(accepts(schema, "x")).toBe(true)
      expect(accepts(schema, 42)).toBe(false)
      expect(accepts(schema, null)).toBe(false)
    }
  })

  it("branding is a compile-time distinction only: the value is the string itself", () => {
    const call = Ids.callId("abc")
    expect(call).toBe("abc")
    expect(typeof Ids.sessionId("s")).toBe("string")
    const takesCallId = (x: Ids.CallId): string => x
    expect(takesCallId(call)).toBe("abc")
    // @ts-expect-error a SessionId is not a CallId
    takesCallId(Ids.sessionId("s"))
    // @ts-expect-error an AgentId is not a CallId
    takesCallId(Ids.agentId("a"))
    // @ts-expect-error a plain string is not a CallId
    takesCallId("raw")
    const takesSessionId = (x: Ids.SessionId): string => x
    // @ts-expect-error a CallId is not a SessionId
    takesSessionId(call)
  })
})

describe("JSON round-trip of generated values", () => {
  it.prop("Message", [Message.Message], ([message]) => {
    expect(viaJson(Message.Message, message).back).toStrictEqual(plain(message))
  }, { arbitrary: { runs: 150, size: 8 } })

  it.prop("StreamChunk", [StreamChunk.StreamChunk], ([chunk]) => {
    expect(viaJson(StreamChunk.StreamChunk, chunk).back).toStrictEqual(plain(chunk))
  }, { arbitrary: { runs: 300 } })

  it.prop("ModelRequest", [ModelRequest.ModelRequest], ([request]) => {
    expect(viaJson(ModelRequest.ModelRequest, request).back).toStrictEqual(plain(request))
  }, { arbitrary: { runs: 80, size: 6 } })

  it.prop("ContentBlock arrays keep their order", [Arbitrary.array(Arbitrary.schema(Content.ContentBlock), { maxLength: 6 })], ([content]) => {
    expect(viaJson(Message.Message, Message.make("assistant", content)).back.content).toStrictEqual(plain(content))
  }, { arbitrary: { runs: 100, size: 6 } })
})

describe("ModelInfo", () => {
  it("cost prices each disjoint count at its own price; cached input at the input price when not given", () => {
    const pricing = { inputPerMillion: 0.27, outputPerMillion: 1.1, cacheReadPerMillion: 0.07 }
    const usage = Usage.make({ inputTokens: 2_000_000, outputTokens: 1_000_000, cacheReadTokens: 1_000_000, cacheWriteTokens: 1_000_000 })
    expect(ModelInfo.cost(usage, pricing)).toBeCloseTo(0.54 + 1.1 + 0.07 + 0.27, 10)
    expect(ModelInfo.cost(Usage.empty, pricing)).toBe(0)
  })

  it("decodes entries and refuses a context window that is not a positive integer", () => {
    const decode = Schema.decodeUnknownOption(ModelInfo.ModelInfo)
    expect(decode({ name: "m", provider: "p", contextWindow: 128000 })._tag).toBe("Some")
    expect(decode({ name: "m", provider: "p", contextWindow: 0 })._tag).toBe("None")
    expect(decode({ name: "m", provider: "p", contextWindow: 1.5 })._tag).toBe("None")
  })
})
