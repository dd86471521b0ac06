/**
 * The file `--mcp <file>` names: the MCP servers whose tools the agent gets, in the format MCP
 * clients share (`mcpServers`, by name), validated by Schema.
 *
 * ```json
 * {
 *   "mcpServers": {
 *     "everything": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"] },
 *     "search": { "url": "https://mcp.example.com/mcp", "headers": { "authorization": "Bearer …" } }
 *   }
 * }
 * ```
 *
 * A server is a command (stdio: `command`, `args`, `env`, `cwd`, `inheritEnv`) or a URL
 * (streamable HTTP: `url`, `headers`); `timeout` (milliseconds) bounds each call. Its tools are
 * named `<server>__<tool>`, and the permission policy asks before each call.
 *
 * @since 0.1.0
 */
import type { Mcp } from "@dsh/mcp"
import { Effect, FileSystem, Result, Schema, SchemaIssue } from "effect"
import { ConfigInvalidError } from "./ConfigInvalidError.ts"

const Millis = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

const Stdio = Schema.Struct({
  command: Schema.NonEmptyString,
  args: Schema.optionalKey(Schema.Array(Schema.String)),
  env: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  cwd: Schema.optionalKey(Schema.NonEmptyString),
  inheritEnv: Schema.optionalKey(Schema.Union([Schema.Boolean, Schema.Array(Schema.String)])),
  timeout: Schema.optionalKey(Millis)
})

const Http = Schema.Struct({
  url: Schema.NonEmptyString,
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  timeout: Schema.optionalKey(Millis)
})

/**
 * The file's Schema.
 *
 * @since 0.1.0
 * @category schemas
 */
export const File = Schema.Struct({
  mcpServers: Schema.Record(Schema.String, Schema.Union([Stdio, Http]))
})

/**
 * @since 0.1.0
 * @category models
 */
export type File = typeof File.Type

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

const invalid = (path: string, message: string, field = "mcp") =>
  new ConfigInvalidError({ message: `--mcp ${path}: ${message}`, field, source: "--mcp" })

/**
 * Decodes the file's text.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = (text: string, path: string): Result.Result<File, ConfigInvalidError> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Result.fail(invalid(path, `not JSON: ${(error as Error).message}`))
  }
  const decoded = Schema.decodeUnknownResult(File)(json, { errors: "all", onExcessProperty: "error" })
  if (Result.isSuccess(decoded)) return Result.succeed(decoded.success)
  const issues = formatter(decoded.failure.issue).issues.map((issue) => {
    const at = (issue.path ?? []).map(String).join(".")
    return `${at === "" ? "(the file)" : at}: ${issue.message}`
  })
  return Result.fail(invalid(path, `${issues.join("; ")} (expected { "mcpServers": { "<name>": { "command", "args" } or { "url" } } })`))
}

const timeoutOf = (server: { readonly timeout?: number }) => (server.timeout === undefined ? {} : { timeout: `${server.timeout} millis` as const })

/**
 * The servers of the file, as `Mcp.layer` takes them.
 *
 * @since 0.1.0
 * @category constructors
 */
export const servers = (file: File): Record<string, Mcp.ServerConfig> =>
  Object.fromEntries(Object.entries(file.mcpServers).map(([name, server]): [string, Mcp.ServerConfig] => {
    if ("url" in server) {
      return [name, { url: server.url, ...(server.headers === undefined ? {} : { headers: server.headers }), ...timeoutOf(server) }]
    }
    return [name, {
      command: server.command,
      ...(server.args === undefined ? {} : { args: server.args }),
      ...(server.env === undefined ? {} : { env: server.env }),
      ...(server.cwd === undefined ? {} : { cwd: server.cwd }),
      ...(server.inheritEnv === undefined ? {} : { inheritEnv: server.inheritEnv }),
      ...timeoutOf(server)
    }]
  }))

/**
 * Reads and decodes the file.
 *
 * @since 0.1.0
 * @category decoding
 */
export const read = (path: string): Effect.Effect<File, ConfigInvalidError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(path).pipe(
      Effect.mapError(() => invalid(path, "the file cannot be read (it does not exist, or is not a readable file)"))
    )
    return yield* Effect.fromResult(decode(text, path))
  })
