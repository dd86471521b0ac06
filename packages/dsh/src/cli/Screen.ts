/**
 * The chat's screen: a transcript that scrolls (streamed text, tool lines, notes) above a live
 * area that is redrawn in place — the transcript's unfinished line, a status line, and the input
 * line with its cursor. Text streams into the transcript as it arrives while the user types
 * below it; what is typed never mixes with what streams.
 *
 * The live area is redrawn from the top each time (cursor up, clear to the end of the screen,
 * write): the screen knows how many rows it drew and where it left the cursor. The transcript's
 * unfinished line never reaches the width of the terminal: each row that fills up is written for
 * good, as the terminal would have wrapped it, so the live area is at most a few rows and a
 * redraw is cheap however long a paragraph streams.
 *
 * @since 0.1.0
 */
import { CliOutput } from "effect/cli"

/**
 * How a piece of the transcript is drawn.
 *
 * @since 0.1.0
 * @category models
 */
export type Tone = "plain" | "dim"

interface Segment {
  readonly tone: Tone
  readonly text: string
}

/**
 * What the screen writes to and measures with.
 *
 * @since 0.1.0
 * @category models
 */
export interface Terminal {
  readonly write: (text: string) => void
  readonly columns: () => number
}

const ESC = "\u001b["
const DIM_ON = `${ESC}2m`
const DIM_OFF = `${ESC}22m`

const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" })

/**
 * Text from a model or a tool made safe to draw: tabs as spaces, carriage returns, escape
 * sequences and other control characters removed (a stray escape would move the cursor behind
 * the screen's back).
 *
 * @since 0.1.0
 * @category utils
 */
