/**
 * Context management (issue #18), end to end under the invariants: compaction is data in the
 * log and the history a pure projection of it. A scripted model answers the agent's steps and,
 * told apart by the summarizer's instruction, its summarizing calls.
 */
import { type Agent, AgentHooks, Agents } from "@dsh/agent"
import { type Content, History, LlmError, type ModelRequest, Usage } from "@dsh/llm"
import { AgentLoop } from "@dsh/loop"
import { Model, ScriptedModel } from "@dsh/model"
import { Compaction, Derivation, type SessionEvent } from "@dsh/session"
import { Replay, Testing } from "@dsh/testing"
import { Tool, Tools } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Schema, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { create, echo, type Event, gatedTool, makeGate, ofType, register, TestLayer, textOf, turnEvents } from "./helpers.ts"

const { reply } = ScriptedModel

/** Whether a request is a summarizing call (its instruction is the summarizer's). */
const isSummary = (request: ModelRequest.ModelRequest) => request.system === Compaction.defaultPrompt

/** The transcript a summarizing call was asked to summarize. */
const transcriptOf = (request: ModelRequest.ModelRequest) => textOf(History.toArray(request.messages)[0]!.content)

interface Responder {
  readonly replies: ReadonlyArray<ScriptedModel.Reply>
  readonly steps: Array<ModelRequest.ModelRequest>
  readonly summaries: Array<ModelRequest.ModelRequest>
}

/**
 * Replies for `count` requests: a summarizing call gets `summary(n)` (the n-th, from 1), a step
 * gets `answer(n)` (the n-th step request).
 */
const responder = (
  options: {
    readonly answer?: (n: number, request: ModelRequest.ModelRequest) => ReadonlyArray<ScriptedModel.Step>
    readonly summary?: (n: number, request: ModelRequest.ModelRequest) => ReadonlyArray<ScriptedModel.Step>
    readonly count?: number
  } = {}
): Responder => {
  const steps: Array<ModelRequest.ModelRequest> = []
  const summaries: Array<ModelRequest.ModelRequest> = []
  const answer = options.answer ?? ((n) => reply.text(`answer ${n} ${"a".repeat(300)}`))
  const summary = options.summary ?? ((n) => reply.text(`summary ${n}`))
  const one: ScriptedModel.Reply = (request) => {
    if (isSummary(request)) {
      summaries.push(request)
      return summary(summaries.length, request)
    }
    steps.push(request)
    return answer(steps.length, request)
  }
  return { replies: Array.from({ length: options.count ?? 200 }, () => one), steps, summaries }
}

/** A responder whose summaries never come; `asked` is done once the summarizer was called. */
const hangingSummary = () => {
  const asked = Deferred.makeUnsafe<void>()
  const model = responder({
    summary: () => {
      Deferred.doneUnsafe(asked, Exit.void)
      return reply.hangAt(reply.text("never"), 0)
    }
  })
  return { asked, model }
}

/** A user message of about 100 tokens. */
const question = (n: number) => `question ${n} ${"q".repeat(400)}`

/** The estimate of a request the way the loop sizes a history: characters over four, settings aside. */
const tokensOfRequest = (request: ModelRequest.ModelRequest) => Compaction.tokensOf(Compaction.charsOfHistory(request.messages))

const compactions = (events: ReadonlyArray<Event>) => ofType(events, "compaction/applied").map((e) => e.data)
const failures = (events: ReadonlyArray<Event>) => ofType(events, "compaction/failed").map((e) => e.data)

const texts = (history: History.History) => History.toArray(history).map((m) => textOf(m.content))

const runAll = (agent: Agent.Agent, count: number, from = 1) =>
  Effect.forEach(Array.from({ length: count }, (_, i) => from + i), (n) => agent.run(question(n)), { discard: true })

// 1,000 tokens of window, compacted past 60%: about four turns of ~200 tokens fit
const WINDOW = { contextWindow: 1_000, threshold: 0.6, keepTurns: 1 } as const
const LIMIT = 600

