/**
 * The connections behind the MCP tools: one per configured server, started at the Layer's
 * construction, dropped when it fails (its process exits, a call finds it dead, it breaks the
 * protocol) and started again by the next call that needs it. Everything here is state of one
 * Layer (`Runtime`) and small functions over it.
 *
 * A connection lives in a scope of its own: closing it closes the MCP client, which ends the
 * server's stdin and stops its process (group), or ends its HTTP session. The Layer's scope
 * closes every connection that is still up.
 *
 * @internal
 */
import { HarnessError } from "@dsh/llm"
import { ToolContext } from "@dsh/tools"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import { McpClient, McpClientError, McpProtocol, McpSchema } from "effect/ai"
import { HttpClient } from "effect/http"
import { STATUS_CODES } from "node:http"
import { type ChildProcess, ChildProcessSpawner } from "effect/process"
import { McpConnectError, McpProtocolError, McpServerError } from "../McpErrors.ts"
import * as McpEvents from "../McpEvents.ts"
import type { RefusedTool, ServerStatus, ToolEntry } from "../McpStatus.ts"

/** @internal */
export type Endpoint =
  | { readonly _tag: "Stdio"; readonly command: ChildProcess.Command }
  | {
    readonly _tag: "Http"
    readonly url: string
    /** The URL as messages show it: no credentials, no query. */
    readonly shownUrl: string
    readonly headers: Readonly<Record<string, string>>
  }

/** What the client tells servers it is. @internal */
export const clientInfo = { name: "dsh", version: "0.1.0" } as const

/** The revision the current reference servers speak. @internal */
export const protocol = McpProtocol.v2025_11_25

/** How much of a server's stderr is kept, to explain its failures. @internal */
const stderrTailLength = 4096

/** What is known about a stdio server's process. @internal */
export interface ProcessInfo {
  pid: number | undefined
  /** How it exited, once it has. */
  exit: string | undefined
  /** What runs when it exits (set once the connection is up). */
  onExit: Effect.Effect<void>
  /** What runs when the transport stops reading its output, at a message it could not take. */
  onBroken: (error: McpClientError.McpClientError) => Effect.Effect<void>
  stderr: string
  readonly decoder: TextDecoder
}

/** A connection that is up. @internal */
export interface Live {
  readonly client: McpClient.McpClient
  readonly scope: Scope.Closeable
  readonly process: ProcessInfo | undefined
  /** The tools of the last `tools/list` answer left out because their descriptions do not decode. */
  readonly screened: Array<RefusedTool>
  /** How many requests (calls, the tool listing) are waiting for an answer on it. */
  inFlight: number
  /** Why the stdio transport stopped reading the server's output, once it has. */
  broken: McpClientError.McpClientError | undefined
}

/** One configured server. @internal */
export interface Server {
  readonly name: string
  readonly endpoint: Endpoint
  readonly connectTimeout: Duration.Duration
  readonly lock: Semaphore.Semaphore
  live: Live | undefined
  /** How many connections were made. */
  connects: number
  lastFailure: string | undefined
  closed: boolean
  serverInfo: { readonly name: string; readonly version: string } | undefined
  tools: ReadonlyArray<ToolEntry>
  refused: ReadonlyArray<RefusedTool>
}

/** What `McpServers` shows: every server, and whether the Layer has closed. @internal */
export interface Snapshot {
  readonly statuses: ReadonlyArray<ServerStatus>
  readonly closed: boolean
}

/** The state of one Layer. @internal */
export interface Runtime {
  readonly servers: ReadonlyArray<Server>
  /** The Layer's scope: closing connections in the background belongs to it. */
  readonly scope: Scope.Scope
  readonly spawner: ChildProcessSpawner.ChildProcessSpawner["Service"]
  readonly httpClient: HttpClient.HttpClient
  readonly status: SubscriptionRef.SubscriptionRef<Snapshot>
  /** How many characters of a server's own words (an error's message) a failure quotes. */
  readonly maxTextLength: number
  /** Whether the Layer's finalizer ran: no server is started again. */
  closed: boolean
}

