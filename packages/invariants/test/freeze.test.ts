/**
 * Code that mutates history throws at the mutation: logged events are deep-frozen at append
 * (and seeds at session creation), derived messages share that frozen data and are frozen
 * themselves, so an assignment, a push or a delete anywhere in them throws a TypeError (test
 * files are ES modules, hence strict mode) whose stack's first frame in this file is the
 * mutating line.
 */
import { Content, History, Ids, StreamChunk } from "@dsh/llm"
import { type Session, SessionEvent, SessionStore } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { appendDraft, type Draft, loop, toEvents } from "./logs.ts"

// escape hatches to attempt what the readonly types forbid
const record = (u: unknown) => u as Record<PropertyKey, unknown>
const array = (u: unknown) => u as Array<unknown>

/** The line of the caller: call it on the mutating line. */
const here = (): number => {
  const frame = new Error().stack!.split("\n")[2]!
  return Number(/freeze\.test\.ts:(\d+):\d+/.exec(frame)![1])
}

/** Runs the mutation: it must throw a TypeError whose first frame in this file is `line`. */
const throwsAt = (mutation: () => unknown, line: number): TypeError => {
  let thrown: unknown
  try {
    mutation()
  } catch (e) {
    thrown = e
  }
  expect(thrown, "the mutation did not throw").toBeInstanceOf(TypeError)
  const error = thrown as TypeError
  const frames = error.stack!.split("\n").filter((l) => l.trimStart().startsWith("at "))
  const first = frames.find((l) => l.includes("freeze.test.ts"))
  expect(first, error.stack).toMatch(new RegExp(`freeze\\.test\\.ts:${line}:\\d+\\)?$`))
  // nothing of the session package or the checker is between the mutation and the throw
  expect(frames.indexOf(first!), error.stack).toBeLessThanOrEqual(1)
  return error
}

const c1 = Ids.callId("c1")
const c2 = Ids.callId("c2")

/** A session holding a turn with nested content of every kind. */
const session = Effect.gen(function*() {
  const store = yield* SessionStore
  const s = yield* store.create()
  const drafts: Array<Draft> = loop("agent-a")
    .idle()
    .turn({ steps: [{ chunks: 1, calls: ["ok", "error"] }, {}] })
    .drafts
  for (const d of drafts) yield* appendDraft(s, d)
  yield* s.append("user/message", {
    content: [Content.text("see"), { type: "custom", kind: "mention", data: { path: ["src", "a.ts"], meta: { line: 3 } } }],
    source: "user"
  })
  yield* s.append("assistant/chunk", {
    turn: 2,
    step: 1,
    chunk: StreamChunk.blockEnd(0, Content.toolCall(c2, "read", "{\"path\":\"a\"}"))
  })
  yield* s.append("context/message", { content: [Content.text("the file changed")], source: "ide" })
  return s
})

const all = <T extends SessionEvent.CoreType>(events: ReadonlyArray<SessionEvent.SessionEvent>, type: T) =>
  events.filter(SessionEvent.isType(type))
const find = <T extends SessionEvent.CoreType>(events: ReadonlyArray<SessionEvent.SessionEvent>, type: T) =>
  all(events, type)[0]!
const last = <T extends SessionEvent.CoreType>(events: ReadonlyArray<SessionEvent.SessionEvent>, type: T) =>
  all(events, type).at(-1)!

const snapshot = (s: Session.Session) => Effect.map(s.events, (events) => JSON.stringify(events))

