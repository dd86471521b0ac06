/**
 * What a user can get wrong, past the types (a config file, untyped code, a key read from a
 * file), and what a server can send that is out of bounds: each is a typed failure with a
 * catalog code, never a defect of the Layer or of a request.
 */
import { Anthropic, type AnthropicError, Failure } from "@dsh/anthropic"
import { FakeServer, Fixture } from "@dsh/anthropic/testing"
import { Model } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Redacted } from "effect"
import { apiKey, modelLayer, request, run, secret } from "./util.ts"

// the settings' failure, or "resolved"
const outcomeOf = (options: Record<string, unknown>): Effect.Effect<AnthropicError.AnthropicConfigError | "resolved"> =>
  Anthropic.settings({ apiKey, ...options } as Anthropic.Options).pipe(
    Effect.as("resolved" as const),
    Effect.catch((error) => Effect.succeed(error))
  )

const settingOf = (options: Record<string, unknown>) =>
  Effect.map(outcomeOf(options), (outcome) => outcome === "resolved" ? outcome : [outcome.code, outcome.setting])

describe("configuration past the types", () => {
  it.effect("options that are no object (null, a string, an array) are LLM_CONFIG naming options, not a crash", () =>
    Effect.gen(function*() {
      for (const options of [null, "gpt", []]) {
        const error = yield* Anthropic.settings(options as never).pipe(Effect.flip)
        expect([error.code, error.setting]).toStrictEqual(["LLM_CONFIG", "options"])
        expect(error.message).toContain("must be an object")
      }
    }))

  it.effect("a key that is no option (a misspelt one) is LLM_CONFIG naming it and the known ones, not dropped", () =>
    Effect.gen(function*() {
      const misspelt = yield* Anthropic.settings({ maxToken: 100 } as never).pipe(Effect.flip)
      expect([misspelt.code, misspelt.setting]).toStrictEqual(["LLM_CONFIG", "options"])
      expect(misspelt.message).toBe(`The options of Anthropic.layer has "maxToken", which is no option (known: apiKey, baseUrl, models, info, version, betas, maxTokens, thinking, effort, promptCache, idleTimeout, retry)`)
      const retry = yield* Anthropic.settings({ retry: { retries: 1 } } as never).pipe(Effect.flip)
      expect(retry.message).toBe(`The retry option has "retries", which is no option (known: times, schedule, maxRetryAfter)`)
    }))

  it.effect("a key that is no Redacted, or holds a line break, is LLM_CONFIG naming apiKey and never quoting it", () =>
    Effect.gen(function*() {
      const plain = yield* outcomeOf({ apiKey: secret })
      expect(plain !== "resolved" && [plain.code, plain.setting]).toStrictEqual(["LLM_CONFIG", "apiKey"])
      expect(plain !== "resolved" && plain.message).toContain("Redacted.make(key)")
      expect(plain !== "resolved" && plain.message).not.toContain(secret)
      for (const text of [`${secret}\n`, `${secret}\r\n`, "sk-ant-\u20ac"]) {
        const error = yield* outcomeOf({ apiKey: Redacted.make(text) })
        expect(error !== "resolved" && [error.setting, error.message.includes("cannot carry")]).toStrictEqual(["apiKey", true])
        expect(error !== "resolved" && error.message).not.toContain(secret)
      }
      const fromEnv = yield* Anthropic.settings().pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { ANTHROPIC_API_KEY: "sk-ant-env\n" } })),
        Effect.flip
      )
      expect(fromEnv.setting).toBe("apiKey")
    }))

  it.effect("a base URL that is no string, or carries a query or a fragment, is LLM_CONFIG naming baseUrl", () =>
    Effect.gen(function*() {
      expect(yield* settingOf({ baseUrl: 443 })).toStrictEqual(["LLM_CONFIG", "baseUrl"])
      expect(yield* settingOf({ baseUrl: "https://gateway.test/anthropic?key=1" })).toStrictEqual(["LLM_CONFIG", "baseUrl"])
      expect(yield* settingOf({ baseUrl: "https://gateway.test/anthropic#x" })).toStrictEqual(["LLM_CONFIG", "baseUrl"])
      const fine = yield* Anthropic.settings({ apiKey, baseUrl: "https://gateway.test/anthropic/" })
      expect(fine.baseUrl).toBe("https://gateway.test/anthropic")
    }))

  it.effect("models, info, version, betas, thinking, effort, promptCache and a retry schedule out of their types are LLM_CONFIG naming them", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
        [{ models: "claude-opus-5" }, "models"],
        [{ models: [""] }, "models"],
        [{ models: [5] }, "models"],
        [{ info: [{ name: "claude-opus-5", provider: "anthropic", contextWindow: -1 }] }, "info"],
        [{ version: "" }, "version"],
        [{ version: "2023-06-01\n" }, "version"],
        [{ betas: "context-1m-2025-08-07" }, "betas"],
        [{ betas: ["a\nb"] }, "betas"],
        [{ thinking: "enabled" }, "thinking"],
        [{ thinking: null }, "thinking"],
        [{ thinking: { budgetTokens: "1024" } }, "thinking"],
        [{ maxTokens: 1000, thinking: { budgetTokens: 1000 } }, "thinking"],
        [{ effort: 3 }, "effort"],
        [{ effort: "" }, "effort"],
        [{ promptCache: "10m" }, "promptCache"],
        [{ maxTokens: "4096" }, "maxTokens"],
        [{ retry: { schedule: "exponential" } }, "retry"]
      ]
      for (const [options, setting] of cases) {
        expect([options, yield* settingOf(options)]).toStrictEqual([options, ["LLM_CONFIG", setting]])
      }
      const fine = yield* Anthropic.settings({
        apiKey,
        models: ["claude-haiku-4-5"],
        betas: ["context-1m-2025-08-07"],
        maxTokens: 4096,
        thinking: { budgetTokens: 2048 },
        effort: "low",
        promptCache: "1h"
      })
      expect([fine.betas, fine.thinking, fine.promptCache]).toStrictEqual([["context-1m-2025-08-07"], { budgetTokens: 2048 }, "1h"])
    }))

  it.live("the Layer fails to build on a header it cannot send, rather than every request dying", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make(Fixture.load("text"))
      const error = yield* Model.use((model) => run(model.stream(request("hi")))).pipe(
        Effect.provide(modelLayer(server.url, { betas: ["one\r\ntwo"] })),
        Effect.flip
      )
      expect([error._tag, error.code]).toStrictEqual(["AnthropicConfigError", "LLM_CONFIG"])
      expect(server.requests()).toStrictEqual([])
    }).pipe(Effect.scoped))
})

