import { Content, type HarnessError, LlmError } from "@dsh/llm"
import { Tool, ToolErrors, ToolMiddleware, ToolRegistry, ToolResult, Tools } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Result, Schema, Scope, Tracer } from "effect"
import { TestClock } from "effect/testing"
import { bash, call, Files, readFile, registryWith } from "./fixtures.ts"

const simple = (
  name: string,
  execute: () => Effect.Effect<Tool.Output, HarnessError.HarnessError>,
  options: Partial<Tool.CommonOptions> = {}
) =>
  Tool.make(name, { description: `the ${name} tool`, parameters: Schema.Struct({}), ...options, execute })

const failed = (id: string, text: string, tag: string, code: string): Content.ToolResultBlock => ({
  type: "tool-result",
  toolCallId: id as Content.ToolResultBlock["toolCallId"],
  content: [{ type: "text", text }],
  isError: true,
  error: { tag, code }
})

const execute = (c: Content.ToolCallBlock) => ToolRegistry.use((registry) => registry.execute(c))

describe("ToolRegistry: registration", () => {
  it.effect("registers tools, lists their schemas in registration order, looks them up", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      expect(yield* registry.names).toStrictEqual(["bash", "read_file"])
      const schemas = yield* registry.schemas()
      expect(schemas.map((s) => s.name)).toStrictEqual(["bash", "read_file"])
      expect(schemas).toStrictEqual([Result.getOrThrow(Tool.wireSchema(bash)), Result.getOrThrow(Tool.wireSchema(readFile))])
      const strict = yield* registry.schemas({ strict: true })
      expect(strict).toStrictEqual([
        Result.getOrThrow(Tool.wireSchema(bash, { strict: true })),
        Result.getOrThrow(Tool.wireSchema(readFile, { strict: true }))
      ])
      // strict mode wants every property required: bash has optional keys, read_file none
      expect(strict.map((s) => s.strict)).toStrictEqual([undefined, true])
      expect(yield* registry.lookup("bash")).toStrictEqual(Option.some(bash))
      expect(yield* registry.lookup("nope")).toStrictEqual(Option.none())
    }).pipe(Effect.provide(registryWith(bash, readFile).pipe(Layer.provide(Files.layer({}))))))

  it.effect("closing the registering scope unregisters; the name can be taken again", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const scope = yield* Scope.make()
      const echo = simple("echo", () => Effect.succeed("first"))
      yield* registry.register(echo).pipe(Scope.provide(scope))
      yield* registry.register(simple("later", () => Effect.succeed("")))
      expect(yield* registry.names).toStrictEqual(["bash", "echo", "later"])
      expect(ToolResult.textOf(yield* registry.execute(call("echo", "")))).toBe("first")

      yield* Scope.close(scope, Exit.void)
      expect(yield* registry.names).toStrictEqual(["bash", "later"])
      expect(yield* registry.lookup("echo")).toStrictEqual(Option.none())
      expect((yield* registry.execute(call("echo", ""))).error?.code).toBe("UNKNOWN_TOOL")

      // re-registered, it is listed last
      yield* registry.register(simple("echo", () => Effect.succeed("second")))
      expect(yield* registry.names).toStrictEqual(["bash", "later", "echo"])
      expect(ToolResult.textOf(yield* registry.execute(call("echo", "")))).toBe("second")
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("a duplicate name is a DuplicateToolError, and the first registration stays", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const error = yield* Effect.flip(registry.register(simple("bash", () => Effect.succeed("impostor"))))
      expect(error).toBeInstanceOf(ToolErrors.DuplicateToolError)
      expect(error.code).toBe("DUPLICATE_TOOL")
      expect(error.message).toBe(`Tool "bash" is already registered; tool names must be unique`)
      expect(yield* registry.lookup("bash")).toStrictEqual(Option.some(bash))
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("an invalid tool is refused at registration with InvalidToolError", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const error = yield* Effect.flip(registry.register(simple("read file", () => Effect.succeed(""))))
      expect(error).toBeInstanceOf(ToolErrors.InvalidToolError)
      expect(error.code).toBe("INVALID_TOOL")
      expect(yield* registry.names).toStrictEqual([])
    }).pipe(Effect.provide(ToolRegistry.layer)))

  it.effect("a definition past the types (no tool, parameters no Schema, a bad excessKeys or description) is INVALID_TOOL, never a defect", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const execute = () => Effect.succeed("")
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ name: "x" }, "it is not a tool made with Tool.make or Tool.fromJsonSchema"],
        [null, "it is not a tool"],
        [Tool.make("t", { description: "d", parameters: undefined as never, execute }), "its parameters must be a Schema.Struct, got undefined"],
        [Tool.make("t", { description: "d", parameters: { a: 1 } as never, execute }), "its parameters must be a Schema.Struct"],
        [Tool.make("t", { description: "d", parameters: Schema.Struct({}), excessKeys: "bogus" as never, execute }), `its excessKeys must be "reject" or "ignore", got bogus`],
        [Tool.make("t", { description: 5 as never, parameters: Schema.Struct({}), execute }), "its description must be text, got 5"],
        [Tool.make(7 as never, { description: "d", parameters: Schema.Struct({}), execute }), "its name must be text, got 7"],
        [Tool.make("t", { description: "d", parameters: Schema.Struct({}), execute: "run" as never }), "its execute must be a function"],
        [Tool.fromJsonSchema("t", { description: "d", parameters: [] as never, execute }), "its parameters must be a JSON Schema object"]
      ]
      for (const [tool, says] of cases) {
        const error = yield* Effect.flip(registry.register(tool as Tool.Any))
        expect(error).toBeInstanceOf(ToolErrors.InvalidToolError)
        expect(error.code).toBe("INVALID_TOOL")
        expect((error as ToolErrors.InvalidToolError).reason).toBe("definition")
        expect(error.message).toContain(says)
      }
      expect(yield* registry.names).toStrictEqual([])
    }).pipe(Effect.provide(ToolRegistry.layer)))

  it.effect("registering into a closed scope is an InvalidToolError, not a silent no-op", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const scope = yield* Scope.make()
      yield* Scope.close(scope, Exit.void)
      const echo = simple("echo", () => Effect.succeed(""))
      const error = yield* Effect.flip(registry.register(echo).pipe(Scope.provide(scope)))
      expect(error).toBeInstanceOf(ToolErrors.InvalidToolError)
      expect(error.code).toBe("INVALID_TOOL")
      expect(error).toMatchObject({ tool: "echo", reason: "scope" })
      expect(error.message).toContain("the registering scope is closed")
      // A Layer built into a closed scope registers through the same path.
      const built = yield* Effect.exit(
        Layer.buildWithScope(Tools.layer(echo), scope).pipe(Effect.provideService(ToolRegistry, registry))
      )
      expect(built).toStrictEqual(Exit.fail(error))
      expect(yield* registry.names).toStrictEqual([])
      // The name was never taken: an open scope registers it.
      yield* registry.register(echo)
      expect(yield* registry.names).toStrictEqual(["echo"])
    }).pipe(Effect.provide(ToolRegistry.layer)))

  it.effect("Tools.layer registers all or nothing", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const scope = yield* Scope.make()
      const built = yield* Effect.exit(
        Layer.buildWithScope(Tools.layer(simple("a", () => Effect.succeed("")), bash, simple("bash", () => Effect.succeed(""))), scope)
          .pipe(Effect.provideService(ToolRegistry, registry))
      )
      expect(Exit.isFailure(built)).toBe(true)
      expect(yield* registry.names).toStrictEqual([])
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(ToolRegistry.layer)))
})

