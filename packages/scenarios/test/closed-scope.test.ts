/**
 * Registrations into a closed scope (an `Effect.scoped` that has ended, kept past its end):
 * every seam refuses with SCOPE_CLOSED, naming what was registered, and registers nothing —
 * before, each one was undone at once, so the registration silently did nothing.
 */
import { AgentHooks } from "@dsh/agent"
import { ScopedList } from "@dsh/llm"
import { Model, ModelRegistry } from "@dsh/model"
import { SystemPrompt } from "@dsh/prompt"
import { FlushCheckpoint } from "@dsh/session"
import { ToolRegistry } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Scope, Stream } from "effect"

const Services = Layer.mergeAll(AgentHooks.layer, Model.layer, SystemPrompt.layer, FlushCheckpoint.layer, ToolRegistry.layer)

/** The refusal of `registration` made into a scope that has closed. */
const refused = <A, E, R>(registration: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const closed = yield* Effect.scoped(Effect.scope)
    const error = yield* Effect.flip(registration.pipe(Scope.provide(closed)))
    expect(error).toBeInstanceOf(ScopedList.ScopeClosedError)
    const refusal = error as ScopedList.ScopeClosedError
    expect(refusal.code).toBe("SCOPE_CLOSED")
    return refusal.registration
  })

const passThrough = { order: 0, around: <I, O>(input: I, next: (input: I) => O) => next(input) }

describe("a registration into a closed scope", () => {
  it.effect("every middleware seam refuses it with SCOPE_CLOSED, naming the seam and the middleware, and keeps none", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      const model = yield* Model
      const tools = yield* ToolRegistry
      const prompt = yield* SystemPrompt
      expect(yield* refused(hooks.request.register({ name: "ids", ...passThrough }))).toBe(`request middleware "ids"`)
      expect(yield* refused(hooks.stepResult.register({ name: "redact", ...passThrough }))).toBe(
        `step result middleware "redact"`
      )
      expect(yield* refused(hooks.continuation.register({ name: "more", ...passThrough }))).toBe(
        `continuation middleware "more"`
      )
      expect(yield* refused(hooks.listeners.register({ name: "ui", ...passThrough }))).toBe(`listener middleware "ui"`)
      expect(yield* refused(model.use({ name: "retry", ...passThrough }))).toBe(`model middleware "retry"`)
      expect(yield* refused(tools.use({ name: "audit", ...passThrough }))).toBe(`tool execution middleware "audit"`)
      expect(yield* refused(prompt.use({ name: "translate", ...passThrough }))).toBe(
        `prompt assembly middleware "translate"`
      )
      for (const chain of [hooks.request, hooks.stepResult, hooks.continuation, hooks.listeners]) {
        expect(chain.current()).toStrictEqual([])
      }
      expect(yield* model.middleware).toStrictEqual([])
      expect(yield* tools.middleware).toStrictEqual([])
    }).pipe(Effect.provide(Services)))

  it.effect("a prompt section, a flush hook and a model adapter are refused too; an open scope still registers them", () =>
    Effect.gen(function*() {
      const prompt = yield* SystemPrompt
      const checkpoint = yield* FlushCheckpoint
      const registry = yield* ModelRegistry
      const context = { agentId: "a", sessionId: "s", turn: 1, step: 1 }
      const section = { name: "date", content: "Today is Thursday." }
      const adapter = { name: "local", models: ["local-1"], stream: () => Stream.empty }
      expect(yield* refused(prompt.addSection(section))).toBe(`prompt section "date"`)
      expect(yield* refused(checkpoint.register({ name: "disk", flush: () => Effect.void }))).toBe(`flush hook "disk"`)
      expect(yield* refused(registry.register(adapter))).toBe(`model adapter "local"`)
      expect((yield* prompt.assemble({ tools: [], context })).system).toBe("")
      expect(yield* registry.models).toStrictEqual([])
      // the same registrations into a scope that is open
      yield* Effect.scoped(Effect.gen(function*() {
        yield* prompt.addSection(section)
        yield* registry.register(adapter)
        expect((yield* prompt.assemble({ tools: [], context })).system).toBe("Today is Thursday.")
        expect(yield* registry.models).toStrictEqual(["local-1"])
      }))
    }).pipe(Effect.provide(Services)))
})
