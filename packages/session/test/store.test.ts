/**
 * The session store: create (with or without an id, fresh or seeded), get, list, the stream of
 * sessions, SESSION_EXISTS, and the sessions' lifetime in their creating scope.
 */
import { Content, History, Ids } from "@dsh/llm"
import { type CreateOptions, Derivation, Freeze, type Session, SessionErrors, type SessionEvent, SessionStore } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Fiber, Layer, Option, Scope, Stream } from "effect"
import { c1, draft, toEvents } from "./helpers.ts"

const user = (text: string) => ({ content: [Content.text(text)], source: "user" })
const ids = (sessions: ReadonlyArray<Session.Session>) => sessions.map((s) => s.id)

/** A scope the test closes itself, and an effect run in it. */
const inScope = Effect.map(Scope.make(), (scope) => ({
  scope,
  run: <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Scope.provide(scope)(effect),
  close: Scope.close(scope, Exit.void)
}))

describe("SessionStore", () => {
  it.effect("creates a session with a given id, or a random UUID", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const named = yield* store.create({ id: "mine" })
      const anonymous = yield* store.create()
      const another = yield* store.create({})
      expect(named.id).toBe("mine")
      expect(anonymous.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      expect(another.id).not.toBe(anonymous.id)
      expect(named.seeded).toBe(0)
      expect(yield* named.seq).toBe(0)
      expect(yield* named.closed).toBe(false)
    }).pipe(Effect.provide(SessionStore.layer)))

  it.effect("options out of their range fail with INVALID_SESSION naming each, and create nothing", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const refused = (options: unknown) => Effect.flip(store.create(options as CreateOptions))
      const empty = yield* refused({ id: "" })
      expect(empty).toBeInstanceOf(SessionErrors.InvalidSessionError)
      expect(empty.code).toBe("INVALID_SESSION")
      expect(empty.message).toBe("a session was not created: id must be a non-empty string, got an empty one")
      expect((yield* refused({ id: 42 })).message).toContain("id must be a non-empty string, got 42")
      // white space alone is an unset variable, not a chosen name
      expect((yield* refused({ id: " \t " })).message).toBe(`a session was not created: id must not be blank, got " \\t "`)
      for (const createdAt of [Number.NaN, 1.5, Number.POSITIVE_INFINITY, "1700000000000"]) {
        expect((yield* refused({ createdAt })).message).toContain("createdAt must be an integer of epoch milliseconds")
      }
      // every problem is named, the seed's too
      const many = yield* refused({ id: "", createdAt: 0.5, seed: [{ type: "turn/start", seq: 1 }] })
      expect(many.message).toContain("id must be")
      expect(many.message).toContain("createdAt must be")
      expect(many.message).toContain("seed event 0 has seq 1; a seed log must count from 0 with no gap")
      expect((yield* refused({ seed: "events" })).message).toContain("a seed log must be an array of events")
      expect((yield* refused(null)).message).toContain("its options must be an object")
      expect(yield* store.all).toStrictEqual([])
      // in range: created
      expect((yield* store.create({ id: "ok", createdAt: 1_700_000_000_000 })).createdAt).toBe(1_700_000_000_000)
    }).pipe(Effect.provide(SessionStore.layer)))

  it.effect("a seed event its type's Schema refuses fails with INVALID_SESSION naming the event and the path", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const refused = (seed: ReadonlyArray<unknown>) =>
        Effect.flip(store.create({ seed: seed as ReadonlyArray<SessionEvent.SessionEvent> }))
      const start = { type: "turn/start", seq: 0, time: 0, data: { turn: 1, trigger: "send" } }
      const message = { type: "user/message", seq: 1, time: 0, data: user("hi") }
      // a plausible hand-written mistake: a reason as a word where the contract has an object
      const wrongReason = yield* refused([start, message, { type: "turn/end", seq: 2, time: 0, data: { turn: 1, reason: "completed" } }])
      expect(wrongReason.code).toBe("INVALID_SESSION")
      expect(wrongReason.message).toContain("seed event 2 is not a session event")
      expect(wrongReason.message).toContain(`["data"]["reason"]`)
      const unknownType = yield* refused([{ type: "turn/begin", seq: 0, time: 0, data: {} }])
      expect(unknownType.message).toContain(`seed event 0 is not a session event: its type is "turn/begin": neither a core type nor an extension type`)
      const badTime = yield* refused([{ ...start, time: -1 }])
      expect(badTime.message).toContain(`["time"]`)
      const notJson = yield* refused([{ type: "app:note", seq: 0, time: 0, data: { at: new Date(0) } }])
      expect(notJson.message).toContain("seed event 0 is not a session event")
      expect(yield* store.all).toStrictEqual([])
      // well-formed core and extension events are taken as they are
      const seeded = yield* store.create({
        seed: [start, message, { type: "app:note", seq: 2, time: 5, data: { text: "kept" } }] as ReadonlyArray<SessionEvent.SessionEvent>
      })
      expect(seeded.seeded).toBe(3)
      expect(yield* seeded.seq).toBe(3)
    }).pipe(Effect.provide(SessionStore.layer)))

  it.effect("get finds an open session; list holds the open ones in creation order", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const a = yield* store.create({ id: "a" })
      const b = yield* store.create({ id: "b" })
      const c = yield* store.create({ id: "c" })
      expect(Option.getOrThrow(yield* store.get("b"))).toBe(b)
      expect(yield* store.get("nope")).toStrictEqual(Option.none())
      const list = yield* store.list
      expect(list).toStrictEqual([a, b, c])
      expect(list[0]).toBe(a)
    }).pipe(Effect.provide(SessionStore.layer)))

  it.effect("a duplicate id fails with SessionExistsError (SESSION_EXISTS) and leaves the first session alone", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const first = yield* store.create({ id: "dup" })
      yield* first.append("user/message", user("kept"))
      const error = yield* Effect.flip(store.create({ id: "dup" }))
      if (!(error instanceof SessionErrors.SessionExistsError)) throw new Error(`expected SessionExistsError, got ${error._tag}`)
      expect(error._tag).toBe("SessionExistsError")
      expect(error.code).toBe("SESSION_EXISTS")
      expect(error.sessionId).toBe("dup")
      expect(error.message).toMatch(/"dup" already exists/)
      expect(Option.getOrThrow(yield* store.get("dup"))).toBe(first)
      expect(ids(yield* store.list)).toStrictEqual(["dup"])
      // also with a seed
      const seeded = yield* Effect.flip(store.create({ id: "dup", seed: yield* first.events }))
      expect(seeded.code).toBe("SESSION_EXISTS")
      expect(yield* first.seq).toBe(1)
    }).pipe(Effect.provide(SessionStore.layer)))

  it.effect("closing the creating scope closes the session: it leaves the store, its streams end, appends die", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const kept = yield* store.create({ id: "kept" })
      const inner = yield* inScope
      const session = yield* inner.run(store.create({ id: "gone" }))
      yield* session.append("user/message", user("a"))
      const reader = yield* session.stream.pipe(Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      yield* session.append("user/message", user("b"))
      yield* inner.close

      expect(yield* store.get("gone")).toStrictEqual(Option.none())
      expect(yield* store.list).toStrictEqual([kept])
      expect(yield* session.closed).toBe(true)
      expect((yield* Fiber.join(reader)).map((e) => e.seq)).toStrictEqual([0, 1])
      const exit = yield* Effect.exit(session.append("user/message", user("c")))
      expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
      // the closed session is still readable
      expect(yield* session.seq).toBe(2)
      expect(yield* session.messages).toHaveLength(2)
      // the other session is untouched, and the id can be used again
      expect(yield* kept.closed).toBe(false)
      const again = yield* store.create({ id: "gone" })
      expect(again).not.toBe(session)
      expect(yield* again.seq).toBe(0)
    }).pipe(Effect.provide(SessionStore.layer)))

  it.effect("sessions replays the sessions created so far, then every later one; all lists them", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      yield* store.create({ id: "1" })
      const inner = yield* inScope
      yield* inner.run(store.create({ id: "2" }))
      yield* inner.close
      yield* store.create({ id: "3" })
      const early = yield* store.sessions.pipe(Stream.take(5), Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      yield* store.create({ id: "4" })
      yield* Effect.yieldNow
      yield* store.create({ id: "5" })
      // a closed session is replayed too (its log is complete, for persistence and the checker)
      expect(ids(yield* Fiber.join(early))).toStrictEqual(["1", "2", "3", "4", "5"])
      const late = yield* store.sessions.pipe(Stream.take(5), Stream.runCollect)
      expect(ids(late)).toStrictEqual(["1", "2", "3", "4", "5"])
      // all: every session created so far, open or closed; list: the open ones
      expect(ids(yield* store.all)).toStrictEqual(["1", "2", "3", "4", "5"])
      expect(ids(yield* store.list)).toStrictEqual(["1", "3", "4", "5"])
      // a failed create is not streamed
      yield* Effect.flip(store.create({ id: "5" }))
      const next = yield* store.sessions.pipe(Stream.take(6), Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      yield* store.create({ id: "6" })
      expect(ids(yield* Fiber.join(next))).toStrictEqual(["1", "2", "3", "4", "5", "6"])
    }).pipe(Effect.provide(SessionStore.layer)))

  it.effect("a reader of sessions sees each session, seeded ones included, from its first event", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      // what the invariants checker and persistence do: follow every session's stream
      const watcher = yield* store.sessions.pipe(
        Stream.take(2),
        Stream.mapEffect((s) => s.stream.pipe(Stream.take(3), Stream.runCollect, Effect.map((events) => [s.id, events] as const)), {
          concurrency: "unbounded"
        }),
        Stream.runCollect,
        Effect.forkChild
      )
      const session = yield* store.create({ id: "w" })
      yield* session.append("user/message", user("first"))
      yield* session.append("user/message", user("second"))
      const fork = yield* store.create({ id: "fork", seed: yield* session.events })
      yield* session.append("user/message", user("third"))
      yield* fork.append("user/message", user("fork's third"))
      const seen = new Map(yield* Fiber.join(watcher))
      expect([...seen.keys()].sort()).toStrictEqual(["fork", "w"])
      expect(seen.get(Ids.sessionId("w"))!.map((e) => e.seq)).toStrictEqual([0, 1, 2])
      expect(seen.get(Ids.sessionId("fork"))).toStrictEqual(yield* fork.events)
    }).pipe(Effect.provide(SessionStore.layer)))

  it.effect("closing the store's scope ends the sessions stream", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const store = Context.get(yield* Layer.buildWithScope(SessionStore.layer, scope), SessionStore)
      yield* store.create({ id: "x" })
      const reader = yield* store.sessions.pipe(Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      yield* Scope.close(scope, Exit.void)
      expect(ids(yield* Fiber.join(reader))).toStrictEqual(["x"])
    }))
})

