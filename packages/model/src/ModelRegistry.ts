/**
 * The registry of model adapters. An adapter serves a set of model names; a request is
 * routed to the adapter that serves its `model`. Adapters register within a scope (an
 * adapter's Layer registers it for the Layer's lifetime), so closing the scope removes them;
 * registering into a scope that is closed already fails with `ScopeClosedError`.
 *
 * @since 0.1.0
 */
import { AdapterSettings, type LlmError, type ModelInfo, type ModelRequest, ScopedList, type StreamChunk } from "@dsh/llm"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import { AdapterConfigError, ModelConflictError, NoModelError } from "./ModelError.ts"

/**
 * A model adapter: the names it serves and its streaming call. The stream obeys the chunk
 * contract of `@dsh/llm/StreamChunk`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Adapter {
  /** The adapter's name (used in errors and traces), e.g. `"deepseek"`. */
  readonly name: string
  /** The model names it serves. */
  readonly models: ReadonlyArray<string>
  /** What is known about the models it serves (context window, prices), by name; optional. */
  readonly info?: ReadonlyArray<ModelInfo.ModelInfo>
  readonly stream: (request: ModelRequest.ModelRequest) => Stream.Stream<StreamChunk.StreamChunk, LlmError.LlmError>
}

/**
 * @since 0.1.0
 * @category services
 */
export class ModelRegistry extends Context.Service<ModelRegistry, {
  /**
   * Registers an adapter until the current scope closes. Fails with `ModelConflictError` if it
   * claims a served name, with `AdapterConfigError` (`LLM_CONFIG`) if it is no adapter (no
   * name, `models` that is no list of names, `info` that is no list, `stream` that is no
   * function), and with `ScopeClosedError` if the current scope is closed already; either way
   * nothing is registered.
   */
  readonly register: (
    adapter: Adapter
  ) => Effect.Effect<void, ModelConflictError | AdapterConfigError | ScopedList.ScopeClosedError, Scope.Scope>
  /** The adapter serving a model. */
  readonly resolve: (model: string) => Effect.Effect<Adapter, NoModelError>
  /** The served model names, sorted. */
  readonly models: Effect.Effect<ReadonlyArray<string>>
  /** What the adapter serving a model says about it (context window, prices), if anything. */
  readonly info: (model: string) => Effect.Effect<Option.Option<ModelInfo.ModelInfo>>
}>()("@dsh/model/ModelRegistry") {
  /**
   * An empty registry.
   *
   * @since 0.1.0
   */
  static readonly layer: Layer.Layer<ModelRegistry> = Layer.sync(ModelRegistry, () => {
    const byModel = new Map<string, Adapter>()
    // every adapter registered, also one serving no models (an empty `models`): a request's
    // failure then names it rather than say that none is registered
    const adapters = new Set<Adapter>()
    const served = () => [...byModel.keys()].sort()

    const register = (adapter: Adapter) =>
      Effect.flatMap(Scope.Scope, (scope) => Effect.acquireRelease(
        Effect.suspend((): Effect.Effect<void, ModelConflictError | AdapterConfigError | ScopedList.ScopeClosedError> => {
          const problem = adapterProblem(adapter)
          if (problem !== undefined) return Effect.fail(problem)
          // A closed scope would run the release at once: the adapter would serve nothing.
          // Checked next to the insertion, where no other fiber runs in between.
          if (ScopedList.isClosed(scope)) {
            return Effect.fail(ScopedList.scopeClosed(`model adapter ${JSON.stringify(adapter.name)}`))
          }
          for (const model of adapter.models) {
            const existing = byModel.get(model)
            if (existing !== undefined) {
              return Effect.fail(
                new ModelConflictError({
                  message:
                    `adapter "${adapter.name}" claims model "${model}", which adapter "${existing.name}" already serves`,
                  model,
                  adapter: adapter.name,
                  registeredBy: existing.name
                })
              )
            }
          }
          for (const model of adapter.models) byModel.set(model, adapter)
          adapters.add(adapter)
          return Effect.void
        }),
        () =>
          Effect.sync(() => {
            for (const model of adapter.models) if (byModel.get(model) === adapter) byModel.delete(model)
            adapters.delete(adapter)
          })
      ))

    const resolve = (model: string) =>
      Effect.suspend(() => {
        const adapter = byModel.get(model)
        if (adapter !== undefined) return Effect.succeed(adapter)
        const registered = served()
        return Effect.fail(
          new NoModelError({
            message: registered.length > 0
              ? `no adapter serves model "${model}"; registered models: ${registered.join(", ")}`
              : adapters.size > 0
              ? `the registered adapters (${[...adapters].map((a) => JSON.stringify(a.name)).join(", ")}) serve no models, ` +
                `so model "${model}" cannot be served; give the adapter the names of its models (models: ["${model}"])`
              : `no model adapter is registered, so model "${model}" cannot be served; provide an adapter Layer`,
            model,
            registered
          })
        )
      })

    const info = (model: string) =>
      Effect.sync(() => Option.fromUndefinedOr(byModel.get(model)?.info?.find((entry) => entry.name === model)))

    return ModelRegistry.of({ register, resolve, models: Effect.sync(served), info })
  })
}

/** What makes a value past the types no adapter: the registry would serve nonsense (a string's letters as models). */
const adapterProblem = (adapter: unknown): AdapterConfigError | undefined => {
  const refused = (setting: string, message: string) =>
    new AdapterConfigError({ message: `a model adapter was not registered: ${message}`, setting })
  if (typeof adapter !== "object" || adapter === null) return refused("adapter", `it must be an object, got ${AdapterSettings.shown(adapter)}`)
  const { info, models, name, stream } = adapter as Partial<Record<keyof Adapter, unknown>>
  if (typeof name !== "string" || name === "") return refused("name", `its name must be a non-empty string, got ${AdapterSettings.shown(name)}`)
  const named = `adapter ${JSON.stringify(name)}`
  if (!Array.isArray(models)) return refused("models", `${named}: models must be a list of model names, got ${AdapterSettings.shown(models)}`)
  // by index: a wrong element may be `undefined` itself
  const wrong = models.findIndex((model) => typeof model !== "string" || model === "")
  if (wrong >= 0) return refused("models", `${named}: a model name must be a non-empty string, got ${AdapterSettings.shown(models[wrong])}`)
  if (info !== undefined && !Array.isArray(info)) return refused("info", `${named}: info must be a list of model infos, got ${AdapterSettings.shown(info)}`)
  if (typeof stream !== "function") return refused("stream", `${named}: stream must be a function of a request, got ${AdapterSettings.shown(stream)}`)
  return undefined
}

/**
 * A Layer that registers an adapter for its own lifetime. This is how adapter Layers are
 * built.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerAdapter = <E, R>(
  adapter: Effect.Effect<Adapter, E, R>
): Layer.Layer<never, E | ModelConflictError | AdapterConfigError, ModelRegistry | Exclude<R, Scope.Scope>> =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const registry = yield* ModelRegistry
      yield* ScopedList.inOpenScope(registry.register(yield* adapter))
    })
  )
