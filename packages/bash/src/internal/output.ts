/**
 * Bounded output: a window that keeps the head and the tail of a stream of text within a
 * limit, and a capture that also spills the whole stream to a file once it outgrows the limit.
 *
 * @internal
 */
import { HarnessError } from "@dsh/llm"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Scope from "effect/Scope"
import type * as Bash from "../Bash.ts"

/** The head and the tail of a stream of text, within `limit` characters. */
export interface Window {
  readonly limit: number
  head: string
  /** Trimmed to the tail's room lazily (see {@link push}), so it may hold more. */
  tail: string
  /** Every character pushed since the last reset. */
  chars: number
}

/** What a window keeps of its stream. */
interface Kept {
  readonly head: string
  readonly tail: string
  readonly cutChars: number
}

export const makeWindow = (limit: number): Window => ({ limit, head: "", tail: "", chars: 0 })

const headRoom = (window: Window): number => Math.ceil(window.limit / 2)

const tailRoom = (window: Window): number => window.limit - headRoom(window)

// Slack before the tail is trimmed: trimming copies the tail, so not on every chunk.
const trimSlack = 8192

export const push = (window: Window, text: string): void => {
  window.chars += text.length
  let rest = text
  const room = headRoom(window) - window.head.length
  if (room > 0) {
    window.head += rest.slice(0, room)
    rest = rest.slice(room)
  }
  if (rest.length === 0) return
  window.tail += rest
  const keep = tailRoom(window)
  if (window.tail.length > keep + trimSlack) window.tail = window.tail.slice(window.tail.length - keep)
}

export const reset = (window: Window): void => {
  window.head = ""
  window.tail = ""
  window.chars = 0
}

/** Everything pushed, when nothing had to be cut yet (`chars <= limit`). */
const whole = (window: Window): string => window.head + window.tail

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff

// A cut is moved to a line boundary when one is near, so the model reads whole lines; and
// never splits a surrogate pair.
const headUpToLine = (head: string): string => {
  const newline = head.lastIndexOf("\n")
  const cut = newline >= head.length * 0.8 ? head.slice(0, newline + 1) : head
  return cut.length > 0 && isHighSurrogate(cut.charCodeAt(cut.length - 1)) ? cut.slice(0, -1) : cut
}

const tailFromLine = (tail: string): string => {
  const newline = tail.indexOf("\n")
  const cut = newline >= 0 && newline < tail.length * 0.2 ? tail.slice(newline + 1) : tail
  return cut.length > 0 && isLowSurrogate(cut.charCodeAt(0)) ? cut.slice(1) : cut
}

const kept = (window: Window): Kept => {
  if (window.chars <= window.limit) return { head: whole(window), tail: "", cutChars: 0 }
  const room = tailRoom(window)
  const head = headUpToLine(window.head)
  const tail = tailFromLine(window.tail.length > room ? window.tail.slice(window.tail.length - room) : window.tail)
  return { head, tail, cutChars: window.chars - head.length - tail.length }
}

/** Where the full output is, or why it is not anywhere. */
export type FileNote =
  | { readonly _tag: "None" }
  | { readonly _tag: "Saved"; readonly path: string; readonly complete: boolean }
  | { readonly _tag: "Failed"; readonly reason: string }

/**
 * The most a spill file holds: a command that prints without end (`yes`, a dev server in the
 * foreground) would otherwise fill the disk before its timeout; what is past it is counted, not kept.
 */
export const maxSpillBytes = 64 * 1024 * 1024

const count = (n: number) => n.toLocaleString("en-US")

const whereFull = (note: FileNote): string => {
  switch (note._tag) {
    case "Saved":
      return note.complete
        ? `the full output is in ${note.path}`
        : `its first ${maxSpillBytes / (1024 * 1024)} MiB are in ${note.path}, the rest was not kept`
    case "Failed":
      return `the full output could not be saved: ${note.reason}`
    case "None":
      return "the full output was not kept"
  }
}

