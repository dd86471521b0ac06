import { Middleware } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Scope, Stream } from "effect"

type EffectChain = Middleware.Chain<string, Effect.Effect<string>>
type StreamChain = Middleware.Chain<string, Stream.Stream<string>>

const effectChain = (): EffectChain => Middleware.make<string, Effect.Effect<string>>({ suspend: Effect.suspend })
const streamChain = (): StreamChain => Middleware.make<string, Stream.Stream<string>>({ suspend: Stream.suspend })

// A middleware that logs when it sees the input and when it sees the output.
const tracing = (
  log: Array<string>,
  name: string,
  order?: number
): Middleware.Middleware<string, Effect.Effect<string>> => ({
  name,
  ...(order === undefined ? {} : { order }),
  around: (input, next) => {
    log.push(`${name}>`)
    return next(input).pipe(Effect.tap(() => Effect.sync(() => log.push(`<${name}`))))
  }
})

const echo = (log?: Array<string>) => (input: string): Effect.Effect<string> =>
  Effect.sync(() => {
    log?.push(`terminal(${input})`)
    return input
  })

// The defect an effect died with (the test fails if it succeeded or failed otherwise).
const defectOf = <A, E>(exit: Exit.Exit<A, E>): unknown => {
  if (Exit.isSuccess(exit)) throw new Error(`expected a defect, got success ${String(exit.value)}`)
  const dies = exit.cause.reasons.filter(Cause.isDieReason)
  expect(dies).toHaveLength(1)
  return dies[0]!.defect
}

const letters = (s: string): Stream.Stream<string> => Stream.fromIterable(Array.from(s))

const names = <In, Out>(chain: Middleware.Chain<In, Out>) => chain.current().map((m) => m.name)

