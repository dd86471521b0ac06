/**
 * Tools of MCP servers as dsh tools. {@link layer} connects to each configured server through
 * `effect/ai`'s `McpClient` — a child process over stdio, or streamable HTTP — lists its
 * tools, and registers each in the `ToolRegistry` as a raw JSON Schema tool named
 * `<server>__<tool>` (`McpNames`), so calls pass through the registry: its middleware (a
 * permission policy matches MCP tools by that prefix), its containment, its timeouts.
 *
 * - **Schemas** are checked before registration (`InputSchemas`): one nested too deep or too
 *   large is refused, logged and listed in `McpServers` with its reason; the others register.
 * - **Results** become content blocks (`McpContent`): text, images, resources described as
 *   text; a result with `isError` becomes an `isError` tool result (`McpToolError`).
 * - **Failures** of servers are typed (`McpErrors`): `MCP_CONNECT`, `MCP_PROTOCOL`,
 *   `MCP_SERVER`. A server that dies fails the calls it was running with `MCP_SERVER`; the
 *   next call starts it again (a server that died between calls is started again before the
 *   call, and the call's session logs `mcp:restarted`). Calls are interruptible: an abort
 *   answers `ABORTED` and the server is told the request was cancelled.
 * - **Lifetime**: the servers run for the Layer's lifetime; closing its scope stops their
 *   processes and ends their HTTP sessions.
 * - **Environment**: a stdio server inherits only a few variables of this process
 *   ({@link defaultInheritedEnv}: `PATH`, `HOME`, …, as the MCP SDKs do), never its API keys,
 *   plus the `env` it is configured with; `inheritEnv` widens that.
 *
 * @since 0.1.0
 */
import { AdapterSettings, type Content } from "@dsh/llm"
import { type ToolErrors, Tool, ToolArgs, ToolRegistry } from "@dsh/tools"
import * as NodeChildProcessSpawner from "@effect/platform-node/NodeChildProcessSpawner"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type { McpSchema } from "effect/ai"
import { HttpClient } from "effect/http"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as InputSchemas from "./InputSchemas.ts"
import * as runtime from "./internal/runtime.ts"
import * as McpContent from "./McpContent.ts"
import { McpConnectError, type McpProtocolError, McpToolError } from "./McpErrors.ts"
import * as McpNames from "./McpNames.ts"
import { McpServers, type RefusedTool } from "./McpStatus.ts"

/**
 * A value of an environment variable or a header: plain, or `Redacted` (never shown in errors
 * or logs).
 *
 * @since 0.1.0
 * @category models
 */
export type Secret = string | Redacted.Redacted<string>

/**
 * A server started as a child process, speaking MCP over its stdin and stdout.
 *
 * @since 0.1.0
 * @category models
 */
export interface StdioServer {
  /** The program, looked up on the `PATH` the server gets. */
  readonly command: string
  readonly args?: ReadonlyArray<string> | undefined
  /** Variables set for the server, on top of the inherited ones. */
  readonly env?: Readonly<Record<string, Secret>> | undefined
  /**
   * Which variables of this process the server inherits: the names in
   * {@link defaultInheritedEnv} (the default), all of them (`true`), none (`false`), or the
   * names listed.
   */
  readonly inheritEnv?: boolean | ReadonlyArray<string> | undefined
  readonly cwd?: string | undefined
  /** How long a call may run before it is stopped (`TOOL_TIMEOUT`). No limit by default. */
  readonly timeout?: Duration.Input | undefined
  /** How long starting it (handshake and tool listing) may take. Defaults to `Options.connectTimeout`. */
  readonly connectTimeout?: Duration.Input | undefined
}

/**
 * A server reached over streamable HTTP.
 *
 * @since 0.1.0
 * @category models
 */
