/**
 * The `read` tool: a text file with numbered lines, whole up to the size cap or as a range of
 * lines (streamed, so a range of a huge file reads only up to the range's end).
 */
import { Tool } from "@dsh/tools"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { FileBinaryError, FileTooLargeError } from "../FileError.ts"
import { access, countParameter, expectFile, pathParameter, type Settings } from "./access.ts"
import type { Handle } from "./descriptor.ts"
import { show } from "./system.ts"
import { cutLine, formatSize, LineScanner, numbered, withoutCr } from "./text.ts"

const chunkSize = 64 * 1024

/** The most lines one read may ask for. */
export const maxLimit = 1_000_000

/** The furthest line a read may start at. */
export const maxOffset = 1_000_000_000

/** The read tool's parameters. */
export const ReadParameters = Schema.Struct({
  path: pathParameter("The file to read"),
  offset: Schema.optionalKey(countParameter(maxOffset, "The first line to show, from 1 (default: 1)")),
  limit: Schema.optionalKey(countParameter(maxLimit, "How many lines to show (default: to the end of the file)"))
})

interface Range {
  readonly first: number
  /** The line after the last one wanted (`Infinity`: to the end). */
  readonly end: number
}

interface Scanned {
  readonly lines: Array<{ readonly line: number; readonly text: string }>
  /** Lines seen, up to where the scan stopped. */
  readonly seen: number
  /** Whether lines follow the last one shown. */
  readonly more: boolean
  /** The first line left out because the output reached its cap. */
  readonly cutAt: number | undefined
}

// Streams the file's lines, keeping those of the range until the output reaches its cap.
const scan = (settings: Settings, input: string, handle: Handle, size: number, range: Range) =>
  Effect.gen(function*() {
    const scanner = new LineScanner(settings.maxLineLength)
    const buffer = new Uint8Array(chunkSize)
    const lines: Array<{ line: number; text: string }> = []
    let seen = 0
    let position = 0
    let output = 0
    let more = false
    let cutAt: number | undefined
    while (!more) {
      // the range is complete and a line has begun after it: that is all we need to know
      if (seen >= range.end - 1 && scanner.pending) {
        more = true
        break
      }
      const read = yield* handle.read(buffer, position)
      position += read
      const pushed = scanner.push(buffer.subarray(0, read), read === 0)
      if ("binary" in pushed) {
        return yield* new FileBinaryError({
          path: input,
          size,
          reason: pushed.binary,
          message: `${show(input)} is a binary file (${formatSize(size)}; ${
            pushed.binary === "nul-byte" ? "it holds NUL bytes" : "it is not valid UTF-8"
          }); read shows text files only`
        })
      }
      for (const scanned of pushed) {
        seen++
        if (seen < range.first) continue
        if (seen >= range.end || cutAt !== undefined) {
          more = true
          break
        }
        const raw = withoutCr(scanned.text)
        const length = scanned.length - (scanned.text.endsWith("\r") && scanned.text.length === scanned.length ? 1 : 0)
        const text = cutLine(raw, settings.maxLineLength, length)
        if (lines.length > 0 && output + text.length > settings.maxReadBytes) {
          cutAt = seen
          more = true
          break
        }
        lines.push({ line: seen, text })
        output += text.length + 8
      }
      if (read === 0) break
    }
    return { lines, seen, more, cutAt } satisfies Scanned
  })

const render = (input: string, range: Range, scanned: Scanned, settings: Settings): string => {
  const { cutAt, lines, more, seen } = scanned
  if (lines.length === 0) {
    return seen === 0
      ? `(${show(input)} is empty)`
      : `(${show(input)} has ${seen} line${seen === 1 ? "" : "s"}; offset ${range.first} is past its end)`
  }
  const first = lines[0]!.line
  const last = lines[lines.length - 1]!.line
  const body = numbered(lines)
  if (cutAt !== undefined) {
    return `${body}\n\n(output cut at ${
      formatSize(settings.maxReadBytes)
    } after line ${last}; continue with offset ${cutAt})`
  }
  if (more) return `${body}\n\n(lines ${first}–${last} shown; more follow: continue with offset ${last + 1})`
  if (first > 1) return `${body}\n\n(lines ${first}–${last} of ${seen})`
  return body
}

/** The `read` tool. */
export const make = (settings: Settings) =>
  Tool.make("read", {
    description: "Read a text file of the workspace, with numbered lines (like `cat -n`). Without offset and limit " +
      `it shows the whole file, up to ${formatSize(settings.maxReadBytes)}; for a larger file, or to see part of ` +
      "one, give offset (the first line, from 1) and limit (how many lines). Binary files are refused.",
    parameters: ReadParameters,
    concurrencySafe: true,
    execute: ({ limit, offset, path }) =>
      access(settings, "read", "read", path, ({ entry }) =>
        Effect.gen(function*() {
          const file = yield* expectFile(entry, path, "read")
          const size = file.stat.size
          if (offset === undefined && limit === undefined && size > settings.maxReadBytes) {
            return yield* new FileTooLargeError({
              path,
              size,
              limit: settings.maxReadBytes,
              message: `${show(path)} is ${formatSize(size)}, more than the ${
                formatSize(settings.maxReadBytes)
              } read shows at once; read it in ranges of lines with offset and limit (e.g. offset: 1, limit: 1000)`
            })
          }
          const range: Range = {
            first: offset ?? 1,
            end: limit === undefined ? Number.POSITIVE_INFINITY : (offset ?? 1) + limit
          }
          const scanned: Scanned = yield* scan(settings, path, file.handle, size, range)
          return render(path, range, scanned, settings)
        }))
  })
