/**
 * An exclusive lock on a file, between processes, for file systems without `flock`: a lock file
 * next to it, created atomically, judged stale when its process is gone, taken over under a
 * guard. See docs/adr/0016-one-writer-per-session-file.md for the design and its limits.
 *
 * A lock file holds one JSON object, a {@link Holder}. It is written complete under a temporary
 * name, fsynced, and hard-linked to the lock's name: the link fails when the lock exists, so
 * exactly one of any number of processes creates it, and a lock file is never seen half
 * written.
 *
 * A lock that exists is held, unless its holder is on this host, has another pid than this
 * process and `process.kill(pid, 0)` finds no such process — or has this process's pid but
 * another start time (an earlier process that had this pid, as after a container restart).
 * A lock of another host is always held: its process cannot be probed from here.
 *
 * Taking over a stale lock runs under a second lock file, the guard (`<lock>.takeover`, made
 * and judged the same way), so that two processes finding the same stale lock do not both take
 * it: under the guard the lock is read again and replaced (one atomic rename) only if it is
 * still the stale one that was judged.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as PlatformError from "effect/PlatformError"
import { hostname } from "node:os"

/**
 * What a lock file holds.
 *
 * @internal
 */
export interface Holder {
  readonly pid: number
  readonly hostname: string
  /** Random, unique to one acquisition: the lock is ours while the file holds our token. */
  readonly token: string
  /** When the holding process started (epoch ms, fractional): tells apart two processes with one pid. */
  readonly startedAt: number
  /** When the lock was taken (epoch ms). */
  readonly acquiredAt: number
}

/**
 * The process taking locks, and how it probes others (a seam for nothing but clarity: the
 * layer passes {@link nodeHost}).
 *
 * @internal
 */
export interface Host {
  readonly pid: number
  readonly hostname: string
  readonly startedAt: number
  /** Whether a process with this pid exists on this host. */
  readonly isAlive: (pid: number) => boolean
  readonly now: () => number
}

/**
 * This Node process.
 *
 * @internal
 */
export const nodeHost: Host = {
  pid: process.pid,
  hostname: hostname(),
  startedAt: performance.timeOrigin,
  isAlive: (pid) => {
    try {
      process.kill(pid, 0)
      return true
    } catch (error) {
      // EPERM: it exists but is not ours to signal. Only "no such process" means gone.
      return (error as { readonly code?: unknown }).code !== "ESRCH"
    }
  },
  now: Date.now
}

/**
 * A lock this process holds.
 *
 * @internal
 */
export interface Held {
  readonly path: string
  readonly token: string
  /** The lock file's identity when we made it, so that {@link check} costs one stat, not a read. */
  readonly stamp: string | undefined
}

/**
 * A lock held by someone else: who (`holder`, e.g. `pid 4242 on host a`) and the full story
 * (`message`, naming the lock file and what to do).
 *
 * @internal
 */
export interface Refused {
  readonly _tag: "Refused"
  readonly holder: string | undefined
  readonly message: string
}

/** A lock file as found: missing, or its text and, when it is one, the holder it names. */
type Found =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Present"; readonly text: string; readonly holder: Holder | undefined }

// A retry happens only when the lock changed under us (it vanished, or was taken over by
// someone else): a handful covers any real interleaving, and a bound keeps a pathological
// file system from spinning us.
const ATTEMPTS = 5

const isAlreadyExists = (error: PlatformError.PlatformError) =>
  error.reason._tag === "AlreadyExists"

const isNotFound = (error: PlatformError.PlatformError) => error.reason._tag === "NotFound"

const holderOf = (text: string): Holder | undefined => {
  try {
    const value: unknown = JSON.parse(text)
    if (typeof value !== "object" || value === null) return undefined
    const { acquiredAt, hostname, pid, startedAt, token } = value as Record<string, unknown>
    return Number.isSafeInteger(pid) && typeof hostname === "string" && typeof token === "string" &&
        typeof startedAt === "number" && typeof acquiredAt === "number"
      ? { pid: pid as number, hostname, token, startedAt, acquiredAt }
      : undefined
  } catch {
    return undefined
  }
}

const read = (fs: FileSystem.FileSystem, path: string): Effect.Effect<Found, PlatformError.PlatformError> =>
  fs.readFileString(path).pipe(
    Effect.map((text): Found => ({ _tag: "Present", text, holder: holderOf(text) })),
    Effect.catchIf(isNotFound, () => Effect.succeed<Found>({ _tag: "Missing" }))
  )

