/**
 * PostgreSQL persistence: every session of the store in a database that several processes (and
 * machines) share, through `effect/sql`'s `SqlClient` (provided by `@effect/sql-pg`'s
 * `PgClient.layer`), with the contract of `JsonlSessions`: append-only, `seq` gapless and
 * unique per session, write-behind and durable at the flush checkpoint, one writer per session,
 * `resume` closing what a crash left open, `list`, and forks as fresh sessions.
 *
 * ## Schema (migration 1, `1_sessions`)
 *
 * - `dsh_sessions (session_id text PRIMARY KEY, created_at bigint, created_by uuid)`: one row
 *   per session, written by its first flush.
 * - `dsh_session_events (session_id, seq integer, previous integer GENERATED, type text, time
 *   bigint, event text, writer uuid)`, `PRIMARY KEY (session_id, seq)`: one row per event. The
 *   schema itself keeps every log whole: the primary key makes `seq` unique per session, a
 *   foreign key from `(session_id, previous)` — `previous` is `seq - 1`, NULL for seq 0 — to
 *   `(session_id, seq)` makes it gapless (an event exists only after its predecessor), a
 *   check keeps `seq >= 0`, another foreign key ties each event to its session, and a trigger
 *   refuses `UPDATE` and `DELETE` (the log is append-only; only `TRUNCATE`, or a role that
 *   disables triggers, removes rows).
 * - `event` is the event encoded through the `SessionEvent` Schema as JSON text, the very text
 *   of a JSONL line (`JsonlSessions.encodeLine`), so any event the Schema encodes is stored,
 *   however deep its data nests (`jsonb` would refuse `\u0000` and data nested past the
 *   server's stack). `type` and `time` repeat two of its fields for queries; `writer` is a
 *   random id of the session state that wrote the row (see Writing).
 *
 * The migrations run through `effect/sql`'s `Migrator` when the layer is built (also
 * {@link migrate}), recorded in `dsh_session_migrations`; concurrent processes migrating one
 * database are serialized by the Migrator's table lock.
 *
 * ## Writing
 *
 * Appends never touch the database: the session log is the buffer. A flush (the checkpoint's
 * hook) inserts the events logged since the last committed one in one transaction — the
 * session's row too at its first flush — and returns once the transaction has committed; the
 * flushes of one session are serialized, different sessions flush concurrently. A session is
 * flushed once more when it closes, and every session when the layer's scope closes (a
 * failure there can only be logged).
 *
 * So what is durable when `FlushCheckpoint.flush` returns — and when `agent.awaitIdle`
 * returns, since the agent loop flushes after every `turn/end` and before it goes idle — is
 * every event logged up to then, committed in PostgreSQL: as durable as the server makes a
 * commit (with the defaults, `synchronous_commit = on` and `fsync = on`, the WAL is on the
 * primary's disk; a synchronous standby as configured). What is logged after (the agent's
 * `idle` status, an `error` event recording a failed flush) waits for the next flush.
 *
 * A failed transaction leaves nothing behind (it is rolled back), and is a
 * `PersistenceError` — also when its connection ended in the middle of it, so that the rollback
 * failed too; the next flush retries from the last committed event. A commit whose
 * outcome was lost (the connection broke on `COMMIT`) is recognized by the rows' `writer`: the
 * next flush counts what it finds of its own as written. An event the Schema cannot encode
 * fails the flush with a `PersistenceError` naming its `seq`, after the events before it are
 * committed; nothing after it is persisted.
 *
 * ## One writer per session
 *
 * Whoever writes a session — {@link PgSessions.resume}, or a new session at its first flush —
 * takes the session's writer lock, a PostgreSQL advisory lock held on a connection of the
 * layer, until the session's scope (or the layer) closes. The server drops the locks of a
 * connection that ends, so the lock of a process that died (a crash, SIGKILL, a machine gone)
 * is free at once, on any host. A second writer is refused: `resume` fails with
 * `SessionLockedError` (`SESSION_LOCKED`) naming the holder (its `application_name`, `dsh pid
 * <pid> on <host>`, and server pid); a new session's flushes fail with a `PersistenceError`
 * naming it.
 *
 * The lock is the early refusal; the schema is the guarantee. Should two writers ever both
 * append (a lock lost with its connection and taken by another process meanwhile), the second
 * to commit an event at a `seq` breaks the primary key: its flush fails with a
 * `PersistenceError` whose cause is a `SessionLockedError`, and that session stops writing for
 * good (every later flush fails), so the log keeps one writer's events — never a mix.
 *
 * A session id is stored as it is, but PostgreSQL `text` cannot keep NUL, and a lone surrogate
 * (no Unicode) would reach it as U+FFFD, making distinct ids one session: a session with such an
 * id is never written — its flushes, {@link PgSessions.load} and {@link PgSessions.resume} fail
 * with a `PersistenceError` saying why.
 *
 * Creating a session in the store under an id the database holds fails at once with
 * `SessionExistsError` (`SESSION_EXISTS`): continue it with {@link PgSessions.resume}. One whose
 * id another process stores after the creation fails every flush with a `PersistenceError`
 * ("exists already") and never writes that session.
 *
 * ## Reading and resuming
 *
 * {@link PgSessions.load} reads a session's row and its events in `seq` order, each decoded
 * through the `SessionEvent` Schema; a row that does not decode is a `CorruptLogError` whose
 * `file` names the table and the session (`dsh_session_events["<id>"]`) and whose `line` is
 * the row's `seq`. A transaction is never half-committed, so there is no torn tail to repair.
 * {@link PgSessions.resume} takes the lock, loads the log and seeds a new session of the
 * store with its events, so it continues `seq` in the same rows; before it hands the session
 * back it closes a turn the log left open (the writer died mid-turn) with
 * `Closing.closeInterrupted` — a `session/repair` of kind `interrupted-turn`, open tool calls
 * answered `TOOL_OUTCOME_UNKNOWN`, the turn ended `interrupted` — reported in `repairs` and
 * written by the next flush.
 *
 * @since 0.1.0
 */
