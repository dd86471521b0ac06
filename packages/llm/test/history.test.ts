/**
 * History: every operation agrees with the same operation on a plain array, for lengths around
 * the block boundaries (blocks hold 128 messages); versions are persistent and frozen; the
 * structure depends only on the messages; the Schema round-trips through JSON.
 */
import { History, Message, ModelRequest } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema } from "effect"
import { inspect } from "node:util"

const BLOCK = 128

/** Distinct, cheap messages: the i-th says `m<i>`, and is always the same object. */
const made = new Map<number, Message.Message>()
const msg = (i: number): Message.Message => {
  let message = made.get(i)
  if (message === undefined) made.set(i, message = Message.user(`m${i}`))
  return message
}
const messages = (from: number, to: number): Array<Message.Message> =>
  Array.from({ length: Math.max(0, to - from) }, (_, k) => msg(from + k))

// escape hatches to attempt what the readonly types forbid
const record = (u: unknown) => u as Record<PropertyKey, unknown>
const array = (u: unknown) => u as Array<unknown>

/** Lengths at and around the block boundaries, plus a small offset. */
const Length = Schema.Struct({
  base: Schema.Literals([0, 1, 2, 100, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK - 1, 2 * BLOCK, 2 * BLOCK + 1, 3000, 3 * BLOCK]),
  offset: Schema.Int.check(Schema.isBetween({ minimum: -2, maximum: 2 }))
})
const lengthOf = ({ base, offset }: typeof Length.Type) => Math.max(0, base + offset)

/** How a history is built: batch sizes for appendAll, 1 meaning append. */
const Batches = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1500 }))).check(Schema.isMaxLength(6))

/** Builds a history of `all` in batches of the given sizes (the rest in one batch). */
const build = (all: ReadonlyArray<Message.Message>, batches: ReadonlyArray<number>): History.History => {
  let history = History.empty
  let from = 0
  for (const size of batches) {
    if (from >= all.length) break
    const batch = all.slice(from, from + size)
    history = batch.length === 1 ? History.append(history, batch[0]!) : History.appendAll(history, batch)
    from += batch.length
  }
  // the rest from a generator: any iterable will do
  const rest = all.slice(from)
  return History.appendAll(history, (function*() {
    yield* rest
  })())
}

/** Indexes worth reading in an array of length n: both ends, out of range, block edges. */
const probes = (n: number): Array<number> => [
  0,
  1,
  -1,
  -2,
  n - 1,
  n,
  n + 1,
  -n,
  -n - 1,
  BLOCK - 1,
  BLOCK,
  BLOCK + 1,
  2 * BLOCK - 1,
  2 * BLOCK,
  -BLOCK,
  -BLOCK - 1,
  Math.floor(n / 2)
]

const expectSame = (history: History.History, expected: ReadonlyArray<Message.Message>) => {
  expect(history.length).toBe(expected.length)
  const flat = History.toArray(history)
  expect(flat).toHaveLength(expected.length)
  for (let i = 0; i < expected.length; i++) if (flat[i] !== expected[i]) expect.fail(`toArray differs at ${i}`)
  const walked = [...history]
  expect(walked).toHaveLength(expected.length)
  for (let i = 0; i < expected.length; i++) if (walked[i] !== expected[i]) expect.fail(`iteration differs at ${i}`)
  for (const i of probes(expected.length)) expect(History.at(history, i), `at(${i})`).toBe(expected.at(i))
  expect(History.last(history)).toBe(expected.at(-1))
}

describe("History: agrees with arrays", () => {
  it.prop("every operation, for lengths around block boundaries built in any batches", [Length, Batches], ([length, batches]) => {
    const n = lengthOf(length)
    const all = messages(0, n)
    const history = build(all, batches)
    expectSame(history, all)
    expectSame(History.fromIterable(all), all)
    expectSame(History.make(...all), all)
    // the structure depends only on the messages, so deep equality holds however it was built
    expect(history).toStrictEqual(History.fromIterable(all))
    expect(JSON.stringify(history)).toBe(JSON.stringify(all))
    // appending one, and many, agree with concatenation
    expectSame(History.append(history, msg(n)), messages(0, n + 1))
    expectSame(History.appendAll(history, messages(n, n + 1100)), messages(0, n + 1100))
  }, { arbitrary: { runs: 200 } })

  it("each boundary length explicitly, appended one by one and all at once", () => {
    const all = messages(0, 3 * BLOCK + 2)
    const versions: Array<History.History> = [History.empty]
    for (const message of all) versions.push(History.append(versions.at(-1)!, message))
    for (const n of [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK, 2 * BLOCK + 7, 3 * BLOCK + 2]) {
      expectSame(versions[n]!, all.slice(0, n))
      expect(versions[n]).toStrictEqual(History.fromIterable(all.slice(0, n)))
    }
  })

  it("at follows Array.prototype.at for fractional, NaN and infinite indexes", () => {
    const all = messages(0, 5)
    const history = History.fromIterable(all)
    for (const i of [1.5, -1.5, 4.999, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0]) {
      expect(History.at(history, i), String(i)).toBe(all.at(i))
    }
    expect(History.at(History.empty, 0)).toBeUndefined()
    expect(History.at(History.empty, -1)).toBeUndefined()
    expect(History.last(History.empty)).toBeUndefined()
  })

  it("data-last forms pipe", () => {
    const history = History.make(msg(0)).pipe(History.append(msg(1)), History.appendAll([msg(2), msg(3)]))
    expect(History.toArray(history)).toStrictEqual(messages(0, 4))
    expect(history.pipe(History.at(-1))).toBe(History.last(history))
  })
})

