/**
 * Agents on Effect Cluster, across processes (issue #20): two runner processes (spawned with
 * node, sources through the @dsh/source condition) and a client in this process, on 127.0.0.1,
 * on a fresh database of the test PostgreSQL. 20 sessions receive messages; the runner whose
 * model hangs (so its turns are in flight) is killed with SIGKILL mid-turn, with messages
 * queued behind those turns; its agents move to the survivor, resume from the database with
 * the interrupted turns closed, and serve the next messages. Then: every session is idle on
 * the survivor, every acknowledged message is in its log exactly once, and the invariants hold
 * on every stored log. Every wait is on a condition (bounded), never a fixed sleep.
 */
import { ClusterClient } from "@dsh/cluster"
import { Rules } from "@dsh/invariants"
import { FlushCheckpoint, type SessionEvent, SessionStore } from "@dsh/session"
import { PgSessions } from "@dsh/sql-sessions"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { freshDatabase } from "../../../scripts/postgres-fixture.ts"
import { messageIdsOf } from "../src/internal/host.ts"
import { freePort, type RunnerProcess, spawnRunner, testSharding, waitUntil } from "./fixtures/cluster.ts"

const SESSIONS = 20

/** A runner process for the test's scope: SIGKILLed at the end if still alive. */
const runner = (options: Parameters<typeof spawnRunner>[0]) =>
  Effect.acquireRelease(
    Effect.sync(() => spawnRunner(options)),
    (r) =>
      Effect.promise(() => {
        if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGKILL")
        return r.exited
      })
  )

const ready = (r: RunnerProcess) => Effect.promise(() => r.ready)

/** The sessions' stored logs, read back through PgSessions (another reader of the database). */
const storedLogs = (database: string, ids: ReadonlyArray<string>) =>
  Effect.forEach(ids, (id) => PgSessions.PgSessions.use((pg) => Effect.map(pg.load(id), (loaded) => [id, loaded.events] as const))).pipe(
    Effect.map((entries) => new Map(entries)),
    Effect.provide(
      PgSessions.layer().pipe(
        Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)),
        Layer.provide(ClusterClient.layer({ database, sharding: testSharding }))
      )
    )
  )

// every rule of the event contract over a stored log, but data-frozen: that one is about the
// events a live session hands out (ADR 0010), not about rows decoded afresh from the database
const violationsOf = (events: ReadonlyArray<SessionEvent.SessionEvent>) => {
  const checker = Rules.make({ frozen: "off" })
  return events.flatMap((event) => checker.push(event).map((v) => `${v.rule} at ${v.seq} (${v.type}): ${v.message}`))
}