describe("#18 automatic compaction in a long scripted session", () => {
  it.effect("no request passes the limit; each summary replaces the turns before the newest; the prefix stays stable", () => {
    const model = responder()
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: WINDOW })
      yield* runAll(agent, 12)
      const events = yield* agent.session.events
      const summaries = compactions(events).filter((c) => c.kind === "summary")
      expect(summaries.length).toBeGreaterThanOrEqual(2)
      expect(model.summaries).toHaveLength(summaries.length)
      // every request the agent sent fits (the loop's own estimate, the settings are empty here)
      for (const request of model.steps) expect(tokensOfRequest(request)).toBeLessThanOrEqual(LIMIT)
      // what the log records: the range, the summary, the model, the sizes
      for (const summary of summaries) {
        // the default budget is a quarter of a window this small, not 1,500 tokens that would not fit it
        expect(summary).toMatchObject({ reason: "auto", model: "scripted", prompt: Compaction.defaultPrompt, maxTokens: 250 })
        expect(summary.tokensAfter).toBeLessThan(summary.tokensBefore)
        expect(events[summary.through]!.type).toBe("turn/end")
      }
      // a summary covers what the previous one did: its transcript starts with that summary
      expect(transcriptOf(model.summaries[1]!)).toContain("summary 1")
      // the last turn before the newest stays verbatim; the history is the summary, then those turns
      const history = yield* agent.session.messages
      expect(texts(history)[0]).toBe(Derivation.summaryText(`summary ${summaries.length}`))
      expect(texts(history).at(-2)).toBe(question(12))
      expect(Derivation.problems(history)).toStrictEqual([])
      // byte-stable prefix: between compactions, each request starts with the previous request's messages
      const [from, to] = ofType(events, "compaction/applied").slice(-2).map((e) => e.seq)
      const requests = ofType(events, "model/request")
      const between = requests.flatMap((e, i) => (e.seq > from! && e.seq < to! ? [model.steps[i]!] : []))
      expect(between.length).toBeGreaterThanOrEqual(2)
      for (let i = 1; i < between.length; i++) {
        const previous = History.toArray(between[i - 1]!.messages)
        expect(History.toArray(between[i]!.messages).slice(0, previous.length)).toStrictEqual(previous)
      }
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("the size comes from the provider's usage when it reports one: a large usage compacts early", () => {
    const big = Usage.make({ inputTokens: 700, outputTokens: 10 })
    const model = responder({ answer: (n) => reply.text(`answer ${n}`, { usage: big }) })
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: WINDOW })
      yield* runAll(agent, 3)
      // turns are tiny by characters, but the provider said 710 tokens: compacted before turn 3's step
      const events = yield* agent.session.events
      const [first] = compactions(events)
      expect(first).toMatchObject({ kind: "summary", reason: "auto" })
      expect(first!.tokensBefore).toBeGreaterThan(710)
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })
})

