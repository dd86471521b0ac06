/**
 * Confinement: every path a file tool touches is resolved under the workspace root, one
 * component at a time, by this module (docs/adr/0020-file-tools-confinement.md).
 *
 * - A path is first placed lexically (`..` and absolute paths): outside the root, it is refused.
 * - It is then walked from the root's open descriptor. Each component is opened under its
 *   parent's descriptor with `O_NOFOLLOW`, so the kernel never follows a symbolic link for us;
 *   a link is read and its target placed lexically under the root again (outside: refused),
 *   and the walk starts over from the root with the target's components (at most
 *   {@link maxLinks} links, like the kernel).
 * - In `"descriptor"` mode (Linux: `/proc/self/fd/<n>` names the directory an open descriptor
 *   holds, whatever happens to its path) each lookup is relative to the directory held open,
 *   so a directory renamed or swapped for a link after it was opened changes nothing: what is
 *   opened, created or renamed is in the directory that was checked, when it is. In `"path"`
 *   mode (systems without `/proc`) lookups go by real paths and the directories of the path
 *   are checked again after every open (still the same directories, not links); what remains
 *   is a window in which a directory swapped and swapped back between two checks goes unseen.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import type * as Scope from "effect/Scope"
import { FileIoError, FileNotFoundError } from "../FileError.ts"
import { type Handle, openEntry, type Stat, supported } from "./descriptor.ts"
import * as Locks from "./locks.ts"
import { failure, make as systemFailure, show, SystemFailure, toFileError } from "./system.ts"

/** The longest chain of symbolic links followed for one path (Linux's `MAXSYMLINKS`). */
export const maxLinks = 40

/** How lookups name a directory: its open descriptor (`/proc/self/fd/<n>`) or its real path. */
export type Mode = "descriptor" | "path"

/** A directory of the workspace, held open. */
export interface Dir {
  /** What names it in system calls: `/proc/self/fd/<n>` or its real path. */
  readonly path: string
  /** Where it is under the root, links resolved. */
  readonly rel: ReadonlyArray<string>
  readonly handle: Handle
  readonly stat: Stat
}

/** The workspace: its root, held open for the Layer's lifetime, and the services used on it. */
export interface Workspace {
  /** The root as configured, absolute. */
  readonly root: string
  /** The root with its links resolved. */
  readonly realRoot: string
  readonly mode: Mode
  readonly rootDir: Dir
  readonly fs: FileSystem.FileSystem
  readonly path: Path.Path
  /** The locks `write` and `edit` hold on the file they replace (see ./locks.ts). */
  readonly locks: Locks.Locks
}

/** A path that lies outside the root as written (`..`, an absolute path elsewhere). */
export class Outside extends Data.TaggedError("Outside") {}

/** A symbolic link (at `link`, under the root) whose target lies outside the root. */
export class Escape extends Data.TaggedError("Escape")<{ readonly link: string; readonly target: string }> {}

/** A directory of the path is no longer the directory that was opened ("path" mode only). */
export class Replaced extends Data.TaggedError("Replaced")<{ readonly at: string }> {}

/** What stops a resolution on purpose. */
export type Refusal = Outside | Escape | Replaced

/**
 * What a path names once resolved. `chain` runs from the root to the directory holding the
 * entry (for a directory: to the directory itself).
 */
export type Entry =
  | { readonly _tag: "Missing"; readonly chain: ReadonlyArray<Dir>; readonly name: string }
  | {
    readonly _tag: "File"
    readonly chain: ReadonlyArray<Dir>
    readonly name: string
    readonly handle: Handle
    readonly stat: Stat
  }
  | { readonly _tag: "Directory"; readonly chain: ReadonlyArray<Dir> }
  | { readonly _tag: "Other"; readonly chain: ReadonlyArray<Dir>; readonly name: string }

/** The directory an entry is in (for a directory, itself). */
export const parentOf = (entry: Entry): Dir => entry.chain[entry.chain.length - 1]!

