/**
 * The `edit` tool: replaces an exact text of a file (once, where it is unique, or everywhere
 * with `replaceAll`) and writes the file back atomically, refusing when the file changed since
 * it was read. The result says what changed: how many replacements, where, and a compact diff.
 */
import { Tool } from "@dsh/tools"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import {
  EditAmbiguousError,
  EditNotFoundError,
  FileBinaryError,
  FileIoError,
  FileTooLargeError
} from "../FileError.ts"
import { access, expectFile, expectWritable, pathParameter, type Settings } from "./access.ts"
import type { Handle, Stat } from "./descriptor.ts"
import { recordChange } from "./events.ts"
import * as Mismatch from "./mismatch.ts"
import { show, type SystemFailure } from "./system.ts"
import { cutLine, decode, formatSize, linesAt, splitLines, withoutCr } from "./text.ts"
import * as Locks from "./locks.ts"
import { type Entry, openChild, shownRel } from "./workspace.ts"
import { replaceFile } from "./write.ts"

/** The edit tool's parameters. */
export const EditParameters = Schema.Struct({
  path: pathParameter("The file to edit"),
  old: Schema.String.check(Schema.isMinCodePoints(1)).annotate({
    description: "The exact text to replace, whitespace and line breaks included; it must occur exactly once " +
      "unless replaceAll is true (include surrounding lines to make it unique)"
  }),
  new: Schema.String.annotate({ description: "The text to put in its place" }),
  replaceAll: Schema.optionalKey(
    Schema.Boolean.annotate({ description: "Replace every occurrence instead of exactly one (default: false)" })
  )
})

// How many lines and replacements the result shows.
const linesPerSide = 10
const hunksShown = 3
const linesListed = 20
const diffLineLength = 200

/** Where `needle` starts in `text`, overlapping occurrences included. */
const occurrences = (text: string, needle: string): Array<number> => {
  const found: Array<number> = []
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) found.push(at)
  return found
}

/** Non-overlapping occurrences, left to right: what replacing all of them replaces. */
const disjoint = (positions: ReadonlyArray<number>, length: number): Array<number> => {
  const kept: Array<number> = []
  for (const at of positions) if (kept.length === 0 || at >= kept[kept.length - 1]! + length) kept.push(at)
  return kept
}

interface Replacement {
  readonly old: string
  readonly new: string
  /** Offsets in the original text, ascending, non-overlapping. */
  readonly at: ReadonlyArray<number>
}

type Plan =
  | { readonly _tag: "Same" }
  /** `tried`: the old texts looked for, the one as given first. */
  | { readonly _tag: "NotFound"; readonly tried: ReadonlyArray<string> }
  | { readonly _tag: "Ambiguous"; readonly at: ReadonlyArray<number> }
  | { readonly _tag: "Replace"; readonly replacement: Replacement }

/** Whether every line break of `text` is CRLF (and it has one): a file whose endings an edit keeps. */
const crlfOnly = (text: string): boolean => text.includes("\r\n") && !/(^|[^\r])\n/.test(text)

/**
 * The replacement text with the file's CRLF line endings, when the file has only those and the
 * new text has no `\r`: text written after what `read` showed (which drops the `\r`) must not
 * put bare LF breaks into a CRLF file. A new text with a `\r` in it chooses its own endings.
 */
export const withFileEndings = (text: string, old: string, replacement: string): string => {
  if (!replacement.includes("\n") || replacement.includes("\r") || !crlfOnly(text)) {
    return replacement
  }
  // an old text starting with the LF of a CRLF follows its CR: a new one starting with an LF completes it
  return old.startsWith("\n") && replacement.startsWith("\n")
    ? `\n${replacement.slice(1).replaceAll("\n", "\r\n")}`
    : replacement.replaceAll("\n", "\r\n")
}

/**
 * What to replace. Text read through `read` loses the `\r` of CRLF line endings, so when the
 * old text is absent as given from a CRLF file, it is looked for (and replaced) with CRLF
 * endings; the new text gets the endings of a file that has only CRLF ones either way.
 */
