import { EffectAiBridge } from "@dsh/effect-ai"
import { Content, Ids, Message, ModelRequest } from "@dsh/llm"
import { Model, ModelRegistry } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Layer, Stream } from "effect"
import { LanguageModel, type Response, Tool, Toolkit } from "effect/ai"
import { bridged, failureOf, fake, finish, MODEL, request, run } from "./util.ts"

const bash: ModelRequest.ToolSchema = {
  name: "bash",
  description: "Run a shell command",
  parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] }
}

const callsBash: ReadonlyArray<Response.StreamPartEncoded> = [
  { type: "tool-call", id: "c1", name: "bash", params: { command: "ls" } },
  finish("tool-calls")
]

describe("what effect/ai does with tools that have no handler (why the bridge disables resolution)", () => {
  const toolkit = Toolkit.make(Tool.dynamic("bash", { parameters: bash.parameters }))

  it.effect("with resolution on, a called tool without a handler is a defect", () =>
    Effect.gen(function*() {
      const model = yield* fake(() => callsBash).model
      // the types would require the handlers; at run time effect/ai looks one up and dies
      const stream = model.streamText({ prompt: "hi", toolkit } as never) as Stream.Stream<unknown, unknown>
      const exit = yield* Stream.runDrain(stream).pipe(Effect.exit)
      expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
    }))

  it.effect("with resolution disabled the call comes out as a part and nothing runs", () =>
    Effect.gen(function*() {
      const model = yield* fake(() => callsBash).model
      const parts = yield* model.streamText({ prompt: "hi", toolkit, disableToolCallResolution: true }).pipe(
        Stream.runCollect
      )
      expect(parts.map((p) => p.type)).toStrictEqual(["tool-call", "finish"])
    }))

  it.effect("with strict validation a call to a tool not offered fails the whole response; deferred lets it through", () =>
    Effect.gen(function*() {
      const model = yield* fake(() => [{ type: "tool-call", id: "c1", name: "rm", params: {} }, finish("tool-calls")]).model
      const strict = yield* model.streamText({ prompt: "hi", toolkit, disableToolCallResolution: true }).pipe(
        Stream.runCollect,
        Effect.flip
      )
      expect(strict.reason._tag).toBe("InvalidOutputError")
      const deferred = yield* model.streamText({
        prompt: "hi",
        toolkit,
        disableToolCallResolution: true,
        toolCallValidation: "deferred"
      }).pipe(Stream.runCollect)
      expect(deferred.map((p) => p.type)).toStrictEqual(["tool-call", "finish"])
    }))
})

describe("the bridge", () => {
  it.effect("offers the request's tools as JSON-Schema tools with its tool choice, and leaves the calls to the loop", () =>
    Effect.gen(function*() {
      const f = fake(() => callsBash)
      const answer = yield* Effect.gen(function*() {
        return yield* (yield* Model).generate(request("list files", { tools: [bash], toolChoice: { tool: "bash" } }))
      }).pipe(Effect.provide(bridged(f)))
      expect(answer.message.content).toStrictEqual([Content.toolCall(Ids.callId("c1"), "bash", "{\"command\":\"ls\"}")])
      const options = f.calls[0]!
      expect(options.tools.map((t) => [t.name, Tool.getDescription(t), Tool.getJsonSchema(t), Tool.getStrictMode(t)]))
        .toStrictEqual([["bash", bash.description, bash.parameters, false]])
      expect(options.toolChoice).toStrictEqual({ tool: "bash" })
      expect(options.toolCallValidation).toBe("deferred")
    }))

  it.effect("offers no tools when the request has none", () =>
    Effect.gen(function*() {
      const f = fake(() => [finish("stop")])
      yield* Effect.gen(function*() {
        return yield* (yield* Model).generate(request("hi", { toolChoice: "required" }))
      }).pipe(Effect.provide(bridged(f)))
      expect([f.calls[0]!.tools, f.calls[0]!.toolChoice]).toStrictEqual([[], "none"])
    }))

  // A provider reads its own configuration (temperature, output limit, …) from context when
  // the stream runs; `configure` provides it per request.
  class Sampling extends Context.Reference<{ readonly temperature?: number; readonly maxTokens?: number }>(
    "test/Sampling",
    { defaultValue: () => ({}) }
  ) {}
  const configurable = LanguageModel.make({
    generateText: () => Effect.succeed([]),
    streamText: () =>
      Stream.unwrap(Effect.gen(function*() {
        const sampling = yield* Sampling
        return Stream.fromIterable<Response.StreamPartEncoded>([
          { type: "text-start", id: "t" },
          { type: "text-delta", id: "t", delta: JSON.stringify(sampling) },
          { type: "text-end", id: "t" },
          finish("stop")
        ])
      }))
  })

  it.effect("applies temperature and maxTokens through `configure`; without it they are not applied", () =>
    Effect.gen(function*() {
      const ask = Effect.gen(function*() {
        const answer = yield* (yield* Model).generate(request("hi", { temperature: 0.2, maxTokens: 64, stop: ["\n"] }))
        return Message.textOf(answer.message)
      })
      const configured = yield* ask.pipe(Effect.provide(
        EffectAiBridge.layerWith(configurable, {
          models: [MODEL],
          configure: (req, parts) =>
            parts.pipe(Stream.provideService(Sampling, {
              ...(req.temperature === undefined ? {} : { temperature: req.temperature }),
              ...(req.maxTokens === undefined ? {} : { maxTokens: req.maxTokens })
            }))
        }).pipe(Layer.provideMerge(Model.layer))
      ))
      expect(configured).toBe("{\"temperature\":0.2,\"maxTokens\":64}")
      const plain = yield* ask.pipe(Effect.provide(
        EffectAiBridge.layerWith(configurable, { models: [MODEL] }).pipe(Layer.provideMerge(Model.layer))
      ))
      expect(plain).toBe("{}")
    }))

  it.effect("`layer` bridges the LanguageModel in context under every given name, as adapter \"effect-ai\" by default", () =>
    Effect.gen(function*() {
      const registry = yield* ModelRegistry
      expect(yield* registry.models).toStrictEqual(["fast", "smart"])
      expect((yield* registry.resolve("smart")).name).toBe(EffectAiBridge.defaultName)
      const answer = yield* (yield* Model).generate(ModelRequest.make("fast", [Message.user("hi")]))
      expect(Message.textOf(answer.message)).toBe("from context")
    }).pipe(Effect.provide(
      EffectAiBridge.layer({ models: ["smart", "fast"] }).pipe(
        Layer.provide(Layer.effect(
          LanguageModel.LanguageModel,
          fake(() => [
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: "from context" },
            { type: "text-end", id: "t" },
            finish("stop")
          ]).model
        )),
        Layer.provideMerge(Model.layer)
      )
    )))

  it.effect("a given name names the adapter", () =>
    Effect.gen(function*() {
      const registry = yield* ModelRegistry
      expect((yield* registry.resolve(MODEL)).name).toBe("anthropic-via-effect")
    }).pipe(Effect.provide(bridged(fake(() => [finish("stop")]), { name: "anthropic-via-effect" }))))
})