import { HarnessError, ScopedList } from "@dsh/llm"
import { Closing, FlushCheckpoint, JsonlSessions, Session, SessionErrors, SessionEvent, SessionStore } from "@dsh/session"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import * as WriterLocks from "./internal/writerLocks.ts"

type PersistenceError = SessionErrors.PersistenceError
type CorruptLogError = SessionErrors.CorruptLogError
type SessionExistsError = SessionErrors.SessionExistsError
type SessionLockedError = SessionErrors.SessionLockedError

/**
 * The table of sessions.
 *
 * @since 0.1.0
 * @category constants
 */
export const sessionsTable = "dsh_sessions"

/**
 * The table of events.
 *
 * @since 0.1.0
 * @category constants
 */
export const eventsTable = "dsh_session_events"

/**
 * The table in which the `Migrator` records the migrations it ran.
 *
 * @since 0.1.0
 * @category constants
 */
export const migrationsTable = "dsh_session_migrations"

/**
 * The migrations, by `<id>_<name>` (the `Migrator`'s `fromRecord` form). Each runs in the
 * Migrator's transaction; a later schema change is a new entry, never an edit of one.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrations: Readonly<Record<string, Effect.Effect<void, SqlError, SqlClient.SqlClient>>> = {
  "1_sessions": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(`CREATE TABLE ${sessionsTable} (
  session_id text PRIMARY KEY,
  created_at bigint NOT NULL,
  created_by uuid NOT NULL
)`)
    yield* sql.unsafe(`CREATE TABLE ${eventsTable} (
  session_id text NOT NULL REFERENCES ${sessionsTable} (session_id),
  seq integer NOT NULL CHECK (seq >= 0),
  previous integer GENERATED ALWAYS AS (CASE WHEN seq = 0 THEN NULL ELSE seq - 1 END) STORED,
  type text NOT NULL,
  time bigint NOT NULL,
  event text NOT NULL,
  writer uuid NOT NULL,
  PRIMARY KEY (session_id, seq),
  FOREIGN KEY (session_id, previous) REFERENCES ${eventsTable} (session_id, seq)
)`)
    yield* sql.unsafe(`CREATE FUNCTION ${eventsTable}_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '${eventsTable} is append-only: % refused', TG_OP USING ERRCODE = 'restrict_violation';
END
$$`)
    yield* sql.unsafe(`CREATE TRIGGER ${eventsTable}_append_only BEFORE UPDATE OR DELETE ON ${eventsTable}
  FOR EACH ROW EXECUTE FUNCTION ${eventsTable}_append_only()`)
  })
}

/**
 * Runs the migrations that have not run yet (see the module documentation); the ids and names
 * of those it ran.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrate: Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  Migrator.MigrationError | SqlError,
  SqlClient.SqlClient
> = Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: migrationsTable })

/**
 * A session as read by {@link PgSessions.load}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Loaded {
  readonly id: string
  readonly createdAt: number
  /** The events, `seq` 0 to `events.length - 1`. */
  readonly events: ReadonlyArray<SessionEvent.SessionEvent>
}

