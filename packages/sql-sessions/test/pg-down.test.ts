// The database going away under a live layer, on a real server: every connection of the
// session's database is ended by the server and new ones are refused (what clients see while a
// server restarts or fails over), then the database comes back; every connection ended in the
// middle of a flush's transaction; and a database that cannot be reached at all. What a user must get is a typed
// failure, promptly, and no event lost: the next flush after the outage commits everything.
import { FlushCheckpoint, SessionStore } from "@dsh/session"
import { PgSessions } from "@dsh/sql-sessions"
import { describe, expect, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { appendMany, create, flush, text } from "./contract/suite.ts"
import { client, freshDatabase, serverUrl, withClient } from "./fixtures/postgres.ts"

const Core = Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)
const Live = (url: string) => PgSessions.layer().pipe(Layer.provideMerge(Core), Layer.provide(client(url)), Layer.orDie)

/** Runs SQL as the server's superuser on its own database (the session's may refuse connections). */
const onServer = (text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.orDie(withClient(serverUrl(), (sql) => sql.unsafe(text, params)))

const nameOf = (url: string) => new URL(url).pathname.slice(1)

/** The database refuses new connections and every connection it has is ended. */
const down = (url: string) =>
  Effect.gen(function*() {
    const name = nameOf(url)
    yield* onServer(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`)
    yield* onServer("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name])
  })

const up = (url: string) => onServer(`ALTER DATABASE ${nameOf(url)} ALLOW_CONNECTIONS true`)

describe("PgSessions: the database goes down and comes back", () => {
  it.live("a flush during the outage is PERSISTENCE; the first flush after it commits every event, in order", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* Effect.orDie(freshDatabase)
      yield* Effect.gen(function*() {
        const session = yield* create("s")
        yield* appendMany(session, 2)
        yield* flush(session)

        yield* down(url)
        yield* text(session, "during the outage")
        const failed = yield* Effect.flip(flush(session))
        expect(failed.code).toBe("PERSISTENCE")

        yield* up(url)
        yield* text(session, "after it")
        yield* flush(session)
        const loaded = yield* (yield* PgSessions.PgSessions).load("s")
        expect(loaded.events.map((e) => e.seq)).toStrictEqual([0, 1, 2, 3])
        expect(loaded.events.map((e) => e.data)).toMatchObject([
          { content: [{ text: "m0" }] },
          { content: [{ text: "m1" }] },
          { content: [{ text: "during the outage" }] },
          { content: [{ text: "after it" }] }
        ])
        // the writer lock went with the ended connection; the flush took it again: one writer still
        const other = yield* Effect.flip(
          Effect.gen(function*() {
            return yield* (yield* PgSessions.PgSessions).resume("s")
          }).pipe(Effect.scoped, Effect.provide(Layer.fresh(Live(url))))
        )
        expect(other.code).toBe("SESSION_LOCKED")
      }).pipe(Effect.scoped, Effect.provide(Layer.fresh(Live(url))))
    })))
})

describe("PgSessions: used after its Layer closed", () => {
  it.live("list, load and resume fail with PERSISTENCE saying so, and a flush does not claim success", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* Effect.orDie(freshDatabase)
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(Layer.fresh(Live(url)), scope)
      const pg = Context.get(context, PgSessions.PgSessions)
      const store = Context.get(context, SessionStore)
      const session = yield* store.create({ id: "before" }).pipe(Scope.provide(scope))
      yield* Scope.close(scope, Exit.void)
      const closed = "the PgSessions Layer is closed (its scope ended, and its connections with it)"
      const refusals: ReadonlyArray<Effect.Effect<unknown, { readonly code: string; readonly message: string }>> = [
        pg.list,
        pg.load("before"),
        Effect.scoped(pg.resume("before"))
      ]
      for (const refused of refusals) {
        const error = yield* Effect.flip(refused)
        expect(error.code).toBe("PERSISTENCE")
        expect(error.message).toContain(closed)
      }
      const flushed = yield* Effect.flip(Context.get(context, FlushCheckpoint).flush(session))
      expect(flushed.code).toBe("PERSISTENCE")
    })))
})

/**
 * A trigger that ends every connection of the database when a flush inserts an event, its own
 * connection last, in the middle of the flush's transaction: what a server restart does to a
 * flush in flight. Dropped with `disarm`.
 */
const endConnectionsMidFlush = (url: string) =>
  Effect.orDie(withClient(url, (sql) =>
    Effect.andThen(
      sql.unsafe(`CREATE FUNCTION dsh_test_end_connections() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid();
  PERFORM pg_terminate_backend(pg_backend_pid());
  RETURN NEW;
END
$$`),
      sql.unsafe(`CREATE TRIGGER dsh_test_end_connections BEFORE INSERT ON ${PgSessions.eventsTable}
  FOR EACH ROW EXECUTE FUNCTION dsh_test_end_connections()`)
    )))

const disarm = (url: string) =>
  Effect.orDie(withClient(url, (sql) => sql.unsafe(`DROP TRIGGER dsh_test_end_connections ON ${PgSessions.eventsTable}`)))

describe("PgSessions: every connection ends in the middle of a flush", () => {
  it.live("the flush fails with PERSISTENCE, not a defect; the next one takes the writer lock again and commits every event", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* Effect.orDie(freshDatabase)
      yield* Effect.gen(function*() {
        const session = yield* create("s")
        yield* appendMany(session, 2)
        yield* flush(session)

        yield* endConnectionsMidFlush(url)
        yield* text(session, "cut off")
        const failed = yield* Effect.flip(flush(session))
        expect(failed.code).toBe("PERSISTENCE")
        // the ROLLBACK on the broken connection fails too: still the flush's typed failure
        expect(failed.message).not.toContain("died")
        expect(failed.message).toContain("cannot write session")
        yield* disarm(url)

        yield* text(session, "after it")
        yield* flush(session)
        const loaded = yield* (yield* PgSessions.PgSessions).load("s")
        expect(loaded.events.map((e) => e.data)).toMatchObject([
          { content: [{ text: "m0" }] },
          { content: [{ text: "m1" }] },
          { content: [{ text: "cut off" }] },
          { content: [{ text: "after it" }] }
        ])
        // the writer lock went with its connection; the flush took it again
        const other = yield* Effect.flip(
          Effect.gen(function*() {
            return yield* (yield* PgSessions.PgSessions).resume("s")
          }).pipe(Effect.scoped, Effect.provide(Layer.fresh(Live(url))))
        )
        expect(other.code).toBe("SESSION_LOCKED")
      }).pipe(Effect.scoped, Effect.provide(Layer.fresh(Live(url))))
    })))
})

describe("PgSessions: a database that cannot be reached", () => {
  // the client's pool connects when first used, so the client's own layer is built either way
  const build = (url: string, options?: PgSessions.Options) =>
    PgSessions.layer(options).pipe(Layer.provideMerge(Core), Layer.provide(Layer.orDie(PgClient.layer({ url: Redacted.make(url) }))))

  it.effect("a closed port, an unknown database or role, a malformed URL: PERSISTENCE when the layer is built, or at first use with migrate: false", () =>
    Effect.gen(function*() {
      const closed = new URL(serverUrl())
      closed.port = "1"
      const database = new URL(serverUrl())
      database.pathname = "/dsh_no_such_database"
      const role = new URL(serverUrl())
      role.username = "dsh_no_such_role"
      for (const [url, says] of [
        [closed.toString(), "ECONNREFUSED"],
        [database.toString(), "dsh_no_such_database"],
        [role.toString(), "dsh_no_such_role"],
        ["not a url", "URL"]
      ] as const) {
        const atBuild = yield* Effect.flip(Layer.build(build(url)).pipe(Effect.scoped))
        expect(atBuild.code, url).toBe("PERSISTENCE")
        expect(atBuild.message).toContain("cannot migrate")
        expect(atBuild.message).toContain(says)
        const atUse = yield* Effect.flip(PgSessions.PgSessions.use((pg) => pg.list).pipe(Effect.provide(build(url, { migrate: false }))))
        expect(atUse.code, url).toBe("PERSISTENCE")
        expect(atUse.message).toContain(says)
      }
    }))

  it.effect("options that are no object, or a migrate that is no boolean: PERSISTENCE before anything is migrated", () =>
    Effect.gen(function*() {
      for (const [options, says] of [[null, "got null"], [{ migrate: "no" }, `got migrate "no"`]] as const) {
        const error = yield* Effect.flip(Layer.build(build("not a url", options as never)).pipe(Effect.scoped))
        expect(error.code).toBe("PERSISTENCE")
        expect(error.message).toBe(`PgSessions.layer: the options must be an object whose migrate is true or false, ${says}`)
      }
    }))

  it.effect("a database whose tables were made by someone else: the migration fails with PERSISTENCE naming the table", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* Effect.orDie(freshDatabase)
      yield* Effect.orDie(withClient(url, (sql) => sql.unsafe(`CREATE TABLE ${PgSessions.sessionsTable} (id int)`)))
      const error = yield* Effect.flip(Layer.build(build(url)).pipe(Effect.scoped))
      expect(error.code).toBe("PERSISTENCE")
      expect(error.message).toContain(`"${PgSessions.sessionsTable}" already exists`)
    })))
})
