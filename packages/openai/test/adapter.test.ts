/**
 * The adapter as a Layer: profiles (shipped, given as data, decoded from JSON), configuration
 * from options and environment, what the registry learns about the models (context window,
 * prices), keys and headers on the wire, per-request overrides, retries (only before the first
 * byte, honouring Retry-After), interruption closing the connection, and the API key never
 * leaking.
 */
import { OpenAiCompat, OpenAiError, Profile, Profiles } from "@dsh/openai"
import { FakeServer, Fixture } from "@dsh/openai/testing"
import { LlmError, Message, ModelInfo, Usage } from "@dsh/llm"
import { Model, ModelRegistry } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import {
  Cause,
  Clock,
  ConfigProvider,
  Duration,
  Effect,
  Exit,
  Fiber,
  Layer,
  Logger,
  Option,
  Redacted,
  References,
  Schedule,
  Schema,
  Stream,
  Tracer
} from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { inspect } from "node:util"
import { apiKey, mismatch, modelLayer, modelOf, recordingClock, request, run, secret, streamWith } from "./util.ts"

const env = (vars: Record<string, string>) => ConfigProvider.fromEnv({ env: vars })
const withEnv = (vars: Record<string, string>) => Effect.provideService(ConfigProvider.ConfigProvider, env(vars))

describe("profiles", () => {
  it("every shipped profile is valid data: it decodes through the Schema and survives JSON", () => {
    for (const name of Profiles.names) {
      const profile = Profiles.all[name]
      const decoded = Schema.decodeUnknownSync(Profile.Profile)(JSON.parse(JSON.stringify(profile)))
      expect(decoded).toStrictEqual(profile)
      expect(profile.name).toBe(name)
      expect(Profiles.get(name)).toBe(profile)
    }
    expect(Profiles.names).toStrictEqual(["openai", "deepseek", "ollama", "vllm", "llamacpp", "lmstudio", "openrouter"])
    expect(Profiles.get("toString")).toBeUndefined()
  })

  it("a minimal profile gets the defaults of a server nobody described", () => {
    const resolved = Profile.resolve({ name: "custom", baseUrl: "http://127.0.0.1:9/v1" })
    expect(resolved).toStrictEqual({
      name: "custom",
      displayName: "custom",
      baseUrl: "http://127.0.0.1:9/v1",
      baseUrlEnv: undefined,
      path: "/chat/completions",
      apiKeyEnv: undefined,
      apiKeyRequired: false,
      headers: {},
      models: [],
      defaultModels: [],
      quirks: Profile.defaults
    })
    expect(Profile.resolve({ name: "k", baseUrl: "http://x", apiKeyEnv: "K_KEY" }).apiKeyRequired).toBe(true)
  })

  it.live("a profile decoded from JSON runs end to end, without code", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make(Fixture.load("ollama-reasoning"))
      const profile = yield* Profile.decodeUnknown(JSON.parse(`{
        "name": "my-gateway",
        "displayName": "My Gateway",
        "baseUrl": "${server.url}/api",
        "path": "v2/chat",
        "apiKeyEnv": "MY_GATEWAY_KEY",
        "headers": { "x-team": "agents" },
        "models": [{ "name": "house-model", "contextWindow": 65536, "pricing": { "inputPerMillion": 1, "outputPerMillion": 2 } }],
        "quirks": { "reasoningField": "reasoning", "includeUsage": false, "maxTokensField": "max_completion_tokens" }
      }`))
      const answer = yield* Model.use((model) =>
        model.generate(request("house-model", "hi", { maxTokens: 64 }))
      ).pipe(
        Effect.provide(OpenAiCompat.layer({ profile }).pipe(Layer.provideMerge(Model.layer))),
        withEnv({ MY_GATEWAY_KEY: "sk-gateway" })
      )
      expect(answer.message.content.map((b) => b.type)).toStrictEqual(["reasoning", "text"])
      const [seen] = server.requests()
      expect(seen?.path).toBe("/api/v2/chat")
      expect(seen?.headers["authorization"]).toBe("Bearer sk-gateway")
      expect(seen?.headers["x-team"]).toBe("agents")
      expect(seen?.headers["accept"]).toBe("text/event-stream")
      // no tracing headers: this process's trace ids are none of the provider's business
      expect([seen?.headers["b3"], seen?.headers["traceparent"]]).toStrictEqual([undefined, undefined])
      expect(seen?.json).toMatchObject({ model: "house-model", max_completion_tokens: 64, stream: true })
      expect(seen?.json).not.toHaveProperty("stream_options")
    }).pipe(Effect.scoped), { timeout: 10_000 })

  it.live("a profile that is not valid data fails the Layer with LLM_CONFIG, saying what is wrong", () =>
    Effect.gen(function*() {
      const bad = { name: "bad name!", baseUrl: 42, quirks: { streamEnd: "sometimes" } } as unknown as Profile.Profile
      const error = yield* OpenAiCompat.settings({ profile: bad }).pipe(Effect.flip)
      expect(error).toBeInstanceOf(OpenAiError.OpenAiConfigError)
      expect([error.code, error.setting]).toStrictEqual(["LLM_CONFIG", "profile"])
      expect(error.message).toContain("baseUrl")
      expect(error.message).toContain("streamEnd")
      const unknown = yield* OpenAiCompat.settings({ profile: "ollamma" }).pipe(Effect.flip)
      expect(unknown.message).toContain("ollama, vllm")
    }))
})

