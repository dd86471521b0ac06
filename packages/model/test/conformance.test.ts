import {
  Assembler,
  Content,
  FinishReason,
  HarnessError,
  Ids,
  LlmError,
  Message,
  type ModelRequest,
  StreamChunk as S,
  Usage
} from "@dsh/llm"
import { Model, ScriptedModel } from "@dsh/model"
import * as Conformance from "@dsh/model/Conformance"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import { lastUserText, request, scripted, withAdapter } from "./util.ts"

const { reply } = ScriptedModel

// ---------------------------------------------------------------------------------------------
// (a) the scripted model passes the kit
// ---------------------------------------------------------------------------------------------

/** `undefined` when `actual` deep-equals `expected`, else a description of the difference. */
const same = (what: string, actual: unknown, expected: unknown): string | undefined =>
  JSON.stringify(actual) === JSON.stringify(expected)
    ? undefined
    : `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`

const usage = Usage.make({ inputTokens: 42, outputTokens: 7, cacheReadTokens: 100, reasoningTokens: 3 })
const calls = [
  { name: "bash", arguments: { command: "ls -la /tmp", timeoutMs: 1000 } },
  { name: "read", arguments: `{"path":"/etc/hosts"}` },
  { name: "write", arguments: { path: "notes.md", content: "line 1\nline 2 ✓" }, id: "w-1" }
]
const finishes: ReadonlyArray<FinishReason.FinishReason> = [
  FinishReason.stop,
  FinishReason.length,
  FinishReason.toolCalls,
  FinishReason.contentFilter,
  FinishReason.error("LLM_SERVER", "the provider failed"),
  FinishReason.aborted("stopped"),
  FinishReason.other("pause_turn")
]

interface ScriptedCase {
  readonly name: string
  readonly reply: ReadonlyArray<ScriptedModel.Step>
  readonly expect: (outcome: Conformance.Outcome) => string | undefined
}

const scriptedCases: ReadonlyArray<ScriptedCase> = [
  {
    name: "plain text",
    reply: reply.text("Hello, world"),
    expect: (o) =>
      same("content", o.assembled.message.content, [Content.text("Hello, world")]) ??
        same("finish", o.assembled.finishReason, FinishReason.stop)
  },
  {
    name: "reasoning then text",
    reply: reply.reasoningThenText("The user greets me.", "Hi!", { fragment: Assembler.pieces(4) }),
    expect: (o) =>
      same("content", o.assembled.message.content, [Content.reasoning("The user greets me."), Content.text("Hi!")])
  },
  {
    name: "several tool calls, arguments in fragments",
    reply: reply.toolCalls(calls, { text: "Let me check.", fragment: Assembler.pieces(3) }),
    expect: (o) =>
      same("content", o.assembled.message.content, [
        Content.text("Let me check."),
        Content.toolCall(Ids.callId("call_1"), "bash", JSON.stringify(calls[0]!.arguments)),
        Content.toolCall(Ids.callId("call_2"), "read", `{"path":"/etc/hosts"}`),
        Content.toolCall(Ids.callId("w-1"), "write", JSON.stringify(calls[2]!.arguments))
      ]) ??
        same("finish", o.assembled.finishReason, FinishReason.toolCalls) ??
        (o.chunks.filter((c) => c.type === "tool-call-delta").length > 10 ? undefined : "arguments were not fragmented")
  },
  {
    name: "empty text",
    reply: reply.text(""),
    expect: (o) => same("content", o.assembled.message.content, [Content.text("")])
  },
  {
    name: "usage",
    reply: reply.text("counted", { usage }),
    expect: (o) => same("usage", o.assembled.usage, usage)
  },
  ...finishes.map((finish): ScriptedCase => ({
    name: `finish: ${finish.kind}`,
    reply: reply.text(`ends with ${finish.kind}`, { finish }),
    expect: (o) => same("finish", o.assembled.finishReason, finish) ?? same("failure", o.failure, undefined)
  })),
  {
    name: "rate limited mid-stream",
    reply: reply.failAt(
      reply.text("a long answer cut short", { fragment: Assembler.pieces(5) }),
      3,
      new LlmError.LlmRateLimitError({ message: "429 Too Many Requests", retryAfterMillis: 2000 })
    ),
    expect: (o) =>
      same("failure", o.failure && HarnessError.info(o.failure), { tag: "LlmRateLimitError", code: "LLM_RATE_LIMIT" }) ??
        same("chunks before the failure", o.chunks.length, 3)
  },
  {
    name: "a finish of kind error",
    reply: reply.text("I was saying", { finish: FinishReason.error("LLM_SERVER", "overloaded") }),
    expect: (o) =>
      same("finish", o.assembled.finishReason, FinishReason.error("LLM_SERVER", "overloaded")) ??
        same("failure", o.failure, undefined)
  }
]

