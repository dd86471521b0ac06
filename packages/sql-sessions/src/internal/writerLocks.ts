/**
 * One writer per session in PostgreSQL: a session-level advisory lock per session id, all held
 * on one connection of the layer (reserved from the client's pool for as long as the layer
 * needs it). The server releases a connection's advisory locks when the connection ends, so a
 * writer that dies — a killed process, a lost network — gives its sessions back by itself, on
 * whatever host it ran.
 *
 * The lock key is `hashtextextended(session_id, LOCK_SEED)`, 64 bits: two ids sharing one is
 * not a concern at any number of sessions a database holds. The connection's
 * `application_name` names this process (`dsh pid <pid> on <host>`), so a refused writer can
 * be told who holds the session.
 *
 * When the lock connection fails it is dropped (its locks go with it) and the next lock taken
 * reserves a new one; `generation` names the connection, so that a writer can tell that a lock
 * it took is gone. The server can end the connection while nothing runs on it (a restart, a
 * failover, an administrator): `verify` asks it, and a writer whose own statements failed does
 * so before it writes again. The lock is what refuses a second writer early (at resume); what keeps the
 * log whole in every case is the schema: see the module documentation of `PgSessions`.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import type { SqlClient } from "effect/sql/SqlClient"
import type { Connection } from "effect/sql/SqlConnection"
import type { SqlError } from "effect/sql/SqlError"
import { hostname } from "node:os"

/** The seed of the lock keys: "dsh" in ASCII. */
export const LOCK_SEED = 0x647368

/** This process, as the lock connection's `application_name` names it (PostgreSQL keeps 63 bytes). */
export const processName = (): string => `dsh pid ${process.pid} on ${hostname()}`.slice(0, 63)

/** A lock another connection holds. */
export interface Refused {
  readonly _tag: "Refused"
  /** Who holds it, when the server says (`dsh pid 4242 on host-a, server pid 351, from 10.0.0.7`). */
  readonly holder: string | undefined
  /** Whether the holder is another layer of this very process. */
  readonly thisProcess: boolean
  readonly message: string
}

/** The locks of one layer. */
export interface WriterLocks {
  /** The lock connection's generation, 0 while there is none: a lock taken under another is gone. */
  readonly generation: () => number
  /** Takes the lock of a session; the generation it was taken under, or who holds it. */
  readonly take: (id: string) => Effect.Effect<number | Refused, SqlError>
  /**
   * Asks the lock connection whether it still answers; one that does not is dropped (its
   * generation is over). Never fails.
   */
  readonly verify: Effect.Effect<void>
  /** Gives a lock back (a no-op when its connection is gone). Never fails: a failure is logged. */
  readonly release: (id: string, generation: number) => Effect.Effect<void>
  /** Gives every lock back and returns the connection to the pool. */
  readonly close: Effect.Effect<void>
}

interface Held {
  readonly connection: Connection
  readonly scope: Scope.Closeable
  readonly generation: number
}

const holderSql = `SELECT a.pid, a.application_name, host(a.client_addr) AS address
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended($1, $2)`

/** The locks of a layer over `sql`; nothing is reserved until the first lock is taken. */
export const make = (sql: SqlClient): WriterLocks => {
  const name = processName()
  const mutex = Semaphore.makeUnsafe(1)
  let held: Held | undefined
  let generation = 0
  // ids locked on the current connection: advisory locks nest per connection, so this layer
  // must refuse itself
  const mine = new Set<string>()

  const connect = Effect.gen(function*() {
    if (held !== undefined) return held
    const scope = yield* Scope.make()
    const connection = yield* sql.reserve.pipe(
      Scope.provide(scope),
      Effect.onError(() => Scope.close(scope, Exit.void))
    )
    yield* connection.execute("SELECT set_config('application_name', $1, false)", [name], undefined).pipe(
      Effect.onError(() => Scope.close(scope, Exit.void))
    )
    held = { connection, scope, generation: ++generation }
    mine.clear()
    return held
  })

  // a connection that failed once is not trusted again: its locks are given back if it still
  // answers, and it goes back to the pool; the sessions that held locks on it find out by the
  // generation
  const drop = (current: Held) =>
    Effect.gen(function*() {
      if (held !== current) return
      held = undefined
      mine.clear()
      yield* Effect.ignore(current.connection.execute("SELECT pg_advisory_unlock_all()", [], undefined))
      yield* Scope.close(current.scope, Exit.void)
    })

  const onConnection = <A>(f: (connection: Connection) => Effect.Effect<A, SqlError>) =>
    Effect.gen(function*() {
      const current = yield* connect
      return yield* f(current.connection).pipe(Effect.tapError(() => drop(current)))
    })

  const describe = (id: string) =>
    Effect.gen(function*() {
      const rows = yield* sql.unsafe<{ pid: number; application_name: string | null; address: string | null }>(
        holderSql,
        [id, LOCK_SEED]
      ).pipe(Effect.orElseSucceed(() => []))
      const row = rows[0]
      if (row === undefined) return { holder: undefined, thisProcess: false }
      const application = row.application_name === null || row.application_name === "" ? "a client" : row.application_name
      return {
        holder: `${application} (server pid ${row.pid}${row.address === null ? "" : `, from ${row.address}`})`,
        thisProcess: row.application_name === name
      }
    })

  const take = (id: string): Effect.Effect<number | Refused, SqlError> =>
    mutex.withPermit(Effect.gen(function*() {
      if (held !== undefined && mine.has(id)) {
        return { _tag: "Refused", holder: "this layer", thisProcess: true, message: "this layer holds it already" } as const
      }
      const rows = yield* onConnection((connection) =>
        connection.execute("SELECT pg_try_advisory_lock(hashtextextended($1, $2)) AS locked", [id, LOCK_SEED], undefined)
      )
      const current = held!
      if (rows[0]?.locked === true) {
        mine.add(id)
        return current.generation
      }
      const { holder, thisProcess } = yield* describe(id)
      const refused: Refused = {
        _tag: "Refused",
        holder,
        thisProcess,
        message: `another writer holds it: ${holder ?? "a connection that just let go of it or is ending"}` +
          (thisProcess ? " — another layer of this process" : "")
      }
      return refused
    }))

  const release = (id: string, of: number) =>
    mutex.withPermit(Effect.gen(function*() {
      const current = held
      if (current === undefined || current.generation !== of || !mine.has(id)) return
      mine.delete(id)
      yield* current.connection.execute("SELECT pg_advisory_unlock(hashtextextended($1, $2))", [id, LOCK_SEED], undefined).pipe(
        Effect.catch((error) =>
          Effect.andThen(
            Effect.logWarning(`PgSessions: cannot give back the writer lock of session ${id}: ${error.message}`),
            drop(current)
          )
        )
      )
    }))

  const verify = mutex.withPermit(Effect.suspend(() => {
    const current = held
    if (current === undefined) return Effect.void
    return current.connection.execute("SELECT 1", [], undefined).pipe(
      Effect.asVoid,
      Effect.catch(() => drop(current))
    )
  }))

  const close = mutex.withPermit(Effect.suspend(() => (held === undefined ? Effect.void : drop(held))))

  return { generation: () => held?.generation ?? 0, take, verify, release, close }
}