describe("configuration", () => {
  it.live("reads the key and base URL from the profile's variables, with the profile's defaults", () =>
    Effect.gen(function*() {
      const openai = yield* OpenAiCompat.settings().pipe(withEnv({ OPENAI_API_KEY: "sk-env" }))
      expect(Redacted.value(openai.apiKey!)).toBe("sk-env")
      expect(openai.profile.name).toBe("openai")
      expect(openai.endpoint).toBe("https://api.openai.com/v1/chat/completions")
      expect(openai.models).toStrictEqual(["gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.4-nano"])
      const moved = yield* OpenAiCompat.settings({ model: "gpt-5.4" }).pipe(
        withEnv({ OPENAI_API_KEY: "sk-env", OPENAI_BASE_URL: "http://127.0.0.1:9/v1/" })
      )
      expect([moved.baseUrl, moved.models]).toStrictEqual(["http://127.0.0.1:9/v1", ["gpt-5.4"]])
      const explicit = yield* OpenAiCompat.settings({ apiKey, baseUrl: "https://example.test" }).pipe(
        withEnv({ OPENAI_API_KEY: "sk-env", OPENAI_BASE_URL: "http://ignored" })
      )
      expect([Redacted.value(explicit.apiKey!), explicit.baseUrl]).toStrictEqual([secret, "https://example.test"])
    }))

  it.live("a server that needs a key fails without one, naming its variable; a local one sends none", () =>
    Effect.gen(function*() {
      for (const [profile, variable] of [["openai", "OPENAI_API_KEY"], ["openrouter", "OPENROUTER_API_KEY"], ["deepseek", "DEEPSEEK_API_KEY"]] as const) {
        const error = yield* OpenAiCompat.settings({ profile, model: "m" }).pipe(withEnv({}), Effect.flip)
        expect([error.code, error.setting]).toStrictEqual(["LLM_CONFIG", "apiKey"])
        expect(error.message).toContain(variable)
        expect(error.message).toContain("apiKey: Redacted.make(key)")
        expect(error.message).toContain("OpenAiCompat.layer")
      }
      for (const profile of ["ollama", "vllm", "llamacpp", "lmstudio"] as const) {
        const local = yield* OpenAiCompat.settings({ profile, model: "m" }).pipe(withEnv({ OLLAMA_API_KEY: "" }))
        expect(local.apiKey).toBeUndefined()
      }
      const cloud = yield* OpenAiCompat.settings({ profile: "ollama", model: "m" }).pipe(withEnv({ OLLAMA_API_KEY: "ok-cloud" }))
      expect(Redacted.value(cloud.apiKey!)).toBe("ok-cloud")
      const empty = yield* OpenAiCompat.settings({ profile: "ollama", model: "m", apiKey: Redacted.make(" ") }).pipe(Effect.flip)
      expect(empty.message).toContain("The Ollama API key is empty")
    }))

  it.live("a local profile needs a model named; a thinking switch or an effort its server lacks is refused", () =>
    Effect.gen(function*() {
      const noModel = yield* OpenAiCompat.settings({ profile: "ollama" }).pipe(withEnv({}), Effect.flip)
      expect([noModel.setting, noModel.message]).toStrictEqual([
        "models",
        "The Ollama adapter must serve at least one model name (the ollama profile lists none: name the model the server serves, e.g. `model: \"…\"`)"
      ])
      const thinking = yield* OpenAiCompat.settings({ profile: "lmstudio", model: "m", thinking: true }).pipe(Effect.flip)
      expect([thinking.setting, thinking.message]).toStrictEqual([
        "thinking",
        "The lmstudio profile has no thinking switch (its quirks.thinking is \"none\"); leave thinking out, or give the profile one"
      ])
      const effort = yield* OpenAiCompat.settings({ profile: "deepseek", apiKey, reasoningEffort: "low" }).pipe(Effect.flip)
      expect(effort.message).toBe("DeepSeek takes no reasoning effort \"low\" (allowed: \"high\", \"max\")")
      const none = yield* OpenAiCompat.settings({ profile: "llamacpp", model: "m", reasoningEffort: "high" }).pipe(Effect.flip)
      expect(none.setting).toBe("reasoningEffort")
      const badUrl = yield* OpenAiCompat.settings({ profile: "vllm", model: "m", baseUrl: "localhost:8000" }).pipe(Effect.flip)
      expect(badUrl.message).toBe("The vLLM base URL \"localhost:8000\" is not an http(s) URL (set the baseUrl option, e.g. http://localhost:8000/v1)")
      const badEntry = yield* OpenAiCompat.settings({ profile: "vllm", model: { name: "m", contextWindow: -1 } }).pipe(Effect.flip)
      expect(badEntry.setting).toBe("models")
    }))

  it.live("timeouts and retries that are no durations or counts (from a config file, past the types) are refused", () =>
    Effect.gen(function*() {
      const local = { profile: "vllm", model: "m" } as const
      const refused = (options: Partial<OpenAiCompat.Options>) =>
        OpenAiCompat.settings({ ...local, ...options } as OpenAiCompat.Options).pipe(Effect.flip)
      const word = yield* refused({ idleTimeout: "soon" as never })
      expect([word._tag, word.code, word.setting, word.message]).toStrictEqual([
        "OpenAiConfigError",
        "LLM_CONFIG",
        "idleTimeout",
        "idleTimeout must be a duration (\"30 seconds\", a number of milliseconds), got \"soon\""
      ])
      const zero = yield* refused({ idleTimeout: 0 })
      expect([zero.setting, zero.message]).toStrictEqual(["idleTimeout", "idleTimeout must be longer than zero, got 0"])
      expect((yield* refused({ idleTimeout: -5 })).setting).toBe("idleTimeout")
      expect((yield* refused({ retry: { maxRetryAfter: "x" as never } })).message).toContain("retry.maxRetryAfter must be a duration")
      expect((yield* refused({ retry: { times: Number.NaN } })).message).toBe("retry.times must be a whole number of retries, 0 or more, got NaN")
      expect((yield* refused({ retry: { times: -1 } })).setting).toBe("retry")
      const fine = yield* OpenAiCompat.settings({ ...local, idleTimeout: "5 seconds", retry: { times: 0, maxRetryAfter: 0 } })
      expect([Duration.toMillis(fine.idleTimeout), fine.retry.times, Duration.toMillis(fine.retry.maxRetryAfter)]).toStrictEqual([5000, 0, 0])
    }))
})