const ENDLESS = "endless"
const byName = new Map(scriptedCases.map((c) => [c.name, c.reply]))
/** Answers any request, in any order, by the case its last user message names. */
const dispatch: ScriptedModel.Reply = (req) => {
  const name = lastUserText(req)
  if (name === ENDLESS) return reply.hangAt(reply.text("this never ends", { fragment: Assembler.pieces(3) }), 2)
  return byName.get(name) ?? reply.fail(new LlmError.LlmInvalidRequestError({ message: `no case named ${name}` }))
}
const scriptedLayer = scripted({ script: Array.from({ length: scriptedCases.length + 1 }, () => dispatch) })

const cases: ReadonlyArray<Conformance.Case> = scriptedCases.map((c) => ({
  name: c.name,
  request: request(c.name),
  expect: c.expect
}))

Conformance.suite({ name: "scripted model", layer: scriptedLayer, cases, endless: request(ENDLESS) })

describe("the scripted conformance setup", () => {
  it.effect("runs every case in one check, in any order, without violations", () =>
    Effect.gen(function*() {
      expect(cases.length).toBe(14)
      const violations = yield* Conformance.check({
        name: "all at once",
        layer: scriptedLayer,
        cases: [...cases].reverse(),
        endless: request(ENDLESS)
      })
      expect(violations).toStrictEqual([])
    }))

  it.effect("its expectations can fail: a wrong answer is an expectation violation", () =>
    Effect.gen(function*() {
      const swapped = cases.map((c, i) => ({ ...c, request: cases[(i + 1) % cases.length]!.request }))
      const violations = yield* Conformance.check({ name: "swapped", layer: scriptedLayer, cases: swapped })
      expect(violations.length).toBe(cases.length)
      expect(violations.every((v) => v.rule === "expectation")).toBe(true)
      expect(violations.map((v) => v.case)).toStrictEqual(cases.map((c) => c.name))
    }))
})

// ---------------------------------------------------------------------------------------------
// (b) the kit catches broken models
// ---------------------------------------------------------------------------------------------

const hi = Content.text("hi")
const ok = Assembler.toChunks([hi]) // block-start, text-delta, block-end, finish

const checkOne = (steps: ReadonlyArray<ScriptedModel.Step>, expectation?: Conformance.Case["expect"]) =>
  Conformance.check({
    name: "broken",
    layer: scripted({ script: [steps] }),
    cases: [{ name: "broken", request: request("go"), ...(expectation === undefined ? {} : { expect: expectation }) }]
  })

const rulesOf = (violations: ReadonlyArray<Conformance.Violation>) => violations.map((v) => v.rule)

