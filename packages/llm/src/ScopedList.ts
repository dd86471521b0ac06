/**
 * A list whose items are added within a scope and removed when that scope closes, kept in an
 * explicit order: a lower `order` comes first, equal orders keep the order they were added in
 * (an order that is no number, or `NaN`, is the default 0).
 * It is how every seam of dsh holds what is registered on it (middleware chains, prompt
 * sections, flush hooks).
 *
 * The list is copy-on-write: `current()` returns an array that never changes afterwards, so an
 * addition or removal racing with a reader never changes what the reader is going through.
 * Each addition is its own entry: the same item added in two scopes stays until both close.
 *
 * Adding into a scope that is closed already (an `Effect.scoped` that has ended, a disposed
 * agent's scope) fails with a {@link ScopeClosedError} (`SCOPE_CLOSED`) and adds nothing: the
 * closed scope would remove the item at once, so the addition would silently do nothing.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as HarnessError from "./HarnessError.ts"

/**
 * @since 0.1.0
 * @category models
 */
export interface ScopedList<A> {
  /**
   * Adds an item until the current scope closes. Fails with {@link ScopeClosedError}, adding
   * nothing, when the current scope is closed already.
   */
  readonly add: (item: A, order?: number) => Effect.Effect<void, ScopeClosedError, Scope.Scope>
  /** The items now, in order. */
  readonly current: () => ReadonlyArray<A>
}

/**
 * A registration was made into a scope that is closed already: the scope would remove it at
 * once, so it is refused instead of silently doing nothing. `registration` says what was being
 * registered (e.g. `model middleware "retry"`, `prompt section "date"`).
 *
 * @since 0.1.0
 * @category errors
 */
export class ScopeClosedError extends Schema.TaggedError<ScopeClosedError>()("ScopeClosedError", {
  ...HarnessError.fields("SCOPE_CLOSED"),
  registration: Schema.String
}) {}

/**
 * The {@link ScopeClosedError} for a registration (`what`, e.g. `flush hook "jsonl"`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const scopeClosed = (registration: string): ScopeClosedError =>
  new ScopeClosedError({
    registration,
    message: `Cannot register ${registration}: the registering scope is closed, so it would be unregistered at once ` +
      "(register it in a scope that is still open, not in an Effect.scoped that has ended)"
  })

/**
 * Whether a scope is closed (or closing): a finalizer added to it now runs at once. A
 * registration checks this right before inserting, with no other fiber running in between.
 *
 * @since 0.1.0
 * @category guards
 */
export const isClosed = (scope: Scope.Scope): boolean => scope.state._tag === "Closed"

/**
 * A registration into a scope known to be open: a Layer's own while it builds (it stays open
 * until the Layer is released), or one the caller has just opened. A `ScopeClosedError` there
 * is a bug, not an outcome, so it becomes a defect and leaves the error channel. A Layer
 * registering its middleware, sections or hooks so keeps the error type it always had.
 *
 * @since 0.1.0
 * @category combinators
 */
export const inOpenScope = <A, E, R>(registration: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, ScopeClosedError>, R> =>
  Effect.catchIf(
    registration,
    (error): error is Extract<E, ScopeClosedError> => error instanceof ScopeClosedError,
    (error) => Effect.die(error)
  ) as Effect.Effect<A, Exclude<E, ScopeClosedError>, R>

/**
 * How a list names an item in a {@link ScopeClosedError}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<A> {
  /** What adding `item` registers, e.g. `prompt section "date"`; `"an item"` without it. */
  readonly describe?: (item: A) => string
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
export const make = <A>(options?: Options<A>): ScopedList<A> => {
  let entries: ReadonlyArray<Entry<A>> = []
  let items: ReadonlyArray<A> = []

  const replace = (next: ReadonlyArray<Entry<A>>) => {
    entries = next
    items = next.map((e) => e.item)
  }

  const describe = options?.describe ?? (() => "an item")

  const insert = (item: A, order: number): Entry<A> => {
    const entry: Entry<A> = { item, order }
    const next = entries.slice()
    let at = next.length
    while (at > 0 && next[at - 1]!.order > order) at--
    next.splice(at, 0, entry)
    replace(next)
    return entry
  }

  // past the types: `NaN` compares false with every order, so it would freeze the items after it
  // in place, and a string ("5") would compare by its text; both are the default, 0
  const add = (item: A, given?: number): Effect.Effect<void, ScopeClosedError, Scope.Scope> => {
    const order = typeof given === "number" && !Number.isNaN(given) ? given : 0
    return addInOrder(item, order)
  }

  const addInOrder = (item: A, order: number): Effect.Effect<void, ScopeClosedError, Scope.Scope> =>
    Effect.flatMap(Scope.Scope, (scope) =>
      Effect.asVoid(Effect.acquireRelease(
        // Checked inside the acquire, right before the insertion and the finalizer's addition,
        // where no other fiber can close the scope in between (no timing is relied on).
        Effect.suspend(() => isClosed(scope) ? Effect.fail(scopeClosed(describe(item))) : Effect.succeed(insert(item, order))),
        (entry) => Effect.sync(() => replace(entries.filter((e) => e !== entry)))
      )))

  return { add, current: () => items }
}
