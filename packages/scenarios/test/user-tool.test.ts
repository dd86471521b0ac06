// The test shown in packages/testing/README.md ("Testing your own tool"): a user's tool tested
// through an agent under Testing.layer, so the invariants check every event.
import { Agents } from "@dsh/agent"
import { AgentLoop } from "@dsh/loop"
import { History } from "@dsh/llm"
import { ScriptedModel } from "@dsh/model"
import { Testing } from "@dsh/testing"
import { Tool, ToolResult, Tools } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"

const weather = Tool.make("weather", {
  description: "Today's weather in a city",
  parameters: Schema.Struct({ city: Schema.NonEmptyString }),
  execute: ({ city }) => Effect.succeed(`${city}: sunny, 21°C`)
})

const TestLayer = (script: ReadonlyArray<ScriptedModel.Reply>) =>
  AgentLoop.layer.pipe(Layer.provideMerge(Tools.layer(weather).pipe(Layer.provideMerge(Testing.layer({ script })))))

describe("weather tool", () => {
  it.effect("the model's call reaches the tool and its answer reaches the model", () =>
    Effect.gen(function*() {
      const agent = yield* (yield* Agents).create({ model: "scripted" })
      yield* agent.send("weather in Lyon?")
      yield* agent.awaitIdle
      const [, second] = yield* (yield* ScriptedModel.ScriptedModel).requests
      const last = second === undefined ? undefined : History.last(second.messages)?.content[0]
      expect(last?.type).toBe("tool-result")
      expect(last?.type === "tool-result" ? ToolResult.textOf(last) : undefined).toBe("Lyon: sunny, 21°C")
    }).pipe(Effect.scoped, Effect.provide(TestLayer([
      ScriptedModel.reply.toolCalls([{ name: "weather", arguments: { city: "Lyon" } }]),
      ScriptedModel.reply.text("Sunny in Lyon.")
    ]))))

  it.effect("an empty city is refused with the violation and its path", () =>
    Effect.gen(function*() {
      const agent = yield* (yield* Agents).create({ model: "scripted" })
      yield* agent.send("weather?")
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      const result = events.find((e) => e.type === "tool/result")
      expect(result?.type === "tool/result" ? result.data.error?.code : undefined).toBe("INVALID_ARGS")
      const text = result?.type === "tool/result" && result.data.content[0]?.type === "text" ? result.data.content[0].text : ""
      expect(text).toContain("city")
    }).pipe(Effect.scoped, Effect.provide(TestLayer([
      ScriptedModel.reply.toolCalls([{ name: "weather", arguments: { city: "" } }]),
      ScriptedModel.reply.text("Which city?")
    ]))))
})
