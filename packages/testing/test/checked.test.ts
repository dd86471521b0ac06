/**
 * `Testing.checked`: a violation found while a test body runs fails that test, and is then
 * reported — neither `verify` nor the test layer's teardown reports it again. The shared-layer
 * suite below passes only if that holds: an unreported violation would fail its teardown.
 */
import { InvariantError, Invariants } from "@dsh/invariants"
import { Content } from "@dsh/llm"
import { SessionStore } from "@dsh/session"
import { Testing } from "@dsh/testing"
import { describe, expect, it, layer } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Layer, References, type Scope } from "effect"

/** Appends a step/end with no open step in a new session: breaks `step-pairing`. */
const breakContract = (id: string) =>
  Effect.gen(function*() {
    const session = yield* (yield* SessionStore).create({ id })
    yield* session.append("step/end", { turn: 1, step: 1 })
  })

/** A turn that keeps the contract. */
const keepContract = (id: string) =>
  Effect.gen(function*() {
    const session = yield* (yield* SessionStore).create({ id })
    yield* session.append("turn/start", { turn: 1, trigger: "send" })
    yield* session.append("user/message", { content: [Content.text("hi")], source: "user" })
    yield* session.append("turn/end", { turn: 1, reason: { kind: "completed" } })
  })

const quiet = Effect.provideService(References.MinimumLogLevel, "None")

const failureOf = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined

layer(Layer.merge(Testing.layer(), Layer.succeed(References.MinimumLogLevel, "None")))("tests sharing one test layer", (it) => {
  it.effect("a body that breaks the contract fails with the InvariantError, its own", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Testing.checked(breakContract("shared-bad")))
      const error = failureOf(exit)
      expect(error).toBeInstanceOf(InvariantError)
      expect((error as InvariantError).rule).toBe("step-pairing")
      expect((error as InvariantError).sessionId).toBe("shared-bad")
    }).pipe(quiet))

  it.effect("the reported violation is not reported again: verify passes, violations still lists it", () =>
    Effect.gen(function*() {
      const invariants = yield* Invariants
      yield* invariants.verify
      expect((yield* invariants.violations).map((v) => v.sessionId)).toStrictEqual(["shared-bad"])
    }))

  it.effect("a body that keeps the contract succeeds with its value", () =>
    Effect.gen(function*() {
      const value = yield* Testing.checked(Effect.as(keepContract("shared-good"), 42))
      expect(value).toBe(42)
    }))

  it.effect("bodies running at once: each fails with its own sessions' violations, not another's", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      // the clean body is still running when the other breaks the contract
      const clean = Testing.checked(Effect.gen(function*() {
        yield* keepContract("concurrent-good")
        yield* Deferred.await(gate)
        return "clean"
      }))
      const broken = Testing.checked(Effect.andThen(breakContract("concurrent-bad"), Deferred.succeed(gate, undefined)))
      const [good, bad] = yield* Effect.all([Effect.exit(clean), Effect.exit(broken)], { concurrency: 2 })
      expect(good).toStrictEqual(Exit.succeed("clean"))
      expect((failureOf(bad) as InvariantError).sessionId).toBe("concurrent-bad")
    }).pipe(quiet))

  // vitest's it.fails: this test passes only because the Effect test fails, with the violation
  it.effect.fails("an it.effect whose checked body breaks the contract fails", () =>
    Testing.checked(breakContract("shared-bad-2")).pipe(quiet))
})

describe("Testing.checked with a layer of its own", () => {
  /**
   * Runs `before`, then `body` under `Testing.checked`, in a test layer of their own; returns
   * the body's Exit and what the layer's teardown failed with (undefined if nothing).
   */
  const checkedIn = <A, E>(
    body: Effect.Effect<A, E, Testing.Services | Scope.Scope>,
    before: Effect.Effect<unknown, unknown, Testing.Services | Scope.Scope> = Effect.void
  ) =>
    Effect.gen(function*() {
      let bodyExit: Exit.Exit<A, unknown> | undefined
      const exit = yield* Effect.exit(
        Effect.gen(function*() {
          yield* before
          bodyExit = yield* Effect.exit(Testing.checked(body))
        }).pipe(Effect.scoped, Effect.provide(Testing.layer()), quiet)
      )
      return { body: bodyExit!, teardown: failureOf(exit) as InvariantError | undefined }
    })

  it.effect("a violation from before the body is not the body's: the body succeeds, the teardown fails", () =>
    Effect.gen(function*() {
      const { body, teardown } = yield* checkedIn(keepContract("during"), breakContract("before"))
      expect(body).toStrictEqual(Exit.void)
      expect(teardown?.sessionId).toBe("before")
    }))

  it.effect("a body that fails keeps its own failure; the violation is left to the teardown", () =>
    Effect.gen(function*() {
      const { body, teardown } = yield* checkedIn(Effect.andThen(breakContract("failing"), Effect.fail("boom")))
      expect(body).toStrictEqual(Exit.fail("boom"))
      expect(teardown?.sessionId).toBe("failing")
    }))

  it.effect("several violations in one body: the first, with the count of the others", () =>
    Effect.gen(function*() {
      const { body, teardown } = yield* checkedIn(Effect.andThen(breakContract("one"), breakContract("two")))
      const error = failureOf(body) as InvariantError
      expect(error.sessionId).toBe("one")
      expect(error.message).toContain("and 1 more violation(s): step-pairing@two#0")
      expect(teardown).toBeUndefined()
    }))
})
