/**
 * The PostgreSQL store against the JSONL store (`npm run bench sql-sessions`): the cost per
 * appended event through append + flush, on the same workload (turns of a user message, a step
 * streamed in 12 text chunks, its message and usage), flushing every 10, 100 and 1,000 events — a turn flushes
 * once at its end, and a turn of the loop logs tens to hundreds of events. Both stores are
 * durable when the flush returns: JSONL fsyncs its file, PostgreSQL commits (on the benchmark's
 * throw-away server `fsync=off`, so it measures the protocol and the server's work, not the disk;
 * JSONL pays its disk's fsync, so the comparison flatters neither at the disk).
 *
 * The server is the one at DSH_PG_URL, or a throw-away one started like the tests'
 * (scripts/postgres.ts). Measures only; nothing here asserts.
 */
import { Content, Usage } from "@dsh/llm"
import { FlushCheckpoint, JsonlSessions, type Session, SessionStore } from "@dsh/session"
import { PgSessions } from "@dsh/sql-sessions"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startPostgres } from "../../../scripts/postgres.ts"

const CHUNKS = 12

/** Words of about `length` characters, different for each `n`. */
const prose = (length: number, n: number) => `${n} ${"the quick brown fox jumps over the lazy dog ".repeat(Math.ceil(length / 44))}`.slice(0, length)

/** The `i`-th event of an endless session: turns of 2 + CHUNKS + 5 events. */
const appendNth = (session: Session.Session, i: number) => {
  const size = CHUNKS + 7
  const turn = 1 + Math.floor(i / size)
  const at = i % size
  if (at === 0) return session.append("turn/start", { turn, trigger: "send" })
  if (at === 1) return session.append("user/message", { content: [Content.text(prose(200, i))], source: "user" })
  if (at === 2) return session.append("step/start", { turn, step: 1 })
  if (at < 3 + CHUNKS) {
    return session.append("assistant/chunk", { turn, step: 1, chunk: { type: "text-delta", index: 0, delta: prose(24, i) } })
  }
  if (at === 3 + CHUNKS) {
    return session.append("assistant/message", { turn, step: 1, content: [Content.text(prose(24 * CHUNKS, i))], finishReason: { kind: "stop" } })
  }
  if (at === 4 + CHUNKS) return session.append("usage", { turn, step: 1, usage: Usage.make({ inputTokens: 1_000 + turn, outputTokens: 80 }) })
  if (at === 5 + CHUNKS) return session.append("step/end", { turn, step: 1 })
  return session.append("turn/end", { turn, reason: { kind: "completed" } })
}

const gc = (): void => (globalThis as { gc?: () => void }).gc?.()
const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

const stores = Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)

const jsonl = (directory: string) => JsonlSessions.layer({ directory }).pipe(Layer.provideMerge(stores))

const pg = (url: string) =>
  PgSessions.layer().pipe(Layer.provideMerge(stores), Layer.provide(PgClient.layer({ url: Redacted.make(url) })))

/** Appends `events` events to a fresh session, flushing after every `batch`: µs per event. */
const run = (id: string, events: number, batch: number) =>
  Effect.gen(function*() {
    const session = yield* (yield* SessionStore).create({ id })
    const checkpoint = yield* FlushCheckpoint
    gc()
    const start = performance.now()
    for (let done = 0; done < events;) {
      const count = Math.min(batch, events - done)
      for (let i = 0; i < count; i++) yield* appendNth(session, done + i)
      done += count
      yield* checkpoint.flush(session)
    }
    return ((performance.now() - start) * 1000) / events
  }).pipe(Effect.scoped)

const BATCHES = [
  { batch: 10, events: 5_000 },
  { batch: 100, events: 20_000 },
  { batch: 1_000, events: 50_000 }
] as const

const measure = (label: string) =>
  Effect.gen(function*() {
    yield* run(`${label}-warm-up`, 5_000, 100)
    const out: Array<number> = []
    for (const { batch, events } of BATCHES) out.push(yield* run(`${label}-${batch}`, events, batch))
    return out
  })

const main = async () => {
  const given = process.env["DSH_PG_URL"]
  const server = given === undefined || given === "" ? await startPostgres() : undefined
  const base = new URL(given ?? server!.url)
  const name = `dsh_bench_${Date.now()}`
  const directory = await mkdtemp(join(tmpdir(), "dsh-bench-jsonl-"))
  try {
    await Effect.runPromise(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql.unsafe(`CREATE DATABASE ${name}`)
      }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(base.toString()) })))
    )
    const url = new URL(base)
    url.pathname = `/${name}`
    const onFile = await Effect.runPromise(measure("jsonl").pipe(Effect.provide(jsonl(directory))))
    const onPg = await Effect.runPromise(measure("pg").pipe(Effect.provide(pg(url.toString()))))
    console.log(`append + flush, µs per event (PostgreSQL ${server?.version ?? "at DSH_PG_URL"}; JSONL in ${tmpdir()})`)
    console.log("events per flush      JSONL  PostgreSQL  PostgreSQL / JSONL")
    BATCHES.forEach(({ batch }, i) =>
      console.log(`${fmt(batch).padStart(16)}  ${fmt(onFile[i]!, 1).padStart(9)}  ${fmt(onPg[i]!, 1).padStart(10)}  ${`${fmt(onPg[i]! / onFile[i]!, 2)}×`.padStart(18)}`)
    )
  } finally {
    await rm(directory, { recursive: true, force: true })
    await server?.stop()
  }
}

await main()
