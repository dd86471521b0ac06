/**
 * A list whose items are added within a scope and removed when that scope closes, kept in an
 * explicit order: a lower `order` comes first, equal orders keep the order they were added in.
 * It is how every seam of dsh holds what is registered on it (middleware chains, prompt
 * sections, flush hooks).
 *
 * The list is copy-on-write: `current()` returns an array that never changes afterwards, so an
 * addition or removal racing with a reader never changes what the reader is going through.
 * Each addition is its own entry: the same item added in two scopes stays until both close.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/**
 * @since 0.1.0
 * @category models
 */
export interface ScopedList<A> {
  /** Adds an item until the current scope closes. */
  readonly add: (item: A, order?: number) => Effect.Effect<void, never, Scope.Scope>
  /** The items now, in order. */
  readonly current: () => ReadonlyArray<A>
}

interface Entry<A> {
  readonly item: A
  readonly order: number
}

/**
 * Makes an empty list.
 *
 * @example
 * ```ts
 * import { ScopedList } from "@dsh/llm"
 * import { Effect } from "effect"
 *
 * const list = ScopedList.make<string>()
 * const program = Effect.scoped(Effect.gen(function*() {
 *   yield* list.add("late", 10)
 *   yield* list.add("early")
 *   return list.current() // ["early", "late"]
 * }))
 * // after the scope: list.current() is []
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <A>(): ScopedList<A> => {
  let entries: ReadonlyArray<Entry<A>> = []
  let items: ReadonlyArray<A> = []

  const replace = (next: ReadonlyArray<Entry<A>>) => {
    entries = next
    items = next.map((e) => e.item)
  }

  const add = (item: A, order = 0) =>
    Effect.asVoid(Effect.acquireRelease(
      Effect.sync(() => {
        const entry: Entry<A> = { item, order }
        const next = entries.slice()
        let at = next.length
        while (at > 0 && next[at - 1]!.order > order) at--
        next.splice(at, 0, entry)
        replace(next)
        return entry
      }),
      (entry) => Effect.sync(() => replace(entries.filter((e) => e !== entry)))
    ))

  return { add, current: () => items }
}
