/**
 * The append-only log primitive behind sessions (and the store's stream of sessions): an
 * array that only grows, read through per-reader cursors.
 *
 * A reader's stream takes everything from its cursor to the end in one slice, then parks
 * until the next append wakes it. Because the position of an entry is its index, a reader can
 * neither skip nor repeat an entry however appends and subscriptions interleave: there is no
 * separate "history then live" hand-over to race. Appends are synchronous and never wait for
 * readers; a slow reader costs no memory beyond its cursor. Closing the log ends every
 * reader's stream once it has read what was appended before the close.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

/**
 * @since 0.1.0
 * @category models
 */
export interface Log<A> {
  /** Appends an entry and wakes the readers; returns its index. Fails after `close` by returning -1. */
  readonly append: (entry: A) => number
  /** The number of entries. */
  readonly size: () => number
  /** The entry at an index. */
  readonly at: (index: number) => A | undefined
  /** A copy of the entries from `from` (default 0). */
  readonly slice: (from?: number) => ReadonlyArray<A>
  /** The entries from `from` on, then every later one, until the log closes. */
  readonly stream: (from?: number) => Stream.Stream<A>
  /** Ends every reader's stream after it drains; later appends are refused. */
  readonly close: () => void
  readonly isClosed: () => boolean
  /** Waits until the log is closed. */
  readonly awaitClose: Effect.Effect<void>
}

/**
 * Makes an empty log.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <A>(): Log<A> => {
  const entries: Array<A> = []
  const waiters = new Set<() => void>()
  const closeWaiters = new Set<() => void>()
  let closed = false

  let wakePending = false
  const wakeNow = () => {
    wakePending = false
    if (waiters.size === 0) return
    const woken = [...waiters]
    waiters.clear()
    for (const resume of woken) resume()
  }
  // Readers are woken once per burst of appends, not once per append: an appender running a
  // burst (a model streaming chunks) keeps going, and each reader then takes the whole burst
  // as one slice. The microtask runs before any fiber the scheduler resumes next.
  const wake = () => {
    if (waiters.size === 0 || wakePending) return
    wakePending = true
    queueMicrotask(wakeNow)
  }

  const waitBeyond = (cursor: number) =>
    Effect.callback<void>((resume) => {
      if (cursor < entries.length || closed) return resume(Effect.void)
      const wakeUp = () => resume(Effect.void)
      waiters.add(wakeUp)
      return Effect.sync(() => waiters.delete(wakeUp))
    })

  // A position before the start (negative, or not a number) is the start: not counted from the
  // end as `Array.slice` would, so `slice` and `stream` agree.
  const position = (from: number): number => (from > 0 ? Math.floor(from) : 0)

  const stream = (from = 0): Stream.Stream<A> =>
    Stream.fromPull(Effect.sync(() => {
      let cursor = position(from)
      const pull: Effect.Effect<readonly [A, ...Array<A>], Cause.Done> = Effect.suspend(() => {
        if (cursor < entries.length) {
          const chunk = entries.slice(cursor) as unknown as readonly [A, ...Array<A>]
          cursor = entries.length
          return Effect.succeed(chunk)
        }
        if (closed) return Cause.done()
        return Effect.flatMap(waitBeyond(cursor), () => pull)
      })
      return pull
    }))

  return {
    append: (entry) => {
      if (closed) return -1
      entries.push(entry)
      wake()
      return entries.length - 1
    },
    size: () => entries.length,
    at: (index) => entries[index],
    slice: (from = 0) => entries.slice(position(from)),
    stream,
    close: () => {
      closed = true
      wakeNow()
      const woken = [...closeWaiters]
      closeWaiters.clear()
      for (const resume of woken) resume()
    },
    isClosed: () => closed,
    awaitClose: Effect.callback<void>((resume) => {
      if (closed) return resume(Effect.void)
      const wakeUp = () => resume(Effect.void)
      closeWaiters.add(wakeUp)
      return Effect.sync(() => closeWaiters.delete(wakeUp))
    })
  }
}
