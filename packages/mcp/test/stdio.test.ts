/**
 * MCP over stdio against the official reference servers, run as real child processes, offline:
 * `@modelcontextprotocol/server-everything` and `@modelcontextprotocol/server-filesystem`.
 * A FIFO in the filesystem server's directory tells a test when the server is inside a call
 * (`whenReading`), so a kill or an interruption lands mid-call without any timing guess.
 */
import { Content, Ids } from "@dsh/llm"
import { Mcp, McpServers, McpStatus } from "@dsh/mcp"
import { ToolRegistry, ToolResult } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option, Redacted, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { everything, filesystem, isAlive, whenReading, workspace } from "./fixtures.ts"

const call = (name: string, args: unknown, id = "c1") =>
  ToolRegistry.use((registry) => registry.execute(Content.toolCall(Ids.callId(id), name, JSON.stringify(args))))

const withMcp = (options: Mcp.Options) => Layer.provideMerge(Mcp.layer(options), ToolRegistry.layer)

const status = (name: string) =>
  Effect.map(McpServers.use((s) => s.servers), (all) => all.find((s) => s.name === name)!)

/** Waits until the server's status matches (the statuses stream replays the current one first). */
const awaitStatus = (name: string, matches: (status: McpStatus.ServerStatus) => boolean) =>
  McpServers.use((s) =>
    s.changes.pipe(
      Stream.map((all) => all.find((x) => x.name === name)!),
      Stream.filter(matches),
      Stream.runHead,
      Effect.map(Option.getOrThrow)
    )
  )

describe("MCP over stdio: the everything reference server", () => {
  it.live("its tools are registered under everything__ with their schemas; echo, an image, an isError result", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const names = yield* registry.names
      expect(names).toContain("everything__echo")
      expect(names).toContain("everything__get-tiny-image")
      expect(names.every((n) => n.startsWith("everything__"))).toBe(true)
      const echo = (yield* registry.schemas()).find((s) => s.name === "everything__echo")
      // the server's draft-07 `$schema` is dropped: dsh's wire schemas carry none
      expect(echo).toStrictEqual({
        name: "everything__echo",
        description: "Echoes back the input string",
        parameters: {
          type: "object",
          properties: { message: { type: "string", description: "Message to echo" } },
          required: ["message"]
        }
      })
      // readOnlyHint: the server says echo only reads
      expect(Option.getOrThrow(yield* registry.lookup("everything__echo")).concurrencySafe).toBe(true)

      expect(yield* call("everything__echo", { message: "hello" })).toStrictEqual(
        Content.toolResult({ toolCallId: Ids.callId("c1"), content: [Content.text("Echo: hello")] })
      )
      const image = yield* call("everything__get-tiny-image", {})
      expect(image.content.map((b) => (b.type === "image" ? `image ${b.mediaType}` : b.type))).toStrictEqual([
        "text",
        "image image/png",
        "text"
      ])
      const invalid = yield* call("everything__echo", { text: "the wrong key" })
      expect(invalid.error).toStrictEqual({ tag: "McpToolError", code: "MCP_SERVER" })
      expect(ToolResult.textOf(invalid)).toContain("Input validation error")

      const everythingStatus = yield* status("everything")
      expect(everythingStatus).toMatchObject({
        transport: "stdio",
        state: "connected",
        restarts: 0,
        serverInfo: { name: "mcp-servers/everything" },
        refused: []
      })
      expect(everythingStatus.tools).toContainEqual({ name: "everything__echo", mcpName: "echo" })
    }).pipe(Effect.provide(withMcp({ servers: { everything } }))))

  it.live("the server inherits PATH and HOME but not this process's secrets, plus the env it is given", () =>
    Effect.gen(function*() {
      process.env["DSH_MCP_TEST_SECRET"] = "sk-not-for-servers"
      const env = yield* Effect.gen(function*() {
        return JSON.parse(ToolResult.textOf(yield* call("everything__get-env", {}))) as Record<string, string>
      }).pipe(
        Effect.provide(withMcp({
          servers: { everything: { ...everything, env: { GREETING: "hi", TOKEN: Redacted.make("secret-for-this-server") } } }
        }))
      )
      expect(env["GREETING"]).toBe("hi")
      expect(env["TOKEN"]).toBe("secret-for-this-server")
      expect(env["PATH"]).toBe(process.env["PATH"])
      expect(env["DSH_MCP_TEST_SECRET"]).toBeUndefined()
      const all = yield* Effect.gen(function*() {
        return JSON.parse(ToolResult.textOf(yield* call("everything__get-env", {}))) as Record<string, string>
      }).pipe(Effect.provide(withMcp({ servers: { everything: { ...everything, inheritEnv: true } } })))
      expect(all["DSH_MCP_TEST_SECRET"]).toBe("sk-not-for-servers")
    }))

  it.live("closing the scope stops the server process", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(withMcp({ servers: { everything } }), scope)
      const [server] = yield* Effect.provideContext(McpServers.use((s) => s.servers), context)
      const pid = server!.pid!
      expect(isAlive(pid)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(pid)).toBe(false)
      const [closed] = yield* Effect.provideContext(McpServers.use((s) => s.servers), context)
      expect(closed!.state).toBe("closed")
    }))

  it.live("a command that does not exist fails the Layer with MCP_CONNECT", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(withMcp({ servers: { nope: { command: "dsh-no-such-command" } } })))
      expect([error._tag, error.code]).toStrictEqual(["McpConnectError", "MCP_CONNECT"])
      expect(error.message).toMatch(/^MCP server "nope" could not be started: Cannot spawn MCP server: .*dsh-no-such-command/s)
    }).pipe(Effect.scoped))
})

