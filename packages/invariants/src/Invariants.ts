/**
 * The invariants checker as a Layer: for every session the store creates (seeded ones from
 * their first event), a fiber consumes the session's `stream` and checks each event against
 * the {@link Rules}. It is meant for tests and demos; production compositions leave it out and
 * pay nothing for it (no subscription, no fiber).
 *
 * A violation is never silent. It is recorded as an `InvariantError` (code `INVARIANT`)
 * naming the rule, the session, the event's `seq` and type, and logged at once; and when the
 * Layer's scope closes, the checker first checks every event appended so far (so a violation
 * from a background fiber just before the end is not missed), then dies with the first
 * violation that `checked` has not already failed with. A test that provides the Layer
 * therefore fails with that error, whichever fiber broke the contract.
 *
 * @since 0.1.0
 */
import { HarnessError, ScopedList } from "@dsh/llm"
import type { Session, SessionEvent } from "@dsh/session"
import { Derivation, SessionStore } from "@dsh/session"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { InvariantError } from "./InvariantError.ts"
import * as Rules from "./Rules.ts"

// The member docs name members in backticks: a JSDoc link to `Invariants.checked` here makes
// the TypeScript 7 checker see the class in its own base type.
/**
 * @since 0.1.0
 * @category services
 */
export class Invariants extends Context.Service<Invariants, {
  /** Every violation found so far, in the order found. */
  readonly violations: Effect.Effect<ReadonlyArray<InvariantError>>
  /**
   * Checks every event appended so far (waiting for nothing) and fails with the first
   * violation not already reported by `checked`, if any. Use it to assert mid-test that the
   * contract holds.
   */
  readonly verify: Effect.Effect<void, InvariantError>
  /**
   * Runs an effect, then checks every event appended so far and, if the effect succeeded,
   * fails with the violations of the events appended while it ran. Those violations are then
   * reported: `verify` and the Layer's finalizer do not report them again. When tests share
   * one Layer (`layer(...)`/`it.layer`), wrapping each test body makes a violation fail the
   * test that caused it instead of the suite's teardown.
   */
  readonly checked: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | InvariantError, R>
}>()("@dsh/invariants/Invariants") {
  /**
   * The checker with the default options (`data-frozen` walks a session's first 256 events and
   * one in 256 after them), over the `SessionStore` it requires.
   *
   * @since 0.1.0
   */
  static readonly layer: Layer.Layer<Invariants, never, SessionStore> = Layer.suspend(() => layerWith({}))

  /**
   * The checker with options, e.g. `Invariants.layerWith({ frozen: "deep" })` to walk every
   * event's data.
   *
   * @since 0.1.0
   */
  static layerWith(options: Rules.Options): Layer.Layer<Invariants, never, SessionStore> {
    return layerWith(options)
  }
}

