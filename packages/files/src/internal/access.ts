/**
 * What every tool does around its work: the settings it runs with, placing and resolving the
 * path the model gave, and turning whatever stops it into the error the model reads — a
 * refusal as `TOOL_DENIED`, a system failure as `FILE_NOT_FOUND` / `FILE_IO` naming the path
 * as the model gave it.
 */
import { ToolErrors } from "@dsh/tools"
import * as Effect from "effect/Effect"
import type * as Glob from "effect/Glob"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { FileIoError, type FileNotFoundError } from "../FileError.ts"
import { explain, failure, show, SystemFailure } from "./system.ts"
import {
  childPath,
  describeFailure,
  type Dir,
  type Entry,
  Escape,
  locate,
  Outside,
  type Refusal,
  Replaced,
  resolve,
  type ResolveOptions,
  type Workspace
} from "./workspace.ts"

/** The names the tools are registered under. */
export type ToolName = "read" | "write" | "edit" | "list" | "glob" | "search"

/** What the tools run with (the Layer's options, defaults applied). */
export interface Settings {
  readonly workspace: Workspace
  readonly maxReadBytes: number
  readonly maxEditBytes: number
  readonly maxSearchFileBytes: number
  readonly maxLineLength: number
  readonly maxWalkEntries: number
  readonly ignore: ReadonlyArray<Glob.Glob>
}

/** The failures a tool reports for a path, besides its own. */
export type AccessError = FileNotFoundError | FileIoError | ToolErrors.ToolDeniedError

/** A refusal of a tool's call, in the tools layer's words. */
export const denied = (tool: ToolName, reason: string): ToolErrors.ToolDeniedError =>
  new ToolErrors.ToolDeniedError({ tool, reason, message: `Tool "${tool}" was denied: ${reason}` })

const isInternal = (u: unknown): u is Refusal | SystemFailure =>
  u instanceof SystemFailure || u instanceof Outside || u instanceof Escape || u instanceof Replaced

/** Internal failures of a tool's work on `input` as the errors the model reads. */
export const reported = (settings: Settings, tool: ToolName, verb: string, input: string) =>
<A, E, R>(effect: Effect.Effect<A, E | Refusal | SystemFailure, R>): Effect.Effect<A, Exclude<E, Refusal | SystemFailure> | AccessError, R> =>
  Effect.mapError(effect, (e): Exclude<E, Refusal | SystemFailure> | AccessError => {
    if (!isInternal(e)) return e as Exclude<E, Refusal | SystemFailure>
    const described = describeFailure(settings.workspace, verb, input, e)
    return "denied" in described ? denied(tool, described.denied) : described.error
  })

/** What a path resolved to, and where the model said it was (root-relative, lexically). */
export interface Located {
  readonly entry: Entry
  /** The path's components under the root as the model wrote it (links not followed). */
  readonly rel: ReadonlyArray<string>
}

/**
 * Resolves the path the model gave and runs `use` on what it names, in a scope that closes
 * the descriptors afterwards; failures reach the model naming `input`.
 */
export const access = <A, E, R>(
  settings: Settings,
  tool: ToolName,
  verb: string,
  input: string,
  use: (located: Located) => Effect.Effect<A, E | Refusal | SystemFailure, R>,
  options?: ResolveOptions
): Effect.Effect<A, Exclude<E, Refusal | SystemFailure> | AccessError, Exclude<R, Scope.Scope>> =>
  Effect.gen(function*() {
    const rel = yield* locate(settings.workspace, input)
    const entry = yield* resolve(settings.workspace, rel, options)
    return yield* use({ entry, rel })
  }).pipe(Effect.scoped, reported(settings, tool, verb, input))

/** The directory an entry names, or a `FILE_IO` saying what it is instead. */
export const expectDirectory = (
  entry: Entry,
  input: string,
  verb: string,
  instead: string
): Effect.Effect<ReadonlyArray<Dir>, FileIoError | SystemFailure> => {
  switch (entry._tag) {
    case "Directory":
      return Effect.succeed(entry.chain)
    case "Missing":
      return Effect.fail(new SystemFailure({ systemCode: "ENOENT" }))
    case "File":
    case "Other":
      return Effect.fail(
        new FileIoError({
          path: input,
          systemCode: "ENOTDIR",
          message: `Cannot ${verb} ${show(input)}: it is not a directory${instead}`
        })
      )
  }
}

