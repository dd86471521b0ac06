/**
 * The typed failures of the MCP capability. Each carries the server's name (as configured) and
 * a catalog code; a tool result built from one carries its `{tag, code}`:
 *
 * | class | code | when |
 * |---|---|---|
 * | `McpConnectError` | `MCP_CONNECT` | a server could not be started or reached: a command that fails or exits, a URL that refuses, a handshake that fails or times out, a configuration that cannot work |
 * | `McpProtocolError` | `MCP_PROTOCOL` | a server broke the protocol: a malformed message, a result that does not decode, a message over the size limit |
 * | `McpServerError` | `MCP_SERVER` | a server failed a call: it answered with a JSON-RPC error, or it died (or became unreachable) during the call |
 * | `McpToolError` | `MCP_SERVER` | a tool reported an error (its result had `isError: true`); the message is the tool's own text |
 *
 * `McpServerError.reason` tells the server's failures apart: `"error-response"` (the connection
 * is kept) or `"disconnected"` (the connection is dropped and started again on the next call).
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import * as Schema from "effect/Schema"

/**
 * An MCP server could not be started or reached, or its handshake failed, or an option of the
 * Layer cannot work. At the Layer's construction it fails the Layer; on a restart, the call
 * that needed the server. `server` is `""` for an option of every server (`servers`,
 * `connectTimeout`, `limits`).
 *
 * @since 0.1.0
 * @category errors
 */
export class McpConnectError extends Schema.TaggedError<McpConnectError>()("McpConnectError", {
  ...HarnessError.fields("MCP_CONNECT"),
  server: Schema.String
}) {}

/**
 * An MCP server broke the protocol: a message that is not JSON-RPC, a result that does not
 * decode, a message larger than the limit. The connection is dropped; the next call starts the
 * server again.
 *
 * @since 0.1.0
 * @category errors
 */
export class McpProtocolError extends Schema.TaggedError<McpProtocolError>()("McpProtocolError", {
  ...HarnessError.fields("MCP_PROTOCOL"),
  server: Schema.String
}) {}

/**
 * Why a server failed a call:
 *
 * - `"error-response"`: it answered the call with a JSON-RPC error (`rpcCode` holds its code)
 *   or an HTTP error status (`httpStatus`); the connection is kept;
 * - `"disconnected"`: it died, closed its output or became unreachable during the call; the
 *   connection is dropped and the next call starts the server again.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ServerFailure = Schema.Literals(["error-response", "disconnected"])

/**
 * @since 0.1.0
 * @category models
 */
export type ServerFailure = typeof ServerFailure.Type

/**
 * An MCP server failed a call: a JSON-RPC error, or the server died during it.
 *
 * @since 0.1.0
 * @category errors
 */
export class McpServerError extends Schema.TaggedError<McpServerError>()("McpServerError", {
  ...HarnessError.fields("MCP_SERVER"),
  server: Schema.String,
  tool: Schema.String,
  reason: ServerFailure,
  rpcCode: Schema.optionalKey(Schema.Int),
  httpStatus: Schema.optionalKey(Schema.Int)
}) {}

/**
 * An MCP tool reported an error: its result had `isError: true`. The message is the result's
 * content in words (its text, other blocks described), which is what the model reads.
 *
 * @since 0.1.0
 * @category errors
 */
export class McpToolError extends Schema.TaggedError<McpToolError>()("McpToolError", {
  ...HarnessError.fields("MCP_SERVER"),
  server: Schema.String,
  tool: Schema.String
}) {}

/**
 * Any failure of the MCP capability.
 *
 * @since 0.1.0
 * @category models
 */
export type McpError = McpConnectError | McpProtocolError | McpServerError | McpToolError

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [McpConnectError, McpProtocolError, McpServerError, McpToolError] as const
