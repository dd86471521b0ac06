/**
 * Turns per second of agents on Effect Cluster (`npm run bench cluster`): the one-call turn
 * (`Run`) sent from a client process to agents hosted by 1 and by 2 runner processes (spawned
 * with node, as in the failover test), on one PostgreSQL database, with a model that answers at
 * once (so what is measured is the harness: the cluster's persisted delivery — the request and
 * its reply stored in PostgreSQL, the runner's socket hop — the loop's turn, and the session's
 * commit at the turn's end). SESSIONS sessions run TURNS turns each, one after another per
 * session, all sessions at once; then one session alone (the latency of a turn without
 * contention).
 *
 * The server is the one at DSH_PG_URL, or a throw-away one started like the tests'
 * (scripts/postgres.ts, `fsync=off`). Measures only; nothing here asserts.
 */
import { ClusterClient } from "@dsh/cluster"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { startPostgres } from "../../../scripts/postgres.ts"
import { freePort, spawnRunner, testSharding, waitUntil } from "../test/fixtures/cluster.ts"

const SESSIONS = 40
const TURNS = 10
const WARM_UP_TURNS = 2

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

const onServer = (url: string, statement: string) =>
  Effect.runPromise(
    SqlClient.SqlClient.use((sql) => sql.unsafe(statement)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(url) }))
    )
  )

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

/** One measurement: `runners` runner processes on a fresh database; turns/s and per-turn latency. */
const measure = async (base: URL, runners: number, sessions: number) => {
  const name = `dsh_bench_cluster_${runners}_${Date.now()}`
  await onServer(base.toString(), `CREATE DATABASE ${name}`)
  const url = new URL(base)
  url.pathname = `/${name}`
  const database = url.toString()
  const processes = []
  for (let i = 0; i < runners; i++) processes.push(spawnRunner({ database, port: await freePort(), latencyMs: 0 }))
  try {
    await Promise.all(processes.map((p) => p.ready))
    return await Effect.runPromise(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* waitUntil(
          `${runners} runner(s) hold all the shards`,
          Effect.map(
            sql<{ readonly locks: number; readonly holders: number }>`
              SELECT count(*)::int AS locks, count(DISTINCT pid)::int AS holders FROM pg_locks
              WHERE locktype = 'advisory' AND granted AND objsubid = 2
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
            ([row]) => row!.locks === testSharding.shardsPerGroup && row!.holders === runners
          )
        )
        const agents = yield* Effect.forEach(Array.from({ length: sessions }, (_, i) => `bench-${i}`), (id) => ClusterClient.agent(id))
        const turns = (count: number, latencies: Array<number>) =>
          Effect.forEach(agents, (agent) =>
            Effect.gen(function*() {
              for (let i = 0; i < count; i++) {
                const start = performance.now()
                yield* agent.run(`turn ${i}`)
                latencies.push(performance.now() - start)
              }
            }), { concurrency: "unbounded", discard: true })
        // the first turns resume nothing but create every session and wake every entity
        yield* turns(WARM_UP_TURNS, [])
        const latencies: Array<number> = []
        const start = performance.now()
        yield* turns(TURNS, latencies)
        const elapsed = (performance.now() - start) / 1000
        const hosts = new Set((yield* Effect.forEach(agents, (agent) => agent.status)).map((s) => s.runner))
        latencies.sort((a, b) => a - b)
        return {
          turnsPerSecond: (sessions * TURNS) / elapsed,
          p50: percentile(latencies, 0.5),
          p90: percentile(latencies, 0.9),
          hosts: hosts.size
        }
      }).pipe(Effect.provide(ClusterClient.layer({ database, sharding: testSharding })))
    )
  } finally {
    for (const p of processes) p.child.kill("SIGKILL")
    await Promise.all(processes.map((p) => p.exited))
    await onServer(base.toString(), `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }
}

const main = async () => {
  const given = process.env["DSH_PG_URL"]
  const server = given === undefined || given === "" ? await startPostgres() : undefined
  const base = new URL(given ?? server!.url)
  try {
    const rows = [
      { runners: 1, sessions: SESSIONS, result: await measure(base, 1, SESSIONS) },
      { runners: 2, sessions: SESSIONS, result: await measure(base, 2, SESSIONS) },
      { runners: 1, sessions: 1, result: await measure(base, 1, 1) }
    ]
    console.log(`Run (the one-call turn) from a client process, ${TURNS} turns per session, instant model (PostgreSQL ${server?.version ?? "at DSH_PG_URL"})`)
    console.log("runners  sessions  turns/s  p50 ms/turn  p90 ms/turn  runners hosting")
    for (const { result: r, runners, sessions } of rows) {
      console.log(
        `${String(runners).padStart(7)}  ${String(sessions).padStart(8)}  ${fmt(r.turnsPerSecond, 1).padStart(7)}  ${fmt(r.p50, 1).padStart(11)}  ${fmt(r.p90, 1).padStart(11)}  ${String(r.hosts).padStart(15)}`
      )
    }
  } finally {
    await server?.stop()
  }
}

await main()
