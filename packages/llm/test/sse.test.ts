/**
 * `Sse` against `effect/encoding`'s `Sse.makeParser`, the implementation it stands in for: on
 * thousands of generated streams (data lines with JSON and non-ASCII text, comments, named
 * events, fields without a colon or without the space, `id:` and `retry:` fields, empty
 * `data:`, a byte order mark, LF-only streams and streams mixing CR, LF and CRLF), each cut into
 * pieces at random — a CR and its LF in different pieces included — both report the same
 * events, in the same order, with the same names and data. Then what only `Sse` does: its size
 * bound on a pending line and on a dispatched event, and what it reads after reporting one.
 */
import { Sse } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Sse as EffectSse } from "effect/encoding"

// mulberry32: the same streams on every run
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

const fieldLines = [
  "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"café → 数据\"}}]}",
  "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hé\"}}",
  "data:{\"a\":1}",
  "data: [DONE]",
  "data:",
  "data: ",
  "data",
  "data:  two spaces",
  "data: a: b: c",
  "data: \uFEFFnot a BOM",
  "event: error",
  "event: content_block_delta",
  "event:message_stop",
  "event:",
  "event",
  ": keep-alive",
  ": OPENROUTER PROCESSING",
  ":",
  "id: 42",
  "id",
  "retry: 3000",
  "retry: soon",
  "unknown: field",
  "dat: almost",
  "datas: more",
  "eventual: more",
  " data: leading space"
]
const allEndings = ["\n", "\r\n", "\r"]

const generate = (next: () => number): string => {
  // half the streams end lines with LF only (the parser's fast path), half mix all three
  const endings = next() < 0.5 ? ["\n"] : allEndings
  let text = next() < 0.1 ? "\uFEFF" : ""
  const lines = 1 + Math.floor(next() * 40)
  for (let i = 0; i < lines; i++) {
    const line = next() < 0.3 ? "" : fieldLines[Math.floor(next() * fieldLines.length)]!
    text += line + endings[Math.floor(next() * endings.length)]!
  }
  // sometimes an unterminated last line, or an event without its blank line
  if (next() < 0.2) text += fieldLines[Math.floor(next() * fieldLines.length)]!
  return text
}

const split = (text: string, next: () => number): Array<string> => {
  const pieces: Array<string> = []
  let at = 0
  while (at < text.length) {
    const size = next() < 0.3 ? 1 : 1 + Math.floor(next() * 30)
    pieces.push(text.slice(at, at + size))
    at += size
  }
  return pieces
}

const theirs = (pieces: ReadonlyArray<string>) => {
  const events: Array<readonly [string, string]> = []
  const parser = EffectSse.makeParser((event) => {
    if (event._tag === "Event") events.push([event.event, event.data])
  })
  for (const piece of pieces) expect(parser.feed(piece)).toBeUndefined()
  return events
}

const ours = (pieces: ReadonlyArray<string>) => {
  const events: Array<readonly [string, string]> = []
  const parser = Sse.make((event, data) => void events.push([event, data]))
  for (const piece of pieces) expect(parser.feed(piece)).toBeUndefined()
  return events
}

// a parser with a small bound, and what it reported
const bounded = (maxEventSize: number) => {
  const events: Array<readonly [string, string]> = []
  const parser = Sse.make((event, data) => void events.push([event, data]), maxEventSize)
  return { events, feed: parser.feed }
}