describe("Conformance.check catches broken models", () => {
  const broken: ReadonlyArray<readonly [string, ReadonlyArray<ScriptedModel.Step>, ReadonlyArray<string>]> = [
    ["chunks after finish", reply.chunks([...ok, S.textDelta(0, " again")]), ["nothing-after-finish"]],
    ["a delta before its block-start", reply.chunks([S.textDelta(0, "hi"), S.blockEnd(0, hi), S.finish(FinishReason.stop)]), [
      "delta-inside-block"
    ]],
    ["no finish", reply.chunks(ok.slice(0, -1)), ["finish-once"]],
    ["two finishes", reply.chunks([...ok, S.finish(FinishReason.stop)]), ["finish-once"]],
    ["usage after finish", reply.chunks([...ok, S.usage(Usage.empty)]), ["usage-before-finish", "nothing-after-finish"]],
    [
      "a tool-call delta with an empty id",
      reply.chunks([
        S.blockStart(0, "tool-call"),
        S.toolCallDelta(0, Ids.callId(""), "{}", "bash"),
        S.blockEnd(0, Content.toolCall(Ids.callId(""), "bash", "{}")),
        S.finish(FinishReason.toolCalls)
      ]),
      ["tool-call-identity"]
    ],
    [
      "block-end disagreeing with its deltas",
      reply.chunks([...ok.slice(0, 2), S.blockEnd(0, Content.text("something else")), S.finish(FinishReason.stop)]),
      ["block-end-agrees"]
    ],
    ["a block started twice", reply.chunks([S.blockStart(0, "text"), ...ok]), ["block-start-once"]],
    ["a block never ended", reply.chunks([S.blockStart(0, "text"), S.textDelta(0, "hi"), S.finish(FinishReason.stop)]), [
      "block-end-once"
    ]],
    ["a stream that dies with a defect", reply.dieAt(reply.text("abc"), 2, new Error("segfault in the adapter")), [
      "typed-failure"
    ]],
    [
      "a failure whose code is not in the catalog",
      reply.fail(
        { _tag: "WeirdError", code: "NOT_A_CODE", message: "made up" } as unknown as LlmError.LlmError,
        reply.text("abc").slice(0, 1)
      ),
      ["typed-failure"]
    ],
    ["a value that is no chunk", reply.chunks([...ok.slice(0, 2), null as unknown as S.StreamChunk, ...ok.slice(2)]), ["chunk-shape"]],
    ["a text-delta without its delta", reply.chunks([ok[0]!, { type: "text-delta", index: 0 } as unknown as S.StreamChunk, ...ok.slice(2)]), ["chunk-shape"]],
    ["a failure after the finish", reply.fail(new LlmError.LlmServerError({ message: "late" }), reply.chunks(ok)), ["nothing-after-finish"]],
    ["a finish of kind error with no catalog code", reply.chunks([S.finish(FinishReason.error("NOT_A_CODE", "made up"))]), ["typed-failure"]]
  ]
  for (const [name, steps, expected] of broken) {
    it.effect(`${name}: ${expected.join(", ")}`, () =>
      Effect.gen(function*() {
        const violations = yield* checkOne(steps)
        expect(rulesOf(violations)).toStrictEqual(expected)
        expect(violations.every((v) => v.case === "broken" && v.message.length > 0)).toBe(true)
      }))
  }

  it.effect("the typed-failure violation describes the defect", () =>
    Effect.gen(function*() {
      const [violation] = yield* checkOne(reply.dieAt(reply.text("abc"), 1, new Error("segfault in the adapter")))
      expect(violation?.rule).toBe("typed-failure")
      expect(violation?.message).toContain("segfault in the adapter")
    }))

  it.effect("a typed failure mid-stream is allowed: no finish and open blocks are not violations", () =>
    Effect.gen(function*() {
      const error = new LlmError.LlmServerError({ message: "502 Bad Gateway", status: 502 })
      expect(yield* checkOne(reply.failAt(reply.toolCalls(calls, { fragment: Assembler.pieces(2) }), 4, error)))
        .toStrictEqual([])
      expect(yield* checkOne(reply.fail(error))).toStrictEqual([])
    }))

  it.effect("a failed stream still owes the rest of the contract", () =>
    Effect.gen(function*() {
      const error = new LlmError.LlmTransportError({ message: "socket hang up" })
      const violations = yield* checkOne(reply.fail(error, reply.chunks([S.textDelta(0, "no start")])))
      expect(rulesOf(violations)).toStrictEqual(["delta-inside-block"])
    }))

  it.effect("a case's own expectation is checked against the outcome", () =>
    Effect.gen(function*() {
      const violations = yield* checkOne(
        reply.text("hello"),
        (o) => same("text", Message.textOf(o.assembled.message), "goodbye")
      )
      expect(violations).toStrictEqual([
        { case: "broken", rule: "expectation", message: `text: expected "goodbye", got "hello"` }
      ])
    }))

  it.effect("violations name their case when several run", () =>
    Effect.gen(function*() {
      const violations = yield* Conformance.check({
        name: "mixed",
        layer: scripted({ script: [reply.text("fine"), reply.chunks(ok.slice(0, -1)), reply.text("fine too")] }),
        cases: [
          { name: "first", request: request("1") },
          { name: "second", request: request("2") },
          { name: "third", request: request("3") }
        ]
      })
      expect(violations.map(({ case: c, rule }) => ({ case: c, rule }))).toStrictEqual([
        { case: "second", rule: "finish-once" }
      ])
    }))
})

