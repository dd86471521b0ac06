/**
 * A session: one agent's event log, the single source of truth its history is derived from.
 *
 * `append` is synchronous in effect: it assigns `seq` and `time`, deep-freezes the data and
 * stores the event; it never waits for I/O or readers (persistence is write-behind, see
 * `FlushCheckpoint`). `stream` replays every logged event and then follows live appends with
 * no gap and no duplicate however appends and subscriptions race; `streamFrom(seq)` does the
 * same from a position, for readers that reconnect. Streams end when the session closes (its
 * scope in the store closes).
 *
 * @since 0.1.0
 */
import { HarnessError, type History, type Ids } from "@dsh/llm"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import * as Derivation from "./Derivation.ts"
import * as Freeze from "./Freeze.ts"
import * as Log from "./Log.ts"
import { InvalidEventError, SessionClosedError } from "./SessionError.ts"
import * as SessionEvents from "./SessionEvent.ts"
import type {
  CoreEvent,
  CoreType,
  DataOf,
  Definition,
  ExtensionEvent,
  ExtensionType,
  SessionEvent
} from "./SessionEvent.ts"

/**
 * Appends an event: a core type with its data, or an extension {@link Definition} with its
 * data (encoded to JSON through the definition's Schema).
 *
 * @since 0.1.0
 * @category models
 */
export interface Append {
  <T extends CoreType>(type: T, data: DataOf<T>): Effect.Effect<CoreEvent<T>>
  <Type extends ExtensionType, A>(definition: Definition<Type, A>, data: A): Effect.Effect<ExtensionEvent<Type>, InvalidEventError | SessionClosedError>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Session {
  readonly id: Ids.SessionId
  /** Epoch milliseconds at creation. */
  readonly createdAt: number
  /** How many events came from the seed log (replay/fork); 0 for a fresh session. */
  readonly seeded: number
  readonly append: Append
  /**
   * Appends a core event only if `when()` holds at the moment of appending, in the same
   * synchronous step: for a writer whose right to append another fiber can withdraw (the loop's
   * turn, once it is being closed, logs nothing more). `undefined` when it did not append.
   */
  readonly appendIf: <T extends CoreType>(
    when: () => boolean,
    type: T,
    data: DataOf<T>
  ) => Effect.Effect<CoreEvent<T> | undefined>
  /**
   * Runs `f` with a synchronous `appendIf` (the same contract, event for event) and returns
   * what `f` returns, in one Effect: for a writer that logs a burst — the loop logging a
   * model's chunks as they arrive — one Effect per burst rather than one per event. `f` must
   * only append and compute; appending to a closed session throws, and the Effect dies.
   */
  readonly appendBurst: <A>(f: (appendIf: AppendIfNow) => A) => Effect.Effect<A>
  /** A snapshot of every event logged so far. */
  readonly events: Effect.Effect<ReadonlyArray<SessionEvent>>
  /** The events from `seq` on, as logged so far (a `seq` below 0, or not a number, is 0). */
  readonly eventsFrom: (seq: number) => Effect.Effect<ReadonlyArray<SessionEvent>>
  /** The `seq` the next event will get (the number of events). */
  readonly seq: Effect.Effect<number>
  /** Every event logged so far, then every later one, until the session closes. */
  readonly stream: Stream.Stream<SessionEvent>
  /** Like `stream`, from a position (below 0, or not a number: from the start). */
  readonly streamFrom: (seq: number) => Stream.Stream<SessionEvent>
  /**
   * The derived message history (incremental; see `Derivation`): a structure-sharing
   * `History`, so reading it costs O(events since the last read), not O(history).
   */
  readonly messages: Effect.Effect<History.History>
  /** Whether the session is closed (no more appends). */
  readonly closed: Effect.Effect<boolean>
  /** Waits until the session is closed. */
  readonly awaitClosed: Effect.Effect<void>
}

/**
 * The synchronous `appendIf` of {@link Session.appendBurst}.
 *
 * @since 0.1.0
 * @category models
 */
export type AppendIfNow = <T extends CoreType>(when: () => boolean, type: T, data: DataOf<T>) => CoreEvent<T> | undefined

/**
 * A session's internals, for the store that owns it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Owned {
  readonly session: Session
  /** Ends the streams; later appends die. */
  readonly close: () => void
}

