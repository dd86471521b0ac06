/**
 * The conformance kit: a reusable check, parameterized by a Layer providing {@link Model},
 * that an adapter obeys the chunk contract. {@link check} runs the cases and reports what
 * broke; {@link suite} registers them as `@effect/vitest` tests that fail on any violation.
 *
 * What it asserts, for every case:
 * - the chunks obey every rule of {@link ChunkContract} (one `finish`, nothing after it,
 *   usage before it, deltas only inside their block, tool-call ids on every delta, every
 *   value a chunk, …); a value that is no chunk, which the model seam cuts the stream at, is
 *   a `chunk-shape` violation, not a typed failure;
 * - a failed stream fails with a typed error carrying a stable code (a `LlmError` or
 *   `NoModelError`), never with a defect; a failed stream need not have sent `finish`, and
 *   must not fail after it (`nothing-after-finish`); a `finish` of kind `error` carries a
 *   catalog code (`typed-failure` otherwise);
 * - a case's own expectation about the assembled answer holds;
 * - the stream ends within `caseWithin`: a stalled case is reported, not waited for (so is a
 *   Layer that is not built within it, as the case `layer`).
 *
 * And once, with the `endless` request (an answer that does not end by itself): interrupting
 * the consumer after its first chunk (which must come within `firstChunkWithin`) ends the
 * stream within `interruptWithin`, after which the optional `afterInterrupt` probe (e.g. "the
 * server saw the connection close") passes.
 *
 * @since 0.1.0
 */
import { Assembler, ErrorCode, HarnessError, type ModelRequest, type StreamChunk } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as ChunkContract from "./ChunkContract.ts"
import { Model } from "./Model.ts"

/**
 * One request to send and what its answer must satisfy beyond the contract.
 *
 * @since 0.1.0
 * @category models
 */
export interface Case {
  readonly name: string
  readonly request: ModelRequest.ModelRequest
  /** Returns a description of what is wrong with the answer, or `undefined` when it is right. */
  readonly expect?: (outcome: Outcome) => string | undefined
}

/**
 * How a case's stream ended.
 *
 * @since 0.1.0
 * @category models
 */
export interface Outcome {
  readonly chunks: ReadonlyArray<StreamChunk.StreamChunk>
  readonly assembled: Assembler.Assembled
  /** The typed failure, when the stream failed. */
  readonly failure: HarnessError.HarnessError | undefined
}

/**
 * A broken expectation of the kit.
 *
 * @since 0.1.0
 * @category models
 */
