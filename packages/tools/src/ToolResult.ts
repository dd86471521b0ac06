/**
 * Building tool results. Every result answers one call and carries that call's id; a failed
 * result has `isError: true`, the error's message as its text (what the model reads) and the
 * error's `{tag, code}` (what code reads).
 *
 * @since 0.1.0
 */
import { Content, HarnessError } from "@dsh/llm"
import { shownName } from "./internal/text.ts"
import type * as Tool from "./Tool.ts"
import { AbortedError, ToolDeniedError } from "./ToolError.ts"

/**
 * A successful result: the body's text, or its content blocks.
 *
 * @since 0.1.0
 * @category constructors
 */
export const success = (call: Content.ToolCallBlock, output: Tool.Output): Content.ToolResultBlock =>
  Content.toolResult({
    toolCallId: call.id,
    content: typeof output === "string" ? [Content.text(output)] : output
  })

/**
 * A failed result carrying a harness error: its message as text, its `{tag, code}` as `error`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const failure = (call: Content.ToolCallBlock, error: HarnessError.HarnessError): Content.ToolResultBlock =>
  Content.toolResult({
    toolCallId: call.id,
    content: [Content.text(error.message)],
    isError: true,
    error: HarnessError.info(error)
  })

/**
 * The `ABORTED` result of a call that never ran or never finished: the loop answers every
 * call of an aborted or disposed step with one, so no call goes unanswered.
 *
 * @since 0.1.0
 * @category constructors
 */
export const aborted = (call: Content.ToolCallBlock, reason?: string): Content.ToolResultBlock =>
  failure(
    call,
    new AbortedError({
      tool: call.name,
      message: `Tool "${shownName(call.name)}" was aborted before it finished${reason === undefined ? "" : `: ${reason}`}`,
      ...(reason === undefined ? {} : { reason })
    })
  )

/**
 * The `TOOL_DENIED` result of a call a middleware refused to run.
 *
 * @since 0.1.0
 * @category constructors
 */
export const denied = (call: Content.ToolCallBlock, reason: string): Content.ToolResultBlock =>
  failure(
    call,
    new ToolDeniedError({ tool: call.name, reason, message: `Tool "${shownName(call.name)}" was denied: ${reason}` })
  )

/**
 * The text of a result, its text blocks joined by newlines (other blocks are skipped).
 *
 * @since 0.1.0
 * @category getters
 */
export const textOf = (result: Content.ToolResultBlock): string =>
  result.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n")
