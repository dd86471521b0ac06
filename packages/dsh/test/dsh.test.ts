/**
 * The umbrella package: every public module in one import, and the one-call composition.
 */
import { Agents, Dsh, FlushCheckpoint, Invariants, JsonlSessions, ScriptedModel, SessionStore, Tool, ToolMiddleware, ToolRegistry } from "dsh"
import * as Umbrella from "dsh"
import * as AnthropicPackage from "@dsh/anthropic"
import * as Bash from "@dsh/bash"
import * as FilesPackage from "@dsh/files"
import * as McpPackage from "@dsh/mcp"
import * as OpenAi from "@dsh/openai"
import * as PermissionsPackage from "@dsh/permissions"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema, Stream } from "effect"
import { mkdtempSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const { reply } = ScriptedModel

const shout = Tool.make("shout", {
  description: "Upper-cases a text",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: ({ text }) => Effect.succeed(text.toUpperCase())
})

describe("Dsh.layer", () => {
  it.effect("builds the graph from a model and tools; Dsh.agent picks the adapter's model", () =>
    Effect.gen(function*() {
      const agent = yield* Dsh.agent()
      const result = yield* agent.run("shout hi")
      expect(result.text).toBe("HI it is")
      expect(result.toolCalls.map((t) => t.result.content)).toStrictEqual([[{ type: "text", text: "HI" }]])
      expect(yield* ToolRegistry.use((r) => r.names)).toStrictEqual(["shout"])
    }).pipe(
      Effect.scoped,
      Effect.provide(Dsh.layer({
        model: ScriptedModel.layer({ script: [reply.toolCalls([{ name: "shout", arguments: { text: "hi" } }]), reply.text("HI it is")] }),
        tools: [shout]
      }))
    ))

  it.effect("prompt sections reach the model; hooks and tool middleware run", () =>
    Effect.gen(function*() {
      const agent = yield* Dsh.agent({ prompt: "Be brief." })
      yield* agent.run("shout hi")
      const [first] = yield* ScriptedModel.ScriptedModel.use((m) => m.requests)
      expect(first?.system).toBe("You are careful.\n\nBe brief.")
      expect(first?.maxTokens).toBe(64)
      const events = yield* agent.session.events
      const result = events.find((e) => e.type === "tool/result")
      expect(result?.type === "tool/result" && result.data.error?.code).toBe("TOOL_DENIED")
    }).pipe(
      Effect.scoped,
      Effect.provide(Dsh.layer({
        model: ScriptedModel.layer({ script: [reply.toolCalls([{ name: "shout", arguments: { text: "hi" } }]), reply.text("denied")] }),
        tools: [shout],
        prompt: [{ name: "persona", content: "You are careful." }],
        hooks: { request: [{ name: "cap", around: ({ context, request }, next) => next({ request: { ...request, maxTokens: 64 }, context }) }] },
        toolMiddleware: [{ name: "no-shouting", around: (call, next) => (call.name === "shout" ? ToolMiddleware.deny(call, "no shouting here") : next(call)) }]
      }))
    ))

  it.effect("sessions in a directory: each session persisted in its file, resumable through JsonlSessions", () =>
    Effect.gen(function*() {
      const directory = mkdtempSync(join(tmpdir(), "dsh-umbrella-"))
      const Live = (script: ReadonlyArray<ScriptedModel.Reply>) =>
        Dsh.layer({ model: ScriptedModel.layer({ script }), sessions: { directory }, invariants: true })
      yield* Effect.gen(function*() {
        const agent = yield* Dsh.agent({ session: { id: "kept" } })
        yield* agent.run("first")
      }).pipe(Effect.scoped, Effect.provide(Live([reply.text("one")])))
      expect(readdirSync(directory).filter((f) => f.endsWith(".jsonl"))).toStrictEqual(["kept.jsonl"])
      yield* Effect.gen(function*() {
        const { session } = yield* (yield* JsonlSessions.JsonlSessions).resume("kept")
        const agent = yield* Dsh.agent({ session: { resume: session } })
        const result = yield* agent.run("second")
        expect(result.turn).toBe(2)
        yield* (yield* Invariants).verify
      }).pipe(Effect.scoped, Effect.provide(Live([reply.text("two")])))
    }))

  it.effect("sessions may be a Layer of your own: the agents' sessions live in that store", () =>
    Effect.gen(function*() {
      const created: Array<string> = []
      const store = Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer).pipe(
        Layer.tap((context) =>
          Effect.forkDetach(Stream.runForEach(Context.get(context, SessionStore).sessions, (s) => Effect.sync(() => created.push(s.id))))
        )
      )
      yield* Effect.gen(function*() {
        const agent = yield* Dsh.agent({ session: { id: "mine" } })
        yield* agent.run("hi")
      }).pipe(Effect.scoped, Effect.provide(Dsh.layer({ model: ScriptedModel.layer({ script: [reply.text("hello")] }), sessions: store })))
      expect(created).toStrictEqual(["mine"])
    }))

  it.effect("a composition that cannot be built fails with a typed error", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.flip(Layer.build(Dsh.layer({
        model: ScriptedModel.layer({ script: [] }),
        tools: [shout, shout]
      })).pipe(Effect.scoped))
      expect(failed.code).toBe("DUPLICATE_TOOL")
    }))

  it.effect("the umbrella re-exports every layer's services", () =>
    Effect.gen(function*() {
      expect(typeof Agents).toBe("function")
      expect(typeof SessionStore).toBe("function")
      // the adapters and the capabilities, as their own packages export them
      expect(Umbrella.OpenAiCompat.layer).toBe(OpenAi.OpenAiCompat.layer)
      expect(Umbrella.Profiles.ollama).toBe(OpenAi.Profiles.ollama)
      expect(Umbrella.Anthropic.layer).toBe(AnthropicPackage.Anthropic.layer)
      expect(Umbrella.BashTools.layer).toBe(Bash.BashTools.layer)
      expect(Umbrella.Files.layer).toBe(FilesPackage.Files.layer)
      expect(Umbrella.Mcp.layer).toBe(McpPackage.Mcp.layer)
      expect(Umbrella.Policy.askBeforeChanges).toBe(PermissionsPackage.Policy.askBeforeChanges)
    }))
})