describe("the registry learns the models' context windows and prices", () => {
  it.live("from the profile, and from entries in the options", () =>
    Effect.gen(function*() {
      const registry = yield* ModelRegistry
      const flash = yield* registry.info("deepseek-v4-flash")
      expect(Option.getOrThrow(flash)).toMatchObject({ provider: "deepseek", contextWindow: 1_048_576 })
      const pricing = Option.getOrThrow(flash).pricing!
      expect(ModelInfo.cost(Usage.make({ inputTokens: 1_000_000, cacheReadTokens: 1_000_000, outputTokens: 1_000_000 }), pricing))
        .toBeCloseTo(0.14 + 0.0028 + 0.28, 10)
      expect(Option.getOrThrow(yield* registry.info("qwen3:8b"))).toStrictEqual({ name: "qwen3:8b", provider: "ollama", contextWindow: 40_960 })
      expect(yield* registry.info("llama3.2")).toStrictEqual(Option.none())
      expect(yield* registry.models).toStrictEqual(["deepseek-v4-flash", "deepseek-v4-pro", "llama3.2", "qwen3:8b"])
    }).pipe(
      Effect.provide(Layer.mergeAll(
        OpenAiCompat.layer({ profile: "deepseek", apiKey }),
        OpenAiCompat.layer({ profile: "ollama", models: [{ name: "qwen3:8b", contextWindow: 40_960 }, "llama3.2"] })
      ).pipe(Layer.provideMerge(ModelRegistry.layer)))
    ))
})

