/**
 * MCP over stdio against a hand-written server (`scripted-server.mjs`) that answers what the
 * reference servers never do: a handshake in another revision, a JSON-RPC error of 300,000
 * characters, a call still running when the Layer closes. Its `hang` tool opens a FIFO, which
 * tells the test it is inside the call (`whenReading`), without any timing guess.
 */
import { Content, Ids } from "@dsh/llm"
import { Mcp, McpServers, type McpStatus } from "@dsh/mcp"
import { ToolRegistry, ToolResult } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option, Scope, Stream } from "effect"
import { isAlive, scripted, whenReading, workspace } from "./fixtures.ts"

const call = (name: string, args: unknown, id = "c1") =>
  ToolRegistry.use((registry) => registry.execute(Content.toolCall(Ids.callId(id), name, JSON.stringify(args))))

const withMcp = (options: Mcp.Options) => Layer.provideMerge(Mcp.layer(options), ToolRegistry.layer)

/** Waits until the only server's status matches (the stream replays the current one first). */
const awaitStatus = (matches: (status: McpStatus.ServerStatus) => boolean) =>
  McpServers.use((s) =>
    s.changes.pipe(Stream.map((all) => all[0]!), Stream.filter(matches), Stream.runHead, Effect.map(Option.getOrThrow))
  )

describe("MCP over stdio: a hand-written server", () => {
  it.live("a handshake in another protocol revision fails the Layer with MCP_CONNECT, naming both revisions", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(withMcp({ servers: { old: scripted({ MODE: "wrong-version" }) } })))
      expect([error._tag, error.code, error.message]).toStrictEqual([
        "McpConnectError",
        "MCP_CONNECT",
        'MCP server "old" could not be started: Server does not support the explicitly selected protocol version (it answered the handshake with MCP "2024-11-05"; dsh speaks 2025-11-25)'
      ])
    }).pipe(Effect.scoped))

  it.live("a JSON-RPC error's message is cut like a result's text; the connection stays", () =>
    Effect.gen(function*() {
      const flood = yield* call("s__rpc-flood", {})
      expect(flood.error).toStrictEqual({ tag: "McpServerError", code: "MCP_SERVER" })
      const text = ToolResult.textOf(flood)
      expect(text).toBe(
        `MCP server "s" failed the call to tool "s__rpc-flood": ${"E".repeat(1000)}[… 299000 more characters cut]`
      )
      expect(ToolResult.textOf(yield* call("s__echo", { message: "still here" }))).toBe("echo still here")
      const [status] = yield* McpServers.use((s) => s.servers)
      expect(status).toMatchObject({ state: "connected", restarts: 0 })
    }).pipe(Effect.provide(withMcp({ servers: { s: scripted() }, limits: { maxResultLength: 1000 } }))))

  it.live("a line on stdout that is not JSON-RPC between calls drops the connection at once; the next call starts the server first and works", () =>
    Effect.gen(function*() {
      // the answer arrives, then the stray line: the call keeps its answer
      expect(ToolResult.textOf(yield* call("s__then-garbage", {}))).toBe("fine")
      const down = yield* awaitStatus((s) => s.state === "disconnected")
      expect(down.lastFailure).toMatch(/^it broke the protocol: Invalid MCP JSON: .*listening on stdio/)
      // not MCP_PROTOCOL for a call that was never sent
      expect(ToolResult.textOf(yield* call("s__echo", { message: "again" }))).toBe("echo again")
      expect(yield* awaitStatus((s) => s.state === "connected")).toMatchObject({ restarts: 1 })
    }).pipe(Effect.provide(withMcp({ servers: { s: scripted() } }))))

  it.live("an interrupted call sends notifications/cancelled with the request's id; the connection stays", () =>
    Effect.gen(function*() {
      const { fifo } = workspace()
      yield* Effect.gen(function*() {
        const pending = yield* call("s__hang", {}).pipe(Effect.forkChild({ startImmediately: true }))
        const closeWriter = yield* whenReading(fifo)
        yield* Fiber.interrupt(pending)
        // the cancellation went down stdin before this call, so the server has read it
        expect(ToolResult.textOf(yield* call("s__cancelled", {}))).toBe("[3]")
        yield* closeWriter
      }).pipe(Effect.provide(withMcp({ servers: { s: scripted({ FIFO: fifo }) } })))
    }))

  it.live("a call running when the Layer closes fails with MCP_SERVER saying so, and the process is stopped", () =>
    Effect.gen(function*() {
      const { fifo } = workspace()
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(withMcp({ servers: { s: scripted({ FIFO: fifo }) } }), scope)
      const [status] = yield* Effect.provideContext(McpServers.use((s) => s.servers), context)
      const pending = yield* Effect.provideContext(call("s__hang", {}), context).pipe(Effect.forkDetach({ startImmediately: true }))
      const closeWriter = yield* whenReading(fifo)
      yield* Scope.close(scope, Exit.void)
      const failed = yield* Fiber.join(pending)
      yield* closeWriter
      expect(failed.error).toStrictEqual({ tag: "McpServerError", code: "MCP_SERVER" })
      // not "it will be started again on the next call": nothing starts after the Layer closed
      expect(ToolResult.textOf(failed)).toMatch(
        /^MCP server "s" disconnected during the call to tool "s__hang": .*; its Layer was shut down$/s
      )
      expect(isAlive(status!.pid!)).toBe(false)
    }))
})