const isDefinition = (u: unknown): u is Definition<ExtensionType, unknown> =>
  typeof u === "object" && u !== null && "type" in u && "data" in u && "decode" in u

/**
 * What is wrong with a session id, as the words "id must ..." end with; or `undefined` for an
 * id a session can have: a string with something other than white space in it. A blank id is
 * refused since it is almost always an unset variable, not a name someone chose.
 *
 * @since 0.1.0
 * @category guards
 */
export const idProblem = (id: unknown): string | undefined => {
  if (typeof id !== "string" || id === "") {
    return `must be a non-empty string, got ${id === "" ? "an empty one" : HarnessError.describe(id)}`
  }
  return id.trim() === "" ? `must not be blank, got ${JSON.stringify(id)}` : undefined
}

/**
 * What is wrong with a seed log, naming the first event that is wrong and what it holds; or
 * `undefined` when it is a log: events counting `seq` from 0 with no gap, each a session
 * event by its type's Schema (see `SessionEvent.problem`; not checked again for a log marked
 * by `SessionEvent.decodedLog`).
 *
 * @since 0.1.0
 * @category guards
 */
export const seedProblem = (seed: unknown): string | undefined => {
  if (!Array.isArray(seed)) return `a seed log must be an array of events, got ${HarnessError.describe(seed)}`
  for (let i = 0; i < seed.length; i++) {
    const event: unknown = seed[i]
    if (typeof event !== "object" || event === null) return `seed event ${i} is ${HarnessError.describe(event)}, not an event`
    const seq = (event as { readonly seq?: unknown }).seq
    if (seq !== i) {
      return `seed event ${i} has seq ${typeof seq === "string" ? JSON.stringify(seq) : HarnessError.describe(seq)}; a seed log must count from 0 with no gap`
    }
  }
  if (SessionEvents.isDecodedLog(seed)) return undefined
  // a malformed event would be accepted here and refused by every flush after it
  for (let i = 0; i < seed.length; i++) {
    const problem = SessionEvents.problem(seed[i])
    if (problem !== undefined) return `seed event ${i} is not a session event: ${problem}`
  }
  return undefined
}

// A seed that is not a log is a bug of the caller (the store checks its seeds first): it throws.
const checkSeed = (seed: ReadonlyArray<SessionEvent>): void => {
  const problem = seedProblem(seed)
  if (problem !== undefined) throw new RangeError(problem)
}

const isJson = Schema.is(Schema.Json)

// the first value on the way down that JSON cannot hold, in words
const notJsonWhy = (value: unknown, path = "data"): string => {
  if (typeof value === "number") return `${path} is ${value}`
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!isJson(value[i])) return notJsonWhy(value[i], `${path}[${i}]`)
    return `${path} is not JSON`
  }
  if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) if (!isJson(item)) return notJsonWhy(item, `${path}.${key}`)
    return `${path} is not a plain object`
  }
  return `${path} is ${HarnessError.describe(value)}`
}

