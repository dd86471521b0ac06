/**
 * The pieces under the adapter, alone: the decoder's hand-written chunk check against the
 * Schema it stands in for, translation with each profile's quirks, and the error bodies the
 * servers send.
 */
import { Failure, Profile, Profiles, Translate, Wire } from "@dsh/openai"
import { Fixture } from "@dsh/openai/testing"
import { Assembler, type StreamChunk } from "@dsh/llm"
import { ChunkContract } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Redacted, Schema } from "effect"

describe("Wire.readChunk", () => {
  const decodeSchema = Schema.decodeUnknownResult(Wire.ChatChunk)
  const agree = (value: unknown) => {
    const schema = decodeSchema(value)._tag === "Success"
    const read = "chunk" in Wire.readChunk(value)
    return schema === read ? undefined : { value, schema, read }
  }

  // every data payload of every fixture, and variations of each that break one field
  const payloads: Array<unknown> = []
  for (const name of Fixture.names()) {
    for (const write of Fixture.load(name).writes) if (typeof write === "object" && "data" in write) payloads.push(write.data)
  }
  const replacements: ReadonlyArray<unknown> = [null, "x", "", -1, 1.5, 1e308, 0, true, [], {}, [1], { a: 1 }]
  const mutations = (value: unknown, depth = 0): Array<unknown> => {
    if (depth > 5 || value === null || typeof value !== "object") return []
    const out: Array<unknown> = []
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value)
    for (const [key, child] of entries) {
      for (const replacement of replacements) {
        out.push(Array.isArray(value) ? value.map((v, i) => (i === key ? replacement : v)) : { ...value, [key]: replacement })
      }
      for (const deeper of mutations(child, depth + 1)) {
        out.push(Array.isArray(value) ? value.map((v, i) => (i === key ? deeper : v)) : { ...value, [key]: deeper })
      }
    }
    return out
  }

  it("accepts exactly what the Schema accepts, on every fixture payload and on thousands of broken variants", () => {
    const variants = [...payloads, ...payloads.slice(0, 40).flatMap((p) => mutations(p)), 42, "s", null, [], [{}], { choices: {} }]
    expect(variants.length).toBeGreaterThan(5_000)
    expect(variants.map(agree).filter((d) => d !== undefined).slice(0, 3)).toStrictEqual([])
  })

  it("says what is wrong and where", () => {
    expect(Wire.readChunk({ choices: [{ index: "zero" }] })).toStrictEqual({
      wrong: "at the chunk[\"choices\"][0][\"index\"]: expected a non-negative integer, got \"zero\""
    })
    expect(Wire.readChunk({ usage: { prompt_tokens: 1, completion_tokens: -1 } })).toStrictEqual({
      wrong: "at the chunk[\"usage\"][\"completion_tokens\"]: expected a non-negative integer, got number -1"
    })
  })
})