/**
 * Whether the path the model gave names a directory by its form: it ends with `/` (or `/.`),
 * as `src/` does. The system refuses such a path where a file is meant (`ENOTDIR` for a file,
 * `EISDIR` when creating one), and so do the tools, rather than drop the slash.
 */
export const namesDirectory = (input: string): boolean => /\/\.?$/.test(input)

/** The regular file an entry names, or the error saying what it is instead. */
export const expectFile = (
  entry: Entry,
  input: string,
  verb: string
): Effect.Effect<Extract<Entry, { readonly _tag: "File" }>, FileIoError | SystemFailure> => {
  switch (entry._tag) {
    case "File":
      return namesDirectory(input)
        ? Effect.fail(
          new FileIoError({
            path: input,
            systemCode: "ENOTDIR",
            message: `Cannot ${verb} ${show(input)}: it is a file, not a directory (give its path without the trailing "/")`
          })
        )
        : Effect.succeed(entry)
    case "Missing":
      return Effect.fail(new SystemFailure({ systemCode: "ENOENT" }))
    case "Directory":
      return Effect.fail(
        new FileIoError({
          path: input,
          systemCode: "EISDIR",
          message: `Cannot ${verb} ${show(input)}: it is a directory (list it, or glob inside it)`
        })
      )
    case "Other":
      return Effect.fail(notRegularFile(input, verb))
  }
}

/** The codes with which the system says a file may not be written. */
const notWritableCodes: ReadonlySet<string> = new Set(["EACCES", "EPERM", "EROFS"])

/** The permission bits as `ls -l` shows them: `r--r--r--` for `0o444`. */
const modeText = (mode: number): string =>
  [6, 3, 0].map((shift) => ["r", "w", "x"].map((c, i) => (mode >> shift) & (4 >> i) ? c : "-").join("")).join("")

/**
 * Refuses to replace a file its permissions protect. The system alone would not: `write` and
 * `edit` write a new file and rename it over the old one, which takes the directory's
 * permission, not the file's. So the file's is checked here, in two steps:
 *
 * - a file without any write bit (`0444`, `0555`) is read-only for everyone, root included —
 *   root, whom the system lets write any file, is held to the bits a user set to say "do not
 *   change this";
 * - otherwise the system decides whether this process may write the very file held open
 *   (`access(W_OK)` on `/proc/self/fd/<n>` in descriptor mode, on its name in path mode):
 *   owner, group, ACLs and a read-only mount included.
 *
 * A refusal is `FILE_IO` with `EACCES` (or the system's `EPERM`, `EROFS`), the file unchanged.
 * Any other failure of the check (the file gone meanwhile) is left to the write itself.
 */
export const expectWritable = (
  workspace: Workspace,
  file: Extract<Entry, { readonly _tag: "File" }>,
  input: string,
  verb: string
): Effect.Effect<void, FileIoError> => {
  const refuse = (systemCode: string, why: string) =>
    new FileIoError({
      path: input,
      systemCode,
      message: `Cannot ${verb} ${show(input)}: ${explain(systemCode)}: ${why} (mode ${
        modeText(file.stat.mode)
      }); it was left as it is`
    })
  if ((file.stat.mode & 0o222) === 0) return Effect.fail(refuse("EACCES", "the file is read-only"))
  const held = workspace.mode === "descriptor"
    ? `/proc/self/fd/${file.handle.fd}`
    : childPath(file.chain[file.chain.length - 1]!, file.name)
  return workspace.fs.access(held, { writable: true }).pipe(
    Effect.mapError(failure),
    Effect.catch((e) =>
      notWritableCodes.has(e.systemCode)
        ? Effect.fail(refuse(e.systemCode, "this process may not write the file"))
        : Effect.void
    )
  )
}

/** The refusal of what is neither a regular file nor a directory: a FIFO, a socket, a device. */
export const notRegularFile = (input: string, verb: string): FileIoError =>
  new FileIoError({
    path: input,
    systemCode: "EINVAL",
    message: `Cannot ${verb} ${show(input)}: it is not a regular file (a FIFO, a socket or a device)`
  })

/** The path parameter every tool takes. */
export const pathParameter = (description: string) =>
  Schema.String.annotate({
    description: `${description}: relative to the workspace root, or absolute inside it`
  })

/** A bounded count parameter. */
export const countParameter = (maximum: number, description: string) =>
  Schema.Int.check(Schema.isBetween({ minimum: 1, maximum })).annotate({ description })
