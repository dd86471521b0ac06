/**
 * The log as a gapless Stream: replay then live, `streamFrom`, many racing subscribers and
 * appenders, the end of the streams when the session's scope closes, snapshots.
 */
import { Content, Ids } from "@dsh/llm"
import { Session, SessionEvent, SessionStore } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Option, Schema, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { rng } from "./helpers.ts"

const fresh = () => Session.make({ id: Ids.sessionId("s"), createdAt: 0 })
const user = (text: string) => ({ content: [Content.text(text)], source: "user" })
const seqs = (events: ReadonlyArray<SessionEvent.SessionEvent>) => events.map((e) => e.seq)
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i)

describe("Session log: snapshots", () => {
  it.effect("append assigns seq from 0 and the Clock's time; events, eventsFrom and seq read the log", () =>
    Effect.gen(function*() {
      const { session } = fresh()
      expect(yield* session.seq).toBe(0)
      expect(yield* session.events).toStrictEqual([])
      const a = yield* session.append("turn/start", { turn: 1, trigger: "send" })
      yield* TestClock.adjust("5 millis")
      const b = yield* session.append("user/message", user("hi"))
      const c = yield* session.append("turn/end", { turn: 1, reason: { kind: "completed" } })
      expect([a.seq, b.seq, c.seq]).toStrictEqual([0, 1, 2])
      expect([a.time, b.time]).toStrictEqual([0, 5])
      expect(a).toStrictEqual({ type: "turn/start", seq: 0, time: 0, data: { turn: 1, trigger: "send" } })
      expect(yield* session.seq).toBe(3)
      const events = yield* session.events
      // the logged events are the very objects append returned
      expect(events[0]).toBe(a)
      expect(events[1]).toBe(b)
      expect(events[2]).toBe(c)
      expect(seqs(yield* session.eventsFrom(1))).toStrictEqual([1, 2])
      expect(yield* session.eventsFrom(3)).toStrictEqual([])
      expect(yield* session.eventsFrom(99)).toStrictEqual([])
    }))

  it.effect("a snapshot is a copy: later appends and changes to it do not show through", () =>
    Effect.gen(function*() {
      const { session } = fresh()
      yield* session.append("user/message", user("a"))
      const snapshot = yield* session.events
      yield* session.append("user/message", user("b"))
      expect(snapshot).toHaveLength(1)
      ;(snapshot as Array<SessionEvent.SessionEvent>).length = 0
      expect(yield* session.seq).toBe(2)
      expect(seqs(yield* session.events)).toStrictEqual([0, 1])
    }))
})

