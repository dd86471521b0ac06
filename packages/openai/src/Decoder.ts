/**
 * Decoding: the bytes of a streamed response to dsh stream chunks, in one synchronous stage.
 *
 * bytes → UTF-8 text (a streaming `TextDecoder`, so a character split across network chunks
 * is joined; invalid UTF-8 is an error, not a replacement character) → Server-Sent Events
 * (comment lines such as `: keep-alive` or `: OPENROUTER PROCESSING`, CRLF or CR line endings,
 * multi-line `data:` fields, events split anywhere) → each event's `data` parsed as JSON and
 * checked against the `Wire.ChatChunk` shape (`Wire.readChunk`) → the {@link Translate} state
 * machine, with the quirks of the server's profile.
 *
 * The SSE parser is `@dsh/llm`'s `Sse`, held to the same answers as `effect/encoding`'s
 * `Sse.makeParser` by its tests and faster (it finds line ends with `indexOf`, and gives
 * `JSON.parse` flat slices rather than concatenated strings it must first copy); a `retry:`
 * field, which only concerns reconnecting `EventSource`s, is ignored rather than failing the
 * stream as `Sse.decode` does. One stage does all the work per network read, which is cheaper
 * than a pipeline of per-event stream stages (see `bench/decode.bench.ts`).
 *
 * The stream ends at `data: [DONE]`, without waiting for the server to close the connection.
 * An error the server reports in the stream (an `event: error`, an `{"error": …}` payload, an
 * error object in place of a chunk) fails with the `LlmError` its code means
 * (`Failure.fromStreamError`; `LlmServerError` unless the code says otherwise). A body that
 * ends without `[DONE]` fails with `LlmProtocolError` saying how far the response got — unless
 * the profile's end of stream is lenient and a `finish_reason` arrived, which makes the answer
 * complete. A body that is no event stream at all (an HTML page, a JSON document) says so.
 * Everything else that goes wrong is an `LlmProtocolError`: `data` that is not JSON or not a
 * chunk, invalid UTF-8, an event over the size limit, and what the translator refuses.
 *
 * Decoding is total: no input makes it throw or die, whatever its nesting, size or encoding
 * (nothing recurses over a decoded value, every quoted piece of the response is cut short),
 * and should some step throw anyway, the response fails with `LlmProtocolError`.
 *
 * @since 0.1.0
 */
import { ByteDecoder, HarnessError, LlmError, Sse, type StreamChunk } from "@dsh/llm"
import * as Predicate from "effect/Predicate"
import * as Stream from "effect/Stream"
import { excerpt, fromStreamError, reported as reportedBody } from "./Failure.ts"
import type * as Profile from "./Profile.ts"
import * as Translate from "./Translate.ts"
import * as Wire from "./Wire.ts"

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
   * The body ended: a failure unless `[DONE]` was seen, or (lenient end of stream) a
   * `finish_reason` was, in which case the last chunks (`usage`, `finish`) go to `out`. A last
   * event the server closed the body right after (its data line ended, no blank line followed)
   * is decoded first, its chunks to `out`.
   */
  readonly end: (out?: Array<StreamChunk.StreamChunk>) => LlmError.LlmError | undefined
  /** Whether the answer is complete: `[DONE]` was seen, or the body ended where a lenient end allows (what follows is ignored). */
  readonly done: () => boolean
}

// What an `event: error` reports: the `error` of `{"error": …}`, any other JSON as it is, else
// the text itself.
const reported = (data: string): unknown => {
  let json: unknown
  try {
    json = JSON.parse(data)
  } catch {
    return data
  }
  return Predicate.isObject(json) && json["error"] !== undefined && json["error"] !== null ? json["error"] : json
}

// An event the SSE parser completed: its name (`message` unless an `event:` field said
// otherwise) and its data.
interface Event {
  readonly event: string
  readonly data: string
}

/**
 * How much of the body is kept while no event has been parsed: enough to tell what a body
 * that is no event stream is (an HTML page's title, a JSON error), never more.
 */
const headLength = 64 * 1024

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Names the server in error messages (default `"OpenAI-compatible server"`). */
  readonly provider?: string
  /** The server's quirks (the defaults of `Profile` when omitted). */
  readonly quirks?: Profile.Quirks | Profile.ResolvedQuirks
  /** The largest event, in UTF-16 code units (default 10 MiB, `Sse.defaultMaxEventSize`). */
  readonly maxEventSize?: number
}

