/**
 * `appendIf`: a writer whose right to append another fiber can withdraw checks it where the
 * event is stored, so no event lands once the right is gone, however fibers interleave; and
 * `appendBurst`, the same appends in one Effect. And `continues`, the check a store resuming a
 * session makes before it takes over the loaded log's position.
 */
import { Ids } from "@dsh/llm"
import { Session, type SessionEvent } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Fiber, Scheduler, Stream } from "effect"

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

describe("Session.appendBurst", () => {
  const chunk = (delta: string) => ({ turn: 1, step: 1, chunk: { type: "text-delta" as const, index: 0, delta } })

  it.effect("appends a burst as the same events, in order, each frozen, each under its own guard", () =>
    Effect.gen(function*() {
      const session = fresh()
      yield* session.append("turn/start", { turn: 1, trigger: "send" })
      let open = true
      const appended = yield* session.appendBurst((appendIf) => {
        const events = [appendIf(() => open, "assistant/chunk", chunk("a")), appendIf(() => open, "assistant/chunk", chunk("b"))]
        open = false
        events.push(appendIf(() => open, "assistant/chunk", chunk("c")))
        return events
      })
      expect(appended.map((e) => e?.seq)).toStrictEqual([1, 2, undefined])
      const events = yield* session.events
      expect(events.map((e) => e.type)).toStrictEqual(["turn/start", "assistant/chunk", "assistant/chunk"])
      expect(events.slice(1).map((e) => (e.data as { chunk: { delta: string } }).chunk.delta)).toStrictEqual(["a", "b"])
      expect(events.every((e) => Object.isFrozen(e) && Object.isFrozen(e.data))).toBe(true)
      // a reader sees the burst like appends one at a time
      const streamed = yield* Stream.runCollect(Stream.take(session.stream, 3))
      expect(streamed.map((e) => e.seq)).toStrictEqual([0, 1, 2])
    }))

  it.effect("dies on a closed session, like append", () =>
    Effect.gen(function*() {
      const owned = Session.make({ id: Ids.sessionId("s"), createdAt: 0 })
      owned.close()
      const exit = yield* Effect.exit(owned.session.appendBurst((appendIf) => appendIf(() => true, "assistant/chunk", chunk("a"))))
      expect(exit._tag === "Failure" && Cause.hasDies(exit.cause)).toBe(true)
      expect(yield* owned.session.events).toStrictEqual([])
    }))
})

describe("Session.continues", () => {
  const loaded = [
    { type: "turn/start", seq: 0, time: 1, data: { turn: 1, trigger: "send" } },
    { type: "turn/end", seq: 1, time: 2, data: { turn: 1, reason: { kind: "completed" } } }
  ] as unknown as ReadonlyArray<SessionEvent.SessionEvent>
  const seeded = (seed: ReadonlyArray<SessionEvent.SessionEvent>) => Session.make({ id: Ids.sessionId("s"), createdAt: 0, seed }).session

  it.effect("a session seeded with the very events that were loaded continues them; equal copies or another count do not", () =>
    Effect.gen(function*() {
      const events = loaded.map((event) => ({ ...event }))
      expect(yield* Session.continues(seeded(events), events)).toBe(true)
      // the same content, other objects: another session that happens to hold what the file held
      expect(yield* Session.continues(seeded(loaded.map((event) => ({ ...event }))), events)).toBe(false)
      expect(yield* Session.continues(seeded(events.slice(0, 1)), events)).toBe(false)
      expect(yield* Session.continues(fresh(), events)).toBe(false)
      // an empty log is continued by any session seeded with nothing
      expect(yield* Session.continues(fresh(), [])).toBe(true)
      expect(yield* Session.continues(seeded(events), [])).toBe(false)
    }))
})
