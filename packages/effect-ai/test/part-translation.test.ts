import { PartTranslation, ReasoningMetadata } from "@dsh/effect-ai"
import { Content, FinishReason, Ids, StreamChunk as S, Usage } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Result, Stream } from "effect"
import { AiError, Response } from "effect/ai"
import { chunksOf, failureOf, finish, usage } from "./util.ts"

const id = Ids.callId

/** A streamed text block as a provider sends it. */
const textParts = (text: string, blockId = "t"): Array<Response.StreamPartEncoded> => [
  { type: "text-start", id: blockId },
  { type: "text-delta", id: blockId, delta: text },
  { type: "text-end", id: blockId }
]

describe("part translation (through LanguageModel.make, so parts are decoded as effect/ai decodes them)", () => {
  it.effect("text: start, deltas (empty ones skipped), end, usage, finish", () =>
    Effect.gen(function*() {
      const chunks = yield* chunksOf([
        { type: "response-metadata", id: "resp_1", modelId: "m" },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "Hel" },
        { type: "text-delta", id: "t", delta: "" },
        { type: "text-delta", id: "t", delta: "lo ✓" },
        { type: "text-end", id: "t" },
        finish("stop", usage.encoded)
      ])
      expect(chunks).toStrictEqual([
        S.blockStart(0, "text"),
        S.textDelta(0, "Hel"),
        S.textDelta(0, "lo ✓"),
        S.blockEnd(0, Content.text("Hello ✓")),
        S.usage(usage.mapped),
        S.finish(FinishReason.stop)
      ])
    }))

  it.effect("reasoning then text; the reasoning's merged provider metadata becomes its signature", () =>
    Effect.gen(function*() {
      const chunks = yield* chunksOf([
        { type: "reasoning-start", id: "r", metadata: { anthropic: { redacted: false } } },
        { type: "reasoning-delta", id: "r", delta: "The user " },
        { type: "reasoning-delta", id: "r", delta: "greets me." },
        { type: "reasoning-end", id: "r", metadata: { anthropic: { signature: "sig-1" } } },
        { type: "reasoning-start", id: "r2" },
        { type: "reasoning-delta", id: "r2", delta: "no metadata" },
        { type: "reasoning-end", id: "r2" },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "Hi!" },
        { type: "text-end", id: "t" },
        finish("stop")
      ])
      const signature = `${ReasoningMetadata.prefix}{"anthropic":{"redacted":false,"signature":"sig-1"}}`
      expect(chunks).toStrictEqual([
        S.blockStart(0, "reasoning"),
        S.reasoningDelta(0, "The user "),
        S.reasoningDelta(0, "greets me."),
        S.blockEnd(0, Content.reasoning("The user greets me.", signature)),
        S.blockStart(1, "reasoning"),
        S.reasoningDelta(1, "no metadata"),
        S.blockEnd(1, Content.reasoning("no metadata")),
        S.blockStart(2, "text"),
        S.textDelta(2, "Hi!"),
        S.blockEnd(2, Content.text("Hi!")),
        S.finish(FinishReason.stop)
      ])
    }))

  it.effect("a streamed tool call: raw JSON fragments as deltas, the name on the first, the raw JSON as arguments", () =>
    Effect.gen(function*() {
      const chunks = yield* chunksOf([
        { type: "tool-params-start", id: "call_1", name: "bash" },
        { type: "tool-params-delta", id: "call_1", delta: "{\"command\": " },
        { type: "tool-params-delta", id: "call_1", delta: "\"ls -la\"}" },
        { type: "tool-params-end", id: "call_1" },
        // the provider's parsed copy: ignored, the raw text (with its space) is what the model wrote
        { type: "tool-call", id: "call_1", name: "bash", params: { command: "ls -la" } },
        finish("tool-calls")
      ])
      expect(chunks).toStrictEqual([
        S.blockStart(0, "tool-call"),
        S.toolCallDelta(0, id("call_1"), "{\"command\": ", "bash"),
        S.toolCallDelta(0, id("call_1"), "\"ls -la\"}"),
        S.blockEnd(0, Content.toolCall(id("call_1"), "bash", "{\"command\": \"ls -la\"}")),
        S.finish(FinishReason.toolCalls)
      ])
    }))

  it.effect("two tool calls interleaved, each keyed by its id", () =>
    Effect.gen(function*() {
      const chunks = yield* chunksOf([
        { type: "tool-params-start", id: "a", name: "read" },
        { type: "tool-params-start", id: "b", name: "write" },
        { type: "tool-params-delta", id: "b", delta: "{\"path\":" },
        { type: "tool-params-delta", id: "a", delta: "{\"path\":\"x\"}" },
        { type: "tool-params-delta", id: "b", delta: "\"y\"}" },
        { type: "tool-params-end", id: "b" },
        { type: "tool-params-end", id: "a" },
        { type: "tool-call", id: "a", name: "read", params: { path: "x" } },
        { type: "tool-call", id: "b", name: "write", params: { path: "y" } },
        finish("tool-calls")
      ])
      expect(chunks).toStrictEqual([
        S.blockStart(0, "tool-call"),
        S.blockStart(1, "tool-call"),
        S.toolCallDelta(1, id("b"), "{\"path\":", "write"),
        S.toolCallDelta(0, id("a"), "{\"path\":\"x\"}", "read"),
        S.toolCallDelta(1, id("b"), "\"y\"}"),
        S.blockEnd(1, Content.toolCall(id("b"), "write", "{\"path\":\"y\"}")),
        S.blockEnd(0, Content.toolCall(id("a"), "read", "{\"path\":\"x\"}")),
        S.finish(FinishReason.toolCalls)
      ])
    }))

  it.effect("a tool call whose parameters were not streamed: one delta with them serialized", () =>
    Effect.gen(function*() {
      const chunks = yield* chunksOf([
        { type: "tool-call", id: "c1", name: "bash", params: { command: "pwd" } },
        // started, but no fragments (a call without arguments): the `tool-call` part completes it
        { type: "tool-params-start", id: "c2", name: "now" },
        { type: "tool-params-end", id: "c2" },
        { type: "tool-call", id: "c2", name: "now", params: {} },
        // a provider handing over the unparsed text
        { type: "tool-call", id: "c3", name: "raw", params: "{\"a\": 1}" },
        finish("tool-calls")
      ])
      expect(chunks).toStrictEqual([
        S.blockStart(0, "tool-call"),
        S.toolCallDelta(0, id("c1"), "{\"command\":\"pwd\"}", "bash"),
        S.blockEnd(0, Content.toolCall(id("c1"), "bash", "{\"command\":\"pwd\"}")),
        S.blockStart(1, "tool-call"),
        S.toolCallDelta(1, id("c2"), "{}", "now"),
        S.blockEnd(1, Content.toolCall(id("c2"), "now", "{}")),
        S.blockStart(2, "tool-call"),
        S.toolCallDelta(2, id("c3"), "{\"a\": 1}", "raw"),
        S.blockEnd(2, Content.toolCall(id("c3"), "raw", "{\"a\": 1}")),
        S.finish(FinishReason.toolCalls)
      ])
    }))

  it.effect("the OpenAI-compatible provider's order: text still open while tool calls stream, all ended at [DONE]", () =>
    Effect.gen(function*() {
      const chunks = yield* chunksOf([
        { type: "response-metadata", id: "chatcmpl-1", modelId: "gpt" },
        { type: "text-start", id: "chatcmpl-1_message" },
        { type: "text-delta", id: "chatcmpl-1_message", delta: "Let me look." },
        { type: "tool-params-start", id: "call_9", name: "bash" },
        { type: "tool-params-delta", id: "call_9", delta: "{\"command\":\"ls\"}" },
        { type: "text-end", id: "chatcmpl-1_message" },
        { type: "tool-params-end", id: "call_9" },
        { type: "tool-call", id: "call_9", name: "bash", params: { command: "ls" } },
        finish("tool-calls", { inputTokens: { uncached: 5, total: 5, cacheRead: 0 }, outputTokens: { total: 9 } })
      ])
      expect(chunks).toStrictEqual([
        S.blockStart(0, "text"),
        S.textDelta(0, "Let me look."),
        S.blockStart(1, "tool-call"),
        S.toolCallDelta(1, id("call_9"), "{\"command\":\"ls\"}", "bash"),
        S.blockEnd(0, Content.text("Let me look.")),
        S.blockEnd(1, Content.toolCall(id("call_9"), "bash", "{\"command\":\"ls\"}")),
        S.usage(Usage.make({ inputTokens: 5, outputTokens: 9 })),
        S.finish(FinishReason.toolCalls)
      ])
    }))

  it.effect("blocks still open at finish are ended before it, in index order", () =>
    Effect.gen(function*() {
      const chunks = yield* chunksOf([
        { type: "reasoning-start", id: "r" },
        { type: "reasoning-delta", id: "r", delta: "hmm" },
        { type: "tool-params-start", id: "c", name: "bash" },
        { type: "tool-params-delta", id: "c", delta: "{}" },
        { type: "text-delta", id: "t", delta: "a delta without its start opens the block" },
        finish("length")
      ])
      expect(chunks).toStrictEqual([
        S.blockStart(0, "reasoning"),
        S.reasoningDelta(0, "hmm"),
        S.blockStart(1, "tool-call"),
        S.toolCallDelta(1, id("c"), "{}", "bash"),
        S.blockStart(2, "text"),
        S.textDelta(2, "a delta without its start opens the block"),
        S.blockEnd(0, Content.reasoning("hmm")),
        S.blockEnd(1, Content.toolCall(id("c"), "bash", "{}")),
        S.blockEnd(2, Content.text("a delta without its start opens the block")),
        S.finish(FinishReason.length)
      ])
    }))

  it.effect("images; other files, sources and provider-executed tool calls are dropped", () =>
    Effect.gen(function*() {
      const png = new Uint8Array([137, 80, 78, 71])
      const chunks = yield* chunksOf([
        ...textParts("Here:"),
        { type: "file", mediaType: "image/png", data: "iVBORw==" },
        { type: "file", mediaType: "application/pdf", data: "JVBERg==" },
        { type: "source", sourceType: "url", id: "s1", url: "https://effect.website", title: "Effect" },
        { type: "tool-params-start", id: "ws", name: "web_search", providerExecuted: true },
        { type: "tool-params-delta", id: "ws", delta: "{\"q\":\"x\"}" },
        { type: "tool-params-end", id: "ws" },
        { type: "tool-call", id: "ws", name: "web_search", params: { q: "x" }, providerExecuted: true },
        finish("stop")
      ])
      expect(chunks).toStrictEqual([
        S.blockStart(0, "text"),
        S.textDelta(0, "Here:"),
        S.blockEnd(0, Content.text("Here:")),
        S.blockStart(1, "image"),
        S.blockEnd(1, Content.image("image/png", Buffer.from(png).toString("base64"))),
        S.finish(FinishReason.stop)
      ])
    }))

  it.effect("nothing after finish: later parts are not even pulled", () =>
    Effect.gen(function*() {
      const chunks = yield* chunksOf(
        Stream.fromIterable<Response.StreamPartEncoded>([
          { type: "text-start", id: "t" },
          { type: "text-delta", id: "t", delta: "done" },
          finish("stop")
        ]).pipe(
          Stream.concat(Stream.fromIterable<Response.StreamPartEncoded>([{ type: "text-delta", id: "t", delta: "late" }])),
          Stream.concat(Stream.fail(AiError.make({ module: "Test", method: "late", reason: new AiError.UnknownError({}) })))
        )
      )
      expect(chunks.at(-1)).toStrictEqual(S.finish(FinishReason.stop))
      expect(chunks.filter((c) => c.type === "text-delta")).toStrictEqual([S.textDelta(0, "done")])
    }))

  it.effect("a stream that ends without finish fails with LlmProtocolError after what it sent", () =>
    Effect.gen(function*() {
      const { chunks, error } = yield* failureOf([
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "cut" }
      ])
      expect(chunks).toStrictEqual([S.blockStart(0, "text"), S.textDelta(0, "cut")])
      expect([error._tag, error.code, error.message]).toStrictEqual([
        "LlmProtocolError",
        "LLM_PROTOCOL",
        "the effect/ai response stream ended without a finish part"
      ])
    }))

  it.effect("an error part fails the stream with the mapped error; nothing after it is pulled", () =>
    Effect.gen(function*() {
      const { chunks, error } = yield* failureOf([
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "partial" },
        { type: "error", error: { message: "overloaded" } },
        finish("stop")
      ])
      expect(chunks).toStrictEqual([S.blockStart(0, "text"), S.textDelta(0, "partial")])
      expect([error._tag, error.code, error.message]).toStrictEqual([
        "LlmServerError",
        "LLM_SERVER",
        "the provider reported an error in its stream: overloaded"
      ])
    }))

  it.effect("a failure mid-stream keeps the chunks sent before it", () =>
    Effect.gen(function*() {
      const { chunks, error } = yield* failureOf(
        Stream.fromIterable<Response.StreamPartEncoded>([
          { type: "text-start", id: "t" },
          { type: "text-delta", id: "t", delta: "a long answer" }
        ]).pipe(Stream.concat(Stream.fail(AiError.make({
          module: "OpenAiClient",
          method: "createResponseStream",
          reason: new AiError.RateLimitError({ retryAfter: Duration.seconds(2) })
        }))))
      )
      expect(chunks).toStrictEqual([S.blockStart(0, "text"), S.textDelta(0, "a long answer")])
      expect(error).toMatchObject({ _tag: "LlmRateLimitError", code: "LLM_RATE_LIMIT", retryAfterMillis: 2000 })
    }))
})

