/**
 * A Server-Sent Events parser: the WHATWG `text/event-stream` rules a streamed POST response
 * needs, for the model adapters. A byte order mark at the start is dropped; lines end with LF,
 * CRLF or CR (a CR ending one piece and the LF starting the next are one line end); `:` lines
 * are comments; a field without a colon has an empty value, and one space after the colon is
 * dropped; `event:` names the event (`message` unless it says otherwise), `data:` lines are
 * joined with `\n`; an empty line dispatches the event when it has data; `id:`, `retry:` and
 * unknown fields are ignored. When the input ends ({@link Parser.end}), an event whose every
 * line ended is dispatched although no empty line followed it — servers close the stream right
 * after the last event's `data:` line (`data: [DONE]\n`), and dropping it would lose the end of
 * an answer the server did send; an event cut inside a line is not (its last line is torn).
 * That is where this parser departs from the WHATWG rule, which drops both.
 *
 * Why not `effect/encoding`'s `Sse.makeParser` (or the `Sse.decode` channel around it), which
 * reads the same format:
 *
 * - **Speed.** That parser looks at every character to find a line end; this one asks
 *   `indexOf`, which scans natively, and takes a text without any CR on a path that never looks
 *   for one. It hands out a one-line event's `data` as a slice of the text it was given, not a
 *   string built by concatenation that `JSON.parse` would first have to flatten (copy). An SSE
 *   event of a model stream is two or three short lines around one small JSON value, so line
 *   splitting is a large share of decoding: in the adapters' decode benchmarks (see
 *   docs/benchmarks.md, "SSE decoding") it is what lets a decoder keep up with a bare
 *   split-and-`JSON.parse` loop (docs/adr/0023-own-sse-parser.md).
 * - **`retry:`.** `Sse.decode` fails the stream on a `retry:` field (it is there for an
 *   `EventSource` to reconnect with); a POST has nothing to resume, so here it is ignored, as
 *   `id:` is.
 *
 * The tests hold it to the same answers as `Sse.makeParser` (the same events, in order, with
 * the same names and data) on thousands of generated streams cut into pieces at random.
 *
 * Unlike `Sse.makeParser`, it also bounds an event that arrives whole within one piece, not
 * only what is left pending at the end of a piece.
 *
 * @since 0.1.0
 */

/**
 * A parser for one stream. Not shared between fibers.
 *
 * @since 0.1.0
 * @category models
 */
export interface Parser {
  /**
   * Parses the next piece of text, calling back for each event it completes, in order.
   * Returns a description when an event grew beyond the size bound, else `undefined`. That
   * event and the rest of the piece are then dropped, and the next piece is read as a fresh
   * start of a line (a stream is usually abandoned there).
   */
  readonly feed: (text: string) => string | undefined
  /**
   * The input ended: dispatches the event being read if its every line ended (no line is
   * left unterminated) and it has data. Returns a description when that event is over the size
   * bound, else `undefined`. Nothing may be fed after it.
   */
  readonly end: () => string | undefined
}

