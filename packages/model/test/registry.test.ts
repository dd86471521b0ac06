import { Assembler, Content, LlmError, Message } from "@dsh/llm"
import { type Adapter, layerAdapter, Model, ModelErrors, ModelRegistry } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Scope, Stream } from "effect"
import { conflict, request } from "./util.ts"

/** An adapter answering every request with "<name> answers <model>". */
const answering = (name: string, models: ReadonlyArray<string>): Adapter => ({
  name,
  models,
  stream: (req) => Stream.fromIterable(Assembler.toChunks([Content.text(`${name} answers ${req.model}`)]))
})

const alpha = answering("alpha", ["a-small", "a-large"])
const beta = answering("beta", ["b-large"])

const twoAdapters = Layer.mergeAll(
  layerAdapter(Effect.succeed(alpha)),
  layerAdapter(Effect.succeed(beta))
).pipe(Layer.provideMerge(Model.layer))

const answerOf = (model: string) =>
  Effect.gen(function*() {
    const assembled = yield* (yield* Model).generate(request("hi", model))
    return Message.textOf(assembled.message)
  })

describe("ModelRegistry", () => {
  it.effect("info gives what the serving adapter says about a model, nothing for one it does not describe", () =>
    Effect.gen(function*() {
      const registry = yield* ModelRegistry
      yield* registry.register({
        ...answering("gamma", ["g-1", "g-2"]),
        info: [{ name: "g-1", provider: "gamma", contextWindow: 64_000, pricing: { inputPerMillion: 1, outputPerMillion: 2 } }]
      })
      expect(yield* registry.info("g-1")).toStrictEqual(Option.some({
        name: "g-1",
        provider: "gamma",
        contextWindow: 64_000,
        pricing: { inputPerMillion: 1, outputPerMillion: 2 }
      }))
      expect(yield* registry.info("g-2")).toStrictEqual(Option.none())
      expect(yield* registry.info("unknown")).toStrictEqual(Option.none())
    }).pipe(Effect.scoped, Effect.provide(ModelRegistry.layer)))

  it.effect("routes each request to the adapter serving its model", () =>
    Effect.gen(function*() {
      expect(yield* answerOf("a-small")).toBe("alpha answers a-small")
      expect(yield* answerOf("b-large")).toBe("beta answers b-large")
      expect(yield* answerOf("a-large")).toBe("alpha answers a-large")
      const registry = yield* ModelRegistry
      expect(yield* registry.models).toStrictEqual(["a-large", "a-small", "b-large"])
      expect((yield* registry.resolve("b-large")).name).toBe("beta")
      expect((yield* registry.resolve("a-large")).name).toBe("alpha")
    }).pipe(Effect.provide(twoAdapters)))

  it.effect("an unknown model fails with NoModelError naming the registered models", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const error = yield* Effect.flip(model.generate(request("hi", "gpt-9")))
      expect(error._tag).toBe("NoModelError")
      if (error._tag !== "NoModelError") return
      expect(error.code).toBe("NO_MODEL")
      expect(error.model).toBe("gpt-9")
      expect(error.registered).toStrictEqual(["a-large", "a-small", "b-large"])
      expect(error.message).toBe(`no adapter serves model "gpt-9"; registered models: a-large, a-small, b-large`)

      // the stream fails the same way, with the same typed error
      const streamed = yield* Effect.flip(Stream.runCollect(model.stream(request("hi", "gpt-9"))))
      expect(streamed).toBeInstanceOf(ModelErrors.NoModelError)
      expect(streamed.message).toBe(error.message)

      const resolved = yield* Effect.flip((yield* ModelRegistry).resolve("gpt-9"))
      expect(resolved.registered).toStrictEqual(["a-large", "a-small", "b-large"])
    }).pipe(Effect.provide(twoAdapters)))

  it.effect("with nothing registered, NoModelError says so", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip((yield* Model).generate(request("hi", "gpt-9")))
      expect(error).toBeInstanceOf(ModelErrors.NoModelError)
      if (!(error instanceof ModelErrors.NoModelError)) return
      expect(error.code).toBe("NO_MODEL")
      expect(error.registered).toStrictEqual([])
      expect(error.message).toBe(
        `no model adapter is registered, so model "gpt-9" cannot be served; provide an adapter Layer`
      )
      expect(yield* (yield* ModelRegistry).models).toStrictEqual([])
    }).pipe(Effect.provide(Model.layer)))

  it.effect("with only adapters that serve no models, NoModelError names them rather than say none is registered", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip((yield* Model).generate(request("hi", "gpt-9")))
      expect(error.code).toBe("NO_MODEL")
      expect(error.message).toBe(
        `the registered adapters ("empty") serve no models, so model "gpt-9" cannot be served; give the adapter the names of its models (models: ["gpt-9"])`
      )
    }).pipe(Effect.provide(layerAdapter(Effect.succeed(answering("empty", []))).pipe(Layer.provideMerge(Model.layer)))))

  it.effect("a second adapter claiming a served name fails with ModelConflictError and changes nothing", () =>
    Effect.gen(function*() {
      const registry = yield* ModelRegistry
      yield* registry.register(alpha)
      // "b-only" is free, "a-small" is taken: the registration is all or nothing
      const error = conflict(yield* Effect.flip(registry.register(answering("gamma", ["b-only", "a-small"]))))
      expect(error.code).toBe("MODEL_CONFLICT")
      expect(error.model).toBe("a-small")
      expect(error.adapter).toBe("gamma")
      expect(error.registeredBy).toBe("alpha")
      expect(error.message).toContain(`"gamma"`)
      expect(error.message).toContain(`"alpha"`)
      expect(error.message).toContain(`"a-small"`)

      expect((yield* registry.resolve("a-small")).name).toBe("alpha")
      expect(yield* registry.models).toStrictEqual(["a-large", "a-small"])
      const free = yield* Effect.flip(registry.resolve("b-only"))
      expect(free.code).toBe("NO_MODEL")
    }).pipe(Effect.scoped, Effect.provide(ModelRegistry.layer)))

  it.effect("a conflicting adapter Layer fails to build with ModelConflictError", () =>
    Effect.gen(function*() {
      const layer = layerAdapter(Effect.succeed(answering("gamma", ["a-large"]))).pipe(
        Layer.provideMerge(layerAdapter(Effect.succeed(alpha)).pipe(Layer.provideMerge(Model.layer)))
      )
      const error = yield* Effect.flip(Effect.provide(answerOf("a-large"), layer))
      expect(error._tag).toBe("ModelConflictError")
      if (error._tag !== "ModelConflictError") return
      expect(error.code).toBe("MODEL_CONFLICT")
      expect(error.adapter).toBe("gamma")
      expect(error.registeredBy).toBe("alpha")
    }))

  it.effect("closing the scope of a registration removes it", () =>
    Effect.gen(function*() {
      const registry = yield* ModelRegistry
      const scope = yield* Scope.make()
      yield* registry.register(alpha).pipe(Scope.provide(scope))
      expect(yield* answerOf("a-small")).toBe("alpha answers a-small")

      yield* Scope.close(scope, Exit.void)
      expect(yield* registry.models).toStrictEqual([])
      const error = yield* Effect.flip(answerOf("a-small"))
      expect(error.code).toBe("NO_MODEL")

      // the name is free again
      yield* Effect.scoped(Effect.gen(function*() {
        yield* registry.register(answering("gamma", ["a-small"]))
        expect(yield* answerOf("a-small")).toBe("gamma answers a-small")
      }))
      expect((yield* Effect.flip(registry.resolve("a-small"))).code).toBe("NO_MODEL")
    }).pipe(Effect.provide(Model.layer)))

  it.effect("a failed registration does not remove the names of the adapter already serving them", () =>
    Effect.gen(function*() {
      const registry = yield* ModelRegistry
      yield* registry.register(alpha)
      const attempt = yield* Effect.exit(Effect.scoped(registry.register(answering("gamma", ["a-small"]))))
      expect(Exit.isFailure(attempt)).toBe(true)
      expect((yield* registry.resolve("a-small")).name).toBe("alpha")
    }).pipe(Effect.scoped, Effect.provide(ModelRegistry.layer)))
})