export const sanitize = (text: string): string =>
  // oxlint-disable-next-line no-control-regex
  text.replaceAll("\t", "    ").replace(/\u001b\[[0-9;?]*[ -/]*[@-~]/g, "").replace(/[\u0000-\u0009\u000b-\u001f\u007f]/g, "")

const width = (text: string): number => CliOutput.displayWidth(text)

const draw = (segments: ReadonlyArray<Segment>, dim: boolean): string =>
  segments.map((s) => (s.tone === "dim" && dim ? `${DIM_ON}${s.text}${DIM_OFF}` : s.text)).join("")

/**
 * Where a terminal of `columns` leaves its cursor after writing `text` from a row's start: a
 * character wider than what is left of its row goes to the next row, leaving that cell empty
 * (a CJK character at the last column), and a row written to its end keeps the cursor on it
 * (`column === columns`) until the next character.
 */
const placeOf = (text: string, columns: number): { readonly row: number; readonly column: number } => {
  let row = 0
  let column = 0
  for (const { segment } of segmenter.segment(text)) {
    const cells = width(segment)
    if (cells === 0) continue
    if (column + cells > columns) {
      row++
      column = 0
    }
    column += cells
  }
  return { row, column }
}

/** The cell where the next character (`rest`'s first) goes after `before`: where the cursor stands. */
const cursorPlace = (before: string, rest: string, columns: number): { readonly row: number; readonly column: number } => {
  const after = placeOf(before, columns)
  const next = segmenter.segment(rest)[Symbol.iterator]().next()
  const cells = next.done === true ? 1 : Math.max(1, width(next.value.segment))
  return after.column + cells > columns ? { row: after.row + 1, column: 0 } : after
}

/** The rows a text of this width takes (an empty text still takes its row). */
const rowsOf = (cells: number, columns: number): number => (cells === 0 ? 1 : Math.ceil(cells / columns))

/**
 * @since 0.1.0
 * @category models
 */
export interface Screen {
  /** Streams text into the transcript (it may end mid-line). */
  readonly write: (text: string, tone?: Tone) => void
  /** Writes whole lines into the transcript, after ending the unfinished line if there is one. */
  readonly line: (text: string) => void
  /** Ends the transcript's unfinished line, if there is one. */
  readonly endLine: () => void
  /** The status line (undefined: none). */
  readonly status: (text: string | undefined) => void
  /** The input line: its prompt, its text and the cursor's position in it (in characters). */
  readonly input: (prompt: string, text: string, cursor: number) => void
  /** Draws the live area again (after a resize). */
  readonly redraw: () => void
  /** Clears the live area and leaves the cursor on a fresh line below the transcript. */
  readonly close: () => void
}

/**
 * A screen on a terminal; `dim` says whether styles may be used.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (terminal: Terminal, options: { readonly dim: boolean }): Screen => {
  // the transcript's unfinished line
  let partial: Array<Segment> = []
  let partialWidth = 0
  let statusText: string | undefined
  let prompt = ""
  let inputText = ""
  let cursor = 0
  // where the live area drawn last time starts, in rows above the cursor
  let cursorRow = 0
  let drawn = false
  // what the last drawing was laid out for: the width, and the status line's cells as drawn
  let drawnColumns = 0
  let statusCells = 0

  const columns = () => Math.max(10, terminal.columns() || 80)

  /** Back to the top of the live area, cleared; returns the sequence. */
  const erase = (): string => {
    if (!drawn) return ""
    return (cursorRow > 0 ? `${ESC}${cursorRow}A` : "") + `\r${ESC}J`
  }

  /** The live area from its top, leaving the cursor in the input line; records where. */
  const live = (): string => {
    const cols = columns()
    const parts: Array<string> = []
    let rows = 0
    if (partial.length > 0) {
      parts.push(draw(partial, options.dim), "\n")
      rows += rowsOf(partialWidth, cols)
    }
    if (statusText !== undefined) {
      const shown = statusLine(statusText, cols)
      statusCells = width(shown)
      parts.push(shown, "\n")
      rows += 1
    }
    const full = prompt + inputText
    const endRow = placeOf(full, cols).row
    parts.push(full)
    const at = inputCursor(cols)
    if (cursor < inputText.length) {
      if (endRow > at.row) parts.push(`${ESC}${endRow - at.row}A`)
      parts.push(`${ESC}${at.column + 1}G`)
    }
    const row = at.row
    cursorRow = rows + row
    drawnColumns = cols
    drawn = true
    return parts.join("")
  }

  /**
   * Where the cursor stands in the live area once the terminal has reflowed it to `cols` (a
   * resize: tmux, VTE, iTerm and Windows Terminal rewrap soft-wrapped rows, the cursor staying
   * on its character), so that a redraw erases the rows the area takes now, not those it took.
   */
  const reflowedCursorRow = (cols: number): number =>
    (partial.length > 0 ? rowsOf(partialWidth, cols) : 0) + (statusText !== undefined ? rowsOf(statusCells, cols) : 0) +
    inputCursor(cols).row

  /** Where the cursor stands in the input line at `cols`: on the next character, or after the last. */
  const inputCursor = (cols: number): { readonly row: number; readonly column: number } =>
    cursor < inputText.length
      ? cursorPlace(prompt + inputText.slice(0, cursor), inputText.slice(cursor), cols)
      : placeOf(prompt + inputText, cols)

  const statusLine = (text: string, cols: number): string => {
    const flat = sanitize(text)
    const shown = width(flat) < cols ? flat : [...segmenter.segment(flat)].map((s) => s.segment).reduce(
      (acc, g) => (width(acc + g) < cols - 1 ? acc + g : acc),
      ""
    ) + "…"
    return options.dim ? `${DIM_ON}${shown}${DIM_OFF}` : shown
  }

  /** Moves the rows of the unfinished line that filled up into the transcript. */
  const commitFullRows = (out: Array<string>) => {
    const cols = columns()
    while (partialWidth >= cols) {
      const row: Array<Segment> = []
      const rest: Array<Segment> = []
      let cells = 0
      let full = false
      for (const segment of partial) {
        if (full) {
          rest.push(segment)
          continue
        }
        let taken = ""
        let left = ""
        for (const { segment: g } of segmenter.segment(segment.text)) {
          if (full) {
            left += g
            continue
          }
          const w = width(g)
          if (cells + w > cols) {
            full = true
            left += g
            continue
          }
          taken += g
          cells += w
          if (cells === cols) full = true
        }
        if (taken !== "") row.push({ tone: segment.tone, text: taken })
        if (left !== "") rest.push({ tone: segment.tone, text: left })
      }
      out.push(draw(row, options.dim), "\n")
      partial = rest
      partialWidth = width(rest.map((s) => s.text).join(""))
    }
  }

  const append = (out: Array<string>, text: string, tone: Tone) => {
    const lines = sanitize(text).split("\n")
    lines.forEach((piece, i) => {
      if (i > 0) {
        out.push(draw(partial, options.dim), "\n")
        partial = []
        partialWidth = 0
      }
      if (piece === "") return
      const last = partial.at(-1)
      if (last !== undefined && last.tone === tone) partial[partial.length - 1] = { tone, text: last.text + piece }
      else partial.push({ tone, text: piece })
      partialWidth += width(piece)
      commitFullRows(out)
    })
  }

  const update = (change: (out: Array<string>) => void) => {
    const out: Array<string> = [erase()]
    change(out)
    out.push(live())
    terminal.write(out.join(""))
  }

  const endPartial = (out: Array<string>) => {
    if (partial.length === 0) return
    out.push(draw(partial, options.dim), "\n")
    partial = []
    partialWidth = 0
  }

  return {
    write: (text, tone = "plain") => update((out) => append(out, text, tone)),
    line: (text) =>
      update((out) => {
        endPartial(out)
        for (const line of text.split("\n")) out.push(sanitizeLine(line), "\n")
      }),
    endLine: () => update(endPartial),
    status: (text) => {
      if (text === statusText) return
      update(() => {
        statusText = text
      })
    },
    input: (nextPrompt, text, at) =>
      update(() => {
        prompt = nextPrompt
        inputText = text
        cursor = Math.max(0, Math.min(at, text.length))
      }),
    redraw: () => {
      const cols = columns()
      if (drawn && cols !== drawnColumns) cursorRow = reflowedCursorRow(cols)
      update(() => {})
    },
    close: () => {
      const out: Array<string> = [erase()]
      endPartial(out)
      drawn = false
      cursorRow = 0
      terminal.write(out.join(""))
    }
  }
}

/** A line of our own (it may carry our styles): only what would move the cursor is removed. */
// oxlint-disable-next-line no-control-regex
const sanitizeLine = (line: string): string => line.replaceAll("\t", "    ").replace(/[\u0000-\u0008\u000b-\u001a\u001c-\u001f\u007f]/g, "")
