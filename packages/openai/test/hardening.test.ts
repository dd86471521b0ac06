/**
 * What a user can get wrong, past the types (a config file, untyped code, a key read from a
 * file): each is a typed failure with a catalog code, never a defect of the Layer or of a
 * request.
 */
import { OpenAiCompat, type OpenAiError } from "@dsh/openai"
import { FakeServer, Fixture } from "@dsh/openai/testing"
import { Model } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Redacted } from "effect"
import { apiKey, modelLayer, request, run, secret } from "./util.ts"

const local = { profile: "vllm", model: "m" } as const

// the settings' failure, or the settings themselves when they resolve
const refused = (options: Record<string, unknown>): Effect.Effect<OpenAiError.OpenAiConfigError | "resolved"> =>
  OpenAiCompat.settings({ ...local, ...options } as OpenAiCompat.Options).pipe(
    Effect.as("resolved" as const),
    Effect.catch((error) => Effect.succeed(error))
  )

const settingOf = (outcome: OpenAiError.OpenAiConfigError | "resolved") =>
  outcome === "resolved" ? outcome : [outcome.code, outcome.setting]

describe("configuration past the types", () => {
  it.effect("options that are no object (null, a string, an array) are LLM_CONFIG naming options, not a crash", () =>
    Effect.gen(function*() {
      for (const options of [null, "gpt", []]) {
        const error = yield* OpenAiCompat.settings(options as never).pipe(Effect.flip)
        expect([error.code, error.setting]).toStrictEqual(["LLM_CONFIG", "options"])
        expect(error.message).toContain("must be an object")
      }
    }))

  it.effect("a key that is no option (a misspelt one) is LLM_CONFIG naming it and the known ones, not dropped", () =>
    Effect.gen(function*() {
      const misspelt = yield* OpenAiCompat.settings({ profile: "vllm", model: "m", baseURL: "http://127.0.0.1:1/v1" } as never).pipe(Effect.flip)
      expect([misspelt.code, misspelt.setting]).toStrictEqual(["LLM_CONFIG", "options"])
      expect(misspelt.message).toBe(`The options of OpenAiCompat.layer has "baseURL", which is no option (known: profile, apiKey, baseUrl, model, models, headers, thinking, reasoningEffort, idleTimeout, retry)`)
      const retry = yield* OpenAiCompat.settings({ profile: "vllm", model: "m", retry: { time: 1 } } as never).pipe(Effect.flip)
      expect(retry.message).toBe(`The retry option has "time", which is no option (known: times, schedule, maxRetryAfter)`)
    }))

  it.effect("a key that is no Redacted, or holds a line break, is LLM_CONFIG naming apiKey and never quoting it", () =>
    Effect.gen(function*() {
      const plain = yield* refused({ apiKey: secret })
      expect(settingOf(plain)).toStrictEqual(["LLM_CONFIG", "apiKey"])
      expect(plain !== "resolved" && plain.message).toContain("Redacted.make(key)")
      expect(plain !== "resolved" && plain.message).not.toContain(secret)
      for (const text of [`${secret}\n`, `${secret}\r`, "sk-\u20ac"]) {
        const error = yield* refused({ apiKey: Redacted.make(text) })
        expect(settingOf(error)).toStrictEqual(["LLM_CONFIG", "apiKey"])
        expect(error !== "resolved" && error.message).toContain("cannot carry")
        expect(error !== "resolved" && error.message).not.toContain(secret)
      }
      // a key read from the environment is held to the same rule
      const fromEnv = yield* OpenAiCompat.settings({ ...local, profile: "openai" }).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { OPENAI_API_KEY: "sk-env\n" } })),
        Effect.flip
      )
      expect([fromEnv.setting, fromEnv.message]).toStrictEqual([
        "apiKey",
        expect.stringContaining("OPENAI_API_KEY")
      ])
    }))

  it.effect("a base URL that is no string, or carries a query or a fragment the path cannot follow, is LLM_CONFIG naming baseUrl", () =>
    Effect.gen(function*() {
      expect(settingOf(yield* refused({ baseUrl: 8000 }))).toStrictEqual(["LLM_CONFIG", "baseUrl"])
      const query = yield* refused({ baseUrl: "http://127.0.0.1:8000/v1?api-version=1" })
      expect(settingOf(query)).toStrictEqual(["LLM_CONFIG", "baseUrl"])
      expect(query !== "resolved" && query.message).toContain("query or a fragment")
      expect(settingOf(yield* refused({ baseUrl: "http://127.0.0.1:8000/v1#top" }))).toStrictEqual(["LLM_CONFIG", "baseUrl"])
      // a path and trailing slashes are fine
      const fine = yield* OpenAiCompat.settings({ ...local, baseUrl: "http://127.0.0.1:8000/proxy/v1//" })
      expect(fine.endpoint).toBe("http://127.0.0.1:8000/proxy/v1/chat/completions")
    }))

  it.effect("headers HTTP cannot carry, models that are no list, a thinking, an effort or a schedule of the wrong type are LLM_CONFIG naming them", () =>
    Effect.gen(function*() {
      expect(settingOf(yield* refused({ headers: { "x trace": "1" } }))).toStrictEqual(["LLM_CONFIG", "headers"])
      expect(settingOf(yield* refused({ headers: { "x-trace": "a\nb" } }))).toStrictEqual(["LLM_CONFIG", "headers"])
      expect(settingOf(yield* refused({ headers: { "x-trace": 1 } }))).toStrictEqual(["LLM_CONFIG", "headers"])
      expect(settingOf(yield* refused({ headers: "x-trace: 1" }))).toStrictEqual(["LLM_CONFIG", "headers"])
      const profileHeaders = yield* refused({ profile: { name: "gw", baseUrl: "http://127.0.0.1:1", headers: { "bad name": "x" } } })
      expect(settingOf(profileHeaders)).toStrictEqual(["LLM_CONFIG", "profile"])
      // a string is not a list of models: it is not served letter by letter
      expect(settingOf(yield* refused({ models: "gpt-5.4" }))).toStrictEqual(["LLM_CONFIG", "models"])
      expect(settingOf(yield* refused({ profile: "deepseek", apiKey, thinking: "yes" }))).toStrictEqual(["LLM_CONFIG", "thinking"])
      expect(settingOf(yield* refused({ reasoningEffort: 3 }))).toStrictEqual(["LLM_CONFIG", "reasoningEffort"])
      expect(settingOf(yield* refused({ reasoningEffort: "" }))).toStrictEqual(["LLM_CONFIG", "reasoningEffort"])
      expect(settingOf(yield* refused({ retry: { schedule: "exponential" } }))).toStrictEqual(["LLM_CONFIG", "retry"])
    }))

  it.live("the Layer fails to build on a header it cannot send, rather than every request dying", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make(Fixture.load("text"))
      const error = yield* Model.use((model) => run(model.stream(request("m", "hi")))).pipe(
        Effect.provide(modelLayer("vllm", server.url, { model: "m", headers: { "x-note": "line\nbreak" } })),
        Effect.flip
      )
      expect([error._tag, error.code]).toStrictEqual(["OpenAiConfigError", "LLM_CONFIG"])
      expect(server.requests()).toStrictEqual([])
    }).pipe(Effect.scoped))
})

describe("Retry-After beyond any wait", () => {
  it.live("a 429 asking to wait longer than a safe integer of milliseconds is LLM_RATE_LIMIT, not retried, not a defect", () =>
    Effect.gen(function*() {
      const forever: Fixture.Fixture = {
        description: "HTTP 429 with a Retry-After of 10^30 seconds",
        status: 429,
        headers: { "content-type": "application/json", "retry-after": `1${"0".repeat(30)}` },
        writes: [JSON.stringify({ error: { message: "Rate limit reached", type: "rate_limit_error" } })]
      }
      const server = yield* FakeServer.make([forever, Fixture.load("text")])
      const outcome = yield* Model.use((model) => run(model.stream(request("m", "hi")))).pipe(
        Effect.provide(modelLayer("vllm", server.url, { model: "m", retry: { times: 2 } }))
      )
      expect([outcome.failure?._tag, outcome.failure?.code]).toStrictEqual(["LlmRateLimitError", "LLM_RATE_LIMIT"])
      expect((outcome.failure as { retryAfterMillis?: number }).retryAfterMillis).toBe(Number.MAX_SAFE_INTEGER)
      expect(server.requests().length).toBe(1)
    }).pipe(Effect.scoped))
})
