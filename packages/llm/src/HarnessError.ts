/**
 * The base of every typed failure in dsh: a stable `code`, a human-readable `message` and an
 * optional `cause`. Each package defines its failures as `Schema.TaggedError` classes whose
 * fields start with {@link fields}, so they are
 * `Schema.TaggedError`s (yieldable, encodable to JSON) that carry their code as a literal.
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { ErrorCode } from "./ErrorCode.ts"
import { bounded, messageOf, render } from "./internal/render.ts"

/**
 * The shape every harness error shares.
 *
 * @since 0.1.0
 * @category models
 */
export interface HarnessError {
  readonly _tag: string
  readonly code: ErrorCode
  readonly message: string
  readonly cause?: unknown
}

/**
 * The `{tag, code}` pair that travels with tool results and session `error` events so that
 * code can tell failures apart without parsing text.
 *
 * @since 0.1.0
 * @category models
 */
export const ErrorInfo = Schema.Struct({
  tag: Schema.String,
  code: Schema.String
})

/**
 * @since 0.1.0
 * @category models
 */
export type ErrorInfo = typeof ErrorInfo.Type

/**
 * The fields every harness error class starts from: a literal `code` (filled in by the
 * constructor), a required `message` and an optional `cause`. Spread them into a
 * `Schema.TaggedError`'s fields.
 *
 * @example
 * ```ts
 * import { HarnessError } from "@dsh/llm"
 * import { Schema } from "effect"
 *
 * class DiskFull extends Schema.TaggedError<DiskFull>()("DiskFull", {
 *   ...HarnessError.fields("PERSISTENCE"),
 *   path: Schema.String
 * }) {}
 *
 * const e = new DiskFull({ message: "no space left on device", path: "/tmp/x" })
 * e.code // "PERSISTENCE"
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const fields = <const Code extends ErrorCode>(code: Code) => ({
  code: Schema.tag(code),
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
})

/**
 * What every harness error class exposes: its Schema fields, among them the literal `code`
 * (`MyError.fields.code.schema.literal`). The error-code table test reads codes this way.
 *
 * @since 0.1.0
 * @category models
 */
export interface HarnessErrorClass {
  readonly fields: { readonly code: { readonly schema: { readonly literal: unknown } } }
}

/**
 * Whether a value is a harness error (an instance of a class built on {@link fields}, or any object of
 * the same shape).
 *
 * @since 0.1.0
 * @category guards
 */
export const isHarnessError = (u: unknown): u is HarnessError =>
  Predicate.hasProperty(u, "_tag") && Predicate.hasProperty(u, "code") && Predicate.hasProperty(u, "message") &&
  typeof u._tag === "string" && typeof u.code === "string" && typeof u.message === "string"

/**
 * The `{tag, code}` summary of an error.
 *
 * @since 0.1.0
 * @category utils
 */
export const info = (error: HarnessError): ErrorInfo => ({ tag: error._tag, code: error.code })

/**
 * The longest text {@link describe} returns (before its length note).
 *
 * @since 0.1.0
 * @category utils
 */
export const describeLimit = 2000

/**
 * Any failure in words, for a tool result, an `error` event or a turn's end: a harness error's
 * or an `Error`'s message (an `Error` of another class is prefixed with its name, e.g.
 * `TypeError: x is not a function`), a thrown string's text, the `message` of a plain object
 * that has one, and for anything else a bounded JSON-like rendering. It never throws and
 * never says `[object Object]`: a cycle renders as `[Circular]`, a getter that throws as
 * `[unreadable]`, and the result is cut at {@link describeLimit} characters. Stacks are never
 * included.
 *
 * @example
 * ```ts
 * import { HarnessError } from "@dsh/llm"
 *
 * const cyclic: Record<string, unknown> = { reason: "disk full" }
 * cyclic.self = cyclic
 * HarnessError.describe({ message: "quota exceeded" }) // "quota exceeded"
 * HarnessError.describe(cyclic) // '{"reason":"disk full","self":[Circular]}'
 * ```
 *
 * @since 0.1.0
 * @category utils
 */
export const describe = (failure: unknown): string => {
  let text: string
  try {
    text = isHarnessError(failure) ? failure.message : messageOf(failure) ?? render(failure)
  } catch {
    // a Proxy whose traps throw
    text = "[an unreadable value]"
  }
  return bounded(text, describeLimit)
}
