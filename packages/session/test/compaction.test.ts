/**
 * Compaction is data in the log and the history a pure projection of it: derivation applies a
 * summary (everything up to a turn's end replaced by the summary) and a prune (large old tool
 * results replaced by stubs); the events themselves stay. The planner picks what may be
 * compacted without separating a call from its result or touching the newest turns.
 */
import { Content, History, Ids } from "@dsh/llm"
import { Compaction, Derivation, type SessionEvent } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { type Draft, toEvents } from "./helpers.ts"

const id = (n: number) => Ids.callId(`call-${n}`)

/** One completed turn: a question, a tool call with a result of `size` characters, an answer. */
const turn = (n: number, size = 10): ReadonlyArray<Draft> => [
  { type: "turn/start", data: { turn: n, trigger: "send" } },
  { type: "user/message", data: { content: [Content.text(`question ${n}`)], source: "user" } },
  { type: "step/start", data: { turn: n, step: 1 } },
  { type: "assistant/message", data: { turn: n, step: 1, content: [Content.toolCall(id(n), "read", `{"n":${n}}`)] } },
  { type: "tool/call", data: { turn: n, step: 1, callId: id(n), name: "read", arguments: `{"n":${n}}` } },
  {
    type: "tool/result",
    data: { turn: n, step: 1, callId: id(n), content: [Content.text("x".repeat(size))], isError: false }
  },
  { type: "step/end", data: { turn: n, step: 1 } },
  { type: "step/start", data: { turn: n, step: 2 } },
  { type: "assistant/message", data: { turn: n, step: 2, content: [Content.text(`answer ${n}`)] } },
  { type: "step/end", data: { turn: n, step: 2 } },
  { type: "turn/end", data: { turn: n, reason: { kind: "completed" } } }
]

const turns = (count: number, size = 10): Array<Draft> => Array.from({ length: count }, (_, i) => turn(i + 1, size)).flat()

const summary = (from: number, through: number, text = "earlier work"): Draft => ({
  type: "compaction/applied",
  data: { kind: "summary", reason: "auto", from, through, summary: text, model: "m", tokensBefore: 1000, tokensAfter: 100 }
})

const texts = (history: History.History) =>
  History.toArray(history).map((m) =>
    m.content.map((b) => (b.type === "text" ? b.text : b.type === "tool-result" ? `result:${(b.content[0] as Content.TextBlock).text.slice(0, 12)}` : b.type)).join("+")
  )

const endOf = (events: ReadonlyArray<SessionEvent.SessionEvent>, n: number) =>
  events.find((e) => e.type === "turn/end" && e.data.turn === n)!.seq

describe("Derivation of compactions", () => {
  it("a summary replaces every message up to its turn/end; the later turns stay verbatim; the history stays provider-valid", () => {
    const base = toEvents(turns(3))
    const events = [...base, ...toEvents([summary(0, endOf(base, 2))], base.length)]
    const history = Derivation.derive(events)
    expect(texts(history)).toStrictEqual([
      Derivation.summaryText("earlier work"),
      "question 3",
      "tool-call",
      "result:xxxxxxxxxx",
      "answer 3"
    ])
    expect(Derivation.problems(history)).toStrictEqual([])
    // the events stay: a history without the compaction is the original one
    expect(History.toArray(Derivation.derive(base))).toHaveLength(12)
  })

  it("a second summary replaces the first; derivation fed in any batches agrees with one from scratch", () => {
    const first = toEvents(turns(4))
    let events = [...first, ...toEvents([summary(0, endOf(first, 1), "one")], first.length)]
    const more = toEvents([...turn(5), ...turn(6)], events.length)
    events = [...events, ...more]
    events = [...events, ...toEvents([summary(endOf(first, 1) + 1, endOf(events, 5), "two")], events.length)]
    const scratch = Derivation.derive(events)
    expect(texts(scratch)[0]).toBe(Derivation.summaryText("two"))
    expect(texts(scratch).slice(1)).toStrictEqual(["question 6", "tool-call", "result:xxxxxxxxxx", "answer 6"])
    for (const size of [1, 3, 7, 20]) {
      const derivation = Derivation.make()
      for (let i = 0; i < events.length; i += size) derivation.feed(events.slice(i, i + size))
      expect(History.toArray(derivation.messages())).toStrictEqual(History.toArray(scratch))
    }
  })

  it("a prune stubs the named results with the tool, the size and the seq of the original", () => {
    const base = toEvents(turns(3, 5000))
    const results = base.filter((e) => e.type === "tool/result").slice(0, 2)
    const pruned = results.map((e) => ({ seq: e.seq, callId: (e.data as { callId: Ids.CallId }).callId, tool: "read", chars: 5000 }))
    const events = [
      ...base,
      ...toEvents([{ type: "compaction/applied", data: { kind: "prune", reason: "auto", results: pruned, tokensBefore: 4000, tokensAfter: 300 } }], base.length)
    ]
    const history = History.toArray(Derivation.derive(events))
    const resultTexts = history.flatMap((m) =>
      m.content.flatMap((b) => (b.type === "tool-result" ? [(b.content[0] as Content.TextBlock).text] : []))
    )
    expect(resultTexts[0]).toBe(Derivation.prunedText({ tool: "read", chars: 5000, seq: results[0]!.seq }))
    expect(resultTexts[1]).toBe(Derivation.prunedText({ tool: "read", chars: 5000, seq: results[1]!.seq }))
    expect(resultTexts[2]).toBe("x".repeat(5000))
    expect(Derivation.problems(Derivation.derive(events))).toStrictEqual([])
  })

  it("problems names what a provider refuses", () => {
    const call = Content.toolCall(id(1), "read", "{}")
    expect(Derivation.problems(History.make(
      { role: "user", content: [Content.text("hi")] },
      { role: "assistant", content: [call] },
      { role: "user", content: [Content.text("no result")] }
    ))).toStrictEqual(["message 2: calls call-1 are not answered before it"])
    expect(Derivation.problems(History.make({ role: "assistant", content: [call, call] }))[0]).toContain("share an id")
  })
})