/** A server not connected yet. @internal */
export const makeServer = (name: string, endpoint: Endpoint, connectTimeout: Duration.Duration): Server => ({
  name,
  endpoint,
  connectTimeout,
  lock: Semaphore.makeUnsafe(1),
  live: undefined,
  connects: 0,
  lastFailure: undefined,
  closed: false,
  serverInfo: undefined,
  tools: [],
  refused: []
})

const statusOf = (server: Server): ServerStatus => ({
  name: server.name,
  transport: server.endpoint._tag === "Stdio" ? "stdio" : "http",
  state: server.closed ? "closed" : server.live === undefined ? "disconnected" : "connected",
  pid: server.live?.process?.pid,
  restarts: Math.max(0, server.connects - 1),
  lastFailure: server.lastFailure,
  serverInfo: server.serverInfo,
  tools: server.tools,
  refused: server.refused
})

/** Publishes the current statuses. @internal */
export const publish = (runtime: Runtime): Effect.Effect<void> =>
  Effect.suspend(() =>
    SubscriptionRef.set(runtime.status, { statuses: runtime.servers.map(statusOf), closed: runtime.closed })
  )

// -----------------------------------------------------------------------------
// Failures in words
// -----------------------------------------------------------------------------

/** The last lines a server wrote to stderr, as a sentence to append, or "". @internal */
export const stderrNote = (process: ProcessInfo | undefined): string => {
  const text = process?.stderr.trim() ?? ""
  if (text === "") return ""
  const lines = text.split("\n").slice(-8).join("\n")
  return `\nIts last output on stderr:\n${lines.length > 1000 ? `…${lines.slice(-1000)}` : lines}`
}

// Transport errors wrap what really happened (a spawn error, a refused connection).
/**
 * An HTTP error status in words: effect's client says only "MCP HTTP status 401", and reads
 * the body only for a JSON-RPC error (its message is `description`).
 */
const httpStatusText = (reason: McpClientError.HttpError): string => {
  const phrase = STATUS_CODES[reason.status]
  const said = reason.description === undefined ? "" : `: ${reason.description}`
  const refused = reason.status === 401 || reason.status === 403
    ? ` (it refused the request's credentials: check the server's headers${
      reason.wwwAuthenticate === undefined ? "" : `; it asks for ${JSON.stringify(reason.wwwAuthenticate.slice(0, 200))}`
    })`
    : ""
  const retry = reason.retryAfter === undefined ? "" : ` (retry after ${JSON.stringify(reason.retryAfter.slice(0, 40))})`
  return `it answered HTTP ${reason.status}${phrase === undefined ? "" : ` ${phrase}`}${said}${refused}${retry}`
}

const reasonText = (error: McpClientError.McpClientError): string => {
  const reason = error.reason
  if (reason._tag === "HttpError") return httpStatusText(reason)
  const cause = "cause" in reason ? reason.cause : undefined
  const detail = cause === undefined ? "" : HarnessError.describe(cause)
  return detail === "" || reason.message.includes(detail) ? reason.message : `${reason.message}: ${detail}`
}

/**
 * A text about a server without the secrets its URL may carry: effect's errors quote the
 * request's URL with its query (where API keys often are); its credentials they redact.
 *
 * @internal
 */
export const scrubbed = (server: Server, text: string): string => {
  if (server.endpoint._tag !== "Http") return text
  const search = new URL(server.endpoint.url).search
  return search.length <= 1 ? text : text.split(search).join("?REDACTED")
}

const where = (server: Server): string =>
  server.endpoint._tag === "Http" ? ` at ${server.endpoint.shownUrl}` : ""

/**
 * A server's own words (a JSON-RPC error's message, an HTTP error's body) as a failure quotes
 * them: cut at `max` characters with a note, like the text of a result, so an error cannot
 * flood the context window either.
 *
 * @internal
 */
export const boundedText = (text: string, max: number): string => {
  if (text.length <= max) return text
  const code = text.charCodeAt(max - 1)
  // Never split a surrogate pair.
  const head = text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max)
  return `${head}[… ${text.length - head.length} more characters cut]`
}

// What a failure says about the next call: a Layer that closed starts nothing again.
const nextCall = (server: Server): string =>
  server.closed ? "its Layer was shut down" : "it will be started again on the next call"

