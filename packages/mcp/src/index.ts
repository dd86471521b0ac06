/**
 * dsh MCP capability: tools of MCP servers (stdio and streamable HTTP) through effect/ai's McpClient
 *
 * @since 0.1.0
 */
export {}
