/**
 * Properties of the checker over generated histories (see `history` in logs.ts):
 *
 * (a) a valid history triggers no rule (checked directly, and through the session store with
 *     the Layer on);
 * (b) every single mutation of a valid log — an event dropped (but the last: what remains is a
 *     prefix, and every prefix of a valid log is valid), duplicated, or two adjacent events
 *     swapped — triggers a rule when seq is left as it was;
 * (c) the same mutations of the structural events (turn, step, tool and status events, and
 *     the in-step events the rules constrain), and the swaps that move a user or steering
 *     message across a turn boundary, with seq renumbered, trigger a rule other than
 *     `seq-increments` whenever they change what the log means; those that do not (parallel
 *     tool execution, chunk order, where `usage` sits, a disposal before the agent went idle,
 *     a shorter valid log) trigger none. The meaning-changing mutations that fall outside
 *     today's rules (no rule orders agents) are classified as `gap`, trigger none either (so a
 *     rule that starts catching one fails here until it is reclassified), and are listed in
 *     rules.test.ts.
 */
import { Invariants } from "@dsh/invariants"
import { type SessionEvent, SessionStore } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  appendDraft,
  check,
  describeMutation,
  history,
  type Mutation,
  mutate,
  mutations,
  renumber,
  Tape,
  toEvents
} from "./logs.ts"

const options = (runs: number) => ({ arbitrary: { runs, size: 240 } })
const fast = { frozen: "off" } as const

const structural = new Set([
  "turn/start",
  "turn/end",
  "step/start",
  "step/end",
  "tool/call",
  "tool/result",
  "agent/status",
  "assistant/chunk",
  "assistant/message",
  "usage"
])

/** Constrained by message-in-turn: inside the open turn. */
const messages = new Set(["user/message", "steering/message"])
const boundaries = new Set(["turn/start", "turn/end"])

type Verdict = "detected" | "valid" | "gap"

const statusOf = (e: SessionEvent.SessionEvent) =>
  e.type === "agent/status" ? { agent: String(e.data.agentId), status: e.data.status } : undefined

const callIdOf = (e: SessionEvent.SessionEvent) =>
  e.type === "tool/call" || e.type === "tool/result" ? e.data.callId : undefined

/**
 * What a mutation of the structural event(s) at `m.at` does to the log's meaning, decided from
 * the log's shape (not by the checker): `detected` when it breaks the contract, `valid` when
 * the result is itself a valid log, `gap` when it changes the meaning in a way no rule covers.
 * `undefined`: not a structural mutation.
 */