describe("ToolRegistry.execute", () => {
  it.effect("success: text becomes a text block, the result answers the call's id", () =>
    Effect.gen(function*() {
      const result = yield* execute(call("bash", { command: "ls", mode: "read" }, "call-42"))
      expect(result).toStrictEqual({
        type: "tool-result",
        toolCallId: "call-42",
        content: [{ type: "text", text: "read: ls" }],
        isError: false
      })
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("success: content blocks are passed as they are", () =>
    Effect.gen(function*() {
      const blocks = [Content.text("a chart:"), Content.image("image/png", "iVBOR")]
      const result = yield* execute(call("chart", ""))
      expect(result).toStrictEqual({ type: "tool-result", toolCallId: "call-1", content: blocks, isError: false })
    }).pipe(Effect.provide(registryWith(simple("chart", () => Effect.succeed([Content.text("a chart:"), Content.image("image/png", "iVBOR")]))))))

  it.effect("the tool's services come from where it was registered", () =>
    Effect.gen(function*() {
      const result = yield* execute(call("read_file", { path: "/etc/motd" }))
      expect(result.isError).toBe(false)
      expect(ToolResult.textOf(result)).toBe("welcome")
    }).pipe(Effect.provide(registryWith(readFile).pipe(Layer.provide(Files.layer({ "/etc/motd": "welcome" }))))))

  it.effect("each call runs in its own scope, closed when the call ends (also on a timeout)", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const registry = yield* ToolRegistry
      const resource = (name: string) =>
        Effect.acquireRelease(
          Effect.sync(() => log.push(`open ${name}`)),
          () => Effect.sync(() => void log.push(`close ${name}`))
        )
      yield* registry.register(
        Tool.make("uses", {
          description: "x",
          parameters: Schema.Struct({ name: Schema.String }),
          execute: ({ name }) => Effect.as(resource(name), `used ${name}`)
        })
      )
      yield* registry.register(
        Tool.make("hangs", {
          description: "x",
          parameters: Schema.Struct({}),
          timeout: "1 second",
          execute: () => Effect.andThen(resource("h"), Effect.never)
        })
      )
      expect(ToolResult.textOf(yield* registry.execute(call("uses", { name: "a" })))).toBe("used a")
      expect(log).toStrictEqual(["open a", "close a"])
      yield* registry.execute(call("uses", { name: "b" }))
      expect(log).toStrictEqual(["open a", "close a", "open b", "close b"])

      log.length = 0
      const fiber = yield* Effect.forkChild(registry.execute(call("hangs", "")))
      yield* TestClock.adjust("1 second")
      expect((yield* Fiber.join(fiber)).error?.code).toBe("TOOL_TIMEOUT")
      expect(log).toStrictEqual(["open h", "close h"])
    }).pipe(Effect.provide(ToolRegistry.layer)))

  it.effect("unknown tool: UNKNOWN_TOOL naming the tools that exist (and the likely one)", () =>
    Effect.gen(function*() {
      expect(yield* execute(call("bsh", { command: "ls" }))).toStrictEqual(
        failed("call-1", `Unknown tool "bsh", did you mean "bash"? Available tools: bash, read_file`, "UnknownToolError", "UNKNOWN_TOOL")
      )
      expect(yield* execute(call("write_file", {}))).toStrictEqual(
        failed("call-1", `Unknown tool "write_file". Available tools: bash, read_file`, "UnknownToolError", "UNKNOWN_TOOL")
      )
    }).pipe(Effect.provide(registryWith(bash, readFile).pipe(Layer.provide(Files.layer({}))))))

  it.effect("a value that is no tool call (past the types) is answered TOOL_FAILED, never a defect", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const cases: ReadonlyArray<readonly [unknown, string, string]> = [
        [null, "", "it must be a tool-call block, got null"],
        [{ type: "tool-call", id: "c1", name: 5, arguments: "{}" }, "c1", "its name must be text, got 5"],
        [{ type: "tool-call", name: "bash", arguments: "{}" }, "", "its id must be text, got undefined"],
        [{ type: "tool-call", id: "c2", name: "bash", arguments: { command: "ls" } }, "c2", `its arguments must be JSON text, got {"command":"ls"}`]
      ]
      for (const [value, id, says] of cases) {
        const result = yield* registry.execute(value as Content.ToolCallBlock)
        expect(result.toolCallId).toBe(id)
        expect(result.isError).toBe(true)
        expect(result.error?.code).toBe("TOOL_FAILED")
        expect(ToolResult.textOf(result)).toBe(`The call was not run: ${says}`)
      }
    }).pipe(Effect.provide(registryWith(bash))))

  it.effect("unknown tool with nothing registered", () =>
    Effect.gen(function*() {
      expect(yield* execute(call("bash", {}))).toStrictEqual(
        failed("call-1", `Unknown tool "bash": no tools are available`, "UnknownToolError", "UNKNOWN_TOOL")
      )
    }).pipe(Effect.provide(ToolRegistry.layer)))

  it.effect("invalid arguments: INVALID_ARGS with every violation, and the body does not run", () =>
    Effect.gen(function*() {
      let runs = 0
      const counted = Tool.make("bash", {
        description: "x",
        parameters: Schema.Struct({ command: Schema.String, mode: Schema.Literals(["read", "write"]) }),
        execute: () => Effect.sync(() => ++runs).pipe(Effect.as("ran"))
      })
      const registry = yield* ToolRegistry
      yield* registry.register(counted)
      expect(yield* registry.execute(call("bash", { command: 1, mode: "exec" }))).toStrictEqual(
        failed(
          "call-1",
          [
            `Invalid arguments for tool "bash" (2 problems):`,
            `- at command: Expected string, got 1`,
            `- at mode: Expected "read" | "write", got "exec"`
          ].join("\n"),
          "ToolArgsError",
          "INVALID_ARGS"
        )
      )
      expect(yield* registry.execute(call("bash", `{"command": "ls"`))).toStrictEqual(
        failed(
          "call-1",
          [
            `Invalid arguments for tool "bash": the arguments are not valid JSON: expected ',' or '}', found the end of the input at line 1, column 17:`,
            `{"command": "ls"`,
            `                ^`
          ].join("\n"),
          "ToolArgsError",
          "INVALID_ARGS"
        )
      )
      expect(runs).toBe(0)
    }).pipe(Effect.provide(ToolRegistry.layer)))

  it.effect("a typed failure of the body: its own tag, code and message", () =>
    Effect.gen(function*() {
      expect(yield* execute(call("read_file", { path: "/nope" }))).toStrictEqual(
        failed("call-1", "No such file: /nope", "FileMissing", "TOOL_FAILED")
      )
      expect(yield* execute(call("summarize", ""))).toStrictEqual(
        failed("call-1", "slow down", "LlmRateLimitError", "LLM_RATE_LIMIT")
      )
    }).pipe(
      Effect.provide(
        registryWith(
          readFile,
          simple("summarize", () => Effect.fail(new LlmError.LlmRateLimitError({ message: "slow down", retryAfterMillis: 500 })))
        ).pipe(Layer.provide(Files.layer({})))
      )
    ))

  it.effect("a defect of the body: TOOL_FAILED with the message and no stack trace", () =>
    Effect.gen(function*() {
      const died = yield* execute(call("dies", ""))
      expect(died).toStrictEqual(failed("call-1", `Tool "dies" failed: TypeError: x.map is not a function`, "ToolFailedError", "TOOL_FAILED"))
      expect(ToolResult.textOf(died)).not.toContain("    at ")
      expect(yield* execute(call("throws", ""))).toStrictEqual(
        failed("call-1", `Tool "throws" failed: disk on fire`, "ToolFailedError", "TOOL_FAILED")
      )
      expect(yield* execute(call("throwsEarly", ""))).toStrictEqual(
        failed("call-1", `Tool "throwsEarly" failed: RangeError: before any Effect`, "ToolFailedError", "TOOL_FAILED")
      )
      expect(yield* execute(call("throwsString", ""))).toStrictEqual(
        failed("call-1", `Tool "throwsString" failed: just a string`, "ToolFailedError", "TOOL_FAILED")
      )
      expect(yield* execute(call("throwsObject", ""))).toStrictEqual(
        failed("call-1", `Tool "throwsObject" failed: {"errno":-2}`, "ToolFailedError", "TOOL_FAILED")
      )
    }).pipe(
      Effect.provide(
        registryWith(
          simple("dies", () => Effect.die(new TypeError("x.map is not a function"))),
          simple("throws", () =>
            Effect.gen(function*() {
              yield* Effect.void
              throw new Error("disk on fire")
            })),
          simple("throwsEarly", () => {
            throw new RangeError("before any Effect")
          }),
          simple("throwsString", () => Effect.die("just a string")),
          simple("throwsObject", () => Effect.die({ errno: -2 }))
        )
      )
    ))

  it.effect("a parameter Schema whose check throws is the tool's defect, not the middleware's", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.register(
        Tool.make("fragile", {
          description: "x",
          parameters: Schema.Struct({
            a: Schema.String.check(Schema.makeFilter(() => {
              throw new Error("check exploded")
            }))
          }),
          execute: () => Effect.succeed("unreachable")
        })
      )
      yield* registry.use({ name: "innocent", around: (c, next) => next(c) })
      expect(yield* registry.execute(call("fragile", { a: "x" }))).toStrictEqual(
        failed("call-1", `Tool "fragile" failed: check exploded`, "ToolFailedError", "TOOL_FAILED")
      )
    }).pipe(Effect.provide(ToolRegistry.layer)))

  it.effect("a failure that is not a harness error (only through a cast) is still contained", () =>
    Effect.gen(function*() {
      expect(yield* execute(call("liar", ""))).toStrictEqual(
        failed("call-1", `Tool "liar" failed: {"oops":true}`, "ToolFailedError", "TOOL_FAILED")
      )
      expect(yield* execute(call("weird", ""))).toStrictEqual(
        failed("call-1", `Tool "weird" failed: it returned neither text nor content blocks`, "ToolFailedError", "TOOL_FAILED")
      )
      expect(yield* execute(call("plain", ""))).toStrictEqual(
        failed(
          "call-1",
          `Tool "plain" failed: its execute returned plain string, not an Effect (wrap a value in Effect.succeed)`,
          "ToolFailedError",
          "TOOL_FAILED"
        )
      )
      // an `async` execute: said to be a Promise, not described as the `{}` it looks like
      expect(yield* execute(call("async", ""))).toStrictEqual(
        failed(
          "call-1",
          `Tool "async" failed: its execute returned a Promise, not an Effect (wrap a Promise in Effect.tryPromise, or write execute with Effect.gen)`,
          "ToolFailedError",
          "TOOL_FAILED"
        )
      )
    }).pipe(
      Effect.provide(
        registryWith(
          simple("liar", () => Effect.fail({ oops: true } as unknown as ToolErrors.ToolFailedError)),
          simple("weird", () => Effect.succeed(42 as unknown as string)),
          simple("plain", () => "plain string" as unknown as Effect.Effect<string>),
          simple("async", (async () => "later") as unknown as () => Effect.Effect<string>)
        )
      )
    ))

  it.effect("a timeout: TOOL_TIMEOUT, and the body is interrupted", () =>
    Effect.gen(function*() {
      let interrupted = false
      const slow = simple(
        "slow",
        () => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true)))),
        { timeout: "5 seconds" }
      )
      const quick = simple("quick", () => Effect.as(Effect.sleep("4 seconds"), "in time"), { timeout: "5 seconds" })
      const registry = yield* ToolRegistry
      yield* registry.register(slow)
      yield* registry.register(quick)

      const slowFiber = yield* Effect.forkChild(registry.execute(call("slow", "", "call-s")))
      const quickFiber = yield* Effect.forkChild(registry.execute(call("quick", "", "call-q")))
      yield* TestClock.adjust("4 seconds")
      expect(ToolResult.textOf(yield* Fiber.join(quickFiber))).toBe("in time")
      expect(interrupted).toBe(false)
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(slowFiber)).toStrictEqual(
        failed("call-s", `Tool "slow" timed out after 5s and was stopped`, "ToolTimeoutError", "TOOL_TIMEOUT")
      )
      expect(interrupted).toBe(true)
    }).pipe(Effect.provide(ToolRegistry.layer)))

  it.effect("a timed-out body that cannot be stopped (uninterruptible, a finalizer that hangs) is left running: the call still answers TOOL_TIMEOUT", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      let finished = false
      const stubborn = simple(
        "stubborn",
        () => Effect.uninterruptible(Effect.as(Deferred.await(release), "late")).pipe(Effect.ensuring(Effect.sync(() => void (finished = true)))),
        { timeout: "2 seconds" }
      )
      let cleaned = false
      const slowCleanup = simple(
        "cleanup",
        () => Effect.never.pipe(Effect.onInterrupt(() => Effect.andThen(Effect.sleep("1 second"), Effect.sync(() => void (cleaned = true))))),
        { timeout: "2 seconds" }
      )
      const registry = yield* ToolRegistry
      yield* registry.register(stubborn)
      yield* registry.register(slowCleanup)
      const stubbornCall = yield* Effect.forkChild(registry.execute(call("stubborn", "", "call-u")))
      const cleanupCall = yield* Effect.forkChild(registry.execute(call("cleanup", "", "call-c")))
      // the timeout, then as long again for the body to stop
      yield* TestClock.adjust("2 seconds")
      // the finalizer that takes a second is waited for: the call answers once it is done
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(cleanupCall)).toStrictEqual(
        failed("call-c", `Tool "cleanup" timed out after 2s and was stopped`, "ToolTimeoutError", "TOOL_TIMEOUT")
      )
      expect(cleaned).toBe(true)
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(stubbornCall)).toStrictEqual(
        failed(
          "call-u",
          `Tool "stubborn" timed out after 2s and did not stop within 2s of being interrupted; it was left to finish on its own, and its result will be dropped`,
          "ToolTimeoutError",
          "TOOL_TIMEOUT"
        )
      )
      // still running, detached; it ends when it can, and its result goes nowhere
      expect(finished).toBe(false)
      yield* Deferred.succeed(release, undefined)
      yield* Effect.yieldNow
      expect(finished).toBe(true)
    }).pipe(Effect.provide(ToolRegistry.layer)))

  it.effect("an interruption inside the body: ABORTED", () =>
    Effect.gen(function*() {
      expect(yield* execute(call("quitter", ""))).toStrictEqual(
        failed("call-1", `Tool "quitter" was interrupted before it finished`, "AbortedError", "ABORTED")
      )
      // a body joining a worker that was interrupted
      expect(yield* execute(call("orphan", ""))).toStrictEqual(
        failed("call-1", `Tool "orphan" was interrupted before it finished`, "AbortedError", "ABORTED")
      )
    }).pipe(
      Effect.provide(
        registryWith(
          simple("quitter", () => Effect.interrupt),
          simple("orphan", () =>
            Effect.gen(function*() {
              const worker = yield* Effect.forkChild(Effect.never)
              yield* Fiber.interrupt(worker)
              return yield* Fiber.join(worker)
            }))
        )
      )
    ))

  it.effect("interrupting execute interrupts the body; ToolResult.aborted answers the call", () =>
    Effect.gen(function*() {
      let released = false
      const registry = yield* ToolRegistry
      yield* registry.register(
        simple("hang", () => Effect.never.pipe(Effect.ensuring(Effect.sync(() => void (released = true)))))
      )
      const hanging = call("hang", "", "call-h")
      const fiber = yield* Effect.forkChild(registry.execute(hanging))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.hasInterrupts(exit)).toBe(true)
      expect(released).toBe(true)
      expect(ToolResult.aborted(hanging)).toStrictEqual(
        failed("call-h", `Tool "hang" was aborted before it finished`, "AbortedError", "ABORTED")
      )
      expect(ToolResult.aborted(hanging, "the user pressed Esc")).toStrictEqual(
        failed("call-h", `Tool "hang" was aborted before it finished: the user pressed Esc`, "AbortedError", "ABORTED")
      )
    }).pipe(Effect.provide(ToolRegistry.layer)))

  it.effect("runs in a Tool.execute span with the tool, the call id and the error code; the body runs inside it", () => {
    const spans: Array<Tracer.NativeSpan> = []
    const tracer = Tracer.make({
      span(options) {
        const span = new Tracer.NativeSpan(options)
        spans.push(span)
        return span
      }
    })
    let bodySpan: Tracer.Span | undefined
    const traced = simple("traced", () =>
      Effect.gen(function*() {
        bodySpan = yield* Effect.orDie(Effect.currentSpan)
        return "ok"
      }))
    return Effect.gen(function*() {
      yield* execute(call("traced", "", "call-t"))
      yield* execute(call("missing", "", "call-m"))
      const toolSpans = spans.filter((s) => s.name === "Tool.execute")
      expect(toolSpans.map((s) => Object.fromEntries(s.attributes))).toStrictEqual([
        { "dsh.tool": "traced", "dsh.tool.call_id": "call-t" },
        { "dsh.tool": "missing", "dsh.tool.call_id": "call-m", "dsh.tool.error_code": "UNKNOWN_TOOL" }
      ])
      expect(bodySpan).toBe(toolSpans[0])
      expect(toolSpans.every((s) => s.status._tag === "Ended")).toBe(true)
    }).pipe(Effect.provide(registryWith(traced)), Effect.withTracer(tracer))
  })
})

