/**
 * Decoding: the bytes of a streamed response to dsh stream chunks, in one synchronous stage.
 *
 * bytes → UTF-8 text (a streaming `TextDecoder`, so a character split across network chunks
 * is joined; invalid UTF-8 is an error, not a replacement character) → Server-Sent Events
 * (`effect/encoding`'s SSE parser, `Sse.makeParser`: comment lines such as `: keep-alive`,
 * CRLF or CR line endings, multi-line `data:` fields, events split anywhere) → each event's
 * `data` parsed as JSON and decoded with the `Wire.ChatChunk` Schema → the {@link Translate}
 * state machine.
 *
 * It is the parser of `Sse.decode`, driven directly rather than through that channel, for two
 * reasons: the channel fails the stream on a `retry:` field (which only concerns reconnecting
 * `EventSource`s and is meaningless to a single POST), and one stage that does all the work
 * per network read is cheaper than a pipeline of per-event stream stages (in
 * `bench/decode.bench.ts`, `Sse.decode` + a Schema `mapEffect` per event takes ~40% longer
 * than this whole stage, translation included).
 *
 * The stream ends at `data: [DONE]`, without waiting for the server to close the connection.
 * An error the server reports in the stream (an `event: error`, or an `{"error": …}` payload)
 * fails with the `LlmError` its code means (`Failure.fromStreamError`; `LlmServerError` unless
 * the code says otherwise). Everything else that goes wrong is an `LlmProtocolError`: `data`
 * that is not JSON or not a chunk, invalid UTF-8, an event over the size limit, the bytes
 * ending without `[DONE]` (the message says how far the response got), and what the
 * translator refuses.
 *
 * Decoding is total: no input makes it throw or die, whatever its nesting, size or encoding
 * (nothing recurses over a decoded value, every quoted piece of the response is cut short),
 * and should some step throw anyway, the response fails with `LlmProtocolError`.
 *
 * @since 0.1.0
 */
import { HarnessError, LlmError, type StreamChunk } from "@dsh/llm"
import { Array as Arr, Cause, Effect, Predicate, Pull, Schema, Stream } from "effect"
import { Sse } from "effect/encoding"
import { excerpt, fromStreamError } from "./Failure.ts"
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
  /** The body ended: a failure unless `[DONE]` was seen. */
  readonly end: () => LlmError.LlmError | undefined
  /** Whether `[DONE]` was seen (what follows it is ignored). */
  readonly done: () => boolean
}

const decodeChunk = Schema.decodeUnknownResult(Wire.ChatChunk)

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

/** How much of the body an "ended without [DONE]" error quotes when no event was parsed. */
const headLength = 200

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Names the server in error messages (default `"DeepSeek"`). */
  readonly provider?: string
  /** The largest event, in UTF-16 code units (default 10 MiB, the SSE parser's). */
  readonly maxEventSize?: number
}

/**
 * Creates a decoder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Decoder => {
  const provider = options.provider ?? "DeepSeek"
  const translator = Translate.make(provider)
  const text = new TextDecoder("utf-8", { fatal: true })
  const events: Array<Sse.Event> = []
  const parser = Sse.makeParser((event) => {
    // `retry:` directives are for reconnecting EventSources; a POST has nothing to resume
    if (event._tag === "Event") events.push(event)
  }, options.maxEventSize === undefined ? undefined : { maxEventSize: options.maxEventSize })
  let finished = false
  let seen = 0
  let head = ""

  const protocol = (message: string) => new LlmError.LlmProtocolError({ message: `${provider} stream: ${message}` })

  const event = (ev: Sse.Event, out: Array<StreamChunk.StreamChunk>): LlmError.LlmError | undefined => {
    seen++
    if (ev.data === "[DONE]") {
      finished = true
      return translator.done(out)
    }
    if (ev.event === "error") return fromStreamError(provider, reported(ev.data))
    let json: unknown
    try {
      json = JSON.parse(ev.data)
    } catch (error) {
      return protocol(`an event's data is not JSON (${excerpt(HarnessError.describe(error), 200)}): ${JSON.stringify(excerpt(ev.data, 120))}`)
    }
    const decoded = decodeChunk(json)
    if (decoded._tag === "Failure") {
      const why = excerpt(decoded.failure.message.replaceAll(/\s*\n\s*/g, " "), 300)
      return protocol(`an event is not a chat completion chunk (${why}): ${JSON.stringify(excerpt(ev.data, 120))}`)
    }
    return translator.chunk(decoded.success, out)
  }

  const feedUnsafe = (bytes: Uint8Array, out: Array<StreamChunk.StreamChunk>): LlmError.LlmError | undefined => {
    let chunk: string
    try {
      chunk = text.decode(bytes, { stream: true })
    } catch {
      return protocol("the response is not valid UTF-8")
    }
    if (head.length < headLength) head += chunk.slice(0, headLength - head.length)
    const tooLarge = parser.feed(chunk)
    if (tooLarge !== undefined) return protocol(tooLarge.message)
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

  const endUnsafe = (): LlmError.LlmError | undefined => {
    try {
      text.decode()
    } catch {
      return protocol("the response ended inside a UTF-8 character")
    }
    if (seen === 0) {
      return protocol(
        head === ""
          ? "the response ended without any event (an empty body)"
          : `the response ended without any event; it began: ${JSON.stringify(head)}`
      )
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
    end: () => guarded(endUnsafe),
    done: () => finished
  }
}

/**
 * Decodes a byte stream into chunks. The output ends at `[DONE]` (the input is not pulled
 * further, so its resources are released); an input that ends without it fails with
 * `LlmProtocolError`. The input's own failures pass through.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = <E, R>(
  bytes: Stream.Stream<Uint8Array, E, R>,
  options: Options = {}
): Stream.Stream<StreamChunk.StreamChunk, E | LlmError.LlmError, R> =>
  Stream.transformPull(bytes, (pull) =>
    Effect.sync(() => {
      const decoder = make(options)
      // a failure found after some chunks of the same network read: those chunks go first
      let failed: LlmError.LlmError | undefined
      const ended = Pull.catchDone(pull, (): Effect.Effect<never, LlmError.LlmError | Cause.Done> => {
        // the input ended: fine after [DONE], a protocol failure before it
        const failure = decoder.end()
        return failure === undefined ? Cause.done() : Effect.fail(failure)
      })
      const next: Pull.Pull<Arr.NonEmptyReadonlyArray<StreamChunk.StreamChunk>, E | LlmError.LlmError> = Effect.suspend(
        () => {
          if (failed !== undefined) return Effect.fail(failed)
          if (decoder.done()) return Cause.done()
          return Effect.flatMap(ended, (arrays) => {
            const out: Array<StreamChunk.StreamChunk> = []
            for (const chunk of arrays) {
              const failure = decoder.feed(chunk, out)
              if (failure !== undefined) {
                if (out.length === 0) return Effect.fail(failure)
                failed = failure
                break
              }
            }
            return Arr.isArrayNonEmpty(out) ? Effect.succeed(out) : next
          })
        }
      )
      return next
    }))