// ---------------------------------------------------------------------------------------------
// (c) the interruption check
// ---------------------------------------------------------------------------------------------

const endless: ModelRequest.ModelRequest = request(ENDLESS, "endless")

/** An adapter whose answer to anything is `stream()`. */
const endlessModel = (stream: () => Stream.Stream<S.StreamChunk, LlmError.LlmError>) =>
  withAdapter({ name: "endless", models: ["endless"], stream })

/**
 * Runs the check in a fiber and advances the TestClock until it is done: deterministic, no
 * wall-clock waiting.
 */
const checkUnderTestClock = <E>(options: Conformance.Options<E>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(Conformance.check(options))
    for (let i = 0; i < 200 && fiber.pollUnsafe() === undefined; i++) {
      yield* TestClock.adjust("250 millis")
      yield* Effect.yieldNow
    }
    expect(fiber.pollUnsafe()).toBeDefined()
    return yield* Fiber.join(fiber)
  })

describe("Conformance interruption check", () => {
  it.effect("passes for a stream that ends when its consumer is interrupted", () =>
    Effect.gen(function*() {
      const violations = yield* Conformance.check({
        name: "hangs politely",
        layer: scripted({ script: [reply.hangAt(reply.text("abc"), 1)] }),
        cases: [],
        endless: request(ENDLESS)
      })
      expect(violations).toStrictEqual([])
    }))

  it.effect("catches a stream whose finalizer never completes", () =>
    Effect.gen(function*() {
      const violations = yield* checkUnderTestClock({
        name: "stubborn finalizer",
        layer: endlessModel(() =>
          Stream.make(S.blockStart(0, "text")).pipe(Stream.concat(Stream.never), Stream.ensuring(Effect.never))
        ),
        cases: [],
        endless,
        interruptWithin: "2 seconds"
      })
      expect(violations).toStrictEqual([{
        case: "interruption",
        rule: "interruption",
        message: "the stream did not end within 2s of its consumer's interruption"
      }])
    }))

  it.effect("catches a stream whose producer is uninterruptible", () =>
    Effect.gen(function*() {
      const violations = yield* checkUnderTestClock({
        name: "uninterruptible producer",
        layer: endlessModel(() =>
          Stream.callback<S.StreamChunk, LlmError.LlmError>((queue) =>
            Effect.uninterruptible(Queue.offer(queue, S.blockStart(0, "text")).pipe(Effect.andThen(Effect.never)))
          )
        ),
        cases: [],
        endless
        // the default interruptWithin: 5 seconds
      })
      expect(rulesOf(violations)).toStrictEqual(["interruption"])
      expect(violations[0]?.message).toContain("did not end within 5s")
    }))

  it.effect("reports an endless request whose stream stalls before its first chunk, instead of waiting for ever", () =>
    Effect.gen(function*() {
      const violations = yield* checkUnderTestClock({
        name: "stalled",
        layer: endlessModel(() => Stream.never),
        cases: [],
        endless,
        firstChunkWithin: "10 seconds"
      })
      expect(violations).toStrictEqual([{
        case: "interruption",
        rule: "interruption",
        message: "the endless request's stream gave no chunk within 10s"
      }])
    }))

  it.effect("reports an endless request whose stream ends before its first chunk", () =>
    Effect.gen(function*() {
      const violations = yield* Conformance.check({
        name: "empty",
        layer: endlessModel(() => Stream.empty),
        cases: [],
        endless
      })
      expect(violations).toStrictEqual([{
        case: "interruption",
        rule: "interruption",
        message: "the endless request's stream ended before its first chunk"
      }])
    }))

  it.effect("a failing afterInterrupt probe is an interruption violation", () =>
    Effect.gen(function*() {
      const violations = yield* Conformance.check({
        name: "leaky",
        layer: scripted({ script: [reply.hangAt(reply.text("abc"), 1)] }),
        cases: [],
        endless: request(ENDLESS),
        afterInterrupt: Effect.fail("the connection is still open")
      })
      expect(violations).toStrictEqual([{
        case: "interruption",
        rule: "interruption",
        message: "after interruption: the connection is still open"
      }])
    }))

  it.effect("afterInterrupt runs once the interrupted stream has released its resources", () =>
    Effect.gen(function*() {
      let open = 0
      const connection = () =>
        Stream.make(S.blockStart(0, "text")).pipe(
          Stream.concat(Stream.never),
          Stream.onStart(Effect.sync(() => void open++))
        )
      const probe = Effect.suspend(() => (open === 0 ? Effect.void : Effect.fail(`${open} connection(s) still open`)))

      const releasing = yield* Conformance.check({
        name: "releases",
        layer: endlessModel(() => connection().pipe(Stream.ensuring(Effect.sync(() => void open--)))),
        cases: [],
        endless,
        afterInterrupt: probe
      })
      expect(releasing).toStrictEqual([])
      expect(open).toBe(0)

      const leaking = yield* Conformance.check({
        name: "leaks",
        layer: endlessModel(connection),
        cases: [],
        endless,
        afterInterrupt: probe
      })
      expect(leaking).toStrictEqual([{
        case: "interruption",
        rule: "interruption",
        message: "after interruption: 1 connection(s) still open"
      }])
    }))
})

