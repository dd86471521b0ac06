/**
 * The agent seams: around-middleware (the one shape of `@dsh/llm`'s `Middleware`) on
 *
 * - the **request**, after the history is derived and before the model is called;
 * - the **step result**, the assembled assistant message before it is logged;
 * - the **continuation** decision after a step (default: continue when the model asked for
 *   tools or the step was steered);
 * - **listeners**, which see the events an agent appends, after they are logged (a step-end
 *   listener may steer the agent, which forces the turn to continue). An abort interrupts the
 *   turn's work, its listeners included, so a listener can miss events of an aborted turn; the
 *   log (`session.stream`, `agent.events`) has every one.
 *
 * Registration is scoped and ordered, as for every chain. A middleware that fails (with a
 * harness error), throws or dies ends the turn with an `error` event carrying the code
 * (`MIDDLEWARE` naming it for a throw or a defect of its own); it never kills the agent. A
 * listener failing where nothing is left to fail (a status change, injected context, a turn's
 * closing events) is recorded as an `error` event and never propagates. Middleware returns new values: what it was given is frozen logged data.
 *
 * The model seam (`Model.use`), the tool registry (`ToolRegistry.use`) and the system prompt
 * (`SystemPrompt.use`) have their own chains of the same shape.
 *
 * @since 0.1.0
 */
import { type FinishReason, type HarnessError, type Message, Middleware, type ModelRequest, ScopedList, type Usage } from "@dsh/llm"
import type { SessionEvent } from "@dsh/session"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Agent } from "./Agent.ts"

/**
 * Where in an agent's life a seam runs.
 *
 * @since 0.1.0
 * @category models
 */
export interface StepContext {
  readonly agentId: string
  readonly sessionId: string
  readonly turn: number
  readonly step: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RequestInput {
  readonly request: ModelRequest.ModelRequest
  readonly context: StepContext
}

/**
 * @since 0.1.0
 * @category models
 */
export interface StepResultInput {
  readonly message: Message.Message
  readonly finishReason: FinishReason.FinishReason
  readonly usage: Usage.Usage | undefined
  readonly context: StepContext
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ContinuationInput {
  readonly message: Message.Message
  readonly hadToolCalls: boolean
  readonly steered: boolean
  readonly context: StepContext
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ListenerInput {
  readonly event: SessionEvent.SessionEvent
  readonly agent: Agent
}

/**
 * @since 0.1.0
 * @category models
 */
export type RequestMiddleware = Middleware.Middleware<
  RequestInput,
  Effect.Effect<ModelRequest.ModelRequest, HarnessError.HarnessError>
>

/**
 * @since 0.1.0
 * @category models
 */
export type StepResultMiddleware = Middleware.Middleware<
  StepResultInput,
  Effect.Effect<Message.Message, HarnessError.HarnessError>
>

/**
 * @since 0.1.0
 * @category models
 */
export type ContinuationMiddleware = Middleware.Middleware<
  ContinuationInput,
  Effect.Effect<boolean, HarnessError.HarnessError>
>

/**
 * @since 0.1.0
 * @category models
 */
export type Listener = Middleware.Middleware<ListenerInput, Effect.Effect<void, HarnessError.HarnessError>>

/**
 * The chains of the agent seams. Register with `hooks.request.register(middleware)` (scoped).
 *
 * @since 0.1.0
 * @category services
 */
export class AgentHooks extends Context.Service<AgentHooks, {
  readonly request: Middleware.Chain<RequestInput, Effect.Effect<ModelRequest.ModelRequest, HarnessError.HarnessError>>
  readonly stepResult: Middleware.Chain<StepResultInput, Effect.Effect<Message.Message, HarnessError.HarnessError>>
  readonly continuation: Middleware.Chain<ContinuationInput, Effect.Effect<boolean, HarnessError.HarnessError>>
  readonly listeners: Middleware.Chain<ListenerInput, Effect.Effect<void, HarnessError.HarnessError>>
}>()("@dsh/agent/AgentHooks") {
  /**
   * Empty chains.
   *
   * @since 0.1.0
   */
  static readonly layer: Layer.Layer<AgentHooks> = Layer.sync(AgentHooks, () =>
    AgentHooks.of({
      request: Middleware.makeEffect({ seam: "request" }),
      stepResult: Middleware.makeEffect({ seam: "step result" }),
      continuation: Middleware.makeEffect({ seam: "continuation" }),
      listeners: Middleware.makeEffect({ seam: "listener" })
    }))
}

/**
 * A Layer registering middleware on the agent seams for its lifetime.
 *
 * @example
 * ```ts
 * import { Hooks } from "@dsh/agent"
 *
 * const Terse = Hooks.layer({
 *   request: [{ name: "terse", around: ({ request, context }, next) =>
 *     next({ request: { ...request, maxTokens: 256 }, context }) }]
 * })
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (middleware: {
  readonly request?: ReadonlyArray<RequestMiddleware>
  readonly stepResult?: ReadonlyArray<StepResultMiddleware>
  readonly continuation?: ReadonlyArray<ContinuationMiddleware>
  readonly listeners?: ReadonlyArray<Listener>
}): Layer.Layer<never, never, AgentHooks> =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      for (const m of middleware.request ?? []) yield* ScopedList.inOpenScope(hooks.request.register(m))
      for (const m of middleware.stepResult ?? []) yield* ScopedList.inOpenScope(hooks.stepResult.register(m))
      for (const m of middleware.continuation ?? []) yield* ScopedList.inOpenScope(hooks.continuation.register(m))
      for (const m of middleware.listeners ?? []) yield* ScopedList.inOpenScope(hooks.listeners.register(m))
    })
  )
