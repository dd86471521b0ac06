/**
 * The agent entity's handlers in one process (effect/cluster's in-memory test client, which
 * calls the handlers directly: no storage deduplicates a request by its primary key here), on
 * a fresh PostgreSQL database: a message delivered again (a redelivery after a lost reply) is
 * acknowledged from the log and not given to the agent twice; a one-call turn delivered again
 * is answered from the log; one whose turn ended without answering is `TURN_INTERRUPTED`; the
 * model never sees the message id blocks; an agent the host cannot create answers every call with
 * its typed refusal; a hosted agent resumes its session from the database.
 */
import { AgentEntity, AgentHost, TurnInterruptedError } from "@dsh/cluster"
import { AgentHooks } from "@dsh/agent"
import { AgentLoop } from "@dsh/loop"
import { Model, ScriptedModel } from "@dsh/model"
import { SystemPrompt } from "@dsh/prompt"
import { FlushCheckpoint, SessionStore } from "@dsh/session"
import { PgSessions } from "@dsh/sql-sessions"
import { ToolRegistry } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Stream } from "effect"
import { Entity, ShardingConfig } from "effect/cluster"
import { client, freshDatabase } from "../../../scripts/postgres-fixture.ts"
import { messageIdsOf } from "../src/internal/host.ts"
import { waitUntil } from "./fixtures/cluster.ts"

const { reply } = ScriptedModel

/** The agent graph of one "process": the loop over the scripted model, sessions in the database at `url`. */
const graph = (url: string, script: ReadonlyArray<ScriptedModel.Reply>) => {
  const model = ScriptedModel.layer({ script }).pipe(Layer.provideMerge(Model.layer), Layer.orDie)
  const sessions = PgSessions.layer().pipe(Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)))
  return AgentLoop.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(model, sessions, ToolRegistry.layer, SystemPrompt.layer, AgentHooks.layer)),
    Layer.provideMerge(client(url)),
    Layer.orDie
  )
}

/** The host on that graph. */
const host = (url: string, script: ReadonlyArray<ScriptedModel.Reply>) =>
  AgentHost.layer({ model: "scripted" }).pipe(Layer.provideMerge(graph(url, script)))

const testClient = (url: string, script: ReadonlyArray<ScriptedModel.Reply>) =>
  Effect.gen(function*() {
    const layer = host(url, script)
    const clientFor = yield* Entity.makeTestClient(AgentEntity.AgentEntity, layer)
    return clientFor
  }).pipe(Effect.provide(ShardingConfig.layer()))

const storedIds = (url: string, sessionId: string) =>
  PgSessions.PgSessions.use((pg) => Effect.map(pg.load(sessionId), (loaded) => loaded.events.flatMap(messageIdsOf))).pipe(
    Effect.provide(PgSessions.layer().pipe(
      Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)),
      Layer.provide(client(url))
    ))
  )

