/**
 * Live smoke tests against the real servers. Each runs only when its key (or, for a local
 * server, its model) is in the environment, and is skipped otherwise, saying so in its name —
 * nothing here touches the network unless asked to:
 *
 * | server | runs when | model |
 * |---|---|---|
 * | OpenAI | `OPENAI_API_KEY` | `OPENAI_LIVE_MODEL`, else `gpt-5.4-nano` |
 * | OpenRouter | `OPENROUTER_API_KEY` | `OPENROUTER_LIVE_MODEL`, else `deepseek/deepseek-v4-flash` |
 * | Ollama, vLLM, llama.cpp, LM Studio | `DSH_LIVE_<PROFILE>_MODEL` (e.g. `DSH_LIVE_OLLAMA_MODEL=qwen3:8b`) | that; base URL `DSH_LIVE_<PROFILE>_URL`, else the profile's |
 *
 * (DeepSeek's is in `@dsh/deepseek`'s tests, with `DEEPSEEK_API_KEY`.) Each asks for a short
 * text answer and for a call of a parameterless tool, and checks the chunk contract, the finish
 * and the usage.
 */
import { OpenAiCompat, type Profiles } from "@dsh/openai"
import { Message, ModelRequest } from "@dsh/llm"
import { ChunkContract, Model } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { run } from "./util.ts"

interface Live {
  readonly profile: Profiles.Name
  readonly label: string
  readonly enabledBy: string
  readonly options: () => OpenAiCompat.Options
}

const env = (name: string): string | undefined => {
  const value = process.env[name]
  return value === undefined || value.trim() === "" ? undefined : value
}

const keyed = (profile: Profiles.Name, label: string, keyVar: string, modelVar: string, model: string): Live => ({
  profile,
  label,
  enabledBy: keyVar,
  options: () => ({ profile, apiKey: Redacted.make(env(keyVar)!), model: env(modelVar) ?? model })
})

const local = (profile: Profiles.Name, label: string): Live => {
  const upper = profile.toUpperCase()
  return {
    profile,
    label,
    enabledBy: `DSH_LIVE_${upper}_MODEL`,
    options: () => {
      const url = env(`DSH_LIVE_${upper}_URL`)
      return { profile, model: env(`DSH_LIVE_${upper}_MODEL`)!, ...(url === undefined ? {} : { baseUrl: url }) }
    }
  }
}

const servers: ReadonlyArray<Live> = [
  keyed("openai", "OpenAI", "OPENAI_API_KEY", "OPENAI_LIVE_MODEL", "gpt-5.4-nano"),
  keyed("openrouter", "OpenRouter", "OPENROUTER_API_KEY", "OPENROUTER_LIVE_MODEL", "deepseek/deepseek-v4-flash"),
  local("ollama", "Ollama"),
  local("vllm", "vLLM"),
  local("llamacpp", "llama.cpp"),
  local("lmstudio", "LM Studio")
]

const clock = {
  name: "current_time",
  description: "Returns the current time. Takes no arguments.",
  parameters: { type: "object", properties: {} }
}

describe("live servers", () => {
  for (const server of servers) {
    const enabled = env(server.enabledBy) !== undefined
    const name = `${server.label}, live` +
      (enabled ? ` (${server.enabledBy} is set)` : ` (skipped: ${server.enabledBy} is not set)`)
    // `describe.skipIf`, so that no test body (and no network) runs without the variable
    describe.skipIf(!enabled)(name, () => {
      it.live("a text answer and a tool call", () =>
      Effect.gen(function*() {
        const options = server.options()
        const model = typeof options.model === "string" ? options.model : options.model!.name
        const layer = OpenAiCompat.layer({ ...options, idleTimeout: "60 seconds" }).pipe(Layer.provideMerge(Model.layer))
        yield* Effect.gen(function*() {
          const text = yield* Model.use((m) => run(m.stream(ModelRequest.make(model, [Message.user("Answer with the single word OK.")], { maxTokens: 512 }))))
          expect(text.failure?.message).toBeUndefined()
          expect(ChunkContract.check(text.chunks)).toStrictEqual([])
          expect(["stop", "length"]).toContain(text.assembled.finishReason?.kind)
          expect(text.assembled.usage?.outputTokens).toBeGreaterThan(0)
          const call = yield* Model.use((m) =>
            run(m.stream(ModelRequest.make(model, [Message.user("What time is it? Use the tool.")], { tools: [clock], toolChoice: "required", maxTokens: 512 })))
          )
          expect(call.failure?.message).toBeUndefined()
          expect(ChunkContract.check(call.chunks)).toStrictEqual([])
          const calls = call.assembled.message.content.filter((b) => b.type === "tool-call")
          expect(calls.map((c) => c.type === "tool-call" && c.name)).toContain("current_time")
        }).pipe(Effect.provide(layer))
      }), 120_000)
    })
  }
})
