/**
 * Tool-call ids a provider accepts. A model may repeat an id within one message (some local
 * servers number every call `call_0`) or give none; a provider then rejects the history
 * (results cannot be told apart), and the event contract cannot pair each call with exactly
 * one result. So before a message is logged, every call whose id is empty or already taken in
 * the message gets a fresh one, deterministically (a replay rewrites the same way), and the
 * rewrite is recorded on the `assistant/message` event.
 *
 * @internal
 */
import { type Content, Ids, type Message } from "@dsh/llm"

/** A message whose tool calls have distinct, non-empty ids, with what was rewritten. */
export interface Unique {
  readonly message: Message.Message
  readonly calls: ReadonlyArray<Content.ToolCallBlock>
  /** New id → the id the model gave; undefined when nothing was rewritten. */
  readonly rewrites: Readonly<Record<string, string>> | undefined
}

/** Gives every tool call of a message an id no other call of the message has. */
export const uniqueCallIds = (message: Message.Message): Unique => {
  const calls = message.content.filter((b): b is Content.ToolCallBlock => b.type === "tool-call")
  const taken = new Set<string>(calls.map((call) => call.id))
  const seen = new Set<string>()
  let rewrites: Record<string, string> | undefined
  const content = message.content.map((block) => {
    if (block.type !== "tool-call") return block
    if (block.id !== "" && !seen.has(block.id)) {
      seen.add(block.id)
      return block
    }
    const id = freshId(block.id, taken)
    taken.add(id)
    seen.add(id)
    ;(rewrites ??= {})[id] = block.id
    return { ...block, id: Ids.callId(id) }
  })
  if (rewrites === undefined) return { message, calls, rewrites }
  const unique: Message.Message = { ...message, content }
  return {
    message: unique,
    calls: content.filter((b): b is Content.ToolCallBlock => b.type === "tool-call"),
    rewrites
  }
}

/** `<id>_2`, `<id>_3`, … (`call_…` for an empty id): the first one not taken. */
const freshId = (id: string, taken: ReadonlySet<string>): string => {
  const base = id === "" ? "call" : id
  for (let n = 2; ; n++) {
    const candidate = `${base}_${n}`
    if (!taken.has(candidate)) return candidate
  }
}
