/**
 * `agent.run`: one call that sends, waits for the turn that answers and returns what it
 * produced, typed — or fails with the typed error of a turn that did not answer. With an
 * `output` Schema the answer is decoded like tool arguments, under the same retry budget.
 */
import { TurnResult } from "@dsh/agent"
import { FinishReason, History, LlmError, Usage } from "@dsh/llm"
import { ScriptedModel } from "@dsh/model"
import { Tool } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Schema, Scope } from "effect"
import { create, endReasons, ofType, requests, TestLayer, textOf, waitFor } from "./helpers.ts"

const { reply } = ScriptedModel

const usage = (inputTokens: number, outputTokens: number) => Usage.make({ inputTokens, outputTokens })

const Weather = Schema.Struct({ city: Schema.String, celsius: Schema.Number })

describe("agent.run", () => {
  it.effect("returns the final text, the turn's messages, its tool calls with results and the usage summed", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const result = yield* agent.run("echo hello, then answer")
      expect(result.turn).toBe(1)
      expect(result.text).toBe("Done: hello.")
      expect(result.reason).toStrictEqual({ kind: "completed" })
      expect(result.output).toBeUndefined()
      expect(History.toArray(result.messages).map((m) => m.role)).toStrictEqual(["user", "assistant", "user", "assistant"])
      expect(result.toolCalls.map(({ call, result }) => [call.name, call.arguments, textOf(result.content)])).toStrictEqual([
        ["echo", `{"text":"hello"}`, "echo: hello"]
      ])
      expect(result.usage).toStrictEqual(usage(30, 12))
      // a second run is the next turn, with only its own messages
      const second = yield* agent.run("and again")
      expect(second.turn).toBe(2)
      expect(History.toArray(second.messages).map((m) => m.role)).toStrictEqual(["user", "assistant"])
      expect(second.toolCalls).toStrictEqual([])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([{ name: "echo", arguments: { text: "hello" } }], { usage: usage(10, 5) }),
          reply.text("Done: hello.", { usage: usage(20, 7) }),
          reply.text("Again.")
        ]
      }))
    ))

  it.effect("a turn that fails fails the call with the turn's own typed error", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const failed = yield* Effect.flip(agent.run("go"))
      expect(failed).toBeInstanceOf(LlmError.LlmRateLimitError)
      expect(failed.code).toBe("LLM_RATE_LIMIT")
      // a finish of kind error stands for the error of its code, the provider's own code named
      const finished = yield* Effect.flip(agent.run("again"))
      expect(finished).toBeInstanceOf(LlmError.LlmServerError)
      expect(finished.message).toContain("(upstream_overloaded)")
      // a recovered caller can catch by tag
      const recovered = yield* agent.run("once more").pipe(Effect.map((r) => r.text))
      expect(recovered).toBe("fine")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.fail(new LlmError.LlmRateLimitError({ message: "slow down", retryAfterMillis: 1000 })),
          reply.text("x", { finish: FinishReason.error("upstream_overloaded", "busy") }),
          reply.text("fine")
        ]
      }))
    ))

  it.effect("an aborted turn fails with TurnAbortedError; a guard with TurnLimitError", () =>
    Effect.gen(function*() {
      const agent = yield* create({ maxSteps: 1 })
      const running = yield* Effect.forkChild(agent.run("think"), { startImmediately: true })
      yield* waitFor(agent.session, "assistant/chunk")
      yield* agent.abort("changed my mind")
      const aborted = yield* Effect.flip(Fiber.join(running))
      expect(aborted).toBeInstanceOf(TurnResult.TurnAbortedError)
      expect(aborted).toMatchObject({ code: "ABORTED", turn: 1, reason: "changed my mind" })
      const limited = yield* Effect.flip(agent.run("use tools forever"))
      expect(limited).toBeInstanceOf(TurnResult.TurnLimitError)
      expect(limited).toMatchObject({ code: "TURN_LIMIT", limit: "max-steps", turn: 2 })
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.hangAt(reply.text("never"), 1),
          reply.toolCalls([{ name: "echo", arguments: { text: "1" } }])
        ]
      }))
    ))

  it.effect("interrupting run aborts its turn; a run queued behind it is served", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const first = yield* Effect.forkChild(agent.run("slow"), { startImmediately: true })
      yield* waitFor(agent.session, "assistant/chunk")
      const second = yield* Effect.forkChild(agent.run("next"), { startImmediately: true })
      yield* Fiber.interrupt(first)
      const served = yield* Fiber.join(second)
      expect(served.text).toBe("next answer")
      expect(endReasons(yield* agent.session.events)).toStrictEqual([
        { kind: "aborted", reason: "agent.run was interrupted" },
        { kind: "completed" }
      ])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({ script: [reply.hangAt(reply.text("slow"), 1), reply.text("next answer")] }))
    ))

  it.effect("the agent disposed before the turn answered: AgentDisposedError", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const agent = yield* create().pipe(Scope.provide(scope))
      const running = yield* Effect.forkChild(agent.run("hang"), { startImmediately: true })
      const queued = yield* Effect.forkChild(agent.run("queued"), { startImmediately: true })
      yield* Effect.yieldNow
      yield* Scope.close(scope, Exit.void)
      for (const fiber of [running, queued]) {
        const error = yield* Effect.flip(Fiber.join(fiber))
        expect(error.code).toBe("AGENT_DISPOSED")
      }
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.hangAt(reply.text("x"), 1)] }))))
})

