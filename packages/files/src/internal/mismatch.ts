/**
 * Why an edit's old text is not in the file, said so the model can fix its next call: where
 * the longest start of the old text that the file holds stops matching (the line of old and
 * the line of the file, and whether only whitespace or a line ending differs there), or, when
 * not even its first line is there, the line of the file most like it. A hint never claims a
 * whitespace difference that is not the difference.
 */
import type { NumberedLine } from "../FileError.ts"
import { closestLine, cutLine, linesAt, splitLines, withoutCr } from "./text.ts"

/** What the error says after "the old text does not occur", and the line it points to. */
export interface Hint {
  readonly hint: string
  readonly closest?: NumberedLine | undefined
}

/** Where the longest start of an old text occurs in the file. */
interface Start {
  readonly old: string
  /** How many characters of `old` match. */
  readonly length: number
  /** Where they occur in the text. */
  readonly at: number
  /** How many whole lines of `old` (line breaks included) match. */
  readonly lines: number
}

const lineBreaks = (text: string): number => text.split("\n").length - 1

/**
 * The longest start of `old` that occurs in `text`. Every shorter start of one that occurs
 * occurs too, so its length is found by halving. Where it also ends the text, that occurrence
 * is taken: what follows it is then missing from the file, not different.
 */
const longestStart = (text: string, old: string): Start => {
  let low = 0
  let high = old.length
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (text.includes(old.slice(0, middle))) low = middle
    else high = middle - 1
  }
  const start = old.slice(0, low)
  const at = low > 0 && text.endsWith(start) ? text.length - low : text.indexOf(start)
  return { old, length: low, at, lines: lineBreaks(start) }
}

const squeezed = (line: string): string => line.replaceAll(/\s+/g, "")

const matchedLines = (count: number, from: number): string =>
  count === 1
    ? `the first line of old matches line ${from} of the file`
    : `lines 1–${count} of old match lines ${from}–${from + count - 1} of the file`

/** How a line of the file differs from the line of old where old stops matching, if that is all. */
const difference = (fileLine: string, oldLine: string): string =>
  fileLine === oldLine
    ? "only in how it ends (CRLF or LF)"
    : squeezed(fileLine) === squeezed(oldLine)
    ? "only in whitespace"
    : ""

/** The hint from the line most like old's first non-blank line, for when old's start places it nowhere. */
const fromClosest = (lines: ReadonlyArray<string>, old: string, shownLength: number): Hint => {
  const oldLines = old.split("\n").map(withoutCr)
  const index = Math.max(0, oldLines.findIndex((line) => line.trim() !== ""))
  const wanted = oldLines[index] ?? old
  const closest = closestLine(lines, wanted)
  if (closest === undefined) return { hint: "read the file to see its current text" }
  const shown = cutLine(closest.text, shownLength)
  const which = index === 0 ? "the first line of old" : `line ${index + 1} of old`
  const hint = closest.text === wanted
    ? `line ${closest.line} of the file is ${which} exactly, so what differs is in the lines around it`
    : closest.whitespaceOnly
    ? `line ${closest.line} differs from ${which} only in whitespace: ${JSON.stringify(shown)}`
    : `the closest line is ${closest.line}: ${JSON.stringify(shown)}`
  return { hint, closest: { line: closest.line, text: shown } }
}

/**
 * Why none of `tried` (the old text as given, and the variants looked for, such as its CRLF
 * form) occurs in `text`. Lines are shown cut at `shownLength` characters.
 */
export const hint = (text: string, tried: ReadonlyArray<string>, shownLength: number): Hint => {
  const lines = splitLines(text)
  const best = tried.map((old) => longestStart(text, old)).reduce((a, b) =>
    b.lines > a.lines || (b.lines === a.lines && b.length > a.length) ? b : a
  )
  const matched = best.old.slice(0, best.length)
  const firstLineLength = best.old.includes("\n") ? best.old.indexOf("\n") : best.old.length
  // not even the first line is in the file, or only blank lines are (they match almost anywhere)
  if (matched.trim() === "" || best.length < firstLineLength) return fromClosest(lines, tried[0]!, shownLength)
  const from = linesAt(text, [best.at])[0]!
  if (best.at + best.length === text.length) {
    const last = lines.length
    return {
      hint: `${matchedLines(Math.max(1, best.lines), from)}, but old goes on past the end of the file, at line ${last}`,
      closest: { line: last, text: cutLine(withoutCr(lines[last - 1] ?? ""), shownLength) }
    }
  }
  if (best.lines === 0) return fromClosest(lines, tried[0]!, shownLength)
  const stop = linesAt(text, [best.at + best.length])[0]!
  const fileLine = withoutCr(lines[stop - 1] ?? "")
  const oldLine = withoutCr(best.old.split("\n")[best.lines]!)
  const how = difference(fileLine, oldLine)
  const shown = cutLine(fileLine, shownLength)
  return {
    hint: `${matchedLines(best.lines, from)}, but line ${best.lines + 1} of old differs from line ${stop} of the file${
      how === "" ? "" : ` ${how}`
    }: ${JSON.stringify(shown)}`,
    closest: { line: stop, text: shown }
  }
}
