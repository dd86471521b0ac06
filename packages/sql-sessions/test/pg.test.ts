// What only the PostgreSQL store has, on a real server (fixtures/postgres.ts): the migrations,
// the schema that keeps every log whole whoever writes it, a second writer that ignores the
// lock, a lock lost with its connection, a commit whose answer was lost, large flushes, rows
// that do not decode, and a writer process killed with SIGKILL mid-turn. The contract both
// stores share is in store-contract.test.ts.
import { Content } from "@dsh/llm"
import { FlushCheckpoint, JsonlSessions, SessionStore } from "@dsh/session"
import { PgSessions } from "@dsh/sql-sessions"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectionError, SqlError } from "effect/sql/SqlError"
import { spawn } from "node:child_process"
import { once } from "node:events"
import { join } from "node:path"
import { appendMany, create, flush, text } from "./contract/suite.ts"
import { client, freshDatabase, withClient } from "./fixtures/postgres.ts"

type Services = SessionStore | FlushCheckpoint | PgSessions.PgSessions

const Core = Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)

const Live = (url: string) => PgSessions.layer().pipe(Layer.provideMerge(Core), Layer.provide(client(url)), Layer.orDie)

// fresh: a layer shares nothing with a layer around it (layers are memoized otherwise)
const persisted = <A, E>(url: string, program: Effect.Effect<A, E, Services | Scope.Scope>) =>
  program.pipe(Effect.scoped, Effect.provide(Layer.fresh(Live(url))))

/** Builds a layer in a scope of its own, so a test can hold two writers over one database. */
const openLayer = (layer: Layer.Layer<Services>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const services = yield* Layer.buildWithScope(Layer.fresh(layer), scope)
    return {
      run: <A, E>(program: Effect.Effect<A, E, Services | Scope.Scope>) =>
        program.pipe(Scope.provide(scope), Effect.provideContext(services)),
      close: Scope.close(scope, Exit.void)
    }
  })

const withDatabase = <A, E, R>(f: (url: string) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.flatMap(Effect.orDie(freshDatabase), f))

const resume = (id: string) =>
  Effect.gen(function*() {
    return yield* (yield* PgSessions.PgSessions).resume(id)
  })

/** A session's log as an independent reader (a layer of its own) loads it. */
const readBack = (url: string, id: string) =>
  persisted(url, Effect.gen(function*() {
    return yield* (yield* PgSessions.PgSessions).load(id)
  }))

/** Runs SQL on the database outside the layers under test. */
const query = <A extends object = Record<string, unknown>>(url: string, text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.orDie(withClient(url, (sql) => sql.unsafe<A>(text, params)))

/** What another writer inserts: a valid event row at `seq`. */
const foreignRow = (url: string, id: string, seq: number, body: string) =>
  query(
    url,
    `INSERT INTO ${PgSessions.eventsTable} (session_id, seq, type, time, event, writer) VALUES ($1, $2, 'user/message', 0, $3, $4)`,
    [id, seq, JsonlSessions.eventLine({ type: "user/message", seq, time: 0, data: { content: [Content.text(body)], source: "user" } }).trim(), crypto.randomUUID()]
  )

const sqlFailure = (url: string, text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.flip(withClient(url, (sql) => sql.unsafe(text, params)))

describe("PgSessions: migrations", () => {
  it.effect("building the layer runs the migrations through the Migrator, once; the schema is what the docs say", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        yield* persisted(url, Effect.void)
        yield* persisted(url, Effect.void)
        expect(yield* query(url, `SELECT migration_id, name FROM ${PgSessions.migrationsTable}`)).toStrictEqual([
          { migration_id: 1, name: "sessions" }
        ])
        expect(yield* PgSessions.migrate.pipe(Effect.provide(client(url)), Effect.orDie)).toStrictEqual([])
        const columns = yield* query<{ column_name: string; data_type: string }>(
          url,
          "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position",
          [PgSessions.eventsTable]
        )
        expect(columns.map((c) => `${c.column_name} ${c.data_type}`)).toStrictEqual([
          "session_id text",
          "seq integer",
          "previous integer",
          "type text",
          "time bigint",
          "event text",
          "writer uuid"
        ])
      })
    ))

  it.effect("layers of several processes migrating one fresh database at once all succeed", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        yield* Effect.forEach([1, 2, 3, 4], () => persisted(url, Effect.void), { concurrency: "unbounded", discard: true })
        expect(yield* query(url, `SELECT count(*)::int AS n FROM ${PgSessions.migrationsTable}`)).toStrictEqual([{ n: 1 }])
      })
    ))
})