describe("Freeze: mutating history throws at the mutation", () => {
  it.effect("logged events: the envelope and the data", () =>
    Effect.gen(function*() {
      const s = yield* session
      const before = yield* snapshot(s)
      const events = yield* s.events
      const start = find(events, "turn/start")
      throwsAt(() => { record(start).seq = 99 }, here())
      throwsAt(() => { record(start.data).turn = 7 }, here())
      throwsAt(() => delete record(start)["time"], here())
      throwsAt(() => { record(start).extra = true }, here())
      throwsAt(() => Object.defineProperty(start.data, "trigger", { value: "forged" }), here())
      const result = find(events, "tool/result")
      throwsAt(() => { record(result.data).isError = !result.data.isError }, here())
      throwsAt(() => { record(result.data).callId = "other" }, here())
      expect(yield* snapshot(s)).toBe(before)
    }).pipe(Effect.scoped, Effect.provide(SessionStore.layer)))

  it.effect("nested blocks: content arrays, blocks, custom data, chunks, usage, error info", () =>
    Effect.gen(function*() {
      const s = yield* session
      const before = yield* snapshot(s)
      const events = yield* s.events
      const message = find(events, "assistant/message")
      throwsAt(() => array(message.data.content).push(Content.text("more")), here())
      throwsAt(() => { array(message.data.content)[0] = Content.text("replaced") }, here())
      throwsAt(() => array(message.data.content).splice(0, 1), here())
      const toolCall = message.data.content.find((b) => b.type === "tool-call")!
      throwsAt(() => { record(toolCall).arguments = "{\"rm\":\"-rf\"}" }, here())
      const result = find(events, "tool/result")
      throwsAt(() => { record(result.data.content[0]).text = "forged" }, here())
      const failed = last(events, "tool/result")
      throwsAt(() => { record(failed.data.error).code = "OK" }, here())
      const custom = last(events, "user/message").data.content[1]!
      const data = record(record(custom).data)
      throwsAt(() => array(data["path"]).push("b.ts"), here())
      throwsAt(() => { record(data["meta"]).line = 4 }, here())
      const chunk = last(events, "assistant/chunk")
      throwsAt(() => { record(record(chunk.data.chunk)["block"]).name = "write" }, here())
      const usage = find(events, "usage")
      throwsAt(() => { record(usage.data.usage).inputTokens = 0 }, here())
      expect(yield* snapshot(s)).toBe(before)
    }).pipe(Effect.scoped, Effect.provide(SessionStore.layer)))

  it.effect("derived messages: the history, its array, each message, their content shared with the log", () =>
    Effect.gen(function*() {
      const s = yield* session
      const before = yield* snapshot(s)
      const history = yield* s.messages
      const messages = History.toArray(history)
      expect(messages.length).toBeGreaterThan(4)
      throwsAt(() => { record(history).length = 0 }, here())
      throwsAt(() => array(record(history)["tail"]).push({ role: "user", content: [] }), here())
      throwsAt(() => array(messages).push({ role: "user", content: [] }), here())
      throwsAt(() => array(messages).pop(), here())
      throwsAt(() => { record(messages[0]).role = "system" }, here())
      throwsAt(() => array(messages[0]!.content).unshift(Content.text("injected")), here())
      const assistant = messages.find((m) => m.role === "assistant")!
      throwsAt(() => { record(assistant.content[0]).text = "rewritten" }, here())
      const toolResult = messages.flatMap((m) => m.content).find((b) => b.type === "tool-result")!
      throwsAt(() => { record(toolResult).toolCallId = c1 }, here())
      throwsAt(() => array(record(toolResult)["content"]).push(Content.text("more")), here())
      const envelope = messages.at(-1)!
      throwsAt(() => { record(envelope.content[0]).text = "<context>forged</context>" }, here())
      expect(yield* snapshot(s)).toBe(before)
      expect(yield* s.messages).toBe(history)
    }).pipe(Effect.scoped, Effect.provide(SessionStore.layer)))

  it.effect("events read from the stream and a seed's events are the same frozen objects", () =>
    Effect.gen(function*() {
      const s = yield* session
      const streamed = yield* Stream.runCollect(Stream.take(s.stream, 3))
      throwsAt(() => { record(streamed[2]!.data).trigger = "forged" }, here())
      const seed = toEvents(loop("agent-a").idle().turn({ steps: [{ calls: ["ok"] }] }).drafts, { freeze: false })
      const store = yield* SessionStore
      const seeded = yield* store.create({ seed })
      // seeding froze the caller's events in place
      throwsAt(() => { record(seed[0]!.data).status = "disposed" }, here())
      const first = (yield* seeded.events)[0]!
      throwsAt(() => { record(first).type = "error" }, here())
    }).pipe(Effect.scoped, Effect.provide(SessionStore.layer)))

  it("the stack points at the mutating line inside a helper, with its caller below", () => {
    const event = toEvents(loop("agent-a").idle().drafts)[0]!
    const helperLine = here() + 1 // the next line mutates
    const helper = (e: SessionEvent.SessionEvent) => { record(e.data).status = "running" }
    const [error, callerLine] = [throwsAt(() => helper(event), helperLine), here()]
    expect(error.stack).toMatch(new RegExp(`freeze\\.test\\.ts:${callerLine}:`))
    expect(error.message).toMatch(/read.only|not extensible|Cannot assign/)
  })
})
