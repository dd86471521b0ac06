/**
 * The one around-middleware shape every seam of dsh uses (model calls, tool execution, prompt
 * assembly, requests, step results, continuation): a function of the input and `next` that
 * may rewrite the input, wrap `next`, or not call it at all (a veto). Middleware returns new
 * values; it never mutates what it was given.
 *
 * A {@link Chain} holds the middleware registered for one seam. Registration is scoped:
 * closing the scope that registered a middleware removes it, and registering into a scope that
 * is closed already fails with `ScopedList.ScopeClosedError` (`SCOPE_CLOSED`), registering
 * nothing. Order is explicit: a lower
 * `order` runs further outside (sees the input first and the output last); equal orders run
 * in registration order.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
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
  /**
   * Adds a middleware until the current scope closes. Fails with `ScopeClosedError`, adding
   * nothing, when the current scope is closed already.
   */
  readonly register: (middleware: Middleware<In, Out>) => Effect.Effect<void, ScopedList.ScopeClosedError, Scope.Scope>
  /** The registered middleware, outermost first. */
  readonly current: () => ReadonlyArray<Middleware<In, Out>>
  /** Runs `input` through the middleware registered now, ending in `terminal`. */
  readonly apply: (input: In, terminal: (input: In) => Out) => Out
}

/**
 * How a chain handles the outputs of its seam.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<Out> {
  /**
   * Defers building an output (e.g. `Stream.suspend` or `Effect.suspend`), so that a
   * middleware runs when the output is run, and a throw becomes a defect of the output rather
   * than escaping the caller.
   */
  readonly suspend: (evaluate: () => Out) => Out
  /**
   * Replaces the defect an output dies with (e.g. with `Effect.catchDefect`). With it, the
   * chain blames a middleware by name for its output's own defects, not for those it passes
   * on from `next`; without it, only throws are blamed.
   */
  readonly mapDefect?: (output: Out, f: (defect: unknown) => unknown) => Out
  /**
   * Whether a value is an output of the seam (e.g. `Effect.isEffect`), with what it is called
   * in messages (`"an Effect"`). With it, a middleware that returns anything else (a Promise, a
   * plain value) is blamed like one that throws, instead of the seam dying somewhere inside.
   */
  readonly output?: { readonly is: (value: unknown) => boolean; readonly named: string }
  /**
   * What the seam is called where a registration is refused, e.g. `"model"` for
   * `model middleware "retry"`.
   */
  readonly seam?: string
}

/**
 * What {@link makeEffect} and {@link makeStream} take.
 *
 * @since 0.1.0
 * @category models
 */
export interface SeamOptions {
  /** What the seam is called where a registration is refused (see {@link Options}). */
  readonly seam?: string
}

// How a refused registration names the middleware: its name, or what stands in its place
// (a name past the types is no string).
const registration = (seam: string | undefined, middleware: { readonly name: unknown } | null | undefined): string => {
  const name: unknown = middleware?.name
  const shown = typeof name === "string" ? JSON.stringify(name) : HarnessError.describe(name)
  return `${seam === undefined ? "" : `${seam} `}middleware ${shown}`
}

