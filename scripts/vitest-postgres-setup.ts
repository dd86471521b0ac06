// vitest globalSetup: a PostgreSQL server for the tests that need one (@dsh/sql-sessions, its
// README example). When DSH_PG_URL is set, that server is used and nothing is started. Else a
// throw-away server is started (scripts/postgres.ts: Debian's postgresql package, a temporary
// directory, 127.0.0.1 on a free port, an unprivileged user) and DSH_PG_URL is set to it for
// every test worker and every process they spawn; it is stopped by its pid when the run ends.
// Where PostgreSQL is not installed, DSH_PG_UNAVAILABLE says why, and only the tests that need
// a server fail, saying so.
import { startPostgres, unavailable } from "./postgres.ts"

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if ((process.env["DSH_PG_URL"] ?? "") !== "") {
    console.log("dsh tests on PostgreSQL at DSH_PG_URL")
    return undefined
  }
  const missing = unavailable()
  if (missing !== undefined) {
    process.env["DSH_PG_UNAVAILABLE"] = missing
    console.log(`dsh tests without PostgreSQL: ${missing}`)
    return undefined
  }
  const started = Date.now()
  const server = await startPostgres()
  process.env["DSH_PG_URL"] = server.url
  console.log(`dsh tests on PostgreSQL ${server.version} at ${server.url} (pid ${server.pid}, started in ${Date.now() - started} ms)`)
  return async () => {
    await server.stop()
    delete process.env["DSH_PG_URL"]
  }
}
