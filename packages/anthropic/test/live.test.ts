/**
 * A live smoke test against Anthropic's API. It runs only when `ANTHROPIC_API_KEY` is in the
 * environment and is skipped otherwise, saying so in its name: without it nothing here touches
 * the network. Model: `ANTHROPIC_LIVE_MODEL`, else `claude-haiku-4-5` (the cheapest). It asks
 * for a text answer, then for a tool call with extended thinking on, and sends the answer back
 * with the tool's result — which the API accepts only if the thinking came back with its
 * signature unchanged — and checks the chunk contract, the finishes, the usage and what the
 * registry knows of the model.
 */
import { Anthropic, Models } from "@dsh/anthropic"
import { Content, Message, ModelRequest } from "@dsh/llm"
import { ChunkContract, Model, ModelRegistry } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import { run } from "./util.ts"

const key = process.env["ANTHROPIC_API_KEY"]?.trim()
const enabled = key !== undefined && key !== ""
const model = process.env["ANTHROPIC_LIVE_MODEL"]?.trim() || "claude-haiku-4-5"

// `describe.skipIf`, so that no test body (and no network) runs without the key
describe.skipIf(!enabled)(`Anthropic, live ${enabled ? "(ANTHROPIC_API_KEY is set)" : "(skipped: ANTHROPIC_API_KEY is not set)"}`, () => {
  it.live("a text answer, then a tool call with thinking sent back", () =>
    Effect.gen(function*() {
      const layer = Anthropic.layer({ apiKey: Redacted.make(key!), models: [model], maxTokens: 2048 }).pipe(
        Layer.provideMerge(Model.layer)
      )
      yield* Effect.gen(function*() {
        const text = yield* Model.use((m) => run(m.stream(ModelRequest.make(model, [Message.user("Answer with the single word OK.")]))))
        expect(text.failure?.message).toBeUndefined()
        expect(ChunkContract.check(text.chunks)).toStrictEqual([])
        expect(text.assembled.finishReason?.kind).toBe("stop")
        expect(text.assembled.usage?.outputTokens).toBeGreaterThan(0)

        const tool = { name: "current_time", description: "Returns the current time.", parameters: { type: "object", properties: {} } }
        const thinking = { anthropic: { thinking: { budgetTokens: 1024 } } }
        const ask = ModelRequest.make(model, [Message.user("What time is it? Use the tool.")], { tools: [tool], providerOptions: thinking })
        const call = yield* Model.use((m) => run(m.stream(ask)))
        expect(call.failure?.message).toBeUndefined()
        expect(ChunkContract.check(call.chunks)).toStrictEqual([])
        expect(call.assembled.finishReason?.kind).toBe("tool-calls")
        const content = call.assembled.message.content
        expect(content.some((b) => b.type === "reasoning" && b.signature !== undefined)).toBe(true)
        const calls = content.flatMap((b) => b.type === "tool-call" ? [b] : [])
        expect(calls.map((c) => c.name)).toContain("current_time")

        const results = Message.make("user", calls.map((c) => Content.toolResult({ toolCallId: c.id, content: [Content.text("12:00 UTC")] })))
        const next = ModelRequest.make(model, [...ask.messages, call.assembled.message, results], { tools: [tool], providerOptions: thinking })
        const answer = yield* Model.use((m) => run(m.stream(next)))
        expect(answer.failure?.message).toBeUndefined()
        expect(answer.assembled.finishReason?.kind).toBe("stop")

        const info = yield* ModelRegistry.use((registry) => registry.info(model))
        // what the catalog says of the model (nothing, for a model it does not list)
        expect(Option.getOrUndefined(info)).toStrictEqual(Models.find(model))
      }).pipe(Effect.provide(layer))
    }), 120_000)
})