describe("agent.run with an output Schema", () => {
  it.effect("the model answers through final_answer; the answer is decoded and typed", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const result = yield* agent.run("weather in Oslo?", { output: Weather })
      const answer: { readonly city: string; readonly celsius: number } = result.output
      expect(answer).toStrictEqual({ city: "Oslo", celsius: -3 })
      // the Schema reached the model as a tool
      const [request] = yield* requests
      const tool = request!.tools?.find((t) => t.name === "final_answer")
      expect(tool?.parameters).toMatchObject({ type: "object", required: ["city", "celsius"] })
      expect(result.toolCalls.map((e) => e.call.name)).toStrictEqual(["final_answer"])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.toolCalls([{ name: "final_answer", arguments: { city: "Oslo", celsius: -3 } }])]
      }))
    ))

  it.effect("an answer that does not decode goes back with every violation; the corrected one is taken", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const result = yield* agent.run("weather?", { output: Weather })
      expect(result.output).toStrictEqual({ city: "Oslo", celsius: 4 })
      const results = ofType(yield* agent.session.events, "tool/result")
      expect(results[0]?.data.error?.code).toBe("INVALID_ARGS")
      expect(textOf(results[0]!.data.content)).toContain("at celsius")
      expect(textOf(results[0]!.data.content)).toContain("at city: Missing key")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([{ name: "final_answer", arguments: { celsius: "warm" } }]),
          reply.toolCalls([{ name: "final_answer", arguments: { city: "Oslo", celsius: 4 } }])
        ]
      }))
    ))

  it.effect("an answer given as JSON text is accepted; text that does not decode is asked for again", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const result = yield* agent.run("weather?", { output: Weather })
      expect(result.output).toStrictEqual({ city: "Bergen", celsius: 9 })
      const steering = ofType(yield* agent.session.events, "steering/message")
      expect(steering.map((e) => e.data.source)).toStrictEqual(["dsh/output"])
      expect(textOf(steering[0]!.data.content)).toContain("final_answer")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.text("It is mild in Bergen."), reply.text("```json\n{\"city\":\"Bergen\",\"celsius\":9}\n```")]
      }))
    ))

  it.effect("two final_answer calls in one response: the first answer is kept, the second is told it was not used", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const result = yield* agent.run("weather?", { output: Weather })
      expect(result.output).toStrictEqual({ city: "Oslo", celsius: 4 })
      const results = ofType(yield* agent.session.events, "tool/result")
      expect(results.map((r) => [r.data.isError, textOf(r.data.content)])).toStrictEqual([
        [false, "Answer received."],
        [false, "Not used: your answer was already received from an earlier final_answer call."]
      ])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([
            { name: "final_answer", arguments: { city: "Oslo", celsius: 4 } },
            { name: "final_answer", arguments: { city: "Bergen", celsius: 9 } }
          ])
        ]
      }))
    ))

  it.effect("a text answer cut off by the token limit is asked for again, saying it was cut off", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const result = yield* agent.run("weather?", { output: Weather })
      expect(result.output).toStrictEqual({ city: "Oslo", celsius: 4 })
      const [steering] = ofType(yield* agent.session.events, "steering/message")
      expect(textOf(steering!.data.content)).toContain(
        "Your last message was cut off: it reached the output token limit (finish reason length). Give a shorter answer."
      )
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.text(`{"city":"Os`, { finish: FinishReason.length }),
          reply.toolCalls([{ name: "final_answer", arguments: { city: "Oslo", celsius: 4 } }])
        ]
      }))
    ))

  it.effect("a Schema that is not a struct is asked for as { answer }", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const result = yield* agent.run("list the cities", { output: Schema.Array(Schema.String) })
      const cities: ReadonlyArray<string> = result.output
      expect(cities).toStrictEqual(["Oslo", "Bergen"])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.toolCalls([{ name: "final_answer", arguments: { answer: ["Oslo", "Bergen"] } }])]
      }))
    ))

  it.effect("plain text answers Schema.String; text that is not JSON is read as the string it is", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const summary: string = (yield* agent.run("summarise", { output: Schema.String })).output
      expect(summary).toBe("Oslo is cold; Bergen is wet.")
      const verdict = yield* agent.run("yes or no?", { output: Schema.Literals(["yes", "no"]) })
      expect(verdict.output).toBe("no")
      // text that is no number is asked for again, told a number is wanted (not the three words
      // Schema.Number's JSON form also takes)
      const count = yield* agent.run("how many?", { output: Schema.Number })
      expect(count.output).toBe(3)
      const steering = ofType(yield* agent.session.events, "steering/message")
      expect(steering.map((e) => textOf(e.data.content))).toStrictEqual([
        expect.stringContaining(`at answer: Expected a number, got "three"`)
      ])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.text("  Oslo is cold; Bergen is wet.\n"),
          reply.text("no"),
          reply.text("three"),
          reply.text("3")
        ]
      }))
    ))

  it.effect("a Schema.Class is asked for as its fields, not wrapped, and decodes to an instance", () =>
    Effect.gen(function*() {
      class Forecast extends Schema.Class<Forecast>("Forecast")({ city: Schema.String, celsius: Schema.Number }) {}
      const agent = yield* create()
      const result = yield* agent.run("forecast?", { output: Forecast })
      expect(result.output).toBeInstanceOf(Forecast)
      expect({ ...result.output }).toStrictEqual({ city: "Tromsø", celsius: -8 })
      const [request] = yield* requests
      const tool = request!.tools?.find((t) => t.name === "final_answer")
      expect(tool?.parameters).toMatchObject({ type: "object", required: ["city", "celsius"] })
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.toolCalls([{ name: "final_answer", arguments: { city: "Tromsø", celsius: -8 } }])]
      }))
    ))

  it.effect("an output Schema JSON cannot carry is refused before any request: INVALID_TOOL", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const opaque = Schema.declare((u): u is Map<string, number> => u instanceof Map)
      const failed = yield* Effect.flip(agent.run("anything", { output: opaque }))
      expect(failed.code).toBe("INVALID_TOOL")
      expect(failed.message).toContain("the value at answer is a declared type with no JSON form")
      expect(yield* requests).toStrictEqual([])
      // something that is no Schema at all (past the types): INVALID_INPUT, no turn
      const notASchema = yield* Effect.flip(agent.run("anything", { output: { answer: "string" } as never }))
      expect(notASchema).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
      expect(notASchema.message).toContain(`run()'s output must be a Schema of the answer, got {"answer":"string"}`)
      expect((yield* agent.run("plain")).text).toBe("ok")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({ script: [reply.text("ok")] }))
    ))

  it.effect("with a tool of its own named final_answer registered, run with output is INVALID_INPUT before any request", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const failed = yield* Effect.flip(agent.run("weather?", { output: Weather }))
      expect(failed).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
      expect(failed.message).toContain("a registered tool has that name already")
      expect(yield* requests).toStrictEqual([])
      // without output, the tool is the agent's like any other
      expect((yield* agent.run("plain")).toolCalls.map((t) => t.call.name)).toStrictEqual(["final_answer"])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        tools: [Tool.make("final_answer", { description: "mine", parameters: Schema.Struct({}), execute: () => Effect.succeed("noted") })],
        script: [reply.toolCalls([{ name: "final_answer", arguments: {} }]), reply.text("ok")]
      }))
    ))

  it.effect("the budget spent: InvalidOutputError with the last violations", () =>
    Effect.gen(function*() {
      const agent = yield* create({ maxInvalidArgs: 2 })
      const failed = yield* Effect.flip(agent.run("weather?", { output: Weather }))
      expect(failed).toBeInstanceOf(TurnResult.InvalidOutputError)
      expect(failed.code).toBe("INVALID_OUTPUT")
      expect(failed.message).toContain("at city: Missing key")
      // the agent goes on
      expect((yield* agent.run("plain")).text).toBe("ok")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([{ name: "final_answer", arguments: { celsius: 1 } }]),
          reply.toolCalls([{ name: "final_answer", arguments: { celsius: 2 } }]),
          reply.text("ok")
        ]
      }))
    ))

  it.effect("a run owing an answer has a turn of its own: messages queued behind it wait for the next", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const typed = yield* Effect.forkChild(agent.run("weather?", { output: Weather }), { startImmediately: true })
      const plain = yield* Effect.forkChild(agent.run("thanks"), { startImmediately: true })
      expect((yield* Fiber.join(typed)).output).toStrictEqual({ city: "Oslo", celsius: 1 })
      expect((yield* Fiber.join(plain)).turn).toBe(2)
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([{ name: "final_answer", arguments: { city: "Oslo", celsius: 1 } }]),
          reply.text("you are welcome")
        ]
      }))
    ))

  it.effect("messages queued before a run owing an answer are answered in a turn before it, in prose", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* agent.send("I am in Oslo.")
      const plain = yield* Effect.forkChild(agent.run("noted?"), { startImmediately: true })
      const typed = yield* agent.run("weather?", { output: Weather })
      expect(typed.output).toStrictEqual({ city: "Oslo", celsius: 1 })
      expect(typed.turn).toBe(2)
      const first = yield* Fiber.join(plain)
      expect([first.turn, first.text]).toStrictEqual([1, "noted"])
      const events = yield* agent.session.events
      // the prose answer was no failed typed answer: turn 1 offered no final_answer tool
      const requests = yield* (yield* ScriptedModel.ScriptedModel).requests
      expect(requests.map((request) => (request.tools ?? []).map((tool) => tool.name))).toStrictEqual([["echo"], ["echo", "final_answer"]])
      expect(ofType(events, "user/message").map((e) => [textOf(e.data.content)])).toStrictEqual([["I am in Oslo."], ["noted?"], ["weather?"]])
      expect(ofType(events, "turn/start").length).toBe(2)
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.text("noted"),
          reply.toolCalls([{ name: "final_answer", arguments: { city: "Oslo", celsius: 1 } }])
        ]
      }))
    ))
})