/**
 * A session as listed by {@link PgSessions.list}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Entry {
  readonly id: string
  /** The number of events. */
  readonly events: number
  readonly createdAt: number
  /** The time of the last event, or the creation time when it has none (epoch ms). */
  readonly lastActivity: number
}

/**
 * A resumed session and what resuming it repaired (a turn the log left open, closed
 * `interrupted`; see `Closing`), in the order of the `session/repair` events that record it.
 * Empty when the log ended cleanly.
 *
 * @since 0.1.0
 * @category models
 */
export interface Resumed {
  readonly session: Session.Session
  readonly repairs: ReadonlyArray<SessionEvent.Repair>
}

/**
 * @since 0.1.0
 * @category services
 */
export class PgSessions extends Context.Service<PgSessions, {
  /**
   * Takes the session's writer lock, loads its log and creates the session in the store,
   * seeded with its events, for the current scope: it continues `seq` in the same rows, and
   * holds the lock until the scope closes. Before returning it closes a turn the log left open
   * (see {@link Resumed}). Fails with `SessionExistsError` while a session with this id is
   * open in this store, with `SessionLockedError` while another writer (another process, or
   * another layer of this one) holds it, and with `PersistenceError` when the database has no
   * such session or cannot be read.
   */
  readonly resume: (
    id: string
  ) => Effect.Effect<Resumed, PersistenceError | CorruptLogError | SessionExistsError | SessionLockedError, Scope.Scope>
  /** A session's log, read from the database. */
  readonly load: (id: string) => Effect.Effect<Loaded, PersistenceError | CorruptLogError>
  /** Every session of the database, sorted by id, with its event count and last activity. */
  readonly list: Effect.Effect<ReadonlyArray<Entry>, PersistenceError>
}>()("@dsh/sql-sessions/PgSessions") {}

// ---------------------------------------------------------------------------------------------
// reading

const decodeEvent = Schema.decodeUnknownResult(SessionEvent.SessionEvent)

/**
 * Where a session's log is, for messages and for `CorruptLogError.file`:
 * `dsh_session_events["<id>"]`.
 *
 * @since 0.1.0
 * @category utils
 */
export const location = (id: string): string => `${eventsTable}[${JSON.stringify(id)}]`

/** What a SqlError says, the server's own words first. */
const sqlMessage = (error: SqlError): string => {
  const cause = error.reason.cause
  if (cause instanceof Error && cause.message.length > 0) {
    const detail = "detail" in cause && typeof cause.detail === "string" ? ` (${cause.detail})` : ""
    return `${cause.message}${detail}`
  }
  return HarnessError.describe(error)
}

const persistence = (sessionId: string, what: string) => (error: SqlError) =>
  new SessionErrors.PersistenceError({ message: `${what}: ${sqlMessage(error)}`, sessionId, cause: error })

const corrupt = (id: string, seq: number, message: string) =>
  new SessionErrors.CorruptLogError({ message: `${location(id)} seq ${seq}: ${message}`, file: location(id), line: seq })

const readEvent = (id: string, seq: number, text: string): Result.Result<SessionEvent.SessionEvent, CorruptLogError> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Result.fail(corrupt(id, seq, `not JSON (${error instanceof Error ? error.message : String(error)})`))
  }
  try {
    const event = decodeEvent(json)
    if (Result.isFailure(event)) return Result.fail(corrupt(id, seq, `not a session event: ${event.failure.message}`))
    if (event.success.seq !== seq) return Result.fail(corrupt(id, seq, `the event says seq ${event.success.seq}`))
    return Result.succeed(event.success)
  } catch (error) {
    return Result.fail(corrupt(id, seq, `cannot be decoded: ${HarnessError.describe(error)}`))
  }
}

// a UTF-16 code unit of a surrogate pair without its other half
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * Why PostgreSQL cannot keep `id` as a session id, or undefined when it can. Its `text` refuses
 * NUL, and a lone surrogate is no Unicode: it would reach the server as U+FFFD, so that two
 * distinct ids (`"a\ud800"`, `"a\udfff"`) would name one session, listed under a third.
 */
const unstorableId = (id: string): string | undefined =>
  id.includes("\u0000")
    ? "it holds a NUL character, which PostgreSQL text cannot store"
    : loneSurrogate.test(id)
    ? "it holds a lone surrogate (it is not well-formed Unicode), which PostgreSQL would store as U+FFFD"
    : undefined

/** The PersistenceError for an id PostgreSQL cannot keep, if `id` is one. */
const refuseUnstorable = (id: string, what: string): Effect.Effect<void, PersistenceError> => {
  const why = unstorableId(id)
  return why === undefined
    ? Effect.void
    : Effect.fail(new SessionErrors.PersistenceError({ message: `${what} session ${JSON.stringify(id)}: ${why}`, sessionId: id }))
}

