/**
 * Properties of derivation, replay and the codec over generated histories: scripts of turns,
 * steps, assistant messages with 0..3 tool calls, results in any order, missing, duplicated or
 * stray, user, context and steering messages anywhere, chunks, bookkeeping and extension events.
 */
import { History } from "@dsh/llm"
import { Derivation, JsonlSessions, SessionEvent, SessionStore } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema, Stream } from "effect"
import {
  appendDraft,
  type Draft,
  history,
  plain,
  providerViolations,
  referenceDerive,
  Script,
  toEvents,
  viaJson
} from "./helpers.ts"

const Cuts = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 200 }))).check(Schema.isMaxLength(12))

/** Splits a list at the given positions (sorted, deduplicated, clamped). */
const batches = <A>(items: ReadonlyArray<A>, cuts: ReadonlyArray<number>): Array<ReadonlyArray<A>> => {
  const points = [...new Set(cuts.map((c) => Math.min(c, items.length)))].sort((a, b) => a - b)
  const out: Array<ReadonlyArray<A>> = []
  let from = 0
  for (const p of [...points, items.length]) {
    out.push(items.slice(from, p))
    from = p
  }
  return out
}

const options = { arbitrary: { runs: 250, size: 40 } }

describe("Derivation: properties of generated histories", () => {
  it("the generator produces what the properties need", async () => {
    const samples = await Effect.runPromise(
      Arbitrary.sampleEffect(Arbitrary.schema(Script), { count: 200, seed: 7, size: 40 })
    )
    const logs = samples.map((script) => toEvents(history(script)))
    const count = (p: (e: SessionEvent.SessionEvent) => boolean) => logs.reduce((n, log) => n + log.filter(p).length, 0)
    const messages = logs.map((log) => History.toArray(Derivation.derive(log)))
    const synthetic = messages.flat().filter((m) =>
      m.content.some((b) => b.type === "tool-result" && b.content[0]?.type === "text" && b.content[0].text === Derivation.noResultText)
    )
    // tool calls, real and synthetic results, held messages and every closer occur
    expect(count((e) => e.type === "assistant/message" && e.data.content.some((b) => b.type === "tool-call"))).toBeGreaterThan(100)
    expect(count((e) => e.type === "tool/result")).toBeGreaterThan(100)
    expect(synthetic.length).toBeGreaterThan(50)
    for (const type of ["step/end", "turn/end", "turn/start", "context/message", "steering/message", "test:note"]) {
      expect(count((e) => e.type === type), type).toBeGreaterThan(20)
    }
  })

  it.prop("(a) derivation is deterministic, also across a JSON round trip", { script: Script }, ({ script }) => {
    const events = toEvents(history(script))
    const first = Derivation.derive(events)
    expect(Derivation.derive(events)).toStrictEqual(first)
    expect(Derivation.derive(viaJson(events))).toStrictEqual(first)
  }, options)

  it.prop(
    "(b) incremental derivation fed in arbitrary batches equals from-scratch derivation after every batch",
    { script: Script, cuts: Cuts },
    ({ cuts, script }) => {
      const events = toEvents(history(script))
      const d = Derivation.make()
      let fed = 0
      for (const batch of batches(events, cuts)) {
        d.feed(batch)
        fed += batch.length
        expect(d.consumed()).toBe(fed)
        expect(d.messages()).toStrictEqual(Derivation.derive(events.slice(0, fed)))
      }
    },
    options
  )

  it.prop(
    "(d) every derived history is provider-valid, after every event",
    { script: Script },
    ({ script }) => {
      const events = toEvents(history(script))
      const d = Derivation.make()
      for (const event of events) {
        d.feed([event])
        expect(providerViolations(d.messages())).toStrictEqual([])
      }
    },
    options
  )

  it.prop(
    "(f) derivation equals an independent window-based reference; every user-role and assistant message is kept",
    { script: Script },
    ({ script }) => {
      const events = toEvents(history(script))
      const messages = History.toArray(Derivation.derive(events))
      expect(messages).toStrictEqual(referenceDerive(events))
      const nonResults = messages.filter((m) => !m.content.some((b) => b.type === "tool-result"))
      const messageEvents = events.filter((e) =>
        ["user/message", "context/message", "steering/message", "assistant/message"].includes(e.type)
      )
      expect(nonResults).toHaveLength(messageEvents.length)
      // each real result appears at most once and is the first logged for its call
      const results = messages.flatMap((m) => m.content.flatMap((b) => (b.type === "tool-result" ? [b.toolCallId] : [])))
      expect(new Set(results).size).toBe(results.length)
    },
    options
  )
})

