/**
 * The one around-middleware shape every seam of dsh uses (model calls, tool execution, prompt
 * assembly, requests, step results, continuation): a function of the input and `next` that
 * may rewrite the input, wrap `next`, or not call it at all (a veto). Middleware returns new
 * values; it never mutates what it was given.
 *
 * A {@link Chain} holds the middleware registered for one seam. Registration is scoped:
 * closing the scope that registered a middleware removes it. Order is explicit: a lower
 * `order` runs further outside (sees the input first and the output last); equal orders run
 * in registration order.
 *
 * @since 0.1.0
 */
import { Effect, Schema, type Scope } from "effect"
import * as HarnessError from "./HarnessError.ts"
import * as ScopedList from "./ScopedList.ts"

/**
 * An around-middleware: `(input, next) => output`.
 *
 * @since 0.1.0
 * @category models
 */
export type Around<In, Out> = (input: In, next: (input: In) => Out) => Out

/**
 * A middleware with its name (used in errors and traces) and its order.
 *
 * @since 0.1.0
 * @category models
 */
export interface Middleware<In, Out> {
  readonly name: string
  readonly order?: number
  readonly around: Around<In, Out>
}

/**
 * A middleware threw instead of returning its output. Chains turn the throw into this error
 * (as a defect of the output, since the seam's error channel belongs to the seam) so that
 * containment can name the culprit.
 *
 * @since 0.1.0
 * @category errors
 */
export class MiddlewareError extends Schema.TaggedError<MiddlewareError>()("MiddlewareError", {
  ...HarnessError.fields("MIDDLEWARE"),
  middleware: Schema.String
}) {}

/**
 * The registered middleware of one seam.
 *
 * @since 0.1.0
 * @category models
 */
export interface Chain<In, Out> {
  /** Adds a middleware until the current scope closes. */
  readonly register: (middleware: Middleware<In, Out>) => Effect.Effect<void, never, Scope.Scope>
  /** The registered middleware, outermost first. */
  readonly current: () => ReadonlyArray<Middleware<In, Out>>
  /** Runs `input` through the middleware registered now, ending in `terminal`. */
  readonly apply: (input: In, terminal: (input: In) => Out) => Out
}

/**
 * Makes an empty chain. `suspend` defers building a seam's output (e.g. `Stream.suspend` or
 * `Effect.suspend`), so that a middleware runs when the output is run, and a throw becomes a
 * defect of the output rather than escaping the caller.
 *
 * @example
 * ```ts
 * import { Middleware } from "@dsh/llm"
 * import { Effect } from "effect"
 *
 * const chain = Middleware.make<number, Effect.Effect<number>>({ suspend: Effect.suspend })
 * const program = Effect.scoped(Effect.gen(function*() {
 *   yield* chain.register({ name: "double", around: (n, next) => next(n * 2) })
 *   return yield* chain.apply(21, (n) => Effect.succeed(n))
 * }))
 * // Effect.runSync(program) === 42
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <In, Out>(options: { readonly suspend: (evaluate: () => Out) => Out }): Chain<In, Out> => {
  // `apply` takes the array it finds (the list is copy-on-write), so a registration or removal
  // racing with a call never changes a chain that is already running.
  const registered = ScopedList.make<Middleware<In, Out>>()
  const register = (middleware: Middleware<In, Out>) => registered.add(middleware, middleware.order)

  const apply = (input: In, terminal: (input: In) => Out): Out => {
    const snapshot = registered.current()
    const at = (i: number, value: In): Out => {
      // Suspended too, so that a throwing terminal is not caught (and blamed) by the innermost
      // middleware's `try` below: it becomes a plain defect of the output.
      if (i >= snapshot.length) return options.suspend(() => terminal(value))
      const middleware = snapshot[i]!
      return options.suspend(() => {
        try {
          return middleware.around(value, (next) => at(i + 1, next))
        } catch (cause) {
          throw new MiddlewareError({
            middleware: middleware.name,
            message: `middleware "${middleware.name}" threw: ${describe(cause)}`,
            cause
          })
        }
      })
    }
    return at(0, input)
  }

  return { register, current: registered.current, apply }
}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))