describe("MCP over stdio: the filesystem reference server", () => {
  it.live("reads a file of its directory; a path outside it is the tool's error", () =>
    Effect.gen(function*() {
      const { dir, notes } = workspace()
      yield* Effect.gen(function*() {
        expect(ToolResult.textOf(yield* call("fs__read_text_file", { path: notes }))).toBe("buy milk\n")
        const outside = yield* call("fs__read_text_file", { path: "/etc/hostname" })
        expect([outside.isError, outside.error?.tag]).toStrictEqual([true, "McpToolError"])
        expect(ToolResult.textOf(outside)).toContain("Access denied - path outside allowed directories")
      }).pipe(Effect.provide(withMcp({ servers: { fs: filesystem(dir) } })))
    }))

  it.live("a server that cannot start fails the Layer with MCP_CONNECT, with what it wrote to stderr", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(withMcp({ servers: { fs: filesystem("/no/such/dir/dsh") } })))
      expect(error.code).toBe("MCP_CONNECT")
      expect(error.message).toMatch(/^MCP server "fs" could not be started: .*\nIts last output on stderr:\n.*\/no\/such\/dir\/dsh/s)
    }).pipe(Effect.scoped))

  it.live("killed during a call: the call fails with MCP_SERVER; the next call starts it again and works", () =>
    Effect.gen(function*() {
      const { dir, fifo, notes } = workspace()
      yield* Effect.gen(function*() {
        const before = yield* status("fs")
        const pending = yield* call("fs__read_text_file", { path: fifo }).pipe(Effect.forkChild({ startImmediately: true }))
        const closeWriter = yield* whenReading(fifo)
        process.kill(before.pid!, "SIGKILL")
        const failed = yield* Fiber.join(pending)
        yield* closeWriter
        expect(failed.error).toStrictEqual({ tag: "McpServerError", code: "MCP_SERVER" })
        expect(ToolResult.textOf(failed)).toMatch(
          /^MCP server "fs" disconnected during the call to tool "fs__read_text_file": .*; it will be started again on the next call/s
        )
        expect((yield* status("fs")).state).toBe("disconnected")

        expect(ToolResult.textOf(yield* call("fs__read_text_file", { path: notes }))).toBe("buy milk\n")
        const after = yield* status("fs")
        expect(after).toMatchObject({ state: "connected", restarts: 1 })
        expect(after.pid).not.toBe(before.pid)
        expect(isAlive(before.pid!)).toBe(false)
      }).pipe(Effect.provide(withMcp({ servers: { fs: filesystem(dir) } })))
    }))

  it.live("killed between calls: the next call starts it again first and works", () =>
    Effect.gen(function*() {
      const { dir, notes } = workspace()
      yield* Effect.gen(function*() {
        const before = yield* status("fs")
        process.kill(before.pid!, "SIGKILL")
        const down = yield* awaitStatus("fs", (s) => s.state === "disconnected")
        expect(down.lastFailure).toBe("its process was killed by SIGKILL")
        expect(ToolResult.textOf(yield* call("fs__read_text_file", { path: notes }))).toBe("buy milk\n")
        expect(yield* status("fs")).toMatchObject({ state: "connected", restarts: 1 })
      }).pipe(Effect.provide(withMcp({ servers: { fs: filesystem(dir) } })))
    }))

  it.live("a call stuck in the server is interruptible; the connection stays up for the next call", () =>
    Effect.gen(function*() {
      const { dir, fifo, notes } = workspace()
      yield* Effect.gen(function*() {
        const pending = yield* call("fs__read_text_file", { path: fifo }).pipe(Effect.forkChild({ startImmediately: true }))
        const closeWriter = yield* whenReading(fifo)
        yield* Fiber.interrupt(pending)
        expect(ToolResult.textOf(yield* call("fs__read_text_file", { path: notes }))).toBe("buy milk\n")
        yield* closeWriter
        expect(yield* status("fs")).toMatchObject({ state: "connected", restarts: 0 })
      }).pipe(Effect.provide(withMcp({ servers: { fs: filesystem(dir) } })))
    }))

  it.effect("a call that outlives the server's timeout is TOOL_TIMEOUT; the server is told, the connection stays", () =>
    Effect.gen(function*() {
      const { dir, fifo, notes } = workspace()
      yield* Effect.gen(function*() {
        const pending = yield* call("fs__read_text_file", { path: fifo }).pipe(Effect.forkChild({ startImmediately: true }))
        const closeWriter = yield* whenReading(fifo)
        yield* TestClock.adjust("30 seconds")
        const timedOut = yield* Fiber.join(pending)
        yield* closeWriter
        expect([timedOut.error?.code, ToolResult.textOf(timedOut)]).toStrictEqual([
          "TOOL_TIMEOUT",
          'Tool "fs__read_text_file" timed out after 30s and was stopped'
        ])
        expect(ToolResult.textOf(yield* call("fs__read_text_file", { path: notes }))).toBe("buy milk\n")
        expect(yield* status("fs")).toMatchObject({ state: "connected", restarts: 0 })
      }).pipe(Effect.provide(withMcp({ servers: { fs: { ...filesystem(dir), timeout: "30 seconds" } } })))
    }))

  it.live("two servers side by side, each under its own prefix", () =>
    Effect.gen(function*() {
      const { dir, notes } = workspace()
      yield* Effect.gen(function*() {
        const names = yield* (yield* ToolRegistry).names
        expect(names.filter((n) => n.startsWith("fs__")).length).toBe(14)
        expect(names.filter((n) => n.startsWith("everything__")).length).toBe(12)
        expect(ToolResult.textOf(yield* call("fs__read_text_file", { path: notes }))).toBe("buy milk\n")
        expect(ToolResult.textOf(yield* call("everything__echo", { message: "both" }))).toBe("Echo: both")
        expect((yield* McpServers.use((s) => s.servers)).map((s) => s.name)).toStrictEqual(["fs", "everything"])
      }).pipe(Effect.provide(withMcp({ servers: { fs: filesystem(dir), everything } })))
    }))
})
