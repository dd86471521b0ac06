/**
 * The `search` tool: the lines of the workspace's text files that contain a text (or match a
 * regular expression), as `path:line: excerpt`, bounded, skipping binary files, files over the
 * size bound and ignored directories, and saying what it skipped.
 */
import { Tool, ToolErrors } from "@dsh/tools"
import * as Effect from "effect/Effect"
import * as Glob from "effect/Glob"
import * as Schema from "effect/Schema"
import { access, type AccessError, countParameter, denied, notRegularFile, pathParameter, type Settings } from "./access.ts"
import { globParameter } from "./pattern.ts"
import { make as systemFailure } from "./system.ts"
import { decode, excerpt, formatSize, splitLines, withoutCr } from "./text.ts"
import { walk, walkNotes } from "./walk.ts"
import { type Dir, openChild, shownRel } from "./workspace.ts"

/** The most matches one call may ask for. */
export const maxMatches = 1000

const defaultLimit = 100
const excerptLength = 200

/** The search tool's parameters. */
export const SearchParameters = Schema.Struct({
  pattern: Schema.String.check(Schema.isMinCodePoints(1)).annotate({
    description: "The text to look for (exact, by default), or a JavaScript regular expression when regex is " +
      "true, compiled with the u flag (Unicode: \\p{L} and astral characters work; escape a literal { } ])"
  }),
  path: Schema.optionalKey(pathParameter("The directory (or file) to search (default: the workspace root)")),
  regex: Schema.optionalKey(Schema.Boolean.annotate({ description: "Treat pattern as a regular expression (default: false)" })),
  ignoreCase: Schema.optionalKey(Schema.Boolean.annotate({ description: "Match regardless of case (default: false)" })),
  glob: Schema.optionalKey(
    globParameter(
      "Search only the files matching this glob pattern: against the file name when it has no /, " +
        "else against the path from path (e.g. *.ts, src/**/*.py)"
    )
  ),
  limit: Schema.optionalKey(countParameter(maxMatches, `How many matching lines to show at most (default: ${defaultLimit})`))
})

