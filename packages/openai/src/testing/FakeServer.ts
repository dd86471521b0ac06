/**
 * A fake OpenAI-compatible server: a real `node:http` server on 127.0.0.1 (an ephemeral port)
 * that answers each request with a {@link Fixture.Fixture}, write by write, and records what
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
import { Effect, type Scope } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Fixture from "./Fixture.ts"

/**
 * A request as the server received it.
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordedRequest {
  readonly method: string
  /** The path and query, e.g. `/chat/completions`. */
  readonly path: string
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string>>
  /** The body as sent (bytes decoded as UTF-8). */
  readonly body: string
  /** The body parsed as JSON; `undefined` when it is not JSON. */
  readonly json: unknown
}

/**
 * What became of a response.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResponseLog {
  /** The number of the request it answered (from 0). */
  readonly request: number
  /** The server wrote every write of the fixture and ended the response. */
  readonly finished: boolean
  /** The connection closed before the server ended the response (the client left, or a `disconnect`). */
  readonly closedEarly: boolean
}

/**
 * How the server answers: one fixture for every request, a list answered in order (a request
 * beyond it gets a 400 saying so), or a function of the request and its number.
 *
 * @since 0.1.0
 * @category models
 */
export type Respond =
  | Fixture.Fixture
  | ReadonlyArray<Fixture.Fixture>
  | ((request: RecordedRequest, index: number) => Fixture.Fixture)

/**
 * @since 0.1.0
 * @category models
 */
export interface FakeServer {
  /** The base URL, `http://127.0.0.1:<port>` (no trailing slash). */
  readonly url: string
  /** The requests received so far, in order. */
  readonly requests: () => ReadonlyArray<RecordedRequest>
  /** The responses so far, in the order they started. */
  readonly responses: () => ReadonlyArray<ResponseLog>
  /**
   * Waits until the connection of the response to request `index` closed before the server
   * ended it; fails with a description if that has not happened within `within` milliseconds
   * (default 2000).
   */
  readonly awaitClosedEarly: (index: number, within?: number) => Effect.Effect<void, string>
  /** Waits until `count` requests have arrived. */
  readonly awaitRequests: (count: number) => Effect.Effect<void>
}

/**
 * A running server with a Promise-based stop, for code outside Effect (benchmarks, scripts).
 *
 * @since 0.1.0
 * @category models
 */
export interface Running extends FakeServer {
  readonly close: () => Promise<void>
}

const pick = (respond: Respond, request: RecordedRequest, index: number): Fixture.Fixture => {
  if (typeof respond === "function") return respond(request, index)
  if (!Array.isArray(respond)) return respond as Fixture.Fixture
  const list = respond as ReadonlyArray<Fixture.Fixture>
  return list[index] ?? Fixture.errorResponse(400, `fake server: no fixture for request #${index} (it has ${list.length})`)
}

