/**
 * A playback HTTP server for testing model adapters: a real `node:http` server on 127.0.0.1
 * (an ephemeral port) that answers each request with a scripted response, write by write, and
 * records what it was sent — headers, chunked bodies, a stall or a dropped connection in the
 * middle of a stream, all over a real socket. Each wire's testing kit (`@dsh/openai/testing`,
 * `@dsh/anthropic/testing`) puts its own fixtures on it through a {@link Wire}: how a fixture
 * is played, and what answers a request it has no fixture for.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

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
 * beyond it gets the wire's refusal saying so), or a function of the request and its number.
 *
 * @since 0.1.0
 * @category models
 */
export type Respond<F> =
  | F
  | ReadonlyArray<F>
  | ((request: RecordedRequest, index: number) => F)

/**
 * One step of a response's body: bytes to write, a stall (the connection stays open, nothing
 * more is written), a disconnect (the socket is destroyed), or bytes repeated every
 * `everyMillis` ms until the client leaves (a `Repeat`).
 *
 * @since 0.1.0
 * @category models
 */
export type Step =
  | { readonly _tag: "Bytes"; readonly bytes: Uint8Array }
  | { readonly _tag: "Stall" }
  | { readonly _tag: "Disconnect" }
  | { readonly _tag: "Repeat"; readonly bytes: Uint8Array; readonly everyMillis: number }

/**
 * A response as the server plays it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Script {
  /** Default 200. */
  readonly status?: number | undefined
  /** Added to the defaults: `text/event-stream` for a 2xx, `application/json` otherwise. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly steps: ReadonlyArray<Step>
}

/**
 * A step of a fixture's write, for the wires whose writes are strings or data, with the
 * markers `{ stall: true }`, `{ disconnect: true }` and `{ repeat, everyMillis? }` (every
 * {@link Repeat} 5 ms unless said): `bytes` encodes a write, `payload` what a `repeat` repeats.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stepOf = <W extends string | object, P>(
  write: W,
  encode: { readonly bytes: (write: W) => Uint8Array | undefined; readonly payload: (payload: P) => Uint8Array }
): Step => {
  if (typeof write === "object") {
    if ("stall" in write) return { _tag: "Stall" }
    if ("disconnect" in write) return { _tag: "Disconnect" }
    if ("repeat" in write) {
      const repeat = write as { readonly repeat: P; readonly everyMillis?: number }
      return { _tag: "Repeat", bytes: encode.payload(repeat.repeat), everyMillis: repeat.everyMillis ?? 5 }
    }
  }
  return { _tag: "Bytes", bytes: encode.bytes(write) ?? new Uint8Array() }
}

/**
 * A wire's fixtures on the server: how one is played, and the fixture that answers a request
 * the server cannot answer (no fixture left for it, a respond function that threw, or a fixture
 * it cannot play: not one of the wire's, a status or a header Node refuses).
 *
 * @since 0.1.0
 * @category models
 */
export interface Wire<F> {
  readonly script: (fixture: F) => Script
  readonly refusal: (message: string) => F
}

/**
 * The wire of a fixture format with a status, headers and a list of writes (strings or data,
 * and the markers {@link stepOf} knows): `writeBytes` encodes a write, `payloadText` what a
 * `repeat` repeats, `refusal` answers what the server cannot.
 *
 * @since 0.1.0
 * @category constructors
 */
export const wireOf = <
  W extends string | object,
  P,
  F extends { readonly status?: number; readonly headers?: Readonly<Record<string, string>>; readonly writes: ReadonlyArray<W> }
>(fixtures: {
  readonly writeBytes: (write: W) => Uint8Array | undefined
  readonly payloadText: (payload: P) => string
  readonly refusal: (message: string) => F
}): Wire<F> => {
  const encoder = new TextEncoder()
  const encode = { bytes: fixtures.writeBytes, payload: (payload: P) => encoder.encode(fixtures.payloadText(payload)) }
  return {
    script: (fixture) => ({ status: fixture.status, headers: fixture.headers, steps: fixture.writes.map((write) => stepOf(write, encode)) }),
    refusal: fixtures.refusal
  }
}

/**
 * @since 0.1.0
 * @category models
 */
