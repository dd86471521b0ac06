/**
 * Open file descriptors, through `node:fs` because effect's FileSystem cannot express them:
 * its `File` exposes no descriptor number (the workspace names a directory by
 * `/proc/self/fd/<n>`), no `fchmod`, and its `open` takes neither `O_NONBLOCK` (opening a FIFO
 * must not hang) nor `O_DIRECTORY`. Everything else goes through effect's FileSystem.
 *
 * Every open refuses to follow a symbolic link in its last component (`O_NOFOLLOW`): the
 * workspace resolves links itself, one component at a time (see ./workspace.ts).
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { constants } from "node:fs"
import { type FileHandle, open } from "node:fs/promises"
import { failure, type SystemFailure } from "./system.ts"

/** What `fstat` says about an open descriptor. */
export interface Stat {
  readonly type: "File" | "Directory" | "Other"
  readonly dev: bigint
  readonly ino: bigint
  readonly size: number
  /** Permission bits (`0o7777`). */
  readonly mode: number
  readonly mtimeNs: bigint
  /** How many names (hard links) the file has. */
  readonly links: number
}

/** An open descriptor, closed when the scope that opened it closes. */
export interface Handle {
  readonly fd: number
  readonly stat: Effect.Effect<Stat, SystemFailure>
  /** Reads into `buffer` from `position`; 0 at the end of the file. */
  readonly read: (buffer: Uint8Array, position: number) => Effect.Effect<number, SystemFailure>
  readonly writeAll: (bytes: Uint8Array) => Effect.Effect<void, SystemFailure>
  readonly truncate: (length: number) => Effect.Effect<void, SystemFailure>
  readonly chmod: (mode: number) => Effect.Effect<void, SystemFailure>
  readonly sync: Effect.Effect<void, SystemFailure>
}

/** Whether the system has the flags the workspace relies on (every POSIX system Node runs on). */
export const supported: boolean = typeof constants.O_NOFOLLOW === "number" && constants.O_NOFOLLOW !== 0 &&
  typeof constants.O_NONBLOCK === "number"

const call = <A>(f: () => Promise<A>): Effect.Effect<A, SystemFailure> => Effect.tryPromise({ try: f, catch: failure })

const typeOf = (stat: { isFile(): boolean; isDirectory(): boolean }): Stat["type"] =>
  stat.isFile() ? "File" : stat.isDirectory() ? "Directory" : "Other"

const handleOf = (file: FileHandle): Handle => ({
  fd: file.fd,
  stat: Effect.map(call(() => file.stat({ bigint: true })), (s) => ({
    type: typeOf(s),
    dev: s.dev,
    ino: s.ino,
    size: Number(s.size),
    mode: Number(s.mode & 0o7777n),
    mtimeNs: s.mtimeNs,
    links: Number(s.nlink)
  })),
  read: (buffer, position) =>
    Effect.map(call(() => file.read(buffer, 0, buffer.byteLength, position)), (r) => r.bytesRead),
  writeAll: (bytes) => Effect.asVoid(call(() => file.writeFile(bytes))),
  truncate: (length) => call(() => file.truncate(length)),
  chmod: (mode) => call(() => file.chmod(mode)),
  sync: call(() => file.sync())
})

const acquire = (path: string, flags: number, mode?: number): Effect.Effect<Handle, SystemFailure, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      call(() => open(path, flags, mode)),
      // a close that fails has nothing left to report to
      (file) => Effect.promise(() => file.close().catch(() => undefined))
    ),
    handleOf
  )

/**
 * Opens whatever `path` names for reading, without following a symbolic link in its last
 * component (`ELOOP` then): a file, a directory (its descriptor anchors lookups below it), or
 * something else, which the caller refuses after `stat`. `O_NONBLOCK` keeps a FIFO from
 * blocking the open; it changes nothing for files and directories.
 */
export const openEntry = (path: string): Effect.Effect<Handle, SystemFailure, Scope.Scope> =>
  acquire(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)

/**
 * Opens an existing file for writing in place (no truncation yet), without following a
 * symbolic link in its last component.
 */
export const openForRewrite = (path: string): Effect.Effect<Handle, SystemFailure, Scope.Scope> =>
  acquire(path, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)

/**
 * Creates a new file for writing; fails with `EEXIST` when the name exists, whatever it is (a
 * symbolic link included), so nothing but a fresh file is ever written.
 */
export const createExclusive = (path: string, mode: number): Effect.Effect<Handle, SystemFailure, Scope.Scope> =>
  acquire(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode)
