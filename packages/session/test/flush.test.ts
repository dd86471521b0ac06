/**
 * The flush checkpoint: hooks run concurrently and flush waits for all of them; failures come
 * back as one typed PersistenceError; registrations are scoped.
 */
import { Ids } from "@dsh/llm"
import { FlushCheckpoint, type FlushHook, Session, SessionErrors } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"

const session = Session.make({ id: Ids.sessionId("flushed"), createdAt: 0 }).session

const failure = (message: string) => new SessionErrors.PersistenceError({ message, sessionId: session.id })

const hook = (name: string, flush: FlushHook["flush"]): FlushHook => ({ name, flush })

/** Yields until the condition holds, at most `max` times; whether it held. */
const eventually = (condition: Effect.Effect<boolean>, max = 100): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    for (let i = 0; i < max; i++) {
      if (yield* condition) return true
      yield* Effect.yieldNow
    }
    return yield* condition
  })

describe("FlushCheckpoint", () => {
  it.effect("with no hooks, flush succeeds", () =>
    Effect.gen(function*() {
      const checkpoint = yield* FlushCheckpoint
      expect(yield* Effect.exit(checkpoint.flush(session))).toStrictEqual(Exit.void)
    }).pipe(Effect.provide(FlushCheckpoint.layer)))

  it.effect("after its Layer closed, flush fails with PERSISTENCE instead of succeeding with nothing written", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(FlushCheckpoint.layer, scope)
      const checkpoint = Context.get(context, FlushCheckpoint)
      expect(yield* Effect.exit(checkpoint.flush(session))).toStrictEqual(Exit.void)
      yield* Scope.close(scope, Exit.void)
      const error = yield* Effect.flip(checkpoint.flush(session))
      expect(error).toBeInstanceOf(SessionErrors.PersistenceError)
      expect(error.message).toBe(
        `session "flushed" was not flushed: the FlushCheckpoint Layer is closed, and the persistence it ran went with it; nothing was made durable`
      )
    }))

  it.effect("hooks run concurrently: two hooks each wait for the other to start", () =>
    Effect.gen(function*() {
      const checkpoint = yield* FlushCheckpoint
      const aStarted = yield* Deferred.make<void>()
      const bStarted = yield* Deferred.make<void>()
      const seen: Array<Session.Session> = []
      const waiting = (mine: Deferred.Deferred<void>, other: Deferred.Deferred<void>) => (s: Session.Session) =>
        Effect.gen(function*() {
          seen.push(s)
          yield* Deferred.succeed(mine, undefined)
          yield* Deferred.await(other)
        })
      yield* checkpoint.register(hook("a", waiting(aStarted, bStarted)))
      yield* checkpoint.register(hook("b", waiting(bStarted, aStarted)))
      const flush = yield* Effect.forkChild(checkpoint.flush(session))
      // run one after the other, the first hook would wait forever for the second to start
      const both = Effect.zipWith(Deferred.isDone(aStarted), Deferred.isDone(bStarted), (a, b) => a && b)
      expect(yield* eventually(both)).toBe(true)
      expect(yield* Fiber.join(flush)).toBeUndefined()
      expect(seen).toStrictEqual([session, session])
    }).pipe(Effect.provide(FlushCheckpoint.layer)))

  it.effect("flush returns only when every hook has finished", () =>
    Effect.gen(function*() {
      const checkpoint = yield* FlushCheckpoint
      const release = yield* Deferred.make<void>()
      const finished: Array<string> = []
      yield* checkpoint.register(hook("fast", () => Effect.sync(() => finished.push("fast"))))
      yield* checkpoint.register(hook("slow", () =>
        Effect.andThen(Deferred.await(release), Effect.sync(() => finished.push("slow")))))
      const flush = yield* Effect.forkChild(checkpoint.flush(session))
      expect(yield* eventually(Effect.sync(() => finished.length === 1))).toBe(true)
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow
      expect(flush.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(flush)
      expect(finished).toStrictEqual(["fast", "slow"])
    }).pipe(Effect.provide(FlushCheckpoint.layer)))

  it.effect("one failing hook: flush fails with that PersistenceError, after the others finished", () =>
    Effect.gen(function*() {
      const checkpoint = yield* FlushCheckpoint
      const finished: Array<string> = []
      const disk = failure("disk full")
      yield* checkpoint.register(hook("jsonl", () => Effect.fail(disk)))
      yield* checkpoint.register(hook("other", () =>
        Effect.andThen(Effect.yieldNow, Effect.sync(() => finished.push("other")))))
      const error = yield* Effect.flip(checkpoint.flush(session))
      expect(error).toBe(disk)
      expect(error.code).toBe("PERSISTENCE")
      expect(finished).toStrictEqual(["other"])
    }).pipe(Effect.provide(FlushCheckpoint.layer)))

  it.effect("several failing hooks: one PersistenceError listing every failure", () =>
    Effect.gen(function*() {
      const checkpoint = yield* FlushCheckpoint
      yield* checkpoint.register(hook("a", () => Effect.fail(failure("a: disk full"))))
      yield* checkpoint.register(hook("ok", () => Effect.void))
      yield* checkpoint.register(hook("b", () => Effect.andThen(Effect.yieldNow, Effect.fail(failure("b: EACCES")))))
      yield* checkpoint.register(hook("c", () => Effect.die(new Error("kaboom"))))
      const error = yield* Effect.flip(checkpoint.flush(session))
      expect(error).toBeInstanceOf(SessionErrors.PersistenceError)
      expect(error.code).toBe("PERSISTENCE")
      expect(error.sessionId).toBe("flushed")
      expect(error.failures).toStrictEqual(["a: disk full", "b: EACCES", "flush hook \"c\" died: kaboom"])
      expect(error.message).toMatch(/^3 flush hooks failed for session flushed: a: disk full; b: EACCES; /)
    }).pipe(Effect.provide(FlushCheckpoint.layer)))

  it.effect("a dying hook becomes a PersistenceError naming the hook, with the defect as cause", () =>
    Effect.gen(function*() {
      const checkpoint = yield* FlushCheckpoint
      const defect = new Error("fsync: EIO")
      yield* checkpoint.register(hook("jsonl", () => Effect.die(defect)))
      const error = yield* Effect.flip(checkpoint.flush(session))
      expect(error).toBeInstanceOf(SessionErrors.PersistenceError)
      expect(error.message).toBe("flush hook \"jsonl\" died: fsync: EIO")
      expect(error.cause).toBe(defect)
      expect(error.sessionId).toBe("flushed")
      // a thrown non-Error
      yield* checkpoint.register(hook("thrower", () => Effect.sync(() => { throw "oops" })))
      const both = yield* Effect.flip(checkpoint.flush(session))
      expect(both.failures).toStrictEqual(["flush hook \"jsonl\" died: fsync: EIO", "flush hook \"thrower\" died: oops"])
    }).pipe(Effect.provide(FlushCheckpoint.layer)))

  it.effect("a hook that throws before giving an Effect, or gives none, is a PersistenceError naming it too", () =>
    Effect.gen(function*() {
      const checkpoint = yield* FlushCheckpoint
      yield* checkpoint.register(hook("eager", () => {
        throw new Error("no disk")
      }))
      yield* checkpoint.register(hook("promising", () => Promise.resolve() as never))
      const error = yield* Effect.flip(checkpoint.flush(session))
      expect(error.code).toBe("PERSISTENCE")
      expect(error.failures).toStrictEqual([
        "flush hook \"eager\" died: no disk",
        "flush hook \"promising\" died: TypeError: it returned a Promise, not an Effect"
      ])
    }).pipe(Effect.provide(FlushCheckpoint.layer)))

  it.effect("a hook failing with an error of another class (past the types) is a PersistenceError, never an error without a code", () =>
    Effect.gen(function*() {
      const checkpoint = yield* FlushCheckpoint
      yield* checkpoint.register(hook("plain", () => Effect.fail(new Error("boom") as never)))
      const error = yield* Effect.flip(checkpoint.flush(session))
      expect(error).toBeInstanceOf(SessionErrors.PersistenceError)
      expect(error.code).toBe("PERSISTENCE")
      expect(error.message).toBe(`a flush hook failed for session ${session.id}: boom`)
    }).pipe(Effect.provide(FlushCheckpoint.layer)))

  it.effect("a registration lasts until its scope closes", () =>
    Effect.gen(function*() {
      const checkpoint = yield* FlushCheckpoint
      const calls: Array<string> = []
      const counting = (name: string) => hook(name, () => Effect.sync(() => calls.push(name)))
      yield* checkpoint.register(counting("outer"))
      const scope = yield* Scope.make()
      yield* Scope.provide(scope)(checkpoint.register(counting("inner")))
      yield* checkpoint.flush(session)
      expect(calls.sort()).toStrictEqual(["inner", "outer"])
      yield* Scope.close(scope, Exit.void)
      calls.length = 0
      yield* checkpoint.flush(session)
      expect(calls).toStrictEqual(["outer"])
    }).pipe(Effect.provide(FlushCheckpoint.layer)))

  it.effect("the same hook registered in two scopes stays until both have closed", () =>
    Effect.gen(function*() {
      const checkpoint = yield* FlushCheckpoint
      let runs = 0
      const shared = hook("shared", () => Effect.sync(() => void runs++))
      const first = yield* Scope.make()
      const second = yield* Scope.make()
      yield* Scope.provide(first)(checkpoint.register(shared))
      yield* Scope.provide(second)(checkpoint.register(shared))
      yield* checkpoint.flush(session)
      expect(runs).toBe(2)
      yield* Scope.close(first, Exit.void)
      yield* checkpoint.flush(session)
      expect(runs).toBe(3)
      yield* Scope.close(second, Exit.void)
      yield* checkpoint.flush(session)
      expect(runs).toBe(3)
    }).pipe(Effect.provide(FlushCheckpoint.layer)))
})
