/**
 * The test layer: everything an agent needs except the loop itself — a scripted model behind
 * the `Model` service, in-memory sessions with the flush checkpoint, the tool registry, the
 * system prompt, the agent seams — with the invariants checker watching every session. Any
 * violation of the event contract fails the test that caused it, whichever fiber caused it.
 *
 * Compose your own Layers on top (your tools with `Tools.layer`, your middleware), and provide
 * the loop (`AgentLoop.layer` from `@dsh/loop`) at the top: your test is the composition root.
 *
 * @since 0.1.0
 */
import { AgentHooks } from "@dsh/agent"
import { type InvariantError, Invariants } from "@dsh/invariants"
import { Model, ModelRegistry, ScriptedModel } from "@dsh/model"
import { SystemPrompt } from "@dsh/prompt"
import { FlushCheckpoint, type Session, type SessionErrors, type SessionEvent, SessionStore } from "@dsh/session"
import { ToolRegistry } from "@dsh/tools"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"

/**
 * What the test layer provides.
 *
 * @since 0.1.0
 * @category models
 */
export type Services =
  | Model
  | ModelRegistry
  | ScriptedModel.ScriptedModel
  | SessionStore
  | FlushCheckpoint
  | Invariants
  | ToolRegistry
  | SystemPrompt
  | AgentHooks

/**
 * Options of {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The scripted model's replies, one per model request. */
  readonly script?: ReadonlyArray<ScriptedModel.Reply>
  /** The model names the scripted model serves; `["scripted"]` by default. */
  readonly models?: ReadonlyArray<string>
}

/**
 * The test layer.
 *
 * @example
 * ```ts
 * import { Testing } from "@dsh/testing"
 * import { ScriptedModel } from "@dsh/model"
 *
 * const TestLayer = Testing.layer({ script: [ScriptedModel.reply.text("hi")] })
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<Services> => {
  const model = ScriptedModel.layer({
    script: options.script ?? [],
    ...(options.models === undefined ? {} : { models: options.models })
  }).pipe(Layer.provideMerge(Model.layer), Layer.orDie)
  const sessions = Invariants.layer.pipe(Layer.provideMerge(SessionStore.layer))
  return Layer.mergeAll(
    model,
    sessions,
    FlushCheckpoint.layer,
    ToolRegistry.layer,
    SystemPrompt.layer,
    AgentHooks.layer
  )
}

/**
 * Creates a session seeded with a recorded log (a replay): its derived history equals the
 * recording's, and the invariants check it from its first event.
 *
 * @since 0.1.0
 * @category replay
 */
export const replay = (
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  id?: string
): Effect.Effect<Session.Session, SessionErrors.SessionExistsError | SessionErrors.InvalidSessionError, SessionStore | Scope.Scope> =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    return yield* store.create(id === undefined ? { seed: events } : { id, seed: events })
  })

/**
 * Runs a test body and fails it with the event-contract violations of the events appended
 * while it ran; those are then reported, so neither `Invariants.verify` nor the test layer's
 * teardown reports them again. Tests that share one layer (`layer(...)`/`it.layer` of
 * `@effect/vitest`) wrap each body in it so a violation fails the test that caused it; without
 * it, the violation still fails the run, at the suite's teardown. A body that fails keeps its
 * own failure; the violations it caused are left to `verify` and the teardown.
 *
 * **Example** (Tests sharing one layer)
 *
 * ```ts
 * import { layer } from "@effect/vitest"
 * import { Testing } from "@dsh/testing"
 *
 * layer(TestLayer)("my agent", (it) => {
 *   it.effect("answers", () => Testing.checked(Effect.gen(function*() { ... })))
 * })
 * ```
 *
 * @since 0.1.0
 * @category invariants
 */
export const checked = <A, E, R>(
  body: Effect.Effect<A, E, R>
): Effect.Effect<A, E | InvariantError, R | Invariants> =>
  Effect.gen(function*() {
    const invariants = yield* Invariants
    return yield* invariants.checked(body)
  })