export interface Violation {
  readonly case: string
  /**
   * A chunk-contract rule, or one of the kit's own: `typed-failure`, `expectation` (also an
   * expectation that threw), `stalled` (a case's stream still running after `caseWithin`),
   * `interruption`.
   */
  readonly rule: ChunkContract.Rule | "typed-failure" | "expectation" | "stalled" | "interruption"
  readonly message: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Options<E> {
  /** Names the suite. */
  readonly name: string
  /** Provides the model under test. */
  readonly layer: Layer.Layer<Model, E>
  readonly cases: ReadonlyArray<Case>
  /** A request whose answer does not end by itself, for the interruption check. */
  readonly endless?: ModelRequest.ModelRequest
  /**
   * How long a case's stream may take to end (default 30 seconds): one still running then is
   * a `stalled` violation, and is interrupted without waiting for it.
   */
  readonly caseWithin?: Duration.Input
  /** How long the interrupted stream may take to end (default 5 seconds). */
  readonly interruptWithin?: Duration.Input
  /** How long the endless request's stream may take to give its first chunk (default 30 seconds). */
  readonly firstChunkWithin?: Duration.Input
  /** Runs after the interruption; fails (with a description) when the adapter did not release its resources. */
  readonly afterInterrupt?: Effect.Effect<void, string>
}

const known = new Set<string>(ErrorCode.codes)

// Where the model seam cut a stream at a value that is no chunk (see `Model.stream`), if it did.
const malformedChunk = (error: unknown): { readonly position: number; readonly problem: string } | undefined => {
  const cause: unknown = typeof error === "object" && error !== null ? (error as { readonly cause?: unknown }).cause : undefined
  if (typeof cause !== "object" || cause === null || (cause as { readonly _tag?: unknown })._tag !== "MalformedChunk") return undefined
  const { position, problem } = cause as { readonly position?: unknown; readonly problem?: unknown }
  return typeof position === "number" && typeof problem === "string" ? { position, problem } : undefined
}

// A case's stream, run until it ends or `within` passes (`undefined` then). Detached, like the
// interruption check's: a stalled stream that ignores interruption must not hold `check` up.
const runBounded = (
  stream: Stream.Stream<StreamChunk.StreamChunk, unknown>,
  chunks: Array<StreamChunk.StreamChunk>,
  within: Duration.Input
): Effect.Effect<Exit.Exit<void, unknown> | undefined> =>
  Effect.gen(function*() {
    const fiber = yield* Stream.runForEach(stream, (chunk) => Effect.sync(() => void chunks.push(chunk))).pipe(
      Effect.exit,
      Effect.forkDetach
    )
    // Interrupted when it stalled, or when `check` itself is (a no-op on a stream that ended).
    const exit = yield* Effect.timeoutOption(Fiber.join(fiber), within).pipe(
      Effect.ensuring(Effect.sync(() => fiber.interruptUnsafe()))
    )
    return Option.isSome(exit) ? exit.value : undefined
  })

// The case's own expectation, which is test code: a throw is its violation, not a defect of `check`.
const expectation = (c: Case, outcome: Outcome): string | undefined => {
  if (c.expect === undefined) return undefined
  try {
    return c.expect(outcome)
  } catch (error) {
    return `the expectation threw: ${HarnessError.describe(error)}`
  }
}

const runCase = (model: Model["Service"], c: Case, within: Duration.Input): Effect.Effect<ReadonlyArray<Violation>> =>
  Effect.gen(function*() {
    const chunks: Array<StreamChunk.StreamChunk> = []
    const ended = yield* runBounded(model.stream(c.request), chunks, within)
    if (ended === undefined) {
      return [{
        case: c.name,
        rule: "stalled",
        message: `the stream did not end within ${Duration.format(Duration.fromInputUnsafe(within))} (${chunks.length} chunks so far)`
      }]
    }
    const exit = ended
    const violations: Array<Violation> = []
    let failure: HarnessError.HarnessError | undefined
    if (Exit.isFailure(exit)) {
      const error = Cause.findErrorOption(exit.cause)
      const cut = Option.isSome(error) ? malformedChunk(error.value) : undefined
      if (cut !== undefined) {
        // the model seam cut the stream at a value that is no chunk: the adapter's break, not a failure it chose
        violations.push({ case: c.name, rule: "chunk-shape", message: `chunk ${cut.position}: ${cut.problem}` })
      } else if (Option.isSome(error) && HarnessError.isHarnessError(error.value) && known.has(error.value.code)) {
        failure = error.value
        if (chunks.some((chunk) => chunk.type === "finish")) {
          violations.push({ case: c.name, rule: "nothing-after-finish", message: `the stream failed after its finish: ${error.value.code}` })
        }
      } else {
        violations.push({
          case: c.name,
          rule: "typed-failure",
          message: `the stream failed without a typed error carrying a known code: ${Cause.pretty(exit.cause)}`
        })
      }
    }
    for (const [position, chunk] of chunks.entries()) {
      if (chunk.type === "finish" && chunk.reason.kind === "error" && !known.has(chunk.reason.code)) {
        violations.push({
          case: c.name,
          rule: "typed-failure",
          message: `chunk ${position}: a finish of kind error carries ${JSON.stringify(chunk.reason.code)}, which is no catalog code (map the provider's code to one)`
        })
      }
    }
    for (const v of ChunkContract.check(chunks)) {
      // a stream that failed is cut short: it owes no finish and may leave blocks open
      if (Exit.isFailure(exit) && (v.rule === "finish-once" || v.rule === "block-end-once") && v.position === chunks.length) {
        continue
      }
      violations.push({ case: c.name, rule: v.rule, message: `chunk ${v.position}: ${v.message}` })
    }
    const wrong = expectation(c, { chunks, assembled: Assembler.assemble(chunks), failure })
    if (wrong !== undefined) violations.push({ case: c.name, rule: "expectation", message: wrong })
    return violations
  })

const runInterruption = <E>(
  model: Model["Service"],
  options: Options<E>,
  request: ModelRequest.ModelRequest
): Effect.Effect<ReadonlyArray<Violation>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const name = "interruption"
    const first = yield* Deferred.make<void>()
    // Detached, not a child: a fiber awaits its children when it ends, so a stream that ignores
    // interruption would keep the caller of `check` from ever completing (and `suite`'s test
    // would time out instead of reporting the violation). The check's scope interrupts it.
    const fiber = yield* Stream.runForEach(model.stream(request), () => Deferred.succeed(first, undefined)).pipe(
      Effect.forkDetach
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => fiber.interruptUnsafe()))
    const firstChunkWithin = options.firstChunkWithin ?? Duration.seconds(30)
    const started = yield* Effect.raceFirst(
      Effect.as(Deferred.await(first), true),
      Effect.as(Fiber.await(fiber), false)
    ).pipe(Effect.timeoutOption(firstChunkWithin))
    // a stream that stalls before its first chunk cannot be checked: said, not waited for
    if (Option.isNone(started)) {
      return [{
        case: name,
        rule: "interruption",
        message: `the endless request's stream gave no chunk within ${Duration.format(Duration.fromInputUnsafe(firstChunkWithin))}`
      }]
    }
    if (!started.value) {
      return [{ case: name, rule: "interruption", message: "the endless request's stream ended before its first chunk" }]
    }
    const interrupted = yield* Fiber.interrupt(fiber).pipe(
      Effect.timeoutOption(options.interruptWithin ?? Duration.seconds(5))
    )
    if (Option.isNone(interrupted)) {
      return [{
        case: name,
        rule: "interruption",
        message: `the stream did not end within ${Duration.format(Duration.fromInputUnsafe(options.interruptWithin ?? Duration.seconds(5)))} of its consumer's interruption`
      }]
    }
    if (options.afterInterrupt === undefined) return []
    const probe = yield* Effect.result(options.afterInterrupt)
    return probe._tag === "Success"
      ? []
      : [{ case: name, rule: "interruption", message: `after interruption: ${probe.failure}` }]
  })

