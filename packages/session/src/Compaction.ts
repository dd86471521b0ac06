/**
 * Planning compactions: what a session's log allows to be pruned or summarized, and the sizes
 * that decide when. A compaction is data in the log (`compaction/applied`, see
 * `SessionEvent.Compaction`), and derivation applies it; this module only reads logs and
 * histories, so the loop, a CLI command and tests plan the same way.
 *
 * The rules every plan keeps:
 *
 * - a summary replaces whole completed turns: it ends at a `turn/end` (so no tool call is ever
 *   separated from its result) and covers at most everything before the last `keepTurns`
 *   completed turns, which stay verbatim, as does the turn in progress;
 * - a prune stubs only results of those older turns, larger than `minChars`, not pruned or
 *   summarized away already;
 * - neither touches the system prompt or the tool schemas, which are not in the history.
 *
 * Sizes are estimates in tokens at four characters a token, corrected by what the provider
 * reported for the last request (see the loop).
 *
 * @since 0.1.0
 */
import { Content, History, type Message } from "@dsh/llm"
import type { Compaction, PrunedResult, SessionEvent } from "./SessionEvent.ts"

/**
 * Characters per token of the estimate.
 *
 * @since 0.1.0
 * @category estimates
 */
export const charsPerToken = 4

/** What an image counts as, in characters: providers bill images as roughly a thousand tokens. */
const imageChars = 4_000

/**
 * The size of content blocks in characters, as a request carries them.
 *
 * @since 0.1.0
 * @category estimates
 */
export const charsOfContent = (content: ReadonlyArray<Content.ContentBlock | Content.ToolResultContent>): number => {
  let chars = 0
  for (const block of content) {
    switch (block.type) {
      case "text":
      case "reasoning":
        chars += block.text.length
        break
      case "tool-call":
        chars += block.name.length + block.arguments.length + 16
        break
      case "tool-result":
        chars += charsOfContent(block.content) + 16
        break
      case "image":
        chars += imageChars
        break
      default:
        chars += JSON.stringify(block).length
    }
  }
  return chars
}

/**
 * The size of a history in characters.
 *
 * @since 0.1.0
 * @category estimates
 */
export const charsOfHistory = (history: History.History | ReadonlyArray<Message.Message>): number => {
  let chars = 0
  for (const message of history) chars += charsOfContent(message.content) + 8
  return chars
}

/**
 * Characters as tokens (rounded up).
 *
 * @since 0.1.0
 * @category estimates
 */
export const tokensOf = (chars: number): number => Math.ceil(chars / charsPerToken)

/**
 * The size in characters of what events appended after a point add to the history.
 *
 * @since 0.1.0
 * @category estimates
 */
export const charsOfEvents = (events: ReadonlyArray<SessionEvent>): number => {
  let chars = 0
  for (const event of events) {
    switch (event.type) {
      case "user/message":
      case "context/message":
      case "steering/message":
      case "assistant/message":
        chars += charsOfContent(event.data.content) + 8
        break
      case "tool/result":
        chars += charsOfContent(event.data.content) + 24
        break
    }
  }
  return chars
}

/**
 * The last summary recorded in a log, if any.
 *
 * @since 0.1.0
 * @category planning
 */
export const lastSummary = (
  events: ReadonlyArray<SessionEvent>
): Extract<Compaction, { readonly kind: "summary" }> | undefined => {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === "compaction/applied" && event.data.kind === "summary") return event.data
  }
  return undefined
}

/** The seqs of the `turn/end`s of a log, in order. */
const turnEnds = (events: ReadonlyArray<SessionEvent>): Array<number> =>
  events.flatMap((event) => (event.type === "turn/end" ? [event.seq] : []))

/**
 * The range a summary may replace: from just after the last summary to the `turn/end` of the
 * last turn before the `keepTurns` newest completed ones; `undefined` when no such turn is left
 * to summarize.
 *
 * @since 0.1.0
 * @category planning
 */
export const summaryRange = (
  events: ReadonlyArray<SessionEvent>,
  keepTurns: number
): { readonly from: number; readonly through: number } | undefined => {
  const previous = lastSummary(events)
  const ends = turnEnds(events).filter((seq) => previous === undefined || seq > previous.through)
  const through = ends[ends.length - 1 - Math.max(0, keepTurns)]
  if (through === undefined) return undefined
  return { from: previous === undefined ? 0 : previous.through + 1, through }
}

/**
 * The results a prune may stub: those of the turns before the `keepTurns` newest completed
 * ones, larger than `minChars`, neither summarized away nor pruned already.
 *
 * @since 0.1.0
 * @category planning
 */
export const prunable = (
  events: ReadonlyArray<SessionEvent>,
  options: { readonly keepTurns: number; readonly minChars: number }
): ReadonlyArray<typeof PrunedResult.Type> => {
  const summarizedThrough = lastSummary(events)?.through ?? -1
  const ends = turnEnds(events)
  const before = ends[ends.length - 1 - Math.max(0, options.keepTurns)]
  if (before === undefined) return []
  const done = new Set<number>()
  for (const event of events) {
    if (event.type === "compaction/applied" && event.data.kind === "prune") for (const r of event.data.results) done.add(r.seq)
  }
  const tools = new Map<string, string>()
  const out: Array<typeof PrunedResult.Type> = []
  for (const event of events) {
    if (event.seq > before) break
    if (event.type === "tool/call") tools.set(event.data.callId, event.data.name)
    if (event.type !== "tool/result" || event.seq <= summarizedThrough || done.has(event.seq)) continue
    const chars = charsOfContent(event.data.content)
    if (chars < options.minChars) continue
    out.push({ seq: event.seq, callId: event.data.callId, tool: tools.get(event.data.callId) ?? "unknown", chars })
  }
  return out
}

/**
 * The default instruction of a summarizing call.
 *
 * @since 0.1.0
 * @category prompts
 */
export const defaultPrompt =
  "You summarize the earlier part of a conversation between a user and an AI agent that uses tools, so that the agent can " +
  "continue the work from the summary alone. Keep: the user's goals and constraints, decisions taken and why, facts " +
  "learned (file paths, names, numbers, errors and their fixes), what was done and what remains to do. Drop pleasantries " +
  "and repetition. Write plain prose and short lists; do not address anyone."

/**
 * The messages of a summarizing call: the history to summarize, then the request to
 * summarize it (so the model sees the conversation as it was, tool calls included).
 *
 * @since 0.1.0
 * @category prompts
 */
export const summaryMessages = (history: History.History, maxTokens: number): History.History =>
  History.append(history, {
    role: "user",
    content: [
      Content.text(
        `Summarize the conversation so far for your own later use, in at most ${maxTokens} tokens. ` +
          "Answer with the summary only."
      )
    ]
  })