describe("Translate with a profile's quirks", () => {
  const translate = (wire: ReadonlyArray<Wire.ChatChunk>, quirks: Profile.Quirks, end: "done" | "eof" = "done") => {
    const translator = Translate.make({ provider: "Test", quirks })
    const out: Array<StreamChunk.StreamChunk> = []
    for (const chunk of wire) {
      const failure = translator.chunk(chunk, out)
      if (failure !== undefined) return { out, failure }
    }
    if (end === "eof") return { out, failure: translator.endWithoutDone(out) ? undefined : "not accepted" }
    return { out, failure: translator.done(out) }
  }
  const delta = (d: Wire.Delta, finish: string | null = null): Wire.ChatChunk => ({ choices: [{ index: 0, delta: d, finish_reason: finish }] })

  it("reads the profile's reasoning field first, the other only when a delta lacks it", () => {
    const both = [delta({ reasoning: "A", reasoning_content: "B" }), delta({ reasoning_content: "C" }), delta({}, "stop")]
    const text = (quirks: Profile.Quirks) => Assembler.assemble(translate(both, quirks).out).message.content
    expect(text({ reasoningField: "reasoning" })).toStrictEqual([{ type: "reasoning", text: "AC" }])
    expect(text({ reasoningField: "reasoning_content" })).toStrictEqual([{ type: "reasoning", text: "BC" }])
    // `reasoning` that is not a string is not reasoning
    expect(text({ reasoningField: "reasoning", streamEnd: "strict" })).toStrictEqual([{ type: "reasoning", text: "AC" }])
    const object = translate([delta({ reasoning: { summary: "x" }, content: "hi" }), delta({}, "stop")], { reasoningField: "reasoning" })
    expect(Assembler.assemble(object.out).message.content).toStrictEqual([{ type: "text", text: "hi" }])
  })

  it("counts cache hits from the profile's spelling first, and cache writes from prompt_tokens_details", () => {
    const u: Wire.Usage = {
      prompt_tokens: 100,
      completion_tokens: 5,
      prompt_cache_hit_tokens: 60,
      prompt_cache_miss_tokens: 40,
      prompt_tokens_details: { cached_tokens: 50, cache_write_tokens: 20 }
    }
    expect(Translate.usage(u, "prompt_cache_hit_tokens")).toStrictEqual({ inputTokens: 40, outputTokens: 5, cacheReadTokens: 60, cacheWriteTokens: 20 })
    expect(Translate.usage(u, "prompt_tokens_details")).toStrictEqual({ inputTokens: 30, outputTokens: 5, cacheReadTokens: 50, cacheWriteTokens: 20 })
    expect(Translate.usage({ prompt_tokens: 9, completion_tokens: 1 })).toStrictEqual({ inputTokens: 9, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 })
    // a count the server leaves out is 0
    expect(Translate.usage({ completion_tokens: 4 })).toStrictEqual({ inputTokens: 0, outputTokens: 4, cacheReadTokens: 0, cacheWriteTokens: 0 })
    expect(Translate.usage({ prompt_tokens: 7, completion_tokens: null })).toStrictEqual({ inputTokens: 7, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 })
  })

  it("a lenient end accepts a [DONE] without finish_reason and a body without [DONE]; a strict one refuses both", () => {
    const call = delta({ tool_calls: [{ index: 0, id: "c", function: { name: "f", arguments: "{}" } }] })
    const lenientDone = translate([call], { streamEnd: "lenient" })
    expect(lenientDone.failure).toBeUndefined()
    expect(Assembler.assemble(lenientDone.out).finishReason).toStrictEqual({ kind: "tool-calls" })
    expect(ChunkContract.check(lenientDone.out)).toStrictEqual([])
    expect(translate([delta({ content: "x" })], { streamEnd: "lenient" }).out.at(-1)).toStrictEqual({ type: "finish", reason: { kind: "stop" } })
    expect(translate([call], { streamEnd: "strict" }).failure).toMatchObject({ _tag: "LlmProtocolError" })
    const usage: Wire.ChatChunk = { choices: [], usage: { prompt_tokens: 2, completion_tokens: 1 } }
    const eof = translate([delta({ content: "x" }, "stop"), usage], { streamEnd: "lenient" }, "eof")
    expect(eof.failure).toBeUndefined()
    expect(eof.out.slice(-2).map((c) => c.type)).toStrictEqual(["usage", "finish"])
    expect(translate([delta({ content: "x" }, "stop")], { streamEnd: "strict" }, "eof").failure).toBe("not accepted")
    // cut short before any finish_reason: never complete
    expect(translate([delta({ content: "x" })], { streamEnd: "lenient" }, "eof").failure).toBe("not accepted")
  })

  it("a usage without prompt_tokens is read, not a broken stream; a usage without any count is no report", () => {
    const partial = Wire.readChunk({ choices: [], usage: { completion_tokens: 3 } })
    if (!("chunk" in partial)) throw new Error(partial.wrong)
    const answer = translate([delta({ content: "x" }, "stop"), partial.chunk], {})
    expect(answer.failure).toBeUndefined()
    expect(answer.out.filter((c) => c.type === "usage")).toStrictEqual([
      { type: "usage", usage: { inputTokens: 0, outputTokens: 3, cacheReadTokens: 0, cacheWriteTokens: 0 } }
    ])
    const emptyLast = translate([delta({ content: "x" }, "stop"), { choices: [], usage: { prompt_tokens: 5, completion_tokens: 2 } }, { choices: [], usage: {} }], {})
    expect(emptyLast.out.filter((c) => c.type === "usage")).toStrictEqual([
      { type: "usage", usage: { inputTokens: 5, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 } }
    ])
    expect(translate([delta({ content: "x" }, "stop"), { choices: [], usage: {} }], {}).out.map((c) => c.type)).not.toContain("usage")
  })

  it("reads a first choice without an index as choice 0, and an error object as the error it is", () => {
    const { out } = translate([{ choices: [{ delta: { content: "a" } }] }, { choices: [{ delta: {}, finish_reason: "stop" }] }], {})
    expect(Assembler.assemble(out).message.content).toStrictEqual([{ type: "text", text: "a" }])
    const failed = translate([{ object: "error", choices: [] } as Wire.ChatChunk], {})
    expect(failed.failure).toMatchObject({ _tag: "LlmServerError" })
  })

  it("every shipped profile's quirks are what its documentation says", () => {
    const q = (name: Profiles.Name) => Profile.resolve(Profiles.all[name]).quirks
    expect(Profiles.names.map((name) => [name, q(name).reasoningField, q(name).reasoningPassback, q(name).cacheHits, q(name).streamEnd]))
      .toStrictEqual([
        ["openai", "reasoning_content", "none", "prompt_tokens_details", "strict"],
        ["deepseek", "reasoning_content", "reasoning_content", "prompt_cache_hit_tokens", "strict"],
        ["ollama", "reasoning", "none", "prompt_tokens_details", "lenient"],
        ["vllm", "reasoning", "reasoning", "prompt_tokens_details", "lenient"],
        ["llamacpp", "reasoning_content", "reasoning_content", "prompt_tokens_details", "lenient"],
        ["lmstudio", "reasoning", "none", "prompt_tokens_details", "lenient"],
        ["openrouter", "reasoning", "none", "prompt_tokens_details", "lenient"]
      ])
  })
})

