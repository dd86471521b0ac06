/**
 * Large synthetic responses of realistic shape, for benchmarks and soak tests: a reasoning
 * part, a text answer and tool calls with sizeable JSON arguments, streamed the way DeepSeek
 * streams them (a few characters per delta, every chunk with its `id`/`object`/`model`
 * envelope, a usage-only last chunk, `[DONE]`), cut into network writes of a given size at
 * arbitrary byte offsets — so writes split UTF-8 characters and JSON values as real reads do.
 * Deterministic: the same options give the same bytes.
 *
 * @since 0.1.0
 */
import { Content, Ids, Usage } from "@dsh/llm"
import * as Fixture from "./Fixture.ts"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Characters of reasoning (default 60 000). */
  readonly reasoningChars?: number
  /** Characters of the text answer (default 30 000). */
  readonly contentChars?: number
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

// Deltas of 1–4 "tokens" of ~4 characters, as models stream them (never splitting a surrogate pair).
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

/**
 * A synthetic response as a fixture, with its `expect`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Fixture.Fixture => {
  const next = random(options.seed ?? 1)
  const reasoning = prose(options.reasoningChars ?? 60_000, next)
  const content = prose(options.contentChars ?? 30_000, next)
  const calls = Array.from({ length: options.toolCalls ?? 6 }, (_, i) => ({
    id: `call_${String(i).padStart(2, "0")}_${Math.floor(next() * 1e9).toString(36)}`,
    name: i % 2 === 0 ? "write_file" : "bash",
    arguments: JSON.stringify(
      i % 2 === 0
        ? { path: `src/module-${i}.ts`, content: prose(options.argumentChars ?? 8_000, next) }
        : { command: `npx vitest run packages/m${i} --reporter=dot`, timeoutMs: 120000, description: prose(200, next) }
    )
  }))

  const events: Array<string> = []
  const push = (json: Parameters<typeof Fixture.data>[0]) => events.push(Fixture.payloadText({ data: json }))
  push(Fixture.chunk({ role: "assistant", content: null, reasoning_content: "" }))
  for (const piece of deltas(reasoning, next)) push(Fixture.chunk({ reasoning_content: piece }))
  for (const piece of deltas(content, next)) push(Fixture.chunk({ content: piece }))
  calls.forEach((call, index) => {
    const fragments = deltas(call.arguments, next)
    fragments.forEach((fragment, i) =>
      push(Fixture.chunk({
        tool_calls: [
          i === 0
            ? { index, id: call.id, type: "function", function: { name: call.name, arguments: fragment } }
            : { index, function: { arguments: fragment } }
        ]
      }))
    )
  })
  push(Fixture.chunk({}, { finish: calls.length > 0 ? "tool_calls" : "stop" }))
  const reasoningTokens = Math.ceil(reasoning.length / 4)
  const completion = reasoningTokens + Math.ceil(content.length / 4) + 100 * calls.length
  push(Fixture.usageChunk(Fixture.usage({ hit: 12_288, miss: 3_000, completion, reasoning: reasoningTokens })))
  events.push("data: [DONE]\n\n")

  const all = new TextEncoder().encode(events.join(""))
  const size = Math.max(1, options.writeSize ?? 16_384)
  const writes: Array<Fixture.Write> = []
  for (let at = 0; at < all.length; at += size) writes.push({ bytes: Array.from(all.subarray(at, at + size)) })

  return {
    description: `a synthetic ${(all.length / 1e6).toFixed(1)} MB response: reasoning, text, ${calls.length} tool calls`,
    writes,
    expect: {
      content: [
        Content.reasoning(reasoning),
        Content.text(content),
        ...calls.map((call) => Content.toolCall(Ids.callId(call.id), call.name, call.arguments))
      ],
      finish: calls.length > 0 ? { kind: "tool-calls", raw: "tool_calls" } : { kind: "stop", raw: "stop" },
      usage: Usage.make({ inputTokens: 3_000, cacheReadTokens: 12_288, outputTokens: completion, reasoningTokens })
    }
  }
}
