/**
 * Abort and disposal: mid-stream, between tool calls, during a parallel batch, and disposal
 * mid-turn. Whatever stops a step after the model asked for tools, every call of the logged
 * assistant message is announced and answered exactly once (`ABORTED` when it did not finish);
 * the invariants check it for every scenario.
 */
import { AgentDisposedError, AgentHooks } from "@dsh/agent"
import { History } from "@dsh/llm"
import { ScriptedModel } from "@dsh/model"
import { Tool } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Schema, Scope } from "effect"
import {
  create,
  echo,
  endReasons,
  type Event,
  type Gate,
  gatedTool,
  kinds,
  makeGate,
  ofType,
  register,
  requests,
  run,
  statuses,
  TestLayer,
  textOf,
  turnEvents,
  waitFor
} from "./helpers.ts"

const { reply } = ScriptedModel

const peek = Tool.make("peek", {
  description: "Reads a file",
  parameters: Schema.Struct({ path: Schema.String }),
  concurrencySafe: true,
  execute: ({ path }) => Effect.succeed(`contents of ${path}`)
})

const resultsOf = (events: ReadonlyArray<Event>) =>
  ofType(events, "tool/result").map((e) => ({ callId: e.data.callId, code: e.data.error?.code, text: textOf(e.data.content) }))

