import { ScopedList } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Scope } from "effect"

describe("ScopedList", () => {
  it.effect("orders by `order`, equal orders in the order added", () =>
    Effect.gen(function*() {
      const list = ScopedList.make<string>()
      yield* list.add("b", 5)
      yield* list.add("a", 0)
      yield* list.add("c", 5)
      yield* list.add("z", -1)
      expect(list.current()).toStrictEqual(["z", "a", "b", "c"])
    }).pipe(Effect.scoped))

  it.effect("closing a scope removes what it added, and only that", () =>
    Effect.gen(function*() {
      const list = ScopedList.make<string>()
      const outer = yield* Scope.make()
      const inner = yield* Scope.make()
      yield* list.add("same").pipe(Scope.provide(outer))
      yield* list.add("same").pipe(Scope.provide(inner))
      yield* list.add("other").pipe(Scope.provide(inner))
      expect(list.current()).toStrictEqual(["same", "same", "other"])
      yield* Scope.close(inner, Exit.void)
      expect(list.current()).toStrictEqual(["same"])
      yield* Scope.close(outer, Exit.void)
      expect(list.current()).toStrictEqual([])
    }))

  it.effect("a snapshot never changes after later additions and removals", () =>
    Effect.gen(function*() {
      const list = ScopedList.make<number>()
      const scope = yield* Scope.make()
      yield* list.add(1).pipe(Scope.provide(scope))
      const snapshot = list.current()
      yield* list.add(2)
      yield* Scope.close(scope, Exit.void)
      expect(snapshot).toStrictEqual([1])
      expect(list.current()).toStrictEqual([2])
    }).pipe(Effect.scoped))
})

describe("ScopedList into a closed scope", () => {
  it.effect("an addition into a closed scope is SCOPE_CLOSED, naming the item, and adds nothing", () =>
    Effect.gen(function*() {
      const list = ScopedList.make<string>({ describe: (item) => `greeting ${JSON.stringify(item)}` })
      yield* list.add("kept")
      // the scope an `Effect.scoped` ran in, kept past its end
      const leaked = yield* Effect.scoped(Effect.scope)
      const error = yield* Effect.flip(list.add("late").pipe(Scope.provide(leaked)))
      expect(error).toBeInstanceOf(ScopedList.ScopeClosedError)
      expect([error.code, error.registration]).toStrictEqual(["SCOPE_CLOSED", `greeting "late"`])
      expect(error.message).toContain(`Cannot register greeting "late": the registering scope is closed`)
      expect(list.current()).toStrictEqual(["kept"])
    }).pipe(Effect.scoped))

  it.effect("inOpenScope leaves other failures typed and makes a refusal a defect", () =>
    Effect.gen(function*() {
      const list = ScopedList.make<string>()
      const closed = yield* Scope.make()
      yield* Scope.close(closed, Exit.void)
      const exit = yield* Effect.exit(ScopedList.inOpenScope(list.add("x").pipe(Scope.provide(closed))))
      expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
      const other = yield* Effect.flip(ScopedList.inOpenScope(Effect.fail("mine" as const)))
      expect(other).toBe("mine")
      yield* ScopedList.inOpenScope(list.add("y"))
      expect(list.current()).toStrictEqual(["y"])
    }).pipe(Effect.scoped))
})
