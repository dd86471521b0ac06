/**
 * The `list` and `glob` tools: a directory's entries, and the paths under a directory that
 * match a glob pattern — each bounded, saying when it was cut, every path root-relative as the
 * model wrote it.
 */
import { Tool } from "@dsh/tools"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Glob from "effect/Glob"
import * as Schema from "effect/Schema"
import { access, countParameter, denied, expectDirectory, pathParameter, reported, type Settings } from "./access.ts"
import { globParameter } from "./pattern.ts"
import { failure, show } from "./system.ts"
import { formatSize } from "./text.ts"
import { walk, walkNotes } from "./walk.ts"
import { childPath, locate, resolve, shownRel } from "./workspace.ts"

/** The most entries or matches one call may ask for. */
export const maxResults = 5000

const defaultLimit = 500

const byName = (a: { readonly name: string }, b: { readonly name: string }) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0

const prefixOf = (rel: ReadonlyArray<string>) => (rel.length === 0 ? "" : `${rel.join("/")}/`)

const kindNote = (type: FileSystem.File.Type): string => {
  switch (type) {
    case "SymbolicLink":
      return "@ (symbolic link)"
    case "FIFO":
      return " (FIFO)"
    case "Socket":
      return " (socket)"
    case "BlockDevice":
    case "CharacterDevice":
      return " (device)"
    default:
      return ""
  }
}

/** The list tool's parameters. */
export const ListParameters = Schema.Struct({
  path: Schema.optionalKey(pathParameter("The directory to list (default: the workspace root)")),
  limit: Schema.optionalKey(countParameter(maxResults, `How many entries to show at most (default: ${defaultLimit})`))
})

/** The `list` tool. */
export const makeList = (settings: Settings) =>
  Tool.make("list", {
    description: "List a directory of the workspace: its entries in name order, directories ending in /, files " +
      "with their sizes, symbolic links marked @. Paths are relative to the workspace root. To find files " +
      "deeper down, use glob.",
    parameters: ListParameters,
    concurrencySafe: true,
    execute: ({ limit, path }) => {
      const input = path ?? "."
      return access(settings, "list", "list", input, ({ entry, rel }) =>
        Effect.gen(function*() {
          const chain = yield* expectDirectory(entry, input, "list", "; read it instead")
          const dir = chain[chain.length - 1]!
          const listed = yield* Effect.mapError(settings.workspace.fs.readDirectoryEntries(dir.path), failure)
          const sorted = [...listed].sort(byName)
          const shown = sorted.slice(0, limit ?? defaultLimit)
          const prefix = prefixOf(rel)
          const lines = yield* Effect.forEach(shown, (e) =>
            e.type === "Directory"
              ? Effect.succeed(`${prefix}${e.name}/`)
              : e.type === "File"
              ? settings.workspace.fs.lstat(childPath(dir, e.name)).pipe(
                Effect.map((info) => `${prefix}${e.name} (${formatSize(Number(info.size))})`),
                // gone since it was listed: still listed, without a size
                Effect.orElseSucceed(() => `${prefix}${e.name}`)
              )
              : Effect.succeed(`${prefix}${e.name}${kindNote(e.type)}`), { concurrency: 16 })
          const header = `${prefix === "" ? "./" : prefix} (${sorted.length} entr${sorted.length === 1 ? "y" : "ies"})`
          const rest = sorted.length - shown.length
          return [
            header,
            ...lines,
            ...(rest > 0 ? [`… ${rest} more entries not shown (list a subdirectory, or glob to filter)`] : [])
          ].join("\n")
        }))
    }
  })

/** The glob tool's parameters. */
export const GlobParameters = Schema.Struct({
  pattern: globParameter(
    "A glob pattern relative to path: * and ? within a name, ** across directories, {a,b} " +
      "alternatives, [abc] sets; e.g. **/*.ts or src/**/test_*.py. A pattern ending in / matches directories"
  ),
  path: Schema.optionalKey(pathParameter("The directory to search under (default: the workspace root)")),
  limit: Schema.optionalKey(countParameter(maxResults, `How many paths to show at most (default: ${defaultLimit})`))
})

