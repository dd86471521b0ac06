/**
 * What a user can get wrong through `ClusterClient`, on a runner and a client in this process
 * (as the README example), on a fresh database of the test PostgreSQL: each call ends in a
 * typed `INVALID_INPUT` at once — never a defect, never a call left waiting on an entity the
 * cluster retries for ever. A message the protocol cannot carry (a block of no known type, an
 * empty message id: possible past the types) is refused before it is sent (so are events from
 * a negative seq, checked every 0 ms), and every call for
 * a session id the cluster cannot carry as it is (a NUL, a lone surrogate); a session id no
 * session may have (the empty one) is refused by the runner, for every call. A database that
 * cannot be reached fails the runner's and the client's build with its `SqlError`, typed. And a
 * turn that fails on the runner reaches the caller of `run` as its own typed error, over the wire.
 */
import { ClusterClient, ClusterRunner } from "@dsh/cluster"
import { type Content, LlmError } from "@dsh/llm"
import { ScriptedModel } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, References, Stream } from "effect"
import { freshDatabase, serverUrl } from "../../../scripts/postgres-fixture.ts"
import { freePort, inProcessRunner, testSharding } from "./fixtures/cluster.ts"

describe("ClusterClient: what a user gets wrong ends in INVALID_INPUT", () => {
  it.live("a malformed message is refused before it is sent; the empty session id is refused by the runner, for every call", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const port = yield* Effect.promise(() => freePort())
      yield* Effect.gen(function*() {
        const agent = yield* ClusterClient.agent("s")
        const unknownBlock = [{ type: "no-such-block", text: "hi" }] as unknown as ReadonlyArray<Content.ContentBlock>
        const malformed = [
          yield* Effect.flip(agent.send(unknownBlock)),
          yield* Effect.flip(agent.run(unknownBlock)),
          yield* Effect.flip(agent.inject("context", { messageId: "" })),
          yield* Effect.flip(agent.steer("go", { source: 42 as unknown as string })),
          yield* Effect.flip(Stream.runDrain(agent.events(-1))),
          yield* Effect.flip(Stream.runDrain(agent.events(0, { checkEvery: 0 })))
        ]
        for (const refused of malformed) {
          expect(refused).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT", agentId: "s" })
        }
        // a message past what a runner's storage reads would stall the shard's mailbox for good
        const huge = yield* Effect.flip(agent.inject("x".repeat(ClusterClient.maxMessageBytes)))
        expect(huge).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT", agentId: "s" })
        expect(huge.message).toContain(`more than the ${ClusterClient.maxMessageBytes} a cluster message may hold`)
        // message ids the cluster would store as another id: refused before they are sent
        for (const messageId of ["nul\u0000id", "x\ud800"]) {
          const refused = yield* Effect.flip(agent.inject("context", { messageId }))
          expect(refused).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT", agentId: "s" })
          expect(refused.message).toContain(messageId.includes("\u0000") ? "its messageId holds a NUL" : "its messageId holds a lone surrogate")
        }
        // nothing reached the agent: its log holds the one message sent after
        expect((yield* agent.run("hello")).text).toBe("fine")
        // an id an inject took already is no run's: refused, where it once hung the session for good
        yield* agent.inject("context", { messageId: "m1" })
        const reused = yield* Effect.flip(agent.run("question", { messageId: "m1" }))
        expect(reused).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT", agentId: "s" })
        expect(reused.message).toMatch(/^the run of message "m1" to session "s" was refused: that id is taken already by the context\/message at seq \d+/)
        // a reason past the types is described, not a defect of the protocol
        yield* agent.abort(42 as unknown as string)
        expect((yield* agent.run("hello again")).text).toBe("fine too")
        expect((yield* agent.status).nextSeq).toBeGreaterThan(0)

        // ids the cluster cannot carry as they are: refused by the client, nothing sent
        for (const id of ["nul\u0000id", "lone\ud800"]) {
          const unaddressable = yield* ClusterClient.agent(id)
          for (
            const refused of [
              yield* Effect.flip(unaddressable.send("hello")),
              yield* Effect.flip(unaddressable.run("hello")),
              yield* Effect.flip(unaddressable.status),
              yield* Effect.flip(Stream.runDrain(unaddressable.events(0)))
            ]
          ) {
            expect(refused).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT", agentId: id })
            expect(refused.message).toContain(id.includes("\u0000") ? "NUL" : "lone surrogate")
          }
        }
        // longer than the storage keeps, or no string at all (past the types)
        const long = yield* Effect.flip((yield* ClusterClient.agent("a".repeat(ClusterClient.maxSessionIdLength + 1))).run("hello"))
        expect(long).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
        expect(long.message).toContain(`256 characters long, more than the 255`)
        const numbered = yield* Effect.flip((yield* ClusterClient.agent(42 as unknown as string)).send("hello"))
        expect(numbered).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT", agentId: "42" })
        // the id it would have become holds nothing: as fresh as an agent never written to
        const fresh = (yield* (yield* ClusterClient.agent("never-written")).status).nextSeq
        expect((yield* (yield* ClusterClient.agent("lone\ufffd")).status).nextSeq).toBe(fresh)
        // the longest id the storage keeps addresses an agent like any other
        expect((yield* (yield* ClusterClient.agent("a".repeat(ClusterClient.maxSessionIdLength))).status).nextSeq).toBe(fresh)

        const nameless = yield* ClusterClient.agent("")
        const refusals = [
          yield* Effect.flip(nameless.run("hello")),
          yield* Effect.flip(nameless.send("hello")),
          yield* Effect.flip(nameless.status),
          yield* Effect.flip(Stream.runDrain(nameless.events(0)))
        ]
        for (const refused of refusals) {
          expect(refused).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
          // named by the session the caller addressed, not by the agent's own fresh id
          expect(refused.message).toMatch(/^the agent of session "" cannot be created: session\.id must be a non-empty string/)
        }
      }).pipe(
        Effect.provide(inProcessRunner(database, port, [ScriptedModel.reply.text("fine"), ScriptedModel.reply.text("fine too")])),
        Effect.provideService(References.MinimumLogLevel, "Error")
      )
    }).pipe(Effect.scoped))
})

