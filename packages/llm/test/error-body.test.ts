/**
 * `AdapterSettings.readErrorBody`: an error response's body read within bounds — at most
 * `maxBytes`, each read waiting at most `idle` — so a proxy's endless page neither fills memory
 * nor holds the request, and a slow but live body is read whole.
 */
import { AdapterSettings } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"

const bytes = (text: string) => new TextEncoder().encode(text)

describe("AdapterSettings.readErrorBody", () => {
  it.effect("reads at most maxBytes of a body that never ends, and stops reading", () =>
    Effect.gen(function*() {
      let pulled = 0
      const endless = Stream.fromEffectRepeat(Effect.sync(() => {
        pulled++
        return bytes("0123456789")
      }))
      const text = yield* AdapterSettings.readErrorBody(endless, Duration.seconds(60), 25)
      expect(text).toBe("0123456789012345678901234")
      expect(pulled).toBe(3)
    }))

  it.effect("waits idle per read, not for the whole body: a slow body is read whole, a stalled one ends with what came", () =>
    Effect.gen(function*() {
      const piece = (text: string) => Stream.fromEffect(Effect.as(Effect.sleep("3 seconds"), bytes(text)))
      const slow = Stream.concat(Stream.concat(piece(`{"error":`), piece(`{"code":"insufficient_quota"`)), piece("}}"))
      const reading = yield* Effect.forkChild(AdapterSettings.readErrorBody(slow, Duration.seconds(4)), { startImmediately: true })
      // a read at a time: each piece comes 3 seconds after the last, within the 4 of the idle timeout
      for (let i = 0; i < 3; i++) yield* TestClock.adjust("3 seconds")
      expect(yield* Fiber.join(reading)).toBe(`{"error":{"code":"insufficient_quota"}}`)

      const stalled = Stream.concat(Stream.succeed(bytes("upstream ")), Stream.never)
      const waiting = yield* Effect.forkChild(AdapterSettings.readErrorBody(stalled, Duration.seconds(4)), { startImmediately: true })
      yield* TestClock.adjust("4 seconds")
      expect(yield* Fiber.join(waiting)).toBe("upstream ")
    }))

  it.effect("keeps what was read before a failure, and reads bad UTF-8 as U+FFFD", () =>
    Effect.gen(function*() {
      const failing = Stream.concat(Stream.succeed(Uint8Array.of(0x6f, 0x6b, 0xff)), Stream.fail(new Error("reset")))
      expect(yield* AdapterSettings.readErrorBody(failing, Duration.infinity)).toBe("ok\uFFFD")
    }))
})
