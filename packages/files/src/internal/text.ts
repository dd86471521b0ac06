/**
 * Text as the file tools see it: UTF-8 without NUL bytes (anything else is binary), lines split
 * on `\n` (a `\r` before it is shown as part of the line ending, not of the line), numbered from
 * 1, and bounded renderings of sizes, lines and excerpts.
 */
import type { BinaryReason } from "../FileError.ts"

const units = ["KiB", "MiB", "GiB", "TiB"]

/** A size in words: `512 bytes`, `3.2 KiB`, `256 KiB`, `12 MiB`. */
export const formatSize = (bytes: number): string => {
  if (bytes < 1024) return `${bytes} byte${bytes === 1 ? "" : "s"}`
  let value = bytes / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value.toFixed(1).replace(/\.0$/, "")} ${units[unit]}`
}

/** Why bytes are not text, if they are not. */
export const binaryReason = (bytes: Uint8Array): BinaryReason | undefined => {
  if (bytes.indexOf(0) >= 0) return "nul-byte"
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes)
    return undefined
  } catch {
    return "invalid-utf8"
  }
}

/**
 * Bytes as text, or why they are not. `keepBom` keeps a leading byte-order mark in the text
 * (an edit writes it back); otherwise it is dropped.
 */
export const decode = (bytes: Uint8Array, keepBom: boolean): string | { readonly binary: BinaryReason } => {
  if (bytes.indexOf(0) >= 0) return { binary: "nul-byte" }
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: keepBom }).decode(bytes)
  } catch {
    return { binary: "invalid-utf8" }
  }
}

/** The lines of a text; a final `\n` ends the last line rather than starting an empty one. */
export const splitLines = (text: string): Array<string> => {
  if (text === "") return []
  const lines = text.split("\n")
  if (lines[lines.length - 1] === "") lines.pop()
  return lines
}

/** A line without the `\r` of a CRLF ending. */
export const withoutCr = (line: string): string => (line.endsWith("\r") ? line.slice(0, -1) : line)

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff

/**
 * `text.slice(start, end)` with its ends moved so that no surrogate pair is split: half a pair
 * is a lone surrogate, which is not valid UTF-8 on the wire (a provider refuses the request that
 * carries it). A start inside a pair moves past it, an end inside one moves before it.
 */
export const sliceWhole = (text: string, start: number, end: number = text.length): string => {
  let from = Math.max(0, start)
  let to = Math.min(text.length, end)
  if (from > 0 && isLowSurrogate(text.charCodeAt(from)) && isHighSurrogate(text.charCodeAt(from - 1))) from++
  if (to < text.length && to > from && isLowSurrogate(text.charCodeAt(to)) && isHighSurrogate(text.charCodeAt(to - 1))) {
    to--
  }
  return text.slice(from, Math.max(from, to))
}

/** A line cut at `max` characters (never inside a surrogate pair), saying how long it was. */
export const cutLine = (line: string, max: number, length = line.length): string =>
  length <= max && line.length <= max ? line : `${sliceWhole(line, 0, max)}… (line cut: ${length} characters)`

/** Lines numbered like `cat -n`: the number right-aligned, a tab, the line. */
export const numbered = (lines: ReadonlyArray<{ readonly line: number; readonly text: string }>): string => {
  const width = String(lines.length === 0 ? 1 : lines[lines.length - 1]!.line).length
  return lines.map(({ line, text }) => `${String(line).padStart(Math.max(width, 6))}\t${text}`).join("\n")
}

/** At most `max` characters of `text`, around `at` when it is long: `…before match after…` (pairs kept whole). */
export const excerpt = (text: string, at: number, max: number): string => {
  if (text.length <= max) return text
  const start = Math.max(0, Math.min(at - Math.floor(max / 4), text.length - max))
  return `${start > 0 ? "…" : ""}${sliceWhole(text, start, start + max)}${start + max < text.length ? "…" : ""}`
}

/** The 1-based line each of the (ascending) character offsets falls on. */
export const linesAt = (text: string, offsets: ReadonlyArray<number>): Array<number> => {
  const result: Array<number> = []
  let line = 1
  let scanned = 0
  for (const offset of offsets) {
    for (let i = text.indexOf("\n", scanned); i >= 0 && i < offset; i = text.indexOf("\n", i + 1)) {
      line++
      scanned = i + 1
    }
    result.push(line)
  }
  return result
}

// Similarity of two short strings: the Dice coefficient of their character bigrams.
const bigrams = (text: string): Map<string, number> => {
  const counts = new Map<string, number>()
  for (let i = 0; i < text.length - 1; i++) {
    const pair = text.slice(i, i + 2)
    counts.set(pair, (counts.get(pair) ?? 0) + 1)
  }
  return counts
}

const similarity = (a: Map<string, number>, aSize: number, b: string): number => {
  const other = bigrams(b)
  const bSize = Math.max(0, b.length - 1)
  if (aSize + bSize === 0) return 0
  let shared = 0
  for (const [pair, count] of other) shared += Math.min(count, a.get(pair) ?? 0)
  return (2 * shared) / (aSize + bSize)
}

// What a line is compared as: without indentation, and no longer than this.
const comparedLength = 400
// Past these many lines, finding the closest one costs more than it helps.
const comparedLines = 50_000
// Below this similarity, the closest line is not worth showing.
const closeEnough = 0.5

/**
 * The line of `lines` most like `wanted` (compared without surrounding whitespace), if one is
 * close enough to be worth showing, and whether it equals `wanted` but for whitespace.
 */
export const closestLine = (
  lines: ReadonlyArray<string>,
  wanted: string
): { readonly line: number; readonly text: string; readonly whitespaceOnly: boolean } | undefined => {
  const needle = wanted.trim().slice(0, comparedLength)
  if (needle.length < 2 || lines.length > comparedLines) return undefined
  const squeezed = needle.replaceAll(/\s+/g, "")
  const grams = bigrams(needle)
  const size = needle.length - 1
  let best: { line: number; score: number; whitespaceOnly: boolean } | undefined
  for (let i = 0; i < lines.length; i++) {
    const candidate = withoutCr(lines[i]!).trim().slice(0, comparedLength)
    if (candidate.length === 0) continue
    const whitespaceOnly = candidate.replaceAll(/\s+/g, "") === squeezed
    const score = whitespaceOnly ? 2 : similarity(grams, size, candidate)
    if (best === undefined || score > best.score) best = { line: i + 1, score, whitespaceOnly }
  }
  if (best === undefined || best.score < closeEnough) return undefined
  return { line: best.line, text: withoutCr(lines[best.line - 1]!), whitespaceOnly: best.whitespaceOnly }
}

/** A line of a decoded stream, `length` its full length when `text` was cut. */
export interface ScannedLine {
  readonly text: string
  readonly length: number
}

/**
 * Splits UTF-8 bytes arriving in chunks into lines, keeping at most `maxLength + 1` characters
 * of each (a line of a gigabyte costs nothing), and telling binary data apart: a NUL byte, or
 * bytes that are not UTF-8.
 */
export class LineScanner {
  private readonly decoder = new TextDecoder("utf-8", { fatal: true })
  private partial = ""
  private partialLength = 0
  private started = false
  private readonly maxLength: number

  constructor(maxLength: number) {
    this.maxLength = maxLength
  }

  /** Whether a line has begun that no `\n` has ended yet. */
  get pending(): boolean {
    return this.started
  }

  /** The lines `bytes` complete (with `final`, the last one too), or why the bytes are binary. */
  push(bytes: Uint8Array, final: boolean): Array<ScannedLine> | { readonly binary: BinaryReason } {
    if (bytes.indexOf(0) >= 0) return { binary: "nul-byte" }
    let text: string
    try {
      text = this.decoder.decode(bytes, { stream: !final })
    } catch {
      return { binary: "invalid-utf8" }
    }
    const lines: Array<ScannedLine> = []
    let from = 0
    for (let nl = text.indexOf("\n", from); nl >= 0; nl = text.indexOf("\n", from)) {
      this.append(text, from, nl)
      lines.push({ text: this.partial, length: this.partialLength })
      this.partial = ""
      this.partialLength = 0
      this.started = false
      from = nl + 1
    }
    if (from < text.length) this.append(text, from, text.length)
    if (final && this.started) {
      lines.push({ text: this.partial, length: this.partialLength })
      this.started = false
    }
    return lines
  }

  private append(text: string, from: number, to: number) {
    this.started = true
    const room = this.maxLength + 1 - this.partial.length
    if (room > 0) this.partial += text.slice(from, Math.min(to, from + room))
    this.partialLength += to - from
  }
}