describe("the translator on its own", () => {
  it("a second tool call under an ended call's id, of another name, is LLM_PROTOCOL, not a call lost without a word", () => {
    const t = PartTranslation.make()
    const call = (name: string) => Response.makePart("tool-call", { id: "call_0", name, params: {}, providerExecuted: false })
    expect(t.push(call("bash"))._tag).toBe("Success")
    // the same call again (a confirmation of streamed parameters) is no second call
    expect(t.push(call("bash"))).toStrictEqual(Result.succeed([]))
    const second = t.push(call("read"))
    expect(Result.isFailure(second) ? second.failure : undefined).toMatchObject({
      code: "LLM_PROTOCOL",
      message: `the effect/ai response has two tool calls with id "call_0" (bash, then read): the second would be lost`
    })
  })

  it("a tool call with an empty id is LLM_PROTOCOL, as the wire adapters say, not a call no result can match", () => {
    for (const part of [
      Response.makePart("tool-params-start", { id: "", name: "bash", providerExecuted: false }),
      Response.makePart("tool-params-delta", { id: "", delta: "{}" }),
      Response.makePart("tool-call", { id: "", name: "bash", params: {}, providerExecuted: false })
    ]) {
      const pushed = PartTranslation.make().push(part)
      expect(Result.isFailure(pushed) ? pushed.failure : undefined).toMatchObject({
        code: "LLM_PROTOCOL",
        message: `the effect/ai response has a ${part.type} part with no call id (got ""): its result could not be matched to it`
      })
    }
  })

  it("parameters streamed without a start wait for the tool-call part's name", () => {
    const t = PartTranslation.make()
    const chunks = [
      Response.makePart("tool-params-delta", { id: "c", delta: `{"command":"ls"}` }),
      Response.makePart("tool-params-end", { id: "c" }),
      Response.makePart("tool-call", { id: "c", name: "bash", params: { command: "ls" }, providerExecuted: false })
    ].flatMap((part) => Result.getOrThrow(t.push(part)))
    const ended = chunks.find((chunk) => chunk.type === "block-end")
    expect(ended).toStrictEqual(S.blockEnd(0, Content.toolCall(Ids.callId("c"), "bash", `{"command":"ls"}`)))
  })

  it.effect("a value that is no part (a configure that maps parts badly) fails LLM_PROTOCOL, not a crash", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.flip(Stream.runDrain(PartTranslation.translate(Stream.make(null as unknown as Response.AnyPart))))
      expect(failed.code).toBe("LLM_PROTOCOL")
      expect(failed.message).toBe("the effect/ai response stream gave null, not a response part")
    }))

  it("ignores a second start, an end without start and everything after finish", () => {
    const t = PartTranslation.make()
    const push = (part: Response.AnyPart) => {
      const result = t.push(part)
      if (result._tag === "Failure") throw new Error(result.failure.message)
      return result.success
    }
    expect(push(Response.makePart("text-start", { id: "t" }))).toStrictEqual([S.blockStart(0, "text")])
    expect(push(Response.makePart("text-start", { id: "t" }))).toStrictEqual([])
    expect(push(Response.makePart("reasoning-end", { id: "nope" }))).toStrictEqual([])
    // results of provider-executed tools have no dsh block (and effect/ai only decodes them for offered tools)
    expect(push(Response.makePart("tool-result", {
      id: "ws",
      name: "web_search",
      result: ["hit"],
      encodedResult: ["hit"],
      isFailure: false,
      providerExecuted: true,
      preliminary: false
    }))).toStrictEqual([])
    expect(push(Response.makePart("tool-approval-request", { approvalId: "a", toolCallId: "c" }))).toStrictEqual([])
    expect(t.finished()).toBe(false)
    expect(t.end()._tag).toBe("Failure")
    expect(push(Response.makePart("finish", {
      reason: "stop",
      usage: new Response.Usage({ inputTokens: {}, outputTokens: {} })
    }))).toStrictEqual([S.blockEnd(0, Content.text("")), S.finish(FinishReason.stop)])
    expect(push(Response.makePart("text-delta", { id: "t", delta: "late" }))).toStrictEqual([])
    expect(t.finished()).toBe(true)
    expect(t.end()).toStrictEqual(Result.succeed([]))
  })

  it("translates whole text and reasoning parts (non-streaming providers' shape) as one delta each", () => {
    const t = PartTranslation.make()
    const chunks = [
      t.push(Response.makePart("reasoning", { text: "thinking", metadata: { p: { s: "1" } } })),
      t.push(Response.makePart("text", { text: "Here:" }))
    ].flatMap((r) => (r._tag === "Success" ? r.success : []))
    expect(chunks).toStrictEqual([
      S.blockStart(0, "reasoning"),
      S.reasoningDelta(0, "thinking"),
      S.blockEnd(0, Content.reasoning("thinking", `${ReasoningMetadata.prefix}{"p":{"s":"1"}}`)),
      S.blockStart(1, "text"),
      S.textDelta(1, "Here:"),
      S.blockEnd(1, Content.text("Here:"))
    ])
  })

  it("serializes a tool call's parameters: a string as is, a value as JSON", () => {
    expect(PartTranslation.argumentsOf("{\"a\": 1}")).toBe("{\"a\": 1}")
    expect(PartTranslation.argumentsOf({ a: [1, "x"] })).toBe("{\"a\":[1,\"x\"]}")
    expect(PartTranslation.argumentsOf(undefined)).toBe("{}")
  })
})