describe("#18 manual compaction", () => {
  it.effect("agent.compact() summarizes all but the newest turns now, and reports what it did", () => {
    const model = responder()
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 1 } })
      yield* runAll(agent, 3)
      yield* agent.awaitIdle
      const before = yield* agent.session.messages
      const report = yield* agent.compact()
      // it returns to an agent settled again, as run does: the status agrees with it
      expect(yield* agent.status).toBe("idle")
      expect((yield* agent.session.events).at(-1)).toMatchObject({ type: "agent/status", data: { status: "idle" } })
      expect(report.applied).toHaveLength(1)
      expect(report.applied[0]).toMatchObject({ kind: "summary", reason: "manual", summary: "summary 1" })
      expect(report.tokensAfter).toBeLessThan(report.tokensBefore)
      // the summarizer saw turns 1 and 2 as a transcript, not turn 3
      const transcript = transcriptOf(model.summaries[0]!)
      expect(transcript).toContain(question(2))
      expect(transcript).not.toContain(question(3))
      const after = yield* agent.session.messages
      expect(texts(after)).toStrictEqual([Derivation.summaryText("summary 1"), ...texts(before).slice(-2)])
      // logged between turns, the agent running meanwhile; the next turn's request starts from it
      const events = yield* agent.session.events
      const applied = ofType(events, "compaction/applied")[0]!
      expect(events.slice(applied.seq - 2).map((e) => e.type === "agent/status" ? e.data.status : e.type)).toStrictEqual([
        "idle",
        "running",
        "compaction/applied",
        "idle"
      ])
      yield* agent.run("and now?")
      expect(texts(model.steps.at(-1)!.messages)[0]).toBe(Derivation.summaryText("summary 1"))
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("the sizes it reports compare: after is below before, also when the provider's usage disagrees with the characters", () => {
    // a provider that reports far fewer tokens than the characters suggest
    const tiny = Usage.make({ inputTokens: 5, outputTokens: 1 })
    const model = responder({ answer: (n) => reply.text(`answer ${n} ${"a".repeat(300)}`, { usage: tiny }) })
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 1 } })
      yield* runAll(agent, 3)
      const report = yield* agent.compact()
      expect(report.applied).toHaveLength(1)
      expect(report.tokensAfter).toBeLessThanOrEqual(report.tokensBefore)
      expect(report.applied[0]!.tokensAfter).toBeLessThanOrEqual(report.applied[0]!.tokensBefore)
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("with nothing to summarize, compact() applies nothing and calls no model", () => {
    const model = responder()
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { keepTurns: 2 } })
      yield* runAll(agent, 2)
      const report = yield* agent.compact()
      expect(yield* agent.status).toBe("idle")
      expect(report.applied).toStrictEqual([])
      expect(report.tokensAfter).toBe(report.tokensBefore)
      expect(model.summaries).toHaveLength(0)
      expect(compactions(yield* agent.session.events)).toStrictEqual([])
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("a compaction asked for while a turn runs waits for it, then runs before the messages queued meanwhile", () => {
    const model = responder({
      answer: (n) => (n === 3 ? reply.toolCalls([{ name: "hold", arguments: { id: "x" } }]) : reply.text(`answer ${n}`))
    })
    return Effect.gen(function*() {
      const gates = { x: yield* makeGate }
      yield* register(gatedTool("hold", gates))
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 0 } })
      yield* runAll(agent, 2)
      yield* agent.send("turn three")
      yield* Deferred.await(gates.x.started)
      const compacting = yield* Effect.forkChild(agent.compact(), { startImmediately: true })
      yield* agent.send("turn four")
      yield* Deferred.succeed(gates.x.release, undefined)
      const report = yield* Fiber.join(compacting)
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      const applied = ofType(events, "compaction/applied")[0]!
      // through turn 3 (the one running when it was asked), before turn 4
      const end3 = ofType(events, "turn/end").find((e) => e.data.turn === 3)!
      const start4 = ofType(events, "turn/start").find((e) => e.data.turn === 4)!
      expect(applied.seq).toBeGreaterThan(end3.seq)
      expect(applied.seq).toBeLessThan(start4.seq)
      expect(report.applied[0]).toMatchObject({ kind: "summary", through: end3.seq })
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })
})

