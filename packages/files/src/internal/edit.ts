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
import { access, expectFile, pathParameter, type Settings } from "./access.ts"
import type { Handle, Stat } from "./descriptor.ts"
import { recordChange } from "./events.ts"
import { show, type SystemFailure } from "./system.ts"
import { closestLine, cutLine, decode, formatSize, linesAt, splitLines, withoutCr } from "./text.ts"
import { openChild, shownRel } from "./workspace.ts"
import { atomicWrite } from "./write.ts"

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
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "Ambiguous"; readonly at: ReadonlyArray<number> }
  | { readonly _tag: "Replace"; readonly replacement: Replacement }

/**
 * What to replace. Text read through `read` loses the `\r` of CRLF line endings, so when the
 * old text is absent as given from a CRLF file, it is looked for (and replaced) with CRLF
 * endings.
 */
export const plan = (text: string, old: string, replacement: string, replaceAll: boolean): Plan => {
  if (old === replacement) return { _tag: "Same" }
  let variant = { old, new: replacement }
  let found = occurrences(text, old)
  if (found.length === 0 && old.includes("\n") && !old.includes("\r\n") && text.includes("\r\n")) {
    const crlf = { old: old.replaceAll("\n", "\r\n"), new: replacement.replaceAll(/\r?\n/g, "\r\n") }
    const again = occurrences(text, crlf.old)
    if (again.length > 0) {
      variant = crlf
      found = again
    }
  }
  if (found.length === 0) return { _tag: "NotFound" }
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

/** The whole lines of `text` that the characters from `from` to `to` touch. */
const touched = (text: string, from: number, to: number): Array<string> => {
  const start = text.lastIndexOf("\n", from - 1) + 1
  const endsLine = to > from && text[to - 1] === "\n"
  const next = text.indexOf("\n", endsLine ? to - 1 : to)
  return text.slice(start, endsLine ? to - 1 : next < 0 ? text.length : next).split("\n").map(withoutCr)
}

/** Whether the characters from `from` to `to` are whole lines, their line breaks included. */
const wholeLines = (text: string, from: number, to: number): boolean =>
  (from === 0 || text[from - 1] === "\n") && to > from && text[to - 1] === "\n"

const side = (sign: string, lines: ReadonlyArray<string>): Array<string> => {
  const shown = lines.slice(0, linesPerSide).map((line) => `${sign}${cutLine(line, diffLineLength)}`)
  return lines.length > linesPerSide ? [...shown, `${sign}… ${lines.length - linesPerSide} more lines`] : shown
}

/** A compact diff of the first replacements: the lines each touches, before and after. */
export const diff = (before: string, after: string, r: Replacement): string => {
  const shownAt = r.at.slice(0, hunksShown)
  const shift = r.new.length - r.old.length
  const newAt = shownAt.map((at, i) => at + i * shift)
  const oldLines = linesAt(before, shownAt)
  const newLines = linesAt(after, newAt)
  const hunks = shownAt.map((at, i) => {
    const removed = touched(before, at, at + r.old.length)
    // whole lines deleted leave no line behind to show as added
    const added = r.new === "" && wholeLines(before, at, at + r.old.length)
      ? []
      : touched(after, newAt[i]!, newAt[i]! + r.new.length)
    return [
      `@@ -${oldLines[i]},${removed.length} +${newLines[i]},${added.length} @@`,
      ...side("-", removed),
      ...side("+", added)
    ].join("\n")
  })
  const rest = r.at.length - shownAt.length
  return rest > 0 ? [...hunks, `… ${rest} more replacement${rest === 1 ? "" : "s"}`].join("\n") : hunks.join("\n")
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

const listLines = (lines: ReadonlyArray<number>): string =>
  lines.length > linesListed
    ? `${lines.slice(0, linesListed).join(", ")}, …`
    : lines.join(", ")

/** The `edit` tool. */
export const make = (settings: Settings) =>
  Tool.make("edit", {
    description: "Edit a text file of the workspace by replacing an exact text: old must occur exactly once (or set " +
      "replaceAll), whitespace included, so copy it from what read showed (without the line numbers). The file is " +
      "written back atomically; the result shows the lines that changed.",
    parameters: EditParameters,
    execute: ({ new: replacement, old, path, replaceAll }) =>
      access(settings, "edit", "edit", path, ({ entry, rel }) =>
        Effect.gen(function*() {
          const file = yield* expectFile(entry, path, "edit")
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
          const planned = plan(text, old, replacement, replaceAll === true)
          switch (planned._tag) {
            case "Same":
              return `No change: old and new are the same text, so ${show(path)} was left as it is`
            case "NotFound": {
              const closest = closestLine(splitLines(text), old.split("\n").find((line) => line.trim() !== "") ?? old)
              const hint = closest === undefined
                ? "read the file to see its current text"
                : closest.whitespaceOnly
                ? `line ${closest.line} differs from the first line of old only in whitespace: ${
                  JSON.stringify(cutLine(closest.text, diffLineLength))
                }`
                : `the closest line is ${closest.line}: ${JSON.stringify(cutLine(closest.text, diffLineLength))}`
              return yield* new EditNotFoundError({
                path,
                message: `The old text does not occur in ${show(path)}; ${hint}`,
                ...(closest === undefined
                  ? {}
                  : { closest: { line: closest.line, text: cutLine(closest.text, diffLineLength) } })
              })
            }
            case "Ambiguous": {
              const lines = linesAt(text, planned.at)
              return yield* new EditAmbiguousError({
                path,
                count: planned.at.length,
                lines: lines.slice(0, linesListed),
                message: `The old text occurs ${planned.at.length} times in ${show(path)} (starting on lines ${
                  listLines(lines)
                }); include more of the surrounding lines to make it unique, or set replaceAll to replace them all`
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
              yield* atomicWrite(settings.workspace, file.chain, file.name, encoded, file.stat.mode)
              const written = shownRel([...parent.rel, file.name])
              yield* recordChange({ tool: "edit", path: written, change: "edited", bytes: encoded.byteLength })
              const count = r.at.length
              const lines = linesAt(text, r.at)
              return `Edited ${show(shownRel(rel))}: ${count} replacement${count === 1 ? "" : "s"} (line${
                count === 1 ? "" : "s"
              } ${listLines(lines)})\n${diff(text, edited, r)}`
            }
          }
        }))
  })
