import { ErrorCode, HarnessError, LlmError, Middleware } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"

// What the docs promise about each class: its tag and whether retrying it unchanged may help
// (throttling, server and transport failures).
const expected: Record<string, { readonly retryable: boolean }> = {
  LlmAuthError: { retryable: false },
  LlmRateLimitError: { retryable: true },
  LlmInvalidRequestError: { retryable: false },
  LlmServerError: { retryable: true },
  LlmProtocolError: { retryable: false },
  LlmTransportError: { retryable: true },
  LlmContextOverflowError: { retryable: false }
}

type AnyLlmErrorClass = (typeof LlmError.classes)[number]

// The common constructor every class accepts (message and optional cause).
const construct = (C: AnyLlmErrorClass, props: { readonly message: string; readonly cause?: unknown }) =>
  new C(props)

const decodeLlmError = Schema.decodeUnknownSync(LlmError.LlmError)
const encodeLlmError = Schema.encodeSync(LlmError.LlmError)
const viaJson = (e: LlmError.LlmError): LlmError.LlmError =>
  decodeLlmError(JSON.parse(JSON.stringify(encodeLlmError(e))))

describe("LlmError classes", () => {
  it("the classes are the seven documented ones, each once", () => {
    expect(LlmError.classes.map((C) => C.name).sort()).toStrictEqual(Object.keys(expected).sort())
  })

  for (const C of LlmError.classes) {
    const code = C.fields.code.schema.literal

    describe(C.name, () => {
      it("constructs with a message, its tag and its catalog code, and is an Error", () => {
        const e = construct(C, { message: "it broke" })
        expect(e.message).toBe("it broke")
        expect(e._tag).toBe(C.name)
        expect(e.code).toBe(code)
        expect(ErrorCode.codes).toContain(e.code)
        // the catalog names the class that raises the code
        expect(ErrorCode.catalog[code].raisedBy).toContain(`(${C.name})`)
        expect(e).toBeInstanceOf(Error)
        expect(e).toBeInstanceOf(C)
        expect("cause" in e).toBe(false)
      })

      it("preserves its cause as the native Error cause", () => {
        const root = new Error("ECONNRESET")
        const e = construct(C, { message: "with cause", cause: root })
        expect(e.cause).toBe(root)
      })

      it("encodes to JSON and decodes back through the LlmError union", () => {
        const e = construct(C, { message: "over the wire" })
        const encoded = encodeLlmError(e)
        expect(encoded).toStrictEqual({ _tag: C.name, code, message: "over the wire" })
        const back = viaJson(e)
        expect(back).toBeInstanceOf(C)
        expect(back._tag).toBe(e._tag)
        expect(back.code).toBe(code)
        expect(back.message).toBe("over the wire")
      })

      it("a cause survives JSON as an Error with the same message", () => {
        const back = viaJson(construct(C, { message: "m", cause: new Error("root cause") }))
        expect(back.cause).toBeInstanceOf(Error)
        expect((back.cause as Error).message).toBe("root cause")
      })

      it("decoding rejects its tag with another code", () => {
        const otherCode = ErrorCode.codes.find((c) => c !== code)!
        expect(() => decodeLlmError({ _tag: C.name, code: otherCode, message: "m" })).toThrow()
        expect(() => decodeLlmError({ _tag: C.name, message: "m" })).toThrow()
        expect(decodeLlmError({ _tag: C.name, code, message: "m" })).toBeInstanceOf(C)
      })

      it("is a harness error whose info is its tag and code", () => {
        const e = construct(C, { message: "m" })
        expect(HarnessError.isHarnessError(e)).toBe(true)
        const info = HarnessError.info(e)
        expect(info).toStrictEqual({ tag: C.name, code })
        expect(Schema.decodeUnknownSync(HarnessError.ErrorInfo)(JSON.parse(JSON.stringify(info)))).toStrictEqual(info)
      })

      it(`isRetryable is ${expected[C.name]?.retryable}`, () => {
        expect(LlmError.isRetryable(construct(C, { message: "m" }))).toBe(expected[C.name]?.retryable)
      })

      it.effect("is yieldable as a typed failure", () =>
        Effect.gen(function*() {
          const e = construct(C, { message: "yielded" })
          const failed = yield* Effect.gen(function*() {
            return yield* e
          }).pipe(Effect.flip)
          expect(failed).toBe(e)
        }))
    })
  }

  it("keeps the extra fields through JSON", () => {
    const auth = viaJson(new LlmError.LlmAuthError({ message: "401", status: 401 }))
    expect(auth).toBeInstanceOf(LlmError.LlmAuthError)
    expect((auth as LlmError.LlmAuthError).status).toBe(401)
    const rate = viaJson(new LlmError.LlmRateLimitError({ message: "slow down", retryAfterMillis: 1500 }))
    expect((rate as LlmError.LlmRateLimitError).retryAfterMillis).toBe(1500)
    const server = viaJson(new LlmError.LlmServerError({ message: "bad gateway", status: 502 }))
    expect((server as LlmError.LlmServerError).status).toBe(502)
  })

  it("a retry hint past a safe integer is bounded to one, so the rate-limit error can hold it", () => {
    const huge = "1" + "0".repeat(30)
    for (const headers of [{ "retry-after": huge }, { "retry-after-ms": huge }]) {
      const wait = LlmError.retryAfterMillis(headers, 0)
      expect(wait).toBe(Number.MAX_SAFE_INTEGER)
      expect(new LlmError.LlmRateLimitError({ message: "429", retryAfterMillis: wait! }).retryAfterMillis).toBe(wait)
    }
    expect(LlmError.retryAfterMillis({ "retry-after": "1.2" }, 0)).toBe(1200)
    expect(LlmError.retryAfterMillis({ "retry-after-ms": "0.4" }, 0)).toBe(1)
    expect([Infinity, -5, NaN, 2.1].map(LlmError.boundedWait)).toStrictEqual([Number.MAX_SAFE_INTEGER, 0, 0, 3])
  })

  it("rejects invalid extra fields", () => {
    expect(() => new LlmError.LlmRateLimitError({ message: "m", retryAfterMillis: -1 })).toThrow()
    expect(() => decodeLlmError({ _tag: "LlmRateLimitError", code: "LLM_RATE_LIMIT", message: "m", retryAfterMillis: 1.5 }))
      .toThrow()
    expect(() => decodeLlmError({ _tag: "LlmAuthError", code: "LLM_AUTH", message: "m", status: "401" })).toThrow()
    expect(() => decodeLlmError({ _tag: "LlmUnknownError", code: "LLM_AUTH", message: "m" })).toThrow()
    expect(() => decodeLlmError({ _tag: "LlmAuthError", code: "LLM_AUTH" })).toThrow()
  })

  it.effect("catchTag tells the classes apart", () =>
    Effect.gen(function*() {
      const fail = (e: LlmError.LlmError): Effect.Effect<string, LlmError.LlmError> => Effect.fail(e)
      const handled = yield* fail(new LlmError.LlmRateLimitError({ message: "429", retryAfterMillis: 10 })).pipe(
        Effect.catchTag("LlmRateLimitError", (e) => Effect.succeed(`retry in ${e.retryAfterMillis}`)),
        Effect.catchTag("LlmAuthError", () => Effect.succeed("auth"))
      )
      expect(handled).toBe("retry in 10")
    }))
})