export interface PlaybackServer {
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
export interface Running extends PlaybackServer {
  readonly close: () => Promise<void>
}

interface Slot {
  readonly log: { request: number; finished: boolean; closedEarly: boolean }
  readonly waiters: Set<() => void>
}

/** What one server holds while it runs. */
interface State {
  readonly requests: Array<RecordedRequest>
  readonly slots: Array<Slot>
  readonly requestWaiters: Set<() => void>
}

const pick = <F>(respond: Respond<F>, wire: Wire<F>, request: RecordedRequest, index: number): F => {
  if (typeof respond === "function") return (respond as (request: RecordedRequest, index: number) => F)(request, index)
  if (!Array.isArray(respond)) return respond as F
  const list = respond as ReadonlyArray<F>
  return list[index] ?? wire.refusal(`fake server: no fixture for request #${index} (it has ${list.length})`)
}

const defaultHeaders = (status: number): Record<string, string> =>
  status >= 200 && status <= 299
    ? { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" }
    : { "content-type": "application/json" }

const writeChunk = (res: Http.ServerResponse, bytes: Uint8Array) =>
  new Promise<void>((done) => {
    res.write(bytes, () => done())
  })

// Each write is its own chunk of the response; yielding between writes lets it leave as its
// own network packet rather than coalescing with the next.
const pause = (ms: number) =>
  new Promise<void>((done) => {
    if (ms > 0) setTimeout(done, ms)
    else setImmediate(done)
  })

const play = async (script: Script, res: Http.ServerResponse, slot: Slot): Promise<void> => {
  const status = script.status ?? 200
  res.writeHead(status, { ...defaultHeaders(status), ...script.headers })
  res.flushHeaders()
  const gone = () => res.destroyed || res.writableEnded
  for (const step of script.steps) {
    if (gone()) return
    switch (step._tag) {
      case "Stall":
        return
      case "Disconnect":
        res.socket?.destroy()
        return
      case "Repeat":
        while (!gone()) {
          await writeChunk(res, step.bytes)
          await pause(step.everyMillis)
        }
        return
      case "Bytes":
        if (step.bytes.length > 0) await writeChunk(res, step.bytes)
        await pause(0)
    }
  }
  if (gone()) return
  res.end(() => {
    slot.log.finished = true
  })
}

const record = (req: Http.IncomingMessage, body: string): RecordedRequest => {
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
  return { method: req.method ?? "", path: req.url ?? "", headers, body, json }
}

const answer = <F>(state: State, respond: Respond<F>, wire: Wire<F>) => (req: Http.IncomingMessage, res: Http.ServerResponse) => {
  const parts: Array<Buffer> = []
  req.on("data", (part: Buffer) => parts.push(part))
  req.on("end", () => {
    const recorded = record(req, Buffer.concat(parts).toString("utf8"))
    const index = state.requests.length
    const slot: Slot = { log: { request: index, finished: false, closedEarly: false }, waiters: new Set() }
    // the slot exists before anyone waiting for the request is woken
    state.slots.push(slot)
    state.requests.push(recorded)
    for (const wake of state.requestWaiters) wake()
    res.on("close", () => {
      if (!slot.log.finished && !res.writableFinished) slot.log.closedEarly = true
      for (const wake of slot.waiters) wake()
    })
    const script = scriptFor(respond, wire, recorded, index)
    play(script, res, slot).catch((error) => {
      // A fixture the server cannot send (a status out of range, a header Node refuses): its
      // refusal, while no byte has left; otherwise the response is cut where it failed.
      if (res.headersSent) return res.destroy()
      play(wire.script(wire.refusal(`fake server: fixture #${index} cannot be played: ${described(error)}`)), res, slot)
        .catch(() => res.destroy())
    })
  })
}

const described = (error: unknown): string => (error instanceof Error ? error.message : String(error))

// What answers a request: its fixture, or the wire's refusal saying why there is none (the
// respond function threw, or gave something the wire cannot play). Never a throw: it runs in
// the server's event handler, where one would be an uncaught exception and leave the client
// waiting for ever.
const scriptFor = <F>(respond: Respond<F>, wire: Wire<F>, request: RecordedRequest, index: number): Script => {
  let fixture: F
  try {
    fixture = pick(respond, wire, request, index)
  } catch (error) {
    return wire.script(wire.refusal(`fake server: ${described(error)}`))
  }
  try {
    return wire.script(fixture)
  } catch (error) {
    return wire.script(wire.refusal(`fake server: fixture #${index} cannot be played: ${described(error)}`))
  }
}

const awaitClosedEarly = (state: State) => (index: number, within = 2000) =>
  Effect.callback<void, string>((resume) => {
    const timer: { id?: ReturnType<typeof setTimeout> } = {}
    const check = () => {
      if (state.slots[index]?.log.closedEarly !== true) return false
      cleanup()
      resume(Effect.void)
      return true
    }
    const wake = () => void check()
    const cleanup = () => {
      if (timer.id !== undefined) clearTimeout(timer.id)
      for (const slot of state.slots) slot.waiters.delete(wake)
      state.requestWaiters.delete(attach)
    }
    // the response may not exist yet: attach to it when its request arrives
    const attach = () => {
      const slot = state.slots[index]
      if (slot === undefined) return
      slot.waiters.add(wake)
      check()
    }
    if (check()) return
    attach()
    state.requestWaiters.add(attach)
    timer.id = setTimeout(() => {
      cleanup()
      const slot = state.slots[index]
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

const awaitRequests = (state: State) => (count: number) =>
  Effect.callback<void>((resume) => {
    if (state.requests.length >= count) return resume(Effect.void)
    const wake = () => {
      if (state.requests.length < count) return
      state.requestWaiters.delete(wake)
      resume(Effect.void)
    }
    state.requestWaiters.add(wake)
    return Effect.sync(() => void state.requestWaiters.delete(wake))
  })

/**
 * Starts a server playing `respond` through `wire`; `close` stops it, dropping any connection
 * still open.
 *
 * @since 0.1.0
 * @category constructors
 */
export const start = <F>(respond: Respond<F>, wire: Wire<F>): Promise<Running> =>
  new Promise((resolve, reject) => {
    const state: State = { requests: [], slots: [], requestWaiters: new Set() }
    const server = Http.createServer(answer(state, respond, wire))
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        requests: () => state.requests.slice(),
        responses: () => state.slots.map((slot) => ({ ...slot.log })),
        awaitClosedEarly: awaitClosedEarly(state),
        awaitRequests: awaitRequests(state),
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
export const make = <F>(respond: Respond<F>, wire: Wire<F>): Effect.Effect<PlaybackServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => start(respond, wire)),
    (server) => Effect.promise(() => server.close())
  )