export interface HttpServer {
  /** Its MCP endpoint, `http:` or `https:`. */
  readonly url: string
  /** Headers sent with every request (an `authorization` header, say). */
  readonly headers?: Readonly<Record<string, Secret>> | undefined
  /** How long a call may run before it is stopped (`TOOL_TIMEOUT`). No limit by default. */
  readonly timeout?: Duration.Input | undefined
  /** How long connecting (handshake and tool listing) may take. Defaults to `Options.connectTimeout`. */
  readonly connectTimeout?: Duration.Input | undefined
}

/**
 * A server's configuration: a command (stdio) or a URL (streamable HTTP).
 *
 * @since 0.1.0
 * @category models
 */
export type ServerConfig = StdioServer | HttpServer

/**
 * The bounds applied to what servers send.
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits {
  /** How deep a tool's input schema may nest (objects and arrays); deeper ones are refused. */
  readonly maxSchemaDepth: number
  /** How many bytes of JSON a tool's input schema may have; larger ones are refused. */
  readonly maxSchemaBytes: number
  /** How many characters of a tool's description are kept; the rest is cut. */
  readonly maxDescriptionLength: number
  /** How many characters of text a result may hold; the rest is cut, with a note. */
  readonly maxResultLength: number
}

/**
 * The default bounds.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultLimits: Limits = {
  maxSchemaDepth: InputSchemas.defaultLimits.maxDepth,
  maxSchemaBytes: InputSchemas.defaultLimits.maxBytes,
  maxDescriptionLength: 4000,
  maxResultLength: McpContent.defaultLimits.maxTextLength
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The servers, by name: the name prefixes their tools (`<name>__<tool>`, see `McpNames`). */
  readonly servers: Readonly<Record<string, ServerConfig>>
  /**
   * How long starting a server (handshake and tool listing) may take. 30 seconds by default.
   * The Layer fails after it plus the time taken to stop the server: a stdio server that ignores
   * its input closing is stopped by signals, up to about 10 seconds more.
   */
  readonly connectTimeout?: Duration.Input | undefined
  readonly limits?: Partial<Limits> | undefined
}

/**
 * What the Layer's construction fails with: a server that could not be started or broke the
 * protocol (the other servers are stopped), an option that cannot work (`McpConnectError`
 * naming it, before anything starts), or a tool name another tool holds already.
 *
 * @since 0.1.0
 * @category models
 */
export type LayerError = McpConnectError | McpProtocolError | ToolErrors.RegistrationError

/**
 * The variables a stdio server inherits by default: those a program needs to run (the same
 * list as the MCP SDKs), not the secrets this process holds.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultInheritedEnv: ReadonlyArray<string> = process.platform === "win32"
  ? [
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES"
  ]
  : ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"]

const defaultConnectTimeout = Duration.seconds(30)

// How long a server that ignores SIGTERM is given before SIGKILL, when its scope closes.
const forceKillAfter = Duration.seconds(3)

const configError = (server: string, why: string) =>
  new McpConnectError({ server, message: `MCP server "${server}" cannot be started: ${why}` })

// An option of every server (`connectTimeout`, `limits`, `servers` itself): no server to name.
const optionsError = (why: string) => new McpConnectError({ server: "", message: `MCP servers cannot be started: ${why}` })

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && !Redacted.isRedacted(value)

const isSecret = (value: unknown): value is Secret =>
  typeof value === "string" || (Redacted.isRedacted(value) && typeof Redacted.value(value) === "string")

const secretValue = (value: Secret): string => (Redacted.isRedacted(value) ? Redacted.value(value) : value)

const optionNames = ["servers", "connectTimeout", "limits"]
const stdioNames = ["command", "args", "env", "inheritEnv", "cwd", "timeout", "connectTimeout"]
const httpNames = ["url", "headers", "timeout", "connectTimeout"]

/** A duration option: above zero, or why not (`name` is how the message calls it). */
const durationOption = (name: string, input: unknown): Result.Result<Duration.Duration | undefined, string> => {
  if (input === undefined) return Result.succeed(undefined)
  try {
    return AdapterSettings.duration(name, input as Duration.Input, "positive")
  } catch {
    return Result.fail(`${name} must be a duration ("30 seconds", a number of milliseconds), got ${AdapterSettings.shown(input)}`)
  }
}