const load = (sql: SqlClient.SqlClient, id: string): Effect.Effect<Loaded, PersistenceError | CorruptLogError> =>
  Effect.gen(function*() {
    yield* refuseUnstorable(id, "cannot read")
    const fail = persistence(id, `cannot read session ${JSON.stringify(id)} from PostgreSQL`)
    const rows = yield* sql<{ created_at: bigint }>`SELECT created_at FROM ${sql(sessionsTable)} WHERE session_id = ${id}`.pipe(
      Effect.mapError(fail)
    )
    const row = rows[0]
    if (row === undefined) {
      return yield* new SessionErrors.PersistenceError({
        message: `no session ${JSON.stringify(id)} in ${sessionsTable}: nothing to load (it was never flushed, or it is in another database)`,
        sessionId: id
      })
    }
    const stored = yield* sql<{ seq: number; event: string }>`SELECT seq, event FROM ${sql(eventsTable)} WHERE session_id = ${id} ORDER BY seq`
      .pipe(Effect.mapError(fail))
    const events: Array<SessionEvent.SessionEvent> = []
    for (const { event, seq } of stored) {
      // the schema keeps seq gapless; a reader checks anyway
      if (seq !== events.length) return yield* corrupt(id, seq, `expected seq ${events.length}`)
      events.push(yield* Effect.fromResult(readEvent(id, seq, event)))
    }
    const loaded: Loaded = { id, createdAt: Number(row.created_at), events: SessionEvent.decodedLog(events) }
    return loaded
  }).pipe(Effect.withSpan("PgSessions.load", { attributes: { "dsh.session": id } }))

const list = (sql: SqlClient.SqlClient): Effect.Effect<ReadonlyArray<Entry>, PersistenceError> =>
  sql<{ session_id: string; created_at: bigint; seq: number | null; time: bigint | null }>`SELECT s.session_id, s.created_at, last.seq, last.time
FROM ${sql(sessionsTable)} s
LEFT JOIN LATERAL (
  SELECT e.seq, e.time FROM ${sql(eventsTable)} e WHERE e.session_id = s.session_id ORDER BY e.seq DESC LIMIT 1
) last ON true`.pipe(
    Effect.mapError(persistence("", "cannot list the sessions in PostgreSQL")),
    Effect.map((rows) =>
      rows
        .map((row): Entry => ({
          id: row.session_id,
          // gapless: the last seq counts the events
          events: row.seq === null ? 0 : row.seq + 1,
          createdAt: Number(row.created_at),
          lastActivity: row.time === null ? Number(row.created_at) : Number(row.time)
        }))
        .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    ),
    Effect.withSpan("PgSessions.list")
  )

// ---------------------------------------------------------------------------------------------
// the layer

/**
 * Options of {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Whether to run the migrations when the layer is built (default true). */
  readonly migrate?: boolean
}

interface State {
  readonly session: Session.Session
  /** One flush at a time. */
  readonly serial: Semaphore.Semaphore
  /** This state's id in the rows it writes (`created_by`, `writer`). */
  readonly writer: string
  /** Events before this seq are committed. */
  written: number
  /** Whether the session's row exists (written by this state, or the resumed session's). */
  created: boolean
  /** The lock generation under which this state holds the session's writer lock, if it does. */
  lock: number | undefined
  /** Why this session must not write any more (another writer wrote it): for good. */
  lost: string | undefined
  /** The session closed and gave its lock back: it writes no more. */
  released: boolean
}

/** A session being resumed: the session the store creates for it continues its rows. */
interface Resuming {
  readonly events: ReadonlyArray<SessionEvent.SessionEvent>
  readonly lock: number
}

/** One row to insert. */
interface Row {
  readonly seq: number
  readonly type: string
  readonly time: bigint
  readonly event: string
}

// one INSERT carries at most this many rows or characters of event text (a flush of any size
// is one transaction of several statements)
const INSERT_ROWS = 1000
const INSERT_CHARS = 4 * 1024 * 1024

const insertSessionSql = `INSERT INTO ${sessionsTable} (session_id, created_at, created_by) VALUES ($1, $2, $3)`
const insertEventsSql = `INSERT INTO ${eventsTable} (session_id, seq, type, time, event, writer)
SELECT $1, u.seq, u.type, u.time, u.event, $2
FROM unnest($3::integer[], $4::text[], $5::bigint[], $6::text[]) AS u(seq, type, time, event)`

