/**
 * Fixtures of the MCP tests (not a test file): the reference servers' entry points, a real
 * MCP server over streamable HTTP on 127.0.0.1 built with effect/ai's `McpServer` and
 * effect/http's Node server, a hostile server on the same HTTP stack that writes its JSON-RPC
 * by hand (what no well-behaved implementation would send), and a FIFO that tells a test when
 * a server is inside a call.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Deferred, Effect, Layer, Scope } from "effect"
import { McpProtocol, McpSchema, McpServer } from "effect/ai"
import { HttpRouter, HttpServer, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { execFileSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { open } from "node:fs/promises"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

/** The reference servers, run with this Node. */
export const everythingEntry = fileURLToPath(import.meta.resolve("@modelcontextprotocol/server-everything/dist/index.js"))
export const filesystemEntry = fileURLToPath(import.meta.resolve("@modelcontextprotocol/server-filesystem/dist/index.js"))

export const everything = { command: process.execPath, args: [everythingEntry, "stdio"] }

/** The hand-written stdio server of `scripted-server.mjs`, with its `MODE` and the `FIFO` its `hang` tool opens. */
export const scripted = (env: { readonly MODE?: string; readonly FIFO?: string } = {}) => ({
  command: process.execPath,
  args: [fileURLToPath(new URL("scripted-server.mjs", import.meta.url))],
  env
})
export const filesystem = (dir: string) => ({ command: process.execPath, args: [filesystemEntry, dir] })

/** A temporary directory with `notes.txt` and a FIFO `pipe` in it. */
export const workspace = () => {
  const dir = mkdtempSync(join(tmpdir(), "dsh-mcp-"))
  writeFileSync(join(dir, "notes.txt"), "buy milk\n")
  const fifo = join(dir, "pipe")
  execFileSync("mkfifo", [fifo])
  return { dir, notes: join(dir, "notes.txt"), fifo }
}

/**
 * Opens the FIFO for writing: this returns only once a reader has opened it, that is once the
 * filesystem server is inside a `read_text_file` call on it (it then waits for the end of the
 * data, so the call hangs until the returned handle is closed).
 */
export const whenReading = (fifo: string) =>
  Effect.promise(() => open(fifo, "w")).pipe(Effect.map((handle) => Effect.promise(() => handle.close())))

/** Whether a process is alive (signal 0 checks without signalling). */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const tool = (name: string, inputSchema: McpSchema.ToolJson = { type: "object", properties: {} }, description?: string) =>
  new McpSchema.Tool({ name, inputSchema, ...(description === undefined ? {} : { description }) })

const text = (text: string) => new McpSchema.CallToolResult({ content: [{ type: "text", text }] })

// A 1×1 PNG.
export const png = Uint8Array.from(
  Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64")
)

/** What the test server's `hang` tool reports. */
export interface Hang {
  readonly started: Deferred.Deferred<void>
  readonly interrupted: Deferred.Deferred<void>
}

// The well-behaved tools, registered through McpServer's own API.
const registrations = (hang: Hang) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const server = yield* McpServer.McpServer
    const add = (
      mcpTool: McpSchema.Tool,
      handle: (payload: Record<string, unknown>) => Effect.Effect<McpSchema.CallToolResult>
    ) => server.addTool({ tool: mcpTool, annotations: Context.empty(), handle })
    yield* add(
      tool("greet", { type: "object", properties: { name: { type: "string" } }, required: ["name"] }, "Greets someone"),
      (payload) => Effect.succeed(text(`Hello, ${String(payload["name"])}!`))
    )
    yield* add(
      tool("picture"),
      () =>
        Effect.succeed(
          new McpSchema.CallToolResult({
            content: [{ type: "text", text: "a dot:" }, { type: "image", data: png, mimeType: "image/png" }]
          })
        )
    )
    yield* add(
      tool("refuse"),
      () => Effect.succeed(new McpSchema.CallToolResult({ isError: true, content: [{ type: "text", text: "not today" }] }))
    )
    yield* add(
      tool("hang"),
      () =>
        Deferred.succeed(hang.started, undefined).pipe(
          Effect.andThen(Effect.never),
          Effect.onInterrupt(() => Deferred.succeed(hang.interrupted, undefined))
        )
    )
  }))

const deep = (depth: number) => '{"type":"object","properties":{"a":'.repeat(depth) + '{"type":"string"}' + "}}".repeat(depth)

