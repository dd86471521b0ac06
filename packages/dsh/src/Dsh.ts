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
import { type Agent, Agents, AgentHooks, Hooks, InvalidInputError } from "@dsh/agent"
import { AdapterSettings, HarnessError, ScopedList } from "@dsh/llm"
import { Invariants } from "@dsh/invariants"
import { AgentLoop } from "@dsh/loop"
import { Model, ModelRegistry } from "@dsh/model"
import { type Section, SystemPrompt } from "@dsh/prompt"
import { FlushCheckpoint, JsonlSessions, SessionErrors, SessionStore } from "@dsh/session"
import { Tool, ToolErrors, type ToolMiddleware, ToolRegistry, Tools } from "@dsh/tools"
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
 * registration error (`INVALID_TOOL`, `DUPLICATE_TOOL`, also for a `tools` entry that is no
 * tool), a `PersistenceError` for a session directory that cannot be created (or `sessions`
 * that name no store), or, for options of other shapes than these (possible past the types:
 * a `prompt` that is no list of sections, a hook that is no middleware), an
 * `InvalidInputError` (`INVALID_INPUT`) naming each.
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
  E | ToolErrors.RegistrationError | SessionErrors.PersistenceError | InvalidInputError,
  Exclude<RIn, Model | ModelRegistry> | Exclude<Tool.Requirements<T[number]>, Scope.Scope | Services>
> => {
  const refused = refusal(options)
  // options that cannot build the graph fail the Layer, which then provides nothing (cast as below)
  if (refused !== undefined) return Layer.effectDiscard(Effect.fail(refused)) as unknown as Layer.Layer<any, any, any>
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
  // above, which the compiler cannot see through: hence the cast
  return AgentLoop.layer.pipe(
    Layer.provideMerge(registrations),
    Layer.provideMerge(Layer.mergeAll(model, sessions, parts))
  ) as unknown as Layer.Layer<any, any, any>
}

/**
 * Why options cannot build a graph, as the typed error the Layer fails with, if they cannot:
 * checked before anything is built, so a mistake past the types (from JavaScript or a config)
 * is named rather than a defect somewhere inside.
 */
const refusal = (options: unknown): ToolErrors.InvalidToolError | SessionErrors.PersistenceError | InvalidInputError | undefined => {
  if (!isRecord(options)) return invalidOptions([`the options must be an object, got ${HarnessError.describe(options)}`])
  const tool = toolProblem(options["tools"])
  if (tool !== undefined) return tool
  const sessions = options["sessions"]
  if (sessions !== undefined && sessions !== null && sessions !== "memory" && !(isRecord(sessions) && "directory" in sessions) && !Layer.isLayer(sessions)) {
    return new SessionErrors.PersistenceError({
      message: `Dsh.layer: sessions must be "memory", { directory } or a Layer providing SessionStore and FlushCheckpoint, got ${shown(sessions)}`,
      sessionId: ""
    })
  }
  const problems = [
    // a misspelt `session` or `tool` would otherwise be dropped without a word, its default kept
    ...[AdapterSettings.unknownKeys("the options object", options, layerOptionNames) ?? []].flat(),
    ...(Layer.isLayer(options["model"]) ? [] : [`model must be an adapter Layer (DeepSeek.layer(), ScriptedModel.layer({ script }), …), got ${shown(options["model"])}`]),
    ...listProblems("prompt", options["prompt"], isSection, "a section { name, content }", " (the agent's own prompt is Dsh.agent({ prompt }))"),
    ...hookProblems(options["hooks"]),
    ...listProblems("toolMiddleware", options["toolMiddleware"], isMiddleware, "a middleware { name, around }"),
    // `invariants: "yes"` would build without the checker, the test it was meant for passing unchecked
    ...(options["invariants"] === undefined || typeof options["invariants"] === "boolean"
      ? []
      : [`invariants must be true or false, got ${shown(options["invariants"])}`])
  ]
  return problems.length === 0 ? undefined : invalidOptions(problems)
}

const layerOptionNames = ["model", "tools", "sessions", "prompt", "hooks", "toolMiddleware", "invariants"]

const invalidOptions = (problems: ReadonlyArray<string>) =>
  new InvalidInputError({ message: `Dsh.layer was not built: ${problems.join("; ")}`, agentId: "" })

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const isMiddleware = (value: unknown): boolean =>
  isRecord(value) && typeof value["name"] === "string" && typeof value["around"] === "function"

// content: text, or an Effect computing it at each assembly (what SystemPrompt.Section takes)
const isSection = (value: unknown): boolean =>
  isRecord(value) && typeof value["name"] === "string" && (typeof value["content"] === "string" || Effect.isEffect(value["content"]))

/** The problems of an option that must be a list of things `is` accepts (or absent). */
const listProblems = (
  name: string,
  value: unknown,
  is: (item: unknown) => boolean,
  expected: string,
  hint = ""
): ReadonlyArray<string> => {
  if (value === undefined) return []
  if (!Array.isArray(value)) return [`${name} must be a list, got ${shown(value)}${hint}`]
  return value.flatMap((item, i) => (is(item) ? [] : [`${name}[${i}] must be ${expected}, got ${shown(item)}${hint}`]))
}

// a value in a message: text quoted, so that it reads as the value it is
const shown = (value: unknown): string => (typeof value === "string" ? JSON.stringify(value) : HarnessError.describe(value))

const hookProblems = (hooks: unknown): ReadonlyArray<string> => {
  if (hooks === undefined || hooks === null) return []
  if (!isRecord(hooks)) return [`hooks must be { request?, stepResult?, continuation?, listeners? }, got ${HarnessError.describe(hooks)}`]
  const seams = ["request", "stepResult", "continuation", "listeners"]
  return Object.entries(hooks).flatMap(([seam, chain]) =>
    seams.includes(seam)
      ? listProblems(`hooks.${seam}`, chain, isMiddleware, "a middleware { name, around }")
      : [`hooks.${seam} is not an agent seam (${seams.join(", ")})`])
}

/** A `tools` option that is no list of tools, as the registration error it would be. */
const toolProblem = (tools: unknown): ToolErrors.InvalidToolError | undefined => {
  if (tools === undefined) return undefined
  const at = Array.isArray(tools) ? tools.findIndex((tool) => !Tool.isTool(tool)) : -1
  if (Array.isArray(tools) && at < 0) return undefined
  const where = Array.isArray(tools) ? `tools[${at}]` : "tools"
  const value: unknown = Array.isArray(tools) ? tools[at] : tools
  const reason = Array.isArray(tools) ? "it is not a tool made with Tool.make" : "it is not a list of tools"
  return new ToolErrors.InvalidToolError({
    message: `Dsh.layer: ${where} was refused: ${reason}, got ${shown(value)}`,
    tool: where,
    reason
  })
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
      for (const section of sections) yield* ScopedList.inOpenScope(prompt.addSection(section))
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
    const agents = yield* Agents
    // options of another shape (past the types) are create's to refuse, naming them
    if (typeof options !== "object" || options === null || Array.isArray(options)) return yield* agents.create(options as never)
    const model = options.model ?? (yield* defaultModel)
    return yield* agents.create({ ...options, model })
  })

// with no adapter registered there is no model to name: the first request then fails with
// NO_MODEL, which lists what is registered
const defaultModel = Effect.map(ModelRegistry.use((registry) => registry.models), (models) => models[0] ?? "none")
