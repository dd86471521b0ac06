/**
 * Nothing outside a session can change a logged event: logged data is deep-frozen at append,
 * derived messages share it and are frozen too, and a request built from them is a new value.
 * Test files are ES modules, hence strict mode: writing to a frozen object throws a TypeError.
 */
import { Content, History, Ids, Message } from "@dsh/llm"
import { Derivation, Freeze, Session, SessionEvent } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { appendDraft, c1, c2, coreSamples, Note } from "./helpers.ts"

const fresh = () => Session.make({ id: Ids.sessionId("s"), createdAt: 0 }).session
// escape hatches to attempt what the types forbid
const record = (u: unknown) => u as Record<PropertyKey, unknown>
const array = (u: unknown) => u as Array<unknown>

describe("Immutability: logged events", () => {
  it.effect("every logged event is deep-frozen, down to nested content blocks and JSON data", () =>
    Effect.gen(function*() {
      const session = fresh()
      for (const d of coreSamples()) yield* appendDraft(session, d)
      yield* session.append(Note, { text: "n" })
      const events = yield* session.events
      expect(events).toHaveLength(coreSamples().length + 1)
      for (const event of events) {
        expect(Object.isFrozen(event), event.type).toBe(true)
        expect(Object.isFrozen(event.data), event.type).toBe(true)
        expect(Freeze.isDeeplyFrozen(event), event.type).toBe(true)
      }
      const user = events.find(SessionEvent.isType("user/message"))!
      const custom = user.data.content[2]!
      expect(custom.type).toBe("custom")
      expect(Object.isFrozen(custom.type === "custom" ? record(custom.data)["meta"] : undefined)).toBe(true)
    }))

  it.effect("data nested at any depth is frozen all the way down (300 and 100,000 levels)", () =>
    Effect.gen(function*() {
      for (const depth of [300, 100_000]) {
        const session = fresh()
        // custom content carries arbitrary JSON, the way a tool's structured output would
        let nested: Record<string, unknown> = { leaf: [] }
        const bottom = nested
        for (let i = 0; i < depth; i++) nested = { next: nested }
        const event = yield* session.append("user/message", {
          content: [{ type: "custom", kind: "deep", data: nested as never }],
          source: "user"
        })
        expect(Freeze.isDeeplyFrozen(event), `depth ${depth}`).toBe(true)
        expect(Object.isFrozen(bottom), `depth ${depth}`).toBe(true)
        expect(() => array(bottom["leaf"]).push(1)).toThrow(TypeError)
        expect(() => { bottom["leaf"] = "changed" }).toThrow(TypeError)
      }
    }))

  it("isDeeplyFrozen finds a mutable object at any depth, and a cycle cannot make it loop", () => {
    let nested: Record<string, unknown> = {}
    const bottom = nested
    for (let i = 0; i < 100_000; i++) nested = Object.freeze({ next: nested })
    expect(Freeze.isDeeplyFrozen(nested)).toBe(false)
    Object.freeze(bottom)
    expect(Freeze.isDeeplyFrozen(nested)).toBe(true)
    const cyclic: Record<string, unknown> = {}
    cyclic["self"] = cyclic
    expect(Freeze.isDeeplyFrozen(Freeze.deep(cyclic))).toBe(true)
  })

  it.effect("writing to an event, its data, its content array or a nested block throws", () =>
    Effect.gen(function*() {
      const session = fresh()
      const result = yield* session.append("tool/result", {
        turn: 1,
        step: 1,
        callId: c1,
        content: [Content.text("ok"), { type: "custom", kind: "k", data: { list: [1, 2] } }],
        isError: false
      })
      const before = JSON.stringify(yield* session.events)
      expect(() => { record(result).seq = 9 }).toThrow(TypeError)
      expect(() => { record(result).extra = 1 }).toThrow(TypeError)
      expect(() => delete record(result)["time"]).toThrow(TypeError)
      expect(() => { record(result.data).isError = true }).toThrow(TypeError)
      expect(() => { record(result.data).error = { tag: "x", code: "y" } }).toThrow(TypeError)
      expect(() => array(result.data.content).push(Content.text("more"))).toThrow(TypeError)
      expect(() => { array(result.data.content)[0] = Content.text("replaced") }).toThrow(TypeError)
      expect(() => { record(result.data.content[0]).text = "changed" }).toThrow(TypeError)
      const custom = result.data.content[1]!
      expect(() => array(record(record(custom).data)["list"]).push(3)).toThrow(TypeError)
      expect(() => Object.defineProperty(result.data, "turn", { value: 2 })).toThrow(TypeError)
      expect(JSON.stringify(yield* session.events)).toBe(before)
    }))

  it.effect("append freezes the caller's data too: the event holds it by reference, not a copy", () =>
    Effect.gen(function*() {
      const session = fresh()
      const content = [Content.text("mine")]
      const data = { content, source: "user" }
      const event = yield* session.append("user/message", data)
      // logged by reference (no copy is made), so the caller's own object is now frozen
      expect(event.data).toBe(data)
      expect(event.data.content).toBe(content)
      expect(Object.isFrozen(data)).toBe(true)
      expect(Object.isFrozen(content)).toBe(true)
      expect(Object.isFrozen(content[0])).toBe(true)
      expect(() => content.push(Content.text("later"))).toThrow(TypeError)
      expect(() => { data.source = "someone else" }).toThrow(TypeError)
    }))

  it.effect("an extension event's logged (encoded) data is frozen too", () =>
    Effect.gen(function*() {
      const session = fresh()
      const event = yield* session.append(Note, { text: "n" })
      expect(Freeze.isDeeplyFrozen(event)).toBe(true)
      expect(() => { record(event.data).text = "m" }).toThrow(TypeError)
    }))
})