describe("agents on Effect Cluster: failover", () => {
  it.live("a runner killed mid-turn: its agents resume on the survivor; nothing acknowledged is lost or doubled", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const [portA, portB] = yield* Effect.promise(() => Promise.all([freePort(), freePort()]))
      // A's model never answers: its turns are in flight when it dies. B answers after 20 ms.
      const a = yield* runner({ database, port: portA!, latencyMs: 0, hang: true })
      const b = yield* runner({ database, port: portB!, latencyMs: 20 })
      yield* Effect.all([ready(a), ready(b)], { concurrency: 2 })

      const body = Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // both runners hold shards before any message (no handoff in the middle of the test)
        yield* waitUntil(
          "both runners hold all the shards between them",
          Effect.map(
            sql<{ readonly locks: number; readonly holders: number }>`
              SELECT count(*)::int AS locks, count(DISTINCT pid)::int AS holders FROM pg_locks
              WHERE locktype = 'advisory' AND granted AND objsubid = 2
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
            ([row]) => row!.locks === testSharding.shardsPerGroup && row!.holders === 2
          )
        )

        const ids = Array.from({ length: SESSIONS }, (_, i) => `session-${i}`)
        const agents = yield* Effect.forEach(ids, (id) => ClusterClient.agent(id))
        const acked = new Map<string, Array<string>>(ids.map((id) => [id, []]))
        const sent = new Map<string, Array<string>>(ids.map((id) => [id, []]))
        const send = (agent: (typeof agents)[number], text: string, messageId: string = crypto.randomUUID()) => {
          sent.get(agent.sessionId)!.push(messageId)
          return Effect.tap(agent.send(text, { messageId }), () => Effect.sync(() => void acked.get(agent.sessionId)!.push(messageId)))
        }

        // 1. a first message to every session, acknowledged: committed in its log
        yield* Effect.forEach(agents, (agent) => send(agent, "first"), { concurrency: "unbounded" })
        const before = yield* Effect.forEach(agents, (agent) => agent.status)
        const onA = ids.filter((_, i) => before[i]!.runner === a.address)
        const onB = ids.filter((_, i) => before[i]!.runner === b.address)
        expect(onA.length + onB.length).toBe(SESSIONS)
        expect(onA.length).toBeGreaterThan(0)
        expect(onB.length).toBeGreaterThan(0)
        // A's agents are mid-turn (their model hangs)
        expect(before.filter((s) => s.runner === a.address).map((s) => s.status)).toStrictEqual(onA.map(() => "running"))

        // 2. a second message to every session; on A it queues behind the hung turn, unacknowledged
        const secondIds = new Map(ids.map((id) => [id, crypto.randomUUID()]))
        const second = yield* Effect.forkChild(
          Effect.forEach(agents, (agent) => send(agent, "second", secondIds.get(agent.sessionId)!), { concurrency: "unbounded", discard: true })
        )
        // the cluster's storage keys a persisted request by entity, RPC and payload key
        const queuedOnA = onA.map((id) => `DshAgent/${id}/Send/${secondIds.get(id)!}`)
        yield* waitUntil(
          "the second messages of A's sessions are stored in the cluster's mailbox",
          Effect.map(
            sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM cluster_messages WHERE message_id IN ${sql.in(queuedOnA)}`,
            ([row]) => row!.n === queuedOnA.length
          )
        )
        expect(onA.map((id) => acked.get(id)!.length)).toStrictEqual(onA.map(() => 1))

        // a subscriber to a session on A: its stream follows the agent to B
        const follower = yield* Effect.forkChild(
          agents.find((agent) => agent.sessionId === onA[0])!.events(0).pipe(
            Stream.takeUntil((event) => event.type === "session/repair"),
            Stream.runCollect
          )
        )
        // 3. kill A mid-turn
        const killedAt = Date.now()
        a.child.kill("SIGKILL")
        expect(yield* Effect.promise(() => a.exited)).toBe("SIGKILL")

        // the queued messages are delivered on B and acknowledged there
        yield* Fiber.join(second).pipe(Effect.timeout(Duration.seconds(40)))
        const failover = Date.now() - killedAt
        const followed = yield* Fiber.join(follower).pipe(Effect.timeout(Duration.seconds(30)))
        expect(followed.map((event) => event.seq)).toStrictEqual(followed.map((_, i) => i))
        expect(followed.at(-1)?.type).toBe("session/repair")

        // 4. a third message to every session, on B: a one-call turn to half of them
        const runs = yield* Effect.forEach(agents, (agent, i) => {
          if (i % 2 === 1) return Effect.as(send(agent, "third"), undefined)
          const messageId = crypto.randomUUID()
          sent.get(agent.sessionId)!.push(messageId)
          return agent.run("third", { messageId }).pipe(Effect.tap(() => Effect.sync(() => void acked.get(agent.sessionId)!.push(messageId))))
        }, { concurrency: "unbounded" })
        for (const reply of runs) {
          if (reply === undefined) continue
          expect(reply.reason).toStrictEqual({ kind: "completed" })
          expect(reply.text).toMatch(/\(custom blocks seen: 0\)$/)
        }

        yield* waitUntil(
          "every session is idle",
          Effect.map(Effect.forEach(agents, (agent) => agent.status), (all) => all.every((s) => s.status === "idle"))
        )
        const after = yield* Effect.forEach(agents, (agent) => agent.status)
        expect(after.map((s) => s.runner)).toStrictEqual(ids.map(() => b.address))

        // the event stream, from another process: the log from seq 0, the repair of the killed turn in it
        const watched = onA[0]!
        const streamed = yield* (agents.find((agent) => agent.sessionId === watched)!).events(0).pipe(
          Stream.take(after[ids.indexOf(watched)]!.nextSeq),
          Stream.runCollect
        )
        expect(streamed.map((e) => e.seq)).toStrictEqual(streamed.map((_, i) => i))
        expect(streamed.some((e) => e.type === "session/repair")).toBe(true)
        return { ids, onA, acked, sent, failover }
      }).pipe(Effect.provide(ClusterClient.layer({ database, sharding: testSharding })))

      const { acked, failover, ids, onA, sent } = yield* body
      console.log(`failover: ${onA.length} of ${SESSIONS} sessions moved; queued messages acknowledged ${failover} ms after the kill`)

      // 5. stop B gracefully (its sessions are flushed and let go), then read every stored log
      b.child.kill("SIGTERM")
      yield* Effect.promise(() => b.exited)
      const logs = yield* storedLogs(database, ids)
      for (const id of ids) {
        const events = logs.get(id)!
        const logged = events.flatMap(messageIdsOf)
        expect(new Set(logged).size, `${id}: no message is logged twice`).toBe(logged.length)
        for (const messageId of acked.get(id)!) {
          expect(logged.filter((m) => m === messageId).length, `${id}: acknowledged ${messageId} once`).toBe(1)
        }
        // every message sent was acknowledged (none failed), so every one is in the log once
        expect([...acked.get(id)!].sort()).toStrictEqual([...sent.get(id)!].sort())
        expect(violationsOf(events), `${id}: the event contract`).toStrictEqual([])
        const repairs = events.filter((e) => e.type === "session/repair").map((e) => (e.data as { readonly kind: string }).kind)
        expect(repairs, `${id}: the killed turn was closed on resume`).toStrictEqual(onA.includes(id) ? ["interrupted-turn"] : [])
        const ends = events.filter((e) => e.type === "turn/end").map((e) => (e.data as { readonly reason: { readonly kind: string } }).reason.kind)
        if (onA.includes(id)) expect(ends[0]).toBe("interrupted")
        expect(ends.slice(onA.includes(id) ? 1 : 0).every((kind) => kind === "completed")).toBe(true)
      }
    }).pipe(Effect.scoped), 90_000)
})
