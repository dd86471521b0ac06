/**
 * The Layer's options are checked before any server starts: an option that cannot work fails
 * the construction with MCP_CONNECT naming it (and its server), never a defect, never a server
 * started for nothing.
 */
import { Mcp, McpServers } from "@dsh/mcp"
import { ToolRegistry } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Layer, Scope, Stream } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const withMcp = (options: Mcp.Options) => Layer.provideMerge(Mcp.layer(options), ToolRegistry.layer)

// Nothing listens on port 1: an option checked too late would fail as "could not be reached".
const nowhere = "http://127.0.0.1:1/mcp"

/** What building the Layer fails with: its code and message, or the defect it died of. */
const failure = (options: unknown) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Layer.build(withMcp(options as Mcp.Options)))
    if (Exit.isSuccess(exit)) return "built"
    const error = Cause.findErrorOption(exit.cause)
    return error._tag === "Some" ? [error.value._tag, error.value.code, error.value.message] : `died: ${Cause.pretty(exit.cause)}`
  }).pipe(Effect.scoped)

const refused = (message: string) => ["McpConnectError", "MCP_CONNECT", message]

describe("Mcp.layer's options", () => {
  it.live("options of every server that cannot work name the option", () =>
    Effect.gen(function*() {
      expect(yield* failure({})).toStrictEqual(
        refused("MCP servers cannot be started: the option servers must be an object of servers by name, got nothing")
      )
      expect(yield* failure({ servers: { web: { url: nowhere } }, connectTimeout: "soon" })).toStrictEqual(
        refused(`MCP servers cannot be started: the option connectTimeout must be a duration ("30 seconds", a number of milliseconds), got "soon"`)
      )
      expect(yield* failure({ servers: { web: { url: nowhere } }, connectTimeout: Number.NaN })).toStrictEqual(
        refused(`MCP servers cannot be started: the option connectTimeout must be a duration ("30 seconds", a number of milliseconds), got NaN`)
      )
      expect(yield* failure({ servers: { web: { url: nowhere } }, connectTimeout: 0 })).toStrictEqual(
        refused("MCP servers cannot be started: the option connectTimeout must be longer than zero, got 0")
      )
      expect(yield* failure({ servers: { web: { url: nowhere } }, limits: { maxResultLength: -1 } })).toStrictEqual(
        refused("MCP servers cannot be started: the option limits.maxResultLength must be a whole number above zero, got -1")
      )
      expect(yield* failure({ servers: {}, limits: { maxSchemaDepth: Number.NaN } })).toStrictEqual(
        refused("MCP servers cannot be started: the option limits.maxSchemaDepth must be a whole number above zero, got NaN")
      )
      // a misspelt option is refused, not dropped
      expect(yield* failure({ servers: {}, connectTimout: "1 second" })).toStrictEqual(
        refused(`MCP servers cannot be started: the options object has "connectTimout", which is no option (known: servers, connectTimeout, limits)`)
      )
      expect(yield* failure({ servers: {}, limits: { maxDepth: 3 } })).toStrictEqual(
        refused(
          `MCP servers cannot be started: the option limits has "maxDepth", which is no option ` +
            "(known: maxSchemaDepth, maxSchemaBytes, maxDescriptionLength, maxResultLength)"
        )
      )
    }))

  it.live("a server's options that cannot work name the server and the option", () =>
    Effect.gen(function*() {
      const node = process.execPath
      expect(yield* failure({ servers: { web: null } })).toStrictEqual(
        refused('MCP server "web" cannot be started: its configuration must be an object with a command or a url, got null')
      )
      expect(yield* failure({ servers: { web: { url: nowhere, timeout: "a while" } } })).toStrictEqual(
        refused(`MCP server "web" cannot be started: its timeout must be a duration ("30 seconds", a number of milliseconds), got "a while"`)
      )
      expect(yield* failure({ servers: { web: { url: nowhere, connectTimeout: -5 } } })).toStrictEqual(
        refused('MCP server "web" cannot be started: its connectTimeout must be longer than zero, got -5ms')
      )
      expect(yield* failure({ servers: { cli: { command: node, args: "server.js" } } })).toStrictEqual(
        refused('MCP server "cli" cannot be started: its args must be an array of strings, got "server.js"')
      )
      expect(yield* failure({ servers: { cli: { command: node, args: ["--port", 8080] } } })).toStrictEqual(
        refused('MCP server "cli" cannot be started: its args must be strings, but args[1] is 8080')
      )
      expect(yield* failure({ servers: { cli: { command: node, env: { PORT: 8080 } } } })).toStrictEqual(
        refused('MCP server "cli" cannot be started: its env variable PORT must be a string (or Redacted), got 8080')
      )
      expect(yield* failure({ servers: { cli: { command: node, env: { "A=B": "c" } } } })).toStrictEqual(
        refused('MCP server "cli" cannot be started: its env has a variable name that cannot be set: "A=B"')
      )
      expect(yield* failure({ servers: { cli: { command: node, inheritEnv: "PATH" } } })).toStrictEqual(
        refused('MCP server "cli" cannot be started: its inheritEnv must be true, false or an array of variable names, got "PATH"')
      )
      expect(yield* failure({ servers: { cli: { command: node, arg: ["server.js"] } } })).toStrictEqual(
        refused(
          `MCP server "cli" cannot be started: its configuration has "arg", which is no option ` +
            "(known: command, args, env, inheritEnv, cwd, timeout, connectTimeout)"
        )
      )
      expect(yield* failure({ servers: { web: { url: nowhere, header: { authorization: "t" } } } })).toStrictEqual(
        refused(`MCP server "web" cannot be started: its configuration has "header", which is no option (known: url, headers, timeout, connectTimeout)`)
      )
      expect(yield* failure({ servers: { web: { url: nowhere, headers: { "x token": "t" } } } })).toStrictEqual(
        refused('MCP server "web" cannot be started: its header name "x token" cannot be sent: it must be an HTTP token')
      )
      // a key read from a file with its newline: the value, a secret, is not quoted
      expect(yield* failure({ servers: { web: { url: nowhere, headers: { authorization: "Bearer sk-1\n" } } } })).toStrictEqual(
        refused(
          'MCP server "web" cannot be started: its header authorization has a value that cannot be sent (a line break, another control character or a character beyond Latin-1)'
        )
      )
    }))

  it.live("a cwd that is a file fails the Layer with MCP_CONNECT (the spawn throws ENOTDIR)", () =>
    Effect.gen(function*() {
      const file = join(mkdtempSync(join(tmpdir(), "dsh-mcp-")), "not-a-dir")
      writeFileSync(file, "")
      expect(yield* failure({ servers: { cli: { command: process.execPath, cwd: file } } })).toStrictEqual(
        refused('MCP server "cli" could not be started: spawn ENOTDIR')
      )
    }))

  it.live("a URL's credentials and query are not shown in its errors", () =>
    Effect.gen(function*() {
      const result = yield* failure({ servers: { web: { url: "http://ada:hunter2@127.0.0.1:1/mcp?key=sk-123" } } })
      expect(result[2]).toMatch(/^MCP server "web" at http:\/\/REDACTED@127\.0\.0\.1:1\/mcp\?REDACTED could not be reached: /)
      expect(result[2]).not.toContain("hunter2")
      expect(result[2]).not.toContain("sk-123")
    }))
})

describe("McpServers", () => {
  it.live("with no server, its changes end when the Layer closes", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(withMcp({ servers: {} }), scope)
      const changes = yield* Effect.provideContext(McpServers.use((s) => s.changes.pipe(Stream.runCollect)), context).pipe(
        Effect.forkChild({ startImmediately: true })
      )
      yield* Scope.close(scope, Exit.void)
      // the stream ends (it used to wait for a server to close): its last element has no server
      const all = yield* Fiber.join(changes)
      expect(all.at(-1)).toStrictEqual([])
    }))
})
