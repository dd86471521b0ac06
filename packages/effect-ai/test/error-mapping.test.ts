import { ErrorMapping } from "@dsh/effect-ai"
import { LlmError } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Stream } from "effect"
import { AiError } from "effect/ai"
import { failureOf } from "./util.ts"

const http = (status: number) => ({ response: { status, headers: {} } })

interface Row {
  readonly reason: AiError.AiErrorReason
  readonly tag: LlmError.LlmError["_tag"]
  readonly fields?: Record<string, unknown>
}

// one row per reason effect/ai defines (the test below checks none is missing)
const rows: ReadonlyArray<Row> = [
  {
    reason: new AiError.RateLimitError({ retryAfter: Duration.millis(1500), http: http(429) }),
    tag: "LlmRateLimitError",
    fields: { retryAfterMillis: 1500 }
  },
  { reason: new AiError.QuotaExhaustedError({ http: http(429) }), tag: "LlmAuthError", fields: { status: 429 } },
  {
    reason: new AiError.AuthenticationError({ kind: "InvalidKey", http: http(401) }),
    tag: "LlmAuthError",
    fields: { status: 401 }
  },
  {
    reason: new AiError.ContentPolicyError({ description: "flagged", http: http(400) }),
    tag: "LlmInvalidRequestError",
    fields: { status: 400 }
  },
  {
    reason: new AiError.InvalidRequestError({ parameter: "temperature", description: "out of range", http: http(400) }),
    tag: "LlmInvalidRequestError",
    fields: { status: 400 }
  },
  { reason: new AiError.InvalidResponseError({ description: "not JSON" }), tag: "LlmProtocolError" },
  {
    reason: new AiError.InternalProviderError({ description: "overloaded", http: http(503) }),
    tag: "LlmServerError",
    fields: { status: 503 }
  },
  {
    reason: new AiError.NetworkError({ reason: "TransportError", method: "POST", url: "http://127.0.0.1/x" }),
    tag: "LlmTransportError"
  },
  { reason: new AiError.InvalidOutputError({ description: "bad part" }), tag: "LlmProtocolError" },
  { reason: new AiError.StructuredOutputError({ description: "bad object", responseText: "{" }), tag: "LlmProtocolError" },
  { reason: new AiError.UnsupportedSchemaError({ description: "no unions" }), tag: "LlmInvalidRequestError" },
  { reason: new AiError.UnknownError({ description: "?" }), tag: "LlmServerError" },
  { reason: new AiError.ToolNotFoundError({ toolName: "x", availableTools: ["bash"] }), tag: "LlmProtocolError" },
  {
    reason: new AiError.ToolParameterValidationError({ toolName: "bash", description: "not JSON" }),
    tag: "LlmProtocolError"
  },
  { reason: new AiError.InvalidToolResultError({ toolName: "bash", description: "bad" }), tag: "LlmProtocolError" },
  {
    reason: new AiError.ToolResultEncodingError({ toolName: "bash", toolResult: 1n, description: "bigint" }),
    tag: "LlmProtocolError"
  },
  {
    reason: new AiError.ToolConfigurationError({ toolName: "bash", description: "bad name" }),
    tag: "LlmInvalidRequestError"
  },
  { reason: new AiError.ToolkitRequiredError({ pendingApprovals: ["bash"] }), tag: "LlmInvalidRequestError" },
  { reason: new AiError.InvalidUserInputError({ description: "empty prompt" }), tag: "LlmInvalidRequestError" }
]

const codeOf: Record<LlmError.LlmError["_tag"], string> = {
  LlmAuthError: "LLM_AUTH",
  LlmRateLimitError: "LLM_RATE_LIMIT",
  LlmInvalidRequestError: "LLM_INVALID_REQUEST",
  LlmContextOverflowError: "LLM_CONTEXT_OVERFLOW",
  LlmServerError: "LLM_SERVER",
  LlmProtocolError: "LLM_PROTOCOL",
  LlmTransportError: "LLM_TRANSPORT"
}