describe("PgSessions: the schema keeps every log whole, whoever writes it", () => {
  const seeded = (url: string) => persisted(url, Effect.flatMap(create("s"), (s) => Effect.andThen(appendMany(s, 3), flush(s))))

  it.effect("a seq taken already is refused by the primary key", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        yield* seeded(url)
        const error = yield* sqlFailure(
          url,
          `INSERT INTO ${PgSessions.eventsTable} (session_id, seq, type, time, event, writer) VALUES ('s', 2, 'user/message', 0, '{}', $1)`,
          [crypto.randomUUID()]
        )
        expect(error.reason._tag).toBe("UniqueViolation")
        expect(error.reason._tag === "UniqueViolation" && error.reason.constraint).toBe("dsh_session_events_pkey")
      })
    ))

  it.effect("a gap, a negative seq, an event of no session, an UPDATE and a DELETE are refused", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        yield* seeded(url)
        const row = (seq: number, id = "s") => [id, seq, `{"type":"user/message","seq":${seq},"time":0,"data":{"content":[],"source":"user"}}`, crypto.randomUUID()]
        const insert = `INSERT INTO ${PgSessions.eventsTable} (session_id, seq, type, time, event, writer) VALUES ($1, $2, 'user/message', 0, $3, $4)`
        const gap = yield* sqlFailure(url, insert, row(4))
        expect(gap.reason._tag).toBe("ConstraintError")
        expect(String(gap.reason.cause)).toContain("foreign key")
        const negative = yield* sqlFailure(url, insert, row(-1))
        expect(String(negative.reason.cause)).toContain("check constraint")
        const orphan = yield* sqlFailure(url, insert, row(0, "nobody"))
        expect(String(orphan.reason.cause)).toContain("foreign key")
        const update = yield* sqlFailure(url, `UPDATE ${PgSessions.eventsTable} SET event = '{}' WHERE seq = 1`)
        expect(String(update.reason.cause)).toContain("append-only")
        const remove = yield* sqlFailure(url, `DELETE FROM ${PgSessions.eventsTable} WHERE seq = 2`)
        expect(String(remove.reason.cause)).toContain("append-only")
        expect((yield* readBack(url, "s")).events.map((e) => e.seq)).toStrictEqual([0, 1, 2])
      })
    ))
})

describe("PgSessions: a second writer", () => {
  it.effect("one that ignores the lock and appends first: the flush is PERSISTENCE caused by SESSION_LOCKED, the log keeps its events only", () =>
    withDatabase((url) =>
      persisted(url, Effect.gen(function*() {
        const session = yield* create("s")
        yield* appendMany(session, 2)
        yield* flush(session)
        yield* foreignRow(url, "s", 2, "the intruder's")
        yield* text(session, "mine")
        const conflict = yield* Effect.flip(flush(session))
        expect(conflict.code).toBe("PERSISTENCE")
        expect(conflict.message).toContain("another writer has written seq 2")
        expect(conflict.cause).toMatchObject({ _tag: "SessionLockedError", code: "SESSION_LOCKED", sessionId: "s" })
        // for good: this session's view of the log is not the database's any more
        yield* text(session, "more")
        const later = yield* Effect.flip(flush(session))
        expect(later.message).toContain("stopped writing")
        const loaded = yield* readBack(url, "s")
        expect(loaded.events.map((e) => e.seq)).toStrictEqual([0, 1, 2])
        expect(loaded.events[2]!.data).toMatchObject({ content: [{ text: "the intruder's" }] })
        // it let the session go: a resume goes on from what the database holds
        const other = yield* openLayer(Live(url))
        const { session: resumed } = yield* other.run(resume("s"))
        expect(yield* resumed.seq).toBe(3)
        yield* other.close
      }))
    ))

  it.live("the lock goes with its connection: another writer resumes at once, and the first one's next flush is refused", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        const first = yield* openLayer(Live(url))
        const session = yield* first.run(create("t"))
        yield* appendMany(session, 1)
        yield* first.run(flush(session))
        const holders = yield* query<{ pid: number }>(url, "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted")
        expect(holders).toHaveLength(1)
        yield* query(url, "SELECT pg_terminate_backend($1)", [holders[0]!.pid])

        const second = yield* openLayer(Live(url))
        let resumed = yield* Effect.result(second.run(resume("t")))
        for (let i = 0; i < 400 && resumed._tag === "Failure" && resumed.failure.code === "SESSION_LOCKED"; i++) {
          yield* Effect.sleep("5 millis")
          resumed = yield* Effect.result(second.run(resume("t")))
        }
        if (resumed._tag === "Failure") return yield* Effect.die(resumed.failure)
        yield* text(resumed.success.session, "second")
        yield* second.run(flush(resumed.success.session))

        yield* text(session, "first")
        const refused = yield* Effect.flip(first.run(flush(session)))
        expect(refused.cause).toMatchObject({ code: "SESSION_LOCKED" })
        yield* first.close
        yield* second.close
        const loaded = yield* readBack(url, "t")
        expect(loaded.events.map((e) => e.data)).toMatchObject([{ content: [{ text: "m0" }] }, { content: [{ text: "second" }] }])
      })
    ))
})