export const plan = (text: string, old: string, replacement: string, replaceAll: boolean): Plan => {
  if (old === replacement) return { _tag: "Same" }
  let variant = { old, new: withFileEndings(text, old, replacement) }
  let found = occurrences(text, old)
  const tried = [old]
  if (found.length === 0 && old.includes("\n") && !old.includes("\r\n") && text.includes("\r\n")) {
    const crlf = { old: old.replaceAll("\n", "\r\n"), new: replacement.replaceAll(/\r?\n/g, "\r\n") }
    const again = occurrences(text, crlf.old)
    tried.push(crlf.old)
    if (again.length > 0) {
      variant = crlf
      found = again
    }
  }
  if (found.length === 0) return { _tag: "NotFound", tried }
  // a new text that differs from old only in line endings, once given the file's, changes nothing
  if (variant.old === variant.new) return { _tag: "Same" }
  if (found.length > 1 && !replaceAll) return { _tag: "Ambiguous", at: found }
  return { _tag: "Replace", replacement: { ...variant, at: disjoint(found, variant.old.length) } }
}

/** The text with the replacement applied. */
export const apply = (text: string, r: Replacement): string => {
  let out = ""
  let from = 0
  for (const at of r.at) {
    out += text.slice(from, at) + r.new
    from = at + r.old.length
  }
  return out + text.slice(from)
}

const side = (sign: string, lines: ReadonlyArray<string>): Array<string> => {
  const shown = lines.slice(0, linesPerSide).map((line) => `${sign}${cutLine(line, diffLineLength)}`)
  return lines.length > linesPerSide ? [...shown, `${sign}… ${lines.length - linesPerSide} more lines`] : shown
}

/** The lines of `text` from `start` (where a line starts) to `end` (where one starts, or the end). */
const linesBetween = (text: string, start: number, end: number): Array<string> =>
  splitLines(text.slice(start, end)).map(withoutCr)

/** Where the line holding `at` starts (`lastIndexOf` from -1 would still look at the first character). */
const lineStart = (text: string, at: number): number => (at === 0 ? 0 : text.lastIndexOf("\n", at - 1) + 1)

/** Whether a line starts at `at`. */
const startsLine = (text: string, at: number): boolean => at === 0 || text[at - 1] === "\n"

/**
 * Replacements shown together: a run of them whose lines overlap, before or after the edit
 * (two on one line, or one whose line break the replacement drops, joining the next line), so
 * that no line is shown twice. `first` and `last` index `Replacement.at`; `end` is where the
 * hunk's lines end in the original text: at a line start in both texts, or at the end.
 */
interface Hunk {
  readonly first: number
  readonly last: number
  readonly end: number
}

/** The first `max` hunks of a replacement; `newAt(i)` is where replacement `i` lands in `after`. */
const hunksOf = (before: string, after: string, r: Replacement, newAt: (i: number) => number, max: number) => {
  const hunks: Array<Hunk> = []
  // the first line break at or after a position (the length when there is none): looked for
  // once per line, however many replacements the line holds
  let lineBreak = -1
  for (let i = 0; i < r.at.length; i++) {
    const current = hunks[hunks.length - 1]
    // a hunk ends where a line starts, so a replacement before its end shares one of its lines
    const joins = current !== undefined && r.at[i]! < current.end
    if (!joins && hunks.length === max) break
    const to = r.at[i]! + r.old.length
    let end = to
    // what follows a replacement is the same in both texts: the hunk ends at the first line start of both
    if (!startsLine(before, to) || !startsLine(after, newAt(i) + r.new.length)) {
      if (lineBreak < to) {
        const found = before.indexOf("\n", to)
        lineBreak = found < 0 ? before.length : found
      }
      end = Math.min(lineBreak + 1, before.length)
    }
    hunks[joins ? hunks.length - 1 : hunks.length] = { first: joins ? current.first : i, last: i, end }
  }
  return hunks
}