/** What a failed connection attempt fails with. @internal */
export const connectFailure = (
  runtime: Runtime,
  server: Server,
  error: McpClientError.McpClientError,
  process: ProcessInfo | undefined,
  handshake?: Handshake
): McpConnectError | McpProtocolError => {
  const reason = error.reason
  const broken = (reason._tag === "ProtocolError" && reason.code === undefined) || reason._tag === "LimitError" ||
    reason._tag === "ValidationError"
  const text = boundedText(scrubbed(server, reasonText(error)), runtime.maxTextLength) + versionNote(reason, handshake)
  if (broken) {
    return new McpProtocolError({
      server: server.name,
      message: `MCP server "${server.name}"${where(server)} broke the protocol while connecting: ${text}${stderrNote(process)}`,
      cause: error
    })
  }
  const verb = reason._tag === "HttpError" ? "refused the connection" : server.endpoint._tag === "Http" ? "could not be reached" : "could not be started"
  return new McpConnectError({
    server: server.name,
    message: `MCP server "${server.name}"${where(server)} ${verb}: ${text}${stderrNote(process)}`,
    cause: error
  })
}

// The client refuses a handshake in another revision without saying which one it got.
const versionNote = (reason: McpClientError.McpClientError["reason"], handshake: Handshake | undefined): string => {
  const answered = handshake?.protocolVersion
  if (reason._tag !== "UnsupportedError" || answered === undefined || answered === protocol.protocolVersion) return ""
  return ` (it answered the handshake with MCP ${
    JSON.stringify(answered.length > 40 ? `${answered.slice(0, 40)}…` : answered)
  }; dsh speaks ${protocol.protocolVersion})`
}

/** How a failed call is handled, by what failed it. @internal */
type CallFailure =
  | {
    readonly _tag: "ErrorResponse"
    readonly rpcCode: number | undefined
    readonly httpStatus: number | undefined
    readonly text: string
  }
  | { readonly _tag: "SessionExpired" }
  | { readonly _tag: "Disconnected"; readonly text: string }
  | { readonly _tag: "Protocol"; readonly text: string; readonly drop: boolean }

const classify = (server: Server, error: McpClientError.McpClientError, max: number): CallFailure => {
  const failure = classifyReason(error)
  return "text" in failure ? { ...failure, text: boundedText(scrubbed(server, failure.text), max) } : failure
}

const classifyReason = (error: McpClientError.McpClientError): CallFailure => {
  const reason = error.reason
  switch (reason._tag) {
    case "ProtocolError":
      // With a code it is the server's JSON-RPC error response; without, a message that is not JSON-RPC, after
      // which a stdio transport reads nothing more.
      return reason.code === undefined
        ? { _tag: "Protocol", text: reasonText(error), drop: true }
        : { _tag: "ErrorResponse", rpcCode: reason.code, httpStatus: undefined, text: reason.description ?? reason.message }
    case "HttpError":
      return { _tag: "ErrorResponse", rpcCode: reason.code, httpStatus: reason.status, text: httpStatusText(reason) }
    case "ClosedError":
      return reason.sessionExpired === true ? { _tag: "SessionExpired" } : { _tag: "Disconnected", text: reason.message }
    case "TransportError":
    case "TimeoutError":
      return { _tag: "Disconnected", text: reasonText(error) }
    case "LimitError":
      // A stdio transport stops reading past an oversized message.
      return { _tag: "Protocol", text: reasonText(error), drop: true }
    case "ValidationError":
    case "UnsupportedError":
    case "ConfigurationError":
    case "ToolError":
      return { _tag: "Protocol", text: reasonText(error), drop: false }
  }
}

// -----------------------------------------------------------------------------
// Connecting
// -----------------------------------------------------------------------------

const newProcessInfo = (): ProcessInfo => ({
  pid: undefined,
  exit: undefined,
  onExit: Effect.void,
  onBroken: () => Effect.void,
  stderr: "",
  decoder: new TextDecoder()
})

// The spawner reports a death by signal as a failure whose cause chain names the signal.
const signalOf = (failure: unknown): string | undefined => {
  let current = failure
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const message = "message" in current ? String(current.message) : ""
    const signal = /signal: '([A-Z0-9]+)'/.exec(message)?.[1]
    if (signal !== undefined) return signal
    current = "cause" in current ? current.cause : undefined
  }
  return undefined
}