describe("PgSessions: writing", () => {
  it.effect("a commit whose answer was lost is recognized by the rows' writer: each event is stored once", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        const faults = { commitLost: false }
        // the transaction commits, then the answer is lost: what a connection broken on COMMIT does
        const Faulty = Layer.effect(
          SqlClient.SqlClient,
          Effect.map(SqlClient.SqlClient, (sql) =>
            new Proxy(sql, {
              get: (target, key, receiver) =>
                key === "withTransaction"
                  ? <A, E, R>(effect: Effect.Effect<A, E, R>) =>
                    target.withTransaction(effect).pipe(
                      Effect.andThen((a) =>
                        faults.commitLost
                          ? Effect.fail(new SqlError({ reason: new ConnectionError({ cause: new Error("connection lost at COMMIT") }) }))
                          : Effect.succeed(a)
                      )
                    )
                  : Reflect.get(target, key, receiver)
            }))
        ).pipe(Layer.provide(client(url)))
        const Sessions = PgSessions.layer().pipe(Layer.provideMerge(Core), Layer.provide(Faulty), Layer.orDie)
        yield* Effect.gen(function*() {
          const session = yield* create("lost")
          yield* appendMany(session, 3)
          faults.commitLost = true
          const error = yield* Effect.flip(flush(session))
          expect(error.code).toBe("PERSISTENCE")
          expect(error.message).toContain("connection lost at COMMIT")
          faults.commitLost = false
          expect((yield* readBack(url, "lost")).events).toHaveLength(3)
          yield* appendMany(session, 2)
          yield* flush(session)
          yield* appendMany(session, 1)
          faults.commitLost = true
          yield* Effect.flip(flush(session))
          faults.commitLost = false
          yield* flush(session)
          const loaded = yield* readBack(url, "lost")
          expect(loaded.events).toStrictEqual(yield* session.events)
          expect(loaded.events.map((e) => e.seq)).toStrictEqual([0, 1, 2, 3, 4, 5])
        }).pipe(Effect.scoped, Effect.provide(Layer.fresh(Sessions)))
      })
    ))

  it.effect("a flush of thousands of events, some of megabytes, is one transaction of several statements", () =>
    withDatabase((url) =>
      persisted(url, Effect.gen(function*() {
        const session = yield* create("big")
        yield* appendMany(session, 2500)
        for (let i = 0; i < 3; i++) yield* text(session, `${i}`.repeat(2 * 1024 * 1024))
        yield* flush(session)
        const loaded = yield* readBack(url, "big")
        expect(loaded.events).toHaveLength(2503)
        expect(loaded.events).toStrictEqual(yield* session.events)
      }))
    ))

  it.effect("a row that does not decode is CORRUPT_LOG naming the table, the session and its seq", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        yield* persisted(url, Effect.flatMap(create("c"), (s) => Effect.andThen(appendMany(s, 2), flush(s))))
        yield* query(
          url,
          `INSERT INTO ${PgSessions.eventsTable} (session_id, seq, type, time, event, writer) VALUES ('c', 2, 'user/message', 0, '{"type":"user/mess', $1)`,
          [crypto.randomUUID()]
        )
        const error = yield* Effect.flip(readBack(url, "c"))
        expect(error._tag).toBe("CorruptLogError")
        if (error._tag !== "CorruptLogError") return
        expect(error.code).toBe("CORRUPT_LOG")
        expect(error.file).toBe("dsh_session_events[\"c\"]")
        expect(error.line).toBe(2)
        expect(error.message).toContain("not JSON")
        expect((yield* Effect.flip(persisted(url, resume("c")))).code).toBe("CORRUPT_LOG")
      })
    ))
})

