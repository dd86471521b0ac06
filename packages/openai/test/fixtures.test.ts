/**
 * Every wire fixture through the decoder alone, for each distinct set of decoding quirks the
 * shipped profiles have (where reasoning arrives, how cache hits are counted, how the end of a
 * stream is judged): one network write at a time, and one byte at a time (every possible split
 * of every character, line and JSON value). Each way must give what the fixture expects for
 * those quirks, and every answer must obey the chunk contract. (Through the whole adapter and
 * the fake server, every fixture runs in `conformance.test.ts`, for every profile.)
 */
import { Decoder, Profiles } from "@dsh/openai"
import { Fixture } from "@dsh/openai/testing"
import { ChunkContract } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { mismatch, quirksOf, run } from "./util.ts"

const all = Fixture.names().map((name) => ({ name, fixture: Fixture.load(name) }))
// What only a socket can do: drop the connection, or hold it open.
const socketOnly = new Set(["disconnect", "stall"])

const decoding = new Map<string, { readonly profiles: Array<string>; readonly quirks: ReturnType<typeof quirksOf> }>()
for (const profile of Profiles.names) {
  const quirks = quirksOf(profile)
  const key = JSON.stringify([quirks.reasoningField, quirks.cacheHits, quirks.streamEnd])
  const entry = decoding.get(key)
  if (entry === undefined) decoding.set(key, { profiles: [profile], quirks })
  else entry.profiles.push(profile)
}

describe("wire fixtures", () => {
  it("cover the shapes every OpenAI-compatible adapter must handle, in the servers' own formats", () => {
    for (
      const name of [
        "keep-alive", "crlf", "multi-line-data", "split-utf8", "usage-final", "no-done", "done-without-finish",
        "finish-reason-missing", "finish-reason-empty", "tool-call-late-name", "tool-call-split-name",
        "tool-call-index-reused", "tool-call-no-index", "parallel-tool-calls", "empty-arguments",
        "openai-parameterless-tool", "choice-no-index", "reasoning-both-fields", "ollama-reasoning", "vllm-reasoning",
        "llamacpp-text", "openrouter-reasoning", "401", "403-html", "404-endpoint", "openai-404-model",
        "ollama-404-model", "vllm-404-model", "429", "openrouter-429", "openai-429-quota", "500", "502-html",
        "503-html", "openrouter-502", "llamacpp-500", "ollama-error-string", "openai-400-context",
        "vllm-400-context", "llamacpp-400-context", "200-html", "200-json", "vllm-error-event",
        "vllm-error-object", "openrouter-error-midstream", "disconnect", "stall", "endless"
      ]
    ) expect(Fixture.names()).toContain(name)
    expect(all.filter(({ fixture, name }) => name !== "endless" && fixture.expect === undefined).map(({ name }) => name)).toStrictEqual([])
  })

  for (const { profiles, quirks } of decoding.values()) {
    const label = `${profiles.join(", ")} (reasoning ${quirks.reasoningField}, hits ${quirks.cacheHits}, ${quirks.streamEnd} end)`
    const cases = all.flatMap(({ fixture, name }) => {
      const wanted = Fixture.expectFor(fixture, quirks)
      return wanted === undefined || socketOnly.has(name) || (fixture.status ?? 200) !== 200 ? [] : [{ name, fixture, wanted }]
    })

    describe(`through the decoder, write by write: ${label}`, () => {
      for (const { fixture, name, wanted } of cases) {
        it.effect(name, () =>
          Effect.gen(function*() {
            const outcome = yield* run(Decoder.decode(Stream.fromIterable(Fixture.chunks(fixture)), { quirks }))
            expect(mismatch(outcome, wanted)).toBeUndefined()
          }))
      }
    })

    describe(`through the decoder, byte by byte: ${label}`, () => {
      for (const { fixture, name, wanted } of cases) {
        it.effect(name, () =>
          Effect.gen(function*() {
            const bytes = Array.from(Fixture.body(fixture), (b) => Uint8Array.of(b))
            const outcome = yield* run(Decoder.decode(Stream.fromIterable(bytes), { quirks }))
            expect(mismatch(outcome, wanted)).toBeUndefined()
            if (outcome.failure === undefined) expect(ChunkContract.check(outcome.chunks)).toStrictEqual([])
          }))
      }
    })
  }
})
