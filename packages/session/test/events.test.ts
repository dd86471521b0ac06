/**
 * Session events: every core type round-trips through the `SessionEvent` codec, invalid data is
 * rejected, extension events (`define`) and narrowing on `type`.
 */
import { Content, History, Ids } from "@dsh/llm"
import { Session, SessionErrors, SessionEvent } from "@dsh/session"
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { coreSamples, draft, Note, plain, toEvents } from "./helpers.ts"

const encode = Schema.encodeSync(SessionEvent.SessionEvent)
const decode = Schema.decodeUnknownSync(SessionEvent.SessionEvent)
const accepts = (input: unknown) => Schema.decodeUnknownOption(SessionEvent.SessionEvent)(input)._tag === "Some"
const viaJson = (event: SessionEvent.SessionEvent) => decode(JSON.parse(JSON.stringify(encode(event))))
const fresh = () => Session.make({ id: Ids.sessionId("s"), createdAt: 0 }).session

describe("SessionEvent: core types", () => {
  const samples = toEvents(coreSamples())

  it("the samples cover every core type", () => {
    expect(new Set(samples.map((e) => e.type))).toStrictEqual(new Set(SessionEvent.coreTypes))
  })

  for (const event of samples) {
    it(`round-trips ${event.type} #${event.seq} through JSON`, () => {
      const json = JSON.stringify(encode(event))
      expect(decode(JSON.parse(json))).toStrictEqual(event)
      // core events are plain data: their JSON is the event itself
      expect(JSON.parse(json)).toStrictEqual(event)
    })
  }

  it.prop(
    "round-trips Schema-generated data of every core type",
    [Schema.Union(SessionEvent.coreTypes.map((type) => Schema.Struct({ type: Schema.Literal(type), data: SessionEvent.core[type] })))],
    ([d]) => {
      const event = { ...d, seq: 7, time: 123 } as SessionEvent.SessionEvent
      expect(viaJson(event)).toStrictEqual(plain(event))
    },
    { arbitrary: { runs: 300, size: 8 } }
  )

  const valid = { type: "step/start", seq: 0, time: 0, data: { turn: 1, step: 1 } }
  const rejected: ReadonlyArray<readonly [string, unknown]> = [
    ["turn 0", { type: "turn/start", seq: 0, time: 0, data: { turn: 0, trigger: "send" } }],
    ["a negative seq", { ...valid, seq: -1 }],
    ["a non-integer seq", { ...valid, seq: 1.5 }],
    ["a negative time", { ...valid, time: -1 }],
    ["a non-integer step", { ...valid, data: { turn: 1, step: 1.5 } }],
    ["step 0", { ...valid, data: { turn: 1, step: 0 } }],
    ["an unknown core-looking type", { ...valid, type: "turn/begin" }],
    ["a type with neither slash nor colon", { ...valid, type: "turnstart" }],
    ["missing data", { type: "step/start", seq: 0, time: 0 }],
    ["the data of another type", { ...valid, data: { content: [], source: "user" } }],
    ["an unknown content block", { type: "user/message", seq: 0, time: 0, data: { content: [{ type: "video" }], source: "u" } }],
    ["a tool result without isError", {
      type: "tool/result",
      seq: 0,
      time: 0,
      data: { turn: 1, step: 1, callId: "c", content: [] }
    }],
    ["a reasoning block in a tool result", {
      type: "tool/result",
      seq: 0,
      time: 0,
      data: { turn: 1, step: 1, callId: "c", content: [Content.reasoning("r")], isError: false }
    }],
    ["an unknown turn-end reason", { type: "turn/end", seq: 0, time: 0, data: { turn: 1, reason: { kind: "bored" } } }],
    ["an extension type without a namespace", { type: ":x", seq: 0, time: 0, data: 1 }],
    ["an extension type without a name", { type: "ns:", seq: 0, time: 0, data: 1 }],
    ["an extension namespace with a slash", { type: "a/b:c", seq: 0, time: 0, data: 1 }],
    ["an extension type with a space", { type: "ns:a b", seq: 0, time: 0, data: 1 }],
    ["non-JSON extension data (a function)", { type: "ns:x", seq: 0, time: 0, data: { f: () => 1 } }],
    ["non-JSON extension data (NaN)", { type: "ns:x", seq: 0, time: 0, data: Number.NaN }],
    ["non-JSON extension data (undefined)", { type: "ns:x", seq: 0, time: 0, data: undefined }],
    ["not an object", "step/start"]
  ]
  for (const [what, input] of rejected) {
    it(`rejects ${what}`, () => {
      expect(accepts(valid)).toBe(true)
      expect(accepts(input)).toBe(false)
    })
  }
})

