/**
 * The loop under arbitrary schedules: generated sequences of send, steer, inject and abort,
 * interleaved with waits on the agent's own events, against a scripted model whose replies
 * (text, tool calls, parallel tool calls, typed failures, finish errors, dying tools, invalid
 * arguments) are generated too. Whatever the schedule:
 *
 * - no message is lost or duplicated: every sent or steered message appears exactly once, as
 *   `user/message` or `steering/message`, and every injected one once as `context/message`;
 * - turn numbers strictly increase (1, 2, …);
 * - the invariants hold (checked mid-run with `verify`, and by the test layer when it closes);
 * - the agent ends idle.
 *
 * Nothing waits on time: a schedule waits on logged events (raced with `awaitIdle`, so a
 * wait for an event that will not come ends when the agent is idle) or yields once.
 */
import { type Agent, AgentHooks } from "@dsh/agent"
import { Invariants } from "@dsh/invariants"
import { ErrorCode, LlmError } from "@dsh/llm"
import { ScriptedModel } from "@dsh/model"
import { Tool } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scheduler, Schema, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { broken, create, echo, endReasons, type Event, ofType, TestLayer, textOf } from "./helpers.ts"

const { reply } = ScriptedModel

/** A concurrency-safe tool, so replies with two calls of it run a parallel batch. */
const peek = Tool.make("peek", {
  description: "Reads something",
  parameters: Schema.Struct({ path: Schema.String }),
  concurrencySafe: true,
  execute: ({ path }) => Effect.succeed(`contents of ${path}`)
})

type Op = "send" | "steer" | "inject" | "abort" | "yield" | "nextChunk" | "nextTool" | "settle"

/** An op from a number in 0..99, weighted towards messages and waits that let the agent progress. */
const opOf = (n: number): Op =>
  n < 24
    ? "send"
    : n < 38
    ? "steer"
    : n < 46
    ? "inject"
    : n < 56
    ? "abort"
    : n < 72
    ? "yield"
    : n < 84
    ? "nextChunk"
    : n < 94
    ? "nextTool"
    : "settle"

/** A schedule as a tape of numbers (so a failing schedule shrinks by shortening the tape). */
const Schedule = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 99 }))).check(
  Schema.isMinLength(1),
  Schema.isMaxLength(30)
)
const ReplyKind = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 6 }))
const Replies = Schema.Array(ReplyKind).check(Schema.isMinLength(1), Schema.isMaxLength(8))

/**
 * The scheduler's operation budget: a handful of operations (fibers interleave almost
 * everywhere) or the default. (Below 3 Effect's own run loop never gets past a yield.)
 */
const YieldEvery = Schema.Literals([3, 4, 5, 8, 13, 2048])

const fragment = (s: string) => s.split(/(?= )/)

/** The scripted reply of a kind; `n` makes its text and call ids unique. */
const replyOf = (kind: number, n: number): ReadonlyArray<ScriptedModel.Step> => {
  switch (kind) {
    case 0:
      return reply.text(`answer number ${n}`, { fragment })
    case 1:
      return reply.toolCalls([{ name: "echo", arguments: { text: `e${n}` } }], { text: `calling echo ${n}`, fragment })
    case 2:
      return reply.toolCalls([
        { name: "peek", arguments: { path: `a${n}` } },
        { name: "peek", arguments: { path: `b${n}` } }
      ], { fragment })
    case 3:
      return reply.failAt(reply.text(`failing answer ${n}`, { fragment }), 3, new LlmError.LlmServerError({ message: "overloaded" }))
    case 4:
      return reply.text(`bad finish ${n}`, { finish: { kind: "error", code: "LLM_SERVER", message: "stream error" } })
    case 5:
      return reply.toolCalls([{ name: "broken", arguments: {} }])
    default:
      return reply.toolCalls([{ name: "echo", arguments: { txt: "wrong" } }])
  }
}

/** How many times each text appears among the given events' contents. */
const counts = (events: ReadonlyArray<Event>) => {
  const seen = new Map<string, number>()
  for (const e of events) {
    if (e.type === "user/message" || e.type === "steering/message" || e.type === "context/message") {
      const key = `${e.type === "context/message" ? "context" : "message"}:${textOf(e.data.content)}`
      seen.set(key, (seen.get(key) ?? 0) + 1)
    }
  }
  return seen
}

/**
 * Every sent or steered message exactly once and every injected one once, nothing else; turns
 * numbered 1, 2, … in order, each closed; and no message waits without a turn.
 */
