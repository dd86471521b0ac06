/**
 * How the command shows what an agent does, as text: a tool call and its result in one line
 * each (name, arguments, a bounded preview, duration, the code on failure), a turn's usage, a
 * conversation from its log. Plain functions of events and data; `run`, `chat` and
 * `sessions show` print what they return.
 *
 * @since 0.1.0
 */
import { type Content, History, type Message, ModelInfo, Usage } from "@dsh/llm"
import { Derivation, type SessionEvent } from "@dsh/session"

/**
 * ANSI styles, or none (output that is not a terminal, `NO_COLOR`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Style {
  readonly dim: (text: string) => string
  readonly bold: (text: string) => string
  readonly red: (text: string) => string
  readonly green: (text: string) => string
  readonly cyan: (text: string) => string
  readonly yellow: (text: string) => string
}

const sgr = (on: string, off: string) => (text: string) => text === "" ? "" : `\u001b[${on}m${text}\u001b[${off}m`

/**
 * @since 0.1.0
 * @category constants
 */
export const ansi: Style = {
  dim: sgr("2", "22"),
  bold: sgr("1", "22"),
  red: sgr("31", "39"),
  green: sgr("32", "39"),
  cyan: sgr("36", "39"),
  yellow: sgr("33", "39")
}

const identity = (text: string) => text

/**
 * @since 0.1.0
 * @category constants
 */
export const plain: Style = { dim: identity, bold: identity, red: identity, green: identity, cyan: identity, yellow: identity }

/**
 * ANSI on a terminal unless `NO_COLOR` is set.
 *
 * @since 0.1.0
 * @category constructors
 */
export const styleFor = (isTerminal: boolean, env: Readonly<Record<string, string | undefined>>): Style =>
  isTerminal && (env["NO_COLOR"] ?? "") === "" ? ansi : plain

/**
 * One line of at most `max` characters: whitespace runs collapsed, cut with an ellipsis.
 *
 * @since 0.1.0
 * @category utils
 */
export const preview = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= max ? flat : `${flat.slice(0, Math.max(0, max - 1))}…`
}

/**
 * A duration in milliseconds, short: `0.4s`, `12s`, `3m05s`.
 *
 * @since 0.1.0
 * @category utils
 */
export const duration = (millis: number): string => {
  const seconds = Math.max(0, millis) / 1000
  if (seconds < 10) return `${seconds.toFixed(1)}s`
  if (seconds < 60) return `${Math.round(seconds)}s`
  const minutes = Math.floor(seconds / 60)
  return `${minutes}m${String(Math.round(seconds % 60)).padStart(2, "0")}s`
}

// By hand, not `toLocaleString("en-US")`: its first call loads ICU's number formatting, ~10 ms of
// the command's start.
const count = (n: number): string => {
  const grouped = String(Math.round(Math.abs(n))).replace(/\B(?=(\d{3})+$)/g, ",")
  return n < 0 ? `-${grouped}` : grouped
}

/**
 * A usage summary: `in 1,234 (cache hit 1,024) · out 56 (reasoning 12)`, and what it cost,
 * `· $0.0012`, when the model's pricing is known (its registry entry).
 *
 * @since 0.1.0
 * @category rendering
 */
export const usage = (u: Usage.Usage, pricing?: ModelInfo.Pricing): string => {
  const input = Usage.totalInput(u)
  const parts = [`in ${count(input)} (cache hit ${count(u.cacheReadTokens)})`, `out ${count(u.outputTokens)}`]
  if (u.reasoningTokens !== undefined) parts[1] += ` (reasoning ${count(u.reasoningTokens)})`
  if (pricing !== undefined) parts.push(money(ModelInfo.cost(u, pricing)))
  return parts.join(" · ")
}

/** Dollars: cents from a dollar up, four decimals below (a turn often costs a fraction of a cent). */
const money = (dollars: number): string =>
  dollars === 0 ? "$0" : dollars < 0.0001 ? "<$0.0001" : `$${dollars >= 1 ? dollars.toFixed(2) : dollars.toFixed(4)}`

/**
 * The text of tool-result content: text blocks joined, other blocks named.
 *
 * @since 0.1.0
 * @category rendering
 */
export const resultText = (content: ReadonlyArray<Content.ToolResultContent>): string =>
  content.map((block) =>
    block.type === "text" ? block.text : block.type === "image" ? `[image ${block.mediaType}]` : `[${block.kind}]`
  ).join("\n")

const ARGUMENTS_PREVIEW = 80
const RESULT_PREVIEW = 80

/**
 * A tool call: its name and a preview of its arguments.
 *
 * @since 0.1.0
 * @category rendering
 */
export const toolCall = (
  data: SessionEvent.DataOf<"tool/call">,
  style: Style,
  options: { readonly columns?: number | undefined } = {}
): string => {
  const args = data.arguments.trim()
  const room = options.columns === undefined ? ARGUMENTS_PREVIEW : Math.max(20, options.columns - data.name.length - 4)
  return `${style.cyan("⚙")} ${style.bold(data.name)}${args === "" || args === "{}" ? "" : ` ${style.dim(preview(args, room))}`}`
}

/**
 * A tool result: ok or failed with its code, the duration since its call, a preview and the
 * number of lines.
 *
 * @since 0.1.0
 * @category rendering
 */
