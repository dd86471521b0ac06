/**
 * The session events of the MCP capability, appended to the session of the call they concern
 * (through `ToolContext`), so a log says what happened to the servers behind its tool calls.
 *
 * @since 0.1.0
 */
import { SessionEvent } from "@dsh/session"
import * as Schema from "effect/Schema"

/**
 * A call found its server gone (it had died, broken the protocol or been disconnected) and
 * started it again before it ran. Whatever state the server held in memory is lost: the log
 * says so here, before the call's result. `restarts` counts the restarts of that server since
 * the Layer was built, `reason` is what ended the previous connection.
 *
 * @since 0.1.0
 * @category events
 */
export const Restarted = SessionEvent.define(
  "mcp:restarted",
  Schema.Struct({
    server: Schema.String,
    tool: Schema.String,
    restarts: Schema.Int,
    reason: Schema.String
  })
)
