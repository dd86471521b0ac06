/**
 * The contract of a persistent session store, as one suite that runs against any store given
 * as a Layer (`storeContract(store)`): what `JsonlSessions` and `PgSessions` both promise.
 *
 * - Write-behind and durable at the flush checkpoint: appends are not persisted until a flush;
 *   when a flush returns, an independent reader (another layer: another process) loads every
 *   event logged before it, each exactly once, in `seq` order, equal to what was appended.
 * - Closing: a session is flushed when it closes, and every session when the layer closes.
 * - Resume continues `seq` in the same log, keeps the creation time, closes a turn the log
 *   left open before it hands the session back; a fork is a fresh log.
 * - One writer per session: a second layer cannot resume a session another layer writes
 *   (`SESSION_LOCKED`), nor write it as a new session (`PERSISTENCE`), and the log stays whole.
 * - Typed failures: resuming an open session is `SESSION_EXISTS`, a session with no log is
 *   `PERSISTENCE`, an event the Schema cannot encode fails its flush (`PERSISTENCE`, naming its
 *   seq) after the events before it, without keeping other sessions from being persisted.
 * - `list`: every session, sorted by id, with its event count, creation time and last activity.
 *
 * What only one store has (JSONL's file format, torn lines and lock files; PostgreSQL's schema,
 * migrations and conflicts) is tested beside it.
 */
import { Content, History, Ids } from "@dsh/llm"
import {
  Derivation,
  FlushCheckpoint,
  type Session,
  type SessionErrors,
  SessionEvent,
  SessionStore
} from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Schema, Scope } from "effect"
import { TestClock } from "effect/testing"

// ---------------------------------------------------------------------------------------------
// what the suite needs of a store

/** A persisted session, as any store loads it. */
export interface Loaded {
  readonly createdAt: number
  readonly events: ReadonlyArray<SessionEvent.SessionEvent>
}

/** A persisted session, as any store lists it. */
export interface Entry {
  readonly id: string
  readonly events: number
  readonly createdAt: number
  readonly lastActivity: number
}

/** The persistence service of the store under test, as the suite sees it. */
export class Persisted extends Context.Service<Persisted, {
  readonly resume: (id: string) => Effect.Effect<
    { readonly session: Session.Session; readonly repairs: ReadonlyArray<SessionEvent.Repair> },
    | SessionErrors.PersistenceError
    | SessionErrors.CorruptLogError
    | SessionErrors.SessionExistsError
    | SessionErrors.SessionLockedError,
    Scope.Scope
  >
  readonly load: (id: string) => Effect.Effect<Loaded, SessionErrors.PersistenceError | SessionErrors.CorruptLogError>
  readonly list: Effect.Effect<ReadonlyArray<Entry>, SessionErrors.PersistenceError | SessionErrors.CorruptLogError>
}>()("test/contract/Persisted") {}

/** What the layer of a store provides. */
export type Services = SessionStore | FlushCheckpoint | Persisted

/** A store under test. */
export interface Store {
  readonly name: string
  /** A fresh, empty storage for one test, removed when the scope closes. */
  readonly storage: Effect.Effect<Storage, unknown, Scope.Scope>
}

/** One test's storage. */
export interface Storage {
  /**
   * One writer over the storage, as one process would build it: every build is independent
   * (its own store, checkpoint, files or connections, locks).
   */
  readonly layer: Layer.Layer<Services>
  /** How the store's messages name the log of a session (a file, a quoted id). */
  readonly names: (id: string) => string
}

// ---------------------------------------------------------------------------------------------
// helpers

/** Appends a user message. */
export const text = (session: Session.Session, body: string) =>
  session.append("user/message", { content: [Content.text(body)], source: "user" })

/** Appends `count` user messages, each naming its seq. */
export const appendMany = (session: Session.Session, count: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < count; i++) yield* text(session, `m${yield* session.seq}`)
  })

/** Flushes the session through the store's checkpoint. */
export const flush = (session: Session.Session) =>
  Effect.gen(function*() {
    yield* (yield* FlushCheckpoint).flush(session)
  })

/** Creates a session in the store. */
export const create = (id: string) =>
  Effect.gen(function*() {
    return yield* (yield* SessionStore).create({ id })
  })

const resume = (id: string) =>
  Effect.gen(function*() {
    return yield* (yield* Persisted).resume(id)
  })

