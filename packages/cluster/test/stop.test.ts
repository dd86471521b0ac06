/**
 * A runner stopped gracefully (its layer's scope closed: what SIGTERM does to a runner process)
 * while a one-call turn runs on it, with a second runner in the cluster; both runners and the
 * client in this process, on a fresh database of the test PostgreSQL. The stopping runner ends
 * the turn and flushes the session; the `run` is delivered again to the next owner, which finds
 * its message in the log and answers `TURN_INTERRUPTED`; the next `run` is served there.
 */
import { ClusterClient, TurnInterruptedError } from "@dsh/cluster"
import { ScriptedModel } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, References, Scope } from "effect"
import { freshDatabase } from "../../../scripts/postgres-fixture.ts"
import { freePort, inProcessRunner, testSharding, waitUntil } from "./fixtures/cluster.ts"

const { reply } = ScriptedModel

describe("agents on Effect Cluster: a runner stops mid-turn", () => {
  it.live("the run's caller gets TURN_INTERRUPTED from the next owner; the next run is served there", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const [portA, portB] = yield* Effect.promise(() => Promise.all([freePort(), freePort()]))
      const first = yield* Scope.make()
      yield* Layer.buildWithScope(Layer.fresh(inProcessRunner(database, portA, [reply.hangAt(reply.text("never"), 0)])), first)
      yield* Effect.gen(function*() {
        const agent = yield* ClusterClient.agent("stopped")
        const running = yield* Effect.forkChild(Effect.flip(agent.run("a question")))
        yield* waitUntil("the turn runs on the first runner", Effect.map(agent.status, (s) => s.status === "running"))

        yield* Layer.build(Layer.fresh(inProcessRunner(database, portB, [reply.text("from the second runner")])))
        yield* Scope.close(first, Exit.void)

        const error = yield* Fiber.join(running)
        expect(error).toBeInstanceOf(TurnInterruptedError)
        // the stop interrupted the run's handler first: its turn ended aborted, and was committed
        expect(error).toMatchObject({ code: "TURN_INTERRUPTED", sessionId: "stopped", turn: 1, reason: { kind: "aborted" } })
        const next = yield* agent.run("again")
        expect(next).toMatchObject({ turn: 2, text: "from the second runner", reason: { kind: "completed" } })
        expect((yield* agent.status).runner).toBe(`127.0.0.1:${portB}`)
      }).pipe(Effect.provide(ClusterClient.layer({ database, sharding: testSharding })))
    }).pipe(Effect.scoped, Effect.provideService(References.MinimumLogLevel, "Error")), 60_000)
})