const expectNothingLost = (events: ReadonlyArray<Event>, sent: ReadonlyArray<string>, injected: ReadonlyArray<string>) => {
  const expected = new Map<string, number>([
    ...sent.map((m) => [`message:${m}`, 1] as const),
    ...injected.map((c) => [`context:${c}`, 1] as const)
  ])
  expect(counts(events)).toStrictEqual(expected)
  const starts = ofType(events, "turn/start").map((e) => e.data.turn)
  expect(starts).toStrictEqual(starts.map((_, i) => i + 1))
  expect(ofType(events, "turn/end").map((e) => e.data.turn)).toStrictEqual(starts)
  if (sent.length > 0) expect(starts.length).toBeGreaterThan(0)
}

/** Runs schedule ops against an agent, recording what was sent, steered and injected. */
const driver = (agent: Agent.Agent) => {
  const sent: Array<string> = []
  const injected: Array<string> = []

  // waits for the next event of a type, or until the agent is idle, whichever comes first
  const next = (type: Event["type"]) =>
    Effect.flatMap(agent.session.seq, (from) =>
      Effect.raceFirst(
        agent.session.streamFrom(from).pipe(Stream.filter((e) => e.type === type), Stream.take(1), Stream.runDrain),
        agent.awaitIdle
      ))

  const perform = (op: Op, i: number): Effect.Effect<void, unknown> => {
    switch (op) {
      case "send":
        sent.push(`m${i}`)
        return agent.send(`m${i}`)
      case "steer":
        sent.push(`m${i}`)
        return agent.steer(`m${i}`)
      case "inject":
        injected.push(`c${i}`)
        return agent.inject(`c${i}`)
      case "abort":
        return agent.abort(`abort ${i}`)
      case "yield":
        return Effect.yieldNow
      case "nextChunk":
        return next("assistant/chunk")
      case "nextTool":
        return next("tool/call")
      case "settle":
        return agent.awaitIdle
    }
  }
  return { sent, injected, perform }
}

/** The test layer with the tools and a script of generated replies. */
const layerFor = (replies: ReadonlyArray<number>) =>
  TestLayer({
    tools: [echo, peek, broken],
    script: Array.from({ length: 100 }, (): ScriptedModel.Reply => (_request, n) =>
      replyOf(replies[(n - 1) % replies.length]!, n))
  })

const Arbitraries = { schedule: Schedule, replies: Replies, yieldEvery: YieldEvery }

describe("properties of the loop", () => {
  it.effect.prop(
    "arbitrary schedules of send, steer, inject and abort lose and duplicate nothing, and end idle",
    Arbitraries,
    ({ replies, schedule, yieldEvery }) =>
      Effect.gen(function*() {
        const agent = yield* create({ maxSteps: 3, maxInvalidArgs: 2 })
        const invariants = yield* Invariants
        const { injected, perform, sent } = driver(agent)
        for (const [i, n] of schedule.entries()) {
          yield* perform(opOf(n), i)
          yield* invariants.verify
        }
        yield* agent.awaitIdle
        expect(yield* agent.status).toBe("idle")
        yield* invariants.verify

        const events = yield* agent.session.events
        expectNothingLost(events, sent, injected)
        // the scripted model was never asked more than it could answer
        expect(ofType(events, "error").map((e) => e.data.code)).not.toContain("SCRIPT_EXHAUSTED")
      }).pipe(
        Effect.scoped,
        // how many operations a fiber runs before the scheduler lets another one run: small
        // budgets interleave the schedule with the loop at (nearly) every point
        Effect.provideService(Scheduler.MaxOpsBeforeYield, yieldEvery),
        Effect.provide(layerFor(replies))
      ),
    { timeout: 20_000, arbitrary: { runs: 400, size: 100 } }
  )

  it.effect.prop(
    "disposal at the end of an arbitrary schedule closes every turn and appends nothing after",
    Arbitraries,
    ({ replies, schedule, yieldEvery }) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const agent = yield* create({ maxSteps: 3, maxInvalidArgs: 2 }).pipe(Scope.provide(scope))
        const { injected, perform, sent } = driver(agent)
        for (const [i, n] of schedule.entries()) yield* perform(opOf(n), i)
        // disposed wherever the schedule left it: idle, mid-stream, mid-tool, between steps
        yield* Scope.close(scope, Exit.void)
        yield* (yield* Invariants).verify
        const events = yield* agent.session.events
        expect(yield* agent.status).toBe("disposed")
        expect(events.at(-1)?.data).toStrictEqual({ agentId: agent.id, status: "disposed" })
        // nothing duplicated; a message still queued at disposal is never logged
        const known = new Set([...sent.map((m) => `message:${m}`), ...injected.map((c) => `context:${c}`)])
        for (const [key, count] of counts(events)) {
          expect(known.has(key)).toBe(true)
          expect(count).toBe(1)
        }
        const starts = ofType(events, "turn/start").map((e) => e.data.turn)
        expect(ofType(events, "turn/end").map((e) => e.data.turn)).toStrictEqual(starts)
        // only the last turn can have been cut short by the disposal
        expect(endReasons(events).slice(0, -1).map((r) => r.kind)).not.toContain("disposed")
      }).pipe(
        Effect.scoped,
        Effect.provideService(Scheduler.MaxOpsBeforeYield, yieldEvery),
        Effect.provide(layerFor(replies))
      ),
    { timeout: 20_000, arbitrary: { runs: 200, size: 100 } }
  )

  it.effect.prop(
    "with listeners failing at random event types, aborts right after send and uninterruptible tools: settles idle, loses nothing",
    { ...Arbitraries, faults: Faults, how: How },
    ({ faults, how, replies, schedule, yieldEvery }) =>
      Effect.gen(function*() {
        const hooks = yield* AgentHooks
        const failing = new Set<string>(faults)
        yield* hooks.listeners.register({
          name: "chaos",
          around: (input, next) => {
            if (!failing.has(input.event.type)) return next(input)
            if (how === "throws") throw new Error(`chaos on ${input.event.type}`)
            return how === "dies" ? Effect.die(new Error("chaos")) : Effect.fail({ message: "chaos" } as never)
          }
        })
        const agent = yield* create({ maxSteps: 3, maxInvalidArgs: 2, abortGrace: "1 second" })
        const invariants = yield* Invariants
        const { injected, perform, sent } = chaosDriver(agent)
        for (const [i, n] of schedule.entries()) {
          yield* perform(chaosOpOf(n), i)
          yield* invariants.verify
        }
        // settle, advancing the clock for the stubborn tool and the abort grace
        yield* Effect.raceFirst(agent.awaitIdle, ticking)
        expect(yield* agent.status).toBe("idle")
        yield* invariants.verify

        const events = yield* agent.session.events
        expectNothingLost(events, sent, injected)
        // every failure is reported with a catalog code
        for (const e of ofType(events, "error")) expect(ErrorCode.isErrorCode(e.data.code)).toBe(true)
        for (const r of endReasons(events)) if (r.kind === "error") expect(ErrorCode.isErrorCode(r.code)).toBe(true)
      }).pipe(
        Effect.scoped,
        Effect.provideService(Scheduler.MaxOpsBeforeYield, yieldEvery),
        Effect.provide(chaosLayerFor(replies))
      ),
    { timeout: 30_000, arbitrary: { runs: 200, size: 100 } }
  )
})