describe("Immutability: derived messages and requests", () => {
  const logged = (session: Session.Session) =>
    Effect.gen(function*() {
      yield* session.append("user/message", { content: [Content.text("hi"), Content.image("image/png", "AA")], source: "user" })
      yield* session.append("assistant/message", {
        turn: 1,
        step: 1,
        content: [Content.text("calling"), Content.toolCall(c1, "read", "{}"), Content.toolCall(c2, "read", "{}")]
      })
      yield* session.append("context/message", { content: [Content.text("ctx"), Content.image("image/png", "BB")], source: "ide" })
      yield* session.append("tool/result", { turn: 1, step: 1, callId: c1, content: [Content.text("r1")], isError: false })
      yield* session.append("steering/message", { turn: 1, content: [Content.text("steer")], source: "user" })
      // c2 stays unanswered: the history ends with a synthetic result, then the held messages
    })

  it.effect("every derived message, its content array and its blocks are frozen; writing to them throws", () =>
    Effect.gen(function*() {
      const session = fresh()
      yield* logged(session)
      const history = yield* session.messages
      const messages = History.toArray(history)
      expect(messages.map((m) => m.role)).toStrictEqual(["user", "assistant", "user", "user", "user", "user"])
      expect(Object.isFrozen(history)).toBe(true)
      expect(Object.isFrozen(messages)).toBe(true)
      for (const m of messages) expect(Freeze.isDeeplyFrozen(m), JSON.stringify(m)).toBe(true)
      const before = JSON.stringify(yield* session.events)

      expect(() => { record(history).length = 0 }).toThrow(TypeError)
      expect(() => { record(history)["tail"] = [] }).toThrow(TypeError)
      expect(() => array(record(history)["tail"]).push(Message.user("injected"))).toThrow(TypeError)
      expect(() => array(messages).push(Message.user("injected"))).toThrow(TypeError)
      expect(() => { array(messages)[0] = Message.user("replaced") }).toThrow(TypeError)
      for (const m of messages) {
        expect(() => { record(m).role = "system" }).toThrow(TypeError)
        expect(() => array(m.content).push(Content.text("more"))).toThrow(TypeError)
        expect(() => array(m.content).splice(0, 1)).toThrow(TypeError)
        expect(() => { record(m.content[0]).type = "text" }).toThrow(TypeError)
      }
      // the tool result's nested content, the synthetic result and an envelope
      const result = messages[2]!.content[0]!
      expect(result.type).toBe("tool-result")
      expect(() => array(record(result).content).push(Content.text("x"))).toThrow(TypeError)
      const synthetic = messages[3]!.content[0]!
      expect(synthetic.type === "tool-result" && synthetic.toolCallId).toBe(c2)
      expect(() => { record(record(synthetic).error).code = "OK" }).toThrow(TypeError)
      expect(() => { record(messages[4]!.content[0]).text = "<context>forged</context>" }).toThrow(TypeError)

      expect(JSON.stringify(yield* session.events)).toBe(before)
      expect(yield* session.messages).toStrictEqual(Derivation.derive(yield* session.events))
    }))

  it.effect("a request built by spreading derived messages is a new value: changing it cannot change the log", () =>
    Effect.gen(function*() {
      const session = fresh()
      yield* logged(session)
      const before = JSON.stringify(yield* session.events)
      const derived = yield* session.messages
      const snapshot = JSON.stringify(derived)

      // what request middleware does: new arrays and messages, sharing the frozen blocks
      type Draft = { role: Message.Role; content: Array<Content.ContentBlock> }
      const request: { system: string; messages: Array<Draft> } = {
        system: "be brief",
        messages: [
          ...History.toArray(derived).map((m): Draft => ({ ...m, content: [...m.content] })),
          { role: "user", content: [Content.text("and now?")] }
        ]
      }
      request.messages.reverse()
      request.messages[0]!.content.push(Content.text("appended"))
      request.messages[1]!.role = "assistant"
      request.messages.splice(2, 1)
      request.messages.push({
        role: "user",
        content: [{ ...History.at(derived, 0)!.content[0]!, text: "edited copy" } as Content.TextBlock]
      })

      expect(JSON.stringify(yield* session.events)).toBe(before)
      expect(JSON.stringify(derived)).toBe(snapshot)
      expect(JSON.stringify(yield* session.messages)).toBe(snapshot)
      expect(yield* session.messages).toStrictEqual(Derivation.derive(yield* session.events))
    }))

  it.effect("derived messages share the logged content (no copy per step)", () =>
    Effect.gen(function*() {
      const session = fresh()
      const user = yield* session.append("user/message", { content: [Content.text("hi")], source: "user" })
      const assistant = yield* session.append("assistant/message", { turn: 1, step: 1, content: [Content.text("hello")] })
      const first = yield* session.messages
      expect(History.at(first, 0)!.content).toBe(user.data.content)
      expect(History.at(first, 1)!.content).toBe(assistant.data.content)
      yield* session.append("user/message", { content: [Content.text("again")], source: "user" })
      const second = yield* session.messages
      // the earlier messages are the same objects, not re-derived copies
      expect(History.at(second, 0)).toBe(History.at(first, 0))
      expect(History.at(second, 1)).toBe(History.at(first, 1))
      // the earlier history is unchanged
      expect(first.length).toBe(2)
      // and nothing new: the very same history
      expect(yield* session.messages).toBe(second)
    }))
})

describe("Freeze", () => {
  it("deep freezes below an object that is already frozen, and handles cycles", () => {
    const inner = { list: [{ x: 1 }] }
    const outer = Object.freeze({ inner })
    const cyclic: Record<string, unknown> = { name: "c" }
    cyclic.self = cyclic
    cyclic.outer = outer
    expect(Freeze.isDeeplyFrozen(outer)).toBe(false)
    expect(Freeze.deep(cyclic)).toBe(cyclic)
    expect(Freeze.isDeeplyFrozen(cyclic)).toBe(true)
    expect(Object.isFrozen(inner.list[0])).toBe(true)
    expect(() => { inner.list[0]!.x = 2 }).toThrow(TypeError)
  })

  it("leaves primitives alone and reports a partly frozen value", () => {
    for (const p of [1, "s", null, undefined, true, 1n]) {
      expect(Freeze.deep(p)).toBe(p)
      expect(Freeze.isDeeplyFrozen(p)).toBe(true)
    }
    const partly = Object.freeze({ a: Object.freeze([1]), b: { c: 1 } })
    expect(Freeze.isDeeplyFrozen(partly)).toBe(false)
    expect(Freeze.isDeeplyFrozen(new Uint8Array(2))).toBe(false)
  })
})