/**
 * Creates a decoder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Decoder => {
  const provider = options.provider ?? "OpenAI-compatible server"
  const translator = Translate.make(options.quirks === undefined ? { provider } : { provider, quirks: options.quirks })
  const text = new TextDecoder("utf-8", { fatal: true })
  // the events of the text being decoded, in order
  const events: Array<Event> = []
  const parser = Sse.make((event, data) => void events.push({ event, data }), options.maxEventSize)
  let finished = false
  let seen = 0
  let head = ""

  const protocol = (message: string) => new LlmError.LlmProtocolError({ message: `${provider} stream: ${message}` })

  const event = (ev: Event, out: Array<StreamChunk.StreamChunk>): LlmError.LlmError | undefined => {
    seen++
    // `[DONE]` with white space around it (a server's stray space) is still the end
    if (ev.data === "[DONE]" || (ev.data.length < 16 && ev.data.trim() === "[DONE]")) {
      finished = true
      return translator.done(out)
    }
    if (ev.event === "error") return fromStreamError(provider, reported(ev.data))
    // an empty `data:` is a keep-alive some servers send, not a chunk
    if (ev.data === "") return undefined
    let json: unknown
    try {
      json = JSON.parse(ev.data)
    } catch (error) {
      // an event a server named for itself (`event: ping`, `data: ping`) holds what it likes
      if (ev.event !== "message") return undefined
      return protocol(`an event's data is not JSON (${excerpt(HarnessError.describe(error), 200)}): ${JSON.stringify(excerpt(ev.data, 120))}`)
    }
    const read = Wire.readChunk(json)
    if ("wrong" in read) {
      return protocol(`an event is not a chat completion chunk (${excerpt(read.wrong, 300)}): ${JSON.stringify(excerpt(ev.data, 120))}`)
    }
    return translator.chunk(read.chunk, out)
  }

  const feedUnsafe = (bytes: Uint8Array, out: Array<StreamChunk.StreamChunk>): LlmError.LlmError | undefined => {
    let chunk: string
    try {
      chunk = text.decode(bytes, { stream: true })
    } catch {
      return protocol("the response is not valid UTF-8")
    }
    if (seen === 0 && head.length < headLength) head += chunk.slice(0, headLength - head.length)
    return parsed(parser.feed(chunk), out)
  }

  // The events the parser completed, decoded in order; after a failure or [DONE] the rest are dropped.
  const parsed = (tooLarge: string | undefined, out: Array<StreamChunk.StreamChunk>): LlmError.LlmError | undefined => {
    if (tooLarge !== undefined) {
      events.length = 0
      return protocol(tooLarge)
    }
    if (events.length === 0) return undefined
    for (let i = 0; i < events.length; i++) {
      const failure = event(events[i]!, out)
      if (failure !== undefined || finished) {
        events.length = 0
        return failure
      }
    }
    events.length = 0
    return undefined
  }

  // A body without any event: say what it was instead, since that is what tells a user what
  // to fix (an HTML page is a proxy or a wrong base URL; JSON is a server that ignored
  // `stream: true`, or an error it sent with status 200).
  const notAStream = (): LlmError.LlmError => {
    const trimmed = head.trim()
    if (trimmed === "") return protocol("the response ended without any event (an empty body)")
    if (trimmed.startsWith("{")) {
      let json: unknown
      try {
        json = JSON.parse(trimmed)
      } catch {
        json = undefined
      }
      const error = Predicate.isObject(json) ? json["error"] : undefined
      if (error !== undefined && error !== null) return fromStreamError(provider, error)
    }
    const said = reportedBody(trimmed).message
    const what = trimmed.startsWith("{") || trimmed.startsWith("[")
      ? "is JSON, not an event stream (does the server ignore stream: true?)"
      : "is not an event stream"
    return protocol(`the response ${what}; it began: ${JSON.stringify(excerpt(said ?? trimmed, 200))}`)
  }

  const endUnsafe = (out: Array<StreamChunk.StreamChunk>): LlmError.LlmError | undefined => {
    try {
      text.decode()
    } catch {
      return protocol("the response ended inside a UTF-8 character")
    }
    // the last event, when the server closed right after its data line (no blank line)
    const last = parsed(parser.end(), out)
    if (last !== undefined || finished) return last
    if (seen === 0) return notAStream()
    if (translator.endWithoutDone(out)) {
      finished = true
      return undefined
    }
    return protocol(
      translator.finished()
        ? `the response ended after its finish_reason but without [DONE] (${seen} events)`
        : `the response ended without [DONE], cut short after ${seen} events`
    )
  }

  // The server's bytes must never become a defect of the stream: should anything below throw
  // on an input nobody foresaw, the response fails as a protocol error, and the decoder stays
  // failed (its state is no longer trustworthy).
  let broken: LlmError.LlmError | undefined
  const guarded = (step: () => LlmError.LlmError | undefined): LlmError.LlmError | undefined => {
    if (broken !== undefined) return broken
    if (finished) return undefined
    try {
      return step()
    } catch (thrown) {
      broken = protocol(`decoding the response failed: ${HarnessError.describe(thrown)}`)
      return broken
    }
  }

  return {
    feed: (bytes, out) => guarded(() => feedUnsafe(bytes, out)),
    end: (out = []) => guarded(() => endUnsafe(out)),
    done: () => finished
  }
}

/**
 * Decodes a byte stream into chunks. The output ends at `[DONE]` (the input is not pulled
 * further, so its resources are released); an input that ends without it fails with
 * `LlmProtocolError` (unless a lenient end of stream accepts it). The input's own failures
 * pass through.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = <E, R>(
  bytes: Stream.Stream<Uint8Array, E, R>,
  options: Options = {}
): Stream.Stream<StreamChunk.StreamChunk, E | LlmError.LlmError, R> => ByteDecoder.decode(bytes, () => make(options))