describe("Sse", () => {
  it("reports what effect/encoding's parser reports, on any stream cut anywhere", () => {
    const next = random(7)
    let events = 0
    for (let i = 0; i < 4000; i++) {
      const text = generate(next)
      const pieces = split(text, next)
      const expected = theirs(pieces)
      events += expected.length
      expect(ours(pieces), JSON.stringify(pieces)).toStrictEqual(expected)
      // and whole, in one piece
      expect(ours([text]), JSON.stringify(text)).toStrictEqual(theirs([text]))
    }
    expect(events).toBeGreaterThan(10_000)
  })

  it("drops a leading byte order mark only, and ignores empty pieces", () => {
    expect(ours(["", "\uFEFF", "data: a\n\n"])).toStrictEqual([["message", "a"]])
    expect(ours(["data: a\n\n\uFEFFdata: b\n\n"])).toStrictEqual([["message", "a"]])
    expect(ours(["data: a\r", "", "\n", "\n"])).toStrictEqual([["message", "a"]])
  })

  it("bounds a line left pending, reports it once, and reads the next piece afresh", () => {
    const parser = bounded(100)
    // exactly the bound is fine
    expect(parser.feed("data: " + "x".repeat(94))).toBeUndefined()
    expect(parser.feed("\n\n")).toBeUndefined()
    expect(parser.events).toStrictEqual([["message", "x".repeat(94)]])
    // a line that grows beyond it, a piece at a time
    expect(parser.feed("data: " + "y".repeat(50))).toBeUndefined()
    expect(parser.feed("y".repeat(44))).toBeUndefined()
    const reported = parser.feed("y")
    expect(reported).toContain("grew beyond the maximum size of 100 characters")
    expect(reported).toContain("(to 101)")
    // the event is dropped; the next piece starts a line
    expect(parser.feed("data: after\n\n")).toBeUndefined()
    expect(parser.events).toStrictEqual([["message", "x".repeat(94)], ["message", "after"]])
  })

  it("bounds an event's data so far together with the line being read", () => {
    const parser = bounded(100)
    expect(parser.feed("event: big\ndata: " + "x".repeat(60) + "\n")).toBeUndefined()
    expect(parser.feed("data: " + "x".repeat(30))).toBeUndefined() // 60 + 36
    expect(parser.feed("x".repeat(5))).toContain("(to 101)") // 60 + 41
    // nothing of the dropped event (its name included) leaks into the next
    expect(parser.feed("data: next\n\n")).toBeUndefined()
    expect(parser.events).toStrictEqual([["message", "next"]])
  })

  it("bounds an event that arrives whole in one piece, after dispatching those before it", () => {
    const parser = bounded(100)
    const x60 = "x".repeat(60)
    const text = `data: a\n\ndata: ${x60}\ndata: ${x60}\n\ndata: dropped\n\n`
    expect(parser.feed(text)).toContain("grew beyond the maximum size of 100 characters (to 121)")
    // the events before it were dispatched; it and the rest of its piece were dropped
    expect(parser.events).toStrictEqual([["message", "a"]])
    expect(parser.feed("data: b\r\n\r\n")).toBeUndefined()
    expect(parser.events).toStrictEqual([["message", "a"], ["message", "b"]])
    // the same on the path for CR line ends
    const cr = bounded(10)
    expect(cr.feed("data: a\r\rdata: " + "x".repeat(11) + "\r\rdata: dropped\r\r")).toContain("(to 11)")
    expect(cr.feed("data: b\r\r")).toBeUndefined()
    expect(cr.events).toStrictEqual([["message", "a"], ["message", "b"]])
  })

  it("bounds a pending line by default where effect/encoding's parser does", () => {
    expect(Sse.defaultMaxEventSize).toBe(10 * 1024 * 1024)
    const within = "data: " + "x".repeat(Sse.defaultMaxEventSize - 6)
    const beyond = within + "x"
    expect(Sse.make(() => undefined).feed(within)).toBeUndefined()
    expect(EffectSse.makeParser(() => undefined).feed(within)).toBeUndefined()
    expect(Sse.make(() => undefined).feed(beyond)).toBeDefined()
    expect(EffectSse.makeParser(() => undefined).feed(beyond)).toBeDefined()
  })

  it("leaves no half event behind a callback that throws", () => {
    const events: Array<string> = []
    const parser = Sse.make((_, data) => {
      if (data === "boom") throw new Error("boom")
      events.push(data)
    })
    expect(() => parser.feed("data: bo")).not.toThrow()
    expect(() => parser.feed("om\n\ndata: lost\n\n")).toThrow("boom")
    parser.feed("data: next\n\n")
    expect(events).toStrictEqual(["next"])
  })

  it("scans a piece in linear time whatever its line ends", () => {
    for (const ending of ["\r", "\r\n", "\n"]) {
      const many = ending.repeat(2_000_000) + "data: x\n\n"
      let seen = 0
      const started = performance.now()
      Sse.make(() => void seen++).feed(many)
      expect(performance.now() - started).toBeLessThan(2_000)
      expect(seen).toBe(1)
    }
  })
})

describe("Sse end of input", () => {
  const parsed = (...pieces: ReadonlyArray<string>) => {
    const events: Array<[string, string]> = []
    const parser = Sse.make((event, data) => void events.push([event, data]))
    for (const piece of pieces) parser.feed(piece)
    parser.end()
    return { events }
  }

  it("dispatches an event whose lines all ended though no blank line followed (data: [DONE] then close)", () => {
    expect(parsed("data: a\n\n", "data: [DONE]\n").events).toStrictEqual([["message", "a"], ["message", "[DONE]"]])
    expect(parsed("event: message_stop\r\ndata: {}\r").events).toStrictEqual([["message_stop", "{}"]])
    expect(parsed("data: one\ndata: two\n").events).toStrictEqual([["message", "one\ntwo"]])
  })

  it("does not dispatch an event cut inside a line, nor one without data", () => {
    expect(parsed("data: a\n\n", "data: [DO").events).toStrictEqual([["message", "a"]])
    expect(parsed("event: ping\n").events).toStrictEqual([])
    expect(parsed(": keep-alive\n").events).toStrictEqual([])
  })

  it("never dispatches a last event over the size bound: the piece that grew it said so", () => {
    const events: Array<string> = []
    const parser = Sse.make((_, data) => void events.push(data), 8)
    expect(parser.feed("data: 12345\ndata: 678\n")).toBe("an event grew beyond the maximum size of 8 characters (to 9)")
    expect(parser.end()).toBeUndefined()
    expect(events).toStrictEqual([])
  })
})
