/**
 * dsh MCP capability: the tools of MCP servers (over stdio and streamable HTTP, through
 * `effect/ai`'s `McpClient`) as dsh tools named `<server>__<tool>`, registered in the tool
 * registry; their schemas checked, their results as content blocks, their servers' failures
 * typed, and dead servers started again on the next call.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as InputSchemas from "./InputSchemas.ts"
/** @since 0.1.0 */
export * as Mcp from "./Mcp.ts"
/** @since 0.1.0 */
export * as McpContent from "./McpContent.ts"
/** @since 0.1.0 */
export * as McpErrors from "./McpErrors.ts"
/** @since 0.1.0 */
export * as McpEvents from "./McpEvents.ts"
/** @since 0.1.0 */
export * as McpNames from "./McpNames.ts"
/** @since 0.1.0 */
export { McpServers } from "./McpStatus.ts"
/** @since 0.1.0 */
export * as McpStatus from "./McpStatus.ts"