/** Event types a chaos listener fails on. */
const Faults = Schema.Array(Schema.Literals([
  "agent/status",
  "turn/start",
  "user/message",
  "step/start",
  "assistant/chunk",
  "assistant/message",
  "tool/call",
  "tool/result",
  "steering/message",
  "context/message",
  "step/end",
  "turn/end",
  "error"
])).check(Schema.isMaxLength(3))

const How = Schema.Literals(["throws", "dies", "fails"])

/** The test clock, advanced half a second at a time, forever (raced with what it unblocks). */
const ticking = Effect.forever(Effect.andThen(TestClock.adjust("500 millis"), Effect.yieldNow))

/** A tool that cannot be interrupted and takes two (test-clock) seconds. */
const stubborn = Tool.make("stubborn", {
  description: "Ignores interruption for two seconds",
  parameters: Schema.Struct({}),
  execute: () => Effect.uninterruptible(Effect.as(Effect.sleep("2 seconds"), "finally done"))
})

type ChaosOp = Op | "sendThenAbort"

/** Like {@link opOf}, with a send followed at once by an abort among the ops. */
const chaosOpOf = (n: number): ChaosOp => (n >= 86 && n < 94 ? "sendThenAbort" : opOf(n))

/** The chaos schedule's driver: aborts race the clock, since an abort waits for its turn to end. */
const chaosDriver = (agent: Agent.Agent) => {
  const base = driver(agent)
  const perform = (op: ChaosOp, i: number): Effect.Effect<void, unknown> => {
    switch (op) {
      case "abort":
        return Effect.raceFirst(agent.abort(`abort ${i}`), ticking)
      case "sendThenAbort":
        base.sent.push(`m${i}`)
        return Effect.andThen(agent.send(`m${i}`), Effect.raceFirst(agent.abort(`abort ${i}`), ticking))
      case "settle":
      case "nextChunk":
      case "nextTool":
        // waits that a stubborn tool can hold up only until the clock moves on
        return Effect.raceFirst(base.perform(op, i), ticking)
      default:
        return base.perform(op, i)
    }
  }
  return { sent: base.sent, injected: base.injected, perform }
}

/** The test layer with a stubborn tool among the replies' tools. */
const chaosLayerFor = (replies: ReadonlyArray<number>) =>
  TestLayer({
    tools: [echo, peek, broken, stubborn],
    script: Array.from({ length: 100 }, (): ScriptedModel.Reply => (_request, n) => {
      const kind = replies[(n - 1) % replies.length]!
      return kind === 6 ? reply.toolCalls([{ name: "stubborn", arguments: {} }]) : replyOf(kind, n)
    })
  })