/**
 * The default bound of {@link make}, as `effect/encoding`'s parser's: 10 MiB, in UTF-16 code
 * units.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMaxEventSize = 10 * 1024 * 1024

const LF = 10
const COLON = 58
const SPACE = 32
const BOM = "\uFEFF"

/**
 * Creates a parser calling `onEvent(event, data)` for each event it completes (`event` is
 * `message` unless an `event:` field named it). `maxEventSize` bounds, in UTF-16 code units,
 * what an event may hold: its data so far plus the line being read while it is unfinished, its
 * data once dispatched.
 *
 * The event's state is cleared before `onEvent` is called, so a callback that throws leaves no
 * half event behind.
 *
 * @example
 * ```ts
 * import { Sse } from "@dsh/llm"
 *
 * const events: Array<[string, string]> = []
 * const parser = Sse.make((event, data) => void events.push([event, data]))
 * parser.feed("event: delta\r\ndata: {\"a\"")
 * parser.feed(":1}\r\n\r\n: keep-alive\n")
 * // events: [["delta", "{\"a\":1}"]]
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  onEvent: (event: string, data: string) => void,
  maxEventSize: number = defaultMaxEventSize
): Parser => {
  let first = true
  // the unterminated line of the previous text
  let pending = ""
  // the previous text ended with CR: a LF starting the next one belongs to it
  let afterCR = false
  let eventName = ""
  let data = ""
  let dataLines = 0

  // an event over the bound: what `feed` reports; the rest of that text is not parsed
  let overflow: string | undefined
  const tooLarge = (size: number): string =>
    `an event grew beyond the maximum size of ${maxEventSize} characters (to ${size})`

  const dispatch = () => {
    if (dataLines === 0) {
      eventName = ""
      return
    }
    const name = eventName === "" ? "message" : eventName
    const payload = data
    // cleared before the callback, so a callback that throws leaves no half event behind
    eventName = ""
    data = ""
    dataLines = 0
    if (payload.length > maxEventSize) overflow = tooLarge(payload.length)
    else onEvent(name, payload)
  }

  const valueAt = (line: string, colon: number) =>
    line.charCodeAt(colon + 1) === SPACE ? line.slice(colon + 2) : line.slice(colon + 1)

  // Parses one line; false once an event overflowed (the rest of the text is not parsed).
  const line = (text: string): boolean => {
    if (text.length === 0) {
      dispatch()
      return overflow === undefined
    }
    if (text.charCodeAt(0) === COLON) return true
    const colon = text.indexOf(":")
    if (colon === 4 && text.startsWith("data")) {
      const value = valueAt(text, colon)
      data = dataLines === 0 ? value : `${data}\n${value}`
      dataLines++
    } else if (colon === 5 && text.startsWith("event")) {
      eventName = valueAt(text, colon)
    } else if (colon < 0 && text === "data") {
      data = dataLines === 0 ? "" : `${data}\n`
      dataLines++
    } else if (colon < 0 && text === "event") {
      eventName = ""
    }
    return true
  }

  const feed = (input: string): string | undefined => {
    let text = input
    if (text.length === 0) return undefined
    if (first) {
      first = false
      if (text.startsWith(BOM)) text = text.slice(1)
    }
    let at = 0
    if (afterCR) {
      afterCR = false
      if (text.charCodeAt(0) === LF) at = 1
    }
    const length = text.length
    let nextCR = text.indexOf("\r", at)
    if (nextCR < 0) {
      // the usual case: LF line ends only
      let end = text.indexOf("\n", at)
      let going = true
      while (end >= 0 && going) {
        const whole = pending === "" ? text.slice(at, end) : pending + text.slice(at, end)
        pending = ""
        going = line(whole)
        at = end + 1
        end = text.indexOf("\n", at)
      }
    } else {
      // each of the next CR and LF is looked for again only once `at` has passed it, so a
      // text is scanned in linear time whatever its line ends
      let nextLF = text.indexOf("\n", at)
      let going = true
      while (going) {
        if (nextCR >= 0 && nextCR < at) nextCR = text.indexOf("\r", at)
        if (nextLF >= 0 && nextLF < at) nextLF = text.indexOf("\n", at)
        const end = nextCR < 0 ? nextLF : nextLF < 0 ? nextCR : Math.min(nextCR, nextLF)
        if (end < 0) break
        const whole = pending === "" ? text.slice(at, end) : pending + text.slice(at, end)
        pending = ""
        going = line(whole)
        if (end === nextCR) {
          if (end + 1 === length) afterCR = true
          at = text.charCodeAt(end + 1) === LF ? end + 2 : end + 1
        } else {
          at = end + 1
        }
      }
    }
    if (overflow === undefined && at < length) pending += text.slice(at)
    if (overflow === undefined && pending.length + data.length > maxEventSize) {
      overflow = tooLarge(pending.length + data.length)
    }
    if (overflow === undefined) return undefined
    const failure = overflow
    overflow = undefined
    pending = ""
    data = ""
    dataLines = 0
    eventName = ""
    return failure
  }

  const end = (): string | undefined => {
    // a torn last line: the event is incomplete
    if (pending !== "") {
      pending = ""
      data = ""
      dataLines = 0
      eventName = ""
      return undefined
    }
    dispatch()
    const failure = overflow
    overflow = undefined
    return failure
  }

  return { feed, end }
}