describe("Failure: the error bodies servers send", () => {
  const status = (code: number, body: string, extra: { model?: string; headers?: Record<string, string> } = {}) =>
    Failure.fromStatus({ provider: "Server", status: code, headers: extra.headers ?? {}, body, now: 0, apiKey: undefined, ...(extra.model === undefined ? {} : { model: extra.model }) })

  it("reads each server's shape", () => {
    expect(Failure.reported(JSON.stringify({ error: "model 'x' not found" })).message).toBe("model 'x' not found")
    expect(Failure.reported(JSON.stringify({ object: "error", message: "m", type: "NotFoundError", code: 404 })))
      .toMatchObject({ message: "m", type: "NotFoundError", code: 404 })
    expect(Failure.reported(JSON.stringify({ error: { code: 502, message: "Provider returned error", metadata: { provider_name: "P", raw: "boom" } } })).message)
      .toBe("Provider returned error (provider P, said \"boom\")")
    expect(Failure.reported(JSON.stringify({ detail: [{ loc: ["body", "messages"], msg: "field required" }, { msg: "x" }] })).message)
      .toBe("field required (and 1 more)")
    expect(Failure.reported("<html><body><h1>Bad   Gateway</h1></body></html>").message).toContain("saying \"Bad Gateway\"")
    expect(Failure.reported("plain words").message).toBe("plain words")
    expect(Failure.reported("  ").message).toBeUndefined()
  })

  it("reads hostile HTML in time linear in its size", () => {
    for (const page of ["<html>" + "<".repeat(2_000_000), "<html><title" + " ".repeat(2_000_000), "<html>" + "<script".repeat(300_000)]) {
      const started = performance.now()
      const said = Failure.reported(page).message
      expect(performance.now() - started).toBeLessThan(1_000)
      expect(said!.length).toBeLessThan(400)
    }
  })

  it("names the model of a 404 about it, and the base URL otherwise; a quota 429 is an auth failure", () => {
    expect(status(404, JSON.stringify({ error: { message: "The model `a` does not exist" } }), { model: "a" }).message)
      .toBe("Server does not serve the model \"a\" (HTTP 404): The model `a` does not exist. Check the name against what the server lists at GET /models")
    expect(status(404, "Not Found", { model: "a" }).message).toContain("Check the base URL")
    expect(status(429, JSON.stringify({ error: { message: "quota", type: "insufficient_quota" } }))._tag).toBe("LlmAuthError")
    expect(status(429, "{}", { headers: { "retry-after": "3" } })).toMatchObject({ _tag: "LlmRateLimitError", retryAfterMillis: 3000 })
  })

  it("reads a context overflow from any server's words, with its counts", () => {
    expect(Failure.overflowCounts("prompt is too long: 210,512 tokens > 200000 maximum")).toStrictEqual({ limit: 200_000, requested: 210_512 })
    expect(Failure.overflowCounts("the model is loaded with context length of only 4096 tokens")).toStrictEqual({ limit: 4096 })
    expect(Failure.overflowCounts("This endpoint's maximum context length is 163840 tokens. However, you requested about 170000 tokens"))
      .toStrictEqual({ limit: 163_840, requested: 170_000 })
    expect(status(400, JSON.stringify({ error: { message: "prompt is too long: 210512 tokens > 200000 maximum" } })))
      .toMatchObject({ _tag: "LlmContextOverflowError", limit: 200_000, requested: 210_512 })
    expect(status(400, JSON.stringify({ error: { message: "messages: at least one message is required" } }))._tag).toBe("LlmInvalidRequestError")
    expect(Failure.fromStreamError("S", { message: "too long", code: "context_length_exceeded" })._tag).toBe("LlmContextOverflowError")
  })

  it("reads an error in the stream with an HTTP status as the status would read: overflow and exhausted quota included", () => {
    const overflow = "This endpoint's maximum context length is 163840 tokens. However, you requested about 200000 tokens"
    // OpenRouter's shape, in a 200 body or after streaming began
    expect(Failure.fromStreamError("S", { code: 400, message: overflow }))
      .toMatchObject({ _tag: "LlmContextOverflowError", code: "LLM_CONTEXT_OVERFLOW", limit: 163_840, requested: 200_000 })
    expect(Failure.fromStreamError("S", { status: 413, message: "prompt is too long: 210512 tokens > 200000 maximum" })._tag)
      .toBe("LlmContextOverflowError")
    expect(Failure.fromStreamError("S", { code: 400, message: "messages: at least one message is required" })._tag).toBe("LlmInvalidRequestError")
    expect(Failure.fromStreamError("S", { status: 429, code: "insufficient_quota", message: "You exceeded your current quota" })._tag)
      .toBe("LlmAuthError")
    expect(Failure.fromStreamError("S", { status: 429, message: "slow down" })._tag).toBe("LlmRateLimitError")
    // no code at all, but the words say it
    expect(Failure.fromStreamError("S", { message: overflow })._tag).toBe("LlmContextOverflowError")
    expect(Failure.fromStreamError("S", { message: "upstream failed" })._tag).toBe("LlmServerError")
  })

  it("scrubs the key where it stands on its own, not inside the words of a placeholder key's message", () => {
    const key = Redacted.make("sk-live-1234567890")
    expect(Failure.scrub("bad key sk-live-1234567890, or \"sk-live-1234567890\"", key)).toBe("bad key [redacted], or \"[redacted]\"")
    expect(Failure.scrub("maximum context length is 163840 tokens", Redacted.make("k"))).toBe("maximum context length is 163840 tokens")
    expect(Failure.scrub("the key k was refused", Redacted.make("k"))).toBe("the key [redacted] was refused")
    expect(Failure.scrub("ollama: key EMPTY", Redacted.make("EMPTY"))).toBe("ollama: key [redacted]")
    expect(Failure.scrub("EMPTYING", Redacted.make("EMPTY"))).toBe("EMPTYING")
  })
})