describe("Middleware (Effect.suspend)", () => {
  it.effect("with no middleware the terminal runs on the input", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      expect(chain.current()).toStrictEqual([])
      expect(yield* chain.apply("x", (s) => Effect.succeed(s + "!"))).toBe("x!")
    }))

  it.effect("lower order runs further outside; equal orders run in registration order", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      const log: Array<string> = []
      yield* chain.register(tracing(log, "b0", 0))
      yield* chain.register(tracing(log, "late", 10))
      yield* chain.register(tracing(log, "first", -5))
      yield* chain.register(tracing(log, "c0"))
      yield* chain.register(tracing(log, "d0", 0))
      expect(names(chain)).toStrictEqual(["first", "b0", "c0", "d0", "late"])
      expect(yield* chain.apply("in", echo(log))).toBe("in")
      expect(log).toStrictEqual([
        "first>",
        "b0>",
        "c0>",
        "d0>",
        "late>",
        "terminal(in)",
        "<late",
        "<d0",
        "<c0",
        "<b0",
        "<first"
      ])
    }))

  it.effect("an order that is no number, or NaN, is the default 0 and moves nothing out of place", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      const log: Array<string> = []
      yield* chain.register(tracing(log, "a10", 10))
      yield* chain.register(tracing(log, "nan", Number.NaN))
      yield* chain.register({ ...tracing(log, "text", 0), order: "5" as unknown as number })
      yield* chain.register(tracing(log, "b0", 0))
      yield* chain.register(tracing(log, "neg", -1))
      expect(names(chain)).toStrictEqual(["neg", "nan", "text", "b0", "a10"])
    }))

  it.effect("a registration that is no middleware (past the types) fails where it runs with MIDDLEWARE, never at registration", () =>
    Effect.gen(function*() {
      const chain = Middleware.makeEffect<string, string, never>({ seam: "test" })
      yield* chain.register(null as never)
      const exit = yield* Effect.exit(chain.apply("in", echo()))
      const defect = defectOf(exit)
      expect(defect).toMatchObject({ _tag: "MiddlewareError", code: "MIDDLEWARE" })
      expect((defect as { message: string }).message).toContain(`middleware "(no middleware: null)" threw`)
      expect(Middleware.nameOf({ name: "named" })).toBe("named")
    }).pipe(Effect.scoped))

  it.effect("a middleware rewrites the input and wraps the output", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      yield* chain.register({ name: "upper", order: 1, around: (s, next) => next(s.toUpperCase()) })
      yield* chain.register({ name: "brackets", order: 2, around: (s, next) => Effect.map(next(`[${s}]`), (o) => `${o}.`) })
      yield* chain.register({ name: "quote", order: 0, around: (s, next) => Effect.map(next(s), (o) => `"${o}"`) })
      const seen: Array<string> = []
      const out = yield* chain.apply("ab", (s) => {
        seen.push(s)
        return Effect.succeed(`<${s}>`)
      })
      // quote(outer) sees "ab", upper makes it "AB", brackets makes "[AB]"; outputs are wrapped
      // innermost first: brackets adds ".", then quote adds the quotes
      expect(seen).toStrictEqual(["[AB]"])
      expect(out).toBe("\"<[AB]>.\"")
    }))

  it.effect("a middleware that never calls next vetoes the call", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      const log: Array<string> = []
      yield* chain.register(tracing(log, "outer", 0))
      yield* chain.register({ name: "veto", order: 1, around: (s) => Effect.succeed(`vetoed ${s}`) })
      yield* chain.register(tracing(log, "inner", 2))
      let terminalCalls = 0
      const out = yield* chain.apply("rm -rf /", (s) => {
        terminalCalls++
        return Effect.succeed(s)
      })
      expect(out).toBe("vetoed rm -rf /")
      expect(terminalCalls).toBe(0)
      expect(log).toStrictEqual(["outer>", "<outer"])
    }))

  it.effect("middleware runs when the output is run, once per run", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      let calls = 0
      yield* chain.register({
        name: "count",
        around: (s, next) => {
          calls++
          return next(s)
        }
      })
      const output = chain.apply("x", echo())
      expect(calls).toBe(0)
      yield* output
      yield* output
      expect(calls).toBe(2)
    }))

  it.effect("closing the registering scope removes the middleware", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      const log: Array<string> = []
      yield* chain.register(tracing(log, "forever"))
      const scope = yield* Scope.make()
      yield* chain.register(tracing(log, "scoped", 1)).pipe(Scope.provide(scope))
      expect(names(chain)).toStrictEqual(["forever", "scoped"])
      yield* chain.apply("a", echo())
      expect(log).toStrictEqual(["forever>", "scoped>", "<scoped", "<forever"])

      yield* Scope.close(scope, Exit.void)
      expect(names(chain)).toStrictEqual(["forever"])
      log.length = 0
      yield* chain.apply("b", echo())
      expect(log).toStrictEqual(["forever>", "<forever"])
    }))

  it.effect("Effect.scoped registers only for the scoped block", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      const inside = yield* Effect.scoped(Effect.gen(function*() {
        yield* chain.register({ name: "double", around: (s, next) => next(s + s) })
        return yield* chain.apply("ab", echo())
      }))
      expect(inside).toBe("abab")
      expect(chain.current()).toStrictEqual([])
      expect(yield* chain.apply("ab", echo())).toBe("ab")
    }))

  it.effect("the same middleware registered in two scopes is removed once per scope", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      const log: Array<string> = []
      const m = tracing(log, "twice")
      const s1 = yield* Scope.make()
      const s2 = yield* Scope.make()
      yield* chain.register(m).pipe(Scope.provide(s1))
      yield* chain.register(m).pipe(Scope.provide(s2))
      expect(names(chain)).toStrictEqual(["twice", "twice"])
      yield* Scope.close(s1, Exit.void)
      expect(names(chain)).toStrictEqual(["twice"])
      yield* chain.apply("x", echo())
      expect(log).toStrictEqual(["twice>", "<twice"])
      yield* Scope.close(s2, Exit.void)
      expect(chain.current()).toStrictEqual([])
    }))

  it.effect("a registration during a running call does not change that call", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      const log: Array<string> = []
      const scope = yield* Scope.make()
      let registered = false
      yield* chain.register({
        name: "registrar",
        order: 0,
        around: (s, next) =>
          Effect.gen(function*() {
            if (!registered) {
              registered = true
              // both outside and inside of the running middleware
              // the scope is open: a refusal would be this test's bug
              yield* chain.register(tracing(log, "newOuter", -1)).pipe(Scope.provide(scope), Effect.orDie)
              yield* chain.register(tracing(log, "newInner", 1)).pipe(Scope.provide(scope), Effect.orDie)
            }
            log.push("registrar")
            return yield* next(s)
          })
      })
      yield* chain.apply("first", echo(log))
      expect(log).toStrictEqual(["registrar", "terminal(first)"])
      expect(names(chain)).toStrictEqual(["newOuter", "registrar", "newInner"])

      log.length = 0
      yield* chain.apply("second", echo(log))
      expect(log).toStrictEqual([
        "newOuter>",
        "registrar",
        "newInner>",
        "terminal(second)",
        "<newInner",
        "<newOuter"
      ])
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a removal during a running call does not change that call", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      const log: Array<string> = []
      const scope = yield* Scope.make()
      yield* chain.register({
        name: "remover",
        order: 0,
        around: (s, next) => Effect.andThen(Scope.close(scope, Exit.void), next(s))
      })
      yield* chain.register(tracing(log, "doomed", 1)).pipe(Scope.provide(scope))
      yield* chain.apply("x", echo(log))
      expect(log).toStrictEqual(["doomed>", "terminal(x)", "<doomed"])
      expect(names(chain)).toStrictEqual(["remover"])
      log.length = 0
      yield* chain.apply("y", echo(log))
      expect(log).toStrictEqual(["terminal(y)"])
    }))

  it.effect("a middleware that throws becomes a MiddlewareError defect naming it", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      const root = new Error("kaput")
      const log: Array<string> = []
      yield* chain.register(tracing(log, "outer", 0))
      yield* chain.register({
        name: "boom",
        order: 1,
        around: () => {
          throw root
        }
      })
      let terminalCalls = 0
      // building the output does not throw at the caller
      const output = chain.apply("x", (s) => {
        terminalCalls++
        return Effect.succeed(s)
      })
      const defect = defectOf(yield* Effect.exit(output))
      expect(defect).toBeInstanceOf(Middleware.MiddlewareError)
      const error = defect as Middleware.MiddlewareError
      expect(error._tag).toBe("MiddlewareError")
      expect(error.code).toBe("MIDDLEWARE")
      expect(error.middleware).toBe("boom")
      expect(error.message).toContain("boom")
      expect(error.message).toContain("kaput")
      expect(error.cause).toBe(root)
      expect(terminalCalls).toBe(0)
      // the outer middleware saw the input but no output
      expect(log).toStrictEqual(["outer>"])
    }))

  it.effect("a thrown non-Error value is described in the message", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      yield* chain.register({
        name: "stringly",
        around: () => {
          throw "just a string"
        }
      })
      const error = defectOf(yield* Effect.exit(chain.apply("x", echo()))) as Middleware.MiddlewareError
      expect(error.middleware).toBe("stringly")
      expect(error.message).toContain("just a string")
      expect(error.cause).toBe("just a string")
    }))

  it.effect("the outermost thrower is named when the throw happens before next", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      let innerRan = false
      yield* chain.register({
        name: "inner",
        order: 5,
        around: (s, next) => {
          innerRan = true
          return next(s)
        }
      })
      yield* chain.register({
        name: "outer-thrower",
        order: -5,
        around: (s) => {
          if (s.length > 0) throw new Error("no")
          return Effect.succeed(s)
        }
      })
      const error = defectOf(yield* Effect.exit(chain.apply("x", echo()))) as Middleware.MiddlewareError
      expect(error.middleware).toBe("outer-thrower")
      expect(innerRan).toBe(false)
    }))

  it.effect("a throwing terminal is not blamed on the innermost middleware", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      yield* chain.register({ name: "innocent", around: (s, next) => next(s) })
      const root = new Error("terminal down")
      const output = chain.apply("x", () => {
        throw root
      })
      const defect = defectOf(yield* Effect.exit(output))
      expect(defect).not.toBeInstanceOf(Middleware.MiddlewareError)
      expect(defect).toBe(root)
    }))

  it.effect("with no middleware a throwing terminal is a defect of the output, not a throw at the caller", () =>
    Effect.gen(function*() {
      const chain = effectChain()
      const root = new Error("terminal down")
      const throwing = (): Effect.Effect<string> => {
        throw root
      }
      expect(() => chain.apply("x", throwing)).not.toThrow()
      expect(defectOf(yield* Effect.exit(chain.apply("x", throwing)))).toBe(root)
    }))

  it.effect("a typed failure of the output passes through unchanged", () =>
    Effect.gen(function*() {
      const chain = Middleware.make<string, Effect.Effect<string, string>>({ suspend: Effect.suspend })
      yield* chain.register({ name: "pass", around: (s, next) => next(s) })
      const error = yield* Effect.flip(chain.apply("x", (s) => Effect.fail(`failed ${s}`)))
      expect(error).toBe("failed x")
    }))
})

