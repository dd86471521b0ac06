/**
 * The agent handle as its README documents it, where an audit found it wrong: steering that
 * arrives during a turn's last step, `events` and `statusChanges` ending at the disposal (also
 * on a session that outlives its agent), an abort reason past the types, and `create` given a
 * session or options of another shape. Every scenario waits on events and Deferreds, never on
 * time, and runs under the invariants.
 */
import { type Agent, Agents, TurnResult } from "@dsh/agent"
import { Tool } from "@dsh/tools"
import { ScriptedModel } from "@dsh/model"
import { SessionStore } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Schema, Scope, Stream } from "effect"
import { create, endReasons, type Event, type Gate, gatedTool, makeGate, ofType, TestLayer, textOf, turnEvents } from "./helpers.ts"

const { reply } = ScriptedModel

/** What was said in a turn: its user messages and steering, by their text. */
const said = (events: ReadonlyArray<Event>, turn: number) =>
  turnEvents(events, turn).flatMap((e) =>
    e.type === "user/message"
      ? [`user: ${textOf(e.data.content)}`]
      : e.type === "steering/message"
      ? [`steering: ${textOf(e.data.content)}`]
      : []
  )

/** Steers while the turn's last step runs its tool, then lets the tool finish. */
const steerDuringTool = (gate: Gate, steer: Effect.Effect<void, unknown>) =>
  Effect.andThen(Deferred.await(gate.started), Effect.andThen(steer, Deferred.succeed(gate.release, undefined)))

describe("steering that arrives during a turn's last step", () => {
  const answering: Record<string, Gate> = {}
  it.effect("during the step that gives the typed answer: the next turn's message, answered there", () =>
    Effect.gen(function*() {
      answering["g"] = yield* makeGate
      const agent = yield* create()
      const running = yield* Effect.forkChild(agent.run("q", { output: Schema.Struct({ a: Schema.Number }) }), { startImmediately: true })
      yield* steerDuringTool(answering["g"], agent.steer("and one more thing"))
      expect((yield* Fiber.join(running)).output).toStrictEqual({ a: 1 })
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      // the answering turn logs no steering that no step of it would answer: the next turn takes it
      expect(said(events, 1)).toStrictEqual(["user: q"])
      expect(said(events, 2)).toStrictEqual(["user: and one more thing"])
      expect(ofType(events, "turn/start").map((e) => e.data.trigger)).toStrictEqual(["send", "steer"])
      expect(endReasons(events).map((r) => r.kind)).toStrictEqual(["completed", "completed"])
      expect(yield* ScriptedModel.ScriptedModel.use((m) => m.remaining)).toBe(0)
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([{ name: "gate", arguments: { id: "g" } }, { name: "final_answer", arguments: { a: 1 } }]),
          reply.text("about that one more thing")
        ],
        tools: [gatedTool("gate", answering)]
      }))
    ))

  const limited: Record<string, Gate> = {}
  it.effect("during the last step maxSteps allows: the turn ends at its limit, the steering opens the next", () =>
    Effect.gen(function*() {
      limited["g"] = yield* makeGate
      const agent = yield* create({ maxSteps: 1 })
      const running = yield* Effect.forkChild(agent.run("q"), { startImmediately: true })
      yield* steerDuringTool(limited["g"], agent.steer("and one more thing"))
      expect(yield* Effect.flip(Fiber.join(running))).toBeInstanceOf(TurnResult.TurnLimitError)
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      expect(said(events, 1)).toStrictEqual(["user: q"])
      expect(said(events, 2)).toStrictEqual(["user: and one more thing"])
      expect(endReasons(events).map((r) => r.kind)).toStrictEqual(["limit", "completed"])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.toolCalls([{ name: "gate", arguments: { id: "g" } }]), reply.text("about that one more thing")],
        tools: [gatedTool("gate", limited)]
      }))
    ))
})

describe("events and statusChanges end at the disposal", () => {
  it.effect("on a session that outlives its agent: a subscriber's stream ends with the disposed status; one after it ends at once", () =>
    Effect.gen(function*() {
      // a session owned by the test's scope, like one a store's resume returns
      const session = yield* SessionStore.use((store) => store.create({ id: "outlives" }))
      const scope = yield* Scope.make()
      const agent = yield* create({ session: { resume: session } }).pipe(Scope.provide(scope))
      const subscribed = yield* Effect.forkChild(Stream.runCollect(agent.events), { startImmediately: true })
      const statuses = yield* Effect.forkChild(Stream.runCollect(agent.statusChanges), { startImmediately: true })
      yield* agent.run("hello")
      yield* Scope.close(scope, Exit.void)
      const seen = yield* Fiber.join(subscribed)
      expect(seen.map((e) => e.type)).toContain("turn/end")
      expect(seen.at(-1)).toMatchObject({ type: "agent/status", data: { agentId: agent.id, status: "disposed" } })
      const changes = yield* Fiber.join(statuses)
      expect([changes[0], changes.at(-1)]).toStrictEqual(["idle", "disposed"])
      // the session goes on (it is the test's); the agent's streams do not
      expect(yield* session.closed).toBe(false)
      expect(yield* Stream.runCollect(agent.events)).toStrictEqual([])
      expect(yield* Stream.runCollect(agent.statusChanges)).toStrictEqual(["disposed"])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("hi")] }))))
})

