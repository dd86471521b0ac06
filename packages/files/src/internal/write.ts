/**
 * The `write` tool, and the atomic replacement of a file it shares with `edit`: the new
 * content goes to a fresh temporary file in the same directory (created exclusively, so it
 * is nothing but our own file), is flushed to disk, and is renamed over the target. A reader
 * sees the old file or the new one, never a part; a failure leaves the old one untouched and
 * removes the temporary file. A file with other names (hard links) is rewritten in place
 * instead: a rename would give this name a new file and leave the others with the old one.
 */
import { Tool } from "@dsh/tools"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { FileIoError } from "../FileError.ts"
import { access, expectWritable, namesDirectory, notRegularFile, pathParameter, type Settings } from "./access.ts"
import { createExclusive, openForRewrite, type Stat } from "./descriptor.ts"
import { recordChange } from "./events.ts"
import * as Locks from "./locks.ts"
import { failure, make as systemFailure, show, type SystemFailure } from "./system.ts"
import { formatSize, splitLines } from "./text.ts"
import { childPath, type Dir, Replaced, shownRel, verify, type Workspace } from "./workspace.ts"

/** The permission bits of a new file, before the process's umask. */
const newFileMode = 0o666

const tempName = (): string => `.dsh-${crypto.randomUUID().slice(0, 13)}.tmp`

/**
 * Replaces (or creates) `name` in the last directory of `chain` with `bytes`, atomically.
 * `mode` keeps a replaced file's permission bits.
 */
export const atomicWrite = (
  workspace: Workspace,
  chain: ReadonlyArray<Dir>,
  name: string,
  bytes: Uint8Array,
  mode: number | undefined
): Effect.Effect<void, SystemFailure | Replaced> =>
  Effect.gen(function*() {
    const dir = chain[chain.length - 1]!
    const temp = childPath(dir, tempName())
    const written = Effect.scoped(Effect.gen(function*() {
      const handle = yield* createExclusive(temp, mode ?? newFileMode)
      yield* handle.writeAll(bytes)
      // exact bits, which the umask would have changed at creation
      if (mode !== undefined) yield* handle.chmod(mode)
      yield* handle.sync
    }))
    yield* written.pipe(
      Effect.andThen(verify(workspace, chain)),
      Effect.andThen(Effect.mapError(workspace.fs.rename(temp, childPath(dir, name)), failure)),
      Effect.onError(() => Effect.ignore(workspace.fs.remove(temp)))
    )
    // the rename itself made durable; a directory that cannot be synced is no failure of the write
    yield* Effect.ignore(dir.handle.sync)
  })

/**
 * Replaces the content of `name`: atomically ({@link atomicWrite}), or, for a file with other
 * hard links, in place — truncated and written through the same inode, so every name of it
 * sees the new content (a reader may then see it part-written). `existing` is the file as it
 * was resolved; a file no longer that one (replaced meanwhile) is refused as `Replaced`.
 */
export const replaceFile = (
  workspace: Workspace,
  chain: ReadonlyArray<Dir>,
  name: string,
  bytes: Uint8Array,
  existing: Stat | undefined
): Effect.Effect<void, SystemFailure | Replaced> =>
  existing === undefined || existing.links <= 1
    ? atomicWrite(workspace, chain, name, bytes, existing?.mode)
    : Effect.scoped(Effect.gen(function*() {
      const dir = chain[chain.length - 1]!
      yield* verify(workspace, chain)
      const handle = yield* openForRewrite(childPath(dir, name))
      const now = yield* handle.stat
      if (now.dev !== existing.dev || now.ino !== existing.ino) return yield* new Replaced({ at: shownRel([...dir.rel, name]) })
      yield* handle.truncate(0)
      yield* handle.writeAll(bytes)
      yield* handle.sync
    }))

/** The write tool's parameters. */
export const WriteParameters = Schema.Struct({
  path: pathParameter("The file to write (missing directories are created)"),
  content: Schema.String.annotate({ description: "The file's whole new content" })
})

const lineCount = (text: string): string => {
  const n = splitLines(text).length
  return `${n} line${n === 1 ? "" : "s"}`
}

/** The `write` tool. */
export const make = (settings: Settings) =>
  Tool.make("write", {
    description: "Write a text file of the workspace: create it, or replace its whole content. Missing " +
      "directories are created; the file is replaced atomically (a reader never sees half of it; a file with " +
      "other hard links is rewritten in place). A read-only " +
      "file is refused. To change part of a file, use edit.",
    parameters: WriteParameters,
    execute: ({ content, path }) => {
      const created: Array<ReadonlyArray<string>> = []
      // `new/` names a directory: no file is created under the name, and no directory on the way
      const directory = namesDirectory(path)
      return access(settings, "write", "write", path, ({ entry, rel }) =>
        Effect.gen(function*() {
          if (entry._tag === "Directory") return yield* systemFailure("EISDIR")
          if (directory) {
            return yield* new FileIoError({
              path,
              systemCode: "EISDIR",
              message: `Cannot write ${show(path)}: a path ending in "/" names a directory, not a file; give the ` +
                "file's name (write creates the missing directories on its way)"
            })
          }
          if (entry._tag === "Other") return yield* notRegularFile(path, "write")
          const bytes = new TextEncoder().encode(content)
          // in turn with the Layer's other writers of the file: an edit's read-change-rename is not cut into
          const held = Locks.keyOf(entry.chain[entry.chain.length - 1]!, entry.name)
          yield* Locks.withLock(settings.workspace.locks, held)(Effect.gen(function*() {
            if (entry._tag === "File") yield* expectWritable(settings.workspace, entry, path, "write")
            yield* replaceFile(settings.workspace, entry.chain, entry.name, bytes, entry._tag === "File" ? entry.stat : undefined)
          }))
          const written = [...entry.chain[entry.chain.length - 1]!.rel, entry.name]
          yield* recordChange({
            tool: "write",
            path: shownRel(written),
            change: entry._tag === "File" ? "replaced" : "created",
            bytes: bytes.byteLength
          })
          const where = shownRel(written) === shownRel(rel) ? show(shownRel(rel)) : `${show(shownRel(rel))} (the file ${
            show(shownRel(written))
          } it links to)`
          const what = entry._tag === "File"
            ? `Replaced ${where}: ${formatSize(bytes.byteLength)}, ${lineCount(content)} (it had ${formatSize(entry.stat.size)})`
            : `Created ${where}: ${formatSize(bytes.byteLength)}, ${lineCount(content)}`
          return created.length === 0
            ? what
            : `${what}\nCreated the director${created.length === 1 ? "y" : "ies"} ${
              created.map((d) => show(shownRel(d))).join(", ")
            }`
        }), directory ? {} : { createDirectories: created })
    }
  })