/** The limits with the defaults filled in: each a whole number above zero (or `Infinity`), or why not. */
const checkLimits = (limits: unknown): Result.Result<Limits, McpConnectError> => {
  if (limits === undefined) return Result.succeed(defaultLimits)
  if (!isRecord(limits)) return Result.fail(optionsError(`the option limits must be an object, got ${AdapterSettings.shown(limits)}`))
  const unknown = AdapterSettings.unknownKeys("the option limits", limits, Object.keys(defaultLimits))
  if (unknown !== undefined) return Result.fail(optionsError(unknown))
  for (const key of Object.keys(defaultLimits) as Array<keyof Limits>) {
    const value = limits[key]
    if (value === undefined) continue
    if (typeof value !== "number" || !(value === Infinity || (Number.isSafeInteger(value) && value >= 1))) {
      return Result.fail(optionsError(`the option limits.${key} must be a whole number above zero, got ${AdapterSettings.shown(value)}`))
    }
  }
  return Result.succeed({ ...defaultLimits, ...(limits as Partial<Limits>) })
}

/** Why a stdio server's settings cannot be used to start it, or `undefined`. */
const stdioProblem = (config: Readonly<Record<string, unknown>>): string | undefined => {
  const { args, command, cwd, env, inheritEnv } = config
  if (typeof command !== "string") return `its command must be a string, got ${AdapterSettings.shown(command)}`
  if (command.trim() === "") return "its command is empty"
  if (args !== undefined) {
    if (!Array.isArray(args)) return `its args must be an array of strings, got ${AdapterSettings.shown(args)}`
    const at = args.findIndex((arg) => typeof arg !== "string")
    if (at >= 0) return `its args must be strings, but args[${at}] is ${AdapterSettings.shown(args[at])}`
  }
  if (env !== undefined) {
    if (!isRecord(env)) return `its env must be an object of variables, got ${AdapterSettings.shown(env)}`
    for (const [key, value] of Object.entries(env)) {
      if (key === "" || key.includes("=") || key.includes("\0")) return `its env has a variable name that cannot be set: ${JSON.stringify(key)}`
      if (!isSecret(value)) return `its env variable ${key} must be a string (or Redacted), got ${AdapterSettings.shown(value)}`
    }
  }
  if (
    inheritEnv !== undefined && typeof inheritEnv !== "boolean" &&
    !(Array.isArray(inheritEnv) && inheritEnv.every((name) => typeof name === "string"))
  ) {
    return `its inheritEnv must be true, false or an array of variable names, got ${AdapterSettings.shown(inheritEnv)}`
  }
  if (cwd !== undefined && (typeof cwd !== "string" || cwd === "")) {
    return `its cwd must be a directory's path, got ${AdapterSettings.shown(cwd)}`
  }
  return undefined
}

/** Why an HTTP server's headers cannot be sent, or `undefined` (Node's client throws on them). */
const headersProblem = (headers: unknown): string | undefined => {
  if (headers === undefined) return undefined
  if (!isRecord(headers)) return `its headers must be an object, got ${AdapterSettings.shown(headers)}`
  for (const [key, value] of Object.entries(headers)) {
    if (!AdapterSettings.isHeaderName(key)) return `its header name ${JSON.stringify(key)} cannot be sent: it must be an HTTP token`
    if (!isSecret(value)) return `its header ${key} must be a string (or Redacted), got ${AdapterSettings.shown(value)}`
    // The value is not quoted: it is often a secret.
    if (!AdapterSettings.isHeaderValue(secretValue(value))) {
      return `its header ${key} has a value that cannot be sent (a line break, another control character or a character beyond Latin-1)`
    }
  }
  return undefined
}