/**
 * Makes a session, optionally seeded with the events of another log (replay and fork). The
 * seed's events keep their `seq` (they must count from 0 with no gap) and time; new events
 * continue from the seed's end.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: {
  readonly id: Ids.SessionId
  readonly createdAt: number
  readonly seed?: ReadonlyArray<SessionEvent>
}): Owned => {
  const log = Log.make<SessionEvent>()
  const seed = options.seed ?? []
  checkSeed(seed)
  for (const event of seed) log.append(Freeze.deep(event))
  const derivation = Derivation.make()

  const closedError = (type: string) =>
    new SessionClosedError({
      message: `session ${options.id} is closed; an event of type ${type} cannot be appended`,
      sessionId: options.id,
      eventType: type
    })

  // the event, or undefined when the log is closed (the callers die with closedError)
  const storeSync = (clock: Clock.Clock, type: string, data: unknown): SessionEvent | undefined => {
    const event = Freeze.deep({ type, seq: log.size(), time: clock.currentTimeMillisUnsafe(), data }) as SessionEvent
    return log.append(event) < 0 ? undefined : event
  }

  const storeNow = (clock: Clock.Clock, type: string, data: unknown): Effect.Effect<SessionEvent> => {
    const event = storeSync(clock, type, data)
    return event === undefined ? Effect.die(closedError(type)) : Effect.succeed(event)
  }

  // One primitive per append (it is the hot path: every model chunk is an event).
  const store = (type: string, data: unknown): Effect.Effect<SessionEvent> =>
    Clock.clockWith((clock) => storeNow(clock, type, data))

  // an extension event comes from an application's code, which can handle the closed session
  const storeExtension = (type: string, data: unknown): Effect.Effect<SessionEvent, SessionClosedError> =>
    Clock.clockWith((clock) => {
      const event = storeSync(clock, type, data)
      return event === undefined ? Effect.fail(closedError(type)) : Effect.succeed(event)
    })

  const appendIf = <T extends CoreType>(when: () => boolean, type: T, data: DataOf<T>) =>
    Clock.clockWith((clock) =>
      when() ? (storeNow(clock, type, data) as Effect.Effect<CoreEvent<T>>) : Effect.succeed(undefined)
    )

  const appendBurst = <A>(f: (appendIf: AppendIfNow) => A): Effect.Effect<A> =>
    Clock.clockWith((clock) =>
      Effect.sync(() =>
        f(<T extends CoreType>(when: () => boolean, type: T, data: DataOf<T>) => {
          if (!when()) return undefined
          const event = storeSync(clock, type, data)
          if (event === undefined) throw closedError(type)
          return event as CoreEvent<T>
        })
      )
    )

  const append = ((typeOrDefinition: CoreType | Definition<ExtensionType, unknown>, data: unknown) => {
    if (isDefinition(typeOrDefinition)) {
      const type = typeOrDefinition.type
      return Effect.flatMap(
        Effect.mapError(Schema.encodeUnknownEffect(typeOrDefinition.data)(data, { errors: "all" }), (error) =>
          new InvalidEventError({
            message: `an event of type ${type} was not appended: its data does not fit its definition: ${error.message}`,
            eventType: type
          })),
        // a Schema's encoding may hold what JSON cannot (NaN, Infinity from Schema.Number): such
        // data would stop the session's persistence at this event, so it is refused here
        (json): Effect.Effect<SessionEvent, InvalidEventError | SessionClosedError> => isJson(json) ? storeExtension(type, json) : Effect.fail(new InvalidEventError({
          message: `an event of type ${type} was not appended: its encoded data is not JSON (${notJsonWhy(json)})`,
          eventType: type
        }))
      )
    }
    return store(typeOrDefinition, data)
  }) as Append

  const session: Session = {
    id: options.id,
    createdAt: options.createdAt,
    seeded: seed.length,
    append,
    appendIf,
    appendBurst,
    events: Effect.sync(() => log.slice()),
    eventsFrom: (seq) => Effect.sync(() => log.slice(seq)),
    seq: Effect.sync(() => log.size()),
    stream: log.stream(0),
    streamFrom: (seq) => log.stream(seq),
    messages: Effect.sync(() => {
      const from = derivation.consumed()
      if (from < log.size()) derivation.feed(log.slice(from))
      return derivation.messages()
    }),
    closed: Effect.sync(() => log.isClosed()),
    awaitClosed: log.awaitClose
  }
  return { session, close: log.close }
}

/**
 * Whether a session continues a log that was loaded for it: it was seeded with exactly the
 * loaded events — the very objects, which the session froze in place — rather than being
 * another session that happens to have the same id. A store resuming a session (JSONL, SQL)
 * asks this before it takes over the loaded log's position; a log with no events is continued
 * by any session seeded with none.
 *
 * @since 0.1.0
 * @category guards
 */
export const continues = (session: Session, loaded: ReadonlyArray<SessionEvent>): Effect.Effect<boolean> => {
  if (loaded.length !== session.seeded) return Effect.succeed(false)
  if (loaded.length === 0) return Effect.succeed(true)
  return Effect.map(session.eventsFrom(session.seeded - 1), (last) => last[0] === loaded[loaded.length - 1])
}