const magic = /[*?[\]{}\\]/

/**
 * The leading plain names of a pattern's segments, before the last name it matches: where the
 * walk may start instead of at path. The trailing `/` of a directory pattern is no name, so
 * `src/util/` starts the walk in `src`, where `util` is met.
 */
export const literalPrefix = (segments: ReadonlyArray<string>): Array<string> => {
  const named = [...segments]
  while (named.length > 0 && (named[named.length - 1] === "" || named[named.length - 1] === ".")) named.pop()
  const literal: Array<string> = []
  for (const segment of named.slice(0, -1)) {
    if (magic.test(segment)) break
    if (segment !== "" && segment !== ".") literal.push(segment)
  }
  return literal
}

/** The `glob` tool. */
export const makeGlob = (settings: Settings) =>
  Tool.make("glob", {
    description: "Find the paths of the workspace that match a glob pattern (files; directories when the pattern ends " +
      "in /), in path order, relative to the workspace root. Names starting with . match only a pattern whose " +
      "part starts with .; ignored directories (such as node_modules and .git) are not entered unless path is " +
      "inside one; symbolic links are not followed.",
    parameters: GlobParameters,
    concurrencySafe: true,
    execute: ({ limit, path, pattern }) => {
      const input = path ?? "."
      const segments = pattern.split("/")
      if (pattern.startsWith("/") || segments.includes("..")) {
        return Effect.fail(denied(
          "glob",
          `the pattern ${JSON.stringify(pattern)} reaches out of the directory it searches; give a relative ` +
            "pattern without .. (and path to search elsewhere in the workspace)"
        ))
      }
      const directoriesOnly = pattern.endsWith("/")
      const glob = Glob.make(pattern)
      const literal = literalPrefix(segments)
      return access(settings, "glob", "search", input, ({ entry, rel }) =>
        Effect.gen(function*() {
          yield* expectDirectory(entry, input, "search", "; give a directory as path")
          const prefix = shownRel([...rel, ...literal])
          // a prefix that does not exist matches nothing; one that leads out is refused like a path,
          // naming the prefix (the path the walk would have started at), not only path
          const start = yield* locate(settings.workspace, prefix).pipe(
            Effect.flatMap((within) => resolve(settings.workspace, within)),
            Effect.map((resolved) => (resolved._tag === "Directory" ? resolved.chain : undefined)),
            Effect.catchTag("SystemFailure", (e) =>
              e.systemCode === "ENOENT" || e.systemCode === "ENOTDIR" ? Effect.succeed(undefined) : Effect.fail(e)),
            reported(settings, "glob", "search", prefix)
          )
          const max = limit ?? defaultLimit
          const found: Array<string> = []
          let total = 0
          const base = [...rel, ...literal]
          const walked = start !== undefined
            ? yield* walk(settings, start, base, (visit) =>
              Effect.sync(() => {
                const isDirectory = visit.type === "Directory"
                if (isDirectory !== directoriesOnly) return true
                const fromPattern = [...literal, ...visit.rel].join("/")
                if (!Glob.match(glob, isDirectory ? `${fromPattern}/` : fromPattern)) return true
                total++
                if (found.length < max) found.push(`${shownRel([...base, ...visit.rel])}${isDirectory ? "/" : ""}`)
                return true
              }))
            : undefined
          const notes = walked === undefined ? [] : walkNotes(walked)
          if (total === 0) {
            return [`No ${directoriesOnly ? "directories" : "files"} match ${JSON.stringify(pattern)} under ${
              show(shownRel(rel))
            }`, ...notes].join("\n")
          }
          const rest = total - found.length
          return [
            ...found,
            ...(rest > 0 ? [`… ${rest} more not shown (narrow the pattern or the path)`] : []),
            ...notes
          ].join("\n")
        }))
    }
  })