// Inode, modification time and size: a file put in the lock's place by anyone else differs in
// one of them (a reused inode number would need the same size and the same millisecond).
const stampOf = (info: FileSystem.File.Info): string | undefined =>
  Option.isNone(info.ino) || Option.isNone(info.mtime)
    ? undefined
    : `${info.dev}:${info.ino.value}:${info.mtime.value.getTime()}:${info.size}`

const stamp = (fs: FileSystem.FileSystem, path: string) =>
  fs.stat(path).pipe(
    Effect.map(stampOf),
    Effect.catchIf(isNotFound, () => Effect.succeed(undefined))
  )

const newHolder = (host: Host): Holder => ({
  pid: host.pid,
  hostname: host.hostname,
  token: crypto.randomUUID(),
  startedAt: host.startedAt,
  acquiredAt: host.now()
})

// complete and durable before it gets the lock's name: a lock is never seen empty, not even
// after a power loss
const writeDurably = (fs: FileSystem.FileSystem, path: string, holder: Holder) =>
  Effect.scoped(Effect.gen(function*() {
    const file = yield* fs.open(path, { flag: "wx" })
    yield* file.writeAll(new TextEncoder().encode(JSON.stringify(holder)))
    yield* file.sync
  }))

/** Links `from` to `to`: true when we made `to`, false when it exists already. */
const linked = (fs: FileSystem.FileSystem, from: string, to: string) =>
  fs.link(from, to).pipe(
    Effect.as(true),
    Effect.catchIf(isAlreadyExists, () => Effect.succeed(false))
  )

/**
 * Who holds a lock, in words.
 *
 * @internal
 */
export const describeHolder = (holder: Holder): string => `pid ${holder.pid} on host ${holder.hostname}`

const since = (holder: Holder) => {
  const date = new Date(holder.acquiredAt)
  return Number.isNaN(date.getTime()) ? "" : ` since ${date.toISOString()}`
}

/** Whether a found lock can be taken over, or why not. */
type Verdict = { readonly _tag: "Stale" } | Refused

const judge = (host: Host, path: string, found: Found & { readonly _tag: "Present" }, what: string): Verdict => {
  const holder = found.holder
  if (holder === undefined) {
    return {
      _tag: "Refused",
      holder: undefined,
      message: `${path} exists but is not a lock file this program wrote, so whoever made it may still ${what}; ` +
        "remove it if no process uses the session"
    }
  }
  const who = describeHolder(holder)
  if (holder.hostname !== host.hostname) {
    return {
      _tag: "Refused",
      holder: who,
      message: `${who}${since(holder)} may ${what} (lock ${path}); it is on another host, whose processes cannot be ` +
        `checked from here, so its lock is never taken over: remove ${path} if that process is gone`
    }
  }
  if (holder.pid === host.pid) {
    if (holder.startedAt !== host.startedAt) return { _tag: "Stale" }
    return {
      _tag: "Refused",
      holder: `${who} (this process)`,
      message: `this process (${who})${since(holder)} may ${what} (lock ${path}): another JsonlSessions layer, or a ` +
        "session with this id that is not closed yet"
    }
  }
  if (host.isAlive(holder.pid)) {
    return {
      _tag: "Refused",
      holder: who,
      message: `${who}${since(holder)} may ${what} (lock ${path}); if that pid is no longer a dsh process, remove ${path}`
    }
  }
  return { _tag: "Stale" }
}

const refused = (message: string, holder?: string): Refused => ({ _tag: "Refused", holder, message })

/** Removes `path` if it still holds `text` (what was judged); a vanished file is fine. */
const removeIfUnchanged = (fs: FileSystem.FileSystem, path: string, text: string) =>
  Effect.gen(function*() {
    const now = yield* read(fs, path)
    if (now._tag === "Missing" || now.text !== text) return
    yield* fs.remove(path).pipe(Effect.catchIf(isNotFound, () => Effect.void))
  })

/** Removes `path` if it names `token`. */
const removeIfOurs = (fs: FileSystem.FileSystem, path: string, token: string) =>
  Effect.gen(function*() {
    const now = yield* read(fs, path)
    if (now._tag === "Missing" || now.holder?.token !== token) return
    yield* fs.remove(path).pipe(Effect.catchIf(isNotFound, () => Effect.void))
  })

/**
 * Takes the guard of a takeover. A guard whose process died mid-takeover is removed (if it is
 * still the one judged) and the guard taken again.
 */