/**
 * The checker with options, e.g. `{ frozen: "deep" }` to walk every event's data.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (options: Rules.Options): Layer.Layer<Invariants, never, SessionStore> =>
  Layer.effect(
    Invariants,
    Effect.gen(function*() {
      const store = yield* SessionStore
      const violations: Array<InvariantError> = []
      // per session: its checker and how many of its events (by position) were checked, so the
      // watcher fiber and a catch-up never check an event twice
      const watched = new Map<Session.Session, Watched>()

      const stateOf = (session: Session.Session) => {
        let state = watched.get(session)
        if (state === undefined) {
          state = {
            session,
            checker: Rules.make(options),
            consumed: 0,
            read: 0,
            violations,
            derivation: Derivation.make(),
            fedThrough: -1,
            misshapen: new Set()
          }
          watched.set(session, state)
        }
        return state
      }

      const watch = (session: Session.Session) => Effect.suspend(() => watchSession(stateOf(session)))

      // Checks whatever the watchers have not reached yet, reading the logs directly; this
      // includes sessions whose watcher has not started.
      const catchUp = Effect.flatMap(store.all, (sessions) =>
        Effect.forEach(
          sessions,
          (session) => {
            const state = stateOf(session)
            const from = state.consumed
            // the fiber may yield after the read, and the watcher check some of these events
            // meanwhile: checkFrom skips them by position
            return Effect.flatMap(session.eventsFrom(from), (events) => Effect.suspend(() => checkFrom(state, from, events)))
          },
          { discard: true }
        ))

      // Which `checked` call created each session (its fiber had the call's token), so that
      // one of several bodies running at once fails with its own sessions' violations only.
      const owners = new Map<string, symbol>()
      yield* ScopedList.inOpenScope(store.admission.register({
        name: "Invariants",
        around: (admission, next) =>
          Effect.flatMap(Effect.service(CheckedBy), (token) => {
            if (token !== undefined) owners.set(admission.id, token)
            return next(admission)
          })
      }))

      // violations a `checked` caller failed with, which nothing reports again
      const reported = new Set<InvariantError>()
      const unreported = () => violations.filter((v) => !reported.has(v))

      const verify = Effect.suspend(() => {
        const open = unreported()
        return open.length === 0 ? Effect.void : Effect.fail(open[0]!)
      })

      // Catches up before the effect too, so what was appended before it is not counted as its.
      const checked = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | InvariantError, R> =>
        Effect.andThen(catchUp, () => {
          const start = violations.length
          const token = Symbol("checked")
          // a session another `checked` call created is that call's to report
          const ours = (v: InvariantError) => {
            const owner = owners.get(v.sessionId)
            return owner === undefined || owner === token
          }
          return Effect.flatMap(Effect.exit(Effect.provideService(effect, CheckedBy, token)), (exit) =>
            Effect.flatMap(catchUp, (): Effect.Effect<A, E | InvariantError, never> => {
              const found = violations.slice(start).filter((v) => !reported.has(v) && ours(v))
              if (Exit.isFailure(exit) || found.length === 0) return exit
              for (const v of found) reported.add(v)
              return Effect.fail(found.length === 1 ? found[0]! : withCount(found))
            }))
        })

      const sessions = yield* store.sessions.pipe(
        Stream.runForEach((session) => Effect.forkChild(watch(session))),
        Effect.forkScoped
      )

      yield* Effect.addFinalizer(() =>
        Effect.gen(function*() {
          yield* Fiber.interrupt(sessions)
          yield* catchUp
          const open = unreported()
          if (open.length > 0) return yield* Effect.die(open.length === 1 ? open[0]! : withCount(open))
        })
      )

      return Invariants.of({
        violations: Effect.sync(() => violations.slice()),
        verify: Effect.suspend(() => Effect.andThen(catchUp, verify)),
        checked
      })
    })
  )

/** The `checked` call whose body is running, if any. */
const CheckedBy = Context.Reference<symbol | undefined>("@dsh/invariants/CheckedBy", { defaultValue: () => undefined })

/** A watched session: its checker, how many of its events were checked, where violations go. */
interface Watched {
  readonly session: Session.Session
  readonly checker: Rules.Checker
  /** How many of the log's events were checked (by the watcher or a catch-up). */
  consumed: number
  /** How many of the log's events the watcher has read from the stream. */
  read: number
  readonly violations: Array<InvariantError>
  /**
   * The derivation of the log's history up to the last compaction checked, fed from the log at
   * each compaction (from `fedThrough` on), so a log with many compactions is derived once.
   * `undefined` once the history could not be derived.
   */
  derivation: Derivation.Derivation | undefined
  /** The seq of the last event fed to `derivation`. */
  fedThrough: number
  /** The seqs of events reported as `data-shape`: the derivation is not fed what the rules could not read. */
  readonly misshapen: Set<number>
}

// The per-event path lives at module level, not in the Layer's closure: every Layer built (a
// test suite builds many) then runs the same compiled code instead of warming up its own.

/** Reads a session's stream to its end, whole chunks at a time, checking every event. */
const watchSession = (state: Watched): Effect.Effect<void> =>
  Stream.runForEachArray(state.session.stream, (events) =>
    Effect.suspend(() => {
      const from = state.read
      state.read += events.length
      return checkFrom(state, from, events)
    }))

/**
 * Checks `events`, the log's events from position `from` on, skipping those already checked:
 * the watcher and a catch-up may both reach an event, and it is checked once. Synchronous up to
 * the logging: nothing else runs between the skip and the update of `consumed`, and every
 * violation is recorded before anything can fail.
 */