describe("Session log: stream", () => {
  it.effect("a late subscriber gets the past events, then the future ones, in order", () =>
    Effect.gen(function*() {
      const { session } = fresh()
      yield* session.append("user/message", user("a"))
      yield* session.append("user/message", user("b"))
      const reader = yield* session.stream.pipe(Stream.take(4), Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      yield* session.append("user/message", user("c"))
      yield* Effect.yieldNow
      yield* session.append("user/message", user("d"))
      const got = yield* Fiber.join(reader)
      expect(got).toStrictEqual(yield* session.events)
      expect(got.map((e) => (e.type === "user/message" ? e.data.content[0] : undefined))).toStrictEqual(
        ["a", "b", "c", "d"].map(Content.text)
      )
    }))

  it.effect("the same stream value can be run many times, each run from the start", () =>
    Effect.gen(function*() {
      const { close, session } = fresh()
      yield* session.append("user/message", user("a"))
      const first = yield* session.stream.pipe(Stream.runCollect, Effect.forkChild)
      const second = yield* session.stream.pipe(Stream.runCollect, Effect.forkChild)
      yield* session.append("user/message", user("b"))
      close()
      expect(seqs(yield* Fiber.join(first))).toStrictEqual([0, 1])
      expect(seqs(yield* Fiber.join(second))).toStrictEqual([0, 1])
    }))

  it.effect("streamFrom(seq) and eventsFrom(seq) start at seq, also at or beyond the end; a negative seq or NaN counts as 0", () =>
    Effect.gen(function*() {
      const { close, session } = fresh()
      for (const t of ["a", "b", "c", "d", "e"]) yield* session.append("user/message", user(t))
      const from2 = yield* session.streamFrom(2).pipe(Stream.runCollect, Effect.forkChild)
      const atEnd = yield* session.streamFrom(5).pipe(Stream.runCollect, Effect.forkChild)
      const beyond = yield* session.streamFrom(6).pipe(Stream.runCollect, Effect.forkChild)
      const negative = yield* session.streamFrom(-3).pipe(Stream.runCollect, Effect.forkChild)
      const notANumber = yield* session.streamFrom(Number.NaN).pipe(Stream.runCollect, Effect.forkChild)
      // eventsFrom reads positions the same way (not from the end, as Array.slice would)
      expect(seqs(yield* session.eventsFrom(-2))).toStrictEqual(range(0, 5))
      expect(seqs(yield* session.eventsFrom(Number.NaN))).toStrictEqual(range(0, 5))
      expect(seqs(yield* session.eventsFrom(3))).toStrictEqual([3, 4])
      yield* Effect.yieldNow
      yield* session.append("user/message", user("f"))
      yield* session.append("user/message", user("g"))
      close()
      expect(seqs(yield* Fiber.join(from2))).toStrictEqual([2, 3, 4, 5, 6])
      expect(seqs(yield* Fiber.join(atEnd))).toStrictEqual([5, 6])
      expect(seqs(yield* Fiber.join(beyond))).toStrictEqual([6])
      expect(seqs(yield* Fiber.join(negative))).toStrictEqual(range(0, 7))
      expect(seqs(yield* Fiber.join(notANumber))).toStrictEqual(range(0, 7))
    }))

  it.effect("a reconnecting reader resumes with streamFrom(last seen + 1) without gap or duplicate", () =>
    Effect.gen(function*() {
      const { close, session } = fresh()
      for (let i = 0; i < 3; i++) yield* session.append("user/message", user(`${i}`))
      const before = yield* session.stream.pipe(Stream.take(2), Stream.runCollect)
      for (let i = 3; i < 6; i++) yield* session.append("user/message", user(`${i}`))
      close()
      const after = yield* session.streamFrom(before.at(-1)!.seq + 1).pipe(Stream.runCollect)
      expect(seqs([...before, ...after])).toStrictEqual(range(0, 6))
    }))

  it.effect("an interrupted reader leaves the log working for the others", () =>
    Effect.gen(function*() {
      const { close, session } = fresh()
      const parked = yield* session.stream.pipe(Stream.runCollect, Effect.forkChild)
      const other = yield* session.stream.pipe(Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      yield* Fiber.interrupt(parked)
      yield* session.append("user/message", user("a"))
      close()
      expect(seqs(yield* Fiber.join(other))).toStrictEqual([0])
    }))

  it.effect(
    "50 subscribers started at random moments and 4 racing appenders: every subscriber sees every seq once, in order",
    () =>
      Effect.gen(function*() {
        const random = rng(20240611)
        const appenders = 4
        const perAppender = 1500
        const total = appenders * perAppender
        const store = yield* SessionStore
        const scope = yield* Scope.make()
        const session = yield* store.create({ id: "race" }).pipe(Scope.provide(scope))
        const yields = (max: number) =>
          Effect.suspend(() => Effect.forEach(range(0, Math.floor(random() * max)), () => Effect.yieldNow, { discard: true }))

        // a subscriber: from the start, or from the seq it sees when it starts; some read slowly
        // what each subscriber has received so far (read live, before the close)
        const received: Array<Array<SessionEvent.SessionEvent>> = range(0, 50).map(() => [])
        const froms: Array<number> = []
        const subscriber = (i: number) =>
          Effect.gen(function*() {
            const from = i % 3 === 0 ? yield* session.seq : 0
            froms[i] = from
            const stream = i % 3 === 0 ? session.streamFrom(from) : session.stream
            yield* stream.pipe(
              Stream.runForEach((event) =>
                Effect.andThen(Effect.sync(() => received[i]!.push(event)), i % 5 === 0 ? Effect.yieldNow : Effect.void)
              )
            )
            return { from, got: received[i]! }
          })
        // forked into the test's scope: a child of the spawner would be interrupted when it ends
        const spawner = Effect.forEach(range(0, 50), (i) =>
          Effect.flatMap(yields(40), () => Effect.forkScoped(subscriber(i))))
        const appender = (a: number) =>
          Effect.forEach(range(0, perAppender), (i) =>
            Effect.flatMap(
              random() < 0.3 ? yields(3) : Effect.void,
              () => Effect.map(session.append("user/message", user(`${a}/${i}`)), (e) => e.seq)
            ))

        const spawned = yield* Effect.forkChild(spawner)
        const appended = yield* Effect.all(range(0, appenders).map(appender), { concurrency: "unbounded" })
        const subscribers = yield* Fiber.join(spawned)
        // every subscriber catches up while the session is still open: no wake-up was lost
        let caughtUp = false
        for (let i = 0; i < 10_000 && !caughtUp; i++) {
          caughtUp = received.every((got, i) => froms[i] !== undefined && got.length === total - froms[i])
          if (!caughtUp) yield* Effect.yieldNow
        }
        expect(caughtUp).toBe(true)
        yield* Scope.close(scope, Exit.void)

        // every append got its own seq, and each appender's seqs increase
        expect(appended.flat().sort((x, y) => x - y)).toStrictEqual(range(0, total))
        for (const mine of appended) expect(mine).toStrictEqual([...mine].sort((x, y) => x - y))

        const events = yield* session.events
        expect(seqs(events)).toStrictEqual(range(0, total))
        const results = yield* Fiber.joinAll(subscribers)
        expect(results).toHaveLength(50)
        // some subscribers did start late, while appends were going on
        expect(results.some((r) => r.from > 0 && r.from < total / 2)).toBe(true)
        for (const { from, got } of results) {
          expect(got.length).toBe(total - from)
          expect(seqs(got)).toStrictEqual(range(from, total))
          // the very logged objects, not copies
          expect(got.every((e) => e === events[e.seq])).toBe(true)
        }
      }).pipe(Effect.provide(SessionStore.layer))
  )
})

describe("Session log: close", () => {
  it.effect("closing the session's scope ends its streams after they drained what was logged", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const scope = yield* Scope.make()
      const session = yield* store.create({ id: "c" }).pipe(Scope.provide(scope))
      const early = yield* session.stream.pipe(Stream.runCollect, Effect.forkChild)
      const fromOne = yield* session.streamFrom(1).pipe(Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      // appended and closed without yielding: the parked readers have read nothing of these yet
      yield* session.append("user/message", user("a"))
      yield* session.append("user/message", user("b"))
      yield* session.append("user/message", user("c"))
      expect(yield* session.closed).toBe(false)
      yield* Scope.close(scope, Exit.void)
      expect(yield* session.closed).toBe(true)
      expect(seqs(yield* Fiber.join(early))).toStrictEqual([0, 1, 2])
      expect(seqs(yield* Fiber.join(fromOne))).toStrictEqual([1, 2])
      // a subscriber after the close replays everything and ends
      expect(seqs(yield* Stream.runCollect(session.stream))).toStrictEqual([0, 1, 2])
      expect(yield* Stream.runCollect(session.streamFrom(3))).toStrictEqual([])
    }).pipe(Effect.provide(SessionStore.layer)))

  it.effect("the streams of a session closed before any append end empty", () =>
    Effect.gen(function*() {
      const { close, session } = fresh()
      const parked = yield* session.stream.pipe(Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      close()
      expect(yield* Fiber.join(parked)).toStrictEqual([])
      expect(yield* Stream.runCollect(session.stream)).toStrictEqual([])
      expect(yield* Stream.runCollect(session.streamFrom(2))).toStrictEqual([])
    }))

  it.effect("appending after the close logs nothing: a core event dies, an extension event fails, both with SESSION_CLOSED", () =>
    Effect.gen(function*() {
      const { close, session } = fresh()
      yield* session.append("user/message", user("a"))
      close()
      const exit = yield* Effect.exit(session.append("user/message", user("b")))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        expect(Cause.hasDies(exit.cause)).toBe(true)
        expect(Cause.squash(exit.cause)).toMatchObject({ _tag: "SessionClosedError", code: "SESSION_CLOSED", sessionId: "s", eventType: "user/message" })
        expect(String(Cause.squash(exit.cause))).toMatch(/session s is closed; an event of type user\/message/)
      }
      // an application's own event: a typed failure it can handle
      const Note = SessionEvent.define("app:note", Schema.Struct({ text: Schema.String }))
      const refused = yield* Effect.flip(session.append(Note, { text: "late" }))
      expect(refused).toMatchObject({ _tag: "SessionClosedError", code: "SESSION_CLOSED", eventType: "app:note" })
      expect(yield* session.seq).toBe(1)
      expect(Option.isNone(Option.fromNullishOr((yield* session.events)[1]))).toBe(true)
    }))
})
