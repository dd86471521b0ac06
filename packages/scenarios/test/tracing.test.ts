/**
 * Tracing: a turn, its steps, each model call and each tool call get a span through Effect's
 * tracer, with the session id, turn, step, tool name and error code as attributes. The spans
 * are collected with an in-memory tracer.
 */
import { LlmError } from "@dsh/llm"
import { ScriptedModel } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Tracer } from "effect"
import { broken, create, echo, run, TestLayer, waitFor } from "./helpers.ts"

const { reply } = ScriptedModel

const collect = () => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span(options) {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { spans, tracer }
}

const attrs = (span: Tracer.NativeSpan) => Object.fromEntries(span.attributes)
const parentOf = (span: Tracer.NativeSpan) =>
  Option.getOrUndefined(Option.map(span.parent, (p) => (p._tag === "Span" ? p.name : "external")))

describe("tracing", () => {
  const { spans, tracer } = collect()

  it.effect("turns, steps, model calls and tool calls are spans carrying who they belong to", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* run(agent, "use the tools")
      yield* run(agent, "fail please")
      const session = agent.session.id

      const named = (name: string) => spans.filter((s) => s.name === name)
      const turns = named("Agent.turn")
      expect(turns.map(attrs)).toStrictEqual([
        { "dsh.session": session, "dsh.agent": agent.id, "dsh.turn": 1, "dsh.turn.end": "completed" },
        {
          "dsh.session": session,
          "dsh.agent": agent.id,
          "dsh.turn": 2,
          "dsh.turn.end": "error",
          "dsh.error_code": "LLM_SERVER"
        }
      ])
      expect(turns.every((s) => s.status._tag === "Ended")).toBe(true)

      const steps = named("Agent.step")
      expect(steps.map((s) => [attrs(s)["dsh.turn"], attrs(s)["dsh.step"], attrs(s)["dsh.error_code"]])).toStrictEqual([
        [1, 1, undefined],
        [1, 2, undefined],
        [2, 1, "LLM_SERVER"]
      ])
      expect(steps.every((s) => attrs(s)["dsh.session"] === session && parentOf(s) === "Agent.turn")).toBe(true)
      const failed = steps[2]!
      expect(failed.status._tag === "Ended" && Exit.isFailure(failed.status.exit)).toBe(true)

      const models = named("Model.stream")
      expect(models.map((s) => [attrs(s)["dsh.turn"], attrs(s)["dsh.step"], attrs(s)["dsh.model"]])).toStrictEqual([
        [1, 1, "scripted"],
        [1, 2, "scripted"],
        [2, 1, "scripted"]
      ])
      expect(models.every((s) => attrs(s)["dsh.session"] === session && parentOf(s) === "Agent.step")).toBe(true)

      const tools = named("Tool.execute")
      expect(tools.map((s) => [attrs(s)["dsh.tool"], attrs(s)["dsh.turn"], attrs(s)["dsh.step"], attrs(s)["dsh.tool.error_code"]]))
        .toStrictEqual([
          ["echo", 1, 1, undefined],
          ["broken", 1, 1, "TOOL_FAILED"]
        ])
      expect(tools.map((s) => attrs(s)["dsh.tool.call_id"])).toStrictEqual(["call_1", "call_2"])
      expect(tools.every((s) => attrs(s)["dsh.session"] === session && parentOf(s) === "Agent.step")).toBe(true)

      // the prompt assembly and the flush checkpoints are traced inside the turn too: one before
      // each call of turn 1 runs (they run one after the other), one at each turn's end
      expect(named("SystemPrompt.assemble")).toHaveLength(3)
      expect(named("FlushCheckpoint.flush").map((s) => attrs(s)["dsh.turn"])).toStrictEqual([1, 1, 1, 2])
    }).pipe(
      Effect.scoped,
      Effect.withTracer(tracer),
      Effect.provide(TestLayer({
        tools: [echo, broken],
        script: [
          reply.toolCalls([{ name: "echo", arguments: { text: "x" } }, { name: "broken", arguments: {} }]),
          reply.text("done"),
          reply.fail(new LlmError.LlmServerError({ message: "boom" }))
        ]
      }))
    ))

  it.effect("an aborted step is marked ABORTED", () =>
    Effect.gen(function*() {
      const { spans, tracer } = collect()
      yield* Effect.gen(function*() {
        const agent = yield* create()
        yield* agent.send("go")
        yield* waitFor(agent.session, "assistant/chunk")
        yield* agent.abort()
        yield* agent.awaitIdle
      }).pipe(Effect.withTracer(tracer))
      const step = spans.find((s) => s.name === "Agent.step")!
      const turn = spans.find((s) => s.name === "Agent.turn")!
      expect(attrs(step)["dsh.error_code"]).toBe("ABORTED")
      expect(attrs(turn)["dsh.turn.end"]).toBe("aborted")
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.hangAt(reply.text("x"), 1)] }))))
})
