/**
 * Failures: every HTTP status and every Anthropic error type maps to the error class and
 * catalog code the table in `Failure` promises; retry-after is read in seconds and as a date;
 * a context overflow names its token counts; messages quote the request id, and never the key.
 */
import { Failure } from "@dsh/anthropic"
import { ErrorCode, LlmError } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Redacted } from "effect"

const apiKey = Redacted.make("sk-ant-secret")
const body = (type: string, message: string) => JSON.stringify({ type: "error", error: { type, message }, request_id: "req_1" })
const status = (code: number, text = body("api_error", "x"), headers: Record<string, string> = {}) =>
  Failure.fromStatus({ provider: "Anthropic", status: code, headers, body: text, now: 1_000_000, apiKey })

describe("Failure.fromStatus", () => {
  it("maps every status of the table", () => {
    const table: ReadonlyArray<readonly [number, string, string]> = [
      [400, "LlmInvalidRequestError", "LLM_INVALID_REQUEST"],
      [401, "LlmAuthError", "LLM_AUTH"],
      [402, "LlmAuthError", "LLM_AUTH"],
      [403, "LlmAuthError", "LLM_AUTH"],
      [404, "LlmInvalidRequestError", "LLM_INVALID_REQUEST"],
      [408, "LlmTransportError", "LLM_TRANSPORT"],
      [413, "LlmInvalidRequestError", "LLM_INVALID_REQUEST"],
      [429, "LlmRateLimitError", "LLM_RATE_LIMIT"],
      [500, "LlmServerError", "LLM_SERVER"],
      [504, "LlmServerError", "LLM_SERVER"],
      [529, "LlmServerError", "LLM_SERVER"],
      [302, "LlmProtocolError", "LLM_PROTOCOL"]
    ]
    for (const [code, tag, catalog] of table) {
      const error = status(code)
      expect([code, error._tag, error.code]).toStrictEqual([code, tag, catalog])
      expect(ErrorCode.isErrorCode(error.code)).toBe(true)
    }
    expect(LlmError.isRetryable(status(529))).toBe(true)
    expect(LlmError.isRetryable(status(400))).toBe(false)
  })

  it("quotes the error type, the provider's words and the request id; scrubs the key", () => {
    const error = status(400, body("invalid_request_error", "messages.0: bad sk-ant-secret"))
    expect(error.message).toBe(
      "Anthropic refused the request (HTTP 400 invalid_request_error): messages.0: bad [redacted] [request-id req_1]"
    )
    const html = status(503, "<html>busy</html>", { "request-id": "req_h" })
    // a proxy's page is named by what it says, not quoted as markup
    expect(html.message).toBe(
      `Anthropic failed (HTTP 503): an HTML page saying "busy" (not the API's JSON: is a proxy or the wrong base URL in the way?) [request-id req_h]`
    )
    expect(status(529, body("overloaded_error", "Overloaded")).message).toContain("is overloaded (HTTP 529 overloaded_error)")
  })

  it("reads retry-after as seconds, fractions and HTTP dates", () => {
    const wait = (value: string) => Failure.retryAfterMillis({ "retry-after": value }, Date.parse("2026-12-01T00:00:00Z"))
    expect(wait("2")).toBe(2000)
    expect(wait("0.25")).toBe(250)
    expect(wait("Tue, 01 Dec 2026 00:00:03 GMT")).toBe(3000)
    expect(wait("Mon, 30 Nov 2026 00:00:00 GMT")).toBe(0)
    expect(wait("soon")).toBeUndefined()
    expect(wait("")).toBeUndefined()
    const limited = status(429, body("rate_limit_error", "slow"), { "retry-after": "7" }) as LlmError.LlmRateLimitError
    expect(limited.retryAfterMillis).toBe(7000)
  })

  it("a prompt that does not fit is LLM_CONTEXT_OVERFLOW with its counts", () => {
    const tooLong = status(400, body("invalid_request_error", "prompt is too long: 212,345 tokens > 200000 maximum"))
    expect(tooLong).toBeInstanceOf(LlmError.LlmContextOverflowError)
    expect(tooLong).toMatchObject({ code: "LLM_CONTEXT_OVERFLOW", limit: 200_000, requested: 212_345 })
    const sum = status(
      400,
      body("invalid_request_error", "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length")
    )
    expect(sum).toMatchObject({ code: "LLM_CONTEXT_OVERFLOW", limit: 200_000, requested: 206_192 })
    expect(LlmError.isRetryable(sum)).toBe(false)
    // the body's bytes, not its tokens: an invalid request
    expect(status(413, body("request_too_large", "Request exceeds the maximum allowed number of bytes")).code).toBe("LLM_INVALID_REQUEST")
  })
})

describe("Failure.fromStreamError", () => {
  it("maps every error type the API documents, and reads others by their words", () => {
    const table: ReadonlyArray<readonly [unknown, string, number | undefined]> = [
      [{ type: "overloaded_error", message: "Overloaded" }, "LLM_SERVER", 529],
      [{ type: "api_error", message: "Internal" }, "LLM_SERVER", 500],
      [{ type: "timeout_error", message: "Timed out" }, "LLM_SERVER", 504],
      [{ type: "rate_limit_error", message: "slow" }, "LLM_RATE_LIMIT", undefined],
      [{ type: "invalid_request_error", message: "bad" }, "LLM_INVALID_REQUEST", 400],
      [{ type: "invalid_request_error", message: "prompt is too long: 5 tokens > 4 maximum" }, "LLM_CONTEXT_OVERFLOW", undefined],
      [{ type: "authentication_error", message: "who" }, "LLM_AUTH", 401],
      [{ type: "permission_error", message: "no" }, "LLM_AUTH", 403],
      [{ type: "billing_error", message: "pay" }, "LLM_AUTH", 402],
      [{ type: "not_found_error", message: "gone" }, "LLM_INVALID_REQUEST", 404],
      [{ type: "request_too_large", message: "big" }, "LLM_INVALID_REQUEST", 413],
      [{ type: "quota_exceeded", message: "?" }, "LLM_AUTH", undefined],
      [{ type: "capacity_unavailable", message: "?" }, "LLM_SERVER", undefined],
      [{ type: "something_new", message: "?" }, "LLM_SERVER", undefined],
      ["a bare string", "LLM_SERVER", undefined],
      [{ message: 5 }, "LLM_SERVER", undefined],
      [null, "LLM_SERVER", undefined]
    ]
    for (const [error, code, httpStatus] of table) {
      const mapped = Failure.fromStreamError("Anthropic", error)
      expect([error, mapped.code, (mapped as { status?: number }).status]).toStrictEqual([error, code, httpStatus])
    }
    expect(Failure.fromStreamError("Anthropic", { type: "overloaded_error", message: "Overloaded" }).message).toBe(
      "Anthropic reported an error in the stream (overloaded_error): Overloaded"
    )
  })

  it("reads a value whose getters throw, and bounds what it quotes", () => {
    const hostile = Object.defineProperty({}, "type", {
      enumerable: true,
      get() {
        throw new Error("gotcha")
      }
    })
    expect(Failure.fromStreamError("Anthropic", hostile).code).toBe("LLM_SERVER")
    const long = Failure.fromStreamError("Anthropic", { type: "x".repeat(10_000), message: "m".repeat(1_000_000) })
    expect(long.message.length).toBeLessThan(1_000)
  })
})
