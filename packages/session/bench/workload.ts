/**
 * What the session benchmarks share: a realistic event mix and the table printer. Not a
 * benchmark itself (scripts/bench.mjs runs only `*.bench.ts`).
 */
import type { Session } from "@dsh/session"
import type { Effect } from "effect"

/** Runs a full GC twice when Node was started with --expose-gc (scripts/bench.mjs does). */
export const gc = (): void => {
  const collect = (globalThis as { gc?: () => void }).gc
  if (collect !== undefined) {
    collect()
    collect()
  }
}

export const hasGc = (globalThis as { gc?: unknown }).gc !== undefined

export const table = (title: string, head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): void => {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => c.padStart(widths[i] ?? 0)).join("  ")
  console.log(`\n${title}`)
  console.log(line(head))
  console.log(widths.map((w) => "-".repeat(w)).join("  "))
  for (const row of rows) console.log(line(row))
}

export const fmt = (n: number, digits = 0) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

const words = "the quick brown fox jumps over the lazy dog while reading src/session/Log.ts again "

/** Text of a given length, distinct per salt. */
export const textOf = (length: number, salt: number) =>
  `${salt} ${words.repeat(Math.ceil(length / words.length))}`.slice(0, length)

export type Draft = { readonly type: string; readonly data: unknown }

/**
 * One step of ~10.6 events and ~2.3 KB: step/start, 4 text chunks, the assistant message (text
 * and one tool call), tool/call, tool/result (600 characters), usage, step/end; every 5th step
 * opens a turn with a user message and the 5th closes it. The data is parsed from JSON text, as
 * it arrives from a model or a file, so every string is a fresh flat string (not a slice or a
 * shared literal) and every object is new (an append freezes what it is given).
 */
export const stepDrafts = (n: number): Array<Draft> => {
  const turn = 1 + Math.floor(n / 5)
  const step = 1 + (n % 5)
  const callId = `call_${n}`
  const args = `{"path":"src/file_${n}.ts"}`
  const json = JSON.stringify([
    ...(step === 1
      ? [
        { type: "turn/start", data: { turn, trigger: "send" } },
        { type: "user/message", data: { content: [{ type: "text", text: textOf(200, n) }], source: "user" } }
      ]
      : []),
    { type: "step/start", data: { turn, step } },
    ...[0, 1, 2, 3].map((i) => ({
      type: "assistant/chunk",
      data: { turn, step, chunk: { type: "text-delta", index: 0, delta: textOf(24, n * 10 + i) } }
    })),
    {
      type: "assistant/message",
      data: {
        turn,
        step,
        content: [{ type: "text", text: textOf(96, n) }, { type: "tool-call", id: callId, name: "read_file", arguments: args }],
        finishReason: { kind: "tool-calls" }
      }
    },
    { type: "tool/call", data: { turn, step, callId, name: "read_file", arguments: args } },
    { type: "tool/result", data: { turn, step, callId, content: [{ type: "text", text: textOf(600, n) }], isError: false } },
    {
      type: "usage",
      data: { turn, step, usage: { inputTokens: 1200 + n, outputTokens: 80, cacheReadTokens: 9000, cacheWriteTokens: 0 } }
    },
    { type: "step/end", data: { turn, step } },
    ...(step === 5 ? [{ type: "turn/end", data: { turn, reason: { kind: "completed" } } }] : [])
  ])
  return JSON.parse(json) as Array<Draft>
}

/** Appends a draft whatever its type (the benchmarks build drafts as plain data). */
export const appendAny = (session: Session.Session, d: Draft) =>
  (session.append as unknown as (type: string, data: unknown) => Effect.Effect<unknown>)(d.type, d.data)
