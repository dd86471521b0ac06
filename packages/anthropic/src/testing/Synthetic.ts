/**
 * Large synthetic responses of realistic shape, for benchmarks and soak tests: a thinking block
 * with its signature, a text answer and tool calls with sizeable JSON input, streamed the way
 * the Messages API streams them (a few characters per delta, every event with its `event:`
 * line, `ping`s, usage in `message_start` and `message_delta`), cut into network writes of a
 * given size at arbitrary byte offsets — so writes split UTF-8 characters, lines and JSON
 * values as real reads do. Deterministic: the same options give the same bytes.
 *
 * @since 0.1.0
 */
import { Content, Ids, Usage } from "@dsh/llm"
import type * as Schema from "effect/Schema"
import * as Fixture from "./Fixture.ts"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Characters of thinking (default 60 000). */
  readonly thinkingChars?: number
  /** Characters of the text answer (default 30 000). */
  readonly textChars?: number
  /** How many tool calls follow the text (default 6). */
  readonly toolCalls?: number
  /** Characters of each call's `content` argument (default 8 000). */
  readonly argumentChars?: number
  /** Bytes per network write (default 16 384). */
  readonly writeSize?: number
  /** Seeds the word choice (default 1). */
  readonly seed?: number
}

const words = [
  "the", "function", "returns", "a", "stream", "of", "chunks", "we", "need", "to", "check", "whether", "test",
  "fails", "because", "value", "is", "undefined", "when", "layer", "provides", "service", "so", "I", "will",
  "read", "file", "first", "then", "edit", "it", "carefully", "Effect", "Schema", "decode", "error", "—", "→",
  "naïve", "café", "résumé", "数据", "流", "✓", "`const`", "x", "=", "1;", "\n", "\n\n", "- item", "**bold**"
]

// A small deterministic generator (mulberry32): benchmarks must see the same bytes every run.
const random = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const prose = (chars: number, next: () => number): string => {
  let out = ""
  while (out.length < chars) {
    out += words[Math.floor(next() * words.length)]!
    out += " "
  }
  return out.slice(0, chars)
}

// Deltas of 2–13 characters, as models stream them (never splitting a surrogate pair).
const deltas = (text: string, next: () => number): Array<string> => {
  const chars = Array.from(text)
  const out: Array<string> = []
  for (let i = 0; i < chars.length;) {
    const n = 2 + Math.floor(next() * 12)
    out.push(chars.slice(i, i + n).join(""))
    i += n
  }
  return out
}

// The events' text cut into writes of `size` bytes at arbitrary offsets.
const cut = (text: string, size: number): Array<Fixture.Write> => {
  const bytes = new TextEncoder().encode(text)
  const writes: Array<Fixture.Write> = []
  for (let at = 0; at < bytes.length; at += size) writes.push({ bytes: Array.from(bytes.subarray(at, at + size)) })
  return writes
}

/**
 * A synthetic response as a fixture, with its `expect`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Fixture.Fixture => {
  const next = random(options.seed ?? 1)
  const thinking = prose(options.thinkingChars ?? 60_000, next)
  const answer = prose(options.textChars ?? 30_000, next)
  const callCount = options.toolCalls ?? 6
  const events: Array<Schema.Json> = []
  let pings = 0
  const push = (event: Schema.Json) => {
    events.push(event)
    // the API interleaves pings now and then
    if (++pings % 500 === 0) events.push(Fixture.ping)
  }

  push(Fixture.messageStart({ usage: Fixture.usage({ input: 1200, cacheRead: 30_000, cacheWrite: 800, output: 1 }) }))
  push(Fixture.blockStart(0, { type: "thinking", thinking: "", signature: "" }))
  for (const piece of deltas(thinking, next)) push(Fixture.thinkingDelta(0, piece))
  const signature = `EqQBCkgIARABGAIiQL${"x".repeat(300)}`
  push(Fixture.signatureDelta(0, signature))
  push(Fixture.blockStop(0))
  push(Fixture.blockStart(1, { type: "text", text: "" }))
  for (const piece of deltas(answer, next)) push(Fixture.textDelta(1, piece))
  push(Fixture.blockStop(1))

  const content: Array<Content.ContentBlock> = [Content.reasoning(thinking, signature), Content.text(answer)]
  for (let call = 0; call < callCount; call++) {
    const index = 2 + call
    const id = `toolu_synthetic_${call}`
    const args = JSON.stringify({ path: `src/file-${call}.ts`, content: prose(options.argumentChars ?? 8_000, next) })
    push(Fixture.blockStart(index, { type: "tool_use", id, name: "write", input: {} }))
    for (const piece of deltas(args, next)) push(Fixture.inputJsonDelta(index, piece))
    push(Fixture.blockStop(index))
    content.push(Content.toolCall(Ids.callId(id), "write", args))
  }
  const output = Math.ceil((thinking.length + answer.length) / 4)
  push(Fixture.messageDelta(callCount > 0 ? "tool_use" : "end_turn", { output_tokens: output }))
  push(Fixture.messageStop)

  const text = events.map((event) => Fixture.eventText(event)).join("")
  return {
    description:
      `synthetic: ${thinking.length} characters of thinking, ${answer.length} of text, ${callCount} tool calls`,
    writes: cut(text, options.writeSize ?? 16_384),
    expect: {
      content,
      finish: callCount > 0 ? { kind: "tool-calls", raw: "tool_use" } : { kind: "stop", raw: "end_turn" },
      usage: Usage.make({ inputTokens: 1200, cacheReadTokens: 30_000, cacheWriteTokens: 800, outputTokens: output })
    }
  }
}