describe("abort", () => {
  it.effect("mid-stream: the partial answer is kept, the turn ends aborted, the agent goes on", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* agent.send("think about it")
      yield* waitFor(agent.session, "assistant/chunk", (e) => e.data.chunk.type === "text-delta")
      yield* agent.abort("user pressed stop")
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      expect(kinds(turnEvents(events, 1))).toStrictEqual([
        "turn/start",
        "user/message",
        "step/start",
        "model/request",
        "assistant/message",
        "step/end",
        "turn/end"
      ])
      expect(textOf(ofType(events, "assistant/message")[0]!.data.content)).toBe("Let me think")
      expect(endReasons(events)).toStrictEqual([{ kind: "aborted", reason: "user pressed stop" }])
      expect(yield* agent.status).toBe("idle")
      // abort when idle is a no-op; the next message gets a normal turn
      yield* agent.abort()
      yield* run(agent, "again")
      expect(endReasons(yield* agent.session.events)[1]).toStrictEqual({ kind: "completed" })
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          // block-start, the text delta, block-end, block-start of the call, then the stream hangs
          reply.hangAt(reply.toolCalls([{ name: "echo", arguments: { text: "x" } }], { text: "Let me think" }), 4),
          reply.text("ok")
        ]
      }))
    ))

  it.effect("at step/start, before the step's fiber exists: the step is interrupted as soon as it starts", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* agent.send("go")
      yield* waitFor(agent.session, "step/start")
      yield* agent.abort()
      yield* agent.awaitIdle
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "aborted" }])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.hangAt(reply.text("never"), 0)] }))))

  it.effect("between tool calls: the finished call keeps its result, the running and the pending ones are ABORTED", () =>
    Effect.gen(function*() {
      const gates = { slow: yield* makeGate }
      yield* register(gatedTool("slow", gates))
      const agent = yield* create()
      yield* agent.send("do three things")
      // unsafe calls run one at a time: the first has finished when the second starts
      yield* Deferred.await(gates.slow.started)
      yield* agent.abort("enough")
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      expect(kinds(turnEvents(events, 1))).toStrictEqual([
        "turn/start",
        "user/message",
        "step/start",
        "model/request",
        "assistant/message",
        "tool/call",
        "tool/result",
        "tool/call",
        "tool/result",
        "tool/call",
        "tool/result",
        "step/end",
        "turn/end"
      ])
      expect(resultsOf(events)).toStrictEqual([
        { callId: "call_1", code: undefined, text: "echo: first" },
        { callId: "call_2", code: "ABORTED", text: "Tool \"slow\" was aborted before it finished: enough" },
        { callId: "call_3", code: "ABORTED", text: "Tool \"echo\" was aborted before it finished: enough" }
      ])
      expect(endReasons(events)).toStrictEqual([{ kind: "aborted", reason: "enough" }])
      expect(yield* requests).toHaveLength(1)
      // the derived history is one a provider accepts: every call answered right after its message
      const history = yield* agent.session.messages
      expect(History.toArray(history).map((m) => m.content.map((b) => b.type).join(","))).toStrictEqual([
        "text",
        "tool-call,tool-call,tool-call",
        "tool-result",
        "tool-result",
        "tool-result"
      ])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([
            { name: "echo", arguments: { text: "first" } },
            { name: "slow", arguments: { id: "slow" } },
            { name: "echo", arguments: { text: "third" } }
          ])
        ]
      }))
    ))

  it.effect("a parallel batch: concurrency-safe calls run together and their results are logged in call order", () =>
    Effect.gen(function*() {
      const gates: Record<string, Gate> = { a: yield* makeGate, b: yield* makeGate }
      const finished: Array<string> = []
      yield* register(gatedTool("probe", gates, { concurrencySafe: true, finished }))
      const agent = yield* create()
      yield* agent.send("probe a and b")
      // both bodies started, and neither can finish before it is released: they run concurrently
      yield* Deferred.await(gates["a"]!.started)
      yield* Deferred.await(gates["b"]!.started)
      expect(finished).toStrictEqual([])
      // nothing is answered while the batch runs
      expect(ofType(yield* agent.session.events, "tool/result")).toStrictEqual([])
      // b finishes first, and still nothing is answered: results wait for the whole batch
      yield* Deferred.succeed(gates["b"]!.release, undefined)
      yield* Deferred.await(gates["b"]!.done)
      expect(ofType(yield* agent.session.events, "tool/result")).toStrictEqual([])
      yield* Deferred.succeed(gates["a"]!.release, undefined)
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      expect(finished).toStrictEqual(["b", "a"])
      // yet a's result is logged first: results are logged in call order
      expect(resultsOf(events).map((r) => r.text)).toStrictEqual(["probe a done", "probe b done"])
      // both calls were announced before either ran
      const turn = kinds(turnEvents(events, 1))
      expect(turn.slice(turn.indexOf("tool/call"), turn.lastIndexOf("tool/result") + 1)).toStrictEqual([
        "tool/call",
        "tool/call",
        "tool/result",
        "tool/result"
      ])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([
            { name: "probe", arguments: { id: "a" } },
            { name: "probe", arguments: { id: "b" } }
          ]),
          reply.text("done")
        ]
      }))
    ))

  it.effect("unsafe calls run one at a time, in order", () =>
    Effect.gen(function*() {
      const gates: Record<string, Gate> = { a: yield* makeGate, b: yield* makeGate }
      const finished: Array<string> = []
      yield* register(gatedTool("write", gates, { finished }))
      const agent = yield* create()
      yield* agent.send("write a and b")
      yield* Deferred.await(gates["a"]!.started)
      expect(yield* Deferred.isDone(gates["b"]!.started)).toBe(false)
      yield* Deferred.succeed(gates["b"]!.release, undefined)
      yield* Deferred.succeed(gates["a"]!.release, undefined)
      yield* agent.awaitIdle
      expect(finished).toStrictEqual(["a", "b"])
      expect(kinds(turnEvents(yield* agent.session.events, 1)).filter((k) => k.startsWith("tool/"))).toStrictEqual([
        "tool/call",
        "tool/result",
        "tool/call",
        "tool/result"
      ])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([
            { name: "write", arguments: { id: "a" } },
            { name: "write", arguments: { id: "b" } }
          ]),
          reply.text("done")
        ]
      }))
    ))

  it.effect("abort during a parallel batch interrupts every call; each gets an ABORTED result", () =>
    Effect.gen(function*() {
      const gates: Record<string, Gate> = { a: yield* makeGate, b: yield* makeGate, c: yield* makeGate }
      const finished: Array<string> = []
      yield* register(gatedTool("probe", gates, { concurrencySafe: true, finished }))
      yield* register(gatedTool("write", gates, { finished }))
      const agent = yield* create()
      yield* agent.send("probe, then write")
      yield* Deferred.await(gates["a"]!.started)
      yield* Deferred.await(gates["b"]!.started)
      yield* agent.abort("cancelled")
      yield* agent.awaitIdle
      // releasing now changes nothing: the bodies were interrupted
      yield* Deferred.succeed(gates["a"]!.release, undefined)
      yield* Deferred.succeed(gates["b"]!.release, undefined)
      const events = yield* agent.session.events
      expect(finished).toStrictEqual([])
      expect(yield* Deferred.isDone(gates["c"]!.started)).toBe(false)
      expect(resultsOf(events).map((r) => [r.callId, r.code])).toStrictEqual([
        ["call_1", "ABORTED"],
        ["call_2", "ABORTED"],
        ["call_3", "ABORTED"]
      ])
      expect(ofType(events, "tool/call").map((e) => e.data.callId)).toStrictEqual(["call_1", "call_2", "call_3"])
      expect(endReasons(events)).toStrictEqual([{ kind: "aborted", reason: "cancelled" }])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([
            { name: "probe", arguments: { id: "a" } },
            { name: "probe", arguments: { id: "b" } },
            { name: "write", arguments: { id: "c" } }
          ])
        ]
      }))
    ))

  for (const type of ["tool/call", "tool/result"] as const) {
    it.effect(
      `a listener that aborts on the first ${type} of a batch: every call is still announced once and answered once`,
      () =>
        Effect.gen(function*() {
          const hooks = yield* AgentHooks
          yield* hooks.listeners.register({
            name: "stop-on-first",
            around: (input, next) =>
              Effect.andThen(next(input), input.event.type === type ? input.agent.abort("seen enough") : Effect.void)
          })
          const agent = yield* create()
          yield* run(agent, "peek twice")
          const events = yield* agent.session.events
          expect(ofType(events, "tool/call").map((e) => e.data.callId)).toStrictEqual(["call_1", "call_2"])
          expect(resultsOf(events).map((r) => [r.callId, r.code])).toStrictEqual(
            type === "tool/call"
              // aborted while the calls were being announced: neither ran
              ? [["call_1", "ABORTED"], ["call_2", "ABORTED"]]
              // aborted after the batch ran: the second result is kept, not replaced
              : [["call_1", undefined], ["call_2", undefined]]
          )
          expect(endReasons(events)).toStrictEqual([{ kind: "aborted", reason: "seen enough" }])
        }).pipe(
          Effect.scoped,
          Effect.provide(TestLayer({
            tools: [peek],
            script: [
              reply.toolCalls([{ name: "peek", arguments: { path: "a" } }, { name: "peek", arguments: { path: "b" } }]),
              reply.text("never asked")
            ]
          }))
        )
    )
  }

  it.effect("messages queued during an aborted turn are served next", () =>
    Effect.gen(function*() {
      const gates = { hold: yield* makeGate }
      yield* register(gatedTool("slow", gates))
      const agent = yield* create()
      yield* agent.send("first")
      yield* Deferred.await(gates.hold.started)
      yield* agent.send("queued")
      yield* agent.steer("steered")
      yield* agent.abort()
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      expect(endReasons(events)).toStrictEqual([{ kind: "aborted" }, { kind: "completed" }])
      // the steering came too late for the aborted turn: it opens the next one with the queued message
      expect(ofType(turnEvents(events, 2), "user/message").map((e) => textOf(e.data.content))).toStrictEqual([
        "queued",
        "steered"
      ])
      expect(statuses(events, agent.id)).toStrictEqual(["idle", "running", "idle"])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.toolCalls([{ name: "slow", arguments: { id: "hold" } }]), reply.text("next")]
      }))
    ))

  it.effect("steering that came too late keeps its place: steered before a queued message, it comes first", () =>
    Effect.gen(function*() {
      const gates = { hold: yield* makeGate }
      yield* register(gatedTool("slow", gates))
      const agent = yield* create()
      yield* agent.send("first")
      yield* Deferred.await(gates.hold.started)
      yield* agent.steer("be brief")
      yield* agent.send("queued")
      yield* agent.abort()
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      expect(ofType(turnEvents(events, 2), "user/message").map((e) => textOf(e.data.content))).toStrictEqual([
        "be brief",
        "queued"
      ])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.toolCalls([{ name: "slow", arguments: { id: "hold" } }]), reply.text("next")]
      }))
    ))
})