describe("HarnessError", () => {
  it("isHarnessError accepts any object with string _tag, code and message", () => {
    expect(HarnessError.isHarnessError({ _tag: "X", code: "Y", message: "m" })).toBe(true)
    expect(HarnessError.isHarnessError(new Middleware.MiddlewareError({ middleware: "m", message: "x" }))).toBe(true)
  })

  it("isHarnessError rejects everything else", () => {
    for (
      const u of [
        null,
        undefined,
        "LlmAuthError",
        42,
        new Error("plain"),
        { _tag: "X", message: "m" },
        { _tag: "X", code: "Y" },
        { code: "Y", message: "m" },
        { _tag: 1, code: "Y", message: "m" },
        { _tag: "X", code: 2, message: "m" },
        { _tag: "X", code: "Y", message: null }
      ]
    ) {
      expect(HarnessError.isHarnessError(u), JSON.stringify(u) ?? String(u)).toBe(false)
    }
  })

  it("fields builds a class of another package with its code filled in", () => {
    class NoModel extends Schema.TaggedError<NoModel>()("NoModelError", {
      ...HarnessError.fields("NO_MODEL"),
      model: Schema.String
    }) {}
    const e = new NoModel({ message: "no adapter serves gpt-9", model: "gpt-9" })
    expect(e.code).toBe("NO_MODEL")
    expect(NoModel.fields.code.schema.literal).toBe("NO_MODEL")
    expect(HarnessError.info(e)).toStrictEqual({ tag: "NoModelError", code: "NO_MODEL" })
    expect(HarnessError.isHarnessError(e)).toBe(true)
  })
})