describe("Replay: properties of seeded sessions", () => {
  it.effect.prop(
    "(b, c) a session seeded with a log derives what its source derives, batch after batch, and continues seq",
    { script: Script, cuts: Cuts, more: Script },
    ({ cuts, more, script }) =>
      Effect.gen(function*() {
        const store = yield* SessionStore
        const drafts = history(script)
        const source = yield* store.create()
        // appended in batches, deriving after each one
        let appended = 0
        for (const batch of batches(drafts, cuts)) {
          for (const d of batch) yield* appendDraft(source, d)
          appended += batch.length
          expect(yield* source.messages).toStrictEqual(Derivation.derive(toEvents(drafts.slice(0, appended))))
        }
        const events = yield* source.events
        // seq strictly increases from 0, the stream replays exactly the log
        expect(events.map((e) => e.seq)).toStrictEqual(events.map((_, i) => i))
        expect(yield* Stream.runCollect(source.stream.pipe(Stream.take(events.length)))).toStrictEqual(events)

        // a fork from the live events, and a replay from their JSON (as from disk)
        const fork = yield* store.create({ seed: events })
        const replay = yield* store.create({ seed: viaJson(events) })
        for (const seeded of [fork, replay]) {
          expect(seeded.seeded).toBe(events.length)
          expect(yield* seeded.seq).toBe(events.length)
          expect(yield* seeded.messages).toStrictEqual(yield* source.messages)
        }
        // all three continue alike
        const continuation: ReadonlyArray<Draft> = history(more).slice(1)
        for (const d of continuation) {
          const [a, b, c] = [yield* appendDraft(source, d), yield* appendDraft(fork, d), yield* appendDraft(replay, d)]
          expect(b.seq).toBe(a.seq)
          expect(c.seq).toBe(a.seq)
        }
        const total = events.length + continuation.length
        for (const seeded of [fork, replay]) {
          expect(yield* seeded.seq).toBe(total)
          expect((yield* seeded.events).map((e) => e.seq)).toStrictEqual((yield* source.events).map((e) => e.seq))
          expect(yield* seeded.messages).toStrictEqual(yield* source.messages)
        }
        expect(yield* source.messages).toStrictEqual(Derivation.derive(yield* source.events))
      }).pipe(Effect.scoped, Effect.provide(SessionStore.layer)),
    { arbitrary: { runs: 100, size: 30 } }
  )
})