const describeExit = (exit: Exit.Exit<ChildProcessSpawner.ExitCode, unknown>): string => {
  if (Exit.isSuccess(exit)) return `exited with code ${exit.value}`
  const failure = Cause.squash(exit.cause)
  const signal = signalOf(failure)
  return signal === undefined ? `exited: ${HarnessError.describe(failure)}` : `was killed by ${signal}`
}

// The spawner the stdio transport uses, watching the process it starts: its pid, its exit (which
// drops the connection at once, so the next call starts the server again instead of failing)
// and the end of its stderr (which explains a server that fails to start or dies).
const watchingSpawner = (
  spawner: ChildProcessSpawner.ChildProcessSpawner["Service"],
  process: ProcessInfo
): ChildProcessSpawner.ChildProcessSpawner["Service"] =>
  ChildProcessSpawner.make((command) =>
    Effect.gen(function*() {
      const handle = yield* spawner.spawn(command)
      process.pid = handle.pid
      yield* handle.exitCode.pipe(
        Effect.exit,
        Effect.flatMap((exit) =>
          Effect.suspend(() => {
            process.exit = describeExit(exit)
            return process.onExit
          })
        ),
        Effect.forkScoped({ startImmediately: true })
      )
      const stderr = handle.stderr.pipe(
        Stream.tap((chunk) =>
          Effect.sync(() => {
            process.stderr = (process.stderr + process.decoder.decode(chunk, { stream: true })).slice(-stderrTailLength)
          })
        )
      )
      // The transport stops reading at a message that is not JSON-RPC or too large: its failure
      // (typed as the stream's, it is the reader's) is this stream's exit. Its end (the process
      // closing it) is left to the exit above.
      const stdout = handle.stdout.pipe(
        Stream.onExit((exit) => {
          const failure: unknown = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.findErrorOption(exit.cause)) : undefined
          return McpClientError.isMcpClientError(failure) ? Effect.suspend(() => process.onBroken(failure)) : Effect.void
        })
      )
      return ChildProcessSpawner.makeHandle({ ...handle, stderr, stdout })
    })
  )

/**
 * The transport with each `tools/list` answer screened tool by tool (and the protocol version
 * of the `initialize` answer noted): `effect/ai`'s client
 * decodes the whole list at once, so one tool with a bad description (an `inputSchema` that is
 * no object schema) would fail the connection and lose every other tool. A tool that does not
 * decode is left out of the answer and noted in `screened`, so it is refused alone.
 */
const screeningTools = (
  transport: McpClient.Transport,
  screened: Array<RefusedTool>,
  handshake: Handshake
): McpClient.Transport => ({
  ...transport,
  request: (message, tool) =>
    message.method === "tools/list"
      ? Effect.map(transport.request(message, tool), (response) => screenToolList(response, screened))
      : message.method === "initialize"
      ? Effect.tap(transport.request(message, tool), (response) => Effect.sync(() => noteHandshake(response, handshake)))
      : transport.request(message, tool)
})

/** What the server answered to `initialize`, to explain a handshake the client refused. @internal */
export interface Handshake {
  protocolVersion: string | undefined
}

const noteHandshake = (response: McpSchema.JsonRpcResponse, handshake: Handshake): void => {
  if ("error" in response || !Predicate.isObject(response.result)) return
  const version: unknown = response.result["protocolVersion"]
  if (typeof version === "string") handshake.protocolVersion = version
}

const decodeTool = Schema.decodeUnknownResult(McpSchema.Tool)

// The client decodes the whole list with the revision's own schema, which is stricter than
// `McpSchema.Tool` (an `outputSchema` must be an object schema): an entry it would refuse is
// screened out here, or it would fail the whole list and take the server's other tools with it.
const listRpc = protocol.clientRpcs.requests.get("tools/list") as { readonly successSchema: Schema.Codec<unknown> } | undefined
const decodeListed = listRpc === undefined ? undefined : Schema.decodeUnknownResult(listRpc.successSchema)

/** Why the revision's list schema refuses one entry, or `undefined` when it takes it. */
const listedProblem = (tool: unknown): string | undefined => {
  if (decodeListed === undefined) return undefined
  const decoded = decodeListed({ tools: [tool] })
  return Result.isSuccess(decoded) ? undefined : decoded.failure.message.replaceAll(`["tools"][0]`, "")
}

