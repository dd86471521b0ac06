/**
 * A Server-Sent Events parser (the WHATWG `text/event-stream` rules a POST response needs):
 * a byte-order mark at the start is dropped; lines end with LF, CRLF or CR (a CRLF split
 * between two reads included); `:` lines are comments; `event:` names the event, `data:` lines
 * are joined with `\n`; a blank line dispatches an event that has data; `id:` and `retry:`
 * (which only concern reconnecting `EventSource`s) and unknown fields are ignored; an event left
 * incomplete when the input ends is never dispatched.
 *
 * It does what `Sse.makeParser` of `effect/encoding` does, for one reason: speed. That parser
 * looks at every character to find line ends; this one asks `indexOf`, which scans natively,
 * and takes a text without any CR on a path that never looks for one. An Anthropic event is
 * three short lines (`event: content_block_delta`, `data: {…}`, blank), so line splitting is a
 * large share of decoding; in `bench/decode.bench.ts` it is what lets the decoder keep up with
 * a bare split-and-`JSON.parse` loop.
 */

/** The parser's failure: an event grew beyond the size limit (a message, in words). */
export type Overflow = string

export interface Parser {
  /** Parses the next piece of text, calling `onEvent` for each event it completes. */
  readonly feed: (text: string) => Overflow | undefined
}

const LF = 10
const COLON = 58
const SPACE = 32
const BOM = "\uFEFF"

/**
 * Creates a parser. `maxEventSize` bounds, in UTF-16 code units, what an unfinished event may
 * hold (its data so far and the line being read).
 */
export const make = (onEvent: (event: string, data: string) => void, maxEventSize: number): Parser => {
  let first = true
  // the unterminated line of the previous text
  let pending = ""
  // the previous text ended with CR: a LF starting the next one belongs to it
  let afterCR = false
  let eventName = ""
  let data = ""
  let dataLines = 0

  // an event over the limit: what `feed` reports; the rest of that text is not parsed
  let overflow: Overflow | undefined
  const tooLarge = (size: number): Overflow => `an event grew beyond ${maxEventSize} characters (${size} so far)`

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

  const feed = (input: string): Overflow | undefined => {
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
        going = line(pending === "" ? text.slice(at, end) : pending + text.slice(at, end))
        pending = ""
        at = end + 1
        end = text.indexOf("\n", at)
      }
    } else {
      let nextLF = text.indexOf("\n", at)
      let going = true
      while (going) {
        if (nextCR >= 0 && nextCR < at) nextCR = text.indexOf("\r", at)
        if (nextLF >= 0 && nextLF < at) nextLF = text.indexOf("\n", at)
        const end = nextCR < 0 ? nextLF : nextLF < 0 ? nextCR : Math.min(nextCR, nextLF)
        if (end < 0) break
        going = line(pending === "" ? text.slice(at, end) : pending + text.slice(at, end))
        pending = ""
        if (end === nextCR) {
          if (end + 1 === length) afterCR = true
          at = text.charCodeAt(end + 1) === LF ? end + 2 : end + 1
        } else {
          at = end + 1
        }
      }
    }
    if (overflow === undefined && at < length) pending += text.slice(at)
    if (overflow === undefined && pending.length + data.length > maxEventSize) overflow = tooLarge(pending.length + data.length)
    if (overflow === undefined) return undefined
    const failure = overflow
    overflow = undefined
    pending = ""
    data = ""
    dataLines = 0
    eventName = ""
    return failure
  }

  return { feed }
}