describe("#18 a summarizing call that fails or is aborted leaves the history as it was", () => {
  it.effect("a failing summarizer: compaction/failed with its code; compact() fails with its typed error", () => {
    const model = responder({ summary: () => reply.fail(new LlmError.LlmServerError({ message: "summarizer down" })) })
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 1 } })
      yield* runAll(agent, 3)
      const before = yield* agent.session.messages
      const error = yield* Effect.flip(agent.compact())
      expect(error).toMatchObject({ _tag: "LlmServerError", code: "LLM_SERVER" })
      expect(History.toArray(yield* agent.session.messages)).toStrictEqual(History.toArray(before))
      const events = yield* agent.session.events
      expect(failures(events)).toStrictEqual([
        expect.objectContaining({ kind: "summary", reason: "manual", code: "LLM_SERVER", message: "summarizer down" })
      ])
      expect(compactions(events)).toStrictEqual([])
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("a failing summarizer in an automatic compaction: the turn goes on uncompacted and is not retried in it", () => {
    const model = responder({ summary: () => reply.fail(new LlmError.LlmServerError({ message: "summarizer down" })) })
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: WINDOW })
      yield* runAll(agent, 6)
      const events = yield* agent.session.events
      expect(ofType(events, "turn/end").map((e) => e.data.reason.kind)).toStrictEqual(Array(6).fill("completed"))
      // tried once per turn from the first that needed it, never twice in one
      const failed = ofType(events, "compaction/failed")
      expect(failed.length).toBeGreaterThanOrEqual(2)
      const turnOf = (seq: number) => ofType(events, "turn/start").filter((e) => e.seq < seq).at(-1)!.data.turn
      expect(new Set(failed.map((e) => turnOf(e.seq))).size).toBe(failed.length)
      expect(compactions(events)).toStrictEqual([])
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("a summarizer answering with no text is a failure (LLM_PROTOCOL), not an empty summary", () => {
    const model = responder({ summary: () => reply.text("   ") })
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 0 } })
      yield* runAll(agent, 1)
      const error = yield* Effect.flip(agent.compact())
      expect(error.code).toBe("LLM_PROTOCOL")
      expect(compactions(yield* agent.session.events)).toStrictEqual([])
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("abort during a manual summarizing call: compact() fails ABORTED, compaction/failed ABORTED, history unchanged", () => {
    const { asked, model } = hangingSummary()
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 0 } })
      yield* runAll(agent, 2)
      const before = yield* agent.session.messages
      const compacting = yield* Effect.forkChild(agent.compact())
      yield* Deferred.await(asked)
      yield* agent.abort("changed my mind")
      const error = yield* Effect.flip(Fiber.join(compacting))
      expect(error).toMatchObject({ code: "ABORTED" })
      expect(error.message).toContain("changed my mind")
      const events = yield* agent.session.events
      expect(failures(events)).toStrictEqual([expect.objectContaining({ code: "ABORTED", reason: "manual" })])
      expect(History.toArray(yield* agent.session.messages)).toStrictEqual(History.toArray(before))
      // the agent serves on
      yield* agent.run("still there?")
      yield* agent.awaitIdle
      expect(yield* agent.status).toBe("idle")
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("steering sent while a manual summary is written is not stranded: it starts the next turn, in arrival order", () => {
    const { asked, model } = hangingSummary()
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 0 } })
      yield* runAll(agent, 2)
      const compacting = yield* Effect.forkChild(agent.compact())
      yield* Deferred.await(asked)
      yield* agent.steer("steered meanwhile")
      yield* agent.send("sent after it")
      // the summary never comes: the compaction is given up, the messages are served all the same
      yield* agent.abort("too slow")
      expect(yield* Effect.flip(Fiber.join(compacting))).toMatchObject({ code: "ABORTED" })
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      const after = events.slice(failures(events)[0] === undefined ? 0 : ofType(events, "compaction/failed")[0]!.seq)
      const said = after.flatMap((e) => (e.type === "user/message" || e.type === "steering/message" ? [textOf(e.data.content)] : []))
      expect(said).toStrictEqual(["steered meanwhile", "sent after it"])
      expect(ofType(after, "turn/start").map((e) => e.data.trigger)).toStrictEqual(["steer"])
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("abort right after compact(), before it started: compact() fails ABORTED, nothing applied", () => {
    const model = responder({})
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 0 } })
      yield* runAll(agent, 2)
      // hold the driver where it has taken up the request but not started the compaction
      const running = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const hooks = yield* AgentHooks
      yield* hooks.listeners.register({
        name: "holds-running",
        around: (input, next) =>
          input.event.type === "agent/status" && input.event.data.status === "running"
            ? Effect.andThen(Effect.andThen(Deferred.succeed(running, undefined), Deferred.await(release)), next(input))
            : next(input)
      })
      const compacting = yield* Effect.forkChild(agent.compact())
      yield* Deferred.await(running)
      const aborting = yield* Effect.forkChild(agent.abort("not now"))
      const error = yield* Effect.flip(Fiber.join(compacting))
      expect(error).toMatchObject({ code: "ABORTED" })
      expect(error.message).toBe("the compaction was aborted before it started: not now")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(aborting)
      yield* agent.awaitIdle
      expect(ofType(yield* agent.session.events, "compaction/applied")).toStrictEqual([])
      expect(model.summaries).toStrictEqual([])
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("a summarizer that ignores the abort past the grace: compaction/failed ABORTED is logged all the same", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const asked = yield* Deferred.make<void>()
      // the second call is the summary's: it neither answers nor lets itself be interrupted
      let calls = 0
      yield* model.use({
        name: "stubborn",
        around: (request, next) =>
          ++calls === 2
            ? Stream.fromEffect(Effect.andThen(Deferred.succeed(asked, undefined), Effect.uninterruptible(Effect.never)))
            : next(request)
      })
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 0 }, abortGrace: "1 second" })
      yield* agent.run("one")
      const compacting = yield* Effect.forkChild(agent.compact())
      yield* Deferred.await(asked)
      const aborting = yield* Effect.forkChild(agent.abort("stop"))
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(aborting)
      expect(yield* Effect.flip(Fiber.join(compacting))).toMatchObject({ code: "ABORTED" })
      expect(failures(yield* agent.session.events)).toStrictEqual([expect.objectContaining({
        kind: "summary",
        reason: "manual",
        code: "ABORTED",
        message: "the summarizing call did not stop within the abort grace; it was detached"
      })])
    }).pipe(Effect.provide(TestLayer({ script: [reply.text("a")] }))))

  it.effect("disposal during a manual summarizing call: compact() fails AGENT_DISPOSED, compaction/failed ABORTED before disposed", () => {
    const { asked, model } = hangingSummary()
    return Effect.gen(function*() {
      const scope = yield* Scope.make()
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 0 } }).pipe(Scope.provide(scope))
      yield* runAll(agent, 2)
      const compacting = yield* Effect.forkChild(agent.compact())
      yield* Deferred.await(asked)
      yield* Scope.close(scope, Exit.void)
      expect(yield* Effect.flip(Fiber.join(compacting))).toMatchObject({ code: "AGENT_DISPOSED" })
      const events = yield* agent.session.events
      expect(failures(events)).toStrictEqual([expect.objectContaining({ code: "ABORTED", reason: "manual" })])
      const failedAt = ofType(events, "compaction/failed")[0]!.seq
      const disposedAt = events.find((e) => e.type === "agent/status" && e.data.status === "disposed")!.seq
      expect(failedAt).toBeLessThan(disposedAt)
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("abort during an automatic summarizing call: the turn ends aborted, compaction/failed ABORTED", () => {
    const { asked, model } = hangingSummary()
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: WINDOW })
      const running = yield* Effect.forkChild(Effect.exit(runAll(agent, 10)))
      yield* Deferred.await(asked)
      const before = yield* agent.session.messages
      yield* agent.abort("stop")
      yield* Fiber.join(running)
      const events = yield* agent.session.events
      expect(failures(events)).toStrictEqual([expect.objectContaining({ code: "ABORTED", reason: "auto" })])
      expect(ofType(events, "turn/end").at(-1)!.data.reason).toStrictEqual({ kind: "aborted", reason: "stop" })
      expect(compactions(events)).toStrictEqual([])
      // nothing but the turn's closing after the abort: the history holds what it held
      expect(History.toArray(yield* agent.session.messages).slice(0, History.toArray(before).length)).toStrictEqual(
        History.toArray(before)
      )
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })
})

