import * as PlaybackServer from "@dsh/model/PlaybackServer"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"

// A wire of the shape the kits use: a status, headers and string writes; its refusal a 500
// whose JSON body carries the message.
interface Fixture {
  readonly status?: number
  readonly headers?: Readonly<Record<string, string>>
  readonly writes: ReadonlyArray<string>
}
const encoder = new TextEncoder()
const wire = PlaybackServer.wireOf<string, string, Fixture>({
  writeBytes: (write) => encoder.encode(write),
  payloadText: (payload) => payload,
  refusal: (message) => ({ status: 500, headers: { "content-type": "application/json" }, writes: [JSON.stringify({ error: message })] })
})

const answer = (respond: PlaybackServer.Respond<Fixture>) =>
  Effect.gen(function*() {
    const server = yield* PlaybackServer.make(respond, wire)
    const response = yield* Effect.promise(() => fetch(`${server.url}/v1`, { method: "POST", body: "{}" }))
    const body = yield* Effect.promise(() => response.text())
    return { status: response.status, body, responses: server.responses() }
  }).pipe(Effect.scoped)

describe("PlaybackServer: fixtures it cannot play", () => {
  it.live("plays its fixtures write by write", () =>
    Effect.gen(function*() {
      const { body, responses, status } = yield* answer({ writes: ["data: 1\n\n", "data: 2\n\n"] })
      expect([status, body]).toStrictEqual([200, "data: 1\n\ndata: 2\n\n"])
      expect(responses).toStrictEqual([{ request: 0, finished: true, closedEarly: false }])
    }))

  it.live("a respond function that throws anything, or gives what the wire cannot play, is answered with the wire's refusal, never an uncaught exception", () =>
    Effect.gen(function*() {
      const refused = (message: string) => ({ status: 500, body: JSON.stringify({ error: message }) })
      const strip = ({ body, status }: { readonly status: number; readonly body: string }) => ({ status, body })
      expect(strip(yield* answer(() => {
        throw "no such case"
      }))).toStrictEqual(refused("fake server: no such case"))
      expect(strip(yield* answer(() => undefined as unknown as Fixture))).toStrictEqual(
        refused("fake server: fixture #0 cannot be played: Cannot read properties of undefined (reading 'status')")
      )
      expect(strip(yield* answer({ status: 99, writes: ["x"] }))).toStrictEqual(
        refused("fake server: fixture #0 cannot be played: Invalid status code: 99")
      )
    }))
})