const escapeRegExp = (text: string) => text.replaceAll(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * The matcher of a pattern. It is always compiled with the `u` flag, so a line is matched as
 * code points, not UTF-16 halves: `.` and `[😀]` take a whole astral character, `\p{L}`,
 * `\u{1F600}` and Unicode case folding work. The price is the `u` flag's stricter syntax: a
 * literal `{`, `}` or `]` must be escaped, and `\` escapes only what has a meaning in a
 * pattern (`\-` outside a class, `\_` are errors), which {@link unicodeHint} tells the model.
 */
const compile = (pattern: string, regex: boolean, ignoreCase: boolean): RegExp =>
  new RegExp(regex ? pattern : escapeRegExp(pattern), ignoreCase ? "iu" : "u")

/** What a regular expression that does not compile is told, besides the engine's reason. */
const unicodeHint = " (patterns are compiled with the u flag, as Unicode: escape a literal {, } or ] as \\{, \\}, " +
  "\\], and escape with \\ only characters that have a meaning in a pattern)"

interface Tally {
  files: number
  binary: number
  large: number
  unreadable: number
}

/** The `search` tool. */
export const make = (settings: Settings) =>
  Tool.make("search", {
    description: "Search the text files of the workspace for the lines containing a text (or matching a regular " +
      "expression). Shows path:line: excerpt for each match, in path order. Binary files, files over " +
      `${formatSize(settings.maxSearchFileBytes)} and ignored directories (such as node_modules and .git, unless ` +
      "path is inside one) are skipped; symbolic links are not followed.",
    parameters: SearchParameters,
    concurrencySafe: true,
    execute: ({ glob, ignoreCase, limit, path, pattern, regex }): Effect.Effect<
      string,
      AccessError | ToolErrors.ToolArgsError
    > => {
      const input = path ?? "."
      let matcher: RegExp
      try {
        matcher = compile(pattern, regex === true, ignoreCase === true)
      } catch (cause) {
        const reason = `${cause instanceof Error ? cause.message : String(cause)}${regex === true ? unicodeHint : ""}`
        return Effect.fail(
          new ToolErrors.ToolArgsError({
            tool: "search",
            violations: [{
              path: ["pattern"],
              kind: "check",
              expected: "a valid regular expression",
              actual: JSON.stringify(pattern),
              message: `Expected a valid regular expression, got ${JSON.stringify(pattern)}: ${reason}`
            }],
            message: `Invalid arguments for tool "search" (1 problem):\n- at pattern: ${reason}`
          })
        )
      }
      // as glob refuses it: a pattern reaching out of the searched directory matches nothing
      // there, and "no matches" would tell the model there is nothing to find
      if (glob !== undefined && (glob.startsWith("/") || glob.split("/").includes(".."))) {
        return Effect.fail(denied(
          "search",
          `the glob ${JSON.stringify(glob)} reaches out of the directory it searches; give a relative ` +
            "pattern without .. (and path to search elsewhere in the workspace)"
        ))
      }
      const fileFilter = glob === undefined ? undefined : { glob: Glob.make(glob), byPath: glob.includes("/") }
      const max = limit ?? defaultLimit
      return access(settings, "search", "search", input, ({ entry, rel }) =>
        Effect.gen(function*() {
          const found: Array<string> = []
          const tally: Tally = { files: 0, binary: 0, large: 0, unreadable: 0 }
          let more = false

          // Searches one file; false once the bound is reached.
          const searchFile = (chain: ReadonlyArray<Dir>, name: string, shown: string) =>
            Effect.scoped(Effect.gen(function*() {
              const opened = yield* Effect.result(openChild(settings.workspace, chain, name))
              // gone, unreadable, or no longer a file since it was listed
              if (opened._tag === "Failure" || opened.success.stat.type !== "File") {
                tally.unreadable++
                return true
              }
              const { handle, stat } = opened.success
              if (stat.size > settings.maxSearchFileBytes) {
                tally.large++
                return true
              }
              const buffer = new Uint8Array(stat.size)
              let length = 0
              while (length < buffer.byteLength) {
                const read = yield* Effect.orElseSucceed(handle.read(buffer.subarray(length), length), () => 0)
                if (read === 0) break
                length += read
              }
              const text = decode(buffer.subarray(0, length), false)
              if (typeof text !== "string") {
                tally.binary++
                return true
              }
              tally.files++
              const lines = splitLines(text)
              for (let i = 0; i < lines.length; i++) {
                const line = withoutCr(lines[i]!)
                const match = matcher.exec(line)
                if (match === null) continue
                if (found.length >= max) {
                  more = true
                  return false
                }
                found.push(`${shown}:${i + 1}: ${excerpt(line, match.index, excerptLength)}`)
              }
              return true
            }))

          let notes: Array<string> = []
          if (entry._tag === "File") {
            yield* searchFile(entry.chain, entry.name, shownRel(rel))
          } else if (entry._tag === "Directory") {
            const walked = yield* walk(settings, entry.chain, rel, (visit) => {
              if (visit.type !== "File") return Effect.succeed(true)
              if (
                fileFilter !== undefined &&
                !Glob.match(fileFilter.glob, fileFilter.byPath ? visit.rel.join("/") : visit.name)
              ) return Effect.succeed(true)
              return searchFile(visit.chain, visit.name, shownRel([...rel, ...visit.rel]))
            })
            notes = walkNotes(walked)
          } else if (entry._tag === "Missing") {
            return yield* systemFailure("ENOENT")
          } else {
            return yield* notRegularFile(input, "search")
          }
          const skipped = [
            tally.binary > 0 ? `${tally.binary} binary file${tally.binary === 1 ? "" : "s"}` : undefined,
            tally.large > 0
              ? `${tally.large} file${tally.large === 1 ? "" : "s"} over ${formatSize(settings.maxSearchFileBytes)}`
              : undefined,
            tally.unreadable > 0 ? `${tally.unreadable} unreadable file${tally.unreadable === 1 ? "" : "s"}` : undefined
          ].filter((s) => s !== undefined)
          const what = regex === true ? `/${pattern}/` : JSON.stringify(pattern)
          const summary = found.length === 0
            ? [`No matches for ${what} under ${JSON.stringify(shownRel(rel))} (${tally.files} file${
              tally.files === 1 ? "" : "s"
            } searched)`]
            : found
          return [
            ...summary,
            ...(more ? [`(stopped at ${max} matches: narrow the search with path or glob)`] : []),
            ...(skipped.length > 0 ? [`(skipped ${skipped.join(", ")})`] : []),
            ...notes
          ].join("\n")
        }))
    }
  })