describe("#18 overflow", () => {
  const overflow = new LlmError.LlmContextOverflowError({ message: "maximum context length is 1000 tokens", limit: 1_000 })

  it.effect("a context-length refusal compacts (reason overflow) and retries the step once; the turn completes", () => {
    const model = responder({ answer: (n) => (n === 4 ? reply.fail(overflow) : reply.text(`answer ${n}`)) })
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 1 } })
      yield* runAll(agent, 3)
      const result = yield* agent.run(question(4))
      expect(result.text).toBe("answer 5")
      const events = yield* agent.session.events
      const turn4 = turnEvents(events, 4)
      expect(turn4.filter((e) => e.type !== "assistant/chunk").map((e) => e.type)).toStrictEqual([
        "turn/start",
        "user/message",
        "step/start",
        "model/request",
        "error",
        "step/end",
        "compaction/applied",
        "step/start",
        "model/request",
        "assistant/message",
        "step/end",
        "turn/end"
      ])
      expect(ofType(turn4, "error")[0]!.data).toMatchObject({ code: "LLM_CONTEXT_OVERFLOW", step: 1 })
      expect(compactions(turn4)[0]).toMatchObject({ kind: "summary", reason: "overflow" })
      expect(texts(model.steps[4]!.messages)[0]).toBe(Derivation.summaryText("summary 1"))
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("a second overflow in the turn ends it with LLM_CONTEXT_OVERFLOW; run() fails with the typed error", () => {
    const model = responder({ answer: (n) => (n >= 3 ? reply.fail(overflow) : reply.text(`answer ${n}`)) })
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 0 } })
      yield* runAll(agent, 2)
      const error = yield* Effect.flip(agent.run(question(3)))
      expect(error).toMatchObject({ _tag: "LlmContextOverflowError", code: "LLM_CONTEXT_OVERFLOW" })
      const events = yield* agent.session.events
      expect(ofType(events, "turn/end").at(-1)!.data.reason).toMatchObject({ kind: "error", code: "LLM_CONTEXT_OVERFLOW" })
      expect(model.steps).toHaveLength(4)
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("an overflow with nothing to compact ends the turn with the code, recorded once", () => {
    const model = responder({ answer: () => reply.fail(overflow) })
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { threshold: false } })
      const error = yield* Effect.flip(agent.run("a first message far too long"))
      expect(error.code).toBe("LLM_CONTEXT_OVERFLOW")
      const events = yield* agent.session.events
      expect(ofType(events, "error")).toHaveLength(1)
      expect(model.steps).toHaveLength(1)
      expect(model.summaries).toHaveLength(0)
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })

  it.effect("a finish chunk of kind error with the overflow code is an overflow too", () => {
    const model = responder({
      answer: (n) => (n === 2 ? reply.chunks([{ type: "finish", reason: { kind: "error", code: "LLM_CONTEXT_OVERFLOW", message: "too long" } }]) : reply.text(`answer ${n}`))
    })
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 0 } })
      yield* runAll(agent, 2)
      expect(compactions(yield* agent.session.events)).toStrictEqual([expect.objectContaining({ reason: "overflow" })])
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })
})