describe("AiError → LlmError", () => {
  it("covers every reason effect/ai defines", () => {
    const defined = AiError.AiErrorReason.members.map((member) => member.identifier.replace("effect/ai/AiError/", ""))
    expect([...new Set(rows.map((row) => row.reason._tag))].sort()).toStrictEqual([...defined].sort())
  })

  for (const row of rows) {
    it(`${row.reason._tag} → ${row.tag}`, () => {
      const error = AiError.make({ module: "Provider", method: "stream", reason: row.reason })
      const mapped = ErrorMapping.fromAiError(error)
      expect(mapped).toBeInstanceOf(LlmError.classes.find((c) => c.name === row.tag)!)
      expect(mapped).toMatchObject({ _tag: row.tag, code: codeOf[row.tag], message: error.message, ...row.fields })
      expect(mapped.cause).toBe(error)
      // and a bare reason keeps its own message, with the reason as the cause
      const bare = ErrorMapping.fromReason(row.reason)
      expect(bare).toMatchObject({ _tag: row.tag, message: row.reason.message })
      expect(bare.cause).toBe(row.reason)
    })
  }

  it("the other network failures cannot be fixed by retrying: invalid request", () => {
    for (const reason of ["EncodeError", "InvalidUrlError"] as const) {
      const mapped = ErrorMapping.fromReason(new AiError.NetworkError({ reason, method: "POST", url: "nope" }))
      expect(mapped._tag).toBe("LlmInvalidRequestError")
      expect(LlmError.isRetryable(mapped)).toBe(false)
    }
  })

  it("an UnknownError with an HTTP status is mapped by the status", () => {
    const byStatus = (status: number) => ErrorMapping.fromReason(new AiError.UnknownError({ http: http(status) }))._tag
    expect([401, 403, 404, 429, 502].map(byStatus)).toStrictEqual([
      "LlmAuthError",
      "LlmAuthError",
      "LlmInvalidRequestError",
      "LlmRateLimitError",
      "LlmServerError"
    ])
  })

  it("an UnknownError 429 keeps the response's retry hint: Retry-After seconds or date, retry-after-ms", () => {
    const throttled = (headers: Record<string, string>, now?: number) =>
      ErrorMapping.fromReason(new AiError.UnknownError({ http: { response: { status: 429, headers } } }), undefined, undefined, now)
    expect(throttled({ "Retry-After": "7" })).toMatchObject({ _tag: "LlmRateLimitError", code: "LLM_RATE_LIMIT", retryAfterMillis: 7000 })
    expect(throttled({ "retry-after-ms": "1500" })).toMatchObject({ retryAfterMillis: 1500 })
    const now = Date.parse("Wed, 02 Dec 2026 12:00:00 GMT")
    expect(throttled({ "retry-after": "Wed, 02 Dec 2026 12:00:30 GMT" }, now)).toMatchObject({ retryAfterMillis: 30_000 })
    const unreadable = throttled({ "retry-after": "soon" })
    expect(unreadable._tag).toBe("LlmRateLimitError")
    expect(unreadable).not.toHaveProperty("retryAfterMillis")
  })

  it("a retry hint longer than a safe integer of milliseconds is bounded, not a defect of the mapping", () => {
    const forever = ErrorMapping.fromReason(new AiError.RateLimitError({ retryAfter: Duration.days(1e20) }))
    expect(forever).toMatchObject({ _tag: "LlmRateLimitError", code: "LLM_RATE_LIMIT", retryAfterMillis: Number.MAX_SAFE_INTEGER })
    const header = ErrorMapping.fromReason(
      new AiError.UnknownError({ http: { response: { status: 429, headers: { "retry-after": `1${"0".repeat(30)}` } } } })
    )
    expect(header).toMatchObject({ _tag: "LlmRateLimitError", retryAfterMillis: Number.MAX_SAFE_INTEGER })
  })

  it("a request refused for not fitting the context window is an overflow, with the counts its words name", () => {
    const said = "This model's maximum context length is 128000 tokens. However, you requested 131072 tokens."
    expect(ErrorMapping.fromReason(new AiError.InvalidRequestError({ description: said }))).toMatchObject({
      _tag: "LlmContextOverflowError",
      code: "LLM_CONTEXT_OVERFLOW",
      limit: 128_000,
      requested: 131_072
    })
    expect(ErrorMapping.fromReason(new AiError.UnknownError({ http: http(400), description: "prompt is too long: 210512 tokens > 200000 maximum" })))
      .toMatchObject({ _tag: "LlmContextOverflowError", limit: 200_000, requested: 210_512 })
    // other refusals stay invalid requests
    expect(ErrorMapping.fromReason(new AiError.InvalidRequestError({ description: "messages must not be empty" }))._tag).toBe("LlmInvalidRequestError")
    expect(ErrorMapping.fromStatus(413, "request entity too large")._tag).toBe("LlmInvalidRequestError")
  })

  it("a reason of a newer effect is a server error naming it", () => {
    const future = { ...new AiError.UnknownError({}), _tag: "TimeTravelError", message: "too late" }
    const mapped = ErrorMapping.fromReason(future as unknown as AiError.AiErrorReason, "too late")
    expect([mapped._tag, mapped.message]).toStrictEqual(["LlmServerError", "TimeTravelError: too late"])
  })

  it("a retry hint that is no number of milliseconds is dropped", () => {
    const mapped = ErrorMapping.fromReason(new AiError.RateLimitError({ retryAfter: Duration.infinity }))
    expect(mapped).not.toHaveProperty("retryAfterMillis")
  })

  it("a failure that is not an AiError broke the provider's contract: protocol error", () => {
    const mapped = ErrorMapping.fromFailure(new Error("boom"))
    expect([mapped._tag, mapped.message]).toStrictEqual([
      "LlmProtocolError",
      "the effect/ai model failed with something that is not an AiError: boom"
    ])
    expect(ErrorMapping.fromFailure(new AiError.QuotaExhaustedError({}))._tag).toBe("LlmAuthError")
  })

  it("an error part: an AiError or reason by the table, anything else a server error", () => {
    const rateLimited = AiError.make({ module: "M", method: "m", reason: new AiError.RateLimitError({}) })
    expect(ErrorMapping.fromErrorPart(rateLimited)._tag).toBe("LlmRateLimitError")
    expect(ErrorMapping.fromErrorPart(new AiError.InvalidRequestError({}))._tag).toBe("LlmInvalidRequestError")
    expect(ErrorMapping.fromErrorPart("overloaded").message).toBe("the provider reported an error in its stream: overloaded")
    expect(ErrorMapping.fromErrorPart({ type: "server_error" }).message).toBe(
      "the provider reported an error in its stream: {\"type\":\"server_error\"}"
    )
  })

  it("statuses of failures that carry nothing else", () => {
    const tags = [400, 401, 402, 403, 408, 429, 500, 529, 302].map((s) => ErrorMapping.fromStatus(s, "x")._tag)
    expect(tags).toStrictEqual([
      "LlmInvalidRequestError",
      "LlmAuthError",
      "LlmAuthError",
      "LlmAuthError",
      "LlmTransportError",
      "LlmRateLimitError",
      "LlmServerError",
      "LlmServerError",
      "LlmProtocolError"
    ])
  })

  it.effect("through the bridge: a model that fails before answering fails the stream with the mapped error", () =>
    Effect.gen(function*() {
      const { chunks, error } = yield* failureOf(
        Stream.fail(AiError.make({
          module: "OpenAiClient",
          method: "createResponseStream",
          reason: new AiError.AuthenticationError({ kind: "InvalidKey", http: http(401) })
        }))
      )
      expect(chunks).toStrictEqual([])
      expect(error).toMatchObject({ _tag: "LlmAuthError", code: "LLM_AUTH", status: 401 })
      expect(error.message).toContain("OpenAiClient.createResponseStream: InvalidKey")
    }))
})
