/**
 * The guard of the whole suite: a scenario whose log breaks the event contract fails, even
 * when the violation happens in a background fiber and the scenario's own assertions pass. If
 * this test broke, every other scenario here could pass while the loop misbehaved.
 */
import { InvariantError } from "@dsh/invariants"
import { Ids } from "@dsh/llm"
import { ScriptedModel } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { create, run, TestLayer } from "./helpers.ts"

describe("the invariants guard every scenario", () => {
  it.effect("a scenario that appends a tool/result outside a step fails with the broken rule", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        Effect.gen(function*() {
          const agent = yield* create()
          yield* run(agent, "hi")
          // what a buggy loop might do: answer a call that was never made, after the turn
          yield* agent.session.append("tool/result", {
            turn: 1,
            step: 1,
            callId: Ids.callId("call_404"),
            content: [],
            isError: false
          })
        }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [ScriptedModel.reply.text("hello")] })))
      )
      expect(Exit.isFailure(exit)).toBe(true)
      const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      expect(defect).toBeInstanceOf(InvariantError)
      expect(defect).toMatchObject({ code: "INVARIANT", rule: "in-step", eventType: "tool/result" })
    }))
})