describe("Conformance: a case that stalls, an expectation that throws", () => {
  it.effect("a case whose stream never ends is a stalled violation after caseWithin, and the next case still runs", () =>
    Effect.gen(function*() {
      const violations = yield* checkUnderTestClock({
        name: "stalls",
        layer: scripted({ script: [reply.hangAt(reply.text("half"), 2), reply.text("fine")] }),
        cases: [
          { name: "stalled", request: request("first") },
          { name: "after", request: request("second") }
        ],
        caseWithin: "10 seconds"
      })
      expect(violations).toStrictEqual([{
        case: "stalled",
        rule: "stalled",
        message: "the stream did not end within 10s (2 chunks so far)"
      }])
    }))

  it.effect("a stalled stream that ignores interruption does not hold the check up", () =>
    Effect.gen(function*() {
      const violations = yield* checkUnderTestClock({
        name: "stubborn",
        layer: endlessModel(() => Stream.fromEffect(Effect.uninterruptible(Effect.never))),
        cases: [{ name: "stubborn", request: endless }],
        caseWithin: "1 second"
      })
      expect(rulesOf(violations)).toStrictEqual(["stalled"])
    }))

  it.effect("a Layer that is never built is a stalled violation of the case layer, not a check that waits for ever", () =>
    Effect.gen(function*() {
      const violations = yield* checkUnderTestClock({
        name: "unbuilt",
        layer: Layer.effect(Model, Effect.never),
        cases: [{ name: "any", request: endless }],
        caseWithin: "1 second"
      })
      expect(violations).toStrictEqual([{ case: "layer", rule: "stalled", message: "the Layer was not built within 1s" }])
    }))

  it.effect("an expectation that throws is an expectation violation naming what it threw, not a defect of the check", () =>
    Effect.gen(function*() {
      const violations = yield* checkOne(reply.text("hello"), (o) => (o.assembled.message.content[3] as { text: string }).text)
      expect(violations).toStrictEqual([{
        case: "broken",
        rule: "expectation",
        message: "the expectation threw: TypeError: Cannot read properties of undefined (reading 'text')"
      }])
    }))
})