describe("finish reasons", () => {
  it("map to dsh finish reasons", () => {
    const all: ReadonlyArray<Response.FinishReason> = [
      "stop",
      "length",
      "content-filter",
      "tool-calls",
      "error",
      "pause",
      "other",
      "unknown"
    ]
    expect(all.map(PartTranslation.finishReason)).toStrictEqual([
      FinishReason.stop,
      FinishReason.length,
      FinishReason.contentFilter,
      FinishReason.toolCalls,
      FinishReason.error("LLM_SERVER", "the provider ended the response with an error"),
      FinishReason.other("pause"),
      FinishReason.other("other"),
      FinishReason.other("unknown")
    ])
  })

  it.effect("an error finish ends the stream normally (a failure reported as a finish)", () =>
    Effect.gen(function*() {
      const chunks = yield* chunksOf([...textParts("I was saying"), finish("error")])
      expect(chunks.at(-1)).toStrictEqual(S.finish(FinishReason.error("LLM_SERVER", "the provider ended the response with an error")))
    }))
})

describe("usage", () => {
  const u = (inputTokens: typeof Response.Usage.Encoded["inputTokens"], outputTokens: typeof Response.Usage.Encoded["outputTokens"]) =>
    PartTranslation.usage(new Response.Usage({ inputTokens, outputTokens }))

  it("is disjoint: the uncached count, cache reads and writes apart", () => {
    expect(u({ uncached: 40, total: 150, cacheRead: 100, cacheWrite: 10 }, { total: 12, reasoning: 3 })).toStrictEqual(
      Usage.make({ inputTokens: 40, outputTokens: 12, cacheReadTokens: 100, cacheWriteTokens: 10, reasoningTokens: 3 })
    )
  })

  it("derives the uncached count from the total when the provider gives none", () => {
    expect(u({ total: 150, cacheRead: 100, cacheWrite: 10 }, { total: 7 })).toStrictEqual(
      Usage.make({ inputTokens: 40, outputTokens: 7, cacheReadTokens: 100, cacheWriteTokens: 10 })
    )
    expect(u({ total: 5 }, {})).toStrictEqual(Usage.make({ inputTokens: 5 }))
  })

  it("adds text and reasoning when there is no output total; never goes below zero", () => {
    expect(u({}, { text: 4, reasoning: 6 })).toStrictEqual(Usage.make({ outputTokens: 10, reasoningTokens: 6 }))
    expect(u({ total: 10, cacheRead: 20 }, {})).toStrictEqual(Usage.make({ inputTokens: 0, cacheReadTokens: 20 }))
  })

  it("is absent when the provider reported no count, and no usage chunk is sent", () =>
    expect(u({}, {})).toBeUndefined())

  it.effect("no usage chunk for a finish without counts", () =>
    Effect.gen(function*() {
      const chunks = yield* chunksOf([...textParts("x"), finish("stop")])
      expect(chunks.some((c) => c.type === "usage")).toBe(false)
    }))
})
