/**
 * The adapter as a Layer: configuration, routing through `Model`, per-request overrides,
 * retries (only before the first byte, honouring Retry-After), interruption closing the
 * connection, and the API key never leaking.
 */
import { DeepSeek, DeepSeekError } from "@dsh/deepseek"
import { FakeServer, Fixture } from "@dsh/deepseek/testing"
import { LlmError, Message } from "@dsh/llm"
import { Model } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Clock, ConfigProvider, Effect, Exit, Fiber, Layer, Logger, Redacted, References, Schedule, Schema, Stream, Tracer } from "effect"
import { inspect } from "node:util"
import { apiKey, mismatch, modelLayer, recordingClock, request, run, secret, streamWith } from "./util.ts"

const env = (vars: Record<string, string>) => ConfigProvider.fromEnv({ env: vars })

describe("configuration", () => {
  it.effect("reads the key and base URL from the environment, with defaults", () =>
    Effect.gen(function*() {
      const settings = yield* DeepSeek.settings().pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, env({ DEEPSEEK_API_KEY: "sk-env" }))
      )
      expect(Redacted.value(settings.apiKey)).toBe("sk-env")
      expect(settings.baseUrl).toBe("https://api.deepseek.com")
      expect(settings.models).toStrictEqual(["deepseek-v4-flash", "deepseek-v4-pro"])
      expect(settings.thinking).toBeUndefined()
      expect(settings.retry.times).toBe(2)
      const custom = yield* DeepSeek.settings({ models: ["deepseek-v4-pro"] }).pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          env({ DEEPSEEK_API_KEY: "sk-env", DEEPSEEK_BASE_URL: "http://127.0.0.1:9/v1/" })
        )
      )
      expect(custom.baseUrl).toBe("http://127.0.0.1:9/v1")
      expect(custom.models).toStrictEqual(["deepseek-v4-pro"])
      // options win over the environment
      const explicit = yield* DeepSeek.settings({ apiKey, baseUrl: "https://example.test" }).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, env({ DEEPSEEK_API_KEY: "sk-env" }))
      )
      expect(Redacted.value(explicit.apiKey)).toBe(secret)
      expect(explicit.baseUrl).toBe("https://example.test")
    }))

  it.effect("a missing key fails building the Layer with LLM_CONFIG, saying how to set it", () =>
    Effect.gen(function*() {
      const error = yield* Model.use(() => Effect.void).pipe(
        Effect.provide(DeepSeek.layer().pipe(Layer.provideMerge(Model.layer))),
        Effect.provideService(ConfigProvider.ConfigProvider, env({})),
        Effect.flip
      )
      expect(error).toBeInstanceOf(DeepSeekError.DeepSeekConfigError)
      expect(error.code).toBe("LLM_CONFIG")
      expect(error.message).toContain("DEEPSEEK_API_KEY")
      expect(error.message).toContain("apiKey: Redacted.make(key)")
    }))

  it.effect("an empty key or a base URL that is not a URL are config errors too", () =>
    Effect.gen(function*() {
      const empty = yield* DeepSeek.settings({ apiKey: Redacted.make("  ") }).pipe(Effect.flip)
      expect([empty.code, empty.setting]).toStrictEqual(["LLM_CONFIG", "apiKey"])
      const url = yield* DeepSeek.settings({ apiKey, baseUrl: "api.deepseek.com" }).pipe(Effect.flip)
      expect([url.code, url.setting]).toStrictEqual(["LLM_CONFIG", "baseUrl"])
      expect(url.message).toContain("DEEPSEEK_BASE_URL")
      const ftp = yield* DeepSeek.settings({ apiKey, baseUrl: "ftp://x" }).pipe(Effect.flip)
      expect(ftp.setting).toBe("baseUrl")
    }))
})

describe("routing", () => {
  it.live("Model routes the served names to the adapter, and only those", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make(Fixture.load("text"))
      yield* Effect.gen(function*() {
        const model = yield* Model
        const flash = yield* model.generate(request("hi"))
        expect(Message.textOf(flash.message)).toBe("Hello, world!")
        const pro = yield* model.generate(request("hi", { model: "deepseek-v4-pro" }))
        expect(pro.finishReason?.kind).toBe("stop")
        const other = yield* model.generate(request("hi", { model: "gpt-none" })).pipe(Effect.flip)
        expect(other._tag).toBe("NoModelError")
        expect(other.message).toContain("deepseek-v4-flash, deepseek-v4-pro")
      }).pipe(Effect.provide(modelLayer(server.url)))
      expect(server.requests().map((r) => (r.json as { model: string }).model)).toStrictEqual([
        "deepseek-v4-flash",
        "deepseek-v4-pro"
      ])
    }).pipe(Effect.scoped))

  it.live("invalid providerOptions.deepseek fail with LLM_INVALID_REQUEST before anything is sent", () =>
    Effect.gen(function*() {
      const { outcome, server } = yield* streamWith(
        Fixture.load("text"),
        request("hi", { providerOptions: { deepseek: { thinking: "yes", reasoning_effort: "max" }, other: { x: 1 } } })
      )
      expect(outcome.failure?.code).toBe("LLM_INVALID_REQUEST")
      expect(outcome.failure?.message).toContain("providerOptions.deepseek")
      expect(outcome.failure?.message).toContain("reasoning_effort")
      expect(server.requests()).toStrictEqual([])
    }))
})

