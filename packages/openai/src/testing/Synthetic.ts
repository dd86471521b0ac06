/**
 * Large synthetic responses of realistic shape, for benchmarks and soak tests: a reasoning
 * part, a text answer and tool calls with sizeable JSON arguments, streamed in the dialect of
 * one of the servers (a few characters per delta, every chunk in that server's envelope, its
 * usage object, `[DONE]`), cut into network writes of a given size at arbitrary byte offsets —
 * so writes split UTF-8 characters and JSON values as real reads do. Deterministic: the same
 * options give the same bytes.
 *
 * The dialects model what each server writes as far as it matters to a decoder: the envelope
 * fields around a delta, where reasoning goes, how tool calls stream, the usage object, and
 * keep-alive comments. They are modelled on the servers' documented and reported output, not
 * recorded from them.
 *
 * | dialect | envelope | reasoning | tool calls | usage |
 * |---|---|---|---|---|
 * | `deepseek` | OpenAI's, `system_fingerprint`, `logprobs: null` | `reasoning_content` | streamed | `prompt_cache_hit_tokens` + details |
 * | `openai` | with `service_tier`, `usage: null`, `obfuscation` padding | none (not streamed) | streamed | `prompt_tokens_details` |
 * | `ollama` | `fp_ollama`, `role` in every delta | `reasoning` | whole, one delta each | counts only |
 * | `vllm` | no fingerprint | `reasoning` | streamed | counts, `prompt_tokens_details: null` |
 * | `llamacpp` | keys sorted, `timings` in the last chunk | `reasoning_content` | streamed | counts |
 * | `lmstudio` | OpenAI's | `reasoning` | streamed | counts |
 * | `openrouter` | `provider`, `native_finish_reason`, `: OPENROUTER PROCESSING` comments | `reasoning` and `reasoning_details` | streamed | with `cost`, cache reads and writes |
 *
 * @since 0.1.0
 */
import { Content, Ids, Usage } from "@dsh/llm"
import type * as Schema from "effect/Schema"
import * as Fixture from "./Fixture.ts"

/**
 * The servers whose streams can be synthesized.
 *
 * @since 0.1.0
 * @category models
 */
export type Dialect = "deepseek" | "openai" | "ollama" | "vllm" | "llamacpp" | "lmstudio" | "openrouter"

/**
 * The dialects, in the order benchmarks report them.
 *
 * @since 0.1.0
 * @category constants
 */
export const dialects: ReadonlyArray<Dialect> = ["deepseek", "openai", "ollama", "vllm", "llamacpp", "lmstudio", "openrouter"]

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Whose stream (default `deepseek`). */
  readonly dialect?: Dialect
  /** Characters of reasoning (default 60 000; a dialect that streams none has none). */
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

type Json = Schema.Json
type Delta = { readonly [key: string]: Json }

interface Counts {
  readonly prompt: number
  readonly cached: number
  readonly completion: number
  readonly reasoning: number
}

// How one server writes its stream.
interface Writer {
  /** Where reasoning goes in a delta; `undefined`: the server streams none. */
  readonly reasoningKey: "reasoning_content" | "reasoning" | undefined
  /** Extra fields a reasoning delta carries besides its text. */
  readonly reasoningExtra?: (text: string) => Delta
  /** The first delta, announcing the role. */
  readonly opening: Delta
  /** A chunk around a delta, or the finish chunk (empty delta). */
  readonly chunk: (delta: Delta, finish?: string) => Json
  /** Tool calls arrive whole, one delta each. */
  readonly wholeToolCalls: boolean
  /** The last chunk, with usage. */
  readonly usage: (counts: Counts) => Json
  /** Written every so many events (keep-alive comments). */
  readonly comment?: { readonly text: string; readonly every: number }
  /** The usage as dsh reads it. */
  readonly expectedUsage: (counts: Counts) => Usage.Usage
}

const id = "chatcmpl-synthetic"
const created = 1767225600

const envelope = (fields: { readonly [key: string]: Json }, delta: Delta, finish: string | undefined, extra: { readonly [key: string]: Json } = {}): Json => ({
  id,
  object: "chat.completion.chunk",
  created,
  ...fields,
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish ?? null, ...extra }]
})

const sortKeys = (value: Json): Json => {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value === null || typeof value !== "object") return value
  const object = value as { readonly [key: string]: Json }
  return Object.fromEntries(Object.keys(object).sort().map((key) => [key, sortKeys(object[key]!)]))
}