const checkFrom = (state: Watched, from: number, events: ReadonlyArray<SessionEvent.SessionEvent>): Effect.Effect<void> => {
  const skip = Math.max(0, state.consumed - from)
  if (skip >= events.length) return Effect.void
  const checker = state.checker
  let found: Array<InvariantError> | undefined
  let compactions: Array<SessionEvent.SessionEvent> | undefined
  for (let i = skip; i < events.length; i++) {
    const event = events[i]!
    const broken = checker.push(event)
    if (broken.length > 0) {
      pushAll(found ??= [], broken.map((v) => toError(state.session, v)))
      if (broken.some(isShapeViolation)) state.misshapen.add(event.seq)
    }
    if (event.type === "compaction/applied") (compactions ??= []).push(event)
  }
  state.consumed = from + events.length
  const reported = report(state, found)
  if (compactions === undefined) return reported
  const checked = compactions
  return Effect.andThen(
    reported,
    Effect.flatMap(state.session.eventsFrom(state.fedThrough + 1), (log) => report(state, compactedHistories(state, log, checked)))
  )
}

// Records the violations first (nothing can fail before they are kept), then logs them.
const report = (state: Watched, found: ReadonlyArray<InvariantError> | undefined): Effect.Effect<void> => {
  if (found === undefined || found.length === 0) return Effect.void
  pushAll(state.violations, found)
  return Effect.forEach(found, (e) => Effect.logError(e.message), { discard: true })
}

const isShapeViolation = (v: Rules.Violation): boolean => v.rule === "data-shape"

/**
 * Appends `items` to `target` one by one: `target.push(...items)` throws a RangeError past about
 * 100,000 items (a huge log broken at every event), and the violations would be lost.
 */
const pushAll = <A>(target: Array<A>, items: ReadonlyArray<A>): void => {
  for (const item of items) target.push(item)
}

/**
 * `compacted-history-valid` at each compaction: the history derived from the log up to it, fed
 * with `log` (the events since the last compaction checked; a compaction is rare, so the log
 * is read back then rather than kept event by event). A log whose history cannot be derived at
 * all (data past the types, reported as `data-shape`) breaks the rule at its first compaction;
 * the later ones are not checked.
 */
const compactedHistories = (
  state: Watched,
  log: ReadonlyArray<SessionEvent.SessionEvent>,
  compactions: ReadonlyArray<SessionEvent.SessionEvent>
): Array<InvariantError> => {
  const found: Array<InvariantError> = []
  let next = 0
  for (const compaction of compactions) {
    const derivation = state.derivation
    if (derivation === undefined || compaction.seq <= state.fedThrough) continue
    const upTo: Array<SessionEvent.SessionEvent> = []
    for (; next < log.length && log[next]!.seq <= compaction.seq; next++) {
      if (!state.misshapen.has(log[next]!.seq)) upTo.push(log[next]!)
    }
    state.fedThrough = compaction.seq
    try {
      derivation.feed(upTo)
      const problems = Derivation.problems(derivation.messages())
      pushAll(found, Rules.compactedHistory(compaction, problems).map((v) => toError(state.session, v)))
    } catch (error) {
      state.derivation = undefined
      found.push(toError(state.session, {
        rule: "compacted-history-valid",
        seq: compaction.seq,
        type: compaction.type,
        message: `the history cannot be derived from the log: ${HarnessError.describe(error)}`
      }))
    }
  }
  return found
}

const toError = (session: Session.Session, v: Rules.Violation) =>
  new InvariantError({
    message: `invariant "${v.rule}" violated in session ${session.id} at seq ${v.seq} (${v.type}): ${v.message}`,
    rule: v.rule,
    sessionId: session.id,
    seq: v.seq,
    eventType: v.type
  })

const withCount = (violations: ReadonlyArray<InvariantError>): InvariantError => {
  const first = violations[0]!
  return new InvariantError({
    message: `${first.message} (and ${violations.length - 1} more violation(s): ` +
      violations.slice(1, 6).map((v) => `${v.rule}@${v.sessionId}#${v.seq}`).join(", ") +
      (violations.length > 6 ? ", …" : "") + ")",
    rule: first.rule,
    sessionId: first.sessionId,
    seq: first.seq,
    eventType: first.eventType
  })
}