/** A tool returning `size` characters. */
const dump = Tool.make("dump", {
  description: "Returns a large text",
  parameters: Schema.Struct({ size: Schema.Number }),
  execute: ({ size }) => Effect.succeed("d".repeat(size))
})

describe("#18 model-free pruning first", () => {
  it.effect("old large tool results become stubs naming the tool, size and seq; no summarizing call is needed", () => {
    const model = responder({
      answer: (n) => (n % 2 === 1 ? reply.toolCalls([{ name: "dump", arguments: { size: 1_200 }, id: `c${n}` }]) : reply.text(`ok ${n}`))
    })
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { contextWindow: 2_000, threshold: 0.5, keepTurns: 1, prune: { minChars: 1_000 } } })
      yield* Effect.forEach([1, 2, 3, 4, 5, 6, 7], (n) => agent.run(`fetch ${n}`), { discard: true })
      const events = yield* agent.session.events
      const applied = compactions(events)
      expect(applied.length).toBeGreaterThanOrEqual(1)
      expect(applied.every((c) => c.kind === "prune")).toBe(true)
      expect(model.summaries).toHaveLength(0)
      const prune = applied[0] as Extract<SessionEvent.Compaction, { readonly kind: "prune" }>
      const pruned = prune.results[0]!
      expect(pruned).toMatchObject({ tool: "dump", chars: 1_200 })
      expect(events[pruned.seq]!.type).toBe("tool/result")
      // the request after the prune carries the stub; the original stays in the log
      const stub = Derivation.prunedText(pruned)
      const last = model.steps.at(-1)!
      const results = History.toArray(last.messages).flatMap((m) =>
        m.content.flatMap((b) => (b.type === "tool-result" ? [textOf(b.content as ReadonlyArray<Content.ContentBlock>)] : []))
      )
      expect(results).toContain(stub)
      expect(stub).toContain(`event ${pruned.seq}`)
      for (const request of model.steps) expect(tokensOfRequest(request)).toBeLessThanOrEqual(1_000)
    }).pipe(Effect.provide(TestLayer({ script: model.replies, tools: [dump] })))
  })
})