describe("ToolRegistry.execute: hostile arguments and hostile outcomes", () => {
  const deep = {
    arrays: "[".repeat(100_000) + "]".repeat(100_000),
    objects: `{"a":`.repeat(100_000) + "1" + "}".repeat(100_000),
    inside: `{"command": "ls", "mode": "read", "env": ${"[".repeat(100_000)}${"]".repeat(100_000)}}`
  }

  it.effect("arguments nested 100,000 levels deep are INVALID_ARGS, never TOOL_FAILED or a thrown RangeError", () =>
    Effect.gen(function*() {
      let runs = 0
      const registry = yield* ToolRegistry
      yield* registry.register(bash)
      yield* registry.register(
        Tool.make("store", {
          description: "x",
          parameters: Schema.Struct({ data: Schema.Json }),
          execute: () => Effect.sync(() => ++runs).pipe(Effect.as("stored"))
        })
      )
      yield* registry.register(
        Tool.fromJsonSchema("mcp__store", {
          description: "x",
          parameters: { type: "object" },
          execute: (args) => Effect.sync(() => JSON.stringify(args))
        })
      )
      for (const tool of ["bash", "store", "mcp__store"]) {
        for (const [shape, raw] of Object.entries(deep)) {
          const result = yield* registry.execute(call(tool, raw))
          expect({ tool, shape, isError: result.isError, error: result.error }).toStrictEqual({
            tool,
            shape,
            isError: true,
            error: { tag: "ToolArgsError", code: "INVALID_ARGS" }
          })
          expect(ToolResult.textOf(result)).toContain("Nested too deeply, expected at most 256 levels of nested objects and arrays")
        }
      }
      expect(runs).toBe(0)
    }).pipe(Effect.provide(ToolRegistry.layer)))

  it.effect("a body failing or dying with a plain object: its message, never [object Object]", () =>
    Effect.gen(function*() {
      expect(yield* execute(call("failsQuota", ""))).toStrictEqual(
        failed("call-1", `Tool "failsQuota" failed: quota`, "ToolFailedError", "TOOL_FAILED")
      )
      expect(yield* execute(call("diesQuota", ""))).toStrictEqual(
        failed("call-1", `Tool "diesQuota" failed: quota`, "ToolFailedError", "TOOL_FAILED")
      )
      expect(yield* execute(call("diesCyclic", ""))).toStrictEqual(
        failed("call-1", `Tool "diesCyclic" failed: quota`, "ToolFailedError", "TOOL_FAILED")
      )
      expect(yield* execute(call("failsCyclic", ""))).toStrictEqual(
        failed("call-1", `Tool "failsCyclic" failed: {"reason":"disk full","self":[Circular]}`, "ToolFailedError", "TOOL_FAILED")
      )
    }).pipe(
      Effect.provide(
        registryWith(
          simple("failsQuota", () => Effect.fail({ message: "quota" } as unknown as ToolErrors.ToolFailedError)),
          simple("diesQuota", () => Effect.die({ message: "quota" })),
          simple("diesCyclic", () => {
            const cyclic: Record<string, unknown> = { message: "quota" }
            cyclic["self"] = cyclic
            return Effect.die(cyclic)
          }),
          simple("failsCyclic", () => {
            const cyclic: Record<string, unknown> = { reason: "disk full" }
            cyclic["self"] = cyclic
            return Effect.fail(cyclic as unknown as ToolErrors.ToolFailedError)
          })
        )
      )
    ))

  it.effect("a failure shaped like a harness error but with a code outside the catalog is TOOL_FAILED", () =>
    Effect.gen(function*() {
      const result = yield* execute(call("impostor", ""))
      expect(result).toStrictEqual(
        failed(
          "call-1",
          `Tool "impostor" failed: over quota (code MY_CODE is not a dsh error code)`,
          "ToolFailedError",
          "TOOL_FAILED"
        )
      )
      // a catalog code is still the tool's own
      expect((yield* execute(call("honest", ""))).error).toStrictEqual({ tag: "Quota", code: "LLM_RATE_LIMIT" })
    }).pipe(
      Effect.provide(
        registryWith(
          simple("impostor", () =>
            Effect.fail({ _tag: "Quota", code: "MY_CODE", message: "over quota" } as unknown as ToolErrors.ToolFailedError)),
          simple("honest", () =>
            Effect.fail({ _tag: "Quota", code: "LLM_RATE_LIMIT", message: "over quota" } as unknown as ToolErrors.ToolFailedError))
        )
      )
    ))

  it.effect("a body failing with a value whose every read throws is still answered", () =>
    Effect.gen(function*() {
      const result = yield* execute(call("proxy", ""))
      expect(result.error).toStrictEqual({ tag: "ToolFailedError", code: "TOOL_FAILED" })
      expect(ToolResult.textOf(result)).toBe(`Tool "proxy" failed: [an unreadable value]`)
    }).pipe(
      Effect.provide(
        registryWith(
          simple("proxy", () => {
            const hostile = new Proxy({}, {
              get: () => {
                throw new Error("no reading")
              },
              has: () => {
                throw new Error("no asking")
              },
              ownKeys: () => {
                throw new Error("no listing")
              },
              getPrototypeOf: () => {
                throw new Error("no prototype")
              }
            })
            return Effect.fail(hostile as unknown as ToolErrors.ToolFailedError)
          })
        )
      )
    ))

  it.effect("a raw tool returning blocks that are not text, image or custom blocks is TOOL_FAILED", () =>
    Effect.gen(function*() {
      for (const name of ["numbers", "badText", "nothing"]) {
        const result = yield* execute(call(name, ""))
        expect(result).toStrictEqual(
          failed(
            "call-1",
            `Tool "${name}" failed: it returned neither text nor content blocks`,
            "ToolFailedError",
            "TOOL_FAILED"
          )
        )
      }
    }).pipe(
      Effect.provide(
        registryWith(
          simple("numbers", () => Effect.succeed([42] as unknown as Tool.Output)),
          simple("badText", () => Effect.succeed([{ type: "text", text: 5 }] as unknown as Tool.Output)),
          simple("nothing", () => Effect.succeed(undefined as unknown as Tool.Output))
        )
      )
    ))

  it.effect("blocks with keys of their own are answered with their declared keys only, so the result stays JSON", () =>
    Effect.gen(function*() {
      const result = yield* execute(call("extras", ""))
      expect(result.isError).toBe(false)
      expect(result.content).toStrictEqual([{ type: "text", text: "one" }, { type: "text", text: "two" }])
      expect(JSON.parse(JSON.stringify(result)).content).toStrictEqual(result.content)
    }).pipe(
      Effect.provide(
        registryWith(
          simple("extras", () => {
            const cyclic: Record<string, unknown> = { type: "text", text: "two" }
            cyclic["self"] = cyclic
            return Effect.succeed([{ type: "text", text: "one", size: 10n }, cyclic] as unknown as Tool.Output)
          })
        )
      )
    ))

  it.effect("a raw tool returning a custom block nested past the depth limit is TOOL_FAILED, not a log that cannot be written", () =>
    Effect.gen(function*() {
      expect(yield* execute(call("mcp__deep", ""))).toStrictEqual(
        failed(
          "call-1",
          `Tool "mcp__deep" failed: it returned a custom block whose data nests deeper than 256 levels`,
          "ToolFailedError",
          "TOOL_FAILED"
        )
      )
    }).pipe(
      Effect.provide(
        registryWith(
          Tool.fromJsonSchema("mcp__deep", {
            description: "x",
            parameters: { type: "object" },
            execute: () => {
              let data: Schema.Json = 1
              for (let i = 0; i < 100_000; i++) data = [data]
              return Effect.succeed([{ type: "custom", kind: "mcp/resource", data }])
            }
          })
        )
      )
    ))

  it.effect("a hostile tool name is cut wherever it is echoed: text, denial, middleware blame, span", () => {
    const spans: Array<Tracer.NativeSpan> = []
    const tracer = Tracer.make({
      span(options) {
        const span = new Tracer.NativeSpan(options)
        spans.push(span)
        return span
      }
    })
    const name = (letter: string) => letter.repeat(1_000_000)
    const shown = (letter: string) => `"${letter.repeat(63)}…"`
    return Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.use(ToolMiddleware.denyWhen("no-y", (c) => (c.name.startsWith("y") ? "not this one" : undefined)))
      yield* registry.use({ name: "z-breaks", around: (c, next) => (c.name.startsWith("z") ? Effect.die("broken") : next(c)) })
      expect(yield* registry.execute(call(name("x"), {}))).toStrictEqual(
        failed("call-1", `Unknown tool ${shown("x")}. Available tools: bash`, "UnknownToolError", "UNKNOWN_TOOL")
      )
      expect(ToolResult.textOf(yield* registry.execute(call(name("y"), {})))).toBe(`Tool ${shown("y")} was denied: not this one`)
      expect(ToolResult.textOf(yield* registry.execute(call(name("z"), {})))).toBe(
        `Middleware "z-breaks" failed while handling a call to tool ${shown("z")}: broken`
      )
      expect(ToolResult.textOf(ToolResult.aborted(call(name("w"), {})))).toBe(`Tool ${shown("w")} was aborted before it finished`)
      const attributes = spans.filter((s) => s.name === "Tool.execute").map((s) => s.attributes.get("dsh.tool"))
      expect(attributes).toStrictEqual([shown("x"), shown("y"), shown("z")].map((q) => q.slice(1, -1)))
    }).pipe(Effect.provide(registryWith(bash)), Effect.withTracer(tracer))
  })
})