describe("History: persistence", () => {
  it.prop("appending to a version changes neither it nor its siblings", [Length], ([length]) => {
    const n = lengthOf(length)
    const base = History.fromIterable(messages(0, n))
    const left = History.append(base, Message.assistant("left"))
    const right = History.appendAll(base, [Message.assistant("right"), Message.user("more")])
    const leftChild = History.appendAll(left, messages(n + 1, n + 1 + BLOCK))
    expectSame(base, messages(0, n))
    expect(History.toArray(left).slice(n)).toStrictEqual([Message.assistant("left")])
    expect(History.toArray(right).slice(n)).toStrictEqual([Message.assistant("right"), Message.user("more")])
    expect(leftChild.length).toBe(n + 1 + BLOCK)
    expect(History.at(leftChild, n)).toStrictEqual(Message.assistant("left"))
    expect(left.length).toBe(n + 1)
    // flattening a version first does not tie it to later ones
    const flatBase = History.toArray(base)
    History.toArray(History.append(base, msg(-1)))
    expect(History.toArray(base)).toBe(flatBase)
    expect(flatBase).toHaveLength(n)
  }, { arbitrary: { runs: 60 } })

  it("appending nothing returns the same history", () => {
    const history = History.fromIterable(messages(0, 3))
    expect(History.appendAll(history, [])).toBe(history)
    expect(History.fromIterable(history)).toBe(history)
    expect(History.appendAll(History.empty, [])).toBe(History.empty)
  })

  it("appending copies at most the tail and the block list; full blocks are shared", () => {
    // white-box: the representation's own (enumerable) properties
    const parts = (h: History.History) =>
      record(h) as { readonly blocks: ReadonlyArray<ReadonlyArray<Message.Message>>; readonly tail: ReadonlyArray<Message.Message> }
    const long = History.fromIterable(messages(0, 10 * BLOCK + 5))
    expect(parts(long).blocks).toHaveLength(10)
    expect(parts(long).tail).toHaveLength(5)
    expect(parts(long).blocks.every((b) => b.length === BLOCK)).toBe(true)
    const next = History.append(long, msg(-1))
    expect(parts(next).blocks).toBe(parts(long).blocks)
    expect(parts(next).tail).toHaveLength(6)
    // filling the tail adds a block; the earlier blocks are the same arrays
    const filled = History.appendAll(long, messages(0, BLOCK - 5))
    expect(parts(filled).blocks).toHaveLength(11)
    expect(parts(filled).tail).toHaveLength(0)
    for (let b = 0; b < 10; b++) expect(parts(filled).blocks[b]).toBe(parts(long).blocks[b])
  })
})

describe("History: immutability", () => {
  it("the history, its blocks, its tail and its flat array are frozen; writes throw", () => {
    const history = History.fromIterable(messages(0, BLOCK + 3))
    const { blocks, tail } = record(history)
    expect(Object.isFrozen(history)).toBe(true)
    expect(Object.isFrozen(blocks)).toBe(true)
    expect(Object.isFrozen(array(blocks)[0])).toBe(true)
    expect(Object.isFrozen(tail)).toBe(true)
    expect(() => { record(history).length = 0 }).toThrow(TypeError)
    expect(() => { record(history)["tail"] = [] }).toThrow(TypeError)
    expect(() => { delete record(history)["blocks"] }).toThrow(TypeError)
    expect(() => { record(history)["extra"] = 1 }).toThrow(TypeError)
    expect(() => array(tail).push(msg(-1))).toThrow(TypeError)
    expect(() => { array(array(blocks)[0])[0] = msg(-1) }).toThrow(TypeError)
    expect(() => array(blocks).pop()).toThrow(TypeError)
    const flat = History.toArray(history)
    expect(Object.isFrozen(flat)).toBe(true)
    expect(() => array(flat).push(msg(-1))).toThrow(TypeError)
    expect(() => array(flat).sort()).toThrow(TypeError)
    expect(History.toArray(history)).toBe(flat)
    expectSame(history, messages(0, BLOCK + 3))
    // small histories too (their flat array is the tail itself)
    const small = History.make(msg(0))
    expect(Object.isFrozen(History.toArray(small))).toBe(true)
    expect(() => array(History.toArray(small)).push(msg(1))).toThrow(TypeError)
  })

  it("messages are stored as given, not copied or frozen", () => {
    const message = { role: "user" as const, content: [] }
    const history = History.make(message)
    expect(History.at(history, 0)).toBe(message)
    expect(Object.isFrozen(message)).toBe(false)
  })
})