describe("SessionEvent: extension events", () => {
  const Summary = SessionEvent.define(
    "compaction:summary",
    Schema.Struct({ upTo: Schema.NumberFromString, text: Schema.String })
  )

  it("define rejects names that are not namespace:name", () => {
    for (const bad of ["summary", "compaction/summary", ":summary", "compaction:", "a b:c", "a:b c", "a/b:c", "turn/start", ""]) {
      expect(() => SessionEvent.define(bad as SessionEvent.ExtensionType, Schema.String), bad).toThrow(TypeError)
    }
    for (const good of ["compaction:summary", "a:b", "x:y:z", "my-plugin:thing/1"] as const) {
      expect(SessionEvent.define(good, Schema.String).type).toBe(good)
    }
  })

  it.effect("session.append(definition, data) logs the data encoded through the definition's Schema", () =>
    Effect.gen(function*() {
      const session = fresh()
      const event = yield* session.append(Summary, { upTo: 41, text: "so far" })
      expectTypeOf(event.type).toEqualTypeOf<"compaction:summary">()
      expect(event).toStrictEqual({ type: "compaction:summary", seq: 0, time: 0, data: { upTo: "41", text: "so far" } })
      expect(Summary.is(event)).toBe(true)
      expect(Summary.decode(event)).toStrictEqual({ upTo: 41, text: "so far" })
      // the logged (encoded) event survives the codec, and decodes to the typed data again
      const back = viaJson(event)
      expect(back).toStrictEqual(event)
      expect(Summary.decode(back)).toStrictEqual({ upTo: 41, text: "so far" })
    }))

  it.effect("appending data the definition cannot encode fails with INVALID_EVENT, listing every violation with its path, and logs nothing", () =>
    Effect.gen(function*() {
      const session = fresh()
      const error = yield* Effect.flip(session.append(Summary, { upTo: "x", text: 1 } as unknown as { upTo: number; text: string }))
      expect(error).toBeInstanceOf(SessionErrors.InvalidEventError)
      expect(error.code).toBe("INVALID_EVENT")
      expect(error.eventType).toBe("compaction:summary")
      expect(error.message).toMatch(/^an event of type compaction:summary was not appended: its data does not fit its definition: /)
      expect(error.message).toContain(`["upTo"]`)
      expect(error.message).toContain(`["text"]`)
      // a refinement the types cannot see
      const Counted = SessionEvent.define("test:counted", Schema.Struct({ n: Schema.Int }))
      const refused = yield* Effect.flip(session.append(Counted, { n: 1.5 }))
      expect(refused.message).toContain(`["n"]`)
      expect(yield* session.seq).toBe(0)
      // the session goes on
      expect((yield* session.append(Counted, { n: 2 })).seq).toBe(0)
    }))

  it.effect("data whose encoding JSON cannot hold (NaN, Infinity) is INVALID_EVENT, not an event no file could persist", () =>
    Effect.gen(function*() {
      const session = fresh()
      const Metric = SessionEvent.define("test:metric", Schema.Struct({ value: Schema.Number, parts: Schema.Array(Schema.Number) }))
      const nan = yield* Effect.flip(session.append(Metric, { value: 0 / 0, parts: [] }))
      expect(nan).toMatchObject({ code: "INVALID_EVENT", eventType: "test:metric" })
      expect(nan.message).toBe("an event of type test:metric was not appended: its encoded data is not JSON (data.value is NaN)")
      const infinite = yield* Effect.flip(session.append(Metric, { value: 1, parts: [2, Infinity] }))
      expect(infinite.message).toContain("(data.parts[1] is Infinity)")
      expect(yield* session.seq).toBe(0)
      expect((yield* session.append(Metric, { value: 1, parts: [2] })).seq).toBe(0)
    }))

  it("is and decode tell the definition's events from the others", () => {
    const [turnStart, note, summary, badSummary] = toEvents([
      draft("turn/start", { turn: 1, trigger: "send" }),
      { type: "test:note", data: { text: "hi" } }
    ]).concat([
      { type: "compaction:summary", seq: 2, time: 0, data: { upTo: "3", text: "t" } },
      { type: "compaction:summary", seq: 3, time: 0, data: { upTo: "3", text: 3 } }
    ])
    expect([turnStart!, note!, summary!, badSummary!].map(Summary.is)).toStrictEqual([false, false, true, true])
    expect(Summary.decode(turnStart!)).toBeUndefined()
    expect(Summary.decode(note!)).toBeUndefined()
    expect(Summary.decode(summary!)).toStrictEqual({ upTo: 3, text: "t" })
    // an event of the type whose data does not decode
    expect(Summary.decode(badSummary!)).toBeUndefined()
    expect(Note.decode(note!)).toStrictEqual({ text: "hi" })
  })

  it("an extension event of a type nobody defined still decodes, its data kept as JSON", () => {
    const event = {
      type: "someone-else:thing",
      seq: 4,
      time: 9,
      data: { nested: [1, "two", null, true, { deep: [] }], n: 1.5 }
    }
    expect(accepts(event)).toBe(true)
    expect(decode(JSON.parse(JSON.stringify(event)))).toStrictEqual(event)
    for (const data of [null, 3, "s", [], false]) expect(accepts({ ...event, data })).toBe(true)
  })

  it.effect("extension and core events share one log, stream and derivation (which skips extensions)", () =>
    Effect.gen(function*() {
      const session = fresh()
      yield* session.append("user/message", { content: [Content.text("hi")], source: "user" })
      yield* session.append(Note, { text: "aside" })
      yield* session.append(Summary, { upTo: 1, text: "summary" })
      const events = yield* session.events
      expect(events.map((e) => [e.seq, e.type])).toStrictEqual([[0, "user/message"], [1, "test:note"], [2, "compaction:summary"]])
      expect(History.toArray(yield* session.messages)).toStrictEqual([{ role: "user", content: [Content.text("hi")] }])
    }))
})