describe("disposal", () => {
  it.effect("mid-stream: the turn ends disposed, the status goes to disposed, nothing is appended after", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const agent = yield* create().pipe(Scope.provide(scope))
      yield* agent.send("go")
      yield* waitFor(agent.session, "assistant/chunk", (e) => e.data.chunk.type === "text-delta")
      yield* Scope.close(scope, Exit.void)
      const events = yield* agent.session.events
      expect(kinds(events)).toStrictEqual([
        "agent/status",
        "agent/status",
        "turn/start",
        "user/message",
        "step/start",
        "model/request",
        "assistant/message",
        "step/end",
        "turn/end",
        "agent/status"
      ])
      expect(endReasons(events)).toStrictEqual([{ kind: "disposed" }])
      expect(statuses(events, agent.id)).toStrictEqual(["idle", "running", "disposed"])
      expect(yield* agent.status).toBe("disposed")
      expect(yield* agent.session.closed).toBe(true)
      const refused = yield* Effect.flip(agent.send("anyone there?"))
      expect(refused).toBeInstanceOf(AgentDisposedError)
      expect(refused.code).toBe("AGENT_DISPOSED")
      expect((yield* Effect.flip(agent.steer("x"))).code).toBe("AGENT_DISPOSED")
      expect((yield* Effect.flip(agent.inject("x"))).code).toBe("AGENT_DISPOSED")
      yield* agent.awaitIdle
      expect(yield* agent.session.events).toHaveLength(events.length)
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.hangAt(reply.text("thinking hard"), 2)] }))))

  it.effect("mid-tool: the running call is interrupted and answered ABORTED before the turn ends disposed", () =>
    Effect.gen(function*() {
      const gates: Record<string, Gate> = { a: yield* makeGate, b: yield* makeGate }
      const finished: Array<string> = []
      yield* register(gatedTool("probe", gates, { concurrencySafe: true, finished }))
      const scope = yield* Scope.make()
      const agent = yield* create().pipe(Scope.provide(scope))
      yield* agent.send("probe")
      yield* Deferred.await(gates["a"]!.started)
      yield* Deferred.await(gates["b"]!.started)
      // a body that finished before the disposal keeps its result; one that did not is ABORTED
      yield* Deferred.succeed(gates["a"]!.release, undefined)
      yield* Effect.yieldNow
      yield* Scope.close(scope, Exit.void)
      yield* Deferred.succeed(gates["b"]!.release, undefined)
      const events = yield* agent.session.events
      const results = resultsOf(events)
      expect(results.map((r) => r.callId)).toStrictEqual(["call_1", "call_2"])
      expect(results[1]!.code).toBe("ABORTED")
      expect(results[0]!.code === undefined ? finished.includes("a") : results[0]!.code === "ABORTED").toBe(true)
      expect(finished).not.toContain("b")
      expect(endReasons(events)).toStrictEqual([{ kind: "disposed" }])
      expect(events.at(-1)!.data).toStrictEqual({ agentId: agent.id, status: "disposed" })
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([
            { name: "probe", arguments: { id: "a" } },
            { name: "probe", arguments: { id: "b" } }
          ])
        ]
      }))
    ))

  it.effect("while idle: the status goes to disposed and awaitIdle returns", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const agent = yield* create().pipe(Scope.provide(scope))
      yield* run(agent, "hi")
      yield* Scope.close(scope, Exit.void)
      yield* agent.awaitIdle
      expect(statuses(yield* agent.session.events, agent.id)).toStrictEqual(["idle", "running", "idle", "disposed"])
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "completed" }])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("hello")], tools: [echo] }))))
})
