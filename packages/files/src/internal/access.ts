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
import { show, SystemFailure } from "./system.ts"
import {
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
