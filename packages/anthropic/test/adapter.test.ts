/**
 * The adapter as a Layer: configuration, routing through `Model`, model info, the headers and
 * per-request overrides, retries (only before the first byte, honouring retry-after and
 * x-should-retry), interruption closing the connection, thinking passed back on the next
 * request, and the API key never leaking.
 */
import { Anthropic, AnthropicError } from "@dsh/anthropic"
import { FakeServer, Fixture } from "@dsh/anthropic/testing"
import { Assembler, LlmError, Message, ModelInfo, ModelRequest, Usage } from "@dsh/llm"
import { Model, ModelRegistry } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import {
  Cause,
  Clock,
  ConfigProvider,
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
import { inspect } from "node:util"
import { apiKey, mismatch, modelLayer, recordingClock, request, run, secret, streamWith } from "./util.ts"

const env = (vars: Record<string, string>) => ConfigProvider.fromEnv({ env: vars })

describe("configuration", () => {
  it.effect("a timeout or retry setting that is no duration or count is LLM_CONFIG naming it", () =>
    Effect.gen(function*() {
      const refused = (options: Partial<Anthropic.Options>) => Effect.flip(Anthropic.settings({ apiKey, ...options } as Anthropic.Options))
      const word = yield* refused({ idleTimeout: "soon" as never })
      expect([word._tag, word.code, word.setting]).toStrictEqual(["AnthropicConfigError", "LLM_CONFIG", "idleTimeout"])
      expect((yield* refused({ idleTimeout: 0 })).message).toBe("idleTimeout must be longer than zero, got 0")
      expect((yield* refused({ retry: { maxRetryAfter: "x" as never } })).setting).toBe("retry")
      expect((yield* refused({ retry: { times: Number.NaN } })).setting).toBe("retry")
    }))

  it.effect("reads the key and base URL from the environment, with defaults", () =>
    Effect.gen(function*() {
      const settings = yield* Anthropic.settings().pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, env({ ANTHROPIC_API_KEY: "sk-ant-env" }))
      )
      expect(Redacted.value(settings.apiKey)).toBe("sk-ant-env")
      expect(settings.baseUrl).toBe("https://api.anthropic.com")
      expect(settings.version).toBe("2023-06-01")
      expect(settings.models[0]).toBe("claude-opus-5-5")
      expect(settings.models).toContain("claude-haiku-4-5")
      expect(settings.info.map((i) => i.name)).toStrictEqual(settings.models)
      expect(settings.promptCache).toBe("5m")
      expect(settings.thinking).toBeUndefined()
      expect(settings.retry.times).toBe(2)
      const custom = yield* Anthropic.settings({ models: ["claude-haiku-4-5", "my-fine-tune"] }).pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          env({ ANTHROPIC_API_KEY: "sk-ant-env", ANTHROPIC_BASE_URL: "http://127.0.0.1:9/" })
        )
      )
      expect(custom.baseUrl).toBe("http://127.0.0.1:9")
      // a served model without a catalog entry simply has no info
      expect(custom.info.map((i) => i.name)).toStrictEqual(["claude-haiku-4-5"])
      // options win over the environment
      const explicit = yield* Anthropic.settings({ apiKey, baseUrl: "https://example.test" }).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, env({ ANTHROPIC_API_KEY: "sk-ant-env" }))
      )
      expect(Redacted.value(explicit.apiKey)).toBe(secret)
      expect(explicit.baseUrl).toBe("https://example.test")
    }))

  it.effect("a missing key fails building the Layer with LLM_CONFIG, saying how to set it", () =>
    Effect.gen(function*() {
      const error = yield* Model.use(() => Effect.void).pipe(
        Effect.provide(Anthropic.layer().pipe(Layer.provideMerge(Model.layer))),
        Effect.provideService(ConfigProvider.ConfigProvider, env({})),
        Effect.flip
      )
      expect(error).toBeInstanceOf(AnthropicError.AnthropicConfigError)
      expect(error.code).toBe("LLM_CONFIG")
      expect(error.message).toContain("ANTHROPIC_API_KEY")
      expect(error.message).toContain("apiKey: Redacted.make(key)")
    }))

  it.effect("an empty key, a base URL that is not a URL, no models or a bad number are config errors too", () =>
    Effect.gen(function*() {
      const empty = yield* Anthropic.settings({ apiKey: Redacted.make("  ") }).pipe(Effect.flip)
      expect([empty.code, empty.setting]).toStrictEqual(["LLM_CONFIG", "apiKey"])
      const url = yield* Anthropic.settings({ apiKey, baseUrl: "api.anthropic.com" }).pipe(Effect.flip)
      expect([url.code, url.setting]).toStrictEqual(["LLM_CONFIG", "baseUrl"])
      expect(url.message).toContain("ANTHROPIC_BASE_URL")
      const ftp = yield* Anthropic.settings({ apiKey, baseUrl: "ftp://x" }).pipe(Effect.flip)
      expect(ftp.setting).toBe("baseUrl")
      const none = yield* Anthropic.settings({ apiKey, models: [] }).pipe(Effect.flip)
      expect(none.setting).toBe("models")
      const tokens = yield* Anthropic.settings({ apiKey, maxTokens: 0 }).pipe(Effect.flip)
      expect(tokens.setting).toBe("maxTokens")
      const budget = yield* Anthropic.settings({ apiKey, thinking: { budgetTokens: 1.5 } }).pipe(Effect.flip)
      expect(budget.setting).toBe("thinking")
    }))
})

