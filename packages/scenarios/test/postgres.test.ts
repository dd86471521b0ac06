/**
 * Agents on sessions kept in PostgreSQL (issue #20): the loop over `PgSessions`, on a real
 * server (the vitest globalSetup starts a throw-away one unless DSH_PG_URL names one) and a
 * database of the test's own. An agent resumed in a later "process" (a layer, a pool and a
 * writer lock of its own) continues the same rows with the whole history; while one holds a
 * session, another's resume is SESSION_LOCKED. (A writer killed mid-turn: packages/sql-sessions'
 * pg.test.ts.)
 */
import { Agents } from "@dsh/agent"
import { History } from "@dsh/llm"
import { AgentLoop } from "@dsh/loop"
import { ScriptedModel } from "@dsh/model"
import { FlushCheckpoint, SessionStore } from "@dsh/session"
import { PgSessions } from "@dsh/sql-sessions"
import { Testing } from "@dsh/testing"
import { Tools } from "@dsh/tools"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { echo, endReasons, ofType, requests, run, textOf } from "./helpers.ts"

const { reply } = ScriptedModel

const server = (): URL => {
  const url = process.env["DSH_PG_URL"]
  if (url === undefined || url === "") throw new Error(`no PostgreSQL: ${process.env["DSH_PG_UNAVAILABLE"] ?? "DSH_PG_URL is not set"}`)
  return new URL(url)
}

const pool = (url: URL) => PgClient.layer({ url: Redacted.make(url.toString()), applicationName: "dsh-scenarios" })

/** Runs one statement on the server's own database. */
const onServer = (statement: string) =>
  Effect.scoped(Effect.flatMap(Layer.build(pool(server())), (context) => Context.get(context, SqlClient.SqlClient).unsafe(statement)))

/** A database of this test's own, dropped when the scope closes: its URL. */
const database = Effect.acquireRelease(
  Effect.gen(function*() {
    const name = `dsh_scenario_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`
    yield* onServer(`CREATE DATABASE ${name}`)
    const url = server()
    url.pathname = `/${name}`
    return { name, url }
  }),
  ({ name }) => Effect.orDie(onServer(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
).pipe(Effect.orDie)

/** What one process has: the loop over the test layer, its sessions in the database at `url`. */
const ProcessLayer = (url: URL, script: ReadonlyArray<ScriptedModel.Reply>) =>
  AgentLoop.layer.pipe(
    Layer.provideMerge(Tools.layer(echo).pipe(Layer.orDie)),
    Layer.provideMerge(PgSessions.layer().pipe(Layer.provide(pool(url)), Layer.orDie)),
    Layer.provideMerge(Testing.layer({ script }))
  )

/**
 * Another process that only reads and resumes sessions: the store and its pool, no agents
 * (fresh: provided inside another process's scope, a memoized SessionStore.layer would be that
 * process's store).
 */
const StoreLayer = (url: URL) =>
  PgSessions.layer().pipe(
    Layer.provideMerge(Layer.fresh(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer))),
    Layer.provide(pool(url)),
    Layer.orDie
  )

describe("#20 agents on PostgreSQL sessions", () => {
  it.effect("a later process resumes the session: same id and rows, the whole history sent, seq continuing", () =>
    Effect.gen(function*() {
      const { url } = yield* database
      yield* Effect.gen(function*() {
        const agent = yield* (yield* Agents).create({ model: "scripted", session: { id: "work" } })
        yield* run(agent, "first question")
      }).pipe(Effect.scoped, Effect.provide(ProcessLayer(url, [reply.toolCalls([{ name: "echo", arguments: { text: "x" } }]), reply.text("first answer")])))

      const events = yield* Effect.gen(function*() {
        const pg = yield* PgSessions.PgSessions
        const { repairs, session } = yield* pg.resume("work")
        expect(repairs).toStrictEqual([])
        const agent = yield* (yield* Agents).create({ model: "scripted", session: { resume: session } })
        yield* run(agent, "second question")
        const [request] = yield* requests
        expect(History.toArray(request!.messages).map((m) => m.role)).toStrictEqual(["user", "assistant", "user", "assistant", "user"])
        return yield* agent.session.events
      }).pipe(Effect.scoped, Effect.provide(ProcessLayer(url, [reply.text("second answer")])))

      // what a third process reads from the database is what the second logged
      const loaded = yield* Effect.gen(function*() {
        return yield* (yield* PgSessions.PgSessions).load("work")
      }).pipe(Effect.scoped, Effect.provide(StoreLayer(url)))
      expect(loaded.events.map((e) => e.seq)).toStrictEqual(loaded.events.map((_, i) => i))
      // and the agent's disposal after it
      expect(loaded.events.slice(0, events.length)).toStrictEqual(events)
      expect(loaded.events.slice(events.length).map((e) => e.type)).toStrictEqual(["agent/status"])
      expect(ofType(loaded.events, "user/message").map((e) => textOf(e.data.content))).toStrictEqual(["first question", "second question"])
      expect(endReasons(loaded.events).map((r) => r.kind)).toStrictEqual(["completed", "completed"])
    }).pipe(Effect.scoped))

  it.effect("while one process drives a session another's resume is SESSION_LOCKED; after it lets go, the resume succeeds", () =>
    Effect.gen(function*() {
      const { url } = yield* database
      yield* Effect.gen(function*() {
        const agent = yield* (yield* Agents).create({ model: "scripted", session: { id: "shared" } })
        yield* run(agent, "hello")
        // another process: a layer, a pool and a writer lock of its own
        const held = yield* Effect.gen(function*() {
          return yield* (yield* PgSessions.PgSessions).resume("shared")
        }).pipe(Effect.scoped, Effect.provide(StoreLayer(url)), Effect.flip)
        expect(held.code).toBe("SESSION_LOCKED")
      }).pipe(Effect.scoped, Effect.provide(ProcessLayer(url, [reply.text("hi")])))

      const { repairs } = yield* Effect.gen(function*() {
        return yield* (yield* PgSessions.PgSessions).resume("shared")
      }).pipe(Effect.scoped, Effect.provide(StoreLayer(url)))
      expect(repairs).toStrictEqual([])
    }).pipe(Effect.scoped))
})
