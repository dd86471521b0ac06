/**
 * Walking a directory tree of the workspace for `glob` and `search`: depth first, each
 * directory's entries in name order, every directory opened under its parent like any other
 * path (./workspace.ts), so the walk never leaves the root. Symbolic links are reported but
 * never followed (no cycles, no escape); ignored names are not entered; the walk stops after a
 * bounded number of entries and says so.
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Glob from "effect/Glob"
import type { Settings } from "./access.ts"
import { childPath, type Dir, dirOf, openChild } from "./workspace.ts"

/** Deeper directories are not entered (each level holds a descriptor open). */
export const maxDepth = 128

/** An entry the walk came across. */
export interface Visit {
  /** From the root to the directory holding the entry. */
  readonly chain: ReadonlyArray<Dir>
  readonly name: string
  /** Its path from where the walk started. */
  readonly rel: ReadonlyArray<string>
  readonly type: FileSystem.File.Type
}

/** What a walk saw. */
export interface Walked {
  readonly entries: number
  /** Whether it stopped at the entry bound before seeing everything. */
  readonly truncated: boolean
  /** Whether it left directories below {@link maxDepth} unentered. */
  readonly tooDeep: boolean
  /** The ignored names it did not enter, each once, in the order met. */
  readonly ignored: ReadonlyArray<string>
  /** Directories it could not read (permissions, or removed meanwhile). */
  readonly unreadable: number
}

/** Whether an entry is ignored: a pattern matches its name or its root-relative path. */
export const isIgnored = (settings: Settings, name: string, fromRoot: ReadonlyArray<string>): boolean =>
  settings.ignore.some((glob) => Glob.match(glob, name) || Glob.match(glob, fromRoot.join("/")))

/**
 * Walks the tree under the last directory of `start` (at `startRel` under the root, as the
 * model wrote it), calling `visit` for every entry; `visit` returns `false` to stop the walk.
 */
export const walk = <E, R>(
  settings: Settings,
  start: ReadonlyArray<Dir>,
  startRel: ReadonlyArray<string>,
  visit: (entry: Visit) => Effect.Effect<boolean, E, R>
): Effect.Effect<Walked, E, R> =>
  Effect.gen(function*() {
    const { fs } = settings.workspace
    let entries = 0
    let truncated = false
    let tooDeep = false
    let stopped = false
    let unreadable = 0
    const ignored: Array<string> = []

    const directory = (chain: ReadonlyArray<Dir>, rel: ReadonlyArray<string>): Effect.Effect<void, E, R> =>
      Effect.scoped(Effect.gen(function*() {
        const dir = chain[chain.length - 1]!
        const listed = yield* Effect.result(fs.readDirectoryEntries(dir.path))
        if (listed._tag === "Failure") {
          unreadable++
          return
        }
        const sorted = [...listed.success].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        for (const entry of sorted) {
          if (stopped) return
          if (entries >= settings.maxWalkEntries) {
            truncated = true
            stopped = true
            return
          }
          entries++
          const entryRel = [...rel, entry.name]
          if (isIgnored(settings, entry.name, [...startRel, ...entryRel])) {
            if (!ignored.includes(entry.name)) ignored.push(entry.name)
            continue
          }
          const type = entry.type === "Unknown"
            ? yield* fs.lstat(childPath(dir, entry.name)).pipe(
              Effect.map((info) => info.type),
              Effect.orElseSucceed((): FileSystem.File.Type => "Unknown")
            )
            : entry.type
          if (!(yield* visit({ chain, name: entry.name, rel: entryRel, type }))) {
            stopped = true
            return
          }
          if (type !== "Directory") continue
          if (chain.length > maxDepth) {
            tooDeep = true
            continue
          }
          // opened like any path: a directory swapped for a link since it was listed is not entered
          const opened = yield* Effect.result(openChild(settings.workspace, chain, entry.name))
          if (opened._tag === "Failure") {
            if (opened.failure._tag === "SystemFailure" && opened.failure.systemCode !== "ELOOP") unreadable++
            continue
          }
          if (opened.success.stat.type !== "Directory") continue
          yield* directory(
            [...chain, dirOf(settings.workspace, dir, entry.name, opened.success.handle, opened.success.stat)],
            entryRel
          )
        }
      }))

    yield* directory(start, [])
    return { entries, truncated, tooDeep, ignored, unreadable } satisfies Walked
  })

/** The notes a walk's result ends with: what it skipped or did not reach. */
export const walkNotes = (walked: Walked): Array<string> => {
  const notes: Array<string> = []
  if (walked.truncated) {
    notes.push(`(stopped after looking at ${walked.entries} entries: give a narrower path to see the rest)`)
  }
  if (walked.tooDeep) notes.push(`(directories more than ${maxDepth} levels deep were not entered)`)
  if (walked.ignored.length > 0) {
    const names = walked.ignored.slice(0, 5).join(", ") + (walked.ignored.length > 5 ? ", …" : "")
    notes.push(`(ignored: ${names}; give a path inside one to search it)`)
  }
  if (walked.unreadable > 0) {
    notes.push(`(${walked.unreadable} director${walked.unreadable === 1 ? "y" : "ies"} could not be read)`)
  }
  return notes
}