describe("ErrorCode", () => {
  const accepts = (u: unknown) => Schema.decodeUnknownOption(ErrorCode.ErrorCode)(u)._tag === "Some"

  it("accepts every catalog code", () => {
    const keys = Object.keys(ErrorCode.catalog)
    expect(keys.length).toBeGreaterThan(0)
    for (const code of keys) expect(accepts(code), code).toBe(true)
    expect([...ErrorCode.codes].sort()).toStrictEqual([...keys].sort())
  })

  it("rejects anything else", () => {
    for (const u of ["NOPE", "llm_auth", "LLM_AUTH ", " LLM_AUTH", "", "LlmAuthError", 1, null, undefined, { code: "LLM_AUTH" }]) {
      expect(accepts(u), String(u)).toBe(false)
    }
  })

  it("every catalog entry has a meaning and names who raises it; codes are SCREAMING_SNAKE_CASE", () => {
    for (const [code, entry] of Object.entries(ErrorCode.catalog)) {
      expect(code).toMatch(/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/)
      expect(entry.meaning.length).toBeGreaterThan(10)
      expect(entry.raisedBy).toMatch(/^(@dsh\/[a-z-]+|dsh) \(/)
    }
  })

  it("the MIDDLEWARE code belongs to MiddlewareError", () => {
    expect(Middleware.MiddlewareError.fields.code.schema.literal).toBe("MIDDLEWARE")
    expect(ErrorCode.catalog.MIDDLEWARE.raisedBy).toContain("(MiddlewareError)")
  })
})

describe("HarnessError.describe: any failure in words, never [object Object]", () => {
  it("takes the message of errors, harness errors, strings and plain objects", () => {
    expect(HarnessError.describe(new Error("disk full"))).toBe("disk full")
    expect(HarnessError.describe(new TypeError("x is not a function"))).toBe("TypeError: x is not a function")
    expect(HarnessError.describe(new Error(""))).toBe("(no message)")
    expect(HarnessError.describe(new Middleware.MiddlewareError({ middleware: "m", message: "it broke" }))).toBe("it broke")
    expect(HarnessError.describe("plain text")).toBe("plain text")
    expect(HarnessError.describe({ message: "quota exceeded", status: 429 })).toBe("quota exceeded")
  })

  it("renders other values as bounded JSON, cycles and throwing getters included", () => {
    const cyclic: Record<string, unknown> = { reason: "disk full" }
    cyclic["self"] = cyclic
    expect(HarnessError.describe(cyclic)).toBe(`{"reason":"disk full","self":[Circular]}`)
    // a Promise looks like an empty object, which would hide what was given (an async function's result)
    expect(HarnessError.describe(Promise.resolve(1))).toBe("a Promise")
    expect(HarnessError.describe({ pending: Promise.resolve(1) })).toBe(`{"pending":[Promise]}`)
    const cyclicMessage: Record<string, unknown> = { message: "with a cycle" }
    cyclicMessage["self"] = cyclicMessage
    expect(HarnessError.describe(cyclicMessage)).toBe("with a cycle")
    const hostile = {
      get message(): string {
        throw new Error("no")
      },
      code: 7
    }
    expect(HarnessError.describe(hostile)).toBe(`{"message":[unreadable],"code":7}`)
    expect(HarnessError.describe({ message: "" , n: 1 })).toBe(`{"message":"","n":1}`)
    expect(HarnessError.describe(undefined)).toBe("undefined")
    expect(HarnessError.describe(null)).toBe("null")
    expect(HarnessError.describe(42)).toBe("42")
    expect(HarnessError.describe(10n)).toBe("10n")
    expect(HarnessError.describe(Symbol("s"))).toBe("Symbol(s)")
    expect(HarnessError.describe([1, { a: [2] }])).toBe(`[1,{"a":[2]}]`)
    const proxy = new Proxy({}, {
      get: () => {
        throw new Error("trap")
      },
      has: () => {
        throw new Error("trap")
      },
      ownKeys: () => {
        throw new Error("trap")
      }
    })
    expect(HarnessError.describe(proxy)).toBe("[an unreadable value]")
  })

  it("bounds deep and large values", () => {
    let deep: unknown = "bottom"
    for (let i = 0; i < 100_000; i++) deep = { next: deep }
    expect(HarnessError.describe(deep)).toBe(`{"next":{"next":{"next":{"next":{"next":{"next":{…}}}}}}}`)
    const wide = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, "x".repeat(300)]))
    const text = HarnessError.describe(wide)
    expect(text.length).toBeLessThan(HarnessError.describeLimit + 40)
    expect(text).toMatch(/… \(\d+ characters\)$/)
    expect(HarnessError.describe({ message: "m".repeat(5000) })).toMatch(/^m{2000}… \(5000 characters\)$/)
  })
})