describe("requests", () => {
  it.live("a server without a key gets no Authorization header; headers stack on the profile's", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make(Fixture.load("text"))
      const layer = OpenAiCompat.layer({
        profile: { ...Profiles.openrouter, apiKeyRequired: false, apiKeyEnv: "UNSET_KEY_VAR", headers: { "x-title": "dsh" } },
        baseUrl: server.url,
        model: "deepseek/deepseek-v4-flash",
        headers: { "http-referer": "https://example.test" }
      }).pipe(Layer.provideMerge(Model.layer))
      yield* Model.use((model) => model.generate(request("deepseek/deepseek-v4-flash", "hi"))).pipe(Effect.provide(layer), withEnv({}))
      const [seen] = server.requests()
      expect(seen?.headers["authorization"]).toBeUndefined()
      expect([seen?.headers["x-title"], seen?.headers["http-referer"]]).toStrictEqual(["dsh", "https://example.test"])
    }).pipe(Effect.scoped))

  it.live("providerOptions under the profile's name override the Layer's settings; anything else there is refused before a byte is sent", () =>
    Effect.gen(function*() {
      const { outcome, server } = yield* streamWith(
        "openrouter",
        Fixture.load("text"),
        request("deepseek/deepseek-v4-flash", "hi", { providerOptions: { openrouter: { thinking: true, reasoningEffort: "high" }, ollama: { x: 1 } } }),
        { model: "deepseek/deepseek-v4-flash", thinking: false }
      )
      expect(outcome.failure).toBeUndefined()
      expect(server.requests()[0]?.json).toMatchObject({ reasoning: { enabled: true, effort: "high" } })
      const refused = yield* streamWith(
        "ollama",
        Fixture.load("text"),
        request("qwen3:8b", "hi", { providerOptions: { ollama: { reasoningEffort: "max", temperature: 2 } } }),
        { model: "qwen3:8b" }
      )
      expect(refused.outcome.failure?.code).toBe("LLM_INVALID_REQUEST")
      expect(refused.outcome.failure?.message).toContain("providerOptions.ollama is invalid (allowed: thinking: boolean, reasoningEffort: \"high\" | \"medium\" | \"low\")")
      expect(refused.outcome.failure?.message).toContain("temperature")
      expect(refused.server.requests()).toStrictEqual([])
    }))

  it.live("a 404 about the model names the model the request asked for", () =>
    Effect.gen(function*() {
      for (const [profile, fixture, model] of [["openai", "openai-404-model", "gpt-9"], ["ollama", "ollama-404-model", "qwen3:8b"], ["vllm", "vllm-404-model", "Qwen/Qwen3-8B"]] as const) {
        const { outcome } = yield* streamWith(profile, Fixture.load(fixture), request(model, "hi"), { model })
        expect(outcome.failure?.message, profile).toContain(`does not serve the model ${JSON.stringify(model)} (HTTP 404)`)
        expect(outcome.failure?.message).toContain("GET /models")
        expect((outcome.failure as LlmError.LlmInvalidRequestError).status).toBe(404)
      }
      const { outcome } = yield* streamWith("ollama", Fixture.load("404-endpoint"), request("m", "hi"), { model: "m" })
      expect(outcome.failure?.message).toMatch(/has no such endpoint as http:\/\/127\.0\.0\.1:\d+\/chat\/completions \(HTTP 404\): 404 page not found/)
    }))

  it.live("a context overflow carries the token counts the server named", () =>
    Effect.gen(function*() {
      const counts = []
      for (const [profile, fixture] of [["openai", "openai-400-context"], ["vllm", "vllm-400-context"], ["llamacpp", "llamacpp-400-context"]] as const) {
        const { outcome } = yield* streamWith(profile, Fixture.load(fixture), request(modelOf(profile), "hi"))
        const failure = outcome.failure as LlmError.LlmContextOverflowError
        counts.push([failure._tag, failure.limit, failure.requested])
      }
      expect(counts).toStrictEqual([
        ["LlmContextOverflowError", 128_000, 131_072],
        ["LlmContextOverflowError", 32_768, 40_960],
        ["LlmContextOverflowError", 8192, 9121]
      ])
    }))
})

