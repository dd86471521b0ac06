/**
 * The session store: creates sessions (fresh, or seeded from another log for replay and fork),
 * finds them, and streams them as they are created, so persistence and the invariants checker
 * see every session from its first event.
 *
 * @since 0.1.0
 */
import { HarnessError, Ids, Middleware } from "@dsh/llm"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import * as Log from "./Log.ts"
import * as Session from "./Session.ts"
import { InvalidSessionError, SessionExistsError } from "./SessionError.ts"
import type { SessionEvent } from "./SessionEvent.ts"

/**
 * Options of `create`.
 *
 * @since 0.1.0
 * @category models
 */
export interface CreateOptions {
  /** The id; a random UUID when omitted. */
  readonly id?: string
  /**
   * Events to start from (a replay or a fork): they must count `seq` from 0 with no gap. The
   * new session derives the same history and continues `seq` from the seed's end.
   */
  readonly seed?: ReadonlyArray<SessionEvent>
  /** When the session was first created (epoch ms), for one continued from storage; now by default. */
  readonly createdAt?: number
}

/**
 * What the `admission` seam is asked about a session about to be created.
 *
 * @since 0.1.0
 * @category models
 */
export interface Admission {
  /** The new session's id. */
  readonly id: string
  /** The events it starts from (a replay, a fork, a resume), when seeded. */
  readonly seed: ReadonlyArray<SessionEvent> | undefined
}

/**
 * How the `admission` seam refuses a session: its id is taken (`SESSION_EXISTS`), or the
 * storage cannot hold it (`INVALID_SESSION`: an id too long for a file name).
 *
 * @since 0.1.0
 * @category models
 */
export type AdmissionError = SessionExistsError | InvalidSessionError

/**
 * The admission middleware of a persistence layer: refuses with `refusal(id)` an id that
 * `holds` says the storage holds already, unless the layer is `resuming` it (its resume creates
 * the session with the stored events). A storage that cannot answer lets the id through: the
 * session's first flush then says why.
 *
 * @since 0.1.0
 * @category middleware
 */
export const refuseStored = (options: {
  readonly name: string
  readonly resuming: (id: string) => boolean
  readonly holds: (id: string) => Effect.Effect<boolean, unknown>
  readonly refusal: (id: string) => SessionExistsError
}): Middleware.Middleware<Admission, Effect.Effect<void, AdmissionError>> => ({
  name: options.name,
  around: (admission, next) =>
    options.resuming(admission.id)
      ? next(admission)
      : Effect.flatMap(
        Effect.orElseSucceed(options.holds(admission.id), () => false),
        (held) => (held ? Effect.fail(options.refusal(admission.id)) : next(admission))
      )
})

/**
 * @since 0.1.0
 * @category services
 */
export class SessionStore extends Context.Service<SessionStore, {
  /**
   * Creates a session that lives until the current scope closes (then its streams end and it
   * leaves the store). A duplicate id fails with `SessionExistsError`; options out of their
   * range (an empty id, a `createdAt` that is no integer, a seed that is no log) fail with
   * `InvalidSessionError`, each problem named, before anything is created.
   */
  readonly create: (options?: CreateOptions) => Effect.Effect<Session.Session, SessionExistsError | InvalidSessionError, Scope.Scope>
  /** The open session with this id. */
  readonly get: (id: string) => Effect.Effect<Option.Option<Session.Session>>
  /** The open sessions, in creation order. */
  readonly list: Effect.Effect<ReadonlyArray<Session.Session>>
  /** Every session created so far, open or closed, in creation order. */
  readonly all: Effect.Effect<ReadonlyArray<Session.Session>>
  /** Every session created so far (open or closed), then every later one, until the store closes. */
  readonly sessions: Stream.Stream<Session.Session>
  /**
   * The seam every `create` passes before the session exists: a middleware may refuse the id
   * with `SessionExistsError` (persistence refuses an id its storage holds already, unless it
   * is resuming that session) or `InvalidSessionError` (an id its storage cannot hold), or let
   * it through with `next`.
   */
  readonly admission: Middleware.Chain<Admission, Effect.Effect<void, AdmissionError>>
}>()("@dsh/session/SessionStore") {
  /**
   * The admission middleware of a persistence layer (see {@link refuseStored}).
   *
   * @since 0.1.0
   */
  static readonly refuseStored = refuseStored

  /**
   * An in-memory store. Persistence Layers subscribe to it (see `JsonlSessions`).
   *
   * @since 0.1.0
   */
  static readonly layer: Layer.Layer<SessionStore> = Layer.effect(
    SessionStore,
    Effect.gen(function*() {
      const open = new Map<string, Session.Session>()
      const created = Log.make<Session.Session>()
      const admission = Middleware.makeEffect<Admission, void, AdmissionError>({ seam: "session admission" })
      yield* Effect.addFinalizer(() => Effect.sync(created.close))

      const create = (options: CreateOptions = {}) =>
        Effect.gen(function*() {
          yield* checkCreateOptions(options)
          const id = Ids.sessionId(options.id ?? crypto.randomUUID())
          const createdAt = options.createdAt ?? (yield* Clock.currentTimeMillis)
          yield* admission.apply({ id, seed: options.seed }, () => Effect.void)
          const owned = yield* Effect.acquireRelease(
            Effect.suspend(() => {
              if (open.has(id)) {
                return Effect.fail(
                  new SessionExistsError({ message: `a session with id "${id}" already exists`, sessionId: id })
                )
              }
              const made = Session.make(
                options.seed === undefined ? { id, createdAt } : { id, createdAt, seed: options.seed }
              )
              open.set(id, made.session)
              created.append(made.session)
              return Effect.succeed(made)
            }),
            (made) =>
              Effect.sync(() => {
                made.close()
                open.delete(id)
              })
          )
          return owned.session
        })

      return SessionStore.of({
        create,
        get: (id) => Effect.sync(() => Option.fromNullishOr(open.get(id))),
        list: Effect.sync(() => [...open.values()]),
        all: Effect.sync(() => created.slice()),
        sessions: created.stream(0),
        admission
      })
    })
  )
}

/** Refuses options out of their range, naming each: a mistake is found at creation, not at the first flush. */
const checkCreateOptions = (options: CreateOptions): Effect.Effect<void, InvalidSessionError> => {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    return Effect.fail(new InvalidSessionError({ message: `a session was not created: its options must be an object, got ${HarnessError.describe(options)}` }))
  }
  const problems: Array<string> = []
  const idProblem = options.id === undefined ? undefined : Session.idProblem(options.id)
  if (idProblem !== undefined) problems.push(`id ${idProblem}`)
  if (options.createdAt !== undefined && !Number.isSafeInteger(options.createdAt)) {
    problems.push(`createdAt must be an integer of epoch milliseconds, got ${typeof options.createdAt === "string" ? JSON.stringify(options.createdAt) : HarnessError.describe(options.createdAt)}`)
  }
  if (options.seed !== undefined) {
    const seedProblem = Session.seedProblem(options.seed)
    if (seedProblem !== undefined) problems.push(seedProblem)
  }
  return problems.length === 0
    ? Effect.void
    : Effect.fail(new InvalidSessionError({ message: `a session was not created: ${problems.join("; ")}` }))
}
