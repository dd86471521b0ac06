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
import { Content, History, type Message, type ModelRequest } from "@dsh/llm"
import * as Derivation from "./Derivation.ts"
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
    if (chars <= options.minChars) continue
    const result = { seq: event.seq, callId: event.data.callId, tool: tools.get(event.data.callId) ?? "unknown", chars }
    // a stub as long as the result saves nothing (a `minChars` below the stub's own length)
    if (chars <= Derivation.prunedText(result).length) continue
    out.push(result)
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
 * The longest a block of the history is quoted in a summarizer's transcript, in characters;
 * a longer one keeps its start and its end around a note of what was left out.
 *
 * @since 0.1.0
 * @category prompts
 */
export const maxQuotedChars = 6_000

const quote = (text: string): string => {
  if (text.length <= maxQuotedChars) return text
  const head = Math.floor(maxQuotedChars * 0.75)
  const tail = maxQuotedChars - head
  return `${text.slice(0, head)}\n[… ${text.length - head - tail} characters left out …]\n${text.slice(text.length - tail)}`
}

const textOf = (content: ReadonlyArray<Content.ContentBlock | Content.ToolResultContent>): string =>
  content.map((block) => (block.type === "text" ? block.text : block.type === "image" ? "[an image]" : `[${block.type}]`)).join("\n")

/**
 * A history as plain text, one entry per block, for a summarizer: provider-neutral (a request
 * with tool calls but no tool schemas is one some providers refuse) and bounded per block
 * (see {@link maxQuotedChars}). Reasoning is left out.
 *
 * @since 0.1.0
 * @category prompts
 */
export const transcript = (history: History.History | ReadonlyArray<Message.Message>): string => {
  const names = new Map<string, string>()
  const lines: Array<string> = []
  for (const message of history) {
    for (const block of message.content) {
      switch (block.type) {
        case "text":
          if (block.text !== "") lines.push(`[${message.role}]\n${quote(block.text)}`)
          break
        case "tool-call":
          names.set(block.id, block.name)
          lines.push(`[assistant called tool ${block.name}]\n${quote(block.arguments)}`)
          break
        case "tool-result": {
          const name = names.get(block.toolCallId) ?? "a tool"
          lines.push(`[result of ${name}${block.isError ? ", an error" : ""}]\n${quote(textOf(block.content))}`)
          break
        }
        case "image":
          lines.push(`[${message.role}]\n[an image]`)
          break
        default:
          break
      }
    }
  }
  return lines.join("\n\n")
}

/**
 * The messages of a summarizing call: the history as a transcript (see {@link transcript}),
 * then the request to summarize it within `maxTokens`.
 *
 * @since 0.1.0
 * @category prompts
 */
export const summaryMessages = (history: History.History, maxTokens: number): History.History =>
  History.fromIterable([{
    role: "user",
    content: [
      Content.text(
        `<conversation>\n${transcript(history)}\n</conversation>\n\n` +
          `Summarize the conversation above for the agent's own later use, in at most ${maxTokens} tokens. ` +
          "Answer with the summary only."
      )
    ]
  }])

/**
 * The part of a history a summary through a `turn/end` replaces: all of it but the messages
 * the events after that `turn/end` (`after`) derive. At a turn's end nothing awaits a result,
 * so those messages are exactly the history's tail.
 *
 * @since 0.1.0
 * @category planning
 */
export const summarized = (history: History.History, after: ReadonlyArray<SessionEvent>): History.History => {
  const kept = Derivation.derive(after).length
  const all = History.toArray(history)
  return History.fromIterable(all.slice(0, Math.max(0, all.length - kept)))
}

/**
 * What a summarizer is asked with.
 *
 * @since 0.1.0
 * @category models
 */
export interface Summarizer {
  readonly model: string
  readonly prompt: string
  readonly maxTokens: number
}

/**
 * The request of a summarizing call over `history` (see {@link summarized}): the summarizer's
 * instruction as the system prompt, the history with the request to summarize it, no tools.
 * The loop and the replay build it the same way.
 *
 * @since 0.1.0
 * @category prompts
 */
export const summaryRequest = (history: History.History, summarizer: Summarizer): ModelRequest.ModelRequest => ({
  model: summarizer.model,
  system: summarizer.prompt,
  messages: summaryMessages(history, summarizer.maxTokens),
  maxTokens: summarizer.maxTokens
})