const plainUsage = (c: Counts): Json => ({ prompt_tokens: c.prompt, completion_tokens: c.completion, total_tokens: c.prompt + c.completion })
const counted = (c: Counts): Usage.Usage => Usage.make({ inputTokens: c.prompt, outputTokens: c.completion })
const cachedUsage = (c: Counts): Usage.Usage =>
  Usage.make({ inputTokens: c.prompt - c.cached, cacheReadTokens: c.cached, outputTokens: c.completion, reasoningTokens: c.reasoning })

const writers: Readonly<Record<Dialect, Writer>> = {
  deepseek: {
    reasoningKey: "reasoning_content",
    opening: { role: "assistant", content: null, reasoning_content: "" },
    chunk: (delta, finish) => Fixture.chunk(delta, finish === undefined ? {} : { finish }),
    wholeToolCalls: false,
    usage: (c) => Fixture.usageChunk(Fixture.usage({ hit: c.cached, miss: c.prompt - c.cached, completion: c.completion, reasoning: c.reasoning })),
    expectedUsage: cachedUsage
  },
  openai: {
    reasoningKey: undefined,
    opening: { role: "assistant", content: "", refusal: null },
    chunk: (delta, finish) => ({
      ...(envelope({ model: "gpt-5.4-2026-03-05", service_tier: "default", system_fingerprint: null }, delta, finish) as object),
      usage: null,
      obfuscation: "w0Zk3vLm"
    }),
    wholeToolCalls: false,
    usage: (c) => ({
      id,
      object: "chat.completion.chunk",
      created,
      model: "gpt-5.4-2026-03-05",
      service_tier: "default",
      system_fingerprint: null,
      choices: [],
      usage: Fixture.openAiUsage({ prompt: c.prompt, cached: c.cached, completion: c.completion, reasoning: c.reasoning }),
      obfuscation: "Q2x9"
    }),
    expectedUsage: cachedUsage
  },
  ollama: {
    reasoningKey: "reasoning",
    opening: { role: "assistant", content: "", reasoning: "" },
    chunk: (delta, finish) => {
      const value = { id: "chatcmpl-812", object: "chat.completion.chunk", created, model: "qwen3:8b", system_fingerprint: "fp_ollama" }
      return { ...value, choices: [{ index: 0, delta: { role: "assistant", content: "", ...delta }, finish_reason: finish ?? null }] }
    },
    wholeToolCalls: true,
    usage: (c) => ({ id: "chatcmpl-812", object: "chat.completion.chunk", created, model: "qwen3:8b", system_fingerprint: "fp_ollama", choices: [], usage: plainUsage(c) }),
    expectedUsage: counted
  },
  vllm: {
    reasoningKey: "reasoning",
    opening: { role: "assistant", content: "" },
    chunk: (delta, finish) => envelope({ model: "Qwen/Qwen3-32B" }, delta, finish),
    wholeToolCalls: false,
    usage: (c) => ({ id, object: "chat.completion.chunk", created, model: "Qwen/Qwen3-32B", choices: [], usage: { ...(plainUsage(c) as object), prompt_tokens_details: null } }),
    expectedUsage: counted
  },
  llamacpp: {
    reasoningKey: "reasoning_content",
    opening: { role: "assistant", content: null },
    chunk: (delta, finish) =>
      sortKeys({ choices: [{ finish_reason: finish ?? null, index: 0, delta }], created, id: "chatcmpl-llamacpp", model: "gpt-oss-20b", system_fingerprint: "b7100-7ea1a2e", object: "chat.completion.chunk" }),
    wholeToolCalls: false,
    usage: (c) =>
      sortKeys({
        choices: [],
        created,
        id: "chatcmpl-llamacpp",
        model: "gpt-oss-20b",
        system_fingerprint: "b7100-7ea1a2e",
        object: "chat.completion.chunk",
        usage: plainUsage(c),
        timings: { cache_n: 0, prompt_n: c.prompt, prompt_ms: 812.4, prompt_per_second: 18_460.1, predicted_n: c.completion, predicted_ms: 51_003.2, predicted_per_second: 148.2 }
      }),
    expectedUsage: counted
  },
  lmstudio: {
    reasoningKey: "reasoning",
    opening: { role: "assistant", content: "" },
    chunk: (delta, finish) => envelope({ model: "openai/gpt-oss-20b", system_fingerprint: "openai/gpt-oss-20b" }, delta, finish),
    wholeToolCalls: false,
    usage: (c) => ({ id, object: "chat.completion.chunk", created, model: "openai/gpt-oss-20b", system_fingerprint: "openai/gpt-oss-20b", choices: [], usage: plainUsage(c) }),
    expectedUsage: counted
  },
  openrouter: {
    reasoningKey: "reasoning",
    reasoningExtra: (text) => ({ reasoning_details: [{ type: "reasoning.text", text, format: "unknown", index: 0 }] }),
    opening: { role: "assistant", content: "" },
    chunk: (delta, finish) =>
      envelope({ provider: "DeepSeek", model: "deepseek/deepseek-v4-flash" }, delta, finish, { native_finish_reason: finish ?? null }),
    wholeToolCalls: false,
    usage: (c) => ({
      id: "gen-1767225600-synthetic",
      provider: "DeepSeek",
      model: "deepseek/deepseek-v4-flash",
      object: "chat.completion.chunk",
      created,
      choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null, native_finish_reason: null, logprobs: null }],
      usage: {
        ...(Fixture.openAiUsage({ prompt: c.prompt, cached: c.cached, cacheWrite: 0, completion: c.completion, reasoning: c.reasoning }) as object),
        cost: 0.00183,
        is_byok: false,
        cost_details: { upstream_inference_cost: null }
      }
    }),
    comment: { text: ": OPENROUTER PROCESSING\n\n", every: 200 },
    expectedUsage: cachedUsage
  }
}