const screenToolList = (response: McpSchema.JsonRpcResponse, screened: Array<RefusedTool>): McpSchema.JsonRpcResponse => {
  if ("error" in response || !Predicate.isObject(response.result)) return response
  const tools: unknown = response.result["tools"]
  if (!Array.isArray(tools)) return response
  const kept: Array<unknown> = []
  tools.forEach((tool: unknown, index) => {
    const decoded = decodeTool(tool)
    // an empty name is no name: a model could not call it, and sanitized it would be only `_`s
    const empty = Result.isSuccess(decoded) && decoded.success.name.trim() === ""
    const unlisted = Result.isSuccess(decoded) && !empty ? listedProblem(tool) : undefined
    if (Result.isSuccess(decoded) && !empty && unlisted === undefined) return kept.push(tool)
    const name = Predicate.isObject(tool) && typeof tool["name"] === "string" && tool["name"].trim() !== ""
      ? tool["name"]
      : `(tool #${index + 1}, unnamed)`
    const problem = (Result.isSuccess(decoded) ? (empty ? "its name is empty" : unlisted!) : decoded.failure.message)
      .replace(/\s*\n\s*/g, " ")
    screened.push({ mcpName: name, reason: `its entry in the server's tool list is invalid: ${problem}` })
  })
  return kept.length === tools.length
    ? response
    : { jsonrpc: response.jsonrpc, id: response.id, result: { ...response.result, tools: kept } }
}

const open = (
  runtime: Runtime,
  server: Server,
  process: ProcessInfo | undefined,
  screened: Array<RefusedTool>
): Effect.Effect<McpClient.McpClient, McpConnectError | McpProtocolError, Scope.Scope> => {
  const handshake: Handshake = { protocolVersion: undefined }
  const endpoint = server.endpoint
  const transport = endpoint._tag === "Stdio"
    ? McpClient.stdio({ command: endpoint.command, protocol }).pipe(
      Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, watchingSpawner(runtime.spawner, process!))
    )
    : McpClient.http({ url: endpoint.url, protocol, headers: endpoint.headers }).pipe(
      Effect.provideService(HttpClient.HttpClient, runtime.httpClient)
    )
  return transport.pipe(
    Effect.flatMap((transport) =>
      McpClient.make({ ...clientInfo, timeout: server.connectTimeout }).pipe(
        Effect.provideService(McpClient.Transport, screeningTools(transport, screened, handshake))
      )
    ),
    Effect.mapError((error) => connectFailure(runtime, server, error, process, handshake)),
    Effect.catchDefect((defect) => Effect.fail(startDefect(runtime, server, defect, process)))
  )
}

/**
 * What a connection attempt that died fails with: the platform throws on some settings it
 * cannot use (a `cwd` that is a file: `spawn ENOTDIR`), and that is the server that could not
 * be started, not a defect of the Layer.
 */
const startDefect = (runtime: Runtime, server: Server, defect: unknown, process: ProcessInfo | undefined) =>
  new McpConnectError({
    server: server.name,
    message: `MCP server "${server.name}"${where(server)} ${
      server.endpoint._tag === "Http" ? "could not be reached" : "could not be started"
    }: ${boundedText(scrubbed(server, HarnessError.describe(defect)), runtime.maxTextLength)}${stderrNote(process)}`,
    cause: defect
  })

/**
 * Drops a connection: the server is marked disconnected at once (the next call starts it
 * again) and the connection's scope is closed in the background, in the Layer's scope, so the
 * call that found it broken is answered without waiting for the process to stop. Whether it
 * dropped it (not when a newer connection is up, or the Layer is closing).
 *
 * @internal
 */
export const drop = (runtime: Runtime, server: Server, live: Live, reason: string): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    if (server.live !== live) return Effect.succeed(false)
    server.live = undefined
    server.lastFailure = reason
    return publish(runtime).pipe(
      Effect.andThen(
        Effect.forkIn(Effect.uninterruptible(Scope.close(live.scope, Exit.void)), runtime.scope, { startImmediately: true })
      ),
      Effect.as(true)
    )
  })