class Greeting extends Context.Service<Greeting, { readonly word: string }>()("test/Greeting") {}

describe("layerAdapter", () => {
  const greeter = layerAdapter(Effect.gen(function*() {
    const { word } = yield* Greeting
    return {
      name: "greeter",
      models: ["greet"],
      stream: () => Stream.fromIterable(Assembler.toChunks([Content.text(word)]))
    } satisfies Adapter
  }))

  it.effect("registers the adapter its effect builds, for the Layer's lifetime", () =>
    Effect.gen(function*() {
      const registry = yield* ModelRegistry
      yield* Effect.scoped(Effect.gen(function*() {
        yield* Layer.build(greeter.pipe(Layer.provide(Layer.succeed(Greeting, { word: "bonjour" }))))
        expect(yield* registry.models).toStrictEqual(["greet"])
        expect(yield* answerOf("greet")).toBe("bonjour")
      }))
      expect(yield* registry.models).toStrictEqual([])
      expect((yield* Effect.flip(answerOf("greet"))).code).toBe("NO_MODEL")
    }).pipe(Effect.provide(Model.layer)))

  it.effect("a failing adapter effect fails the Layer with its error", () =>
    Effect.gen(function*() {
      const failing = layerAdapter(Effect.fail(new LlmError.LlmAuthError({ message: "no API key" })))
      const error = yield* Effect.flip(Effect.provide(answerOf("anything"), failing.pipe(Layer.provideMerge(Model.layer))))
      expect(error._tag).toBe("LlmAuthError")
      expect(error.code).toBe("LLM_AUTH")
    }))
})

describe("a value past the Adapter type", () => {
  it.effect("is refused by register with AdapterConfigError (LLM_CONFIG) naming the setting; nothing is registered", () =>
    Effect.gen(function*() {
      const registry = yield* ModelRegistry
      const stream = alpha.stream
      const refused = (adapter: unknown) => Effect.flip(registry.register(adapter as Adapter))
      for (const [adapter, setting, words] of [
        [null, "adapter", "it must be an object, got null"],
        [{ models: ["m"], stream }, "name", "its name must be a non-empty string"],
        // a string's letters would be served as models
        [{ name: "x", models: "gpt", stream }, "models", `adapter "x": models must be a list of model names, got "gpt"`],
        [{ name: "x", models: ["m", 7], stream }, "models", `adapter "x": a model name must be a non-empty string, got 7`],
        [{ name: "x", models: ["m", ""], stream }, "models", "a model name must be a non-empty string"],
        [{ name: "x", models: ["m", undefined], stream }, "models", "a model name must be a non-empty string, got nothing"],
        [{ name: "x", models: ["m"], info: {}, stream }, "info", "info must be a list"],
        [{ name: "x", models: ["m"], stream: "no" }, "stream", "stream must be a function of a request"]
      ] as const) {
        const error = yield* refused(adapter)
        expect(error).toBeInstanceOf(ModelErrors.AdapterConfigError)
        expect(error).toMatchObject({ code: "LLM_CONFIG", setting })
        expect(error.message).toContain(words)
      }
      expect(yield* registry.models).toStrictEqual([])
    }).pipe(Effect.scoped, Effect.provide(ModelRegistry.layer)))
})
