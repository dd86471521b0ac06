/**
 * What a turn reports when something inside it failed: a stable catalog code and a message.
 * A typed failure keeps its own code and message; a defect that is a harness error (a
 * middleware that threw, blamed by name) keeps its code; anything else is `DEFECT` with the
 * failure described (`HarnessError.describe`: a plain object's message, never
 * `[object Object]`). A code outside the catalog (a provider's own, an object that only looks
 * like a harness error) is never reported as such: it becomes a catalog code, and the code it
 * reported is kept as `reportedCode`.
 *
 * @internal
 */
import { ErrorCode, HarnessError, LlmError, Middleware } from "@dsh/llm"
import * as Effect from "effect/Effect"
import { ToolErrors } from "@dsh/tools"
import * as Cause from "effect/Cause"
import * as Option from "effect/Option"
import { TurnDefectError } from "../LoopError.ts"

/** A described failure. */
export interface Failure {
  readonly code: ErrorCode.ErrorCode
  readonly message: string
  /** The code the failure carried when it is not a catalog code. */
  readonly reportedCode?: string
  /** The typed error it is (what `agent.run` fails with): itself, or a `TurnDefectError`. */
  readonly error: HarnessError.HarnessError
}

const DEFECT = TurnDefectError.fields.code.schema.literal

/** A code made a catalog code: itself when it is one, `fallback` otherwise (with the original kept). */
export const catalogCode = (code: string, fallback: ErrorCode.ErrorCode): Pick<Failure, "code" | "reportedCode"> =>
  ErrorCode.isErrorCode(code) ? { code } : { code: fallback, reportedCode: code }

/** The code and message of a failure value (typed or a defect). */
export const describeFailure = (failure: unknown): Failure => {
  if (HarnessError.isHarnessError(failure)) {
    const code = catalogCode(failure.code, DEFECT)
    const message = HarnessError.describe(failure)
    // a step that failed on a provider's own code says which, and carries its typed error (StepFailure)
    const { error, reportedCode } = failure as { readonly reportedCode?: unknown; readonly error?: unknown }
    const typed = HarnessError.isHarnessError(error)
      ? error
      : code.reportedCode === undefined
      ? failure
      : new TurnDefectError({ message, cause: failure })
    return typeof reportedCode === "string"
      ? { code: code.code, reportedCode, message, error: typed }
      : { ...code, message, error: typed }
  }
  const message = `unexpected failure: ${HarnessError.describe(failure)}`
  return { code: DEFECT, message, error: new TurnDefectError({ message, cause: failure }) }
}

/** The code and message of a failed cause (typed failure or defect). */
export const describeCause = (cause: Cause.Cause<unknown>): Failure => {
  const failure = Cause.findErrorOption(cause)
  if (Option.isSome(failure)) return describeFailure(failure.value)
  const defect = Cause.findDefect(cause)
  if (defect._tag === "Success") return describeFailure(defect.success)
  return describeFailure(Cause.squash(cause))
}

// What a model's finish of kind `error` can stand for: its own failures, an abort, a defect.
// Any other code (a catalog code of another layer, a provider's own) is the provider failing
// without saying how in dsh's words: `LLM_SERVER`, the code it sent kept as `reportedCode` —
// so the log and `agent.run`'s typed error agree.
const modelCodes: ReadonlySet<string> = new Set([
  "LLM_AUTH",
  "LLM_RATE_LIMIT",
  "LLM_INVALID_REQUEST",
  "LLM_CONTEXT_OVERFLOW",
  "LLM_PROTOCOL",
  "LLM_TRANSPORT",
  "LLM_SERVER",
  "ABORTED",
  "DEFECT"
])

/** The catalog code a model's finish of kind `error` is logged and failed with (see above). */
export const modelCode = (reported: string): { readonly code: HarnessError.HarnessError["code"]; readonly reportedCode?: string } =>
  modelCodes.has(reported) ? catalogCode(reported, "LLM_SERVER") : { code: "LLM_SERVER", reportedCode: reported }

/** The typed error a catalog code stands for, for a failure that came as a finish chunk. */
export const typedError = (code: HarnessError.HarnessError["code"], message: string): HarnessError.HarnessError => {
  switch (code) {
    case "LLM_AUTH":
      return new LlmError.LlmAuthError({ message })
    case "LLM_RATE_LIMIT":
      return new LlmError.LlmRateLimitError({ message })
    case "LLM_INVALID_REQUEST":
      return new LlmError.LlmInvalidRequestError({ message })
    case "LLM_CONTEXT_OVERFLOW":
      return new LlmError.LlmContextOverflowError({ message })
    case "LLM_PROTOCOL":
      return new LlmError.LlmProtocolError({ message })
    case "LLM_TRANSPORT":
      return new LlmError.LlmTransportError({ message })
    case "LLM_SERVER":
      return new LlmError.LlmServerError({ message })
    case "ABORTED":
      return new ToolErrors.AbortedError({ message })
    default:
      return new TurnDefectError({ message })
  }
}

/**
 * A seam's output: through its middleware chain, checked (see {@link seamOutput}); with no
 * middleware registered, the default's own value at once — nothing to check, and the few
 * Effects the chain would build for it are a step's most frequent overhead.
 */
export const throughSeam = <In, A, E>(
  seam: string,
  chain: Middleware.Chain<In, Effect.Effect<A, E>>,
  input: In,
  fallback: (input: In) => A,
  expected: string,
  is: (value: unknown) => boolean
): Effect.Effect<A, E | Middleware.MiddlewareError> =>
  chain.current().length === 0
    ? Effect.succeed(fallback(input))
    : Effect.flatMap(chain.apply(input, (input) => Effect.succeed(fallback(input))), seamOutput<A>(seam, chain, expected, is))

/**
 * What a seam's middleware chain gave back, checked for the shape the loop reads: a value of
 * another shape (past the types) fails the step with `MIDDLEWARE` naming the seam's
 * middleware, instead of a defect somewhere further on that names nobody.
 */
export const seamOutput = <A>(
  seam: string,
  chain: { readonly current: () => ReadonlyArray<{ readonly name: string }> },
  expected: string,
  is: (value: unknown) => boolean
) =>
(value: A): Effect.Effect<A, Middleware.MiddlewareError> => {
  if (is(value)) return Effect.succeed(value)
  const names = chain.current().map((middleware) => middleware.name).join(", ")
  return Effect.fail(
    new Middleware.MiddlewareError({
      middleware: names,
      message: `the ${seam} middleware (${names}) gave ${HarnessError.describe(value)}, not ${expected}`
    })
  )
}