/** A compact diff of the first replacements: the whole lines of each hunk, before and after. */
export const diff = (before: string, after: string, r: Replacement): string => {
  const shift = r.new.length - r.old.length
  const newAt = (i: number) => r.at[i]! + i * shift
  const hunks = hunksOf(before, after, r, newAt, hunksShown)
  const oldLines = linesAt(before, hunks.map((h) => r.at[h.first]!))
  const newLines = linesAt(after, hunks.map((h) => newAt(h.first)))
  const shown = hunks.map(({ end, first, last }, i) => {
    const removed = linesBetween(before, lineStart(before, r.at[first]!), end)
    // whole lines deleted leave an empty range behind: no line is shown as added
    const added = linesBetween(after, lineStart(after, newAt(first)), end + (last + 1) * shift)
    return [
      `@@ -${oldLines[i]},${removed.length} +${newLines[i]},${added.length} @@`,
      ...side("-", removed),
      ...side("+", added)
    ].join("\n")
  })
  const rest = r.at.length - (hunks.length === 0 ? 0 : hunks[hunks.length - 1]!.last + 1)
  return rest > 0 ? [...shown, `… ${rest} more replacement${rest === 1 ? "" : "s"}`].join("\n") : shown.join("\n")
}

/** Reads a whole file of at most `limit` bytes (a file that grew past it reads as `limit + 1`). */
const readAll = (handle: Handle, size: number, limit: number): Effect.Effect<Uint8Array, SystemFailure> =>
  Effect.gen(function*() {
    let buffer = new Uint8Array(Math.min(size, limit) + 1)
    let length = 0
    while (length <= limit) {
      if (length === buffer.byteLength) {
        const larger = new Uint8Array(Math.min(buffer.byteLength * 2, limit + 1))
        larger.set(buffer)
        buffer = larger
      }
      const read = yield* handle.read(buffer.subarray(length), length)
      if (read === 0) break
      length += read
    }
    return buffer.subarray(0, length)
  })

const sameFile = (a: Stat, b: Stat) => a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs

/** Ascending numbers without repeats. */
const distinct = (ascending: ReadonlyArray<number>): Array<number> =>
  ascending.filter((n, i) => i === 0 || n !== ascending[i - 1])

const listLines = (lines: ReadonlyArray<number>): string =>
  lines.length > linesListed
    ? `${lines.slice(0, linesListed).join(", ")}, …`
    : lines.join(", ")

/** The `edit` tool. */
export const make = (settings: Settings) =>
  Tool.make("edit", {
    description: "Edit a text file of the workspace by replacing an exact text: old must occur exactly once (or set " +
      "replaceAll), whitespace included, so copy it from what read showed (without the line numbers). The file is " +
      "written back atomically (a read-only file is refused); the result shows the lines that changed.",
    parameters: EditParameters,
    execute: ({ new: replacement, old, path, replaceAll }) =>
      access(settings, "edit", "edit", path, ({ entry, rel }) =>
        Effect.gen(function*() {
          const resolved = yield* expectFile(entry, path, "edit")
          const held = Locks.keyOf(resolved.chain[resolved.chain.length - 1]!, resolved.name)
          return yield* Locks.withLock(settings.workspace.locks, held)(
            editLocked(settings, resolved, rel, path, old, replacement, replaceAll === true)
          )
        }))
  })

type ResolvedFile = Extract<Entry, { readonly _tag: "File" }>

/**
 * The file as it is now, once its lock is held: an edit that waited for another one changes
 * the text that one wrote, not the text it found before waiting.
 */
const reopened = (settings: Settings, file: ResolvedFile, path: string) =>
  Effect.gen(function*() {
    const changed = new FileIoError({
      path,
      systemCode: "EAGAIN",
      message: `${show(path)} changed while it was being edited; nothing was written: read it again`
    })
    const now = yield* openChild(settings.workspace, file.chain, file.name).pipe(
      // a symbolic link in its place now: not the file that was resolved
      Effect.catchIf((e) => e._tag === "SystemFailure" && e.systemCode === "ELOOP", () => Effect.fail(changed))
    )
    return now.stat.type === "File" ? { ...file, handle: now.handle, stat: now.stat } : yield* changed
  })

