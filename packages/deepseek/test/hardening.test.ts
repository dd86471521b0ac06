/**
 * What a user can get wrong past the types (a config file, untyped code, a key read from a
 * file) is a `DeepSeekConfigError` (`LLM_CONFIG`) naming the setting when the Layer is built,
 * never a defect of a request.
 */
import { DeepSeek } from "@dsh/deepseek"
import { FakeServer, Fixture } from "@dsh/deepseek/testing"
import { Model } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { apiKey, modelLayer, request, run, secret } from "./util.ts"

const settingOf = (options: Record<string, unknown>) =>
  DeepSeek.settings({ apiKey, ...options } as DeepSeek.Options).pipe(
    Effect.flip,
    Effect.map((error) => [error._tag, error.code, error.setting])
  )

describe("configuration past the types", () => {
  it.effect("options that are no object (null, a string, an array) are LLM_CONFIG naming options, not a crash", () =>
    Effect.gen(function*() {
      for (const options of [null, "gpt", []]) {
        const error = yield* DeepSeek.settings(options as never).pipe(Effect.flip)
        expect([error.code, error.setting]).toStrictEqual(["LLM_CONFIG", "options"])
        expect(error.message).toContain("must be an object")
      }
    }))

  it.effect("a key that is no option (a misspelt one) is LLM_CONFIG naming it and the known ones, not dropped", () =>
    Effect.gen(function*() {
      const misspelt = yield* DeepSeek.settings({ model: "deepseek-chat" } as never).pipe(Effect.flip)
      expect([misspelt.code, misspelt.setting]).toStrictEqual(["LLM_CONFIG", "options"])
      expect(misspelt.message).toBe(`The options of DeepSeek.layer has "model", which is no option (known: apiKey, baseUrl, models, thinking, reasoningEffort, idleTimeout, retry)`)
      // DeepSeek's profile is its own: one given would be dropped without a word
      const profile = yield* DeepSeek.settings({ profile: "openai" } as never).pipe(Effect.flip)
      expect([profile.setting, profile.message]).toStrictEqual([
        "options",
        `The options of DeepSeek.layer has "profile", which is no option (known: apiKey, baseUrl, models, thinking, reasoningEffort, idleTimeout, retry)`
      ])
      const retry = yield* DeepSeek.settings({ retry: { time: 1 } } as never).pipe(Effect.flip)
      expect(retry.message).toBe(`The retry option has "time", which is no option (known: times, schedule, maxRetryAfter)`)
    }))

  it.effect("a key that is no Redacted or holds a line break, a thinking that is no boolean, models that are no list", () =>
    Effect.gen(function*() {
      expect(yield* settingOf({ apiKey: secret })).toStrictEqual(["DeepSeekConfigError", "LLM_CONFIG", "apiKey"])
      expect(yield* settingOf({ apiKey: Redacted.make(`${secret}\n`) })).toStrictEqual(["DeepSeekConfigError", "LLM_CONFIG", "apiKey"])
      const quoted = yield* DeepSeek.settings({ apiKey: Redacted.make(`${secret}\n`) }).pipe(Effect.flip)
      expect(quoted.message).not.toContain(secret)
      expect(yield* settingOf({ thinking: "yes" })).toStrictEqual(["DeepSeekConfigError", "LLM_CONFIG", "thinking"])
      expect(yield* settingOf({ models: "deepseek-v4-pro" })).toStrictEqual(["DeepSeekConfigError", "LLM_CONFIG", "models"])
      expect(yield* settingOf({ baseUrl: "https://api.deepseek.com?beta=1" })).toStrictEqual(["DeepSeekConfigError", "LLM_CONFIG", "baseUrl"])
    }))

  it.live("a key holding a line break fails the Layer; no request is sent", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make(Fixture.load("text"))
      const error = yield* Model.use((model) => run(model.stream(request("hi")))).pipe(
        Effect.provide(modelLayer(server.url, { apiKey: Redacted.make(`${secret}\r\n`) })),
        Effect.flip
      )
      expect([error._tag, error.code]).toStrictEqual(["DeepSeekConfigError", "LLM_CONFIG"])
      expect(server.requests()).toStrictEqual([])
    }).pipe(Effect.scoped))
})