/**
 * Runs every case (and the interruption check) against the model the Layer provides and
 * returns all violations; empty when the model conforms.
 *
 * @since 0.1.0
 * @category checks
 */
export const check = <E>(options: Options<E>): Effect.Effect<ReadonlyArray<Violation>, E> =>
  Effect.gen(function*() {
    const within = options.caseWithin ?? Duration.seconds(30)
    // a Layer that never builds (a server that never answers its setup) is said, not waited for
    const built = yield* Effect.timeoutOption(Layer.build(options.layer), within)
    if (Option.isNone(built)) {
      const stalled: Violation = { case: "layer", rule: "stalled", message: `the Layer was not built within ${Duration.format(Duration.fromInputUnsafe(within))}` }
      return [stalled]
    }
    const model = Context.get(built.value, Model)
    const violations: Array<Violation> = []
    for (const c of options.cases) violations.push(...(yield* runCase(model, c, within)))
    if (options.endless !== undefined) violations.push(...(yield* runInterruption(model, options, options.endless)))
    return violations
  }).pipe(Effect.scoped)

/**
 * Registers the kit as tests: one per case, plus the interruption check when `endless` is
 * given. Each test builds the Layer afresh, so stateful models (scripts, servers) see only
 * that test's request. The tests use the live clock.
 *
 * @since 0.1.0
 * @category tests
 */
export const suite = <E>(options: Options<E>): void => {
  describe(`model conformance: ${options.name}`, () => {
    for (const c of options.cases) {
      it.live(c.name, () =>
        Effect.gen(function*() {
          const { endless: _, ...single } = options
          const violations = yield* check({ ...single, cases: [c] })
          expect(violations).toStrictEqual([])
        }))
    }
    if (options.endless !== undefined) {
      it.live("interruption stops the stream", () =>
        Effect.gen(function*() {
          const violations = yield* check({ ...options, cases: [] })
          expect(violations).toStrictEqual([])
        }))
    }
  })
}
