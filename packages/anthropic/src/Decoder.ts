/**
 * Decoding: the bytes of a streamed Messages response to dsh stream chunks, in one synchronous
 * stage.
 *
 * bytes → UTF-8 text (a streaming `TextDecoder`, so a character split across network reads is
 * joined; invalid UTF-8 is an error, not a replacement character) → Server-Sent Events (LF, CRLF
 * or CR line ends, comments, multi-line `data:`, events split anywhere; `@dsh/llm`'s `Sse`
 * parser, which is faster than `effect/encoding`'s) → each event's `data` parsed as JSON → the
 * {@link Translate} state machine, which checks each event's shape (`Wire`) and turns it into
 * chunks.
 *
 * One stage does all the work of a network read, wired into the stream with
 * `Stream.transformPull`: cheaper than a pipeline of per-event stream stages, and it lets the
 * stream end at `message_stop` without waiting for the server to close the connection. The
 * event's `event:` name is not needed (the JSON's `type` says the same), except that an
 * `event: error` whose data is not JSON still reports the error it carries.
 *
 * An `error` event — or a body that is no event stream but Anthropic's error JSON
 * (`{"type": "error", "error": {…}}`, which proxies send with a 200) — fails with the `LlmError`
 * its type means (`Failure.fromStreamError`: `overloaded_error` → `LlmServerError`,
 * `rate_limit_error` → `LlmRateLimitError`, …).
 * Everything else that goes wrong is an `LlmProtocolError`: `data` that is not a JSON object,
 * invalid UTF-8, an event over the size limit, the bytes ending before `message_stop` (the
 * message says how far the answer got), and what the translator refuses.
 *
 * Decoding is total: no input makes it throw or die, whatever its nesting, size or encoding
 * (every quoted piece of the response is cut short), and should some step throw anyway, the
 * response fails with `LlmProtocolError`.
 *
 * @since 0.1.0
 */
import { ByteDecoder, HarnessError, LlmError, Sse, type StreamChunk } from "@dsh/llm"
import * as Stream from "effect/Stream"
import { excerpt, fromStreamError } from "./Failure.ts"
import * as Translate from "./Translate.ts"

/**
 * A decoder for one response. Not shared between fibers.
 *
 * @since 0.1.0
 * @category models
 */
export interface Decoder {
  /** Decodes the next bytes of the body, appending the chunks they complete to `out`. */
  readonly feed: (bytes: Uint8Array, out: Array<StreamChunk.StreamChunk>) => LlmError.LlmError | undefined
  /**
   * The body ended: a failure unless `message_stop` was seen. A last event the server closed
   * the body right after (its data line ended, no blank line followed) is decoded first, its
   * chunks to `out`.
   */
  readonly end: (out?: Array<StreamChunk.StreamChunk>) => LlmError.LlmError | undefined
  /** Whether `message_stop` was seen (what follows it is ignored). */
  readonly done: () => boolean
}

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Names the server in error messages (default `"Anthropic"`). */
  readonly provider?: string
  /** The largest event, in UTF-16 code units (default 10 MiB, `Sse.defaultMaxEventSize`). */
  readonly maxEventSize?: number
}

/** How much of the body an "ended before message_stop" error quotes when no event was parsed. */
const headLength = 200
const bodyLength = 64 * 1024

/** The `error` of a body that is Anthropic's error JSON, `{"type": "error", "error": {…}}`. */
const errorBody = (body: string): unknown => {
  if (!body.trimStart().startsWith("{")) return undefined
  try {
    const json: unknown = JSON.parse(body)
    if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined
    const { type, error } = json as { readonly type?: unknown; readonly error?: unknown }
    return type === "error" && typeof error === "object" && error !== null ? error : undefined
  } catch {
    return undefined
  }
}

// What an `event: error` whose data is not JSON reports: the text itself.
/** The events whose data must be JSON: the unnamed ones and the Messages API's, `error` included. */
const readEvents: ReadonlySet<string> = new Set([
  "message",
  "message_start",
  "content_block_start",
  "content_block_delta",
  "content_block_stop",
  "message_delta",
  "message_stop",
  "error"
])

const parseOrText = (data: string): unknown => {
  try {
    return JSON.parse(data)
  } catch {
    return data
  }
}

