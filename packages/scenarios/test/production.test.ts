// The production composition shown in the root README: it type-checks here, and building it
// without an API key fails with the typed configuration error instead of at the first request.
import { AgentHooks, Agents } from "@dsh/agent"
import { DeepSeek } from "@dsh/deepseek"
import { AgentLoop } from "@dsh/loop"
import { Model } from "@dsh/model"
import { SystemPrompt } from "@dsh/prompt"
import { FlushCheckpoint, JsonlSessions, SessionStore } from "@dsh/session"
import { Tool, ToolRegistry, Tools } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Schema } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const wordCount = Tool.make("word_count", {
  description: "Counts the words of a text",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: ({ text }) => Effect.succeed(String(text.split(/\s+/).filter(Boolean).length))
})

const Live = (directory: string) =>
  AgentLoop.layer.pipe(Layer.provideMerge(Layer.mergeAll(
    DeepSeek.layer({ thinking: true }).pipe(Layer.provideMerge(Model.layer)),
    JsonlSessions.layer({ directory }).pipe(
      Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer))
    ),
    Tools.layer(wordCount).pipe(Layer.provideMerge(ToolRegistry.layer)),
    SystemPrompt.layer,
    AgentHooks.layer
  )))

describe("the production composition of the README", () => {
  it.effect("without DEEPSEEK_API_KEY it fails to build with LLM_CONFIG, saying how to set the key", () =>
    Effect.gen(function*() {
      const error = yield* Effect.gen(function*() {
        yield* Agents
      }).pipe(
        Effect.provide(Live(mkdtempSync(join(tmpdir(), "dsh-production-")))),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({}))),
        Effect.flip
      )
      expect(error._tag).toBe("DeepSeekConfigError")
      expect(error.code).toBe("LLM_CONFIG")
      expect(error.message).toContain("DEEPSEEK_API_KEY")
    }))
})
