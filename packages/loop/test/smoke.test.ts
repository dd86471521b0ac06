import { History } from "@dsh/llm"
import { Agents, AgentHooks } from "@dsh/agent"
import { Model, ScriptedModel } from "@dsh/model"
import { SystemPrompt } from "@dsh/prompt"
import { FlushCheckpoint, SessionStore } from "@dsh/session"
import { Tool, ToolRegistry, Tools } from "@dsh/tools"
import { AgentLoop } from "@dsh/loop"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"

const echo = Tool.make("echo", {
  description: "echo",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: ({ text }) => Effect.succeed(`echo: ${text}`)
})

const base = Layer.mergeAll(
  ScriptedModel.layer({
    script: [
      ScriptedModel.reply.toolCalls([{ name: "echo", arguments: { text: "hi" } }]),
      ScriptedModel.reply.text("done")
    ]
  }).pipe(Layer.provideMerge(Model.layer)),
  SessionStore.layer,
  FlushCheckpoint.layer,
  Tools.layer(echo).pipe(Layer.provideMerge(ToolRegistry.layer)),
  SystemPrompt.layer,
  AgentHooks.layer
)
const TestLayer = AgentLoop.layer.pipe(Layer.provideMerge(base))

describe("loop smoke", () => {
  it.effect("one turn with a tool call", () =>
    Effect.gen(function*() {
      const agents = yield* Agents
      const agent = yield* agents.create({ model: "scripted" })
      yield* agent.send("hello")
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      console.log(events.map((e) => e.type).join(" "))
      const msgs = yield* agent.session.messages
      expect(History.toArray(msgs).map((m) => m.role)).toStrictEqual(["user", "assistant", "user", "assistant"])
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))
})