/**
 * A transaction's SqlError as its failure. When the connection breaks in the middle of a
 * transaction (the server restarts, an administrator ends it), the statement fails and
 * `effect/sql`'s ROLLBACK on the broken connection dies, so the cause holds a failure and a
 * defect: a flush (or the migrations) must still fail with its typed error — and a flush put
 * the lock connection in doubt — not die.
 */
const transactionFailure = <A, E, R>(transaction: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
  Effect.catchCause(transaction, (cause): Effect.Effect<never, E | SqlError> => {
    const failure = Cause.findErrorOption(cause)
    if (Option.isSome(failure)) return Effect.fail(failure.value)
    const defect = Cause.findDefect(cause)
    if (Result.isSuccess(defect) && isSqlError(defect.success)) return Effect.fail(defect.success)
    return Effect.failCause(cause)
  })

/** What a failed migration says: the server's own words, also when the Migrator wraps them ("Migration … failed"). */
const migrationMessage = (error: Migrator.MigrationError | SqlError): string => {
  if (error._tag === "SqlError") return sqlMessage(error)
  return isSqlError(error.cause) ? `${error.message}: ${sqlMessage(error.cause)}` : error.message
}

const isUniqueViolation = (error: SqlError, constraint: string) =>
  error.reason._tag === "UniqueViolation" && error.reason.constraint === constraint

/**
 * Persists every session of the store in PostgreSQL (see the module documentation), through
 * the `SqlClient` it is given (`PgClient.layer` of `@effect/sql-pg`); runs the migrations
 * first unless `migrate: false`. Requires the store and the checkpoint.
 *
 * @example
 * ```ts
 * import { FlushCheckpoint, SessionStore } from "@dsh/session"
 * import { PgSessions } from "@dsh/sql-sessions"
 * import { PgClient } from "@effect/sql-pg"
 * import { Effect, Layer, Redacted } from "effect"
 *
 * const Sessions = PgSessions.layer().pipe(
 *   Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)),
 *   Layer.provide(PgClient.layer({ url: Redacted.make("postgres://dsh@127.0.0.1:5432/dsh") }))
 * )
 *
 * const program = Effect.gen(function*() {
 *   const session = yield* (yield* SessionStore).create({ id: "demo" })
 *   yield* session.append("user/message", { content: [], source: "user" })
 *   yield* (yield* FlushCheckpoint).flush(session) // committed when this returns
 * }).pipe(Effect.scoped, Effect.provide(Sessions))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options = {}
): Layer.Layer<PgSessions, PersistenceError, SessionStore | FlushCheckpoint | SqlClient.SqlClient> =>
  Layer.effect(
    PgSessions,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* SessionStore
      const checkpoint = yield* FlushCheckpoint
      // past the types (JavaScript, a config): options that are no object, a migrate that is no
      // boolean ("no" would migrate)
      const settings: unknown = options
      const migrateOption = typeof settings === "object" && settings !== null ? (settings as { readonly migrate?: unknown }).migrate : undefined
      const got = typeof settings !== "object" || settings === null || Array.isArray(settings)
        ? String(settings)
        : migrateOption !== undefined && typeof migrateOption !== "boolean"
        ? `migrate ${JSON.stringify(migrateOption)}`
        : undefined
      if (got !== undefined) {
        return yield* new SessionErrors.PersistenceError({
          message: `PgSessions.layer: the options must be an object whose migrate is true or false, got ${got}`,
          sessionId: ""
        })
      }

      if (options.migrate !== false) {
        yield* transactionFailure(migrate).pipe(
          Effect.mapError((error) =>
            new SessionErrors.PersistenceError({
              message: `cannot migrate the session tables in PostgreSQL: ${migrationMessage(error)}`,
              sessionId: "",
              cause: error
            })
          )
        )
      }

      const locks = WriterLocks.make(sql)
      const states = new WeakMap<Session.Session, State>()
      // states that may still have something to write or a lock to give back
      const active = new Set<State>()
      const resuming = new Map<string, Resuming>()

      const stateFor = (session: Session.Session): Effect.Effect<State> =>
        Effect.gen(function*() {
          const known = states.get(session)
          if (known !== undefined) return known
          const resumed = resuming.get(session.id)
          const continues = resumed !== undefined && (yield* Session.continues(session, resumed.events))
          const again = states.get(session)
          if (again !== undefined) return again
          const state: State = {
            session,
            serial: Semaphore.makeUnsafe(1),
            writer: crypto.randomUUID(),
            written: continues ? session.seeded : 0,
            created: continues,
            lock: continues ? resumed!.lock : undefined,
            lost: undefined,
            released: false
          }
          if (continues) resuming.delete(session.id)
          states.set(session, state)
          active.add(state)
          return state
        })

      const failure = (state: State, message: string, cause?: unknown) =>
        new SessionErrors.PersistenceError({ message, sessionId: state.session.id, ...(cause === undefined ? {} : { cause }) })

      const lockedError = (id: string, refused: WriterLocks.Refused, what: string) =>
        new SessionErrors.SessionLockedError({
          message: `${what} session ${JSON.stringify(id)}: ${refused.message}`,
          sessionId: id,
          ...(refused.holder === undefined ? {} : { holder: refused.holder })
        })

      const releaseLock = (state: State) =>
        Effect.suspend(() => {
          const lock = state.lock
          state.lock = undefined
          return lock === undefined ? Effect.void : locks.release(state.session.id, lock)
        })

      // Stops a state writing for good: another writer has written the session.
      const lose = (state: State, why: string, cause?: unknown) =>
        Effect.gen(function*() {
          state.lost = `session ${JSON.stringify(state.session.id)} stopped writing ${location(state.session.id)}: ${why} ` +
            "(resume the session to go on from what the database holds)"
          yield* releaseLock(state)
          return yield* failure(state, state.lost, cause)
        })

      // Whether a statement of this layer failed since the lock connection was last known to
      // answer: a database that went away ended that connection too, silently (nothing runs on it).
      let lockInDoubt = false

      // The lock is taken before a new session's first write, and taken again when the
      // connection it was held on is gone (the schema refuses the write if another writer
      // wrote meanwhile).
      const ensureWriter = (state: State) =>
        Effect.gen(function*() {
          if (state.released) {
            return yield* failure(state, `cannot write session ${JSON.stringify(state.session.id)}: it closed and gave its lock back`)
          }
          if (state.lost !== undefined) return yield* failure(state, state.lost)
          yield* refuseUnstorable(state.session.id, "cannot write")
          if (lockInDoubt) {
            lockInDoubt = false
            yield* locks.verify
          }
          if (state.lock !== undefined && state.lock === locks.generation()) return
          const hadLock = state.lock !== undefined
          state.lock = undefined
          const taken = yield* locks.take(state.session.id).pipe(
            Effect.mapError(persistence(state.session.id, `cannot take the writer lock of session ${JSON.stringify(state.session.id)}`))
          )
          if (typeof taken === "number") {
            state.lock = taken
            return
          }
          const locked = lockedError(state.session.id, taken, "cannot write")
          if (hadLock) return yield* lose(state, `its writer lock went with a lost connection, and ${taken.message}`, locked)
          return yield* failure(state, `cannot write session ${JSON.stringify(state.session.id)}: ${taken.message}`, locked)
        })

      /** The rows of `events` up to the first one that cannot be encoded. */
      const encode = (state: State, events: ReadonlyArray<SessionEvent.SessionEvent>) => {
        const rows: Array<Row> = []
        let unencodable: string | undefined
        for (const event of events) {
          const line = JsonlSessions.encodeLine(event)
          if (Result.isFailure(line)) {
            unencodable = `cannot encode event seq ${event.seq} (${event.type}) of session ${JSON.stringify(state.session.id)}, ` +
              `so neither it nor any later event is persisted in ${location(state.session.id)}: ${line.failure}`
            break
          }
          rows.push({ seq: event.seq, type: event.type, time: BigInt(Math.trunc(event.time)), event: line.success.slice(0, -1) })
        }
        return { rows, unencodable }
      }

      const insert = (state: State, rows: ReadonlyArray<Row>) =>
        transactionFailure(sql.withTransaction(Effect.gen(function*() {
          const id = state.session.id
          if (!state.created) {
            yield* sql.unsafe(insertSessionSql, [id, BigInt(Math.trunc(state.session.createdAt)), state.writer])
          }
          let start = 0
          while (start < rows.length) {
            let end = start
            let chars = 0
            while (end < rows.length && end - start < INSERT_ROWS && (end === start || chars + rows[end]!.event.length <= INSERT_CHARS)) {
              chars += rows[end]!.event.length
              end++
            }
            const batch = rows.slice(start, end)
            yield* sql.unsafe(insertEventsSql, [
              id,
              state.writer,
              batch.map((row) => row.seq),
              batch.map((row) => row.type),
              batch.map((row) => row.time),
              batch.map((row) => row.event)
            ])
            start = end
          }
        })))

      // After a unique violation: what of the conflicting rows this state wrote itself (a commit
      // whose answer was lost). Whether it found any, having counted them as written.
      const reconcile = (state: State) =>
        Effect.gen(function*() {
          const id = state.session.id
          const rows = yield* sql<{ creator: string | null; mine: number | null }>`SELECT
  (SELECT created_by::text FROM ${sql(sessionsTable)} WHERE session_id = ${id}) AS creator,
  (SELECT max(seq) FROM ${sql(eventsTable)} WHERE session_id = ${id} AND writer = ${state.writer}::uuid) AS mine`.pipe(
            Effect.mapError(persistence(id, `cannot read back session ${JSON.stringify(id)} from PostgreSQL`))
          )
          const row = rows[0]
          let progressed = false
          if (!state.created && row?.creator === state.writer) {
            state.created = true
            progressed = true
          }
          if (row?.mine !== null && row?.mine !== undefined && row.mine >= state.written) {
            state.written = row.mine + 1
            progressed = true
          }
          return progressed
        })

      const write = (state: State): Effect.Effect<void, PersistenceError> =>
        Effect.gen(function*() {
          for (;;) {
            const events = yield* state.session.eventsFrom(state.written)
            if (state.created && events.length === 0) return
            yield* ensureWriter(state)
            const { rows, unencodable } = encode(state, events)
            const id = state.session.id
            const outcome = yield* Effect.result(rows.length === 0 && state.created ? Effect.void : insert(state, rows))
            if (Result.isSuccess(outcome)) {
              state.created = true
              state.written += rows.length
              if (unencodable !== undefined) return yield* failure(state, unencodable)
              return
            }
            const sqlError = outcome.failure
            const fail = persistence(id, `cannot write session ${JSON.stringify(id)} to PostgreSQL (${eventsTable})`)
            const conflict = isUniqueViolation(sqlError, `${eventsTable}_pkey`)
            const exists = isUniqueViolation(sqlError, `${sessionsTable}_pkey`)
            if (!conflict && !exists) {
              lockInDoubt = true
              return yield* fail(sqlError)
            }
            if (yield* reconcile(state)) continue
            if (exists) {
              const lock = state.lock
              state.lock = undefined
              if (lock !== undefined) yield* locks.release(id, lock)
              return yield* failure(
                state,
                `cannot create session ${JSON.stringify(id)} in ${sessionsTable}: it exists already. It belongs to an earlier ` +
                  `session with this id; continue it with PgSessions.resume, or use another id`,
                sqlError
              )
            }
            return yield* lose(
              state,
              `another writer has written seq ${state.written} (${sqlMessage(sqlError)})`,
              new SessionErrors.SessionLockedError({
                message: `session ${JSON.stringify(id)} has another writer: seq ${state.written} is in the database already`,
                sessionId: id,
                cause: sqlError
              })
            )
          }
        })

      // A flush half-done is rolled back, but interrupting one would leave its answer unknown:
      // once it holds the session's permit it runs to the end.
      const flushState = (state: State) =>
        state.serial.withPermit(Effect.uninterruptible(write(state))).pipe(
          Effect.withSpan("PgSessions.flush", { attributes: { "dsh.session": state.session.id } })
        )

      // Never fails. Run under the session's permit (see `release`).
      const releaseNow = (state: State) =>
        Effect.gen(function*() {
          active.delete(state)
          state.released = true
          yield* releaseLock(state)
        })

      const release = (state: State) => Effect.uninterruptible(state.serial.withPermit(releaseNow(state)))

      // A failure here has no caller to go to: it is logged, defects included, so that one
      // session cannot keep the others from being flushed and released.
      const flushAndRelease = (state: State, when: string) =>
        flushState(state).pipe(
          Effect.andThen(release(state)),
          Effect.catchCause((cause) =>
            Effect.logError(
              `PgSessions: ${when}, session ${JSON.stringify(state.session.id)} was not persisted: ${HarnessError.describe(Cause.squash(cause))}`
            )
          ),
          Effect.uninterruptible
        )

      const fibers = yield* Scope.fork(yield* Effect.scope)

      // its pool closes with the Layer: a call after that would end as a bare interruption
      let layerClosed = false
      const open = <A, E, R>(id: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | PersistenceError, R> =>
        Effect.suspend((): Effect.Effect<A, E | PersistenceError, R> =>
          layerClosed
            ? Effect.fail(
              new SessionErrors.PersistenceError({
                message: `the PgSessions Layer is closed (its scope ended, and its connections with it): nothing can be read or written${
                  id === "" ? "" : ` for session ${JSON.stringify(id)}`
                }; build the Layer again`,
                sessionId: id
              })
            )
            : effect
        )

      yield* Effect.addFinalizer(() =>
        Effect.gen(function*() {
          layerClosed = true
          yield* Scope.close(fibers, Exit.void)
          for (const session of yield* store.all) yield* stateFor(session)
          yield* Effect.forEach([...active], (state) => flushAndRelease(state, "at shutdown"), {
            concurrency: 8,
            discard: true
          })
          for (const state of active) yield* release(state)
          yield* locks.close
        })
      )

      yield* ScopedList.inOpenScope(checkpoint.register({
        name: "postgres",
        flush: (session) => Effect.flatMap(stateFor(session), flushState)
      }))

      const watch = (session: Session.Session) =>
        session.awaitClosed.pipe(
          Effect.andThen(stateFor(session)),
          Effect.flatMap((state) => flushAndRelease(state, "when it closed"))
        )

      // A new session may not take an id the database holds: that session is continued by
      // `resume` (which creates its session with the stored events), never written over.
      yield* ScopedList.inOpenScope(store.admission.register(SessionStore.refuseStored({
        name: "PgSessions",
        resuming: (id) => resuming.has(id),
        // an id the database cannot keep is not in it (its first flush says why)
        holds: (id) =>
          unstorableId(id) === undefined
            ? Effect.map(sql`SELECT 1 FROM ${sql(sessionsTable)} WHERE session_id = ${id}`, (rows) => rows.length > 0)
            : Effect.succeed(false),
        refusal: (id) =>
          new SessionErrors.SessionExistsError({
            message: `session ${JSON.stringify(id)} exists already in ${sessionsTable}; continue it with ` +
              "PgSessions.resume, or create the new session under another id",
            sessionId: id
          })
      })))

      yield* store.sessions.pipe(
        Stream.runForEach((session) => Effect.andThen(stateFor(session), Effect.forkIn(watch(session), fibers))),
        Effect.forkIn(fibers)
      )

      // A closed session of this store with this id must finish writing and give its lock back
      // before the log is read (one that lost the session has nothing it may write).
      const finishEarlier = (id: string) =>
        Effect.gen(function*() {
          for (const session of yield* store.all) {
            const state = yield* stateFor(session)
            if (session.id !== id || !(yield* session.closed)) continue
            yield* state.serial.withPermit(Effect.uninterruptible(Effect.gen(function*() {
              if (state.released) return
              if (state.lost === undefined) yield* write(state)
              yield* releaseNow(state)
            })))
          }
        })

      const adopt = (id: string, loaded: Loaded, lock: number) =>
        Effect.gen(function*() {
          resuming.set(id, { events: loaded.events, lock })
          const session = yield* store.create({ id, seed: loaded.events, createdAt: loaded.createdAt }).pipe(
            // a loaded log is one (decoded, counted from 0) with an integer createdAt: in range
            Effect.catchTag("InvalidSessionError", Effect.die),
            Effect.onError(() => Effect.andThen(Effect.sync(() => resuming.delete(id)), locks.release(id, lock)))
          )
          yield* stateFor(session)
          const repairs: Array<SessionEvent.Repair> = []
          const interrupted = yield* Closing.closeInterrupted(session)
          if (interrupted !== undefined) repairs.push(interrupted)
          const resumed: Resumed = { session, repairs }
          return resumed
        })

      const resume = (id: string) =>
        Effect.gen(function*() {
          if (Option.isSome(yield* store.get(id))) {
            return yield* new SessionErrors.SessionExistsError({
              message: `session ${JSON.stringify(id)} is open; close it before resuming it`,
              sessionId: id
            })
          }
          yield* refuseUnstorable(id, "cannot resume")
          yield* finishEarlier(id)
          // from the lock on, nothing may be interrupted but the load: the lock is either given
          // back or handed to the session's state, never dropped
          return yield* Effect.uninterruptibleMask((restore) =>
            Effect.gen(function*() {
              const taken = yield* locks.take(id).pipe(
                Effect.mapError(persistence(id, `cannot take the writer lock of session ${JSON.stringify(id)}`))
              )
              if (typeof taken !== "number") return yield* lockedError(id, taken, "cannot resume")
              const loaded = yield* restore(load(sql, id)).pipe(Effect.onError(() => locks.release(id, taken)))
              return yield* adopt(id, loaded, taken)
            })
          )
        }).pipe(Effect.withSpan("PgSessions.resume", { attributes: { "dsh.session": id } }))

      return PgSessions.of({
        resume: (id) => open(id, resume(id)),
        load: (id) => open(id, load(sql, id)),
        list: open("", list(sql))
      })
    })
  )