/** The edit of `resolved`, while the other writers of the file in this Layer wait. */
const editLocked = (
  settings: Settings,
  resolved: ResolvedFile,
  rel: ReadonlyArray<string>,
  path: string,
  old: string,
  replacement: string,
  replaceAll: boolean
) =>
  Effect.gen(function*() {
    const file = yield* reopened(settings, resolved, path)
    yield* expectWritable(settings.workspace, file, path, "edit")
    const tooLarge = (size: number) =>
      new FileTooLargeError({
        path,
        size,
        limit: settings.maxEditBytes,
        message: `${show(path)} is ${formatSize(size)}, more than the ${
          formatSize(settings.maxEditBytes)
        } edit works on; read it in ranges and rewrite it with write, or change it with a command`
      })
    if (file.stat.size > settings.maxEditBytes) return yield* tooLarge(file.stat.size)
    const bytes = yield* readAll(file.handle, file.stat.size, settings.maxEditBytes)
    if (bytes.byteLength > settings.maxEditBytes) return yield* tooLarge(bytes.byteLength)
    const text = decode(bytes, true)
    if (typeof text !== "string") {
      return yield* new FileBinaryError({
        path,
        size: bytes.byteLength,
        reason: text.binary,
        message: `${show(path)} is a binary file (${formatSize(bytes.byteLength)}; ${
          text.binary === "nul-byte" ? "it holds NUL bytes" : "it is not valid UTF-8"
        }); edit changes text files only`
      })
    }
    const planned = plan(text, old, replacement, replaceAll)
    switch (planned._tag) {
      case "Same":
        return `No change: old and new are the same text, so ${show(path)} was left as it is`
      case "NotFound": {
        const { closest, hint } = Mismatch.hint(text, planned.tried, diffLineLength)
        return yield* new EditNotFoundError({
          path,
          message: `The old text does not occur in ${show(path)}; ${hint}`,
          ...(closest === undefined ? {} : { closest })
        })
      }
      case "Ambiguous": {
        // occurrences sharing a line name it once
        const lines = distinct(linesAt(text, planned.at))
        return yield* new EditAmbiguousError({
          path,
          count: planned.at.length,
          lines: lines.slice(0, linesListed),
          message: `The old text occurs ${planned.at.length} times in ${show(path)} (starting on line${
            lines.length === 1 ? "" : "s"
          } ${listLines(lines)}); include more of the surrounding lines to make it unique, or set replaceAll to replace them all`
        })
      }
      case "Replace": {
        const r = planned.replacement
        const edited = apply(text, r)
        const encoded = new TextEncoder().encode(edited)
        const parent = file.chain[file.chain.length - 1]!
        // a file changed since it was read (another writer) is not overwritten with stale text
        const now = yield* Effect.scoped(openChild(settings.workspace, file.chain, file.name))
        if (!sameFile(now.stat, file.stat)) {
          return yield* new FileIoError({
            path,
            systemCode: "EAGAIN",
            message: `${show(path)} changed while it was being edited; nothing was written: read it again`
          })
        }
        yield* replaceFile(settings.workspace, file.chain, file.name, encoded, file.stat)
        const written = shownRel([...parent.rel, file.name])
        yield* recordChange({ tool: "edit", path: written, change: "edited", bytes: encoded.byteLength })
        const count = r.at.length
        // two replacements on one line name it once
        const lines = distinct(linesAt(text, r.at))
        return `Edited ${show(shownRel(rel))}: ${count} replacement${count === 1 ? "" : "s"} (line${
          lines.length === 1 ? "" : "s"
        } ${listLines(lines)})\n${diff(text, edited, r)}`
      }
    }
  })
