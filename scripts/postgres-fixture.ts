/**
 * The PostgreSQL of the tests: the server at DSH_PG_URL (the vitest globalSetup,
 * scripts/vitest-postgres-setup.ts, starts a throw-away one when it is not set), and a fresh
 * database on it per test, dropped afterwards, so tests never see each other's sessions.
 * Shared by the tests of every package that needs PostgreSQL (@dsh/sql-sessions, @dsh/cluster),
 * as scripts/postgres.ts is by the globalSetup and the benchmarks.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

/** The server's URL; throws, saying why, when there is none (never skips). */
export const serverUrl = (): string => {
  const url = process.env["DSH_PG_URL"]
  if (url !== undefined && url !== "") return url
  throw new Error(
    `no PostgreSQL for this test: ${
      process.env["DSH_PG_UNAVAILABLE"] ??
        "DSH_PG_URL is not set (run the tests with vitest, whose globalSetup scripts/vitest-postgres-setup.ts starts a server)"
    }`
  )
}

/** The URL of database `name` on the server. */
export const databaseUrl = (name: string): string => {
  const url = new URL(serverUrl())
  url.pathname = `/${name}`
  return url.toString()
}

/** A client of the database at `url` (a pool of its own: what one process would have). */
export const client = (url: string): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError> =>
  PgClient.layer({ url: Redacted.make(url), applicationName: "dsh-tests" })

/** Runs `f` with a client of the server's own database (to create and drop databases). */
const onServer = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(client(serverUrl()))
    return yield* f(Context.get(context, SqlClient.SqlClient))
  }))

/** A fresh, empty database for the current scope: its URL. Dropped (connections and all) when the scope closes. */
export const freshDatabase: Effect.Effect<string, SqlError, Scope.Scope> = Effect.acquireRelease(
  onServer((sql) =>
    Effect.gen(function*() {
      const name = `dsh_test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
      yield* sql.unsafe(`CREATE DATABASE ${name}`)
      return name
    })
  ),
  (name) => onServer((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).pipe(Effect.orDie)
).pipe(Effect.map(databaseUrl))

/** Runs `f` with a client of the database at `url`, outside any layer under test. */
export const withClient = <A, E>(url: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(client(url))
    return yield* f(Context.get(context, SqlClient.SqlClient))
  }))