describe("routing and model info", () => {
  it.live("Model routes the served names to the adapter; the registry answers info and cost", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make(Fixture.load("cache-read"))
      yield* Effect.gen(function*() {
        const model = yield* Model
        const answer = yield* model.generate(request("hi", { model: "claude-haiku-4-5" }))
        expect(Message.textOf(answer.message)).toBe("Again.")
        const other = yield* model.generate(request("hi", { model: "gpt-none" })).pipe(Effect.flip)
        expect(other._tag).toBe("NoModelError")
        const registry = yield* ModelRegistry
        const info = Option.getOrThrow(yield* registry.info("claude-haiku-4-5"))
        expect(info).toMatchObject({ provider: "anthropic", contextWindow: 200_000, maxOutputTokens: 64_000 })
        // 6 uncached, 41,203 read and 310 written input tokens, 17 output tokens
        expect(ModelInfo.cost(answer.usage ?? Usage.empty, info.pricing!)).toBeCloseTo(
          (6 * 1 + 41_203 * 0.1 + 310 * 1.25 + 17 * 5) / 1_000_000,
          12
        )
        expect(Option.isNone(yield* registry.info("gpt-none"))).toBe(true)
      }).pipe(Effect.provide(modelLayer(server.url)))
    }).pipe(Effect.scoped))

  it.live("an info option replaces the catalog's entry, and describes a model the catalog lacks", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make(Fixture.load("text"))
      const mine: ModelInfo.ModelInfo = { name: "claude-fable-5-1", provider: "anthropic", contextWindow: 1_000_000 }
      const cheaper: ModelInfo.ModelInfo = { name: "claude-haiku-4-5", provider: "anthropic", contextWindow: 100_000 }
      yield* Effect.gen(function*() {
        const registry = yield* ModelRegistry
        expect(yield* registry.models).toStrictEqual(["claude-fable-5-1", "claude-haiku-4-5"])
        expect(Option.getOrThrow(yield* registry.info("claude-fable-5-1"))).toStrictEqual(mine)
        expect(Option.getOrThrow(yield* registry.info("claude-haiku-4-5"))).toStrictEqual(cheaper)
      }).pipe(Effect.provide(modelLayer(server.url, { models: ["claude-fable-5-1", "claude-haiku-4-5"], info: [mine, cheaper] })))
    }).pipe(Effect.scoped))
})