describe("Compaction planning", () => {
  it("summaryRange ends at a turn/end before the newest kept turns, and starts after the last summary", () => {
    const events = toEvents(turns(4))
    expect(Compaction.summaryRange(events, 2)).toStrictEqual({ from: 0, through: endOf(events, 2) })
    expect(Compaction.summaryRange(events, 4)).toBeUndefined()
    const compacted = [...events, ...toEvents([summary(0, endOf(events, 2))], events.length)]
    expect(Compaction.summaryRange(compacted, 1)).toStrictEqual({ from: endOf(events, 2) + 1, through: endOf(events, 3) })
    expect(Compaction.summaryRange(compacted, 2)).toBeUndefined()
  })

  it("prunable lists the large results of the older turns, not the kept ones, nor ones already pruned or summarized", () => {
    const events = toEvents(turns(4, 3000))
    const all = Compaction.prunable(events, { keepTurns: 1, minChars: 1000 })
    expect(all.map((r) => r.callId)).toStrictEqual([id(1), id(2), id(3)])
    expect(all[0]).toMatchObject({ tool: "read", chars: 3000 })
    expect(Compaction.prunable(events, { keepTurns: 1, minChars: 5000 })).toStrictEqual([])
    const after = [
      ...events,
      ...toEvents([summary(0, endOf(events, 1))], events.length),
      ...toEvents([{ type: "compaction/applied", data: { kind: "prune", reason: "auto", results: [all[1]!], tokensBefore: 1, tokensAfter: 1 } }], events.length + 1)
    ]
    expect(Compaction.prunable(after, { keepTurns: 1, minChars: 1000 }).map((r) => r.callId)).toStrictEqual([id(3)])
  })

  it("prunable lists only results larger than minChars and longer than their stub", () => {
    const events = toEvents(turns(4, 3000))
    expect(Compaction.prunable(events, { keepTurns: 1, minChars: 3000 })).toStrictEqual([])
    expect(Compaction.prunable(events, { keepTurns: 1, minChars: 2999 })).toHaveLength(3)
    // a result shorter than the stub that would stand for it is never replaced, whatever minChars says
    const small = toEvents(turns(4, 40))
    expect(Compaction.prunable(small, { keepTurns: 1, minChars: 0 })).toStrictEqual([])
  })

  it("sizes: characters of content, histories and events, as tokens", () => {
    expect(Compaction.charsOfContent([Content.text("abcd"), Content.image("image/png", "…")])).toBe(4 + 4000)
    expect(Compaction.tokensOf(9)).toBe(3)
    const events = toEvents(turns(1, 100))
    expect(Compaction.charsOfEvents(events)).toBeGreaterThan(100)
    expect(Compaction.charsOfHistory(Derivation.derive(events))).toBeGreaterThan(100)
  })
})
