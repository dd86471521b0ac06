/**
 * The one-call composition: one Layer that builds the whole production graph of an agent from
 * a few options — a model adapter, tools, sessions in memory or in a JSONL directory, prompt
 * sections, agent hooks, tool middleware, the invariants in dev mode — and `agent(options)`,
 * which creates an agent on it (on the first model the adapter serves, unless told otherwise).
 *
 * @example
 * ```ts
 * import { Dsh, ScriptedModel } from "dsh"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* Dsh.agent()
 *   const result = yield* agent.run("Hello?")
 *   console.log(result.text) // Hi!
 * })
 *
 * const Live = Dsh.layer({ model: ScriptedModel.layer({ script: [ScriptedModel.reply.text("Hi!")] }) })
 * Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(Live)))
 * ```
 *
 * Every part is a Layer of the explicit composition (see the README's advanced path), so a
 * program that needs another part builds that composition itself with its own Layer in place.
 *
 * @since 0.1.0
 */
import { type Agent, Agents, AgentHooks, Hooks, type InvalidInputError } from "@dsh/agent"
import { Invariants } from "@dsh/invariants"
import { AgentLoop } from "@dsh/loop"
import { Model, ModelRegistry } from "@dsh/model"
import { type Section, SystemPrompt } from "@dsh/prompt"
import { FlushCheckpoint, JsonlSessions, type SessionErrors, SessionStore } from "@dsh/session"
import { type Tool, type ToolErrors, type ToolMiddleware, ToolRegistry, Tools } from "@dsh/tools"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"

/**
 * Options of {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<
  ROut,
  E,
  RIn,
  T extends ReadonlyArray<Tool.Any>,
  S extends SessionsOption = "memory",
  I extends boolean = false
> {
  /** The model adapter's Layer: `DeepSeek.layer()`, `ScriptedModel.layer({ script })`, `EffectAiBridge.layer(...)`. */
  readonly model: Layer.Layer<ROut, E, RIn>
  /** The tools the agents may call, registered for the Layer's lifetime. */
  readonly tools?: T
  /**
   * Where sessions live: in memory (the default), one JSONL file each in `directory`, or a
   * Layer of your own providing `SessionStore` and `FlushCheckpoint` (another store).
   */
  readonly sessions?: S
  /** System-prompt sections, assembled into every request in `order`. */
  readonly prompt?: ReadonlyArray<Section>
  /** Middleware on the agent seams (request, step result, continuation, listeners). */
  readonly hooks?: Parameters<typeof Hooks.layer>[0]
  /** Tool execution middleware (permissions, sandboxing, logging). */
  readonly toolMiddleware?: ReadonlyArray<ToolMiddleware.ToolMiddleware>
  /**
   * Check every session's log against the event contract (tests and demos; off by default):
   * `Invariants` is provided, and its Layer fails the program on a violation when it closes.
   */
  readonly invariants?: I
}

/**
 * Where sessions live.
 *
 * @since 0.1.0
 * @category models
 */
export type SessionsOption =
  | "memory"
  | { readonly directory: string }
  | Layer.Layer<SessionStore | FlushCheckpoint, SessionErrors.PersistenceError>

/**
 * What {@link layer} provides, besides what the model Layer provides itself.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = Agents | Model | ModelRegistry | SessionStore | FlushCheckpoint | ToolRegistry | SystemPrompt | AgentHooks

/**
 * The production graph: the loop driving agents over the model, the tools, the sessions, the
 * system prompt and the hooks. With `sessions: { directory }` it also provides
 * `JsonlSessions` (resume a session with `JsonlSessions.resume(id)` and pass it to `agent`).
 * It fails to build with the model Layer's error (`LLM_CONFIG` for a missing API key), a tool
 * registration error (`INVALID_TOOL`, `DUPLICATE_TOOL`) or a `PersistenceError` for a session
 * directory that cannot be created.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <
  ROut,
  E,
  RIn,
  const T extends ReadonlyArray<Tool.Any> = readonly [],
  const S extends SessionsOption = "memory",
  const I extends boolean = false
>(
  options: Options<ROut, E, RIn, T, S, I>
): Layer.Layer<
  Services | ROut | (S extends { readonly directory: string } ? JsonlSessions.JsonlSessions : never) | (I extends true ? Invariants : never),
  E | ToolErrors.RegistrationError | SessionErrors.PersistenceError,
  Exclude<RIn, Model | ModelRegistry> | Exclude<Tool.Requirements<T[number]>, Scope.Scope | Services>
> => {
  const model = options.model.pipe(Layer.provideMerge(Model.layer))
  const sessions = sessionsLayer(options.sessions ?? "memory", options.invariants === true)
  const registrations = Layer.mergeAll(
    Tools.layer(...(options.tools ?? [])),
    Tools.middleware(...(options.toolMiddleware ?? [])),
    Hooks.layer(options.hooks ?? {}),
    sectionsLayer(options.prompt ?? [])
  )
  const parts = Layer.mergeAll(ToolRegistry.layer, SystemPrompt.layer, AgentHooks.layer)
  // the conditional services (JsonlSessions, Invariants) follow the option branches taken
  // above, which the compiler cannot see through: hence the one cast
  return AgentLoop.layer.pipe(
    Layer.provideMerge(registrations),
    Layer.provideMerge(Layer.mergeAll(model, sessions, parts))
  ) as unknown as Layer.Layer<any, any, any>
}

const sessionsLayer = (sessions: SessionsOption, invariants: boolean) => {
  const withInvariants = (store: Layer.Layer<SessionStore | FlushCheckpoint, SessionErrors.PersistenceError>) =>
    invariants ? Layer.provideMerge(Invariants.layer, store) : store
  if (sessions !== "memory" && !("directory" in sessions)) return withInvariants(sessions)
  const inMemory = withInvariants(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer))
  return sessions === "memory" ? inMemory : JsonlSessions.layer(sessions).pipe(Layer.provideMerge(inMemory))
}

const sectionsLayer = (sections: ReadonlyArray<Section>): Layer.Layer<never, never, SystemPrompt> =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const prompt = yield* SystemPrompt
      for (const section of sections) yield* prompt.addSection(section)
    })
  )

/**
 * Creates an agent for the current scope (see `Agents.create`); `model` defaults to the first
 * model the registered adapters serve.
 *
 * @since 0.1.0
 * @category constructors
 */
export const agent = (
  options: Partial<Agent.Options> = {}
): Effect.Effect<
  Agent.Agent,
  SessionErrors.SessionExistsError | SessionErrors.SessionLockedError | InvalidInputError,
  Agents | ModelRegistry | Scope.Scope
> =>
  Effect.gen(function*() {
    const model = options.model ?? (yield* defaultModel)
    return yield* (yield* Agents).create({ ...options, model })
  })

// with no adapter registered there is no model to name: the first request then fails with
// NO_MODEL, which lists what is registered
const defaultModel = Effect.map(ModelRegistry.use((registry) => registry.models), (models) => models[0] ?? "none")