const inheritedEnv = (inherit: StdioServer["inheritEnv"]): Record<string, string> => {
  const names = inherit === true ? Object.keys(process.env) : inherit === false ? [] : inherit ?? defaultInheritedEnv
  const env: Record<string, string> = {}
  for (const name of names) {
    const value = process.env[name]
    // Exported shell functions (`() { …`) are no use to a server and can be exploits.
    if (value !== undefined && !value.startsWith("()")) env[name] = value
  }
  return env
}

const stdioEndpoint = (name: string, config: StdioServer): Result.Result<runtime.Endpoint, McpConnectError> => {
  const problem = stdioProblem(config as unknown as Readonly<Record<string, unknown>>)
  if (problem !== undefined) return Result.fail(configError(name, problem))
  const command = ChildProcess.make(config.command, [...(config.args ?? [])], {
    env: { ...inheritedEnv(config.inheritEnv), ...config.env },
    extendEnv: false,
    ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
    forceKillAfter
  })
  return Result.succeed({ _tag: "Stdio", command })
}

// The URL as errors and logs show it: without credentials or query (where tokens hide).
const shownUrl = (url: URL): string => AdapterSettings.shownUrl(url.href)

const httpEndpoint = (name: string, config: HttpServer): Result.Result<runtime.Endpoint, McpConnectError> => {
  let url: URL
  try {
    url = new URL(config.url)
  } catch {
    return Result.fail(configError(name, `its URL ${AdapterSettings.shown(config.url)} is not a URL`))
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return Result.fail(configError(name, `its URL must be http: or https:, got ${url.protocol}`))
  }
  const problem = headersProblem(config.headers)
  if (problem !== undefined) return Result.fail(configError(name, problem))
  const headers: Record<string, string> = {}
  for (const [key, value] of Object.entries(config.headers ?? {})) headers[key] = secretValue(value)
  return Result.succeed({ _tag: "Http", url: url.href, shownUrl: shownUrl(url), headers })
}

const endpointOf = (name: string, config: unknown): Result.Result<runtime.Endpoint, McpConnectError> => {
  const problem = McpNames.serverNameProblem(name)
  if (problem !== undefined) return Result.fail(configError(name, `its name is not valid: ${problem}`))
  if (!isRecord(config)) {
    return Result.fail(configError(name, `its configuration must be an object with a command or a url, got ${AdapterSettings.shown(config)}`))
  }
  const hasCommand = config["command"] !== undefined
  const hasUrl = config["url"] !== undefined
  if (hasCommand === hasUrl) {
    return Result.fail(configError(name, hasCommand ? "it has both a command and a url" : "it has neither a command nor a url"))
  }
  const unknown = AdapterSettings.unknownKeys("its configuration", config, hasCommand ? stdioNames : httpNames)
  if (unknown !== undefined) return Result.fail(configError(name, unknown))
  return hasCommand ? stdioEndpoint(name, config as unknown as StdioServer) : httpEndpoint(name, config as unknown as HttpServer)
}

/** A configured server, its options checked. */
interface CheckedServer {
  readonly name: string
  readonly endpoint: runtime.Endpoint
  readonly connectTimeout: Duration.Duration
  readonly timeout: Duration.Duration | undefined
}

/**
 * Checks the Layer's options before anything starts: each one that cannot work fails the
 * construction with `McpConnectError` naming it (and its server), instead of a defect or a
 * server started for nothing.
 */
