/**
 * A fake OpenAI-compatible server: `@dsh/model`'s playback server (a real `node:http` server on
 * 127.0.0.1, an ephemeral port) with this wire's fixtures. It answers each request with a {@link Fixture.Fixture}, write by write, and records what
 * it was sent. Adapters are tested against it over a real socket — headers, chunked bodies,
 * connections dropped and held open — without any network beyond the loopback.
 *
 * It records every request (method, path, headers, body) and every response's fate: whether
 * the server finished it, or the client closed the connection first (which is how a test
 * proves that interrupting a stream closed its connection).
 *
 * @example
 * ```ts
 * import { FakeServer, Fixture } from "@dsh/openai/testing"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const server = yield* FakeServer.make([Fixture.load("500"), Fixture.load("text")])
 *   // point an adapter at server.url; the first request gets a 500, the second an answer
 *   const bodies = server.requests().map((r) => r.json)
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 0.1.0
 */
import * as PlaybackServer from "@dsh/model/PlaybackServer"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Fixture from "./Fixture.ts"

export type {
  /** @since 0.1.0 */
  PlaybackServer as FakeServer,
  /** @since 0.1.0 */
  RecordedRequest,
  /** @since 0.1.0 */
  ResponseLog,
  /** @since 0.1.0 */
  Running
} from "@dsh/model/PlaybackServer"

/**
 * How the server answers: one fixture for every request, a list answered in order (a request
 * beyond it gets a 400 saying so), or a function of the request and its number.
 *
 * @since 0.1.0
 * @category models
 */
export type Respond = PlaybackServer.Respond<Fixture.Fixture>

/** This wire's fixtures as the playback server plays them; a request it cannot answer gets a 400. */
const wire = PlaybackServer.wireOf({
  writeBytes: Fixture.writeBytes,
  payloadText: Fixture.payloadText,
  refusal: (message): Fixture.Fixture => Fixture.errorResponse(400, message)
})

/**
 * Starts a server; `close` stops it, dropping any connection still open.
 *
 * @since 0.1.0
 * @category constructors
 */
export const start = (respond: Respond): Promise<PlaybackServer.Running> => PlaybackServer.start(respond, wire)

/**
 * Starts a server for the current scope; closing the scope stops it and drops any connection
 * still open.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (respond: Respond): Effect.Effect<PlaybackServer.PlaybackServer, never, Scope.Scope> =>
  PlaybackServer.make(respond, wire)