describe("ErrorCode.isErrorCode", () => {
  it("tells catalog codes from others", () => {
    expect(ErrorCode.isErrorCode("LLM_SERVER")).toBe(true)
    expect(ErrorCode.isErrorCode("upstream_overloaded")).toBe(false)
    expect(ErrorCode.isErrorCode("toString")).toBe(false)
    expect(ErrorCode.isErrorCode(3)).toBe(false)
  })
})

describe("LlmError.scrubKey", () => {
  const key = "sk-proj-abcdEFGH1234567890"

  it("replaces a real key wherever it is written, inside words and URL-encoded too", () => {
    expect(LlmError.scrubKey(`authorization=Bearer%20${key}`, key)).toBe("authorization=Bearer%20[redacted]")
    expect(LlmError.scrubKey(`"bad line \\n${key}"`, key)).toBe(`"bad line \\n[redacted]"`)
    expect(LlmError.scrubKey(`${key}-expired, ${key}_revoked, x${key}${key}`, key))
      .toBe("[redacted]-expired, [redacted]_revoked, x[redacted][redacted]")
    const special = "sk+live/0123456789=="
    expect(LlmError.scrubKey(`key=${encodeURIComponent(special)}&k2=${special}`, special)).toBe("key=[redacted]&k2=[redacted]")
  })

  it("replaces a short placeholder key only where it stands on its own", () => {
    expect(LlmError.scrubKey("maximum context length is 163840 tokens; the key k was refused", "k"))
      .toBe("maximum context length is 163840 tokens; the key [redacted] was refused")
    expect(LlmError.scrubKey("EMPTYING the key EMPTY", "EMPTY")).toBe("EMPTYING the key [redacted]")
    expect(LlmError.scrubKey("nothing to hide", "")).toBe("nothing to hide")
  })
})