export const toolResult = (
  name: string,
  data: SessionEvent.DataOf<"tool/result">,
  millis: number | undefined,
  style: Style,
  options: { readonly columns?: number | undefined } = {}
): string => {
  const text = resultText(data.content)
  const lines = text === "" ? 0 : text.split("\n").length
  const took = millis === undefined ? "" : ` ${duration(millis)}`
  const head = data.isError
    ? `  ✗ ${name}${took} ${data.error?.code ?? "ERROR"}`
    : `  ✓ ${name}${took}${lines > 1 ? ` (${lines} lines)` : ""}`
  // on a terminal the preview fills the rest of the line and no more
  const room = options.columns === undefined ? RESULT_PREVIEW : Math.max(20, options.columns - head.length - 3)
  const shown = preview(text, room)
  if (data.isError) {
    const code = data.error?.code ?? "ERROR"
    return `  ${style.red("✗")} ${name}${took} ${style.red(code)}${shown === "" ? "" : `: ${style.dim(shown)}`}`
  }
  const size = lines > 1 ? ` (${lines} lines)` : ""
  return `  ${style.green("✓")} ${name}${took}${size}${shown === "" ? "" : ` ${style.dim(shown)}`}`
}

/**
 * How a turn ended, in words, for anything but `completed`.
 *
 * @since 0.1.0
 * @category rendering
 */
export const turnEnd = (reason: SessionEvent.TurnEndReason): string | undefined => {
  switch (reason.kind) {
    case "completed":
      return undefined
    case "aborted":
      return `turn aborted${reason.reason === undefined ? "" : `: ${reason.reason}`}`
    case "error":
      return `turn failed: ${reason.code}: ${reason.message}`
    case "disposed":
      return "turn ended: the agent was disposed"
    case "limit":
      return `turn stopped at the ${reason.name} limit: ${reason.message}`
    case "interrupted":
      return `turn interrupted: ${reason.message}`
  }
}

/**
 * A session repair, as resume reports it.
 *
 * @since 0.1.0
 * @category rendering
 */
export const repair = (r: SessionEvent.Repair): string =>
  r.kind === "torn-tail" ? `repaired a torn last line: ${r.message}` : `closed turn ${r.turn}, which a crash left open: ${r.message}`

/**
 * A compaction as one line: what it did (or why it failed) and the estimated size of the next
 * request before and after.
 *
 * @since 0.1.0
 * @category rendering
 */
export const compaction = (
  event: Extract<SessionEvent.SessionEvent, { readonly type: "compaction/applied" | "compaction/failed" }>
): string => {
  if (event.type === "compaction/failed") {
    return `compaction failed (${event.data.reason}): ${event.data.code}: ${event.data.message}; the history is unchanged`
  }
  const data = event.data
  const what = data.kind === "summary"
    ? `summarized events ${data.from}–${data.through} with ${data.model}`
    : `pruned ${data.results.length} old tool result${data.results.length === 1 ? "" : "s"}`
  return `compacted (${data.reason}): ${what} · ~${count(data.tokensBefore)} → ~${count(data.tokensAfter)} tokens`
}

// ---------------------------------------------------------------------------------------------
// a conversation from its log

const messageText = (message: Message.Message, style: Style): ReadonlyArray<string> =>
  message.content.flatMap((block): ReadonlyArray<string> => {
    switch (block.type) {
      case "text":
        return block.text === "" ? [] : [block.text]
      case "reasoning":
        return block.text === "" ? [] : [style.dim(block.text)]
      case "tool-call":
        return [`${style.cyan("⚙")} ${style.bold(block.name)} ${style.dim(preview(block.arguments, ARGUMENTS_PREVIEW))}`]
      case "tool-result": {
        const shown = preview(resultText(block.content), RESULT_PREVIEW)
        return [block.isError ? `  ${style.red("✗")} ${style.red(block.error?.code ?? "ERROR")} ${style.dim(shown)}` : `  ${style.green("✓")} ${style.dim(shown)}`]
      }
      case "image":
        return [`[image ${block.mediaType}]`]
      default:
        return [`[${block.kind}]`]
    }
  })

/**
 * A conversation from a session log: each message under its role, tool calls and results one
 * line each, how each turn ended when it did not complete.
 *
 * @since 0.1.0
 * @category rendering
 */
export const conversation = (events: ReadonlyArray<SessionEvent.SessionEvent>, style: Style): string => {
  const out: Array<string> = []
  const derivation = Derivation.make()
  let fed = 0
  let shown = 0
  const showMessagesUpTo = (end: number) => {
    derivation.feed(events.slice(fed, end))
    fed = end
    const messages = History.toArray(derivation.messages())
    for (const message of messages.slice(shown)) {
      const lines = messageText(message, style)
      if (lines.length === 0) continue
      const onlyResults = message.content.every((block) => block.type === "tool-result")
      if (!onlyResults) out.push(style.bold(message.role === "user" ? "› user" : "‹ assistant"))
      out.push(...lines)
    }
    shown = messages.length
  }
  events.forEach((event, index) => {
    if (event.type === "turn/end") {
      showMessagesUpTo(index + 1)
      const ended = turnEnd(event.data.reason)
      if (ended !== undefined) out.push(style.yellow(`(${ended})`))
      out.push("")
    } else if (event.type === "session/repair") {
      showMessagesUpTo(index + 1)
      out.push(style.yellow(`(${repair(event.data)})`))
    }
  })
  showMessagesUpTo(events.length)
  return out.join("\n").replace(/\n+$/, "") + "\n"
}