describe("SessionStore: seeded sessions (replay and fork)", () => {
  const turns = [
    draft("turn/start", { turn: 1, trigger: "send" }),
    draft("user/message", user("q1")),
    draft("step/start", { turn: 1, step: 1 }),
    draft("assistant/message", { turn: 1, step: 1, content: [Content.toolCall(c1, "read", "{}")] }),
    draft("tool/result", { turn: 1, step: 1, callId: c1, content: [Content.text("r")], isError: false }),
    draft("step/end", { turn: 1, step: 1 }),
    draft("turn/end", { turn: 1, reason: { kind: "completed" } }),
    draft("turn/start", { turn: 2, trigger: "send" }),
    draft("user/message", user("q2")),
    draft("turn/end", { turn: 2, reason: { kind: "aborted", reason: "user" } })
  ]

  it.effect("continues seq, the turn history and the derived history of its seed", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const seed = toEvents(turns)
      const session = yield* store.create({ id: "resumed", seed })
      expect(session.seeded).toBe(10)
      expect(yield* session.seq).toBe(10)
      // the seed's events are kept as they were: seq, time and data
      expect(yield* session.events).toStrictEqual(toEvents(turns))
      expect((yield* session.events).map((e) => e.time)).toStrictEqual(seed.map((_, i) => 1000 + i))
      expect(yield* session.messages).toStrictEqual(Derivation.derive(seed))
      // the last turn is found in the seed, so the next turn continues its numbering
      const lastTurn = (yield* session.events).findLast((e): e is SessionEvent.CoreEvent<"turn/start"> =>
        e.type === "turn/start"
      )
      const next = yield* session.append("turn/start", { turn: lastTurn!.data.turn + 1, trigger: "send" })
      expect(next.seq).toBe(10)
      expect(next.data.turn).toBe(3)
      // the stream replays the seed first
      expect((yield* session.stream.pipe(Stream.take(11), Stream.runCollect)).map((e) => e.seq)).toStrictEqual(
        Array.from({ length: 11 }, (_, i) => i)
      )
    }).pipe(Effect.provide(SessionStore.layer)))

  it.effect("a fork is independent of its source, and its seed events are frozen", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const source = yield* store.create({ id: "source" })
      yield* source.append("user/message", user("shared"))
      const fork = yield* store.create({ id: "fork", seed: yield* source.events })
      yield* source.append("user/message", user("source only"))
      yield* fork.append("user/message", user("fork only"))
      const firstBlocks = (history: History.History) => History.toArray(history).map((m) => m.content[0])
      expect(firstBlocks(yield* source.messages)).toStrictEqual(["shared", "source only"].map(Content.text))
      expect(firstBlocks(yield* fork.messages)).toStrictEqual(["shared", "fork only"].map(Content.text))
      // a seed decoded from JSON arrives unfrozen and is frozen by the create
      const decoded = JSON.parse(JSON.stringify(yield* source.events)) as ReadonlyArray<SessionEvent.SessionEvent>
      const replay = yield* store.create({ seed: decoded })
      for (const event of yield* replay.events) expect(Freeze.isDeeplyFrozen(event)).toBe(true)
    }).pipe(Effect.provide(SessionStore.layer)))

  it.effect("a seed that is no log fails with INVALID_SESSION naming what is wrong, and no session is created", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [[null], "seed event 0 is null, not an event"],
        [{ length: 1 }, "a seed log must be an array of events"],
        [[{ ...toEvents(turns)[0]!, seq: "0" }], 'seed event 0 has seq "0"']
      ]
      for (const [seed, says] of cases) {
        const error = yield* Effect.flip(store.create({ id: "bad", seed: seed as ReadonlyArray<SessionEvent.SessionEvent> }))
        expect(error).toBeInstanceOf(SessionErrors.InvalidSessionError)
        expect(error.message).toContain(says)
      }
      expect(yield* store.list).toStrictEqual([])
    }).pipe(Effect.provide(SessionStore.layer)))

  for (
    const [what, seqs] of [
      ["does not count from 0", [1, 2, 3]],
      ["has a gap", [0, 1, 3]],
      ["repeats a seq", [0, 1, 1]]
    ] as const
  ) {
    it.effect(`a seed whose seq ${what} is rejected, and no session is created`, () =>
      Effect.gen(function*() {
        const store = yield* SessionStore
        const seed = toEvents(turns.slice(0, 3)).map((e, i) => ({ ...e, seq: seqs[i]! }))
        const error = yield* Effect.flip(store.create({ id: "bad", seed }))
        expect(error).toBeInstanceOf(SessionErrors.InvalidSessionError)
        expect(error.message).toMatch(/must count from 0 with no gap/)
        expect(yield* store.get("bad")).toStrictEqual(Option.none())
        expect(yield* store.list).toStrictEqual([])
        // the id is still free
        expect((yield* store.create({ id: "bad" })).id).toBe(Ids.sessionId("bad"))
      }).pipe(Effect.provide(SessionStore.layer)))
  }
})
