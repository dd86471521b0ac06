// The database going away under a live layer, on a real server: every connection of the
// session's database is ended by the server and new ones are refused (what clients see while a
// server restarts or fails over), then the database comes back. What a user must get is a typed
// failure, promptly, and no event lost: the next flush after the outage commits everything.
import { FlushCheckpoint, SessionStore } from "@dsh/session"
import { PgSessions } from "@dsh/sql-sessions"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
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
