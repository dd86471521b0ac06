/**
 * The replay model and its pure parts, without the loop: hand-written logs, replayed through
 * `Model.stream`. (The end-to-end record-then-replay scenarios, which need the loop, are in
 * packages/scenarios/test/replay.test.ts.)
 */
import { Assembler, Content, FinishReason, HarnessError, History, Ids, LlmError, type Message, ModelRequest, type StreamChunk } from "@dsh/llm"
import { Model, ModelErrors, ModelRegistry, ScriptedModel } from "@dsh/model"
import { JsonlSessions, SessionErrors, type SessionEvent } from "@dsh/session"
import { Replay } from "@dsh/testing"
import { describe, expect, it } from "@effect/vitest"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, Schema, Stream } from "effect"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"

type Event = SessionEvent.SessionEvent
type Entry = { readonly [T in SessionEvent.CoreType]: readonly [T, SessionEvent.DataOf<T>] }[SessionEvent.CoreType]

/** A log from `[type, data]` entries: seq from 0, time 0. */
const log = (...entries: ReadonlyArray<Entry>): Array<Event> =>
  entries.map(([type, data], seq) => ({ type, seq, time: 0, data }) as Event)

const echoTool: ModelRequest.ToolSchema = {
  name: "echo",
  description: "Echoes its text",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }
}

const callBlock = Content.toolCall(Ids.callId("call_1"), "echo", "{\"text\":\"hi\"}")
// the first two chunks of a text answer: a step the model never finished
const partial = Assembler.toChunks([Content.text("partial")]).slice(0, 2)
const answerOne = Assembler.toChunks([callBlock], { finish: FinishReason.toolCalls })
const answerTwo = Assembler.toChunks([Content.text("done")])

const chunks = (turn: number, step: number, list: ReadonlyArray<StreamChunk.StreamChunk>): Array<Entry> =>
  list.map((chunk) => ["assistant/chunk", { turn, step, chunk }] as const)

const settings = { system: "Be brief.", tools: [echoTool] }

/** A two-step turn: the model calls echo, then answers. */
const recording = log(
  ["turn/start", { turn: 1, trigger: "send" }],
  ["user/message", { content: [Content.text("say hi")], source: "user" }],
  ["step/start", { turn: 1, step: 1 }],
  ["model/request", { turn: 1, step: 1, model: "m", settings }],
  ...chunks(1, 1, answerOne),
  ["assistant/message", { turn: 1, step: 1, content: [callBlock], finishReason: FinishReason.toolCalls }],
  ["tool/call", { turn: 1, step: 1, callId: callBlock.id, name: "echo", arguments: callBlock.arguments }],
  ["tool/result", { turn: 1, step: 1, callId: callBlock.id, content: [Content.text("echo: hi")], isError: false }],
  ["step/end", { turn: 1, step: 1 }],
  ["step/start", { turn: 1, step: 2 }],
  ["model/request", { turn: 1, step: 2, model: "m" }],
  ...chunks(1, 2, answerTwo),
  ["assistant/message", { turn: 1, step: 2, content: [Content.text("done")], finishReason: FinishReason.stop }],
  ["step/end", { turn: 1, step: 2 }],
  ["turn/end", { turn: 1, reason: { kind: "completed" } }]
)

const user = (text: string): Message.Message => ({ role: "user", content: [Content.text(text)] })

const firstRequest: ModelRequest.ModelRequest = ModelRequest.make("m", [user("say hi")], settings)
const secondRequest: ModelRequest.ModelRequest = {
  ...firstRequest,
  messages: History.make(
    user("say hi"),
    { role: "assistant", content: [callBlock] },
    {
      role: "user",
      content: [Content.toolResult({ toolCallId: callBlock.id, content: [Content.text("echo: hi")] })]
    }
  )
}

/** `Model` (a registry of its own, even inside another test layer) with the replay of `events` registered. */
const replaying = (events: ReadonlyArray<Event>, options: Omit<Replay.EventsOptions, "events"> = {}) =>
  Replay.layer({ events, ...options }).pipe(Layer.provideMerge(Layer.fresh(Model.layer)))