const load = (id: string) =>
  Effect.gen(function*() {
    return yield* (yield* Persisted).load(id)
  })

const Note = SessionEvent.define("test:contract-note", Schema.Struct({ text: Schema.String, tags: Schema.Array(Schema.String) }))

const c1 = Ids.callId("c1")
const c2 = Ids.callId("c2")

// what a process that died while running tool c2 leaves: c1 answered, c2 announced only
const crashedDuringATool = (session: Session.Session) =>
  Effect.gen(function*() {
    yield* session.append("turn/start", { turn: 1, trigger: "send" })
    yield* text(session, "list and count the files")
    yield* session.append("step/start", { turn: 1, step: 1 })
    yield* session.append("model/request", { turn: 1, step: 1, model: "m" })
    yield* session.append("assistant/message", {
      turn: 1,
      step: 1,
      content: [Content.toolCall(c1, "ls", "{}"), Content.toolCall(c2, "wc", "{}")]
    })
    yield* session.append("tool/call", { turn: 1, step: 1, callId: c1, name: "ls", arguments: "{}" })
    yield* session.append("tool/result", { turn: 1, step: 1, callId: c1, content: [Content.text("a b")], isError: false })
    yield* session.append("tool/call", { turn: 1, step: 1, callId: c2, name: "wc", arguments: "{}" })
  })