describe("retries", () => {
  const noIdle = { idleTimeout: "Infinity" } as const

  it.live("502 (an HTML page), then success: retried with the schedule's backoff, answered once", () =>
    Effect.gen(function*() {
      const { clock, sleeps } = recordingClock()
      const { outcome, server } = yield* streamWith(
        "vllm",
        [Fixture.load("502-html"), Fixture.load("llamacpp-500"), Fixture.load("vllm-reasoning")],
        request(modelOf("vllm"), "hi"),
        { ...noIdle, retry: { times: 3, schedule: Schedule.exponential("100 millis", 2) } }
      ).pipe(Effect.provideService(Clock.Clock, clock))
      expect(mismatch(outcome, Fixture.load("vllm-reasoning").expect!)).toBeUndefined()
      expect(server.requests().length).toBe(3)
      expect(sleeps).toStrictEqual([100, 200])
    }))

  it.live("OpenRouter's 429 waits what Retry-After says; OpenAI's insufficient_quota 429 is not retried", () =>
    Effect.gen(function*() {
      const { clock, sleeps } = recordingClock()
      const limited = yield* streamWith(
        "openrouter",
        [Fixture.load("openrouter-429"), Fixture.load("openrouter-reasoning")],
        request("deepseek/deepseek-v4-flash", "hi"),
        { ...noIdle, model: "deepseek/deepseek-v4-flash", retry: { schedule: Schedule.exponential("100 millis") } }
      ).pipe(Effect.provideService(Clock.Clock, clock))
      expect(limited.outcome.failure).toBeUndefined()
      expect(sleeps).toStrictEqual([7000])
      const quota = yield* streamWith("openai", [Fixture.load("openai-429-quota"), Fixture.load("text")], request(modelOf("openai"), "hi"), {
        ...noIdle,
        retry: { times: 3, schedule: Schedule.spaced("1 millis") }
      })
      expect([quota.outcome.failure?._tag, quota.server.requests().length]).toStrictEqual(["LlmAuthError", 1])
    }))

  it.live("a partly streamed answer is never repeated; a stall before the first byte is retried", () =>
    Effect.gen(function*() {
      const cut = yield* streamWith("ollama", [Fixture.load("disconnect"), Fixture.load("text")], request("m", "hi"), {
        model: "m",
        retry: { times: 3, schedule: Schedule.spaced("1 millis") }
      })
      expect([cut.outcome.failure?.code, cut.server.requests().length]).toStrictEqual(["LLM_TRANSPORT", 1])
      const silent: Fixture.Fixture = { description: "headers, then nothing", writes: [{ stall: true }] }
      const before = yield* streamWith("lmstudio", [silent, Fixture.load("text")], request("m", "hi"), {
        model: "m",
        idleTimeout: "200 millis",
        retry: { times: 1, schedule: Schedule.spaced("1 millis") }
      })
      expect([before.outcome.failure, before.server.requests().length]).toStrictEqual([undefined, 2])
    }))

  it.live("connection refused is a transport error naming the endpoint", () =>
    Effect.gen(function*() {
      const closed = yield* Effect.promise(() => FakeServer.start(Fixture.load("text")))
      yield* Effect.promise(() => closed.close())
      const outcome = yield* Model.use((model) => run(model.stream(request("m", "hi")))).pipe(
        Effect.provide(modelLayer("llamacpp", closed.url, { model: "m", retry: { times: 1, schedule: Schedule.spaced("1 millis") } }))
      )
      expect(outcome.failure?.code).toBe("LLM_TRANSPORT")
      expect(outcome.failure?.message).toContain(`could not reach llama.cpp at ${closed.url}/chat/completions`)
    }))

  it.live("a base URL's user and password never reach an error message (nor the session log that keeps it)", () =>
    Effect.gen(function*() {
      const closed = yield* Effect.promise(() => FakeServer.start(Fixture.load("text")))
      yield* Effect.promise(() => closed.close())
      const withCredentials = closed.url.replace("http://", "http://user:s3cret@")
      const outcome = yield* Model.use((model) => run(model.stream(request("m", "hi")))).pipe(
        Effect.provide(modelLayer("llamacpp", withCredentials, { model: "m", retry: { times: 1, schedule: Schedule.spaced("1 millis") } }))
      )
      expect(outcome.failure?.code).toBe("LLM_TRANSPORT")
      expect(outcome.failure?.message).toContain(`could not reach llama.cpp at ${closed.url.replace("http://", "http://REDACTED@")}/chat/completions`)
      expect(outcome.failure?.message).not.toContain("s3cret")
    }))
})