describe("SessionEvent: types", () => {
  it("narrowing on type gives a core event its data type", () => {
    const describeEvent = (event: SessionEvent.SessionEvent): string => {
      switch (event.type) {
        case "tool/call":
          expectTypeOf(event.data.callId).toEqualTypeOf<Ids.CallId>()
          expectTypeOf(event.data.arguments).toEqualTypeOf<string>()
          return `call ${event.data.name}`
        case "turn/end":
          expectTypeOf(event.data.reason).toEqualTypeOf<SessionEvent.TurnEndReason>()
          return event.data.reason.kind
        case "user/message":
          // @ts-expect-error a user message has no callId
          return String(event.data.callId)
        default:
          return event.type
      }
    }
    const [call, end, message] = toEvents([
      draft("tool/call", { turn: 1, step: 1, callId: Ids.callId("c"), name: "bash", arguments: "{}" }),
      draft("turn/end", { turn: 1, reason: { kind: "disposed" } }),
      draft("user/message", { content: [], source: "user" })
    ])
    expect([describeEvent(call!), describeEvent(end!), describeEvent(message!)]).toStrictEqual([
      "call bash",
      "disposed",
      "undefined"
    ])
  })

  it("isType narrows; append is typed by the event type", () => {
    const events = toEvents([draft("step/start", { turn: 2, step: 3 }), draft("user/message", { content: [], source: "u" })])
    const steps = events.filter(SessionEvent.isType("step/start"))
    expectTypeOf(steps).toEqualTypeOf<Array<SessionEvent.CoreEvent<"step/start">>>()
    expect(steps.map((e) => e.data.step)).toStrictEqual([3])

    const session = fresh()
    expectTypeOf(session.append("turn/start", { turn: 1, trigger: "send" })).toEqualTypeOf<
      Effect.Effect<SessionEvent.CoreEvent<"turn/start">>
    >()
    // @ts-expect-error turn/start needs a trigger
    expect(() => session.append("turn/start", { turn: 1 })).not.toThrow()
    // @ts-expect-error an unknown core type
    expect(() => session.append("turn/begin", { turn: 1 })).not.toThrow()
    expectTypeOf(SessionEvent.define("a:b", Schema.Struct({ n: Schema.Number })).decode).returns.toEqualTypeOf<
      { readonly n: number } | undefined
    >()
  })
})