/** Streams a request through `Model`, keeping what was emitted and how it ended. */
const drain = (request: ModelRequest.ModelRequest) =>
  Effect.gen(function*() {
    const model = yield* Model
    const emitted: Array<StreamChunk.StreamChunk> = []
    const exit = yield* Stream.runForEach(model.stream(request), (chunk) => Effect.sync(() => void emitted.push(chunk))).pipe(
      Effect.exit
    )
    return { chunks: emitted, exit }
  })

/** The defect a stream died with. */
const defectOf = (exit: Exit.Exit<unknown, unknown>): unknown => {
  if (Exit.isSuccess(exit)) return undefined
  const defect = Cause.findDefect(exit.cause)
  return defect._tag === "Success" ? defect.success : undefined
}

/** The served model names. */
const ModelRegistryModels = ModelRegistry.use((registry) => registry.models)

const mismatchOf = (exit: Exit.Exit<unknown, unknown>): Replay.ReplayMismatchError => {
  const defect = defectOf(exit)
  expect(defect).toBeInstanceOf(Replay.ReplayMismatchError)
  return defect as Replay.ReplayMismatchError
}

describe("Replay.firstDifference", () => {
  it("equal values have none; a key holding undefined counts as absent", () => {
    // a request rebuilt from its JSON (new objects everywhere), and its plain JSON form
    const decoded = Schema.decodeUnknownSync(ModelRequest.ModelRequest)(JSON.parse(JSON.stringify(secondRequest)))
    expect(decoded.messages).not.toBe(secondRequest.messages)
    expect(Replay.firstDifference(secondRequest, decoded)).toBeUndefined()
    expect(Replay.firstDifference(secondRequest, JSON.parse(JSON.stringify(secondRequest)))).toBeUndefined()
    expect(Replay.firstDifference({ a: 1, b: undefined }, { a: 1 })).toBeUndefined()
    expect(Replay.firstDifference({ a: 1 }, { a: 1, c: undefined })).toBeUndefined()
    expect(Replay.firstDifference([1, [2, { x: "y" }]], [1, [2, { x: "y" }]])).toBeUndefined()
    expect(Replay.firstDifference(Number.NaN, Number.NaN)).toBeUndefined()
  })

  it("names the part of a request: model, system, tools, messages with role and block type", () => {
    expect(Replay.firstDifference(firstRequest, { ...firstRequest, model: "other" })).toMatchObject({
      path: ["model"],
      part: "model",
      description: "model: expected \"m\", got \"other\""
    })
    expect(Replay.firstDifference(firstRequest, { ...firstRequest, tools: [{ ...echoTool, name: "shout" }] })?.description)
      .toBe("tools[0].name: expected \"echo\", got \"shout\"")
    const deeper = { ...echoTool, parameters: { type: "object", properties: { text: { type: "number" } } } }
    expect(Replay.firstDifference(firstRequest, { ...firstRequest, tools: [deeper] })?.description)
      .toBe("tools[0].parameters.properties.text.type: expected \"string\", got \"number\"")
    // the request's JSON form: its history is the array of its messages
    const changed = JSON.parse(JSON.stringify(secondRequest)) as { messages: Array<{ content: Array<{ content?: Array<{ text: string }> }> }> }
    changed.messages[2]!.content[0]!.content![0]!.text = "echo: ho"
    expect(Replay.firstDifference(secondRequest, changed)).toMatchObject({
      path: ["messages", 2, "content", 0, "content", 0, "text"],
      part: "message 2 (user) / block 0 (tool-result) / content[0].text",
      expected: "echo: hi",
      actual: "echo: ho"
    })
    expect(Replay.firstDifference(secondRequest, { ...secondRequest, messages: History.append(secondRequest.messages, user("more")) }))
      .toMatchObject({ part: "message 3 (user)", expected: undefined, actualPreview: expect.stringContaining("more") })
    expect(Replay.firstDifference(secondRequest, { ...secondRequest, messages: History.make(user("say hi")) }))
      .toMatchObject({ path: ["messages", 1], part: "message 1 (assistant)", actualPreview: "(absent)" })
  })

  it("a part missing on one side, a tool added, a type change", () => {
    const { system: _system, ...noSystem } = firstRequest
    expect(Replay.firstDifference(noSystem, firstRequest)).toMatchObject({
      part: "system",
      expectedPreview: "(absent)",
      actualPreview: "\"Be brief.\""
    })
    const added = { ...echoTool, name: "add" }
    expect(Replay.firstDifference(firstRequest, { ...firstRequest, tools: [echoTool, added] })).toMatchObject({
      part: "tools[1]",
      expectedPreview: "(absent)",
      actualPreview: expect.stringMatching(/^\{"name":"add"/)
    })
    expect(Replay.firstDifference({ a: [1] }, { a: { 0: 1 } })?.part).toBe("a")
  })

  it("compares the request's parts in a fixed order: the system prompt before the messages", () => {
    const both = { ...firstRequest, system: "Be verbose.", messages: History.make(user("say ho")) }
    expect(Replay.firstDifference(firstRequest, both)?.part).toBe("system")
    // whatever order the keys were written in
    const reordered = { messages: both.messages, tools: both.tools, system: both.system, model: "m" }
    expect(Replay.firstDifference(firstRequest, reordered)?.part).toBe("system")
  })

  it("previews long strings around their first difference, truncated", () => {
    const base = `${"section one. ".repeat(20)}The end.`
    const difference = Replay.firstDifference({ system: base }, { system: `${base}\n\nAlways answer in French.` })!
    expect(difference.part).toBe("system")
    expect(difference.expectedPreview).toMatch(/^….*The end\."? \(from char \d+\)$/)
    expect(difference.actualPreview).toContain("Always answer in French.")
    expect(difference.actualPreview.length).toBeLessThan(130)
    const long = Replay.firstDifference({ x: { blob: "a".repeat(500) } }, { x: 1 })!
    expect(long.expectedPreview.length).toBeLessThanOrEqual(80)
    expect(long.expectedPreview.endsWith("…")).toBe(true)
  })
})

describe("Replay.steps", () => {
  it("gives each model request its model, carried-forward settings, derived messages and chunks", () => {
    const steps = Replay.steps(recording)
    const requestSeqs = recording.filter((e) => e.type === "model/request").map((e) => e.seq)
    expect(steps.map((s) => [s.number, s.turn, s.step, s.seq])).toStrictEqual([[1, 1, 1, requestSeqs[0]], [2, 1, 2, requestSeqs[1]]])
    expect(Replay.firstDifference(steps[0]!.request, firstRequest)).toBeUndefined()
    expect(Replay.firstDifference(steps[1]!.request, secondRequest)).toBeUndefined()
    expect(steps[0]!.chunks).toStrictEqual(answerOne)
    expect(steps[1]!.chunks).toStrictEqual(answerTwo)
    expect(steps.map((s) => s.ending)).toStrictEqual([{ _tag: "Finished" }, { _tag: "Finished" }])
  })

  it("settings logged again replace the carried ones", () => {
    const events = log(
      ["turn/start", { turn: 1, trigger: "send" }],
      ["step/start", { turn: 1, step: 1 }],
      ["model/request", { turn: 1, step: 1, model: "m", settings: { system: "one" } }],
      ["step/end", { turn: 1, step: 1 }],
      ["step/start", { turn: 1, step: 2 }],
      ["model/request", { turn: 1, step: 2, model: "m", settings: { temperature: 0.5 } }],
      ["step/end", { turn: 1, step: 2 }],
      ["step/start", { turn: 1, step: 3 }],
      ["model/request", { turn: 1, step: 3, model: "n" }],
      ["step/end", { turn: 1, step: 3 }],
      ["turn/end", { turn: 1, reason: { kind: "completed" } }]
    )
    expect(Replay.steps(events).map((s) => s.request)).toStrictEqual([
      { system: "one", model: "m", messages: History.empty },
      { temperature: 0.5, model: "m", messages: History.empty },
      { temperature: 0.5, model: "n", messages: History.empty }
    ])
  })

  it("endings: a failed call, a failure after the answer, an interrupted call, a cut log", () => {
    const events = log(
      ["turn/start", { turn: 1, trigger: "send" }],
      ["step/start", { turn: 1, step: 1 }],
      ["model/request", { turn: 1, step: 1, model: "m", settings: {} }],
      ...chunks(1, 1, partial),
      ["error", { turn: 1, step: 1, message: "upstream overloaded", code: "LLM_SERVER" }],
      ["assistant/message", { turn: 1, step: 1, content: [Content.text("partial")] }],
      ["step/end", { turn: 1, step: 1 }],
      ["turn/end", { turn: 1, reason: { kind: "error", message: "upstream overloaded", code: "LLM_SERVER" } }],
      ["turn/start", { turn: 2, trigger: "send" }],
      ["step/start", { turn: 2, step: 1 }],
      ["model/request", { turn: 2, step: 1, model: "m" }],
      ...chunks(2, 1, answerOne),
      ["assistant/message", { turn: 2, step: 1, content: [callBlock], finishReason: FinishReason.toolCalls }],
      // a failure after the answer (here: a tool-phase error event) is not the model's
      ["error", { turn: 2, step: 1, message: "refused", code: "LLM_INVALID_REQUEST" }],
      ["tool/call", { turn: 2, step: 1, callId: callBlock.id, name: "echo", arguments: callBlock.arguments }],
      ["tool/result", { turn: 2, step: 1, callId: callBlock.id, content: [Content.text("aborted")], isError: true }],
      ["step/end", { turn: 2, step: 1 }],
      ["turn/end", { turn: 2, reason: { kind: "error", message: "refused", code: "LLM_INVALID_REQUEST" } }],
      ["turn/start", { turn: 3, trigger: "send" }],
      ["step/start", { turn: 3, step: 1 }],
      ["model/request", { turn: 3, step: 1, model: "m" }],
      ...chunks(3, 1, partial),
      ["assistant/message", { turn: 3, step: 1, content: [Content.text("partial")] }],
      ["step/end", { turn: 3, step: 1 }],
      ["turn/end", { turn: 3, reason: { kind: "aborted" } }],
      ["turn/start", { turn: 4, trigger: "send" }],
      ["step/start", { turn: 4, step: 1 }],
      ["model/request", { turn: 4, step: 1, model: "m" }],
      ...chunks(4, 1, partial)
    )
    expect(Replay.steps(events).map((s) => s.ending)).toStrictEqual([
      { _tag: "Failed", code: "LLM_SERVER", message: "upstream overloaded" },
      { _tag: "Finished" },
      { _tag: "Interrupted" },
      { _tag: "Cut" }
    ])
  })

  it("a step a resume closed after a crash (its interrupted-turn repair) is Cut, not Interrupted", () => {
    const events = log(
      ["turn/start", { turn: 1, trigger: "send" }],
      ["step/start", { turn: 1, step: 1 }],
      ["model/request", { turn: 1, step: 1, model: "m", settings: {} }],
      ...chunks(1, 1, partial),
      // what the resume appended to close the turn the process died in
      ["session/repair", { kind: "interrupted-turn", turn: 1, step: 1, calls: 0, message: "the process died in turn 1" }],
      ["step/end", { turn: 1, step: 1 }],
      ["turn/end", { turn: 1, reason: { kind: "interrupted", message: "the process died in turn 1" } }]
    )
    expect(Replay.steps(events).map((s) => s.ending)).toStrictEqual([{ _tag: "Cut" }])
  })

  it("`from` leaves out the steps of a seed: they are history, their messages still derive", () => {
    const steps = Replay.steps(recording, { from: 4 })
    expect(steps.map((s) => [s.number, s.step])).toStrictEqual([[1, 2]])
    expect(Replay.firstDifference(steps[0]!.request, secondRequest)).toBeUndefined()
  })
})

describe("Replay.layer", () => {
  it.effect("answers matching requests with the recorded chunks, in order", () =>
    Effect.gen(function*() {
      const first = yield* drain(firstRequest)
      expect(first.chunks).toStrictEqual(answerOne)
      expect(Exit.isSuccess(first.exit)).toBe(true)
      const second = yield* drain(secondRequest)
      expect(second.chunks).toStrictEqual(answerTwo)
      const replay = yield* Replay.Replay
      expect(yield* replay.remaining).toBe(0)
      expect(yield* replay.requests).toStrictEqual([firstRequest, secondRequest])
      expect(replay.steps).toHaveLength(2)
      expect(yield* (yield* Model).generate(firstRequest).pipe(Effect.exit)).toMatchObject({ _tag: "Failure" })
    }).pipe(Effect.provide(replaying(recording))))

  it.effect("a request that differs dies with REPLAY_MISMATCH naming the request, the step and the first difference", () =>
    Effect.gen(function*() {
      yield* drain(firstRequest)
      const { chunks: emitted, exit } = yield* drain({ ...secondRequest, tools: [{ ...echoTool, name: "shout" }] })
      expect(emitted).toStrictEqual([])
      const error = mismatchOf(exit)
      expect(error).toMatchObject({
        code: "REPLAY_MISMATCH",
        requestNumber: 2,
        turn: 1,
        step: 2,
        part: "tools[0].name",
        expected: "\"echo\"",
        actual: "\"shout\""
      })
      expect(error.message).toBe(
        `request 2 does not match the recording (turn 1, step 2, seq ${Replay.steps(recording)[1]!.seq}): ` +
          "tools[0].name: expected \"echo\", got \"shout\""
      )
      expect(HarnessError.isHarnessError(error)).toBe(true)
    }).pipe(Effect.provide(replaying(recording))))

  it.effect("past the recording: recording exhausted", () =>
    Effect.gen(function*() {
      yield* drain(firstRequest)
      yield* drain(secondRequest)
      const error = mismatchOf((yield* drain(secondRequest)).exit)
      expect(error.part).toBe("recording exhausted")
      expect(error.message).toBe("request 3 goes past the recording: recording exhausted — it holds 2 model requests")
      expect(yield* (yield* Replay.Replay).remaining).toBe(0)
    }).pipe(Effect.provide(replaying(recording))))

  it.effect("a recorded failure fails the same way: the LlmError class of its code and its message, after its chunks", () => {
    const events = log(
      ["turn/start", { turn: 1, trigger: "send" }],
      ["user/message", { content: [Content.text("go")], source: "user" }],
      ["step/start", { turn: 1, step: 1 }],
      ["model/request", { turn: 1, step: 1, model: "m", settings: {} }],
      ...chunks(1, 1, partial),
      ["error", { turn: 1, step: 1, message: "slow down", code: "LLM_RATE_LIMIT" }],
      ["assistant/message", { turn: 1, step: 1, content: [Content.text("partial")] }],
      ["step/end", { turn: 1, step: 1 }],
      ["turn/end", { turn: 1, reason: { kind: "error", message: "slow down", code: "LLM_RATE_LIMIT" } }],
      ["turn/start", { turn: 2, trigger: "send" }],
      ["step/start", { turn: 2, step: 1 }],
      ["model/request", { turn: 2, step: 1, model: "m" }],
      ["error", { turn: 2, step: 1, message: "the listener broke", code: "MIDDLEWARE" }],
      ["step/end", { turn: 2, step: 1 }],
      ["turn/end", { turn: 2, reason: { kind: "error", message: "the listener broke", code: "MIDDLEWARE" } }]
    )
    const steps = Replay.steps(events)
    return Effect.gen(function*() {
      const first = yield* drain(steps[0]!.request)
      expect(first.chunks).toStrictEqual(partial)
      expect(first.exit).toStrictEqual(Exit.fail(new LlmError.LlmRateLimitError({ message: "slow down" })))
      // another code: a defect of that code and message, so the loop logs the same error event
      const second = yield* drain(steps[1]!.request)
      expect(second.chunks).toStrictEqual([])
      expect(defectOf(second.exit)).toMatchObject({ code: "MIDDLEWARE", message: "the listener broke" })
      expect(HarnessError.isHarnessError(defectOf(second.exit))).toBe(true)
    }).pipe(Effect.provide(replaying(events)))
  })

  it.effect("a log cut after one chunk says so in the singular", () => {
    const events = log(
      ["turn/start", { turn: 1, trigger: "send" }],
      ["step/start", { turn: 1, step: 1 }],
      ["model/request", { turn: 1, step: 1, model: "m", settings: {} }],
      ...chunks(1, 1, partial.slice(0, 1))
    )
    const [step] = Replay.steps(events)
    return Effect.gen(function*() {
      const cut = yield* drain(step!.request)
      expect(mismatchOf(cut.exit).message).toBe(
        `request 1 goes past the recording: recording exhausted — the log ends inside its step (turn 1, step 1, seq ${step!.seq}) after 1 chunk`
      )
    }).pipe(Effect.provide(replaying(events)))
  })

  it.effect("an interrupted step hangs after its chunks (the replaying test interrupts it again); a cut log dies", () => {
    const events = log(
      ["turn/start", { turn: 1, trigger: "send" }],
      ["step/start", { turn: 1, step: 1 }],
      ["model/request", { turn: 1, step: 1, model: "m", settings: {} }],
      ...chunks(1, 1, partial),
      ["assistant/message", { turn: 1, step: 1, content: [Content.text("partial")] }],
      ["step/end", { turn: 1, step: 1 }],
      ["turn/end", { turn: 1, reason: { kind: "aborted" } }],
      ["turn/start", { turn: 2, trigger: "send" }],
      ["step/start", { turn: 2, step: 1 }],
      ["model/request", { turn: 2, step: 1, model: "m" }],
      ...chunks(2, 1, partial)
    )
    const steps = Replay.steps(events)
    return Effect.gen(function*() {
      const model = yield* Model
      const seen = yield* Deferred.make<void>()
      const emitted: Array<StreamChunk.StreamChunk> = []
      const fiber = yield* model.stream(steps[0]!.request).pipe(
        Stream.runForEach((chunk) =>
          Effect.andThen(
            Effect.sync(() => void emitted.push(chunk)),
            emitted.length + 1 === partial.length ? Deferred.succeed(seen, undefined) : Effect.void
          )
        ),
        Effect.forkChild
      )
      yield* Deferred.await(seen)
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* Fiber.interrupt(fiber)
      expect(emitted).toStrictEqual(partial)
      const cut = yield* drain(steps[1]!.request)
      expect(cut.chunks).toStrictEqual(partial)
      expect(mismatchOf(cut.exit)).toMatchObject({
        part: "recording exhausted",
        turn: 2,
        step: 1,
        message: `request 2 goes past the recording: recording exhausted — the log ends inside its step (turn 2, step 1, seq ${
          steps[1]!.seq
        }) after 2 chunks`
      })
    }).pipe(Effect.provide(replaying(events)))
  })

  it.effect("a step with no finish and no error in a turn that completed (an edited cassette) dies with REPLAY_MISMATCH, never hangs", () => {
    const events = log(
      ["turn/start", { turn: 1, trigger: "send" }],
      ["step/start", { turn: 1, step: 1 }],
      ["model/request", { turn: 1, step: 1, model: "m", settings: {} }],
      // the finish chunk was deleted by hand
      ...chunks(1, 1, answerTwo.slice(0, -1)),
      ["assistant/message", { turn: 1, step: 1, content: [Content.text("done")], finishReason: FinishReason.stop }],
      ["step/end", { turn: 1, step: 1 }],
      ["turn/end", { turn: 1, reason: { kind: "completed" } }]
    )
    const [step] = Replay.steps(events)
    const why = `its step (turn 1, step 1, seq ${step!.seq}) logged no finish chunk and no error, yet its turn ended completed, ` +
      "which no run logs: the recording was edited or damaged"
    expect(step!.ending).toStrictEqual({ _tag: "Inconsistent", why })
    return Effect.gen(function*() {
      const replayed = yield* drain(step!.request)
      expect(replayed.chunks).toStrictEqual(answerTwo.slice(0, -1))
      expect(mismatchOf(replayed.exit)).toMatchObject({
        code: "REPLAY_MISMATCH",
        part: "recording inconsistent",
        turn: 1,
        step: 1,
        message: `request 1 cannot be answered from the recording: ${why}`
      })
    }).pipe(Effect.provide(replaying(events)))
  })

  it.effect("normalize brings both sides to a comparable form (a volatile prompt section)", () => {
    const dated = log(
      ["turn/start", { turn: 1, trigger: "send" }],
      ["user/message", { content: [Content.text("go")], source: "user" }],
      ["step/start", { turn: 1, step: 1 }],
      ["model/request", { turn: 1, step: 1, model: "m", settings: { system: "Today is 2025-01-01." } }],
      ...chunks(1, 1, answerTwo),
      ["assistant/message", { turn: 1, step: 1, content: [Content.text("done")], finishReason: FinishReason.stop }],
      ["step/end", { turn: 1, step: 1 }],
      ["turn/end", { turn: 1, reason: { kind: "completed" } }]
    )
    const normalize = (request: ModelRequest.ModelRequest): ModelRequest.ModelRequest =>
      request.system === undefined ? request : { ...request, system: request.system.replaceAll(/\d{4}-\d{2}-\d{2}/g, "<date>") }
    const today = ModelRequest.make("m", [user("go")], { system: "Today is 2031-12-24." })
    return Effect.gen(function*() {
      expect((yield* drain(today)).chunks).toStrictEqual(answerTwo)
      // without it, the date is the first difference
      const strict = yield* drain(today).pipe(Effect.provide(replaying(dated)))
      expect(mismatchOf(strict.exit).message).toContain("system: expected \"Today is 2025-01-01.\", got \"Today is 2031-12-24.\"")
    }).pipe(Effect.provide(replaying(dated, { normalize })))
  })

  it.effect("serves the recorded models by default, or the ones given; a served name already taken is a conflict", () =>
    Effect.gen(function*() {
      expect(yield* ModelRegistryModels).toStrictEqual(["m"])
      const renamed = yield* ModelRegistryModels.pipe(
        Effect.provide(replaying(recording, { models: ["x", "y"], name: "cassette" }))
      )
      expect(renamed).toStrictEqual(["x", "y"])
      const conflict = yield* Effect.void.pipe(
        Effect.provide(Replay.layer({ events: recording }).pipe(
          Layer.provideMerge(ScriptedModel.layer({ script: [], models: ["m"] })),
          Layer.provideMerge(Layer.fresh(Model.layer))
        )),
        Effect.flip
      )
      expect(conflict).toBeInstanceOf(ModelErrors.ModelConflictError)
    }).pipe(Effect.provide(replaying(recording))))

  it.effect("replays a session file; a corrupt one fails the layer with CORRUPT_LOG", () =>
    Effect.gen(function*() {
      const directory = yield* Effect.acquireRelease(
        Effect.promise(() => mkdtemp(join(tmpdir(), "dsh-replay-"))),
        (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
      )
      const file = join(directory, JsonlSessions.fileName("cassette"))
      yield* Effect.promise(() =>
        writeFile(file, JsonlSessions.headerLine("cassette", 0) + recording.map(JsonlSessions.eventLine).join(""))
      )
      const fromFile = Replay.layer({ file }).pipe(Layer.provideMerge(Model.layer), Layer.provide(NodeFileSystem.layer))
      const answered = yield* Effect.all([drain(firstRequest), drain(secondRequest)]).pipe(Effect.provide(fromFile))
      expect(answered.map((a) => a.chunks)).toStrictEqual([answerOne, answerTwo])

      const broken = join(directory, "broken.jsonl")
      yield* Effect.promise(() => writeFile(broken, JsonlSessions.headerLine("broken", 0) + "not json\n{}\n"))
      const error = yield* Effect.void.pipe(
        Effect.provide(Replay.layer({ file: broken }).pipe(Layer.provideMerge(Model.layer), Layer.provide(NodeFileSystem.layer))),
        Effect.flip
      )
      expect(error).toBeInstanceOf(SessionErrors.CorruptLogError)
      expect(error.code).toBe("CORRUPT_LOG")
    }).pipe(Effect.scoped))
})

describe("Replay.layer options past the types", () => {
  it.effect("fail the Layer with AdapterConfigError (LLM_CONFIG) naming the setting, before anything is read", () =>
    Effect.gen(function*() {
      for (const [options, setting, words] of [
        [null, "options", "its options must be { events } or { file }, got null"],
        [{}, "options", "give the recording as exactly one of events"],
        [{ events: recording, file: "x.jsonl" }, "options", "exactly one of events"],
        [{ events: "log" }, "events", `events must be a list of session events, got "log"`],
        [{ events: [recording[0], 3] }, "events", "events[1] is no session event, got 3"],
        [{ file: "" }, "file", "file must be the path of a session file"],
        [{ events: recording, model: ["m"] }, "options", `the options object has "model", which is no option`],
        [{ events: recording, models: "m" }, "models", "models must be a list of model names"],
        [{ events: recording, normalize: true }, "normalize", "normalize must be a function of a request"],
        [{ events: recording, from: -1 }, "from", "from must be the seq of an event (an integer ≥ 0), got -1"]
      ] as const) {
        const error = yield* Effect.flip(Layer.build(Replay.layer(options as never).pipe(Layer.provide([Model.layer, NodeFileSystem.layer]))))
        expect(error).toBeInstanceOf(ModelErrors.AdapterConfigError)
        expect(error).toMatchObject({ code: "LLM_CONFIG", setting })
        expect(error.message).toContain(words)
      }
    }).pipe(Effect.scoped))
})