/** What the hostile endpoint lists: each tool a lesson. */
export const hostileTools = [
  // 100,000 levels of nested properties: breaks any recursive walk and JSON.stringify.
  `{"name":"deep","inputSchema":${deep(100_000)}}`,
  // arrays nested in `items`, 1,000 levels
  `{"name":"deep-array","inputSchema":{"type":"object","properties":{"x":${'{"type":"array","items":'.repeat(1000)}{}${
    "}".repeat(1000)
  }}}}`,
  // 200 KB of schema
  `{"name":"huge","inputSchema":{"type":"object","properties":{"x":{"type":"string","description":"${"x".repeat(200_000)}"}}}}`,
  // names to sanitize, a collision, a name too long, a name listed twice
  `{"name":"files.read","inputSchema":{"type":"object"}}`,
  `{"name":"files/read","inputSchema":{"type":"object"}}`,
  `{"name":"files_read","inputSchema":{"type":"object"}}`,
  `{"name":"${"long".repeat(30)}","inputSchema":{"type":"object"}}`,
  `{"name":"twice","inputSchema":{"type":"object"}}`,
  `{"name":"twice","inputSchema":{"type":"object"}}`,
  // entries that are no tool descriptions: refused one by one, the others registered
  `{"name":"array-input","inputSchema":{"type":"array"}}`,
  `{"name":"no-input"}`,
  `{"inputSchema":{"type":"object"}}`,
  `{"name":" ","inputSchema":{"type":"object"}}`,
  // an output schema the revision's list schema refuses (it must be an object schema)
  `{"name":"odd-output","inputSchema":{"type":"object"},"outputSchema":{}}`,
  // what a call answers, by name (see `hostileCall`)
  `{"name":"garbage","inputSchema":{"type":"object"}}`,
  `{"name":"rpc-error","inputSchema":{"type":"object"}}`,
  `{"name":"deep-result","inputSchema":{"type":"object"}}`,
  `{"name":"flood","inputSchema":{"type":"object"}}`,
  `{"name":"nothing","inputSchema":{"type":"object"}}`
]

const rpcResult = (id: unknown, result: string) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`

const hostileCall = (id: unknown, name: unknown): string => {
  switch (name) {
    case "garbage":
      return "{this is not json"
    case "rpc-error":
      return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"error":{"code":-32000,"message":"the server is on fire"}}`
    case "deep-result":
      return rpcResult(id, `{"content":[],"structuredContent":${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}}`)
    case "flood":
      return rpcResult(id, JSON.stringify({ content: [{ type: "text", text: "y".repeat(300_000) }] }))
    case "nothing":
      return rpcResult(id, `{"content":[]}`)
    default:
      return rpcResult(id, JSON.stringify({ content: [{ type: "text", text: `called ${String(name)}` }] }))
  }
}

/**
 * How often the hostile endpoint was initialized (a reconnect initializes again); each
 * initialization opens a session `s<n>`, and a session in `forgotten` is answered 404, as a
 * server that lost it (a restart) answers.
 */
export interface HostileStats {
  initializations: number
  readonly forgotten: Set<string>
}

/** Fresh stats. */
export const makeStats = (): HostileStats => ({ initializations: 0, forgotten: new Set() })

// A JSON-RPC endpoint written by hand: the messages effect's McpServer would never send.
const hostileRoute = (stats: HostileStats) =>
  HttpRouter.add("POST", "/hostile", (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function*() {
      const message = (yield* Effect.orDie(request.json)) as { id?: unknown; method?: string; params?: { name?: unknown } }
      const session = request.headers["mcp-session-id"]
      if (session !== undefined && stats.forgotten.has(session)) return HttpServerResponse.empty({ status: 404 })
      if (message.id === undefined) return HttpServerResponse.empty({ status: 202 })
      const json = (body: string, headers: Record<string, string> = {}) =>
        HttpServerResponse.text(body, { contentType: "application/json", headers })
      switch (message.method) {
        case "initialize":
          stats.initializations++
          return json(rpcResult(
            message.id,
            JSON.stringify({
              protocolVersion: "2025-11-25",
              capabilities: { tools: {} },
              serverInfo: { name: "hostile", version: "6.6.6" }
            })
          ), { "mcp-session-id": `s${stats.initializations}` })
        case "tools/list":
          return json(rpcResult(message.id, `{"tools":[${hostileTools.join(",")}]}`))
        case "tools/call":
          return json(hostileCall(message.id, message.params?.name))
        default:
          return json(`{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"error":{"code":-32601,"message":"no"}}`)
      }
    }))

/** An endpoint that wants credentials the client does not send: 401, with a text body effect's client does not read. */
const lockedRoute = HttpRouter.add("POST", "/locked", () =>
  Effect.succeed(HttpServerResponse.text("who are you?", { status: 401, headers: { "www-authenticate": `Bearer realm="mcp"` } })))

/** A running test server: `url` is its MCP endpoint, `hostileUrl` the hostile one, `lockedUrl` one answering 401. */
export interface TestServer {
  readonly port: number
  readonly url: string
  readonly hostileUrl: string
  readonly lockedUrl: string
}

/**
 * Starts the test server on 127.0.0.1 (an ephemeral port unless `port` is given) in a scope of
 * its own; closing `scope` stops it.
 */
export const startServer = (options: { readonly hang: Hang; readonly stats: HostileStats; readonly port?: number }) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const app = Layer.mergeAll(
      McpServer.layerHttp({
        name: "dsh-test",
        version: "1.0.0",
        path: "/mcp",
        protocols: [McpProtocol.v2025_11_25],
        registrations: registrations(options.hang)
      }),
      hostileRoute(options.stats),
      lockedRoute
    )
    const context = yield* Layer.buildWithScope(
      HttpRouter.serve(app, { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(createServer, { port: options.port ?? 0, host: "127.0.0.1" }))
      ),
      scope
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    if (!("port" in address)) return yield* Effect.die(new Error("the test server is not on TCP"))
    const base = `http://127.0.0.1:${address.port}`
    return {
      scope,
      server: { port: address.port, url: `${base}/mcp`, hostileUrl: `${base}/hostile`, lockedUrl: `${base}/locked` } satisfies TestServer
    }
  })

export const makeHang: Effect.Effect<Hang> = Effect.all({ started: Deferred.make<void>(), interrupted: Deferred.make<void>() })