describe("ClusterRunner, ClusterClient: options past their types", () => {
  it.effect("fail the build with CONFIG_INVALID naming each, before anything starts", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.layer({ script: [] })
      const runner = (options: Record<string, unknown>) =>
        Effect.flip(Layer.build(ClusterRunner.layer({
          database: "postgres://dsh@127.0.0.1:1/dsh",
          address: { host: "127.0.0.1", port: 1 },
          model,
          agent: { model: "scripted" },
          ...options
        } as unknown as ClusterRunner.Options<never, never, never>)).pipe(Effect.scoped))
      for (const [options, named] of [
        [{ address: { host: "127.0.0.1", port: -1 } }, "address.port must be an integer from 0 to 65535, got -1"],
        [{ address: { host: "127.0.0.1", port: "abc" } }, `address.port must be an integer from 0 to 65535, got "abc"`],
        [{ address: undefined }, "address must be { host, port }, got nothing"],
        [{ database: 42 }, "database must be a PostgreSQL URL (text or Redacted text), got 42"],
        [{ agent: undefined }, "agent must be the options of the hosted agents"],
        [{ model: undefined }, "model must be a Layer"],
        [{ sharding: { shardsPerGroup: 0 } }, "sharding.shardsPerGroup must be an integer ≥ 1, got 0"],
        [{ sharding: { shardsPerGroup: -5 } }, "sharding.shardsPerGroup must be an integer ≥ 1, got -5"],
        [{ sharding: { shardLockExpiration: 0 } }, "sharding.shardLockExpiration"],
        [{ sharding: { entityMessagePollInterval: "banana" } }, "sharding.entityMessagePollInterval"],
        [{ sharding: { shardsPerGruop: 3 } }, `sharding has "shardsPerGruop", which is no option`],
        [{ adress: {} }, `the options object has "adress", which is no option`]
      ] as const) {
        const error = yield* runner(options)
        expect(error).toMatchObject({ _tag: "ClusterConfigError", code: "CONFIG_INVALID" })
        expect(error.message).toContain("the cluster runner was not started: ")
        expect(error.message).toContain(named)
      }
      for (const [options, named] of [
        [undefined, "the options must be { database, sharding? }, got nothing"],
        [{ database: 42 }, "database must be a PostgreSQL URL"],
        [{ database: "postgres://dsh@127.0.0.1:1/dsh", sharding: { shardsPerGroup: 0 } }, "sharding.shardsPerGroup must be an integer ≥ 1"]
      ] as const) {
        const error = yield* Effect.flip(Layer.build(ClusterClient.layer(options as unknown as ClusterClient.Options)).pipe(Effect.scoped))
        expect(error).toMatchObject({ _tag: "ClusterConfigError", code: "CONFIG_INVALID" })
        expect(error.message).toContain(named)
      }
    }))
})