/** What names `name` inside `dir` in system calls. */
export const childPath = (dir: Dir, name: string): string => (dir.path.endsWith("/") ? dir.path : `${dir.path}/`) + name

/** Where `name` inside `dir` is under the root, for messages and results. */
export const shownRel = (rel: ReadonlyArray<string>): string => (rel.length === 0 ? "." : rel.join("/"))

/**
 * Opens the workspace at `root`. `descriptors: false` keeps it in "path" mode even where
 * descriptors could anchor lookups (the mode of systems without `/proc`).
 */
export const make = (
  root: string,
  options: { readonly descriptors: boolean; readonly fs: FileSystem.FileSystem; readonly path: Path.Path }
): Effect.Effect<Workspace, FileNotFoundError | FileIoError, Scope.Scope> =>
  Effect.gen(function*() {
    const { fs, path } = options
    if (!supported) {
      return yield* new FileIoError({
        path: root,
        systemCode: "ENOTSUP",
        message: "The file tools need a POSIX system: this one has no O_NOFOLLOW"
      })
    }
    const rootError = (cause: unknown) => {
      const system = failure(cause)
      return system.systemCode === "ENOENT"
        ? new FileNotFoundError({ path: root, message: `The workspace root ${show(root)} does not exist`, cause: system })
        : toFileError("open the workspace root", root, system)
    }
    const absolute = path.resolve(root)
    const realRoot = yield* Effect.mapError(fs.realPath(absolute), rootError)
    const handle = yield* Effect.mapError(openEntry(realRoot), rootError)
    const stat = yield* Effect.mapError(handle.stat, rootError)
    if (stat.type !== "Directory") {
      return yield* new FileIoError({
        path: root,
        systemCode: "ENOTDIR",
        message: `The workspace root ${show(root)} is not a directory`
      })
    }
    const anchor = `/proc/self/fd/${handle.fd}`
    const mode: Mode = options.descriptors && (yield* anchors(fs, anchor, realRoot, stat)) ? "descriptor" : "path"
    return {
      root: absolute,
      realRoot,
      mode,
      rootDir: { path: mode === "descriptor" ? anchor : realRoot, rel: [], handle, stat },
      fs,
      path,
      locks: Locks.make()
    }
  })

// Whether `/proc/self/fd/<n>` names the directory the descriptor holds, and lookups through it
// reach that directory.
const anchors = (fs: FileSystem.FileSystem, anchor: string, realRoot: string, stat: Stat) =>
  Effect.gen(function*() {
    const target = yield* fs.readLink(anchor)
    const through = yield* fs.stat(`${anchor}/.`)
    return target === realRoot && through.dev === stat.dev && Option.getOrUndefined(through.ino) === stat.ino
  }).pipe(Effect.orElseSucceed(() => false))

/** The components of `abs` under `base`, or `undefined` when it lies outside. */
const under = (path: Path.Path, base: string, abs: string): Array<string> | undefined => {
  const rel = path.relative(base, abs)
  if (rel === "") return []
  if (rel === ".." || rel.startsWith("../") || path.isAbsolute(rel)) return undefined
  return rel.split("/").filter((part) => part !== "" && part !== ".")
}

/** `parts` applied to `base` lexically (`..` pops), or `undefined` when it climbs above the root. */
const within = (base: ReadonlyArray<string>, parts: ReadonlyArray<string>): Array<string> | undefined => {
  const stack = [...base]
  for (const part of parts) {
    if (part === "" || part === ".") continue
    if (part === "..") {
      if (stack.length === 0) return undefined
      stack.pop()
    } else {
      stack.push(part)
    }
  }
  return stack
}

/**
 * Where a path the model gave lies under the root, lexically: relative to the root, or
 * absolute under the root as configured or as resolved.
 */
