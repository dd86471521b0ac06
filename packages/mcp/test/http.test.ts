/**
 * MCP over streamable HTTP against real servers on 127.0.0.1: effect/ai's McpServer (what a
 * well-behaved server answers) and a hostile endpoint on the same Node HTTP server (schemas
 * nested 100,000 levels deep, 200 KB schemas, colliding names, malformed answers).
 */
import { Content, Ids } from "@dsh/llm"
import { Mcp, McpNames, McpServers } from "@dsh/mcp"
import { ToolRegistry, ToolResult } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Logger, Scope } from "effect"
import { makeHang, makeStats, png, startServer } from "./fixtures.ts"

const call = (name: string, args: unknown, id = "c1") =>
  ToolRegistry.use((registry) => registry.execute(Content.toolCall(Ids.callId(id), name, JSON.stringify(args))))

const withMcp = (options: Mcp.Options) => Layer.provideMerge(Mcp.layer(options), ToolRegistry.layer)

const status = (name: string) =>
  Effect.map(McpServers.use((s) => s.servers), (all) => all.find((s) => s.name === name)!)

describe("MCP over streamable HTTP", () => {
  it.live("registers the server's tools under its prefix and maps their results", () =>
    Effect.gen(function*() {
      const hang = yield* makeHang
      const { server } = yield* startServer({ hang, stats: makeStats() })
      yield* Effect.gen(function*() {
        const registry = yield* ToolRegistry
        expect(yield* registry.names).toStrictEqual(["web__greet", "web__picture", "web__refuse", "web__hang"])
        const [greet] = yield* registry.schemas()
        expect(greet).toStrictEqual({
          name: "web__greet",
          description: "Greets someone",
          parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] }
        })

        const hello = yield* call("web__greet", { name: "Ada" })
        expect(hello).toStrictEqual(Content.toolResult({ toolCallId: Ids.callId("c1"), content: [Content.text("Hello, Ada!")] }))

        const picture = yield* call("web__picture", {})
        expect(picture.content).toStrictEqual([
          Content.text("a dot:"),
          Content.image("image/png", Buffer.from(png).toString("base64"))
        ])

        // the tool said it failed: an error result with the tool's own words
        const refused = yield* call("web__refuse", {})
        expect([refused.isError, refused.error, ToolResult.textOf(refused)]).toStrictEqual([
          true,
          { tag: "McpToolError", code: "MCP_SERVER" },
          "not today"
        ])

        // arguments that are not an object never reach the server
        const notAnObject = yield* call("web__greet", ["Ada"])
        expect(notAnObject.error?.code).toBe("INVALID_ARGS")
        expect(ToolResult.textOf(notAnObject)).toContain('Expected an object, got ["Ada"]')

        const web = yield* status("web")
        expect(web).toMatchObject({
          transport: "http",
          state: "connected",
          pid: undefined,
          restarts: 0,
          serverInfo: { name: "dsh-test", version: "1.0.0" },
          refused: []
        })
      }).pipe(Effect.provide(withMcp({ servers: { web: { url: server.url } } })))
    }).pipe(Effect.scoped))

  it.live("a call to a server that hangs is interruptible, and the server's handler is interrupted", () =>
    Effect.gen(function*() {
      const hang = yield* makeHang
      const { server } = yield* startServer({ hang, stats: makeStats() })
      yield* Effect.gen(function*() {
        const fiber = yield* call("web__hang", {}).pipe(Effect.forkChild({ startImmediately: true }))
        yield* Deferred.await(hang.started)
        yield* Fiber.interrupt(fiber)
        // the client told the server the request was cancelled
        yield* Deferred.await(hang.interrupted)
        // the connection is kept: the next call needs no restart
        expect(ToolResult.textOf(yield* call("web__greet", { name: "Bo" }))).toBe("Hello, Bo!")
        expect((yield* status("web")).restarts).toBe(0)
      }).pipe(Effect.provide(withMcp({ servers: { web: { url: server.url } } })))
    }).pipe(Effect.scoped))

  it.live("a server that went away fails the call with MCP_SERVER; once it is back, the next call reconnects", () =>
    Effect.gen(function*() {
      const hang = yield* makeHang
      const first = yield* startServer({ hang, stats: makeStats() })
      yield* Effect.gen(function*() {
        expect(ToolResult.textOf(yield* call("web__greet", { name: "A" }))).toBe("Hello, A!")
        yield* Scope.close(first.scope, Exit.void)

        const down = yield* call("web__greet", { name: "B" })
        expect(down.error).toStrictEqual({ tag: "McpServerError", code: "MCP_SERVER" })
        expect(ToolResult.textOf(down)).toMatch(
          /^MCP server "web" disconnected during the call to tool "web__greet": .*; it will be started again on the next call$/s
        )
        expect((yield* status("web")).state).toBe("disconnected")

        // still down: starting it again fails the call with MCP_CONNECT
        const refused = yield* call("web__greet", { name: "C" })
        expect(refused.error).toStrictEqual({ tag: "McpConnectError", code: "MCP_CONNECT" })
        expect(ToolResult.textOf(refused)).toContain(`MCP server "web" at ${first.server.url} could not be reached`)

        yield* startServer({ hang, stats: makeStats(), port: first.server.port })
        expect(ToolResult.textOf(yield* call("web__greet", { name: "D" }))).toBe("Hello, D!")
        expect(yield* status("web")).toMatchObject({ state: "connected", restarts: 1 })
      }).pipe(Effect.provide(withMcp({ servers: { web: { url: first.server.url } } })))
    }).pipe(Effect.scoped))

  it.live("a session the server forgot (it answers 404): the call reconnects and is sent again", () =>
    Effect.gen(function*() {
      const stats = makeStats()
      const { server } = yield* startServer({ hang: yield* makeHang, stats })
      yield* Effect.gen(function*() {
        expect(ToolResult.textOf(yield* call("evil__files_read", {}))).toBe("called files_read")
        stats.forgotten.add("s1")
        // nothing ran under the lost session, so sending the call again is safe
        expect(ToolResult.textOf(yield* call("evil__files_read", {}))).toBe("called files_read")
        expect(stats.initializations).toBe(2)
        expect(yield* status("evil")).toMatchObject({ state: "connected", restarts: 1, lastFailure: "its HTTP session expired" })
      }).pipe(Effect.provide(withMcp({ servers: { evil: { url: server.hostileUrl } } })))
    }).pipe(Effect.scoped))

  it.live("a URL nothing listens on fails the Layer with MCP_CONNECT", () =>
    Effect.gen(function*() {
      const hang = yield* makeHang
      const { scope, server } = yield* startServer({ hang, stats: makeStats() })
      yield* Scope.close(scope, Exit.void)
      const error = yield* Effect.flip(Layer.build(withMcp({ servers: { gone: { url: server.url } } })))
      expect(error._tag).toBe("McpConnectError")
      expect(error.code).toBe("MCP_CONNECT")
      expect(error.message).toContain(`MCP server "gone" at ${server.url} could not be reached: MCP HTTP request failed`)
    }).pipe(Effect.scoped))

  it.live("a server answering 401 fails the Layer with MCP_CONNECT saying it refused the credentials, not that it was unreachable", () =>
    Effect.gen(function*() {
      const hang = yield* makeHang
      const { server } = yield* startServer({ hang, stats: makeStats() })
      const error = yield* Effect.flip(Layer.build(withMcp({ servers: { locked: { url: server.lockedUrl } } })))
      expect(error.code).toBe("MCP_CONNECT")
      expect(error.message).toContain(
        `MCP server "locked" at ${server.lockedUrl} refused the connection: it answered HTTP 401 Unauthorized ` +
          `(it refused the request's credentials: check the server's headers; it asks for "Bearer realm=\\"mcp\\"")`
      )
    }).pipe(Effect.scoped))

  it.live("a configuration that cannot work fails the Layer with MCP_CONNECT, naming the server", () =>
    Effect.gen(function*() {
      const bad = (servers: Mcp.Options["servers"]) =>
        Effect.map(Effect.flip(Layer.build(withMcp({ servers }))), (e) => [e.code, e.message])
      expect(yield* bad({ "a b": { url: "http://127.0.0.1:1/mcp" } })).toStrictEqual([
        "MCP_CONNECT",
        `MCP server "a b" cannot be started: its name is not valid: a server name must be letters, digits, '-' and '_', start with a letter or a digit, and have no '__' and no trailing '_' ('__' separates the server from the tool in tool names)`
      ])
      expect(yield* bad({ web: { url: "ftp://127.0.0.1/mcp" } })).toStrictEqual([
        "MCP_CONNECT",
        'MCP server "web" cannot be started: its URL must be http: or https:, got ftp:'
      ])
      expect(yield* bad({ web: { command: "" } })).toStrictEqual([
        "MCP_CONNECT",
        'MCP server "web" cannot be started: its command is empty'
      ])
    }).pipe(Effect.scoped))
})