describe("what a server sends out of bounds", () => {
  it.live("a 429 asking to wait longer than a safe integer of milliseconds is LLM_RATE_LIMIT, not retried, not a defect", () =>
    Effect.gen(function*() {
      const forever: Fixture.Fixture = {
        description: "HTTP 429 with a retry-after of 10^30 seconds",
        status: 429,
        headers: { "content-type": "application/json", "retry-after": `1${"0".repeat(30)}` },
        writes: [JSON.stringify({ type: "error", error: { type: "rate_limit_error", message: "Number of requests exceeded" } })]
      }
      const server = yield* FakeServer.make([forever, Fixture.load("text")])
      const outcome = yield* Model.use((model) => run(model.stream(request("hi")))).pipe(
        Effect.provide(modelLayer(server.url, { retry: { times: 2 } }))
      )
      expect([outcome.failure?._tag, outcome.failure?.code]).toStrictEqual(["LlmRateLimitError", "LLM_RATE_LIMIT"])
      expect((outcome.failure as { retryAfterMillis?: number }).retryAfterMillis).toBe(Number.MAX_SAFE_INTEGER)
      expect(server.requests().length).toBe(1)
    }).pipe(Effect.scoped))

  it("an error body's message is quoted cut short, however long the API's words are", () => {
    const body = JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: `bad ${"x".repeat(100_000)}` } })
    const error = Failure.fromStatus({ provider: "Anthropic", status: 400, headers: {}, body, now: 0, apiKey })
    expect([error._tag, error.message.length < 1000]).toStrictEqual(["LlmInvalidRequestError", true])
    expect(error.message).toContain("more characters")
    const overflow = JSON.stringify({
      type: "error",
      error: { type: "invalid_request_error", message: `prompt is too long: 212345 tokens > 200000 maximum ${"x".repeat(100_000)}` }
    })
    const tooLong = Failure.fromStatus({ provider: "Anthropic", status: 400, headers: {}, body: overflow, now: 0, apiKey })
    expect([tooLong._tag, tooLong.message.length < 1000]).toStrictEqual(["LlmContextOverflowError", true])
    expect(tooLong).toMatchObject({ limit: 200_000, requested: 212_345 })
  })
})