describe("options the Layers cannot use", () => {
  it.effect("no models list, a key that is no option, a configure that is no function: LLM_CONFIG naming the setting, at the build", () =>
    Effect.gen(function*() {
      const built = (options: unknown) =>
        Effect.flip(Effect.scoped(Layer.build(EffectAiBridge.layerWith(fake(() => [finish("stop")]).model, options as EffectAiBridge.Options).pipe(Layer.provideMerge(Model.layer)))))
      for (const [options, setting, said] of [
        [{ model: MODEL }, "options", `the options object has "model", which is no option (known: models, name, configure, customBlock)`],
        [{ models: MODEL }, "models", "models must be a non-empty list of model names"],
        [{ models: [] }, "models", "models must be a non-empty list of model names"],
        [{ models: [MODEL], configure: "yes" }, "configure", "configure must be a function"],
        [null, "options", "the options must be an object"]
      ] as const) {
        const error = yield* built(options)
        expect(error).toMatchObject({ _tag: "EffectAiConfigError", code: "LLM_CONFIG", setting })
        expect(error.message).toContain(said)
      }
    }))
})

describe("a provider stream that dies", () => {
  it.effect("ends in LLM_PROTOCOL carrying the defect's message, not a defect", () =>
    Effect.gen(function*() {
      const parts = Stream.fromIterable<Response.StreamPartEncoded>([
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "half" }
      ]).pipe(Stream.concat(Stream.die(new TypeError("Cannot read properties of undefined (reading 'choices')"))))
      const { error, chunks } = yield* failureOf(parts)
      expect([error._tag, error.code]).toStrictEqual(["LlmProtocolError", "LLM_PROTOCOL"])
      expect(error.message).toBe("the effect/ai model died: Cannot read properties of undefined (reading 'choices')")
      expect(chunks.map((c) => c.type)).toStrictEqual(["block-start", "text-delta"])
    }))

  it.effect("a defect that is no Error keeps its text", () =>
    Effect.gen(function*() {
      const { error } = yield* failureOf(Stream.die("socket parser broke"))
      expect([error.code, error.message]).toStrictEqual(["LLM_PROTOCOL", "the effect/ai model died: socket parser broke"])
    }))

  it.effect("a `configure` that throws is the same typed failure", () =>
    Effect.gen(function*() {
      const { exit } = yield* run([finish("stop")], request("hi"), {
        configure: () => {
          throw new Error("no provider config")
        }
      })
      const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : undefined
      expect(error !== undefined && error._tag === "Some" ? [error.value.code, error.value.message] : exit)
        .toStrictEqual(["LLM_PROTOCOL", "the effect/ai model died: no provider config"])
    }))
})
