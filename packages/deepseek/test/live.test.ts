/**
 * A live smoke test against DeepSeek's API. It runs only when `DEEPSEEK_API_KEY` is in the
 * environment and is skipped otherwise, saying so in its name: without it nothing here touches
 * the network. Model: `DEEPSEEK_LIVE_MODEL`, else `deepseek-v4-flash`. It asks for a text
 * answer in thinking mode and for a tool call, and checks the chunk contract, the finish, the
 * usage and what the registry knows of the model.
 */
import { DeepSeek } from "@dsh/deepseek"
import { Message, ModelRequest } from "@dsh/llm"
import { ChunkContract, Model, ModelRegistry } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import { run } from "./util.ts"

const key = process.env["DEEPSEEK_API_KEY"]?.trim()
const enabled = key !== undefined && key !== ""
const model = process.env["DEEPSEEK_LIVE_MODEL"]?.trim() || "deepseek-v4-flash"

// `describe.skipIf`, so that no test body (and no network) runs without the key
describe.skipIf(!enabled)(`DeepSeek, live ${enabled ? "(DEEPSEEK_API_KEY is set)" : "(skipped: DEEPSEEK_API_KEY is not set)"}`, () => {
  it.live("a thinking answer and a tool call", () =>
    Effect.gen(function*() {
      const layer = DeepSeek.layer({ apiKey: Redacted.make(key!), models: [model], thinking: true }).pipe(Layer.provideMerge(Model.layer))
      yield* Effect.gen(function*() {
        const text = yield* Model.use((m) => run(m.stream(ModelRequest.make(model, [Message.user("Answer with the single word OK.")]))))
        expect(text.failure?.message).toBeUndefined()
        expect(ChunkContract.check(text.chunks)).toStrictEqual([])
        expect(text.assembled.finishReason?.kind).toBe("stop")
        expect(text.assembled.usage?.outputTokens).toBeGreaterThan(0)
        const tool = { name: "current_time", description: "Returns the current time.", parameters: { type: "object", properties: {} } }
        const call = yield* Model.use((m) => run(m.stream(ModelRequest.make(model, [Message.user("What time is it? Use the tool.")], { tools: [tool] }))))
        expect(call.failure?.message).toBeUndefined()
        expect(ChunkContract.check(call.chunks)).toStrictEqual([])
        expect(call.assembled.message.content.some((b) => b.type === "tool-call" && b.name === "current_time")).toBe(true)
        const info = yield* ModelRegistry.use((registry) => registry.info(model))
        expect(Option.isSome(info) || !model.startsWith("deepseek-v4")).toBe(true)
      }).pipe(Effect.provide(layer))
    }),
  120_000)
})