const verdict = (es: ReadonlyArray<SessionEvent.SessionEvent>, m: Mutation): Verdict | undefined => {
  const e = es[m.at]!
  if (m.kind === "swap") {
    const f = es[m.at + 1]!
    // a message moved out of its turn (in a history: turn/start and the first user/message)
    if ((boundaries.has(e.type) && messages.has(f.type)) || (messages.has(e.type) && boundaries.has(f.type))) {
      return "detected"
    }
    if (!structural.has(e.type) || !structural.has(f.type)) return undefined
    const pair = `${e.type} ${f.type}`
    if (pair === "assistant/chunk assistant/chunk") return "valid"
    if (pair === "usage tool/call") return "valid"
    // two different calls: the order of tool/calls and results of different calls is free
    // (tools may run in parallel)
    const [ce, cf] = [callIdOf(e), callIdOf(f)]
    if (ce !== undefined && cf !== undefined && ce !== cf) return "valid"
    const [se, sf] = [statusOf(e), statusOf(f)]
    // (running, turn/start) and (turn/end, idle) swapped: status-matches-turns
    // gap: no rule says agents own the log in sequence (only that nothing follows a disposal)
    if (se?.status === "disposed" && sf !== undefined && sf.agent !== se.agent) {
      return m.at + 2 < es.length ? "detected" : "gap"
    }
    // (idle, disposed) of one agent that had run swapped: disposed, then the same id idle again is
    // an agent created again under that id (a new life), and what followed the disposal follows it
    if (
      se?.status === "idle" && sf?.status === "disposed" && se.agent === sf.agent &&
      es.slice(0, m.at).some((x) => statusOf(x)?.agent === se.agent)
    ) {
      return m.at + 2 < es.length ? "gap" : "valid"
    }
    return "detected"
  }
  if (!structural.has(e.type)) return undefined
  if (m.kind === "duplicate") return e.type === "assistant/chunk" || e.type === "usage" ? "valid" : "detected"
  // drop
  switch (e.type) {
    case "assistant/chunk":
    case "usage":
      return "valid"
    case "assistant/message": {
      const end = es.findIndex((x, i) => i > m.at && x.type === "step/end")
      const rest = es.slice(m.at + 1, end)
      return rest.some((x) => x.type === "tool/call" || x.type === "usage") ? "detected" : "valid"
    }
    case "turn/end":
      // a later turn/start (turn-pairing) or status (status-matches-turns) finds the turn open;
      // a history logs a status after every turn, so the remaining case is only a safeguard: a
      // log cut inside the turn
      return es.some((x, i) => i > m.at && (x.type === "turn/start" || x.type === "agent/status")) ? "detected" : "valid"
    case "agent/status": {
      const { agent, status } = statusOf(e)!
      const later = es.slice(m.at + 1).map(statusOf).find((s) => s?.agent === agent)
      const first = !es.slice(0, m.at).some((x) => statusOf(x)?.agent === agent)
      if (first) {
        if (later !== undefined) return "detected" // its next status is its first: not idle
        const afterDisposal = es.slice(0, m.at).some((x) => statusOf(x)?.status === "disposed")
        return afterDisposal && m.at + 1 < es.length ? "detected" : "valid"
      }
      // the turn/start that follows finds the agent idle (status-matches-turns)
      if (status === "running") return "detected"
      if (status === "idle") {
        if (later === undefined) return "valid" // the agent is still running when the log ends
        // running repeats; or running → disposed: disposed after its turn ended, before it went
        // idle, as the loop logs a disposal between turns
        return later.status === "running" ? "detected" : "valid"
      }
      // disposed: a new agent's idle follows (agents in sequence is not a rule), or nothing
      return m.at + 1 < es.length ? "gap" : "valid"
    }
    default:
      // turn/start, step/start, step/end, tool/call, tool/result
      return "detected"
  }
}

describe("Properties: generated valid histories", () => {
  it.prop("(a) a valid history triggers no rule", [Tape], ([tape]) => {
    const events = toEvents(history(tape))
    expect(check(events)).toStrictEqual([])
  }, options(300))

  it.effect.prop(
    "(a) through the session store with the Layer on: no violation, verify succeeds",
    [Tape],
    ([tape]) =>
      Effect.gen(function*() {
        const store = yield* SessionStore
        const invariants = yield* Invariants
        const session = yield* store.create()
        for (const d of history(tape)) yield* appendDraft(session, d)
        yield* invariants.verify
        expect(yield* invariants.violations).toStrictEqual([])
      }).pipe(Effect.scoped, Effect.provide(Invariants.layer.pipe(Layer.provideMerge(SessionStore.layer)))),
    options(60)
  )

  it.prop("(b) every single mutation, seq left as it was, triggers a rule", [Tape], ([tape]) => {
    const events = toEvents(history(tape))
    for (const m of mutations(events.length)) {
      if (m.kind === "drop" && m.at === events.length - 1) continue // a prefix: valid
      const found = check(mutate(events, m), fast)
      if (found.length === 0) expect.fail(`no rule caught: ${describeMutation(events, m)}`)
    }
  }, options(150))

  it.prop(
    "(c) structural mutations, seq renumbered, trigger a rule other than seq-increments iff they change the meaning",
    [Tape],
    ([tape]) => {
      const events = toEvents(history(tape))
      for (const m of mutations(events.length)) {
        const expected = verdict(events, m)
        if (expected === undefined) continue
        const found = check(renumber(mutate(events, m)), fast)
        expect(found.filter((v) => v.rule === "seq-increments")).toStrictEqual([])
        if (expected === "detected" && found.length === 0) {
          expect.fail(`no rule caught: ${describeMutation(events, m)}`)
        }
        if (expected === "valid" && found.length > 0) {
          expect.fail(`a meaning-preserving mutation was flagged: ${describeMutation(events, m)}: ${found[0]!.message}`)
        }
        if (expected === "gap" && found.length > 0) {
          expect.fail(`a known gap is caught now (classify it as detected): ${describeMutation(events, m)}: ${found[0]!.message}`)
        }
      }
    },
    options(150)
  )
})

