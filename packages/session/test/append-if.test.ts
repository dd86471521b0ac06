/**
 * `appendIf`: a writer whose right to append another fiber can withdraw checks it where the
 * event is stored, so no event lands once the right is gone, however fibers interleave.
 */
import { Ids } from "@dsh/llm"
import { Session } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Scheduler } from "effect"

const fresh = () => Session.make({ id: Ids.sessionId("s"), createdAt: 0 }).session

describe("Session.appendIf", () => {
  it.effect("appends when the guard holds, and returns undefined (appending nothing) when it does not", () =>
    Effect.gen(function*() {
      const session = fresh()
      const first = yield* session.appendIf(() => true, "turn/start", { turn: 1, trigger: "send" })
      expect(first?.seq).toBe(0)
      expect(yield* session.appendIf(() => false, "turn/end", { turn: 1, reason: { kind: "completed" } })).toBeUndefined()
      expect((yield* session.events).map((e) => e.type)).toStrictEqual(["turn/start"])
    }))

  it.effect("a guard withdrawn by another fiber between any two steps stops every later append", () =>
    Effect.gen(function*() {
      for (const budget of [3, 4, 5, 8]) {
        const session = fresh()
        let open = true
        const writer = yield* Effect.forkChild(Effect.forever(Effect.asVoid(
          session.appendIf(() => open, "assistant/chunk", {
            turn: 1,
            step: 1,
            chunk: { type: "text-delta", index: 0, delta: "x" }
          })
        )).pipe(Effect.provideService(Scheduler.MaxOpsBeforeYield, budget)))
        yield* Effect.yieldNow
        yield* Effect.yieldNow
        // the closer withdraws the right and appends its last event in one step
        open = false
        const last = yield* session.append("step/end", { turn: 1, step: 1 })
        for (let i = 0; i < 20; i++) yield* Effect.yieldNow
        yield* Fiber.interrupt(writer)
        const events = yield* session.events
        expect(events.at(-1)?.seq, `budget ${budget}`).toBe(last.seq)
      }
    }))
})