const recordRestart = (server: Server, tool: string, reason: string) =>
  Effect.gen(function*() {
    const restarts = server.connects - 1
    yield* Effect.logWarning(`dsh: MCP server "${server.name}" started again (restart ${restarts}); before: ${reason}`)
    const call = yield* ToolContext.current
    if (Option.isNone(call)) return
    yield* call.value.session.append(McpEvents.Restarted, { server: server.name, tool, restarts, reason }).pipe(
      // the data is built here (a misfit is a bug); a session that closed meanwhile takes no more
      // events: either way the log line above remains
      Effect.orDie,
      Effect.catchDefect(() => Effect.void)
    )
  })

/**
 * Connects a server: a fresh scope, the transport (for stdio, the process), the handshake. An
 * attempt that fails or is interrupted closes its scope, so nothing it started outlives it.
 *
 * @internal
 */
export const connect = (runtime: Runtime, server: Server): Effect.Effect<Live, McpConnectError | McpProtocolError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const process = server.endpoint._tag === "Stdio" ? newProcessInfo() : undefined
      const screened: Array<RefusedTool> = []
      const opened = yield* Effect.exit(restore(Scope.provide(open(runtime, server, process, screened), scope)))
      if (Exit.isFailure(opened)) {
        yield* Scope.close(scope, opened)
        const failure = Cause.findErrorOption(opened.cause)
        if (Option.isSome(failure)) {
          server.lastFailure = failure.value.message
          yield* publish(runtime)
        }
        return yield* Effect.failCause(opened.cause)
      }
      const live: Live = { client: opened.value, scope, process, screened, inFlight: 0, broken: undefined }
      server.live = live
      server.connects++
      if (opened.value.serverInfo !== undefined) {
        server.serverInfo = { name: opened.value.serverInfo.name, version: opened.value.serverInfo.version }
      }
      if (process !== undefined) {
        process.onExit = Effect.suspend(() => drop(runtime, server, live, `its process ${process.exit ?? "exited"}`)).pipe(
          Effect.flatMap((dropped) =>
            dropped
              ? Effect.logWarning(`dsh: MCP server "${server.name}" stopped: its process ${process.exit}${stderrNote(process)}`)
              : Effect.void
          )
        )
        process.onBroken = (error) =>
          Effect.suspend(() => {
            live.broken = error
            return dropIfBroken(runtime, server, live)
          })
        // It may have exited between the handshake and now.
        if (process.exit !== undefined) yield* process.onExit
      }
      yield* publish(runtime)
      return live
    })
  )

/**
 * A stdio server that broke the protocol (a line on stdout that is not JSON-RPC, one too large)
 * between calls: its transport reads nothing more, so the connection is dropped at once, like a
 * process that exited, and the next call starts the server again first instead of failing
 * unsent. While requests wait, the drop waits for the last of them (see {@link waiting}):
 * dropping first would fail a waiting one as closed instead of with the break itself, and one
 * whose answer came just before the break still gets it.
 *
 * @internal
 */
export const dropIfBroken = (runtime: Runtime, server: Server, live: Live): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (live.broken === undefined || live.inFlight > 0) return Effect.void
    const text = boundedText(reasonText(live.broken), runtime.maxTextLength)
    return drop(runtime, server, live, `it broke the protocol: ${text}`).pipe(
      Effect.flatMap((dropped) =>
        dropped
          ? Effect.logWarning(`dsh: MCP server "${server.name}" stopped: it broke the protocol: ${text}${stderrNote(live.process)}`)
          : Effect.void
      )
    )
  })