/** The window as the interface's `Output`. */
export const render = (window: Window, note: FileNote): Bash.Output => {
  const { cutChars, head, tail } = kept(window)
  const file = note._tag === "Saved" ? note.path : undefined
  if (cutChars === 0) return { text: head + tail, chars: window.chars, cutChars, file }
  const text = `${head}${head.endsWith("\n") || head.length === 0 ? "" : "\n"}[… ${count(cutChars)} of ${
    count(window.chars)
  } characters cut here; ${whereFull(note)} …]\n${tail}`
  return { text, chars: window.chars, cutChars, file }
}

/** The file a capture spills to, opened when the output first outgrows the limit. */
interface Spill {
  readonly fs: FileSystem.FileSystem
  readonly directory: string
  readonly path: string
  /** Where the open file lives: closed when the command's output is complete. */
  readonly scope: Scope.Scope
  /** The bytes written so far (at most {@link maxSpillBytes}). */
  written: number
  /** Whether output was left out for the cap. */
  cut: boolean
  state:
    | { readonly _tag: "Idle" }
    | { readonly _tag: "Open"; readonly file: FileSystem.File }
    | { readonly _tag: "Failed"; readonly reason: string }
}

/** A command's whole output: a window, and the spill file once it outgrew it. */
export interface Capture {
  readonly window: Window
  readonly spill: Spill
}

export const makeCapture = (options: {
  readonly fs: FileSystem.FileSystem
  readonly limit: number
  readonly directory: string
  readonly path: string
  readonly scope: Scope.Scope
}): Capture => ({
  window: makeWindow(options.limit),
  spill: { fs: options.fs, directory: options.directory, path: options.path, scope: options.scope, written: 0, cut: false, state: { _tag: "Idle" } }
})

const encoder = new TextEncoder()

const failSpill = (spill: Spill, error: unknown): Effect.Effect<void> =>
  Effect.sync(() => {
    spill.state = { _tag: "Failed", reason: HarnessError.describe(error) }
  })

const openSpill = (spill: Spill, initial: string): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* spill.fs.makeDirectory(spill.directory, { recursive: true })
    // readable by its owner only: a command's output can hold secrets, and the directory is shared
    const file = yield* spill.fs.open(spill.path, { flag: "wx", mode: 0o600 }).pipe(Scope.provide(spill.scope))
    spill.state = { _tag: "Open", file }
    yield* writeSpill(spill, initial)
  }).pipe(Effect.catch((error) => failSpill(spill, error)))

const writeSpill = (spill: Spill, text: string): Effect.Effect<void> => {
  const state = spill.state
  if (state._tag !== "Open" || spill.cut) return Effect.void
  const bytes = encoder.encode(text)
  const room = maxSpillBytes - spill.written
  // the cap may cut a character in two: the file is a record, read as UTF-8 with a replacement
  const kept = bytes.length <= room ? bytes : bytes.subarray(0, room)
  if (kept.length < bytes.length) spill.cut = true
  spill.written += kept.length
  return state.file.writeAll(kept).pipe(Effect.catch((error) => failSpill(spill, error)))
}

/**
 * Adds output. Called by one consumer at a time (the output's order is the file's), it never
 * fails: a file that cannot be written is reported in the output's text instead.
 */
export const append = (capture: Capture, text: string): Effect.Effect<void> => {
  const { spill, window } = capture
  if (spill.state._tag === "Idle" && window.chars + text.length > window.limit) {
    // nothing was cut so far: the window still holds all of it
    const initial = whole(window) + text
    push(window, text)
    return openSpill(spill, initial)
  }
  push(window, text)
  return writeSpill(spill, text)
}

export const fileNote = (capture: Capture): FileNote => {
  const state = capture.spill.state
  switch (state._tag) {
    case "Open":
      return { _tag: "Saved", path: capture.spill.path, complete: !capture.spill.cut }
    case "Failed":
      return { _tag: "Failed", reason: state.reason }
    case "Idle":
      return { _tag: "None" }
  }
}

export const output = (capture: Capture): Bash.Output => render(capture.window, fileNote(capture))