describe("the request", () => {
  it.live("POST /v1/messages with x-api-key, anthropic-version, anthropic-beta and a streamed body", () =>
    Effect.gen(function*() {
      const { server } = yield* streamWith(Fixture.load("text"), request("hi", { system: "Be brief." }), {
        betas: ["interleaved-thinking-2025-05-14", "context-1m-2025-08-07"]
      })
      const [sent] = server.requests()
      expect(sent?.method).toBe("POST")
      expect(sent?.path).toBe("/v1/messages")
      expect(sent?.headers["x-api-key"]).toBe(secret)
      expect(sent?.headers["anthropic-version"]).toBe("2023-06-01")
      expect(sent?.headers["anthropic-beta"]).toBe("interleaved-thinking-2025-05-14,context-1m-2025-08-07")
      expect(sent?.headers["content-type"]).toBe("application/json")
      expect(sent?.headers["accept"]).toBe("text/event-stream")
      // no tracing headers: this process's trace ids are none of the provider's business
      expect([sent?.headers["b3"], sent?.headers["traceparent"]]).toStrictEqual([undefined, undefined])
      expect(sent?.headers["authorization"]).toBeUndefined()
      expect(sent?.json).toMatchObject({
        model: "claude-sonnet-5-5",
        max_tokens: 32_000,
        system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
        stream: true,
        messages: [{ role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }] }]
      })
    }))

  it.live("max_tokens: the request's, else the option, else the model's output limit up to 32,000", () =>
    Effect.gen(function*() {
      const maxTokensOf = (server: FakeServer.FakeServer) => (server.requests()[0]!.json as { max_tokens: number }).max_tokens
      const own = yield* streamWith(Fixture.load("text"), request("hi", { maxTokens: 123 }), { maxTokens: 456 })
      expect(maxTokensOf(own.server)).toBe(123)
      const option = yield* streamWith(Fixture.load("text"), request("hi"), { maxTokens: 456 })
      expect(maxTokensOf(option.server)).toBe(456)
      const limited = yield* streamWith(Fixture.load("text"), request("hi", { model: "x-small" }), {
        models: ["x-small"],
        info: [{ name: "x-small", provider: "anthropic", contextWindow: 8000, maxOutputTokens: 4096 }]
      })
      expect(maxTokensOf(limited.server)).toBe(4096)
    }))

  it.live("thinking, effort and the cache from the options, overridden per request by providerOptions.anthropic", () =>
    Effect.gen(function*() {
      const settings = yield* streamWith(Fixture.load("text"), request("hi"), { thinking: { budgetTokens: 2048 }, effort: "low" })
      expect(settings.server.requests()[0]?.json).toMatchObject({
        thinking: { type: "enabled", budget_tokens: 2048 },
        output_config: { effort: "low" }
      })
      const overridden = yield* streamWith(
        Fixture.load("text"),
        request("hi", { providerOptions: { anthropic: { thinking: "adaptive", effort: "high", promptCache: "1h" }, other: { x: 1 } } }),
        { thinking: "disabled" }
      )
      const json = overridden.server.requests()[0]?.json as Record<string, unknown>
      expect(json["thinking"]).toStrictEqual({ type: "adaptive" })
      expect(json["output_config"]).toStrictEqual({ effort: "high" })
      expect(JSON.stringify(json["messages"])).toContain(`"cache_control":{"type":"ephemeral","ttl":"1h"}`)
      const off = yield* streamWith(Fixture.load("text"), request("hi", { system: "s" }), { promptCache: "off" })
      expect(off.server.requests()[0]?.body).not.toContain("cache_control")
    }))

  it.live("invalid providerOptions.anthropic fail with LLM_INVALID_REQUEST before anything is sent", () =>
    Effect.gen(function*() {
      const { outcome, server } = yield* streamWith(
        Fixture.load("text"),
        request("hi", { providerOptions: { anthropic: { thinking: "sometimes", budget_tokens: 5 } } })
      )
      expect(outcome.failure?.code).toBe("LLM_INVALID_REQUEST")
      expect(outcome.failure?.message).toContain("providerOptions.anthropic")
      expect(outcome.failure?.message).toContain("budget_tokens")
      expect(server.requests()).toStrictEqual([])
    }))
})