export const locate = (ws: Workspace, input: string): Effect.Effect<ReadonlyArray<string>, Outside | SystemFailure> => {
  // a NUL byte cannot be in a path; the system would refuse it, say so the same way
  if (input.includes("\0")) return Effect.fail(systemFailure("EINVAL"))
  const abs = ws.path.resolve(ws.root, input)
  const rel = under(ws.path, ws.root, abs) ?? (ws.path.isAbsolute(input) ? under(ws.path, ws.realRoot, abs) : undefined)
  return rel === undefined ? Effect.fail(new Outside()) : Effect.succeed(rel)
}

/** Where a link's target lies under the root, read from the directory at `base`. */
const linkTarget = (ws: Workspace, base: ReadonlyArray<string>, target: string): Array<string> | undefined =>
  ws.path.isAbsolute(target)
    ? under(ws.path, ws.realRoot, ws.path.normalize(target)) ?? under(ws.path, ws.root, ws.path.normalize(target))
    : within(base, target.split("/"))

/**
 * In "path" mode, checks that each directory of `chain` is still, at its path, the directory
 * that was opened (not a link, not another directory). Nothing to check in "descriptor" mode:
 * lookups go through the open directories themselves.
 */
export const verify = (ws: Workspace, chain: ReadonlyArray<Dir>): Effect.Effect<void, Replaced> =>
  ws.mode === "descriptor" ? Effect.void : Effect.forEach(chain, (dir) =>
    ws.fs.lstat(dir.path).pipe(
      Effect.orElseSucceed(() => undefined),
      Effect.flatMap((info) =>
        info !== undefined && info.type === "Directory" && info.dev === dir.stat.dev &&
          Option.getOrUndefined(info.ino) === dir.stat.ino
          ? Effect.void
          : Effect.fail(new Replaced({ at: shownRel(dir.rel) }))
      )
    ), { discard: true })

/** An entry opened under `chain`'s last directory (`ELOOP` when it is a symbolic link). */
export const openChild = (
  ws: Workspace,
  chain: ReadonlyArray<Dir>,
  name: string
): Effect.Effect<{ readonly handle: Handle; readonly stat: Stat }, SystemFailure | Replaced, Scope.Scope> =>
  Effect.gen(function*() {
    const handle = yield* openEntry(childPath(chain[chain.length - 1]!, name))
    const stat = yield* handle.stat
    yield* verify(ws, chain)
    return { handle, stat }
  })

/** The directory `name` of `parent`, opened as `handle`. */
export const dirOf = (ws: Workspace, parent: Dir, name: string, handle: Handle, stat: Stat): Dir => ({
  path: ws.mode === "descriptor" ? `/proc/self/fd/${handle.fd}` : childPath(parent, name),
  rel: [...parent.rel, name],
  handle,
  stat
})

/** Options of {@link resolve}. */
export interface ResolveOptions {
  /** Create the missing directories of the path (not its last component); each is recorded in `created`. */
  readonly createDirectories?: Array<ReadonlyArray<string>> | undefined
}

/** How many times a component that changed while it was looked at is looked at again. */
const maxRetries = 8

/**
 * What a symbolic link at `name` in `parent` leads to: the root-relative components of its
 * target (an `Escape` when they leave the root), or `undefined` when it is no longer a link
 * (it changed since the open that found it): look again.
 */
const readLink = (
  ws: Workspace,
  parent: Dir,
  name: string
): Effect.Effect<Array<string> | undefined, Escape | SystemFailure> =>
  ws.fs.readLink(childPath(parent, name)).pipe(
    Effect.mapError(failure),
    Effect.flatMap((target) => {
      const next = linkTarget(ws, parent.rel, target)
      return next === undefined
        ? Effect.fail(new Escape({ link: shownRel([...parent.rel, name]), target }))
        : Effect.succeed(next)
    }),
    Effect.catchIf(
      (e): e is SystemFailure => e instanceof SystemFailure && (e.systemCode === "EINVAL" || e.systemCode === "ENOENT"),
      () => Effect.succeed(undefined)
    )
  )

