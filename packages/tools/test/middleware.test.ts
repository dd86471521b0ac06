import { Content, Ids } from "@dsh/llm"
import { Tool, ToolMiddleware, ToolRegistry, ToolResult, Tools } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Schema, Scope } from "effect"
import { bash, call, registryWith } from "./fixtures.ts"

const failed = (text: string, tag: string, code: string, id = "call-1"): Content.ToolResultBlock => ({
  type: "tool-result",
  toolCallId: Ids.callId(id),
  content: [{ type: "text", text }],
  isError: true,
  error: { tag, code }
})

const ls = call("bash", { command: "ls", mode: "read" })

/** A middleware recording when it sees the call and the result. */
const tracing = (log: Array<string>, name: string, order?: number): ToolMiddleware.ToolMiddleware => ({
  name,
  ...(order === undefined ? {} : { order }),
  around: (c, next) =>
    Effect.suspend(() => {
      log.push(`${name}>${c.name}`)
      return next(c).pipe(Effect.tap((r) => Effect.sync(() => log.push(`<${name}:${r.error?.code ?? "ok"}`))))
    })
})

describe("execution middleware", () => {
  it.effect("runs ordered around the call, lower order outside; closing the scope removes it", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const log: Array<string> = []
      const inner = tracing(log, "inner", 5)
      const outer = tracing(log, "outer", -5)
      const scope = yield* Scope.make()
      yield* registry.use(inner)
      yield* registry.use(outer).pipe(Scope.provide(scope))
      expect(yield* registry.middleware).toStrictEqual([outer, inner])

      expect(ToolResult.textOf(yield* registry.execute(ls))).toBe("read: ls")
      expect(log).toStrictEqual(["outer>bash", "inner>bash", "<inner:ok", "<outer:ok"])

      yield* Scope.close(scope, Exit.void)
      expect(yield* registry.middleware).toStrictEqual([inner])
      log.length = 0
      yield* registry.execute(ls)
      expect(log).toStrictEqual(["inner>bash", "<inner:ok"])
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("sees unknown tools and invalid arguments as results like any other", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const registry = yield* ToolRegistry
      yield* registry.use(tracing(log, "audit"))
      yield* registry.execute(call("nope", {}))
      yield* registry.execute(call("bash", "{"))
      expect(log).toStrictEqual(["audit>nope", "<audit:UNKNOWN_TOOL", "audit>bash", "<audit:INVALID_ARGS"])
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("rewrites the raw arguments before they are decoded", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.use({
        name: "exec-means-write",
        around: (c, next) => next({ ...c, arguments: c.arguments.replace(`"exec"`, `"write"`) })
      })
      expect(ToolResult.textOf(yield* registry.execute(call("bash", { command: "make", mode: "exec" })))).toBe("write: make")
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("mapArguments rewrites parsed arguments and leaves text that is not JSON to the decoder", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.use(
        ToolMiddleware.mapArguments("default-mode", (args) =>
          typeof args === "object" && args !== null && !Array.isArray(args) && !("mode" in args)
            ? { ...args, mode: "read" }
            : args)
      )
      expect(ToolResult.textOf(yield* registry.execute(call("bash", { command: "cat x" })))).toBe("read: cat x")
      expect(ToolResult.textOf(yield* registry.execute(call("bash", { command: "rm x", mode: "write" })))).toBe("write: rm x")
      // an empty string is {} to the middleware too
      expect(ToolResult.textOf(yield* registry.execute(call("bash", "")))).toBe(
        `Invalid arguments for tool "bash" (1 problem):\n- at command: Missing key, expected a string`
      )
      expect(ToolResult.textOf(yield* registry.execute(call("bash", "cat x")))).toBe(
        [
          `Invalid arguments for tool "bash": the arguments are not valid JSON: expected a JSON value, found 'c' at line 1, column 1:`,
          `cat x`,
          `^`
        ].join("\n")
      )
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("a veto answers TOOL_DENIED without running the tool or the middleware inside it", () =>
    Effect.gen(function*() {
      let runs = 0
      const rm = Tool.make("rm", {
        description: "Remove a file",
        parameters: Schema.Struct({ path: Schema.String }),
        execute: () => Effect.sync(() => ++runs).pipe(Effect.as("removed"))
      })
      const log: Array<string> = []
      const registry = yield* ToolRegistry
      yield* registry.register(rm)
      yield* registry.use(tracing(log, "outer", -1))
      yield* registry.use(ToolMiddleware.denyWhen("read-only", (c) => (c.name === "rm" ? "the session is read-only" : undefined)))
      yield* registry.use(tracing(log, "inner", 1))

      expect(yield* registry.execute(call("rm", { path: "/etc/passwd" }))).toStrictEqual(
        failed(`Tool "rm" was denied: the session is read-only`, "ToolDeniedError", "TOOL_DENIED")
      )
      expect(runs).toBe(0)
      expect(log).toStrictEqual(["outer>rm", "<outer:TOOL_DENIED"])
      expect((yield* registry.execute(ls)).isError).toBe(false)
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("deny inside a hand-written middleware", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.use({
        name: "no-writes",
        around: (c, next) => (c.arguments.includes(`"write"`) ? ToolMiddleware.deny(c, "writes need approval") : next(c))
      })
      expect(yield* registry.execute(call("bash", { command: "rm -rf /", mode: "write" }))).toStrictEqual(
        failed(`Tool "bash" was denied: writes need approval`, "ToolDeniedError", "TOOL_DENIED")
      )
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("answers without calling next (a cache) and wraps next's result", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const cache = new Map<string, Content.ToolResultBlock>()
      yield* registry.use({
        name: "cache",
        around: (c, next) => {
          const key = `${c.name} ${c.arguments}`
          const hit = cache.get(key)
          return hit !== undefined
            ? Effect.succeed(hit)
            : Effect.tap(next(c), (r) => Effect.sync(() => void cache.set(key, r)))
        }
      })
      yield* registry.use({
        name: "stamp",
        order: 1,
        around: (c, next) =>
          Effect.map(next(c), (r) => ({ ...r, content: [...r.content, Content.text(`(ran ${c.id})`)] }))
      })
      const first = yield* registry.execute(call("bash", { command: "ls", mode: "read" }, "a"))
      const second = yield* registry.execute(call("bash", { command: "ls", mode: "read" }, "b"))
      expect(ToolResult.textOf(first)).toBe("read: ls\n(ran a)")
      // the cached result answers the second call, under the second call's id
      expect(ToolResult.textOf(second)).toBe("read: ls\n(ran a)")
      expect(second.toolCallId).toBe("b")
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("whatever the chain answers carries the original call's id", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.use({ name: "renumber", around: (c, next) => next({ ...c, id: Ids.callId("other") }) })
      const result = yield* registry.execute(call("bash", { command: "ls", mode: "read" }, "mine"))
      expect(result.toolCallId).toBe("mine")
      expect(ToolResult.textOf(result)).toBe("read: ls")
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("may route a call to another tool", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.use({ name: "alias", around: (c, next) => next(c.name === "sh" ? { ...c, name: "bash" } : c) })
      expect(ToolResult.textOf(yield* registry.execute(call("sh", { command: "pwd", mode: "read" })))).toBe("read: pwd")
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("Tools.middleware registers middleware for the Layer's lifetime", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      expect((yield* registry.middleware).map((m) => m.name)).toStrictEqual(["read-only"])
      expect((yield* registry.execute(ls)).error?.code).toBe("TOOL_DENIED")
    }).pipe(
      Effect.provide(
        Tools.middleware(ToolMiddleware.denyWhen("read-only", () => "read-only")).pipe(Layer.provideMerge(registryWith(bash)))
      )
    ))
})

describe("a failing middleware is contained like a failing tool", () => {
  const blamed = (middleware: string, what: string) =>
    failed(`Middleware "${middleware}" failed while handling a call to tool "bash": ${what}`, "MiddlewareError", "MIDDLEWARE")

  it.effect("a throw before next: MIDDLEWARE naming it; nothing inside runs", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const registry = yield* ToolRegistry
      yield* registry.use(tracing(log, "outer", -1))
      yield* registry.use({
        name: "broken",
        around: () => {
          throw new TypeError("cannot read properties of undefined")
        }
      })
      yield* registry.use(tracing(log, "inner", 1))
      expect(yield* registry.execute(ls)).toStrictEqual(blamed("broken", "TypeError: cannot read properties of undefined"))
      // the outer middleware got an answer, not a defect
      expect(log).toStrictEqual(["outer>bash", "<outer:MIDDLEWARE"])
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("an answer that is no Effect (a Promise, a plain value): MIDDLEWARE naming it and what it returned", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const scope = yield* Scope.make()
      yield* registry.use({ name: "promising", around: () => Promise.resolve("later") as never }).pipe(Scope.provide(scope))
      const notAnEffect = (middleware: string, what: string) =>
        failed(`Middleware "${middleware}" answered a call to tool "bash" with something that is not an Effect: ${what}`, "MiddlewareError", "MIDDLEWARE")
      expect(yield* registry.execute(ls)).toStrictEqual(notAnEffect("promising", "{}"))
      yield* Scope.close(scope, Exit.void)
      yield* registry.use({ name: "plain", around: () => 42 as never })
      expect(yield* registry.execute(ls)).toStrictEqual(notAnEffect("plain", "42"))
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("a defect or a failure of its output, even after next ran", () =>
    Effect.gen(function*() {
      let runs = 0
      const counted = Tool.make("bash", {
        description: "x",
        parameters: Schema.Struct({}),
        execute: () => Effect.sync(() => ++runs).pipe(Effect.as("ran"))
      })
      const registry = yield* ToolRegistry
      yield* registry.register(counted)
      const scope = yield* Scope.make()
      yield* registry.use({ name: "dies", around: () => Effect.die(new Error("audit log unreachable")) }).pipe(
        Scope.provide(scope)
      )
      expect(yield* registry.execute(call("bash", ""))).toStrictEqual(blamed("dies", "audit log unreachable"))
      yield* Scope.close(scope, Exit.void)

      yield* registry.use({
        name: "post",
        around: (c, next) =>
          Effect.flatMap(next(c), () => Effect.fail("typed failures do not fit the seam" as never))
      })
      expect(yield* registry.execute(call("bash", ""))).toStrictEqual(blamed("post", "typed failures do not fit the seam"))
      expect(runs).toBe(1)
    }).pipe(Effect.provide(ToolRegistry.layer)))

  it.effect("an inner middleware's failure is not blamed on the one wrapping it", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const seen: Array<Content.ToolResultBlock> = []
      yield* registry.use({
        name: "outer",
        order: 0,
        around: (c, next) => Effect.tap(next(c), (r) => Effect.sync(() => void seen.push(r)))
      })
      yield* registry.use({
        name: "inner",
        order: 1,
        around: (c, next) => Effect.flatMap(next(c), () => Effect.die("inner broke"))
      })
      const result = yield* registry.execute(ls)
      expect(result).toStrictEqual(blamed("inner", "inner broke"))
      expect(seen).toStrictEqual([result])
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("a middleware interrupting itself: ABORTED naming it", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.use({ name: "quitter", around: () => Effect.interrupt })
      expect(yield* registry.execute(ls)).toStrictEqual(
        failed(`Tool "bash" was interrupted by middleware "quitter" before it finished`, "AbortedError", "ABORTED")
      )
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("a failure that is a plain object, or shaped like a harness error with a code outside the catalog", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const scope = yield* Scope.make()
      yield* registry.use({ name: "quota", around: () => Effect.fail({ message: "quota" } as never) }).pipe(Scope.provide(scope))
      expect(yield* registry.execute(ls)).toStrictEqual(blamed("quota", "quota"))
      yield* Scope.close(scope, Exit.void)

      yield* registry.use({
        name: "impostor",
        around: () => Effect.fail({ _tag: "Nope", code: "MY_CODE", message: "not today" } as never)
      })
      expect(yield* registry.execute(ls)).toStrictEqual(
        blamed("impostor", "not today (code MY_CODE is not a dsh error code)")
      )
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("an answer carrying a code outside the catalog is MIDDLEWARE, naming the middleware that gave it", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const seen: Array<string | undefined> = []
      yield* registry.use({
        name: "outer",
        order: 0,
        around: (c, next) => Effect.tap(next(c), (r) => Effect.sync(() => void seen.push(r.error?.code)))
      })
      yield* registry.use({
        name: "home-made",
        order: 1,
        around: (c) =>
          Effect.succeed({
            type: "tool-result",
            toolCallId: c.id,
            content: [Content.text("no")],
            isError: true,
            error: { tag: "Mine", code: "MY_CODE" }
          })
      })
      expect(yield* registry.execute(ls)).toStrictEqual(
        failed(
          `Middleware "home-made" answered a call to tool "bash" with the code MY_CODE, which is not a dsh error code: no`,
          "MiddlewareError",
          "MIDDLEWARE"
        )
      )
      // the middleware outside it saw the corrected answer
      expect(seen).toStrictEqual(["MIDDLEWARE"])
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("an answer that is not a tool result is MIDDLEWARE, not a dead execute", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.use({ name: "forgetful", around: () => Effect.succeed(undefined as unknown as Content.ToolResultBlock) })
      expect(yield* registry.execute(ls)).toStrictEqual(
        failed(
          `Middleware "forgetful" answered a call to tool "bash" with something that is not a tool result: undefined`,
          "MiddlewareError",
          "MIDDLEWARE"
        )
      )
    }).pipe(Effect.provide(registryWith(bash))))
})

describe("mapArguments on hostile arguments", () => {
  const passThrough = ToolMiddleware.mapArguments("identity", (args) => args)

  it.effect("arguments too deep to stringify are passed on unchanged, so decoding reports them", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.use(passThrough)
      for (const levels of [10_000, 100_000]) {
        const result = yield* registry.execute(call("bash", `{"a":`.repeat(levels) + "1" + "}".repeat(levels)))
        expect(result.error).toStrictEqual({ tag: "ToolArgsError", code: "INVALID_ARGS" })
        expect(ToolResult.textOf(result)).toContain("Nested too deeply")
      }
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("a rewrite that returns no JSON is the middleware's failure, not the tool's", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.use(ToolMiddleware.mapArguments("forgets-to-return", () => undefined as unknown as Schema.Json))
      expect(yield* registry.execute(ls)).toStrictEqual(
        failed(
          `Middleware "forgets-to-return" failed while handling a call to tool "bash": mapArguments: the rewrite returned undefined, which is not JSON`,
          "MiddlewareError",
          "MIDDLEWARE"
        )
      )
    }).pipe(Effect.provide(registryWith(bash))))
})