describe("thinking goes back unchanged", () => {
  it.live("the thinking, redacted thinking and tool calls of an answer are the next request's assistant message", () =>
    Effect.gen(function*() {
      const fixture: Fixture.Fixture = {
        description: "redacted thinking, signed thinking and a tool call",
        writes: [
          Fixture.data(Fixture.messageStart()),
          Fixture.data(Fixture.blockStart(0, { type: "redacted_thinking", data: "ENCRYPTED==" })),
          Fixture.data(Fixture.blockStop(0)),
          Fixture.data(Fixture.blockStart(1, { type: "thinking", thinking: "", signature: "" })),
          Fixture.data(Fixture.thinkingDelta(1, "Need the file.")),
          Fixture.data(Fixture.signatureDelta(1, "SIG-1")),
          Fixture.data(Fixture.blockStop(1)),
          Fixture.data(Fixture.blockStart(2, { type: "tool_use", id: "toolu_9", name: "read", input: {} })),
          Fixture.data(Fixture.inputJsonDelta(2, `{"path": "a.ts", "n": 12345678901234567890}`)),
          Fixture.data(Fixture.blockStop(2)),
          Fixture.data(Fixture.messageDelta("tool_use")),
          Fixture.data(Fixture.messageStop)
        ]
      }
      const server = yield* FakeServer.make([fixture, Fixture.load("text")])
      yield* Effect.gen(function*() {
        const model = yield* Model
        const first = ModelRequest.make("claude-sonnet-5-5", [Message.user("read a.ts")])
        const answer = yield* model.generate(first)
        const call = answer.message.content[2]
        if (call?.type !== "tool-call") return expect.fail(`expected a tool call, got ${JSON.stringify(call)}`)
        const result = Message.make("user", [{
          type: "tool-result",
          toolCallId: call.id,
          content: [{ type: "text", text: "export {}" }],
          isError: false
        }])
        yield* model.generate(ModelRequest.make("claude-sonnet-5-5", [...first.messages, answer.message, result]))
      }).pipe(Effect.provide(modelLayer(server.url)))
      const second = server.requests()[1]!
      // the argument text went back byte for byte (the big number keeps its digits)
      expect(second.body).toContain(`"input":{"path": "a.ts", "n": 12345678901234567890}`)
      expect((second.json as { messages: ReadonlyArray<unknown> }).messages[1]).toStrictEqual({
        role: "assistant",
        content: [
          { type: "redacted_thinking", data: "ENCRYPTED==" },
          { type: "thinking", thinking: "Need the file.", signature: "SIG-1" },
          { type: "tool_use", id: "toolu_9", name: "read", input: JSON.parse(`{"path": "a.ts", "n": 12345678901234567890}`) }
        ]
      })
      expect((second.json as { messages: ReadonlyArray<unknown> }).messages[2]).toStrictEqual({
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "toolu_9",
          content: [{ type: "text", text: "export {}" }],
          cache_control: { type: "ephemeral" }
        }]
      })
    }).pipe(Effect.scoped))
})