describe("retries", () => {
  // Retry delays are observed with a clock that records them instead of sleeping; the idle
  // timeout is off in these tests because its timer runs on the same clock.
  const noIdle = { idleTimeout: "Infinity" } as const

  it.live("500, then success: retried with the schedule's backoff, answered once", () =>
    Effect.gen(function*() {
      const { clock, sleeps } = recordingClock()
      const { outcome, server } = yield* streamWith(
        [Fixture.load("500"), Fixture.load("503-html"), Fixture.load("text")],
        request("hi"),
        { ...noIdle, retry: { times: 3, schedule: Schedule.exponential("100 millis", 2) } }
      ).pipe(Effect.provideService(Clock.Clock, clock))
      expect(mismatch(outcome, Fixture.load("text").expect!)).toBeUndefined()
      expect(server.requests().length).toBe(3)
      expect(sleeps).toStrictEqual([100, 200])
    }))

  it.live("429 waits what Retry-After says when it is longer than the backoff", () =>
    Effect.gen(function*() {
      const { clock, sleeps } = recordingClock()
      const { outcome, server } = yield* streamWith(
        [Fixture.load("429"), Fixture.load("text")],
        request("hi"),
        { ...noIdle, retry: { schedule: Schedule.exponential("100 millis") } }
      ).pipe(Effect.provideService(Clock.Clock, clock))
      expect(outcome.failure).toBeUndefined()
      expect(server.requests().length).toBe(2)
      expect(sleeps).toStrictEqual([2000])
    }))

  it.live("a Retry-After beyond maxRetryAfter is not waited out: the error says how long", () =>
    Effect.gen(function*() {
      const { clock, sleeps } = recordingClock()
      const { outcome, server } = yield* streamWith(
        [Fixture.load("429"), Fixture.load("text")],
        request("hi"),
        { ...noIdle, retry: { times: 2, maxRetryAfter: "1 second" } }
      ).pipe(Effect.provideService(Clock.Clock, clock))
      expect(outcome.failure?._tag).toBe("LlmRateLimitError")
      expect((outcome.failure as LlmError.LlmRateLimitError).retryAfterMillis).toBe(2000)
      expect(server.requests().length).toBe(1)
      expect(sleeps).toStrictEqual([])
    }))

  it.live("401 and 400 are not retried", () =>
    Effect.gen(function*() {
      for (const name of ["401", "400"]) {
        const { outcome, server } = yield* streamWith([Fixture.load(name), Fixture.load("text")], request("hi"), {
          retry: { times: 3, schedule: Schedule.spaced("1 millis") }
        })
        expect(outcome.failure?.code).toBe(name === "401" ? "LLM_AUTH" : "LLM_INVALID_REQUEST")
        expect(server.requests().length).toBe(1)
      }
    }))

  it.live("a partly streamed answer is never repeated: a mid-stream disconnect fails, once", () =>
    Effect.gen(function*() {
      const { outcome, server } = yield* streamWith([Fixture.load("disconnect"), Fixture.load("text")], request("hi"), {
        retry: { times: 3, schedule: Schedule.spaced("1 millis") }
      })
      expect(outcome.failure?.code).toBe("LLM_TRANSPORT")
      expect(outcome.chunks.filter((c) => c.type === "text-delta").map((c) => c.type === "text-delta" && c.delta))
        .toStrictEqual(["The answer is", " forty"])
      expect(server.requests().length).toBe(1)
    }))

  it.live("a stall before the first byte is retried; a stall after it is not", () =>
    Effect.gen(function*() {
      const silent: Fixture.Fixture = { description: "headers, then nothing", writes: [{ stall: true }] }
      const before = yield* streamWith([silent, Fixture.load("text")], request("hi"), {
        idleTimeout: "200 millis",
        retry: { times: 1, schedule: Schedule.spaced("1 millis") }
      })
      expect(before.outcome.failure).toBeUndefined()
      expect(before.server.requests().length).toBe(2)
      const after = yield* streamWith([Fixture.load("stall"), Fixture.load("text")], request("hi"), {
        idleTimeout: "200 millis",
        retry: { times: 1, schedule: Schedule.spaced("1 millis") }
      })
      expect(after.outcome.failure?.message).toContain("idle timeout")
      expect(after.server.requests().length).toBe(1)
    }))

  it.live("connection refused is a transport error (retried, then reported)", () =>
    Effect.gen(function*() {
      const closed = yield* Effect.promise(() => FakeServer.start(Fixture.load("text")))
      yield* Effect.promise(() => closed.close())
      const outcome = yield* Model.use((model) => run(model.stream(request("hi")))).pipe(
        Effect.provide(modelLayer(closed.url, { retry: { times: 1, schedule: Schedule.spaced("1 millis") } }))
      )
      expect(outcome.failure?.code).toBe("LLM_TRANSPORT")
      expect(outcome.failure?.message).toContain(`could not reach DeepSeek at ${closed.url}/chat/completions`)
      expect(outcome.failure?.message).toContain("ECONNREFUSED")
    }))
})

