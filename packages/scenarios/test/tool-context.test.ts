/**
 * ToolContext: a tool (and execution middleware) sees the call it runs in — the agent, the
 * session to record events in, the turn, the step, the call id — and the agent's scope, which
 * outlives the call and closes when the agent is disposed.
 */
import { ScriptedModel } from "@dsh/model"
import { SessionEvent } from "@dsh/session"
import { Tool, ToolContext } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Option, Schema, Scope } from "effect"
import { create, register, run, TestLayer } from "./helpers.ts"

const { reply } = ScriptedModel

const Noted = SessionEvent.define("test:noted", Schema.Struct({ callId: Schema.String, turn: Schema.Int, step: Schema.Int }))

describe("ToolContext", () => {
  it.effect("a tool knows its call, records an event in its session, and ties work to its agent's scope", () =>
    Effect.gen(function*() {
      const released = yield* Deferred.make<void>()
      yield* register(Tool.make("note", {
        description: "Notes where it runs",
        parameters: Schema.Struct({}),
        execute: () =>
          Effect.gen(function*() {
            const call = Option.getOrThrow(yield* ToolContext.current)
            yield* call.session.append(Noted, { callId: call.callId, turn: call.turn, step: call.step })
            // outlives the call, ends with the agent
            yield* Effect.forkIn(Effect.ensuring(Effect.never, Deferred.succeed(released, undefined)), call.agentScope, {
              startImmediately: true
            })
            return `noted by ${call.agentId}`
          })
      }))
      const scope = yield* Scope.make()
      const agent = yield* create().pipe(Scope.provide(scope))
      yield* run(agent, "note it")
      const noted = (yield* agent.session.events).flatMap((e) => (Noted.is(e) ? [Noted.decode(e)] : []))
      expect(noted).toStrictEqual([{ callId: "call_1", turn: 1, step: 1 }])
      expect(yield* Deferred.isDone(released)).toBe(false)
      yield* Scope.close(scope, Exit.void)
      // the disposal interrupted it (a test that hangs here has a job that outlived its agent)
      yield* Deferred.await(released)
      // outside a call there is none
      expect(Option.isNone(yield* ToolContext.current)).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.toolCalls([{ name: "note", arguments: {} }]), reply.text("ok")] }))))
})