describe("retries", () => {
  // Retry delays are observed with a clock that records them instead of sleeping; the idle
  // timeout is off in these tests because its timer runs on the same clock.
  const noIdle = { idleTimeout: "Infinity" } as const

  it.live("529 overloaded and 500, then success: retried with the schedule's backoff, answered once", () =>
    Effect.gen(function*() {
      const { clock, sleeps } = recordingClock()
      const { outcome, server } = yield* streamWith(
        [Fixture.load("529"), Fixture.load("500"), Fixture.load("text")],
        request("hi"),
        { ...noIdle, retry: { times: 3, schedule: Schedule.exponential("100 millis", 2) } }
      ).pipe(Effect.provideService(Clock.Clock, clock))
      expect(mismatch(outcome, Fixture.load("text").expect!)).toBeUndefined()
      expect(server.requests().length).toBe(3)
      expect(sleeps).toStrictEqual([100, 200])
    }))

  it.live("429 waits what retry-after says when it is longer than the backoff", () =>
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

  it.live("a retry-after beyond maxRetryAfter is not waited out: the error says how long", () =>
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

  it.live("x-should-retry overrides the status: false stops a 529's retries, true retries a 409", () =>
    Effect.gen(function*() {
      const { clock, sleeps } = recordingClock()
      const retry = { ...noIdle, retry: { times: 3, schedule: Schedule.spaced("5 millis") } }
      const no = yield* streamWith(
        [Fixture.errorResponse(529, "overloaded_error", "Overloaded", { headers: { "x-should-retry": "false" } }), Fixture.load("text")],
        request("hi"),
        retry
      ).pipe(Effect.provideService(Clock.Clock, clock))
      expect(no.outcome.failure?.code).toBe("LLM_SERVER")
      expect(no.server.requests().length).toBe(1)
      const yes = yield* streamWith(
        [Fixture.errorResponse(409, "conflict_error", "try again", { headers: { "x-should-retry": "true" } }), Fixture.load("text")],
        request("hi"),
        retry
      ).pipe(Effect.provideService(Clock.Clock, clock))
      expect(yes.outcome.failure).toBeUndefined()
      expect(yes.server.requests().length).toBe(2)
      expect(sleeps).toStrictEqual([5])
    }))

  it.live("401, 400 and 404 are not retried", () =>
    Effect.gen(function*() {
      for (const name of ["401", "400", "404"]) {
        const { outcome, server } = yield* streamWith([Fixture.load(name), Fixture.load("text")], request("hi"), {
          retry: { times: 3, schedule: Schedule.spaced("1 millis") }
        })
        expect(outcome.failure?.code).toBe(name === "401" ? "LLM_AUTH" : "LLM_INVALID_REQUEST")
        expect(server.requests().length).toBe(1)
      }
    }))

  it.live("a 401 says where the key comes from", () =>
    Effect.gen(function*() {
      const { outcome } = yield* streamWith(Fixture.load("401"), request("hi"))
      expect(outcome.failure?.message).toContain("ANTHROPIC_API_KEY")
      expect(outcome.failure?.message).toContain("req_011CSHoEeqs5C35K2UUqR7Fy")
    }))

  it.live("a partly streamed answer is never repeated: an overloaded_error or a disconnect mid-stream fails, once", () =>
    Effect.gen(function*() {
      for (const name of ["error-overloaded", "disconnect"]) {
        const { outcome, server } = yield* streamWith([Fixture.load(name), Fixture.load("text")], request("hi"), {
          retry: { times: 3, schedule: Schedule.spaced("1 millis") }
        })
        expect(outcome.failure?.code).toBe(name === "disconnect" ? "LLM_TRANSPORT" : "LLM_SERVER")
        expect(outcome.chunks.some((c) => c.type === "text-delta")).toBe(true)
        expect(server.requests().length).toBe(1)
      }
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
      expect(outcome.failure?.message).toContain(`could not reach Anthropic at ${closed.url}/v1/messages`)
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

  it.live("the stream ends at message_stop, before the server closes the response", () =>
    Effect.gen(function*() {
      const lingering: Fixture.Fixture = { ...Fixture.load("text"), writes: [...Fixture.load("text").writes, { stall: true }] }
      const { outcome } = yield* streamWith(lingering, request("hi"), { idleTimeout: "10 seconds" })
      expect(Assembler.assemble(outcome.chunks).finishReason?.kind).toBe("stop")
      expect(outcome.failure).toBeUndefined()
    }))
})

describe("the API key never leaks", () => {
  const leaky = (status: number, type: string): Fixture.Fixture =>
    Fixture.errorResponse(status, type, `bad key ${secret} (echoed by a careless proxy)`)
  const failurePaths: ReadonlyArray<readonly [string, FakeServer.Respond, Anthropic.Options?]> = [
    ["401 echoing the key", leaky(401, "authentication_error")],
    ["403", leaky(403, "permission_error")],
    ["400 echoing the key", leaky(400, "invalid_request_error")],
    ["429", Fixture.load("429")],
    ["529 echoing the key", leaky(529, "overloaded_error")],
    ["503 html", Fixture.load("503-html")],
    ["disconnect", Fixture.load("disconnect")],
    ["stall", Fixture.load("stall"), { idleTimeout: "100 millis" }],
    ["no message_stop", Fixture.load("no-message-stop")],
    ["malformed JSON echoing the key", { description: "echo", writes: [`event: message_start\ndata: {"oops": "${secret}"\n\n`] }],
    ["an error event echoing the key", {
      description: "echo",
      writes: [Fixture.data(Fixture.messageStart()), Fixture.data(Fixture.errorEvent("overloaded_error", `overloaded; key ${secret}`))]
    }],
    ["a non-JSON error event echoing the key", { description: "echo", writes: [`event: error\ndata: key ${secret}\n\n`] }]
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
      errors.push(yield* Anthropic.settings({ apiKey, baseUrl: `not a url ${secret}` }).pipe(Effect.flip))
      const server = yield* FakeServer.make(Fixture.load("text"))
      const invalid = yield* observed(
        Model.use((model) => run(model.stream(request("hi", { providerOptions: { anthropic: { thinking: secret } } })))).pipe(
          Effect.provide(modelLayer(server.url))
        )
      )
      errors.push(invalid.failure)

      expect(errors.filter((e) => e === undefined)).toStrictEqual([])
      const encode = Schema.encodeUnknownSync(Schema.Union([LlmError.LlmError, AnthropicError.AnthropicConfigError]))
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