/**
 * A synthetic response as a fixture, with its `expect`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Fixture.Fixture => {
  const dialect = options.dialect ?? "deepseek"
  const writer = writers[dialect]
  const next = random(options.seed ?? 1)
  const reasoning = writer.reasoningKey === undefined ? "" : prose(options.reasoningChars ?? 60_000, next)
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
  const push = (json: Json) => {
    events.push(Fixture.payloadText({ data: json }))
    if (writer.comment !== undefined && events.length % writer.comment.every === 0) events.push(writer.comment.text)
  }
  if (writer.comment !== undefined) events.push(writer.comment.text)
  push(writer.chunk(writer.opening))
  const key = writer.reasoningKey
  if (key !== undefined) {
    for (const piece of deltas(reasoning, next)) push(writer.chunk({ [key]: piece, ...writer.reasoningExtra?.(piece) }))
  }
  for (const piece of deltas(content, next)) push(writer.chunk({ content: piece }))
  calls.forEach((call, index) => {
    if (writer.wholeToolCalls) {
      push(writer.chunk({ tool_calls: [{ id: call.id, index, type: "function", function: { name: call.name, arguments: call.arguments } }] }))
      return
    }
    const fragments = deltas(call.arguments, next)
    fragments.forEach((fragment, i) =>
      push(writer.chunk({
        tool_calls: [
          i === 0
            ? { index, id: call.id, type: "function", function: { name: call.name, arguments: fragment } }
            : { index, function: { arguments: fragment } }
        ]
      }))
    )
  })
  push(writer.chunk({}, calls.length > 0 ? "tool_calls" : "stop"))
  const reasoningTokens = Math.ceil(reasoning.length / 4)
  const counts: Counts = {
    prompt: 15_288,
    cached: 12_288,
    completion: reasoningTokens + Math.ceil(content.length / 4) + 100 * calls.length,
    reasoning: reasoningTokens
  }
  push(writer.usage(counts))
  events.push("data: [DONE]\n\n")

  const all = new TextEncoder().encode(events.join(""))
  const size = Math.max(1, options.writeSize ?? 16_384)
  const writes: Array<Fixture.Write> = []
  for (let at = 0; at < all.length; at += size) writes.push({ bytes: Array.from(all.subarray(at, at + size)) })

  return {
    description: `a synthetic ${(all.length / 1e6).toFixed(1)} MB ${dialect} response: ${
      reasoning === "" ? "" : "reasoning, "
    }text, ${calls.length} tool calls`,
    writes,
    expect: {
      content: [
        ...(reasoning === "" ? [] : [Content.reasoning(reasoning)]),
        Content.text(content),
        ...calls.map((call) => Content.toolCall(Ids.callId(call.id), call.name, call.arguments))
      ],
      finish: calls.length > 0 ? { kind: "tool-calls", raw: "tool_calls" } : { kind: "stop", raw: "stop" },
      usage: writer.expectedUsage(counts)
    }
  }
}