describe("Middleware (Stream.suspend)", () => {

  it.effect("order, input rewriting and output wrapping", () =>
    Effect.gen(function*() {
      const chain = streamChain()
      const log: Array<string> = []
      yield* chain.register({
        name: "suffix",
        order: 2,
        around: (s, next) => {
          log.push("suffix")
          return next(`${s}z`)
        }
      })
      yield* chain.register({
        name: "upper",
        order: 1,
        around: (s, next) => {
          log.push("upper")
          return Stream.map(next(s), (c) => c.toUpperCase())
        }
      })
      yield* chain.register({
        name: "prefix",
        order: 1,
        around: (s, next) => {
          log.push("prefix")
          return Stream.concat(Stream.make(">"), next(s))
        }
      })
      expect(names(chain)).toStrictEqual(["upper", "prefix", "suffix"])
      const out = yield* Stream.runCollect(chain.apply("ab", letters))
      // upper is outside prefix, so it upper-cases the ">" too (a no-op) and everything after
      expect(out).toStrictEqual([">", "A", "B", "Z"])
      expect(log).toStrictEqual(["upper", "prefix", "suffix"])
    }))

  it.effect("a veto ends the stream with the middleware's own output", () =>
    Effect.gen(function*() {
      const chain = streamChain()
      let terminalCalls = 0
      yield* chain.register({ name: "veto", around: () => Stream.make("denied") })
      const out = yield* Stream.runCollect(chain.apply("x", (s) => {
        terminalCalls++
        return letters(s)
      }))
      expect(out).toStrictEqual(["denied"])
      expect(terminalCalls).toBe(0)
    }))

  it.effect("scoped registration", () =>
    Effect.gen(function*() {
      const chain = streamChain()
      const scope = yield* Scope.make()
      yield* chain.register({ name: "rev", around: (s, next) => next([...s].reverse().join("")) }).pipe(
        Scope.provide(scope)
      )
      expect(yield* Stream.runCollect(chain.apply("abc", letters))).toStrictEqual(["c", "b", "a"])
      yield* Scope.close(scope, Exit.void)
      expect(yield* Stream.runCollect(chain.apply("abc", letters))).toStrictEqual(["a", "b", "c"])
    }))

  it.effect("a throwing middleware makes the stream die with a MiddlewareError naming it", () =>
    Effect.gen(function*() {
      const chain = streamChain()
      yield* chain.register({ name: "fine", order: 0, around: (s, next) => next(s) })
      yield* chain.register({
        name: "broken",
        order: 1,
        around: () => {
          throw new TypeError("undefined is not a function")
        }
      })
      const output = chain.apply("x", letters)
      const error = defectOf(yield* Effect.exit(Stream.runCollect(output)))
      expect(error).toBeInstanceOf(Middleware.MiddlewareError)
      expect((error as Middleware.MiddlewareError).code).toBe("MIDDLEWARE")
      expect((error as Middleware.MiddlewareError).middleware).toBe("broken")
      expect((error as Middleware.MiddlewareError).cause).toBeInstanceOf(TypeError)
    }))
})