describe("run returns to a settled agent", () => {
  it.effect("after run, the status is idle, and a disposal right after it still sees the idle change", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const agent = yield* create().pipe(Scope.provide(scope))
      const statuses = yield* Effect.forkChild(Stream.runCollect(agent.statusChanges), { startImmediately: true })
      expect((yield* agent.run("hello")).text).toBe("hi")
      expect(yield* agent.status).toBe("idle")
      // a failed run too
      const failed = yield* Effect.flip(agent.run("again"))
      expect(failed.code).toBe("SCRIPT_EXHAUSTED")
      expect(yield* agent.status).toBe("idle")
      yield* Scope.close(scope, Exit.void)
      expect(yield* Fiber.join(statuses)).toStrictEqual(["idle", "running", "idle", "running", "idle", "disposed"])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("hi")] }))))

  it.effect("with a message queued behind its turn, run returns as that next turn starts, not after it", () =>
    Effect.gen(function*() {
      const a = yield* makeGate
      const b = yield* makeGate
      yield* Effect.gen(function*() {
        const agent = yield* create()
        const first = yield* Effect.forkChild(agent.run("first"), { startImmediately: true })
        yield* Deferred.await(a.started)
        // queued while the first turn runs its gated tool: the next turn's
        const second = yield* Effect.forkChild(agent.run("second"), { startImmediately: true })
        yield* Deferred.succeed(a.release, undefined)
        // the second turn holds at its own gate while the first run returns
        const one = yield* Fiber.join(first)
        expect([one.turn, one.text]).toStrictEqual([1, "one"])
        expect(yield* agent.status).toBe("running")
        yield* Deferred.await(b.started)
        yield* Deferred.succeed(b.release, undefined)
        const two = yield* Fiber.join(second)
        expect([two.turn, two.text]).toStrictEqual([2, "two"])
      }).pipe(Effect.scoped, Effect.provide(TestLayer({
        tools: [gatedTool("gated", { a, b })],
        script: [
          reply.toolCalls([{ name: "gated", arguments: { id: "a" } }]),
          reply.text("one"),
          reply.toolCalls([{ name: "gated", arguments: { id: "b" } }]),
          reply.text("two")
        ]
      })))
    }))
})

describe("the handle and create past the types", () => {
  it.effect("an abort reason that is no string is described: the log stays valid, TurnAbortedError carries it", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const running = yield* Effect.forkChild(agent.run("q"), { startImmediately: true })
      yield* agent.abort({ message: "changed my mind" } as never)
      const failed = yield* Effect.flip(Fiber.join(running))
      expect(failed).toBeInstanceOf(TurnResult.TurnAbortedError)
      expect(failed).toMatchObject({ code: "ABORTED", reason: "changed my mind" })
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "aborted", reason: "changed my mind" }])
      expect((yield* agent.run("again")).text).toBe("fine")
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("fine")] }))))

  it.effect("create refuses a resume or a fork that is no session, and options that are no object: INVALID_INPUT", () =>
    Effect.gen(function*() {
      for (const [key, value] of [["resume", {}], ["resume", null], ["fork", { id: "s" }], ["fork", undefined]] as const) {
        const refused = yield* Effect.flip(create({ session: { [key]: value } as never }))
        expect(refused).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
        expect(refused.message).toContain(`session.${key} must be a session`)
      }
      for (const options of [null, 42, "scripted"]) {
        const refused = yield* Effect.flip(Agents.use((agents) => agents.create(options as never)))
        expect(refused).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
        expect(refused.message).toContain("its options must be an object")
      }
    }).pipe(Effect.scoped, Effect.provide(TestLayer())))
})

describe("agents that run each other", () => {
  const agents: Record<string, Agent.Agent> = {}
  // a tool that runs another agent's turn and answers with its text, or the code it failed with
  const ask = Tool.make("ask", {
    description: "Asks another agent",
    parameters: Schema.Struct({ who: Schema.String }),
    execute: ({ who }) =>
      agents[who]!.run(`a question from a tool`).pipe(
        Effect.map((result) => result.text),
        Effect.catch((error) => Effect.succeed(`refused: ${error.code}`))
      )
  })

  it.effect("A's tool runs B, B's tool runs A back: refused at once with INVALID_INPUT, not a deadlock", () =>
    Effect.gen(function*() {
      agents["a"] = yield* create({ id: "a", session: { id: "a" } })
      agents["b"] = yield* create({ id: "b", session: { id: "b" } })
      const result = yield* agents["a"].run("start")
      expect(result.text).toBe("a is done")
      expect(result.toolCalls.map((t) => textOf(t.result.content))).toStrictEqual(["b is done"])
      // B's call back into A, which waits for B's turn, was refused
      const asked = ofType(yield* agents["b"].session.events, "tool/result").map((e) => textOf(e.data.content))
      expect(asked).toStrictEqual(["refused: INVALID_INPUT"])
      // A on its own, from outside, is served as ever
      expect((yield* agents["a"].run("again")).text).toBe("served")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([{ name: "ask", arguments: { who: "b" } }]), // a, turn 1
          reply.toolCalls([{ name: "ask", arguments: { who: "a" } }]), // b, asked by a's tool
          reply.text("b is done"),
          reply.text("a is done"),
          reply.text("served")
        ],
        tools: [ask]
      }))
    ))
})
