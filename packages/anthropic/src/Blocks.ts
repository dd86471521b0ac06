/**
 * The dsh content blocks for what Anthropic's answers carry beyond text, thinking and tool
 * calls. Both are `custom` blocks (`@dsh/llm`'s extension point), named in the `anthropic:`
 * namespace, so they persist in session logs, replay, and pass through every layer untouched;
 * this adapter sends them back exactly as they came.
 *
 * - {@link RedactedThinking}: thinking the API returned encrypted (`redacted_thinking`). It has
 *   no text to show, only opaque `data` the API needs back, unchanged, in the next request of a
 *   conversation that uses thinking — so it is not a `reasoning` block: a reasoning block's
 *   `text` is what the model thought, and other adapters and UIs read it as such.
 * - {@link ServerBlock}: a block of a kind this package does not model — a server tool's call
 *   (`server_tool_use`) or its result (`web_search_tool_result`, …), or a kind added to the API
 *   later — kept as the JSON the API sent (a streamed `input` joined and parsed), so an answer
 *   that ended with `pause_turn` can be continued by sending it back.
 *
 * (Thinking with a signature is a plain `reasoning` block: `text` is the thinking, `signature`
 * the token the API checks when it comes back.)
 *
 * @since 0.1.0
 */
import { Content } from "@dsh/llm"
import * as Schema from "effect/Schema"

/**
 * Encrypted thinking (`redacted_thinking`): a `custom` block of kind
 * `anthropic:redacted-thinking` whose data is `{ data }`, the API's opaque string.
 *
 * @example
 * ```ts
 * import { Blocks } from "@dsh/anthropic"
 *
 * const block = Blocks.RedactedThinking.make({ data: "EmwKAhgBEgy3va3pzix…" })
 * Blocks.RedactedThinking.decode(block) // { data: "EmwKAhgBEgy3va3pzix…" }
 * ```
 *
 * @since 0.1.0
 * @category kinds
 */
export const RedactedThinking = Content.defineCustom(
  "anthropic:redacted-thinking",
  Schema.Struct({ data: Schema.String })
)

/**
 * Any other Anthropic block, as the API sent it: a `custom` block of kind
 * `anthropic:server-block` whose data is `{ block }`, the block's JSON (with a string `type`).
 *
 * @since 0.1.0
 * @category kinds
 */
export const ServerBlock = Content.defineCustom(
  "anthropic:server-block",
  Schema.Struct({ block: Schema.Record(Schema.String, Schema.Json) })
)