describe("interruption", () => {
  it.live("stopping early or interrupting the consumer closes the connection", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make(Fixture.load("endless"))
      yield* Effect.gen(function*() {
        const model = yield* Model
        const some = yield* model.stream(request("m", "count")).pipe(Stream.take(5), Stream.runCollect)
        expect(some.length).toBe(5)
        yield* server.awaitClosedEarly(0)
        const fiber = yield* model.stream(request("m", "count")).pipe(Stream.runDrain, Effect.forkChild)
        yield* server.awaitRequests(2)
        yield* Fiber.interrupt(fiber)
        yield* server.awaitClosedEarly(1)
      }).pipe(Effect.provide(modelLayer("ollama", server.url, { model: "m" })))
      expect(server.responses().map((r) => r.closedEarly)).toStrictEqual([true, true])
    }).pipe(Effect.scoped))
})

describe("the API key never leaks", () => {
  const leaky = (status: number): Fixture.Fixture => Fixture.errorResponse(status, `bad key ${secret} (echoed by a careless proxy)`)
  const paths: ReadonlyArray<readonly [string, FakeServer.Respond, OpenAiCompat.Options?]> = [
    ["401 echoing the key", leaky(401)],
    ["404 echoing the key", leaky(404)],
    ["429 quota", Fixture.load("openai-429-quota")],
    ["502 html", Fixture.load("502-html")],
    ["openrouter 502 echoing in metadata", {
      description: "echo",
      status: 502,
      writes: [JSON.stringify({ error: { code: 502, message: "upstream", metadata: { provider_name: "X", raw: `key ${secret}` } } })]
    }],
    ["ollama string echoing the key", { description: "echo", status: 500, writes: [JSON.stringify({ error: `key ${secret}` })] }],
    ["200 html echoing the key", { description: "echo", writes: [`<html><title>${secret}</title></html>`] }],
    ["context overflow echoing the key", {
      description: "echo",
      status: 400,
      writes: [JSON.stringify({ error: { message: `maximum context length is 10 tokens; key ${secret}`, code: "context_length_exceeded" } })]
    }],
    ["disconnect", Fixture.load("disconnect")],
    ["stall", Fixture.load("stall"), { idleTimeout: "100 millis" }],
    ["an error object echoing the key", { description: "echo", writes: [Fixture.data({ object: "error", message: `dead ${secret}` })] }]
  ]

  it.live("in no error message, JSON, encoding, rendering, log line or span attribute of any failure path", () =>
    Effect.gen(function*() {
      const errors: Array<unknown> = []
      const logs: Array<string> = []
      const spans: Array<Tracer.NativeSpan> = []
      const tracer = Tracer.make({
        span(options) {
          const span = new Tracer.NativeSpan(options)
          spans.push(span)
          return span
        }
      })
      const logger = Logger.make((options) => void logs.push(inspect(options.message, { depth: null }) + Cause.pretty(options.cause)))
      const observed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        effect.pipe(
          Effect.provide(Logger.layer([logger])),
          Effect.provideService(References.MinimumLogLevel, "All"),
          Effect.provideService(Tracer.Tracer, tracer)
        )
      for (const [name, respond, options] of paths) {
        const { outcome } = yield* observed(streamWith("openai", respond, request(modelOf("openai"), "hi"), { ...options, retry: { times: 0 } }))
        expect(outcome.failure, name).toBeDefined()
        errors.push(outcome.failure, Exit.isFailure(outcome.exit) ? Cause.pretty(outcome.exit.cause) : "")
      }
      errors.push(yield* OpenAiCompat.settings({ apiKey, baseUrl: `not a url ${secret}` }).pipe(Effect.flip))
      const encode = Schema.encodeUnknownSync(Schema.Union([LlmError.LlmError, OpenAiError.OpenAiConfigError]))
      expect(errors.filter((e) => e === undefined)).toStrictEqual([])
      for (const error of errors) {
        const renderings = typeof error === "string" ? [error] : [
          String(error),
          (error as Error).message,
          JSON.stringify(error),
          JSON.stringify(encode(error)),
          inspect(error, { depth: null, showHidden: true }),
          Cause.pretty(Cause.fail(error))
        ]
        for (const text of renderings) expect(text).not.toContain(secret)
      }
      for (const line of logs) expect(line).not.toContain(secret)
      for (const span of spans) expect(inspect([...span.attributes], { depth: null })).not.toContain(secret)
    }).pipe(Effect.scoped))
})