/**
 * Makes an empty chain (see {@link Options}). A middleware that throws, or whose output dies
 * with a defect of its own, makes the output die with a {@link MiddlewareError} naming it; a
 * defect raised further in (by an inner middleware or the terminal) passes through unchanged,
 * so the culprit is the one named. Typed failures pass through untouched.
 *
 * @example
 * ```ts
 * import { Middleware } from "@dsh/llm"
 * import { Effect } from "effect"
 *
 * const chain = Middleware.makeEffect<number, number, never>()
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
export const make = <In, Out>(options: Options<Out>): Chain<In, Out> => {
  // `apply` takes the array it finds (the list is copy-on-write), so a registration or removal
  // racing with a call never changes a chain that is already running.
  const registered = ScopedList.make<Middleware<In, Out>>({
    describe: (middleware) => registration(options.seam, middleware)
  })
  // a registration that is no middleware (past the types) is kept, to fail where it runs, as
  // MIDDLEWARE naming the seam, rather than throw here with no code
  const register = (middleware: Middleware<In, Out>) =>
    registered.add(middleware, typeof middleware === "object" && middleware !== null ? middleware.order : undefined)
  const { mapDefect, output: outputCheck, suspend } = options
  const checked = (out: Out): Out => {
    if (outputCheck !== undefined && !outputCheck.is(out)) throw new NotAnOutput(out, outputCheck.named)
    return out
  }

  const apply = (input: In, terminal: (input: In) => Out): Out => {
    const snapshot = registered.current()
    // the defects that came out of a `next` during this call: a middleware passing one on is
    // not blamed for it (identity, not a wrapper, so a middleware inspecting defects of `next`
    // sees them as they are)
    const passedOn = mapDefect === undefined || snapshot.length === 0 ? undefined : new Set<unknown>()
    const pass = (defect: unknown): unknown => {
      passedOn!.add(defect)
      return defect
    }
    const at = (i: number, value: In): Out => {
      // Suspended too, so that a throwing terminal is not caught (and blamed) by the innermost
      // middleware's `try` below: it becomes a plain defect of the output.
      if (i >= snapshot.length) return suspend(() => terminal(value))
      const middleware = snapshot[i]!
      if (mapDefect === undefined) {
        return suspend(() => {
          try {
            return checked(middleware.around(value, (next) => at(i + 1, next)))
          } catch (cause) {
            throw blame(nameOf(middleware), new Thrown(cause))
          }
        })
      }
      const output = suspend(() => {
        try {
          return checked(middleware.around(value, (next) => mapDefect(at(i + 1, next), pass)))
        } catch (cause) {
          throw new Thrown(cause)
        }
      })
      return mapDefect(output, (defect) => (passedOn!.has(defect) ? defect : blame(nameOf(middleware), defect)))
    }
    return at(0, input)
  }

  return { register, current: registered.current, apply }
}

/**
 * A middleware's name as errors show it: its `name`, or what it is when it is no middleware
 * (past the types: `null`, an object without a name), so that blaming it never throws.
 *
 * @since 0.1.0
 * @category utils
 */
export const nameOf = (middleware: unknown): string =>
  typeof middleware === "object" && middleware !== null && typeof (middleware as { readonly name?: unknown }).name === "string"
    ? (middleware as { readonly name: string }).name
    : `(no middleware: ${HarnessError.describe(middleware)})`

/**
 * An empty chain of a seam whose output is an Effect: defects are blamed precisely (see
 * {@link make}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeEffect = <In, A, E, R = never>(options?: SeamOptions): Chain<In, Effect.Effect<A, E, R>> =>
  make<In, Effect.Effect<A, E, R>>({
    ...options,
    suspend: Effect.suspend,
    mapDefect: (output, f) => Effect.catchDefect(output, (defect) => Effect.die(f(defect))),
    output: { is: Effect.isEffect, named: "an Effect" }
  })

/**
 * An empty chain of a seam whose output is a Stream: defects are blamed precisely (see
 * {@link make}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeStream = <In, A, E, R = never>(options?: SeamOptions): Chain<In, Stream.Stream<A, E, R>> =>
  make<In, Stream.Stream<A, E, R>>({
    ...options,
    suspend: Stream.suspend,
    output: { is: Stream.isStream, named: "a Stream" },
    mapDefect: (output, f) =>
      Stream.catchCause(output, (cause) => {
        const defect = cause.reasons.find(Cause.isDieReason)
        return defect === undefined ? Stream.failCause(cause) : Stream.die(f(defect.defect))
      })
  })

/** What a middleware returned instead of an output of its seam. */
class NotAnOutput {
  readonly value: unknown
  readonly expected: string
  constructor(value: unknown, expected: string) {
    this.value = value
    this.expected = expected
  }
}

/** A throw out of a middleware's `around`, told apart from a defect of its output. */
class Thrown {
  readonly cause: unknown
  constructor(cause: unknown) {
    this.cause = cause
  }
}

const blame = (middleware: string, defect: unknown): MiddlewareError => {
  const thrown = defect instanceof Thrown
  const cause = thrown ? defect.cause : defect
  if (cause instanceof NotAnOutput) {
    return new MiddlewareError({
      middleware,
      message: `middleware "${middleware}" returned ${HarnessError.describe(cause.value)}, not ${cause.expected}`
    })
  }
  return new MiddlewareError({
    middleware,
    message: `middleware "${middleware}" ${thrown ? "threw" : "died"}: ${HarnessError.describe(cause)}`,
    cause
  })
}
