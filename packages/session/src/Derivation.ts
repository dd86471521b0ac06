/**
 * Derivation: the model's message history computed from a session log, which stays the single
 * source of truth.
 *
 * - `user/message` → a user message; `assistant/message` → an assistant message;
 * - `tool/result` → a user message holding one `tool-result` block;
 * - `context/message` and `steering/message` → user messages wrapped in a tagged envelope
 *   (`<context source="…">…</context>`, `<steering source="…">…</steering>`);
 * - `assistant/chunk` and the bookkeeping events are skipped.
 *
 * The history is always one a provider accepts:
 *
 * - every tool call of an assistant message is answered right after it. A user-role message
 *   logged while calls are still unanswered (a context message injected during tool
 *   execution) is placed after their results;
 * - a call still unanswered when its step, its turn or the log ends (a crash, a cut-short log)
 *   gets a synthetic error result saying no result was recorded;
 * - a result whose call is not awaiting one (no such call, or answered already) is left out.
 *
 * Derivation is incremental: a {@link Derivation} consumes only the events appended since its
 * last call and appends what they commit to a persistent {@link History.History}, so a step
 * costs O(new events) plus copying the history's tail (under 1024 pointers) and, every 1024
 * messages, its block list, never a walk or copy of the whole history (ADR 0014). Messages
 * share the log's frozen content and are frozen themselves, as is the history; nothing done to
 * them can reach the log.
 *
 * @since 0.1.0
 */
import { Content, History, type Ids, type Message } from "@dsh/llm"
import type { DataOf as SessionEventData, SessionEvent } from "./SessionEvent.ts"

/**
 * The text of the synthetic result given to a tool call that never got one.
 *
 * @since 0.1.0
 * @category constants
 */
export const noResultText = "No result was recorded for this tool call: the session ended or was interrupted before it finished."

/**
 * The `{tag, code}` of a synthetic result.
 *
 * @since 0.1.0
 * @category constants
 */
export const noResultError = Object.freeze({ tag: "NoResultRecorded", code: "ABORTED" })

/**
 * An incremental derivation over one growing log.
 *
 * @since 0.1.0
 * @category models
 */
export interface Derivation {
  /** Consumes events; they must continue the sequence consumed so far. */
  readonly feed: (events: Iterable<SessionEvent>) => void
  /** The history for everything consumed so far. */
  readonly messages: () => History.History
  /** How many events were consumed. */
  readonly consumed: () => number
}

const escapeAttribute = (value: string) =>
  value.replaceAll("&", "&amp;").replaceAll("\"", "&quot;").replaceAll("<", "&lt;")

/**
 * Wraps content in a tagged envelope. Text-only content becomes one text block; other content
 * is framed by an opening and a closing text block.
 *
 * @since 0.1.0
 * @category utils
 */
export const envelope = (
  tag: "context" | "steering",
  source: string,
  content: ReadonlyArray<Content.ContentBlock>
): ReadonlyArray<Content.ContentBlock> => {
  const open = `<${tag} source="${escapeAttribute(source)}">`
  const close = `</${tag}>`
  if (content.every((block) => block.type === "text")) {
    const text = content.map((block) => (block as Content.TextBlock).text).join("\n")
    return Object.freeze([Object.freeze(Content.text(`${open}\n${text}\n${close}`))])
  }
  return Object.freeze([Object.freeze(Content.text(open)), ...content, Object.freeze(Content.text(close))])
}

const message = (role: Message.Role, content: ReadonlyArray<Content.ContentBlock>): Message.Message =>
  Object.freeze({ role, content })

const toolResultMessage = (block: Content.ToolResultBlock): Message.Message =>
  message("user", Object.freeze([Object.freeze(block)]))

/** The text of the message a summary compaction puts in place of what it summarizes. */
export const summaryText = (summary: string): string =>
  `<summary source="compaction">\nThe earlier part of this conversation, summarized:\n${summary}\n</summary>`

const summaryMessage = (summary: string): Message.Message =>
  message("user", Object.freeze([Object.freeze(Content.text(summaryText(summary)))]))

/** The stub a prune puts in place of a tool result's content (the original stays in the log). */
export const prunedText = (pruned: { readonly tool: string; readonly chars: number; readonly seq: number }): string =>
  `[The result of tool "${pruned.tool}" (${pruned.chars} characters) was pruned to save context; the original is event ${pruned.seq} of the session log.]`

const stubOf = (
  original: Message.Message,
  pruned: { readonly tool: string; readonly chars: number; readonly seq: number }
): Content.ToolResultBlock => {
  const block = original.content[0] as Content.ToolResultBlock
  return Object.freeze({ ...block, content: Object.freeze([Object.freeze(Content.text(prunedText(pruned)))]) })
}

const noResult = (callId: Ids.CallId): Message.Message =>
  toolResultMessage({
    type: "tool-result",
    toolCallId: callId,
    content: Object.freeze([Object.freeze(Content.text(noResultText))]),
    isError: true,
    error: noResultError
  })

