/**
 * The file `--mcp <file>` (or the config file's `mcp`) names: the MCP servers whose tools the agent gets, in the format MCP
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
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
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

/**
 * Where an MCP servers file was named: `--mcp`, or a config file's `mcp` field
 * (`<config file> (mcp)`). Its failures name it.
 *
 * @since 0.1.0
 * @category models
 */
export type Source = string

const invalid = (path: string, message: string, source: Source) =>
  new ConfigInvalidError({
    message: source === "--mcp" ? `--mcp ${path}: ${message}` : `${source}: ${path}: ${message}`,
    field: "mcp",
    source
  })

/**
 * Decodes the file's text; `source` says where the file was named (`--mcp` by default).
 *
 * Each server is decoded as the kind its keys say — `url`: HTTP, else `command`: stdio — so
 * a mistake in one is reported against that kind's fields only, every mistake with its path.
 * A URL must be `http:` or `https:`. `nameProblem` (`McpNames.serverNameProblem` of
 * `@dsh/mcp`, which the caller has loaded) says what is wrong with a server's name, listed
 * with the other problems.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = (
  text: string,
  path: string,
  source: Source = "--mcp",
  nameProblem: (name: string) => string | undefined = () => undefined
): Result.Result<File, ConfigInvalidError> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Result.fail(invalid(path, `not JSON: ${(error as Error).message}`, source))
  }
  const shape = decodeAll(Shape, json, [])
  if (Result.isFailure(shape)) return Result.fail(invalidFile(path, shape.failure, source))
  const servers: Record<string, File["mcpServers"][string]> = {}
  const problems: Array<string> = []
  for (const [name, entry] of Object.entries(shape.success.mcpServers)) {
    const badName = nameProblem(name)
    if (badName !== undefined) problems.push(`mcpServers.${name}: ${badName}`)
    const server = decodeServer(entry, ["mcpServers", name])
    if (Result.isFailure(server)) problems.push(...server.failure)
    else servers[name] = server.success
  }
  if (problems.length > 0) return Result.fail(invalidFile(path, problems, source))
  return Result.succeed({ mcpServers: servers })
}

const Shape = Schema.Struct({ mcpServers: Schema.Record(Schema.String, Schema.Unknown) })

const invalidFile = (path: string, problems: ReadonlyArray<string>, source: Source) =>
  invalid(path, `${problems.join("; ")} (expected { "mcpServers": { "<name>": { "command", "args" } or { "url" } } })`, source)

const decodeServer = (
  entry: unknown,
  at: ReadonlyArray<string>
): Result.Result<File["mcpServers"][string], ReadonlyArray<string>> => {
  const problem = (message: string) => Result.fail([`${at.join(".")}: ${message}`])
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    return problem("expected a server: { \"command\" } (stdio) or { \"url\" } (HTTP)")
  }
  if ("url" in entry && "command" in entry) {
    return problem("give either \"command\" (a stdio server) or \"url\" (an HTTP server), not both")
  }
  if ("url" in entry) {
    return Result.flatMap(decodeAll(Http, entry, at), (server) => {
      const refused = urlProblem(server.url)
      return refused === undefined ? Result.succeed(server) : Result.fail([`${[...at, "url"].join(".")}: ${refused}`])
    })
  }
  if ("command" in entry) return decodeAll(Stdio, entry, at)
  return problem("expected \"command\" (a stdio server) or \"url\" (an HTTP server)")
}

const urlProblem = (url: string): string | undefined => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return `expected an http(s) URL, got ${JSON.stringify(url)}`
  }
  return parsed.protocol === "http:" || parsed.protocol === "https:"
    ? undefined
    : `expected an http: or https: URL, got ${parsed.protocol}`
}

// Every violation, each as `<path>: <message>` with the path from the file's root.
const decodeAll = <S extends Schema.Decoder<unknown>>(
  schema: S,
  value: unknown,
  at: ReadonlyArray<string>
): Result.Result<S["Type"], ReadonlyArray<string>> => {
  const decoded = Schema.decodeUnknownResult(schema)(value, { errors: "all", onExcessProperty: "error" })
  if (Result.isSuccess(decoded)) return Result.succeed(decoded.success)
  return Result.fail(formatter(decoded.failure.issue).issues.map((issue) => {
    const where = [...at, ...(issue.path ?? []).map(String)].join(".")
    return `${where === "" ? "(the file)" : where}: ${issue.message}`
  }))
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
 * Reads and decodes the file; `source` says where it was named (`--mcp` by default, or the
 * config file's `mcp` field), and its failures name that.
 *
 * @since 0.1.0
 * @category decoding
 */
export const read = (
  path: string,
  source: Source = "--mcp",
  nameProblem?: (name: string) => string | undefined
): Effect.Effect<File, ConfigInvalidError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(path).pipe(
      Effect.mapError(() => invalid(path, "the file cannot be read (it does not exist, or is not a readable file)", source))
    )
    return yield* Effect.fromResult(decode(text, path, source, nameProblem))
  })