/** Creates the directory `name` in `parent`; one created meanwhile by someone else will do. */
const makeDirectory = (ws: Workspace, parent: Dir, name: string): Effect.Effect<boolean, SystemFailure> =>
  ws.fs.makeDirectory(childPath(parent, name)).pipe(
    Effect.as(true),
    Effect.mapError(failure),
    Effect.catchIf((e) => e.systemCode === "EEXIST", () => Effect.succeed(false))
  )

/**
 * Resolves root-relative components (from {@link locate}) to what they name, following the
 * symbolic links that stay under the root and refusing those that leave it. The entry's
 * descriptors stay open until the scope closes.
 */
export const resolve = (
  ws: Workspace,
  components: ReadonlyArray<string>,
  options: ResolveOptions = {}
): Effect.Effect<Entry, Refusal | SystemFailure, Scope.Scope> =>
  Effect.gen(function*() {
    let chain: Array<Dir> = [ws.rootDir]
    const pending = [...components]
    let links = 0
    let retries = 0
    const made = new Set<string>()
    const again = (name: string) => {
      pending.unshift(name)
      return ++retries <= maxRetries ? Effect.void : Effect.fail(systemFailure("EAGAIN"))
    }
    while (pending.length > 0) {
      const name = pending.shift()!
      const parent = chain[chain.length - 1]!
      const last = pending.length === 0
      const opened = yield* Effect.result(openChild(ws, chain, name))
      if (opened._tag === "Success") {
        const { handle, stat } = opened.success
        if (stat.type === "Directory") {
          chain = [...chain, dirOf(ws, parent, name, handle, stat)]
          continue
        }
        if (!last) return yield* systemFailure("ENOTDIR")
        return stat.type === "File"
          ? { _tag: "File", chain, name, handle, stat } satisfies Entry
          : { _tag: "Other", chain, name } satisfies Entry
      }
      const cause = opened.failure
      if (cause._tag === "Replaced") return yield* cause
      // O_NOFOLLOW on a symbolic link: ELOOP (Linux, macOS), EMLINK (FreeBSD)
      if (cause.systemCode === "ELOOP" || cause.systemCode === "EMLINK") {
        if (++links > maxLinks) return yield* systemFailure("ELOOP")
        const next = yield* readLink(ws, parent, name)
        if (next === undefined) {
          yield* again(name)
          continue
        }
        // the target's components are root-relative: walk them from the root
        chain = [ws.rootDir]
        pending.unshift(...next)
        continue
      }
      if (cause.systemCode === "ENOENT" && last) return { _tag: "Missing", chain, name } satisfies Entry
      if (cause.systemCode === "ENOENT" && options.createDirectories !== undefined) {
        const at = [...parent.rel, name]
        const key = at.join("/")
        if (made.has(key)) {
          // made, and gone again before it could be opened
          yield* again(name)
          continue
        }
        made.add(key)
        if (yield* makeDirectory(ws, parent, name)) options.createDirectories.push(at)
        // then opened like any other component: what is there now may not be what was made
        pending.unshift(name)
        continue
      }
      return yield* cause
    }
    return { _tag: "Directory", chain } satisfies Entry
  })

/** How a tool reports a path it refused or could not use. */
export const describeFailure = (
  ws: Workspace,
  verb: string,
  input: string,
  cause: Refusal | SystemFailure
): { readonly denied: string } | { readonly error: FileNotFoundError | FileIoError } => {
  switch (cause._tag) {
    case "Outside":
      return { denied: `${show(input)} is outside the workspace root ${show(ws.root)}; paths must stay inside it` }
    case "Escape":
      return {
        denied: `${show(input)} leads through the symbolic link ${show(cause.link)} to ${
          JSON.stringify(cause.target)
        }, outside the workspace root ${show(ws.root)}`
      }
    case "Replaced":
      return {
        denied: `the directory ${show(cause.at)} on the way to ${
          show(input)
        } was replaced while it was being used; it is not followed`
      }
    case "SystemFailure":
      return { error: toFileError(verb, input, cause) }
  }
}

export { SystemFailure }