const checkOptions = (
  options: Options
): Result.Result<{ readonly servers: ReadonlyArray<CheckedServer>; readonly limits: Limits }, McpConnectError> => {
  if (!isRecord(options)) return Result.fail(optionsError(`the options must be an object, got ${AdapterSettings.shown(options)}`))
  const unknown = AdapterSettings.unknownKeys("the options object", options, optionNames)
  if (unknown !== undefined) return Result.fail(optionsError(unknown))
  if (!isRecord(options.servers)) {
    return Result.fail(optionsError(`the option servers must be an object of servers by name, got ${AdapterSettings.shown(options.servers)}`))
  }
  const fallback = durationOption("the option connectTimeout", options.connectTimeout)
  if (Result.isFailure(fallback)) return Result.fail(optionsError(fallback.failure))
  const limits = checkLimits(options.limits)
  if (Result.isFailure(limits)) return Result.fail(limits.failure)
  const servers: Array<CheckedServer> = []
  for (const [name, config] of Object.entries(options.servers)) {
    const endpoint = endpointOf(name, config)
    if (Result.isFailure(endpoint)) return Result.fail(endpoint.failure)
    const settings = config as ServerConfig
    const timeout = durationOption("its timeout", settings.timeout)
    if (Result.isFailure(timeout)) return Result.fail(configError(name, timeout.failure))
    const connectTimeout = durationOption("its connectTimeout", settings.connectTimeout)
    if (Result.isFailure(connectTimeout)) return Result.fail(configError(name, connectTimeout.failure))
    servers.push({
      name,
      endpoint: endpoint.success,
      connectTimeout: connectTimeout.success ?? fallback.success ?? defaultConnectTimeout,
      timeout: timeout.success
    })
  }
  return Result.succeed({ servers, limits: limits.success })
}