/**
 * Makes an empty incremental derivation.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): Derivation => {
  // the messages no later event can change, as of the end of the last feed
  let committed = History.empty
  // messages committed during the current feed, appended to `committed` at its end
  const fresh: Array<Message.Message> = []
  // calls of the last assistant message still awaiting a result, in call order
  const awaiting = new Set<Ids.CallId>()
  // user-role messages logged while calls were awaiting results
  const held: Array<Message.Message> = []
  let consumed = 0
  let cache: History.History | undefined
  // where compactions may reach back to: the number of messages committed right after each
  // turn/end (a summary replaces everything before one), and the index of the message each
  // tool/result became (a prune stubs it)
  let afterTurnEnd = new Map<number, number>()
  let resultMessage = new Map<number, number>()
  const count = () => committed.length + fresh.length

  const release = () => {
    for (const m of held) fresh.push(m)
    held.length = 0
  }

  const closeAwaiting = () => {
    for (const callId of awaiting) fresh.push(noResult(callId))
    awaiting.clear()
    release()
  }

  const userRole = (m: Message.Message) => {
    if (awaiting.size > 0) held.push(m)
    else fresh.push(m)
  }

  const feedOne = (event: SessionEvent) => {
    switch (event.type) {
      case "user/message":
        return userRole(message("user", event.data.content))
      case "context/message":
        return userRole(message("user", envelope("context", event.data.source, event.data.content)))
      case "steering/message":
        return userRole(message("user", envelope("steering", event.data.source, event.data.content)))
      case "assistant/message": {
        closeAwaiting()
        fresh.push(message("assistant", event.data.content))
        for (const block of event.data.content) if (block.type === "tool-call") awaiting.add(block.id)
        return
      }
      case "tool/result": {
        if (!awaiting.delete(event.data.callId)) return
        const block: Content.ToolResultBlock = event.data.error === undefined
          ? { type: "tool-result", toolCallId: event.data.callId, content: event.data.content, isError: event.data.isError }
          : {
            type: "tool-result",
            toolCallId: event.data.callId,
            content: event.data.content,
            isError: event.data.isError,
            error: event.data.error
          }
        resultMessage.set(event.seq, count())
        fresh.push(toolResultMessage(block))
        if (awaiting.size === 0) release()
        return
      }
      case "turn/end":
        closeAwaiting()
        afterTurnEnd.set(event.seq, count())
        return
      case "step/end":
      case "turn/start":
        return closeAwaiting()
      case "compaction/applied":
        return compact(event.data)
      default:
        return
    }
  }

  // A compaction rewrites what is already committed: the history is rebuilt (rare, and what
  // it shrinks is the point), and the positions kept for later compactions move with it.
  const compact = (compaction: SessionEventData<"compaction/applied">) => {
    if (fresh.length > 0) {
      committed = History.appendAll(committed, fresh)
      fresh.length = 0
    }
    const messages = [...History.toArray(committed)]
    if (compaction.kind === "prune") {
      for (const pruned of compaction.results) {
        const index = resultMessage.get(pruned.seq)
        if (index !== undefined) messages[index] = toolResultMessage(stubOf(messages[index]!, pruned))
      }
      committed = History.fromIterable(messages)
      return
    }
    const kept = afterTurnEnd.get(compaction.through)
    if (kept === undefined) return
    committed = History.fromIterable([summaryMessage(compaction.summary), ...messages.slice(kept)])
    const shift = (index: number) => index - kept + 1
    afterTurnEnd = new Map([...afterTurnEnd].filter(([seq]) => seq > compaction.through).map(([seq, n]) => [seq, shift(n)]))
    resultMessage = new Map([...resultMessage].filter(([, n]) => n >= kept).map(([seq, n]) => [seq, shift(n)]))
  }

  return {
    feed: (events) => {
      try {
        for (const event of events) {
          feedOne(event)
          consumed++
        }
      } finally {
        // one append per batch: the history's tail is copied once, not once per message
        if (fresh.length > 0) {
          committed = History.appendAll(committed, fresh)
          fresh.length = 0
        }
        cache = undefined
      }
    },
    messages: () => {
      if (cache !== undefined) return cache
      // pending synthetic results and held messages go on top of (a new version of) the
      // committed history; a later result or the next assistant message replaces them
      cache = awaiting.size === 0 && held.length === 0
        ? committed
        : History.appendAll(committed, [...[...awaiting].map(noResult), ...held])
      return cache
    },
    consumed: () => consumed
  }
}

/**
 * Derives the history of a complete log from scratch.
 *
 * @since 0.1.0
 * @category constructors
 */
export const derive = (events: Iterable<SessionEvent>): History.History => {
  const derivation = make()
  derivation.feed(events)
  return derivation.messages()
}

/**
 * What makes a history one a provider would refuse, if anything: a tool call not answered by
 * the messages right after its assistant message, a result that answers no call awaiting one,
 * or two calls of one message sharing an id. Empty when the history is provider-valid — which
 * every derived history is (the invariants check it after every compaction).
 *
 * @since 0.1.0
 * @category utils
 */
export const problems = (history: History.History): ReadonlyArray<string> => {
  const out: Array<string> = []
  let awaiting: Array<Ids.CallId> = []
  let index = 0
  for (const message of history) {
    const result = message.role === "user" && message.content.length === 1 && message.content[0]!.type === "tool-result"
      ? message.content[0] as Content.ToolResultBlock
      : undefined
    if (result !== undefined) {
      if (awaiting[0] !== result.toolCallId) out.push(`message ${index}: a result for ${result.toolCallId}, which is not the call awaiting one`)
      else awaiting.shift()
    } else {
      if (awaiting.length > 0) out.push(`message ${index}: calls ${awaiting.join(", ")} are not answered before it`)
      awaiting = []
      if (message.role === "assistant") {
        const ids = message.content.flatMap((block) => (block.type === "tool-call" ? [block.id] : []))
        if (new Set(ids).size !== ids.length) out.push(`message ${index}: tool calls share an id`)
        awaiting = ids
      }
    }
    index++
  }
  if (awaiting.length > 0) out.push(`the history ends with calls ${awaiting.join(", ")} unanswered`)
  return out
}