describe("interruption", () => {
  it.live("stopping early or interrupting the consumer closes the connection", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make(Fixture.load("endless"))
      yield* Effect.gen(function*() {
        const model = yield* Model
        const some = yield* model.stream(request("count")).pipe(Stream.take(5), Stream.runCollect)
        expect(some.length).toBe(5)
        yield* server.awaitClosedEarly(0)
        const fiber = yield* model.stream(request("count")).pipe(Stream.runDrain, Effect.forkChild)
        yield* server.awaitRequests(2)
        yield* Fiber.interrupt(fiber)
        yield* server.awaitClosedEarly(1)
      }).pipe(Effect.provide(modelLayer(server.url)))
      expect(server.responses().map((r) => r.closedEarly)).toStrictEqual([true, true])
    }).pipe(Effect.scoped))
})

describe("the API key never leaks", () => {
  const leaky = (status: number): Fixture.Fixture =>
    Fixture.errorResponse(status, `bad key ${secret} (echoed by a careless proxy)`)
  const failurePaths: ReadonlyArray<readonly [string, FakeServer.Respond, DeepSeek.Options?]> = [
    ["401 echoing the key", leaky(401)],
    ["403", leaky(403)],
    ["400 echoing the key", leaky(400)],
    ["429", Fixture.load("429")],
    ["500 echoing the key", leaky(500)],
    ["503 html", Fixture.load("503-html")],
    ["disconnect", Fixture.load("disconnect")],
    ["stall", Fixture.load("stall"), { idleTimeout: "100 millis" }],
    ["no [DONE]", Fixture.load("no-done")],
    ["malformed JSON echoing the key", {
      description: "echo",
      writes: [`data: {"oops": "${secret}"\n\n`]
    }],
    ["an error event echoing the key", {
      description: "echo",
      writes: [Fixture.data({ error: { message: `overloaded; key ${secret}` } })]
    }]
  ]

  it.live("in no error message, JSON, encoding, rendering, log line, span attribute or chunk of any failure path", () =>
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
      for (const [name, respond, options] of failurePaths) {
        const { outcome } = yield* observed(streamWith(respond, request("hi"), { ...options, retry: { times: 0 } }))
        expect(outcome.failure, name).toBeDefined()
        errors.push(outcome.failure, Exit.isFailure(outcome.exit) ? Cause.pretty(outcome.exit.cause) : "")
        expect(JSON.stringify(outcome.chunks)).not.toContain(secret)
      }
      // connection refused, and the failures before any request
      const closed = yield* Effect.promise(() => FakeServer.start(Fixture.load("text")))
      yield* Effect.promise(() => closed.close())
      const refused = yield* observed(
        Model.use((model) => run(model.stream(request("hi")))).pipe(Effect.provide(modelLayer(closed.url)))
      )
      errors.push(refused.failure)
      errors.push(yield* DeepSeek.settings({ apiKey, baseUrl: `not a url ${secret}` }).pipe(Effect.flip))
      const server = yield* FakeServer.make(Fixture.load("text"))
      const invalid = yield* observed(
        Model.use((model) => run(model.stream(request("hi", { providerOptions: { deepseek: { thinking: secret } } })))).pipe(
          Effect.provide(modelLayer(server.url))
        )
      )
      errors.push(invalid.failure)

      expect(errors.filter((e) => e === undefined)).toStrictEqual([])
      const encode = Schema.encodeUnknownSync(Schema.Union([LlmError.LlmError, DeepSeekError.DeepSeekConfigError]))
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
      expect(spans.length).toBeGreaterThan(0)
    }).pipe(Effect.scoped))
})