it.live("Model routes the served names to the adapter, and only those", () =>
  Effect.gen(function*() {
    const server = yield* FakeServer.make(Fixture.load("openai-text"))
    yield* Effect.gen(function*() {
      const model = yield* Model
      const answer = yield* model.generate(request("gpt-5.4-mini", "hi"))
      expect(Message.textOf(answer.message)).toBe("Hello from OpenAI.")
      const other = yield* model.generate(request("gpt-4o", "hi")).pipe(Effect.flip)
      expect(other._tag).toBe("NoModelError")
    }).pipe(Effect.provide(
      OpenAiCompat.layer({ apiKey, baseUrl: server.url, retry: { times: 0 } }).pipe(Layer.provideMerge(Model.layer))
    ))
  }).pipe(Effect.scoped))

describe("the Layer's HTTP client", () => {
  it.live("keeps connections alive: the retries after two error bodies go over the first request's connection", () =>
    Effect.gen(function*() {
      let connections = 0
      let requests = 0
      const chunk = (delta: unknown, finish: string | null) =>
        `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
      const server = createServer((req, res) => {
        req.resume()
        req.on("end", () => {
          if (++requests < 3) {
            res.writeHead(500, { "content-type": "application/json" })
            return res.end(JSON.stringify({ error: { message: "try again", type: "server_error" } }))
          }
          res.writeHead(200, { "content-type": "text/event-stream" })
          res.end(chunk({ content: "Hi" }, null) + chunk({}, "stop") + "data: [DONE]\n\n")
        })
      })
      server.on("connection", () => void connections++)
      yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<void>((resolve) => {
            server.listen(0, "127.0.0.1", () => resolve())
          })
        ),
        () =>
          Effect.promise(() =>
            new Promise<void>((resolve) => {
              server.close(() => resolve())
            })
          )
      )
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const answer = yield* Model.use((model) => model.generate(request("gpt-5.4-mini", "hi"))).pipe(
        Effect.provide(
          OpenAiCompat.layer({ apiKey, baseUrl, model: "gpt-5.4-mini", retry: { times: 2, schedule: Schedule.spaced(Duration.zero) } }).pipe(
            Layer.provideMerge(Model.layer)
          )
        )
      )
      expect(answer.message.content).toStrictEqual([{ type: "text", text: "Hi" }])
      expect([requests, connections]).toStrictEqual([3, 1])
    }).pipe(Effect.scoped))
})

describe("a compressed stream nobody asked for", () => {
  it.live("fails with LLM_PROTOCOL naming its content-encoding, so a proxy compressing the stream is found at once", () =>
    Effect.gen(function*() {
      const { outcome } = yield* streamWith("deepseek", Fixture.load("gzip-unasked"), request("deepseek-v4-flash", "hi"), { apiKey })
      expect(outcome.failure).toMatchObject({ _tag: "LlmProtocolError", code: "LLM_PROTOCOL" })
      expect(outcome.failure?.message).toContain(`it came with content-encoding "gzip", which the request did not ask for (is a proxy compressing the stream?)`)
    }))
})