const takeGuard = (fs: FileSystem.FileSystem, host: Host, guard: string, lock: string, holder: Holder) => {
  const temporary = `${guard}.${holder.token}.tmp`
  return Effect.gen(function*() {
    yield* writeDurably(fs, temporary, holder)
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (yield* linked(fs, temporary, guard)) return
      const found = yield* read(fs, guard)
      if (found._tag === "Missing") continue
      const verdict = judge(host, guard, found, `be taking the stale lock ${lock} over`)
      if (verdict._tag === "Refused") return yield* Effect.fail(verdict)
      yield* removeIfUnchanged(fs, guard, found.text)
    }
    return yield* Effect.fail(refused(`the takeover guard ${guard} keeps changing; another process is taking ${lock} over`))
  }).pipe(Effect.ensuring(Effect.ignore(fs.remove(temporary, { force: true }))))
}

/**
 * Replaces the stale lock `staleText` at `path` with ours (the file `temporary`), under the
 * guard: true when it did, false when the lock changed since it was judged.
 */
const takeOver = (
  fs: FileSystem.FileSystem,
  host: Host,
  path: string,
  temporary: string,
  staleText: string,
  holder: Holder
): Effect.Effect<boolean, Refused | PlatformError.PlatformError> => {
  const guard = `${path}.takeover`
  return Effect.gen(function*() {
    yield* takeGuard(fs, host, guard, path, holder)
    const now = yield* read(fs, path)
    if (now._tag === "Missing" || now.text !== staleText) return false
    // a rename replaces in one step: the lock never goes missing, so no plain acquire slips in
    yield* fs.rename(temporary, path)
    const after = yield* read(fs, path)
    if (after._tag === "Present" && after.holder?.token === holder.token) return true
    return yield* Effect.fail(refused(
      `${path} was taken over by another process at the same moment` +
        (after._tag === "Present" && after.holder !== undefined ? ` (${describeHolder(after.holder)})` : ""),
      after._tag === "Present" && after.holder !== undefined ? describeHolder(after.holder) : undefined
    ))
  }).pipe(Effect.ensuring(Effect.ignore(removeIfOurs(fs, guard, holder.token))))
}

/**
 * Takes the lock at `path` for this process, or fails with {@link Refused} naming who holds it.
 * `what` says what the holder does, for the message (e.g. `write session "a"`).
 *
 * @internal
 */
export const acquire = (
  fs: FileSystem.FileSystem,
  host: Host,
  path: string,
  what: string
): Effect.Effect<Held, Refused | PlatformError.PlatformError> => {
  const holder = newHolder(host)
  const temporary = `${path}.${holder.token}.tmp`
  const held = Effect.map(stamp(fs, path), (stamp): Held => ({ path, token: holder.token, stamp }))
  return Effect.gen(function*() {
    yield* writeDurably(fs, temporary, holder)
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (yield* linked(fs, temporary, path)) return yield* held
      const found = yield* read(fs, path)
      if (found._tag === "Missing") continue
      const verdict = judge(host, path, found, what)
      if (verdict._tag === "Refused") return yield* Effect.fail(verdict)
      if (yield* takeOver(fs, host, path, temporary, found.text, holder)) return yield* held
    }
    return yield* Effect.fail(refused(`${path} keeps changing: other processes are taking and giving back the lock`))
  }).pipe(Effect.ensuring(Effect.ignore(fs.remove(temporary, { force: true }))))
}

/**
 * Gives a lock back: removes the lock file if it still holds our token (a lock taken from us
 * is left to its new holder).
 *
 * @internal
 */
export const release = (fs: FileSystem.FileSystem, held: Held): Effect.Effect<void, PlatformError.PlatformError> =>
  removeIfOurs(fs, held.path, held.token)

/**
 * Whether we still hold a lock: `undefined` when the lock file holds our token, else what
 * happened to it.
 *
 * @internal
 */
export const check = Effect.fnUntraced(function*(
  fs: FileSystem.FileSystem,
  held: Held
): Effect.fn.Return<string | undefined, PlatformError.PlatformError> {
  if (held.stamp !== undefined && (yield* stamp(fs, held.path)) === held.stamp) return undefined
  const found = yield* read(fs, held.path)
  if (found._tag === "Missing") return `the lock file ${held.path} was removed`
  if (found.holder?.token === held.token) return undefined
  return found.holder === undefined
    ? `the lock file ${held.path} was replaced by something else`
    : `the lock file ${held.path} now names ${describeHolder(found.holder)}`
})