/**
 * Creates a decoder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Decoder => {
  const provider = options.provider ?? "Anthropic"
  const translator = Translate.make(provider)
  const text = new TextDecoder("utf-8", { fatal: true })
  // where the events of the read being decoded go, and the first failure among them: the
  // parser calls back for each event it completes; after a failure or message_stop the events
  // that follow are ignored
  let output: Array<StreamChunk.StreamChunk> = []
  let failure: LlmError.LlmError | undefined
  let seen = 0
  // the start of a body in which no event came: an error as JSON (`{"type": "error", "error":
  // …}`, which a proxy sends with a 200), or what to quote of a body that is no event stream
  let body = ""

  const protocol = (message: string) => new LlmError.LlmProtocolError({ message: `${provider} stream: ${message}` })

  const event = (name: string, data: string): void => {
    if (failure !== undefined || translator.finished()) return
    seen++
    let json: unknown
    try {
      json = JSON.parse(data)
    } catch (error) {
      // an event of a name the API may add (or a proxy's heartbeat) may hold anything: its
      // data's `type` decides only when it is JSON
      if (!readEvents.has(name)) return
      failure = name === "error"
        ? fromStreamError(provider, parseOrText(data))
        : protocol(`an event's data is not JSON (${excerpt(HarnessError.describe(error), 200)}): ${JSON.stringify(excerpt(data, 120))}`)
      return
    }
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      if (!readEvents.has(name)) return
      // an `event: error` says the answer failed, whatever its data is
      failure = name === "error"
        ? fromStreamError(provider, json)
        : protocol(`an event's data is not a JSON object: ${JSON.stringify(excerpt(data, 120))}`)
      return
    }
    failure = translator.event(json as Readonly<Record<string, unknown>>, output)
  }

  const parser = Sse.make(event, options.maxEventSize)

  const feedUnsafe = (bytes: Uint8Array, out: Array<StreamChunk.StreamChunk>): LlmError.LlmError | undefined => {
    let chunk: string
    try {
      chunk = text.decode(bytes, { stream: true })
    } catch {
      return protocol("the response is not valid UTF-8")
    }
    if (seen === 0 && body.length < bodyLength) body += chunk.slice(0, bodyLength - body.length)
    output = out
    const tooLarge = parser.feed(chunk)
    if (failure !== undefined) return failure
    // an oversized event after some complete ones: those were decoded first
    return tooLarge === undefined || translator.finished() ? undefined : protocol(tooLarge)
  }

  const endUnsafe = (out: Array<StreamChunk.StreamChunk>): LlmError.LlmError | undefined => {
    try {
      text.decode()
    } catch {
      return protocol("the response ended inside a UTF-8 character")
    }
    output = out
    const tooLarge = parser.end()
    if (failure !== undefined) return failure
    if (translator.finished()) return undefined
    if (tooLarge !== undefined) return protocol(tooLarge)
    if (seen === 0) {
      const reported = errorBody(body)
      if (reported !== undefined) return fromStreamError(provider, reported)
      return protocol(
        body === ""
          ? "the response ended without any event (an empty body)"
          : `the response ended without any event; it began: ${JSON.stringify(body.slice(0, headLength))}`
      )
    }
    return protocol(
      translator.stopped()
        ? `the response ended after its stop_reason but before message_stop (${seen} events)`
        : `the response ended before message_stop, cut short after ${seen} events`
    )
  }

  // The server's bytes must never become a defect of the stream: should anything below throw
  // on an input nobody foresaw, the response fails as a protocol error, and the decoder stays
  // failed (its state is no longer trustworthy).
  let broken: LlmError.LlmError | undefined
  const guarded = (step: () => LlmError.LlmError | undefined): LlmError.LlmError | undefined => {
    if (broken !== undefined) return broken
    if (translator.finished()) return undefined
    try {
      const failure = step()
      if (failure !== undefined) broken = failure
      return failure
    } catch (thrown) {
      broken = protocol(`decoding the response failed: ${excerpt(HarnessError.describe(thrown), 300)}`)
      return broken
    }
  }

  return {
    feed: (bytes, out) => guarded(() => feedUnsafe(bytes, out)),
    end: (out = []) => guarded(() => endUnsafe(out)),
    done: translator.finished
  }
}

/**
 * Decodes a byte stream into chunks. The output ends at `message_stop` (the input is not
 * pulled further, so its resources are released); an input that ends before it fails with
 * `LlmProtocolError`. The input's own failures pass through.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = <E, R>(
  bytes: Stream.Stream<Uint8Array, E, R>,
  options: Options = {}
): Stream.Stream<StreamChunk.StreamChunk, E | LlmError.LlmError, R> => ByteDecoder.decode(bytes, () => make(options))
