/**
 * Where a tool call runs: the agent, the session, the turn, the step and the call — for tools
 * and execution middleware that record what they do as session events (a background job's
 * output, a permission decision) or that start something meant to outlive the call (a
 * background job belongs to its agent, and ends when the agent is disposed).
 *
 * The loop provides it around every call it executes; outside the loop (a call executed
 * directly through the registry) there is none.
 *
 * @example
 * ```ts
 * import { Tool, ToolContext } from "@dsh/tools"
 * import { Effect, Option, Schema } from "effect"
 *
 * const whoAmI = Tool.make("who_am_i", {
 *   description: "Says which session the call belongs to",
 *   parameters: Schema.Struct({}),
 *   execute: () =>
 *     Effect.map(ToolContext.current, Option.match({
 *       onNone: () => "outside an agent",
 *       onSome: (call) => `session ${call.session.id}, turn ${call.turn}`
 *     }))
 * })
 * ```
 *
 * @since 0.1.0
 */
import type { Ids } from "@dsh/llm"
import type { Session } from "@dsh/session"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"

/**
 * The call being executed.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallContext {
  readonly agentId: string
  /** The agent's session: append extension events to it (`session.append(definition, data)`). */
  readonly session: Session.Session
  readonly turn: number
  readonly step: number
  readonly callId: Ids.CallId
  /**
   * The agent's scope, closed when the agent is disposed: what a call starts to outlive the
   * call (a background job) is forked or acquired in it.
   */
  readonly agentScope: Scope.Scope
}

/**
 * The reference holding the current call (`None` outside a call the loop executes).
 *
 * @since 0.1.0
 * @category references
 */
export const CurrentCall = Context.Reference<Option.Option<CallContext>>("@dsh/tools/ToolContext/CurrentCall", {
  defaultValue: () => Option.none()
})

/**
 * The current call, if any.
 *
 * @since 0.1.0
 * @category accessors
 */
export const current: Effect.Effect<Option.Option<CallContext>> = Effect.service(CurrentCall)

/**
 * Runs an effect as (part of) a call: what the loop does around every call it executes.
 *
 * @since 0.1.0
 * @category combinators
 */
export const within = (call: CallContext) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, CurrentCall, Option.some(call))