describe("AgentHost", () => {
  it.live("a message delivered again is acknowledged from the log, not sent twice", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const agent = yield* Effect.flatMap(testClient(url, [reply.text("one")]), (clientFor) => clientFor("s-dup"))
      const first = yield* agent.Send({ messageId: "m-1", input: "hello" })
      const again = yield* agent.Send({ messageId: "m-1", input: "hello" })
      expect(first).toStrictEqual({ seq: 3, duplicate: false })
      expect(again).toStrictEqual({ seq: 3, duplicate: true })
      // acknowledged = committed: another reader of the database sees it already
      expect(yield* storedIds(url, "s-dup")).toStrictEqual(["m-1"])
    }).pipe(Effect.scoped))

  it.live("a steer and an inject are acknowledged once committed, each logged once", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const agent = yield* Effect.flatMap(testClient(url, [reply.text("steered")]), (clientFor) => clientFor("s-steer"))
      const context = yield* agent.Inject({ messageId: "i-1", input: "context", source: "ci" })
      // idle: a steer starts a turn, as a send does
      const steer = yield* agent.Steer({ messageId: "t-1", input: "go" })
      const steerAgain = yield* agent.Steer({ messageId: "t-1", input: "go" })
      expect(context.duplicate).toBe(false)
      expect(steer.duplicate).toBe(false)
      expect(steerAgain).toStrictEqual({ seq: steer.seq, duplicate: true })
      expect(steer.seq).toBeGreaterThan(context.seq)
      expect(yield* storedIds(url, "s-steer")).toStrictEqual(["i-1", "t-1"])
    }).pipe(Effect.scoped))

  it.live("a one-call turn delivered again is answered from the log; the model never sees the ids", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const layer = host(url, [reply.text("the answer")])
      const result = yield* Effect.gen(function*() {
        const clientFor = yield* Entity.makeTestClient(AgentEntity.AgentEntity, layer)
        const agent = yield* clientFor("s-run")
        const first = yield* agent.Run({ messageId: "r-1", input: "question" })
        // a second delivery: the script has nothing left, so a second model call would die
        const again = yield* agent.Run({ messageId: "r-1", input: "question" })
        return { first, again }
      }).pipe(Effect.provide(ShardingConfig.layer()))
      expect(result.first.text).toBe("the answer")
      expect(result.again).toStrictEqual(result.first)
      expect(yield* storedIds(url, "s-run")).toStrictEqual(["r-1"])
    }).pipe(Effect.scoped))

  it.live("the model's requests carry no message id block", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      // built once, so that the test reads the requests of the very model the host calls
      const context = yield* Layer.build(graph(url, [reply.text("a"), reply.text("b")]))
      const requests = yield* Effect.gen(function*() {
        const clientFor = yield* Entity.makeTestClient(
          AgentEntity.AgentEntity,
          AgentHost.layer({ model: "scripted" }).pipe(Layer.provide(Layer.succeedContext(context)))
        )
        const agent = yield* clientFor("s-model")
        yield* agent.Run({ messageId: "r-1", input: "first" })
        yield* agent.Inject({ messageId: "i-1", input: "some context" })
        yield* agent.Run({ messageId: "r-2", input: "second" })
        return yield* ScriptedModel.ScriptedModel.use((scripted) => scripted.requests)
      }).pipe(Effect.provideContext(context), Effect.provide(ShardingConfig.layer()))
      expect(requests.length).toBe(2)
      const blocks = requests.flatMap((request) => [...request.messages].flatMap((message) => message.content))
      expect(blocks.filter((block) => block.type === "custom")).toStrictEqual([])
      expect(blocks.filter((block) => block.type === "text").map((block) => (block as { text: string }).text)).toContain("second")
      expect(yield* storedIds(url, "s-model")).toStrictEqual(["r-1", "i-1", "r-2"])
    }).pipe(Effect.scoped))

  it.live("a one-call turn whose turn ended without answering is TURN_INTERRUPTED when delivered again", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const layer = host(url, [reply.hangAt(reply.text("never"), 0)])
      const error = yield* Effect.gen(function*() {
        const clientFor = yield* Entity.makeTestClient(AgentEntity.AgentEntity, layer)
        const agent = yield* clientFor("s-abort")
        const running = yield* Effect.forkChild(Effect.flip(agent.Run({ messageId: "r-1", input: "question" })))
        yield* waitUntil("the turn runs", Effect.map(agent.Status(), (status) => status.status === "running"))
        yield* agent.Abort({ reason: "stop" })
        const first = yield* Fiber.join(running)
        expect(first._tag).toBe("TurnAbortedError")
        return yield* Effect.flip(agent.Run({ messageId: "r-1", input: "question" }))
      }).pipe(Effect.provide(ShardingConfig.layer()))
      expect(error).toBeInstanceOf(TurnInterruptedError)
      expect(error).toMatchObject({ code: "TURN_INTERRUPTED", turn: 1, reason: { kind: "aborted" } })
    }).pipe(Effect.scoped))

  it.live("an agent the host cannot create answers every call with its INVALID_INPUT, typed", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const refusals = yield* Effect.gen(function*() {
        const clientFor = yield* Entity.makeTestClient(
          AgentEntity.AgentEntity,
          AgentHost.layer({ model: "scripted", maxSteps: 0 }).pipe(Layer.provideMerge(graph(url, [reply.text("never")])))
        )
        const agent = yield* clientFor("s-refused")
        return [
          yield* Effect.flip(agent.Send({ messageId: "m-1", input: "hello" })),
          yield* Effect.flip(agent.Run({ messageId: "r-1", input: "hello" })),
          yield* Effect.flip(agent.Status()),
          yield* Effect.flip(Stream.runDrain(agent.Events({ from: 0 })))
        ]
      }).pipe(Effect.provide(ShardingConfig.layer()))
      for (const refusal of refusals) {
        expect(refusal).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
        expect(refusal.message).toContain("maxSteps")
      }
    }).pipe(Effect.scoped))

  it.live("a hosted agent resumes its session from the database", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const sendOnce = (script: ReadonlyArray<ScriptedModel.Reply>, messageId: string) =>
        Effect.gen(function*() {
          const clientFor = yield* Entity.makeTestClient(AgentEntity.AgentEntity, host(url, script))
          const agent = yield* clientFor("s-resume")
          const reply = yield* agent.Run({ messageId, input: messageId })
          return reply.turn
        }).pipe(Effect.provide(ShardingConfig.layer()), Effect.scoped)
      expect(yield* sendOnce([reply.text("one")], "first")).toBe(1)
      // a second "process" on the same database: turn 2 of the same session
      expect(yield* sendOnce([reply.text("two")], "second")).toBe(2)
      expect(yield* storedIds(url, "s-resume")).toStrictEqual(["first", "second"])
    }).pipe(Effect.scoped))
})