describe("Codec: properties of arbitrary logs", () => {
  // Schema-generated data for every type, including an extension type with arbitrary JSON
  const AnyDraft = Schema.Union([
    ...SessionEvent.coreTypes.map((type) => Schema.Struct({ type: Schema.Literal(type), data: SessionEvent.core[type] })),
    Schema.Struct({ type: Schema.Literal("someone:else"), data: Schema.Json })
  ])
  const AnyLog = Schema.Array(AnyDraft).check(Schema.isMaxLength(15))

  it.prop("(e) an arbitrary log encodes to JSON and decodes back equal", { log: AnyLog }, ({ log }) => {
    const events = toEvents(log as ReadonlyArray<Draft>)
    expect(viaJson(events)).toStrictEqual(plain(events))
  }, { arbitrary: { runs: 200, size: 6 } })

  // JsonlSessions encodes a core event through the member of its type (compiled), the union
  // only for the rest: the lines and the refusals must be the union's, byte for byte
  const unionLine = (event: SessionEvent.SessionEvent): string | undefined => {
    const encoded = Schema.encodeUnknownResult(SessionEvent.SessionEvent)(event)
    return encoded._tag === "Success" ? JSON.stringify(encoded.success) + "\n" : undefined
  }
  it.prop("(e) an arbitrary event's JSONL line is the one the SessionEvent union encodes", { log: AnyLog }, ({ log }) => {
    for (const event of toEvents(log as ReadonlyArray<Draft>)) {
      const line = JsonlSessions.encodeLine(event)
      expect(line._tag === "Success" ? line.success : undefined).toStrictEqual(unionLine(event))
      // the same event broken: a seq below 0, a data key dropped, a data value of another type
      const data = event.data as Record<string, unknown>
      const key = typeof data === "object" && data !== null && !Array.isArray(data) ? Object.keys(data)[0] : undefined
      const broken: Array<unknown> = [
        { ...event, seq: -1 },
        { ...event, data: 42 },
        ...(key === undefined ? [] : [{ ...event, data: { ...data, [key]: Symbol("x") } }])
      ]
      for (const bad of broken as Array<SessionEvent.SessionEvent>) {
        const refused = JsonlSessions.encodeLine(bad)
        const reference = Schema.encodeUnknownResult(SessionEvent.SessionEvent)(bad)
        expect(refused._tag).toBe(reference._tag)
        if (refused._tag === "Failure" && reference._tag === "Failure") expect(refused.failure).toBe(reference.failure.message)
      }
    }
  }, { arbitrary: { runs: 200, size: 6 } })

  it.effect.prop(
    "(e) appended to a session, an arbitrary log gets strictly increasing seq from 0 and derives deterministically",
    { log: AnyLog },
    ({ log }) =>
      Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create()
        const appended = []
        for (const d of log) appended.push(yield* appendDraft(session, d as Draft))
        expect(appended.map((e) => e.seq)).toStrictEqual(log.map((_, i) => i))
        const events = yield* session.events
        for (let i = 1; i < events.length; i++) expect(events[i]!.seq).toBeGreaterThan(events[i - 1]!.seq)
        expect(yield* session.messages).toStrictEqual(Derivation.derive(events))
        // what a replay from disk derives (generated values may hold -0 and null-prototype objects)
        expect(plain(History.toArray(yield* session.messages))).toStrictEqual(History.toArray(Derivation.derive(viaJson(events))))
        // the reference model knows no compaction (compaction.test.ts checks those): a log whose
        // compaction/applied lands on one of its turn ends is rewritten by it
        if (!events.some((event) => event.type === "compaction/applied")) {
          expect(History.toArray(yield* session.messages)).toStrictEqual(referenceDerive(events))
        }
      }).pipe(Effect.scoped, Effect.provide(SessionStore.layer)),
    { arbitrary: { runs: 100, size: 6 } }
  )
})

describe("Derivation: a hand-checked history", () => {
  it("mixes every rule in one log", () => {
    const events = toEvents(history([
      { kind: "user", n: 0, k: 1 },
      { kind: "assistant", n: 2, k: 1 },
      { kind: "context", n: 0, k: 1 },
      { kind: "result", n: 0, k: 1 },
      { kind: "stepEnd", n: 0, k: 0 }
    ]))
    const summary = History.toArray(Derivation.derive(events)).map((m) =>
      m.content.map((b) =>
        b.type === "tool-result" ? `result ${b.toolCallId}${b.isError ? " (error)" : ""}` : b.type === "text" ? b.text : b.type
      )
    )
    expect(summary).toStrictEqual([
      ["u1"],
      ["a1", "tool-call", "tool-call"],
      ["result call-1"],
      ["result call-0 (error)"],
      ["<context source=\"mcp &quot;x&quot; &lt;y> &amp; z\">\nc1.0\n</context>"]
    ])
  })
})