/** Runs a request on a connection, counted as waiting for its answer (see {@link dropIfBroken}). */
const waiting = <A, E>(runtime: Runtime, server: Server, live: Live, request: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.suspend(() => {
    live.inFlight++
    return Effect.ensuring(
      request,
      Effect.suspend(() => {
        live.inFlight--
        return dropIfBroken(runtime, server, live)
      })
    )
  })

/**
 * The server's connection, started again first if it is down (one start at a time; calls that
 * wait for it share it).
 *
 * @internal
 */
export const ensureLive = (
  runtime: Runtime,
  server: Server,
  tool: string
): Effect.Effect<Live, McpConnectError | McpProtocolError> =>
  Semaphore.withPermit(
    server.lock,
    Effect.suspend(() => {
      if (server.live !== undefined) return Effect.succeed(server.live)
      if (server.closed) {
        return Effect.fail(
          new McpConnectError({ server: server.name, message: `MCP server "${server.name}" is closed: its Layer was shut down` })
        )
      }
      const reason = server.lastFailure ?? "it was not connected"
      return connect(runtime, server).pipe(Effect.tap(() => recordRestart(server, tool, reason)))
    })
  )

const disconnected = (server: Server, tool: string, live: Live, text: string) =>
  new McpServerError({
    server: server.name,
    tool,
    reason: "disconnected",
    message: `MCP server "${server.name}" disconnected during the call to tool "${tool}": ${text}${
      live.process?.exit === undefined ? "" : ` (its process ${live.process.exit})`
    }; ${nextCall(server)}${stderrNote(live.process)}`
  })

/**
 * Calls a tool of a server: a failure that broke the connection drops it (the next call starts
 * the server again); an expired HTTP session, after which the server ran nothing, is
 * reconnected and the call sent once more.
 *
 * @internal
 */
export const callTool = (
  runtime: Runtime,
  server: Server,
  descriptor: McpSchema.Tool,
  tool: string,
  args: Readonly<Record<string, unknown>>,
  retried = false
): Effect.Effect<McpSchema.CallToolResult, McpConnectError | McpProtocolError | McpServerError> =>
  Effect.gen(function*() {
    const live = yield* ensureLive(runtime, server, tool)
    const outcome = yield* Effect.result(waiting(runtime, server, live, live.client.callTool({ tool: descriptor, arguments: args })))
    if (Result.isSuccess(outcome)) return outcome.success
    const failure = classify(server, outcome.failure, runtime.maxTextLength)
    switch (failure._tag) {
      case "ErrorResponse":
        return yield* new McpServerError({
          server: server.name,
          tool,
          reason: "error-response",
          message: `MCP server "${server.name}" failed the call to tool "${tool}": ${failure.text}`,
          ...(failure.rpcCode === undefined ? {} : { rpcCode: failure.rpcCode }),
          ...(failure.httpStatus === undefined ? {} : { httpStatus: failure.httpStatus }),
          cause: outcome.failure
        })
      case "SessionExpired":
        yield* drop(runtime, server, live, "its HTTP session expired")
        if (!retried) return yield* callTool(runtime, server, descriptor, tool, args, true)
        return yield* disconnected(server, tool, live, "its HTTP session expired again right after it was renewed")
      case "Protocol":
        if (failure.drop) yield* drop(runtime, server, live, `it broke the protocol: ${failure.text}`)
        return yield* new McpProtocolError({
          server: server.name,
          message: `MCP server "${server.name}" broke the protocol in the call to tool "${tool}": ${failure.text}${
            failure.drop ? `; ${nextCall(server)}` : ""
          }`,
          cause: outcome.failure
        })
      case "Disconnected":
        yield* drop(runtime, server, live, failure.text)
        return yield* disconnected(server, tool, live, failure.text)
    }
  })

/**
 * Lists a server's tools with the handshake's deadline.
 *
 * @internal
 */
export const listTools = (
  runtime: Runtime,
  server: Server,
  live: Live
): Effect.Effect<ReadonlyArray<McpSchema.Tool>, McpConnectError | McpProtocolError> =>
  Effect.suspend(() => {
    // what the screening of this listing's pages leaves out, not an earlier listing's
    live.screened.length = 0
    return waiting(runtime, server, live, live.client.listTools({ timeout: server.connectTimeout }))
  }).pipe(
    Effect.mapError((error) => connectFailure(runtime, server, error, live.process))
  )

/**
 * Closes every connection (the Layer's finalizer): no server is started again after this.
 *
 * @internal
 */
export const closeAll = (runtime: Runtime): Effect.Effect<void> =>
  Effect.suspend(() => {
    runtime.closed = true
    return Effect.forEach(
      runtime.servers,
      (server) =>
        Effect.suspend(() => {
          server.closed = true
          const live = server.live
          server.live = undefined
          return live === undefined ? Effect.void : Scope.close(live.scope, Exit.void)
        }),
      { concurrency: "unbounded", discard: true }
    )
  }).pipe(Effect.andThen(publish(runtime)))