describe("ClusterRunner: host settings that cannot be used", () => {
  it.live("a lockWait or maxIdleTime that is no duration: every call is refused with INVALID_INPUT naming it, the process lives", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const port = yield* Effect.promise(() => freePort())
      const runner = ClusterRunner.layer({
        database,
        address: { host: "127.0.0.1", port },
        model: ScriptedModel.layer({ script: [ScriptedModel.reply.text("fine")] }),
        agent: { model: "scripted", lockWait: "banana" as never, maxIdleTime: "soon" as never },
        sharding: testSharding
      })
      yield* Effect.gen(function*() {
        const agent = yield* ClusterClient.agent("s")
        for (const refused of [yield* Effect.flip(agent.run("hello")), yield* Effect.flip(agent.status)]) {
          expect(refused).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT", agentId: "s" })
          expect(refused.message).toBe(
            `the agent of session s cannot be created: agent.lockWait must be a duration ("30 seconds", a number of milliseconds), got "banana"`
          )
        }
      }).pipe(Effect.provide(runner), Effect.provideService(References.MinimumLogLevel, "Error"))
    }).pipe(Effect.scoped))
})

describe("ClusterRunner, ClusterClient: a database that cannot be reached", () => {
  it.live("a closed port, an unknown database, a malformed URL: the layer's build fails with SqlError, not a defect", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(() => freePort())
      const closed = new URL(serverUrl())
      closed.port = String(yield* Effect.promise(() => freePort()))
      const unknown = new URL(serverUrl())
      unknown.pathname = "/dsh_no_such_database"
      for (const database of [closed.toString(), unknown.toString(), "not a url"]) {
        const built = [
          yield* Effect.flip(Layer.build(inProcessRunner(database, port)).pipe(Effect.scoped)),
          yield* Effect.flip(Layer.build(ClusterClient.layer({ database, sharding: testSharding })).pipe(Effect.scoped))
        ]
        for (const error of built) expect(error._tag, database).toBe("SqlError")
      }
    }).pipe(Effect.provideService(References.MinimumLogLevel, "None")))
})

describe("ClusterClient: a turn that fails on the runner", () => {
  it.live("reaches the caller of run as the turn's typed error; the next run is served", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const port = yield* Effect.promise(() => freePort())
      const script = [
        ScriptedModel.reply.fail(new LlmError.LlmServerError({ message: "the provider is down", status: 503 })),
        ScriptedModel.reply.text("back")
      ]
      yield* Effect.gen(function*() {
        const agent = yield* ClusterClient.agent("failing")
        const error = yield* Effect.flip(agent.run("hello"))
        expect(error).toBeInstanceOf(LlmError.LlmServerError)
        expect(error).toMatchObject({ code: "LLM_SERVER", message: "the provider is down", status: 503 })
        expect(yield* agent.run("again")).toMatchObject({ turn: 2, text: "back" })
      }).pipe(Effect.provide(inProcessRunner(database, port, script)), Effect.provideService(References.MinimumLogLevel, "Error"))
    }).pipe(Effect.scoped))
})
