/**
 * The MCP servers a Layer connected to, as a service (`McpServers`): what each serves, whether it is
 * connected, its process, its restarts and its last failure. `Mcp.layer` provides it; a UI
 * shows it, a test waits on it.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"

/**
 * A registered tool of a server: its dsh name and what the server calls it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolEntry {
  readonly name: string
  readonly mcpName: string
}

/**
 * A tool of a server that was not registered, and why (a hostile schema, a name collision).
 *
 * @since 0.1.0
 * @category models
 */
export interface RefusedTool {
  readonly mcpName: string
  readonly reason: string
}

/**
 * Where a server stands:
 *
 * - `"connected"`: its connection is up (for stdio, its process runs);
 * - `"disconnected"`: its connection ended (the process exited, a call found it dead or broken);
 *   the next call to one of its tools starts it again;
 * - `"closed"`: the Layer was closed; its process is stopped.
 *
 * @since 0.1.0
 * @category models
 */
export type State = "connected" | "disconnected" | "closed"

/**
 * One server, as of the last change.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServerStatus {
  /** The name it was configured under (the prefix of its tools' names). */
  readonly name: string
  readonly transport: "stdio" | "http"
  readonly state: State
  /** The process id of a connected stdio server. */
  readonly pid: number | undefined
  /** How many times it was started again since the Layer was built. */
  readonly restarts: number
  /** What ended its last connection, or failed its last start. */
  readonly lastFailure: string | undefined
  /** What the server said it is at its handshake. */
  readonly serverInfo: { readonly name: string; readonly version: string } | undefined
  /** The tools registered for it, in the order it listed them. */
  readonly tools: ReadonlyArray<ToolEntry>
  /** The tools it listed that were not registered. */
  readonly refused: ReadonlyArray<RefusedTool>
}

/**
 * @since 0.1.0
 * @category services
 */
export class McpServers extends Context.Service<McpServers, {
  /** Every server, in configuration order. */
  readonly servers: Effect.Effect<ReadonlyArray<ServerStatus>>
  /** The current statuses, then every change of them, until the Layer closes. */
  readonly changes: Stream.Stream<ReadonlyArray<ServerStatus>>
}>()("@dsh/mcp/McpServers") {}