const defaultHeaders = (status: number): Record<string, string> =>
  status >= 200 && status <= 299
    ? { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" }
    : { "content-type": "application/json" }

interface Slot {
  readonly log: { request: number; finished: boolean; closedEarly: boolean }
  readonly waiters: Set<() => void>
}

/**
 * Starts a server; `close` stops it, dropping any connection still open.
 *
 * @since 0.1.0
 * @category constructors
 */
export const start = (respond: Respond): Promise<Running> =>
  new Promise((resolve, reject) => {
    const requests: Array<RecordedRequest> = []
    const slots: Array<Slot> = []
    const requestWaiters = new Set<() => void>()

    const play = async (fixture: Fixture.Fixture, res: Http.ServerResponse, slot: Slot) => {
      const status = fixture.status ?? 200
      res.writeHead(status, { ...defaultHeaders(status), ...fixture.headers })
      res.flushHeaders()
      const gone = () => res.destroyed || res.writableEnded
      const write = (bytes: Uint8Array) =>
        new Promise<void>((done) => {
          res.write(bytes, () => done())
        })
      // Each write is its own chunk of the response; yielding between writes lets it leave
      // as its own network packet rather than coalescing with the next.
      const pause = (ms: number) =>
        new Promise<void>((done) => {
          if (ms > 0) setTimeout(done, ms)
          else setImmediate(done)
        })
      for (const item of fixture.writes) {
        if (gone()) return
        if (typeof item === "object" && "stall" in item) return
        if (typeof item === "object" && "disconnect" in item) {
          res.socket?.destroy()
          return
        }
        if (typeof item === "object" && "repeat" in item) {
          const bytes = new TextEncoder().encode(Fixture.payloadText(item.repeat))
          while (!gone()) {
            await write(bytes)
            await pause(item.everyMillis ?? 5)
          }
          return
        }
        const bytes = Fixture.writeBytes(item)
        if (bytes !== undefined) await write(bytes)
        await pause(0)
      }
      if (gone()) return
      res.end(() => {
        slot.log.finished = true
      })
    }

    const server = Http.createServer((req, res) => {
      const parts: Array<Buffer> = []
      req.on("data", (part: Buffer) => parts.push(part))
      req.on("end", () => {
        const body = Buffer.concat(parts).toString("utf8")
        let json: unknown
        try {
          json = JSON.parse(body)
        } catch {
          json = undefined
        }
        const headers: Record<string, string> = {}
        for (const [key, value] of Object.entries(req.headers)) {
          if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(", ") : value
        }
        const recorded: RecordedRequest = { method: req.method ?? "", path: req.url ?? "", headers, body, json }
        const index = requests.length
        const slot: Slot = { log: { request: index, finished: false, closedEarly: false }, waiters: new Set() }
        // the slot exists before anyone waiting for the request is woken
        slots.push(slot)
        requests.push(recorded)
        for (const wake of requestWaiters) wake()
        res.on("close", () => {
          if (!slot.log.finished && !res.writableFinished) slot.log.closedEarly = true
          for (const wake of slot.waiters) wake()
        })
        let fixture: Fixture.Fixture
        try {
          fixture = pick(respond, recorded, index)
        } catch (error) {
          fixture = Fixture.errorResponse(400, `fake server: ${(error as Error).message}`)
        }
        play(fixture, res, slot).catch(() => res.destroy())
      })
    })
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      const awaitClosedEarly = (index: number, within = 2000) =>
        Effect.callback<void, string>((resume) => {
          const timer: { id?: ReturnType<typeof setTimeout> } = {}
          const check = () => {
            const slot = slots[index]
            if (slot?.log.closedEarly === true) {
              cleanup()
              resume(Effect.void)
              return true
            }
            return false
          }
          const wake = () => void check()
          const cleanup = () => {
            if (timer.id !== undefined) clearTimeout(timer.id)
            for (const slot of slots) slot.waiters.delete(wake)
            requestWaiters.delete(attach)
          }
          // the response may not exist yet: attach to it when its request arrives
          const attach = () => {
            const slot = slots[index]
            if (slot === undefined) return
            slot.waiters.add(wake)
            check()
          }
          if (check()) return
          attach()
          requestWaiters.add(attach)
          timer.id = setTimeout(() => {
            cleanup()
            const slot = slots[index]
            resume(Effect.fail(
              slot === undefined
                ? `the server never received request #${index}`
                : slot.log.finished
                ? `the server finished response #${index}: the client never closed it early`
                : `the connection of response #${index} was still open ${within} ms later`
            ))
          }, within)
          return Effect.sync(cleanup)
        })
      const awaitRequests = (count: number) =>
        Effect.callback<void>((resume) => {
          if (requests.length >= count) return resume(Effect.void)
          const wake = () => {
            if (requests.length < count) return
            requestWaiters.delete(wake)
            resume(Effect.void)
          }
          requestWaiters.add(wake)
          return Effect.sync(() => void requestWaiters.delete(wake))
        })
      resolve({
        url: `http://127.0.0.1:${port}`,
        requests: () => requests.slice(),
        responses: () => slots.map((slot) => ({ ...slot.log })),
        awaitClosedEarly,
        awaitRequests,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })

/**
 * Starts a server for the current scope; closing the scope stops it and drops any connection
 * still open.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (respond: Respond): Effect.Effect<FakeServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => start(respond)),
    (server) => Effect.promise(() => server.close())
  )