describe("Middleware: defects are blamed on the middleware that raised them", () => {
  const precise = () => Middleware.makeEffect<string, string, never>()

  it.effect("a middleware whose Effect dies is a MiddlewareError naming it (not a bare defect)", () =>
    Effect.gen(function*() {
      const chain = precise()
      yield* chain.register({ name: "outer", order: 0, around: (s, next) => next(s) })
      yield* chain.register({ name: "dies", order: 1, around: () => Effect.die({ message: "lost the config" }) })
      const error = defectOf(yield* Effect.exit(chain.apply("x", echo())))
      expect(error).toBeInstanceOf(Middleware.MiddlewareError)
      expect((error as Middleware.MiddlewareError).middleware).toBe("dies")
      expect((error as Middleware.MiddlewareError).message).toBe(`middleware "dies" died: lost the config`)
    }))

  it.effect("a defect of the terminal passes every middleware unblamed and unchanged", () =>
    Effect.gen(function*() {
      const chain = precise()
      const root = new Error("the model crashed")
      yield* chain.register({ name: "a", order: 0, around: (s, next) => Effect.map(next(s), (o) => o + "a") })
      yield* chain.register({ name: "b", order: 1, around: (s, next) => next(s) })
      expect(defectOf(yield* Effect.exit(chain.apply("x", () => Effect.die(root))))).toBe(root)
    }))

  it.effect("an inner middleware's defect is blamed on it, not on the outer one that passed it on", () =>
    Effect.gen(function*() {
      const chain = precise()
      yield* chain.register({ name: "outer", order: 0, around: (s, next) => next(s) })
      yield* chain.register({ name: "inner", order: 1, around: (s, next) => Effect.andThen(next(s), Effect.die("bad state")) })
      const error = defectOf(yield* Effect.exit(chain.apply("x", echo()))) as Middleware.MiddlewareError
      expect(error.middleware).toBe("inner")
      expect(error.message).toBe(`middleware "inner" died: bad state`)
    }))

  it.effect("a middleware inspecting the defects of next sees them as they are", () =>
    Effect.gen(function*() {
      const chain = precise()
      const root = new RangeError("out of range")
      const seen: Array<unknown> = []
      yield* chain.register({
        name: "observer",
        around: (s, next) => Effect.catchDefect(next(s), (defect) => Effect.sync(() => (seen.push(defect), "recovered")))
      })
      expect(yield* chain.apply("x", () => Effect.die(root))).toBe("recovered")
      expect(seen).toStrictEqual([root])
    }))

  it.effect("a throw is still told apart from a defect", () =>
    Effect.gen(function*() {
      const chain = precise()
      yield* chain.register({
        name: "thrower",
        around: () => {
          throw { message: "plain object" }
        }
      })
      const error = defectOf(yield* Effect.exit(chain.apply("x", echo()))) as Middleware.MiddlewareError
      expect(error.message).toBe(`middleware "thrower" threw: plain object`)
    }))

  it.effect("a middleware that returns no Effect (or no Stream) is blamed by name, like one that throws", () =>
    Effect.gen(function*() {
      const chain = precise()
      yield* chain.register({ name: "eager", around: () => 42 as never })
      const error = defectOf(yield* Effect.exit(chain.apply("x", echo()))) as Middleware.MiddlewareError
      expect(error).toBeInstanceOf(Middleware.MiddlewareError)
      expect(error.message).toBe(`middleware "eager" returned 42, not an Effect`)
      const streams = Middleware.makeStream<string, string, never>()
      yield* streams.register({ name: "arrays", around: () => ["a"] as never })
      const streamError = defectOf(yield* Effect.exit(Stream.runCollect(streams.apply("ab", letters)))) as Middleware.MiddlewareError
      expect(streamError.message).toBe(`middleware "arrays" returned ["a"], not a Stream`)
    }))

  it.effect("a Stream chain blames a middleware whose stream dies", () =>
    Effect.gen(function*() {
      const chain = Middleware.makeStream<string, string, never>()
      yield* chain.register({ name: "fine", order: 0, around: (s, next) => next(s) })
      yield* chain.register({
        name: "cuts",
        order: 1,
        around: (s, next) => Stream.concat(next(s), Stream.die(new Error("cut")))
      })
      const error = defectOf(yield* Effect.exit(Stream.runCollect(chain.apply("ab", letters)))) as Middleware.MiddlewareError
      expect(error).toBeInstanceOf(Middleware.MiddlewareError)
      expect(error.middleware).toBe("cuts")
      const root = new Error("adapter bug")
      expect(defectOf(yield* Effect.exit(Stream.runCollect(chain.apply("ab", () => Stream.die(root)))))).toBe(root)
    }))

  it.effect("typed failures pass through untouched", () =>
    Effect.gen(function*() {
      const chain = Middleware.makeEffect<string, string, string>()
      yield* chain.register({ name: "a", around: (s, next) => next(s) })
      const exit = yield* Effect.exit(chain.apply("x", () => Effect.fail("typed")))
      expect(exit).toStrictEqual(Exit.fail("typed"))
    }))
})