describe("PgSessions: session ids", () => {
  it.effect("quotes, backslashes, unicode and long ids are stored, listed, loaded and resumed as they are", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        const ids = ["it's \"quoted\"; DROP TABLE dsh_sessions; --", "back\\slash", "ünï ✓ 🎉", "a/b?c#d", "x".repeat(2000)]
        yield* persisted(url, Effect.forEach(ids, (id) => Effect.flatMap(create(id), (s) => Effect.andThen(appendMany(s, 1), flush(s)))))
        const listed = yield* persisted(url, Effect.flatMap(PgSessions.PgSessions, (pg) => pg.list))
        expect(listed.map((entry) => entry.id)).toStrictEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)))
        for (const id of ids) {
          expect((yield* readBack(url, id)).events).toHaveLength(1)
          expect(yield* persisted(url, Effect.flatMap(resume(id), ({ session }) => session.seq))).toBe(1)
        }
      })
    ))

  it.effect("an id PostgreSQL cannot keep (a NUL, a lone surrogate) is PERSISTENCE naming why; two such ids never share a log", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        for (const [id, why] of [["nul\u0000id", "NUL"], ["lone\ud800", "lone surrogate"], ["lone\udfff", "lone surrogate"]] as const) {
          const refused = yield* persisted(url, Effect.flatMap(create(id), (s) => Effect.andThen(appendMany(s, 1), Effect.flip(flush(s)))))
          expect(refused.code).toBe("PERSISTENCE")
          expect(refused.message).toContain(why)
          expect((yield* Effect.flip(readBack(url, id))).message).toContain(why)
          expect((yield* Effect.flip(persisted(url, resume(id)))).message).toContain(why)
        }
        // nothing was written under the replacement character either id would have become
        expect(yield* persisted(url, Effect.flatMap(PgSessions.PgSessions, (pg) => pg.list))).toStrictEqual([])
      })
    ))
})

describe("PgSessions: a writer process killed mid-turn", () => {
  it.live("SIGKILL while a tool runs: its lock goes with its connection; resume closes the turn before handing the session back", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        // the child migrates the fresh database itself
        const child = spawn(process.execPath, [join(import.meta.dirname, "fixtures", "writer-child.ts"), url, "killed"], {
          stdio: ["ignore", "pipe", "pipe"]
        })
        let stderr = ""
        child.stderr.setEncoding("utf8").on("data", (data: string) => (stderr += data))
        const exited = once(child, "exit")
        yield* Effect.promise(() =>
          new Promise<void>((resolve, reject) => {
            let out = ""
            child.stdout.setEncoding("utf8").on("data", (data: string) => {
              out += data
              if (out.includes("flushed\n")) resolve()
            })
            void exited.then(() => reject(new Error(`the writer exited before it flushed; stderr:\n${stderr}`)))
          })
        ).pipe(Effect.timeout("20 seconds"), Effect.orDie)
        expect((yield* persisted(url, Effect.flip(resume("killed")))).code).toBe("SESSION_LOCKED")
        child.kill("SIGKILL")
        const [, signal] = yield* Effect.promise(() => exited)
        expect(signal).toBe("SIGKILL")

        // the server sees the connection close and frees the lock: bounded wait
        const resumed = yield* persisted(url, Effect.gen(function*() {
          let attempt = yield* Effect.result(resume("killed"))
          for (let i = 0; i < 400 && attempt._tag === "Failure" && attempt.failure.code === "SESSION_LOCKED"; i++) {
            yield* Effect.sleep("10 millis")
            attempt = yield* Effect.result(resume("killed"))
          }
          if (attempt._tag === "Failure") return yield* Effect.die(attempt.failure)
          return { repairs: attempt.success.repairs, events: yield* attempt.success.session.events }
        }))
        expect(resumed.repairs.map((r) => r.kind)).toStrictEqual(["interrupted-turn"])
        expect(resumed.events.slice(5).map((e) => e.type)).toStrictEqual(["session/repair", "tool/result", "step/end", "turn/end"])
        expect(resumed.events[6]!.data).toMatchObject({ isError: true, error: { code: "TOOL_OUTCOME_UNKNOWN" } })
        expect((yield* readBack(url, "killed")).events).toStrictEqual(resumed.events)
      })
    ), 60_000)
})
