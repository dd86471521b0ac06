/**
 * One writer at a time per file. `write` and `edit` of one Layer can run at once (several
 * agents share it, and a loop may run calls in parallel); an edit reads the file, changes the
 * text and renames the new file over the old one, so two edits of one file interleaved would
 * each write its own change over the same old text and one of them would be lost, silently.
 * Holding the file's lock from before the read until after the rename makes them take turns.
 * Writers outside this process are not held back by it: the edit's check that the file did not
 * change since it was read (device, inode, size, mtime) is what catches them.
 */
import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"

/** The locks of the files being written, by key; a lock nobody holds or waits for is dropped. */
export type Locks = Map<string, { readonly semaphore: Semaphore.Semaphore; users: number }>

/** No file locked yet. */
export const make = (): Locks => new Map()

/**
 * The key of the entry `name` in the directory of device `dev`, inode `ino`: the same for every
 * path that resolves to it (through links, or `..`).
 */
export const keyOf = (dir: { readonly stat: { readonly dev: bigint; readonly ino: bigint } }, name: string): string =>
  `${dir.stat.dev}:${dir.stat.ino}/${name}`

/** Runs `effect` holding the lock of `key`, waiting for its current holder first. */
export const withLock = (locks: Locks, key: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    let lock = locks.get(key)
    if (lock === undefined) {
      lock = { semaphore: Semaphore.makeUnsafe(1), users: 0 }
      locks.set(key, lock)
    }
    const held = lock
    held.users++
    return Semaphore.withPermit(held.semaphore)(effect).pipe(
      Effect.ensuring(Effect.sync(() => {
        if (--held.users === 0) locks.delete(key)
      }))
    )
  })