describe("History: identity, display, JSON and Schema", () => {
  it("isHistory tells histories from arrays and other values", () => {
    expect(History.isHistory(History.empty)).toBe(true)
    expect(History.isHistory(History.make(msg(0)))).toBe(true)
    for (const u of [[], [msg(0)], null, undefined, "h", { length: 0 }, JSON.parse(JSON.stringify(History.make(msg(0))))]) {
      expect(History.isHistory(u)).toBe(false)
    }
  })

  it("deep equality compares messages; different histories are told apart", () => {
    expect(History.fromIterable(messages(0, 2000))).toEqual(History.appendAll(History.make(msg(0)), messages(1, 2000)))
    expect(History.make(msg(0))).not.toEqual(History.make(msg(1)))
    expect(History.make(msg(0))).not.toEqual(History.make(msg(0), msg(0)))
    // not an array: compare its messages with toArray
    expect(History.make(msg(0))).not.toEqual([msg(0)])
    const equivalent = Schema.toEquivalence(History.History)
    expect(equivalent(History.fromIterable(messages(0, 1500)), History.fromIterable(messages(0, 1500)))).toBe(true)
    expect(equivalent(History.make(msg(0), msg(1)), History.make(msg(0), msg(2)))).toBe(false)
    expect(equivalent(History.make(msg(0)), History.make(msg(0), msg(1)))).toBe(false)
  })

  it("toJSON and util.inspect show the messages as an array", () => {
    const all = messages(0, BLOCK + 2)
    const history = History.fromIterable(all)
    expect(history.toJSON()).toStrictEqual(all)
    expect(JSON.stringify({ messages: history })).toBe(JSON.stringify({ messages: all }))
    expect(JSON.stringify(History.empty)).toBe("[]")
    expect(inspect(History.make(msg(0), msg(1)), { depth: 5 })).toBe(inspect([msg(0), msg(1)], { depth: 5 }))
  })

  it("the Schema encodes to the array of messages and decodes back to a History", () => {
    const history = History.fromIterable(messages(0, BLOCK + 1))
    const encoded = Schema.encodeSync(History.History)(history)
    expect(Array.isArray(encoded)).toBe(true)
    expect(encoded).toStrictEqual(messages(0, BLOCK + 1))
    const decoded = Schema.decodeUnknownSync(History.History)(JSON.parse(JSON.stringify(encoded)))
    expect(History.isHistory(decoded)).toBe(true)
    expect(decoded).toStrictEqual(history)
    // the JSON codec too
    const json = Schema.toCodecJson(History.History)
    expect(Schema.decodeUnknownSync(json)(Schema.encodeSync(json)(history))).toStrictEqual(history)
    // every message is validated
    // a bad message fails with its path in the array
    expect(() => Schema.decodeUnknownSync(History.History)([...messages(0, 1), { role: "tool", content: [] }])).toThrow(
      /at \[1\]\["role"\]/
    )
    expect(() => Schema.decodeUnknownSync(History.History)({ length: 0 })).toThrow()
    expect(Schema.is(History.History)(history)).toBe(true)
    expect(Schema.is(History.History)(messages(0, 1))).toBe(false)
  })

  it.prop(
    "generated messages round-trip through JSON, alone and in a request",
    [Arbitrary.array(Arbitrary.schema(Message.Message), { maxLength: 12 })],
    ([generated]) => {
      const history = History.fromIterable(generated)
      const json = JSON.stringify(Schema.encodeSync(History.History)(history))
      expect(json).toBe(JSON.stringify(generated))
      const back = Schema.decodeUnknownSync(History.History)(JSON.parse(json))
      expect(JSON.stringify(back)).toBe(json)
      expect(back.length).toBe(generated.length)
      const request = ModelRequest.make("m", history)
      expect(JSON.parse(JSON.stringify(request))).toStrictEqual(JSON.parse(JSON.stringify({ model: "m", messages: generated })))
    },
    { arbitrary: { runs: 100, size: 6 } }
  )

  it.effect("arbitrary histories derive from the Schema", () =>
    Effect.gen(function*() {
      const samples = yield* Arbitrary.sampleEffect(Arbitrary.schema(History.History), { count: 30, seed: 3, size: 6 })
      expect(samples.every(History.isHistory)).toBe(true)
      expect(samples.some((h) => h.length > 0)).toBe(true)
    }))
})
