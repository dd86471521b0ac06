/**
 * The stores the contract suite runs against, each behind the suite's `Persisted` service: the
 * JSONL store of @dsh/session (a fresh temporary directory per test) and the PostgreSQL store
 * (a fresh database per test on the tests' server).
 */
import { FlushCheckpoint, JsonlSessions, SessionStore } from "@dsh/session"
import { PgSessions } from "@dsh/sql-sessions"
import { Effect, Layer } from "effect"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { client, freshDatabase } from "../fixtures/postgres.ts"
import { Persisted, type Store } from "./suite.ts"

const Core = Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)

/** `JsonlSessions` over a temporary directory. */
export const jsonl: Store = {
  name: "JsonlSessions",
  storage: Effect.gen(function*() {
    const directory = yield* Effect.acquireRelease(
      Effect.promise(() => mkdtemp(join(tmpdir(), "dsh-contract-"))),
      (directory) => Effect.promise(() => rm(directory, { recursive: true, force: true }))
    )
    const adapter = Layer.effect(
      Persisted,
      Effect.map(JsonlSessions.JsonlSessions, (jsonl) =>
        Persisted.of({
          resume: jsonl.resume,
          load: (id) => Effect.map(jsonl.load(id), (loaded) => ({ createdAt: loaded.header.createdAt, events: loaded.events })),
          list: Effect.map(jsonl.list, (entries) =>
            entries.map(({ createdAt, events, id, lastActivity }) => ({ id, events, createdAt, lastActivity })))
        }))
    )
    return {
      layer: adapter.pipe(Layer.provideMerge(JsonlSessions.layer({ directory })), Layer.provideMerge(Core), Layer.orDie),
      names: (id: string) => join(directory, JsonlSessions.fileName(id))
    }
  })
}

/** `PgSessions` over a fresh database; every layer built is a writer with a client of its own. */
export const postgres: Store = {
  name: "PgSessions",
  storage: Effect.gen(function*() {
    const url = yield* freshDatabase
    const adapter = Layer.effect(
      Persisted,
      Effect.map(PgSessions.PgSessions, (pg) => Persisted.of({ resume: pg.resume, load: pg.load, list: pg.list }))
    )
    return {
      layer: adapter.pipe(
        Layer.provideMerge(PgSessions.layer()),
        Layer.provideMerge(Core),
        Layer.provide(client(url)),
        Layer.orDie
      ),
      names: (id: string) => JSON.stringify(id)
    }
  })
}