const cut = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`)

const descriptionOf = (server: string, descriptor: McpSchema.Tool, limits: Limits) =>
  cut(
    descriptor.description ?? descriptor.title ?? `The tool "${descriptor.name}" of the MCP server "${server}"`,
    limits.maxDescriptionLength
  )

const previewOf = (value: unknown) => {
  const json = JSON.stringify(value) ?? String(value)
  return json.length <= 60 ? json : `${json.slice(0, 59)}…`
}

// The registry parses the arguments as JSON; MCP takes an object.
const notAnObject = (tool: string, args: unknown) =>
  ToolArgs.fromViolations(tool, [{
    path: [],
    kind: "type",
    expected: "an object",
    actual: previewOf(args),
    message: `Expected an object, got ${previewOf(args)}`
  }])

const toolOf = (
  rt: runtime.Runtime,
  server: runtime.Server,
  timeout: Duration.Duration | undefined,
  descriptor: McpSchema.Tool,
  name: string,
  parameters: Schema.JsonObject,
  limits: Limits
) =>
  Tool.fromJsonSchema(name, {
    description: descriptionOf(server.name, descriptor, limits),
    parameters,
    // The server's own hint: it only lets calls run beside other read-only ones.
    concurrencySafe: descriptor.annotations?.readOnlyHint === true,
    timeout,
    execute: (args) =>
      Effect.gen(function*() {
        if (!Predicate.isObject(args)) return yield* notAnObject(name, args)
        const result = yield* runtime.callTool(rt, server, descriptor, name, args)
        const resultLimits = { maxTextLength: limits.maxResultLength }
        if (result.isError === true) {
          return yield* new McpToolError({
            server: server.name,
            tool: name,
            message: McpContent.errorText(result, resultLimits)
          })
        }
        return McpContent.toBlocks(result, resultLimits) as ReadonlyArray<Content.ToolResultContent>
      })
  })

// Connects a server, lists its tools and builds the dsh tools of those it accepts.
const discover = (rt: runtime.Runtime, server: runtime.Server, timeout: Duration.Duration | undefined, limits: Limits) =>
  Effect.gen(function*() {
    const live = yield* runtime.connect(rt, server)
    const descriptors = yield* runtime.listTools(rt, server, live)
    const assigned = McpNames.assign(server.name, descriptors.map((d) => d.name))
    const tools: Array<Tool.Any> = []
    const entries: Array<{ name: string; mcpName: string }> = []
    const refused: Array<RefusedTool> = [...live.screened]
    assigned.forEach((assignment, i) => {
      const descriptor = descriptors[i]!
      if (assignment._tag === "Refused") return refused.push({ mcpName: assignment.mcpName, reason: assignment.reason })
      const schema = InputSchemas.check(descriptor.inputSchema, {
        maxDepth: limits.maxSchemaDepth,
        maxBytes: limits.maxSchemaBytes
      })
      if (Result.isFailure(schema)) return refused.push({ mcpName: assignment.mcpName, reason: schema.failure })
      tools.push(toolOf(rt, server, timeout, descriptor, assignment.name, schema.success, limits))
      entries.push({ name: assignment.name, mcpName: assignment.mcpName })
    })
    for (const r of refused) {
      yield* Effect.logWarning(
        `dsh: MCP server "${server.name}": the tool ${JSON.stringify(cut(r.mcpName, 120))} is not registered: ${r.reason}`
      )
    }
    server.tools = entries
    server.refused = refused
    yield* runtime.publish(rt)
    return tools
  })

/**
 * The MCP tools, registered for the Layer's lifetime, and the `McpServers` service, with the
 * platform services it needs given by the caller: a `ChildProcessSpawner` (stdio servers) and
 * an `HttpClient` (HTTP servers). {@link layer} provides Node's.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNoDeps = (
  options: Options
): Layer.Layer<McpServers, LayerError, ToolRegistry | ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient> =>
  Layer.effect(
    McpServers,
    Effect.gen(function*() {
      const { limits, servers: checked } = yield* Effect.fromResult(checkOptions(options))
      const servers = checked.map((c) => runtime.makeServer(c.name, c.endpoint, c.connectTimeout))
      const registry = yield* ToolRegistry
      const rt: runtime.Runtime = {
        servers,
        scope: yield* Effect.scope,
        spawner: yield* ChildProcessSpawner.ChildProcessSpawner,
        httpClient: yield* HttpClient.HttpClient,
        status: yield* SubscriptionRef.make<runtime.Snapshot>({ statuses: [], closed: false }),
        maxTextLength: limits.maxResultLength,
        closed: false
      }
      // Before anything starts: a construction that fails half-way stops what it started.
      yield* Effect.addFinalizer(() => runtime.closeAll(rt))
      yield* runtime.publish(rt)
      const tools = yield* Effect.forEach(
        servers,
        (server, i) => discover(rt, server, checked[i]!.timeout, limits),
        { concurrency: "unbounded" }
      )
      for (const tool of tools.flat()) yield* registry.register(tool)
      return McpServers.of({
        servers: Effect.map(SubscriptionRef.get(rt.status), (snapshot) => snapshot.statuses),
        // Until the snapshot the Layer's finalizer publishes, with no server too.
        changes: SubscriptionRef.changes(rt.status).pipe(
          Stream.takeUntil((snapshot) => snapshot.closed),
          Stream.map((snapshot) => snapshot.statuses)
        )
      })
    })
  )

/**
 * The MCP tools of the configured servers, registered in the `ToolRegistry` for the Layer's
 * lifetime, and the `McpServers` service, on Node (its child processes and HTTP client).
 *
 * @example
 * ```ts
 * import { Mcp } from "@dsh/mcp"
 * import { ToolRegistry } from "@dsh/tools"
 * import { Layer } from "effect"
 *
 * const McpLive = Mcp.layer({
 *   servers: {
 *     fs: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "."] },
 *     search: { url: "https://search.example.com/mcp", headers: { authorization: "Bearer …" } }
 *   }
 * }).pipe(Layer.provideMerge(ToolRegistry.layer))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<McpServers, LayerError, ToolRegistry> =>
  layerNoDeps(options).pipe(
    Layer.provide(Layer.mergeAll(
      NodeChildProcessSpawner.layer.pipe(Layer.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer))),
      NodeHttpClient.layerNodeHttp
    ))
  )