/** Registers the contract's tests for `store`. */
export const storeContract = (store: Store): void => {
  /** Runs `f` with a fresh storage, removed afterwards. */
  const withStorage = <A, E, R>(f: (storage: Storage) => Effect.Effect<A, E, R>) =>
    Effect.scoped(Effect.flatMap(Effect.orDie(store.storage), f))

  /**
   * Runs a program with a layer over the storage; the layer's scope closes when it ends. Each
   * is built fresh, sharing nothing with a layer around it (layers are memoized otherwise).
   */
  const persisted = <A, E>(storage: Storage, program: Effect.Effect<A, E, Services | Scope.Scope>) =>
    program.pipe(Effect.scoped, Effect.provide(Layer.fresh(storage.layer)))

  /** Builds a layer in a scope of its own, so a test can hold two writers over one storage. */
  const openLayer = (storage: Storage) =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const services = yield* Layer.buildWithScope(Layer.fresh(storage.layer), scope)
      return {
        services,
        run: <A, E>(program: Effect.Effect<A, E, Services | Scope.Scope>) =>
          program.pipe(Scope.provide(scope), Effect.provideContext(services)),
        close: Scope.close(scope, Exit.void)
      }
    })

  /** What an independent reader (a layer of its own) loads of a session. */
  const readBack = (storage: Storage, id: string) => persisted(storage, load(id))

  describe(`${store.name}: write-behind, durable at the flush checkpoint`, () => {
    it.effect("appends are not persisted until a flush; once a flush returns, another layer loads every event", () =>
      withStorage((storage) =>
        persisted(storage, Effect.gen(function*() {
          const session = yield* create("s")
          yield* appendMany(session, 5)
          const before = yield* Effect.flip(readBack(storage, "s"))
          expect(before.code).toBe("PERSISTENCE")
          yield* flush(session)
          expect((yield* readBack(storage, "s")).events).toStrictEqual(yield* session.events)
          yield* appendMany(session, 7)
          expect((yield* readBack(storage, "s")).events).toHaveLength(5)
          yield* flush(session)
          const loaded = yield* readBack(storage, "s")
          expect(loaded.events.map((e) => e.seq)).toStrictEqual([...Array(12).keys()])
          expect(loaded.events).toStrictEqual(yield* session.events)
          yield* flush(session)
          expect((yield* readBack(storage, "s")).events).toHaveLength(12)
        }))
      ))

    it.effect("a session flushed before its first event is persisted empty, loads and resumes", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          yield* persisted(storage, Effect.flatMap(create("empty"), flush))
          expect((yield* readBack(storage, "empty")).events).toStrictEqual([])
          yield* persisted(storage, Effect.gen(function*() {
            const { repairs, session } = yield* resume("empty")
            expect(repairs).toStrictEqual([])
            expect(yield* session.seq).toBe(0)
            yield* appendMany(session, 2)
            yield* flush(session)
          }))
          expect((yield* readBack(storage, "empty")).events.map((e) => e.seq)).toStrictEqual([0, 1])
        })
      ))

    it.effect("concurrent flushes of one session persist every event exactly once", () =>
      withStorage((storage) =>
        persisted(storage, Effect.gen(function*() {
          const session = yield* create("c")
          yield* Effect.forEach(
            Array.from({ length: 30 }, (_, i) => i),
            () => Effect.andThen(appendMany(session, 4), flush(session)),
            { concurrency: "unbounded", discard: true }
          )
          yield* flush(session)
          const loaded = yield* load("c")
          expect(loaded.events).toHaveLength(120)
          expect(loaded.events).toStrictEqual(yield* session.events)
        }))
      ))

    it.effect("sessions flush concurrently, each into its own log", () =>
      withStorage((storage) =>
        persisted(storage, Effect.gen(function*() {
          const sessions = yield* Effect.forEach(["x", "y", "z"], create)
          yield* Effect.forEach(sessions, (s, i) => Effect.andThen(appendMany(s, 3 + i), flush(s)), { concurrency: "unbounded" })
          for (const [i, id] of ["x", "y", "z"].entries()) {
            expect((yield* readBack(storage, id)).events).toHaveLength(3 + i)
          }
        }))
      ))

    it.effect("every kind of data round-trips: nested content, unicode, NUL and lone surrogates, extension events", () =>
      withStorage((storage) =>
        persisted(storage, Effect.gen(function*() {
          const session = yield* create("data")
          yield* session.append("turn/start", { turn: 1, trigger: "send" })
          yield* session.append("user/message", {
            content: [
              Content.text("héllo ✓ 🎉 \"quoted\" \\ back\nslash \u0000 nul \ud800 lone"),
              Content.image("image/png", "iVBORw0KGgo="),
              { type: "custom", kind: "mention", data: { path: ["src", "a.ts"], line: 3, meta: { pinned: true, note: null } } }
            ],
            source: "user"
          })
          yield* session.append("assistant/message", {
            turn: 1,
            step: 1,
            content: [Content.reasoning("hmm", "sig=="), Content.text("Hello"), Content.toolCall(c1, "read", "{\"path\":\"a\"}")]
          })
          yield* session.append("tool/result", {
            turn: 1,
            step: 1,
            callId: c1,
            content: [Content.text("no such file")],
            isError: true,
            error: { tag: "ToolFailedError", code: "TOOL_FAILED" }
          })
          yield* session.append(Note, { text: "a note", tags: ["x", "ü"] })
          yield* session.append("turn/end", { turn: 1, reason: { kind: "completed" } })
          yield* flush(session)
          const loaded = yield* readBack(storage, "data")
          expect(loaded.events).toStrictEqual(yield* session.events)
          expect(Note.decode(loaded.events[4]!)).toStrictEqual({ text: "a note", tags: ["x", "ü"] })
        }))
      ))
  })

  describe(`${store.name}: closing`, () => {
    it.live("a session is flushed when it closes", () =>
      withStorage((storage) =>
        persisted(storage, Effect.gen(function*() {
          yield* Effect.scoped(Effect.flatMap(create("closing"), (s) => appendMany(s, 3)))
          // the close is noticed by the layer's own fiber: wait for its write, bounded
          let events = 0
          for (let i = 0; i < 400 && events < 3; i++) {
            events = yield* load("closing").pipe(Effect.map((l) => l.events.length), Effect.orElseSucceed(() => 0))
            if (events < 3) yield* Effect.sleep("5 millis")
          }
          expect(events).toBe(3)
        }))
      ))

    it.effect("closing the layer flushes a session that closed before the layer noticed it", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          yield* persisted(storage, Effect.scoped(Effect.flatMap(create("quick"), (s) => appendMany(s, 3))))
          expect((yield* readBack(storage, "quick")).events).toHaveLength(3)
        })
      ))

    it.effect("closing the layer flushes the sessions that are still open", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          const writer = yield* openLayer(storage)
          // the session lives in the test's scope, not the layer's: it outlives the layer
          const session = yield* create("open").pipe(Effect.provideContext(writer.services))
          yield* appendMany(session, 2)
          yield* writer.run(flush(session))
          yield* appendMany(session, 3)
          expect((yield* readBack(storage, "open")).events).toHaveLength(2)
          yield* writer.close
          expect((yield* readBack(storage, "open")).events).toHaveLength(5)
          expect(yield* session.closed).toBe(false)
        })
      ))
  })

  describe(`${store.name}: resume and fork`, () => {
    it.effect("resume continues seq in the same log", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          yield* persisted(storage, Effect.gen(function*() {
            const session = yield* create("r")
            yield* session.append("turn/start", { turn: 1, trigger: "send" })
            yield* appendMany(session, 1)
            yield* session.append("turn/end", { turn: 1, reason: { kind: "completed" } })
          }))
          yield* TestClock.adjust("1 hour")
          yield* persisted(storage, Effect.gen(function*() {
            const original = yield* load("r")
            const { repairs, session } = yield* resume("r")
            expect(repairs).toStrictEqual([])
            expect(session.seeded).toBe(3)
            expect(yield* session.events).toStrictEqual(original.events)
            const event = yield* text(session, "after resume")
            expect(event.seq).toBe(3)
            yield* flush(session)
          }))
          const loaded = yield* readBack(storage, "r")
          expect(loaded.events.map((e) => e.seq)).toStrictEqual([0, 1, 2, 3])
          expect(loaded.events[3]!.time).toBe(3_600_000)
        })
      ))

    it.effect("a resumed session keeps its creation time, not the time of the resume", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          yield* TestClock.adjust("1000 millis")
          yield* persisted(storage, Effect.flatMap(create("old"), (s) => appendMany(s, 1)))
          yield* TestClock.adjust("1 hour")
          const createdAt = yield* persisted(storage, Effect.map(resume("old"), ({ session }) => session.createdAt))
          expect(createdAt).toBe(1000)
          expect((yield* readBack(storage, "old")).createdAt).toBe(1000)
        })
      ))

    it.effect("resuming a session that is open is SESSION_EXISTS, and leaves its log alone", () =>
      withStorage((storage) =>
        persisted(storage, Effect.gen(function*() {
          const session = yield* create("busy")
          yield* appendMany(session, 2)
          yield* flush(session)
          const error = yield* Effect.flip(resume("busy"))
          expect(error._tag).toBe("SessionExistsError")
          expect(error.code).toBe("SESSION_EXISTS")
          expect((yield* readBack(storage, "busy")).events).toStrictEqual(yield* session.events)
        }))
      ))

    it.effect("resuming a session that has no log is PERSISTENCE naming it", () =>
      withStorage((storage) =>
        persisted(storage, Effect.gen(function*() {
          const error = yield* Effect.flip(resume("nobody"))
          expect(error.code).toBe("PERSISTENCE")
          expect(error.message).toContain(storage.names("nobody"))
          // nothing was left held: the session can be created and written
          const session = yield* create("nobody")
          yield* appendMany(session, 1)
          yield* flush(session)
        }))
      ))

    it.effect("a session resumed after its earlier self closed in the same layer continues the log", () =>
      withStorage((storage) =>
        persisted(storage, Effect.gen(function*() {
          yield* Effect.scoped(Effect.flatMap(create("again"), (s) => Effect.andThen(appendMany(s, 2), flush(s))))
          const { session } = yield* resume("again")
          yield* appendMany(session, 1)
          yield* flush(session)
          expect((yield* load("again")).events.map((e) => e.seq)).toStrictEqual([0, 1, 2])
        }))
      ))

    it.effect("a new session under an id the storage holds is refused at creation: SESSION_EXISTS, the log untouched", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          yield* persisted(storage, Effect.flatMap(create("taken"), (s) => appendMany(s, 2)))
          const before = yield* readBack(storage, "taken")
          yield* persisted(storage, Effect.gen(function*() {
            const refused = yield* Effect.flip(create("taken"))
            expect(refused._tag).toBe("SessionExistsError")
            expect(refused.code).toBe("SESSION_EXISTS")
            expect(refused.message).toContain(storage.names("taken"))
            expect(refused.message).toContain("exists already")
            expect(refused.message).toContain("resume")
            // resumed, it goes on; a new session under another id is written as ever
            const { session } = yield* resume("taken")
            yield* appendMany(session, 1)
            yield* flush(session)
          }))
          expect((yield* readBack(storage, "taken")).events.map((e) => e.seq)).toStrictEqual([
            ...before.events.map((e) => e.seq),
            before.events.length
          ])
        })
      ))

    it.effect("a fork (a new id seeded with another session's events) persists a fresh log with all its events", () =>
      withStorage((storage) =>
        persisted(storage, Effect.gen(function*() {
          const store = yield* SessionStore
          const source = yield* store.create({ id: "source" })
          yield* appendMany(source, 3)
          yield* flush(source)
          const fork = yield* store.create({ id: "fork", seed: yield* source.events })
          yield* text(fork, "forked")
          yield* flush(fork)
          const loaded = yield* readBack(storage, "fork")
          expect(loaded.events).toStrictEqual(yield* fork.events)
          expect(loaded.events).toHaveLength(4)
          expect((yield* readBack(storage, "source")).events).toHaveLength(3)
        }))
      ))

    it.effect("a log cut while a tool ran is closed before resume returns: the repair, TOOL_OUTCOME_UNKNOWN, turn/end interrupted", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          yield* persisted(storage, Effect.flatMap(create("mid"), crashedDuringATool))
          const resumed = yield* persisted(storage, Effect.gen(function*() {
            const { repairs, session } = yield* resume("mid")
            return { repairs, events: yield* session.events }
          }))
          expect(resumed.repairs).toStrictEqual([{
            kind: "interrupted-turn",
            turn: 1,
            step: 1,
            calls: 1,
            message: expect.stringContaining("turn 1, step 1") as unknown as string
          }])
          const events = resumed.events
          expect(events[8]!.data).toStrictEqual(resumed.repairs[0])
          expect(events.slice(8).map((e) => e.type)).toStrictEqual(["session/repair", "tool/result", "step/end", "turn/end"])
          const result = events[9]!
          expect(result.type === "tool/result" && result.data).toMatchObject({
            callId: c2,
            isError: true,
            error: { tag: "ToolOutcomeUnknownError", code: "TOOL_OUTCOME_UNKNOWN" }
          })
          const end = events[11]!
          expect(end.type === "turn/end" && end.data.reason.kind).toBe("interrupted")
          const history = Derivation.derive(events)
          expect(Derivation.problems(history)).toStrictEqual([])
          expect(History.toArray(history).at(-1)!.content[0]).toMatchObject({ type: "tool-result", toolCallId: c2 })
          // the closing was persisted, so the next resume has nothing to repair
          expect((yield* readBack(storage, "mid")).events).toStrictEqual(events)
          expect(yield* persisted(storage, Effect.map(resume("mid"), (r) => r.repairs))).toStrictEqual([])
        })
      ))
  })

  describe(`${store.name}: one writer per session`, () => {
    it.effect("a second writer cannot resume a session another writer holds (SESSION_LOCKED), nor create it as a new one (SESSION_EXISTS)", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          yield* persisted(storage, Effect.flatMap(create("s"), (s) => appendMany(s, 2)))
          const first = yield* openLayer(storage)
          const second = yield* openLayer(storage)
          const { session } = yield* first.run(resume("s"))
          const before = yield* readBack(storage, "s")

          const locked = yield* Effect.flip(second.run(resume("s")))
          expect(locked._tag).toBe("SessionLockedError")
          if (locked._tag !== "SessionLockedError") return
          expect(locked.code).toBe("SESSION_LOCKED")
          expect(locked.sessionId).toBe("s")
          expect(locked.holder).toContain(`pid ${process.pid}`)

          const taken = yield* Effect.flip(second.run(create("s")))
          expect(taken.code).toBe("SESSION_EXISTS")
          expect(yield* readBack(storage, "s")).toStrictEqual(before)
          yield* second.close

          yield* appendMany(session, 1)
          yield* first.run(flush(session))
          yield* first.close
          expect((yield* readBack(storage, "s")).events.map((e) => e.seq)).toStrictEqual([0, 1, 2])
        })
      ))

    it.live("a writer's hold ends with its session's scope: then another writer resumes it", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          yield* persisted(storage, Effect.flatMap(create("handover"), (s) => appendMany(s, 1)))
          const first = yield* openLayer(storage)
          const second = yield* openLayer(storage)
          const scope = yield* Scope.make()
          const held = yield* first.run(resume("handover").pipe(Scope.provide(scope)))
          yield* appendMany(held.session, 1)
          expect((yield* Effect.flip(second.run(resume("handover")))).code).toBe("SESSION_LOCKED")
          yield* Scope.close(scope, Exit.void)
          // the first writer's layer sees the close, flushes what the session logged and lets
          // go: the second is refused until then, bounded
          let resumed = yield* Effect.result(second.run(resume("handover")))
          for (let i = 0; i < 400 && resumed._tag === "Failure" && resumed.failure.code === "SESSION_LOCKED"; i++) {
            yield* Effect.sleep("5 millis")
            resumed = yield* Effect.result(second.run(resume("handover")))
          }
          if (resumed._tag === "Failure") return yield* Effect.die(resumed.failure)
          const { session } = resumed.success
          expect(yield* session.seq).toBe(2)
          yield* appendMany(session, 1)
          yield* second.run(flush(session))
          yield* second.close
          yield* first.close
          expect((yield* readBack(storage, "handover")).events.map((e) => e.seq)).toStrictEqual([0, 1, 2])
        })
      ))

    it.effect("a new session is held from its first flush until its layer closes", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          const first = yield* openLayer(storage)
          const session = yield* first.run(create("n"))
          yield* appendMany(session, 2)
          yield* first.run(flush(session))
          const second = yield* openLayer(storage)
          expect((yield* Effect.flip(second.run(resume("n")))).code).toBe("SESSION_LOCKED")
          yield* first.close
          const { session: resumed } = yield* second.run(resume("n"))
          expect(yield* resumed.seq).toBe(2)
          yield* second.close
        })
      ))
  })

  describe(`${store.name}: failures`, () => {
    it.effect("an event the Schema cannot encode fails the flush with PERSISTENCE naming it; the events before it are persisted", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          yield* persisted(storage, Effect.gen(function*() {
            const session = yield* create("bad")
            yield* appendMany(session, 2)
            // the session takes any data of the right type; turn 0 breaks the Schema's turn >= 1
            yield* session.append("turn/start", { turn: 0, trigger: "send" })
            const first = yield* Effect.flip(flush(session))
            expect(first.code).toBe("PERSISTENCE")
            expect(first.message).toContain("seq 2")
            expect(first.message).toContain("turn/start")
            expect(first.message).not.toContain("died")
            expect((yield* readBack(storage, "bad")).events).toHaveLength(2)
            const second = yield* Effect.flip(flush(session))
            expect(second.message).toContain("seq 2")
          }))
          // closing the layer reported the failure instead of dying, and let the session go
          expect((yield* readBack(storage, "bad")).events).toHaveLength(2)
          yield* persisted(storage, Effect.flatMap(resume("bad"), ({ session }) => Effect.andThen(appendMany(session, 1), flush(session))))
          expect((yield* readBack(storage, "bad")).events).toHaveLength(3)
        })
      ))

    it.effect("one session that cannot be persisted does not keep the others from being flushed at shutdown", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          yield* persisted(storage, Effect.gen(function*() {
            const bad = yield* create("a-bad")
            const good = yield* create("b-good")
            yield* bad.append("turn/start", { turn: 0, trigger: "send" })
            yield* appendMany(good, 3)
          }))
          expect((yield* readBack(storage, "b-good")).events).toHaveLength(3)
          expect((yield* readBack(storage, "a-bad")).events).toHaveLength(0)
        })
      ))
  })

  describe(`${store.name}: list`, () => {
    it.effect("lists every session, sorted by id, with its event count, creation time and last activity", () =>
      withStorage((storage) =>
        Effect.gen(function*() {
          yield* TestClock.adjust("1000 millis")
          yield* persisted(storage, Effect.gen(function*() {
            const b = yield* create("b")
            const a = yield* create("a/1")
            yield* appendMany(a, 2)
            yield* TestClock.adjust("500 millis")
            yield* appendMany(b, 4)
            yield* TestClock.adjust("500 millis")
            yield* appendMany(a, 1)
            yield* Effect.flatMap(create("empty"), flush)
          }))
          const entries = yield* persisted(storage, Effect.flatMap(Persisted, (p) => p.list))
          expect(entries.map((e) => e.id)).toStrictEqual(["a/1", "b", "empty"])
          expect(entries[0]).toStrictEqual({ id: "a/1", events: 3, createdAt: 1000, lastActivity: 2000 })
          expect(entries[1]).toStrictEqual({ id: "b", events: 4, createdAt: 1000, lastActivity: 1500 })
          expect(entries[2]).toMatchObject({ id: "empty", events: 0, createdAt: 2000 })
        })
      ))
  })
}