describe("#18 replay and fork", () => {
  it.effect("a compacted session replays with the same events: summarizing calls are answered from the log", () => {
    const model = responder()
    return Effect.gen(function*() {
      const recorded = yield* Effect.gen(function*() {
        const agent = yield* create({ id: "a", compaction: WINDOW })
        yield* runAll(agent, 8)
        return yield* agent.session.events
      }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: model.replies, models: ["scripted"] })))
      expect(compactions(recorded).length).toBeGreaterThanOrEqual(1)

      const replayed = yield* Effect.gen(function*() {
        const agent = yield* (yield* Agents).create({ id: "a", model: "scripted", compaction: WINDOW })
        yield* runAll(agent, 8)
        const replay = yield* Replay.Replay
        expect(yield* replay.remaining).toBe(0)
        expect(replay.steps.filter((s) => s.kind === "compaction")).toHaveLength(compactions(recorded).length)
        return yield* agent.session.events
      }).pipe(
        Effect.scoped,
        Effect.provide(
          AgentLoop.layer.pipe(
            Layer.provideMerge(Tools.layer(echo).pipe(Layer.orDie)),
            Layer.provideMerge(Replay.layer({ events: recorded, name: "replay" }).pipe(Layer.orDie)),
            Layer.provideMerge(Testing.layer({ models: ["unused"] }))
          )
        )
      )
      const shape = (events: ReadonlyArray<Event>) => events.map(({ data, seq, type }) => ({ data, seq, type }))
      expect(shape(replayed)).toStrictEqual(shape(recorded))
    })
  })

  it.effect("a fork from before a compaction does not inherit it; a fork after it does", () => {
    const model = responder()
    return Effect.gen(function*() {
      const agent = yield* create({ compaction: { threshold: false, keepTurns: 1 } })
      yield* runAll(agent, 3)
      const beforeCompaction = (yield* agent.session.seq) - 1
      yield* agent.compact()
      const agents = yield* Agents
      const early = yield* agents.create({ model: "scripted", session: { fork: agent.session, through: beforeCompaction } })
      const late = yield* agents.create({ model: "scripted", session: { fork: agent.session } })
      expect(texts(yield* early.session.messages)[0]).toBe(question(1))
      expect(compactions(yield* early.session.events)).toStrictEqual([])
      expect(texts(yield* late.session.messages)[0]).toBe(Derivation.summaryText("summary 1"))
      // a fork through a seq that is no seq is refused, typed
      const refused = yield* Effect.flip(agents.create({ model: "scripted", session: { fork: agent.session, through: -1 } }))
      expect(refused).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
    }).pipe(Effect.provide(TestLayer({ script: model.replies })))
  })
})

describe("#18 options are checked when the agent is created", () => {
  it.effect("each setting out of its range is named in one INVALID_INPUT", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        create({ compaction: { threshold: 1.5, keepTurns: -1, contextWindow: 0, prune: { minChars: 1.5 }, maxSummaryTokens: 0 } })
      )
      expect(error).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
      for (const name of ["threshold", "keepTurns", "contextWindow", "prune.minChars", "maxSummaryTokens"]) {
        expect(error.message).toContain(`compaction.${name}`)
      }
    }).pipe(Effect.provide(TestLayer())))

  it.effect("a setting inside prune it does not know, and a summary budget that fills the window, are INVALID_INPUT", () =>
    Effect.gen(function*() {
      const unknown = yield* Effect.flip(create({ compaction: { prune: { minChars: 10, minchars: 5 } as never } }))
      expect(unknown).toMatchObject({ code: "INVALID_INPUT" })
      expect(unknown.message).toContain("compaction.prune.minchars is not a prune setting")
      const budget = yield* Effect.flip(create({ compaction: { contextWindow: 1_000, maxSummaryTokens: 1_000 } }))
      expect(budget.message).toContain("compaction.maxSummaryTokens (1000) must be below compaction.contextWindow (1000)")
      yield* create({ compaction: { contextWindow: 1_000, maxSummaryTokens: 999 } })
    }).pipe(Effect.scoped, Effect.provide(TestLayer())))
})