/** mulberry32, for the deterministic coverage check below. */
const rng = (seed: number) => {
  let a = seed >>> 0
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe("Properties: the generator and the mutations reach every shape", () => {
  it("random tapes produce every feature of a valid history, and every verdict of (c)", () => {
    const next = rng(5)
    const seen = new Set<string>()
    const verdicts = new Map<string, number>()
    for (let run = 0; run < 300; run++) {
      const tape = Array.from({ length: 240 }, () => Math.floor(next() * 100))
      const events = toEvents(history(tape))
      expect(check(events)).toStrictEqual([])
      for (const [i, e] of events.entries()) {
        const d = e.data as Record<string, unknown>
        // the latest turn/end or status before this event
        const previous = events.slice(0, i).findLast((x) => x.type === "turn/end" || x.type === "agent/status")
        seen.add(e.type)
        if (e.type === "turn/end") seen.add(`end:${e.data.reason.kind}`)
        if (e.type === "tool/result" && e.data.error?.code === "ABORTED") seen.add("aborted result")
        if (e.type === "tool/call" && events[i + 1]?.type === "tool/call") seen.add("parallel calls")
        if (e.type === "tool/call" && events[i + 1]?.type === "context/message") seen.add("context between call and result")
        if (e.type === "step/start" && events[i + 1]?.type === "step/end") seen.add("empty step")
        if (e.type === "agent/status" && d["agentId"] === "agent-2") seen.add("third agent")
        if (e.type === "tool/call" && e.data.callId === "call_1" && e.data.step === 2) seen.add("scripted ids reused")
        if (e.type === "error" && events[i - 1]?.type === "turn/end") seen.add("error after turn")
        if (e.type === "turn/start" && previous?.type === "turn/end") seen.add("turns back to back")
        if (d["status"] === "disposed" && previous?.type === "turn/end" && previous.data.reason.kind !== "disposed") {
          seen.add("disposed between turns")
        }
      }
      for (const m of mutations(events.length)) {
        const v = verdict(events, m)
        if (v !== undefined) verdicts.set(`${m.kind}:${v}`, (verdicts.get(`${m.kind}:${v}`) ?? 0) + 1)
      }
    }
    for (
      const feature of [
        "turn/start",
        "steering/message",
        "context/message",
        "error",
        "test:note",
        "assistant/chunk",
        "usage",
        "end:completed",
        "end:aborted",
        "end:error",
        "end:limit",
        "end:disposed",
        "aborted result",
        "parallel calls",
        "context between call and result",
        "empty step",
        "third agent",
        "scripted ids reused",
        "error after turn",
        "turns back to back",
        "disposed between turns"
      ]
    ) {
      expect(seen, feature).toContain(feature)
    }
    for (const v of ["drop:detected", "drop:valid", "drop:gap", "duplicate:detected", "duplicate:valid", "swap:detected", "swap:valid", "swap:gap"]) {
      expect(verdicts.get(v) ?? 0, v).toBeGreaterThan(0)
    }
  })
})
