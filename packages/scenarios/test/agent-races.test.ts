/**
 * The agent API under the races a UI drives it into: a run given up on while queued, an abort
 * after a disposal that found steering pending, the status a disposed run's caller reads. Each
 * once hung an `abort()` for ever or told a caller too early.
 */
import { describe, expect, it } from "@effect/vitest"
import { ScriptedModel } from "@dsh/model"
import { Tool } from "@dsh/tools"
import { Effect, Exit, Fiber, Schema, Scope } from "effect"
import { create, endReasons, TestLayer, waitFor } from "./helpers.ts"

const { reply } = ScriptedModel

describe("agent races", () => {
  it.effect("a queued run given up on leaves nothing to abort: abort() on the idle agent returns, and the next message is answered", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* agent.send("A")
      yield* waitFor(agent.session, "assistant/chunk")
      // the caller of a run queued behind A stops waiting (a timeout in a UI)
      const b = yield* Effect.forkChild(agent.run("B"), { startImmediately: true })
      yield* Fiber.interrupt(b)
      yield* agent.abort("stop A")
      yield* agent.awaitIdle
      // nothing runs and nothing is queued: a no-op, not a wait for the run B would have had
      yield* agent.abort("too late")
      const c = yield* agent.run("C")
      expect(c.text).toBe("answer C")
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "aborted", reason: "stop A" }, { kind: "completed" }])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.hangAt(reply.text("never"), 1), reply.text("answer C")] }))))

  it.effect("abort() after a disposal that found steering pending returns at once", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const agent = yield* create().pipe(Scope.provide(scope))
      yield* agent.send("go")
      yield* waitFor(agent.session, "tool/call")
      yield* agent.steer("and then this")
      yield* Scope.close(scope, Exit.void)
      expect(yield* agent.status).toBe("disposed")
      yield* agent.abort()
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "disposed" }])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        tools: [Tool.make("wait", { description: "Waits", parameters: Schema.Struct({}), execute: () => Effect.as(Effect.never, "never") })],
        script: [reply.toolCalls([{ name: "wait", arguments: {} }])]
      }))
    ))

  it.effect("a run the disposal ends fails with AGENT_DISPOSED once the agent says disposed; a message no turn took says so", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const agent = yield* create().pipe(Scope.provide(scope))
      const running = yield* Effect.forkChild(Effect.flip(agent.run("go")), { startImmediately: true })
      yield* waitFor(agent.session, "assistant/chunk")
      const queued = yield* Effect.forkChild(Effect.flip(agent.run("later")), { startImmediately: true })
      const statusWhenTold = yield* Effect.forkChild(Effect.andThen(Fiber.join(running), agent.status), { startImmediately: true })
      yield* Scope.close(scope, Exit.void)
      expect(yield* Fiber.join(statusWhenTold)).toBe("disposed")
      expect((yield* Fiber.join(running)).code).toBe("AGENT_DISPOSED")
      const never = yield* Fiber.join(queued)
      expect(never.code).toBe("AGENT_DISPOSED")
      expect(never.message).toBe(`agent ${agent.id} was disposed before a turn took the message`)
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.hangAt(reply.text("never"), 1)] }))))
})