describe("a hostile MCP server", () => {
  const hostile = Effect.gen(function*() {
    const stats = makeStats()
    const { server } = yield* startServer({ hang: yield* makeHang, stats })
    return { stats, url: server.hostileUrl }
  })

  it.live("entries that are no tool, schemas nested too deep or too large are refused with their reasons; names are made valid and distinct", () =>
    Effect.gen(function*() {
      const { url } = yield* hostile
      const logs: Array<string> = []
      const logger = Logger.make((options) => void logs.push([options.message].flat().join(" ")))
      yield* Effect.gen(function*() {
        const registry = yield* ToolRegistry
        const names = yield* registry.names
        expect(names).toStrictEqual([
          // "files.read" and "files/read" both became "files_read", which the server has too
          `evil__files_read_${McpNames.hash("files.read")}`,
          `evil__files_read_${McpNames.hash("files/read")}`,
          "evil__files_read",
          `evil__${"long".repeat(12)}lo_${McpNames.hash("long".repeat(30))}`,
          "evil__twice",
          "evil__garbage",
          "evil__rpc-error",
          "evil__deep-result",
          "evil__flood",
          "evil__nothing"
        ])
        expect(names.every((n) => /^[a-zA-Z0-9_-]{1,64}$/.test(n))).toBe(true)
        expect((yield* status("evil")).refused).toStrictEqual([
          // entries that are no tool descriptions are refused alone; the server's other tools stay
          { mcpName: "array-input", reason: `its entry in the server's tool list is invalid: Expected "object" at ["inputSchema"]["type"]` },
          { mcpName: "no-input", reason: `its entry in the server's tool list is invalid: Missing key at ["inputSchema"]` },
          { mcpName: "(tool #12, unnamed)", reason: `its entry in the server's tool list is invalid: Missing key at ["name"]` },
          // an empty name is no name
          { mcpName: "(tool #13, unnamed)", reason: "its entry in the server's tool list is invalid: its name is empty" },
          { mcpName: "odd-output", reason: `its entry in the server's tool list is invalid: Missing key at ["outputSchema"]["type"]` },
          { mcpName: "deep", reason: "its input schema nests deeper than 64 levels" },
          { mcpName: "deep-array", reason: "its input schema nests deeper than 64 levels" },
          { mcpName: "huge", reason: "its input schema is 200071 bytes of JSON, more than the limit of 65536" },
          { mcpName: "twice", reason: "the server lists a tool of this name twice" }
        ])
        // each refusal is logged with its reason
        expect(logs.filter((l) => l.includes("is not registered"))).toStrictEqual([
          `dsh: MCP server "evil": the tool "array-input" is not registered: its entry in the server's tool list is invalid: Expected "object" at ["inputSchema"]["type"]`,
          `dsh: MCP server "evil": the tool "no-input" is not registered: its entry in the server's tool list is invalid: Missing key at ["inputSchema"]`,
          `dsh: MCP server "evil": the tool "(tool #12, unnamed)" is not registered: its entry in the server's tool list is invalid: Missing key at ["name"]`,
          `dsh: MCP server "evil": the tool "(tool #13, unnamed)" is not registered: its entry in the server's tool list is invalid: its name is empty`,
          `dsh: MCP server "evil": the tool "odd-output" is not registered: its entry in the server's tool list is invalid: Missing key at ["outputSchema"]["type"]`,
          'dsh: MCP server "evil": the tool "deep" is not registered: its input schema nests deeper than 64 levels',
          'dsh: MCP server "evil": the tool "deep-array" is not registered: its input schema nests deeper than 64 levels',
          'dsh: MCP server "evil": the tool "huge" is not registered: its input schema is 200071 bytes of JSON, more than the limit of 65536',
          'dsh: MCP server "evil": the tool "twice" is not registered: the server lists a tool of this name twice'
        ])
        // what reaches prompt assembly is small and serializes
        expect(JSON.stringify(yield* registry.schemas()).length).toBeLessThan(4000)
        // the renamed tools reach the server under their own names
        expect(ToolResult.textOf(yield* call(names[0]!, {}))).toBe("called files.read")
        expect(ToolResult.textOf(yield* call(names[3]!, {}))).toBe(`called ${"long".repeat(30)}`)
      }).pipe(Effect.provide(withMcp({ servers: { evil: { url } } }).pipe(Layer.provide(Logger.layer([logger])))))
    }).pipe(Effect.scoped))

  it.live("a malformed answer is MCP_PROTOCOL and the next call reconnects; a JSON-RPC error is MCP_SERVER", () =>
    Effect.gen(function*() {
      const { stats, url } = yield* hostile
      yield* Effect.gen(function*() {
        expect(stats.initializations).toBe(1)
        const garbage = yield* call("evil__garbage", {})
        expect(garbage.error).toStrictEqual({ tag: "McpProtocolError", code: "MCP_PROTOCOL" })
        expect(ToolResult.textOf(garbage)).toMatch(
          /^MCP server "evil" broke the protocol in the call to tool "evil__garbage": Invalid MCP JSON: .*; it will be started again on the next call$/s
        )
        expect((yield* status("evil")).state).toBe("disconnected")
        expect(ToolResult.textOf(yield* call("evil__files_read", {}))).toBe("called files_read")
        expect(stats.initializations).toBe(2)

        // an error answer keeps the connection
        const rpc = yield* call("evil__rpc-error", {})
        expect([rpc.error, ToolResult.textOf(rpc)]).toStrictEqual([
          { tag: "McpServerError", code: "MCP_SERVER" },
          'MCP server "evil" failed the call to tool "evil__rpc-error": the server is on fire'
        ])
        expect(yield* status("evil")).toMatchObject({ state: "connected", restarts: 1 })
      }).pipe(Effect.provide(withMcp({ servers: { evil: { url } } })))
    }).pipe(Effect.scoped))

  it.live("floods are cut, results nested 100,000 levels deep are not shown, empty results say so", () =>
    Effect.gen(function*() {
      const { url } = yield* hostile
      yield* Effect.gen(function*() {
        const deep = yield* call("evil__deep-result", {})
        expect([deep.isError, ToolResult.textOf(deep)]).toStrictEqual([
          false,
          "[structured content nested deeper than 256 levels, not shown]"
        ])
        const flood = yield* call("evil__flood", {})
        expect(flood.content.map((b) => (b.type === "text" ? b.text.length : 0))).toStrictEqual([1000, 74])
        expect(ToolResult.textOf(flood)).toMatch(/\n\[… 299000 more characters cut: the result was longer than 1000 characters\]$/)
        expect(ToolResult.textOf(yield* call("evil__nothing", {}))).toBe("(the tool returned no content)")
      }).pipe(Effect.provide(withMcp({ servers: { evil: { url } }, limits: { maxResultLength: 1000 } })))
    }).pipe(Effect.scoped))
})
