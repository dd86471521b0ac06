/**
 * Every wire fixture, three ways: through the whole adapter against the fake server on
 * 127.0.0.1; through the decoder alone, one network write at a time; and through the decoder
 * one byte at a time (every possible split of every character, line and JSON value). Each way
 * must give what the fixture expects, and every answer must obey the chunk contract.
 */
import { Decoder } from "@dsh/anthropic"
import { Fixture } from "@dsh/anthropic/testing"
import { ChunkContract } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { mismatch, request, run, streamWith } from "./util.ts"

const all = Fixture.names().map((name) => ({ name, fixture: Fixture.load(name) }))
const expected = all.flatMap(({ fixture, name }) => fixture.expect === undefined ? [] : [{ name, fixture, expect: fixture.expect }])
// What only a socket can do: drop the connection, or hold it open.
const socketOnly = new Set(["disconnect", "stall"])

describe("wire fixtures", () => {
  it("cover the shapes the adapter must handle", () => {
    for (
      const name of [
        "text", "thinking-then-text", "thinking-signature-split", "redacted-thinking", "tool-use", "parallel-tool-use",
        "tool-use-no-input", "interleaved-thinking", "server-tool-use", "cache-write", "cache-read", "max-tokens",
        "stop-sequence", "refusal", "pause-turn", "keep-alive", "crlf", "split-utf8", "no-message-stop",
        "error-overloaded", "error-rate-limit", "400", "401", "429", "500", "529", "disconnect", "stall", "endless"
      ]
    ) expect(Fixture.names()).toContain(name)
    // every fixture but the endless one says what it must give
    expect(all.filter(({ fixture }) => fixture.expect === undefined).map(({ name }) => name)).toStrictEqual(["endless"])
  })

  describe("through the adapter and the fake server", () => {
    for (const { expect: wanted, name } of expected) {
      it.live(name, () =>
        Effect.gen(function*() {
          // a short idle timeout only where the server stalls on purpose: elsewhere a loaded
          // machine's pause between two writes must not count as a stall
          const idleTimeout = name === "stall" ? "150 millis" : "10 seconds"
          const { outcome, server } = yield* streamWith(Fixture.load(name), request("hi"), { idleTimeout })
          expect(mismatch(outcome, wanted)).toBeUndefined()
          if (outcome.failure === undefined) expect(ChunkContract.check(outcome.chunks)).toStrictEqual([])
          expect(server.requests().length).toBe(1)
          expect(server.requests()[0]?.path).toBe("/v1/messages")
        }))
    }
  })

  describe("through the decoder, write by write", () => {
    for (const { expect: wanted, fixture, name } of expected) {
      if (socketOnly.has(name) || (fixture.status ?? 200) !== 200) continue
      it.effect(name, () =>
        Effect.gen(function*() {
          const outcome = yield* run(Decoder.decode(Stream.fromIterable(Fixture.chunks(fixture))))
          expect(mismatch(outcome, wanted)).toBeUndefined()
        }))
    }
  })

  describe("through the decoder, byte by byte", () => {
    for (const { expect: wanted, fixture, name } of expected) {
      if (socketOnly.has(name) || (fixture.status ?? 200) !== 200) continue
      it.effect(name, () =>
        Effect.gen(function*() {
          const bytes = Array.from(Fixture.body(fixture), (b) => Uint8Array.of(b))
          const outcome = yield* run(Decoder.decode(Stream.fromIterable(bytes)))
          expect(mismatch(outcome, wanted)).toBeUndefined()
          if (outcome.failure === undefined) expect(ChunkContract.check(outcome.chunks)).toStrictEqual([])
        }))
    }
  })
})
