/**
 * Hardening: the faults a demanding user hits, one regression test per defect of issue #13
 * (the item number is in each test's name). Every scenario runs under the invariants; none
 * waits on wall-clock time (the abort grace is measured on the TestClock and advanced by the
 * test).
 */
import { AgentHooks } from "@dsh/agent"
import { Content, FinishReason, type HarnessError, History, Ids } from "@dsh/llm"
import { Model, ScriptedModel } from "@dsh/model"
import { FlushCheckpoint, SessionErrors, type SessionEvent, SessionStore } from "@dsh/session"
import { Tool } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Logger, Schema, Scope, Stream, Exit } from "effect"
import { TestClock } from "effect/testing"
import { create, endReasons, type Event, kinds, makeGate, ofType, register, requests, run, statuses, TestLayer, textOf, turnEvents, waitFor } from "./helpers.ts"

const { reply } = ScriptedModel

/** A flush hook whose first flush does not end until the returned Deferred is done, whatever interrupts it: a stuck disk. */
const stallFirstFlush = Effect.gen(function*() {
  const stall = yield* Deferred.make<void>()
  let flushes = 0
  yield* (yield* FlushCheckpoint).register({
    name: "stalled-disk",
    flush: () => (flushes++ === 0 ? Effect.uninterruptible(Deferred.await(stall)) : Effect.void)
  })
  return stall
})

/** Log lines, with a Deferred completed by the first one that contains `awaited`. */
const captureLogs = (awaited: string) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const seen = yield* Deferred.make<void>()
    const logger = Logger.make((options) => {
      const text = Array.isArray(options.message) ? options.message.map(String).join(" ") : String(options.message)
      lines.push(text)
      if (text.includes(awaited)) Deferred.doneUnsafe(seen, Effect.void)
    })
    return { lines, seen, layer: Logger.layer([logger]) }
  })

const resultCodes = (events: ReadonlyArray<Event>) => ofType(events, "tool/result").map((e) => e.data.error?.code)

/** The provider-validity of a derived history: every call answered exactly once, right after its message. */
const expectProviderValid = (history: History.History) => {
  const messages = History.toArray(history)
  messages.forEach((message, i) => {
    const calls = message.content.filter((b) => b.type === "tool-call").map((b) => (b.type === "tool-call" ? b.id : ""))
    expect(new Set(calls).size).toBe(calls.length)
    const answers = messages.slice(i + 1, i + 1 + calls.length).map((m) => m.content[0])
    expect(answers.map((b) => (b?.type === "tool-result" ? b.toolCallId : undefined))).toStrictEqual(calls)
  })
}

describe("#13.1 a listener failing where nothing is left to fail: the agent settles", () => {
  for (const type of ["turn/end", "agent/status"] as const) {
    for (const how of ["throws", "dies", "fails"] as const) {
      it.effect(`a listener that ${how} on ${type}: awaitIdle returns, the next send is served, the failure is recorded`, () =>
        Effect.gen(function*() {
          const hooks = yield* AgentHooks
          yield* hooks.listeners.register({
            name: "fragile-ui",
            around: (input, next) => {
              if (input.event.type !== type) return next(input)
              if (how === "throws") throw new Error("render crashed")
              return how === "dies" ? Effect.die(new Error("render crashed")) : Effect.fail({ message: "render crashed" } as never)
            }
          })
          const agent = yield* create()
          yield* run(agent, "first")
          expect(yield* agent.status).toBe("idle")
          yield* run(agent, "second")
          const events = yield* agent.session.events
          expect(endReasons(events)).toStrictEqual([{ kind: "completed" }, { kind: "completed" }])
          expect(statuses(events, agent.id)).toStrictEqual(["idle", "running", "idle", "running", "idle"])
          const errors = ofType(events, "error")
          expect(errors.length).toBeGreaterThan(0)
          for (const error of errors) {
            expect(error.data.message).toContain(`a listener failed on ${type}`)
            expect(error.data.message).toContain("render crashed")
            expect(error.data.code).toBe(how === "fails" ? "DEFECT" : "MIDDLEWARE")
          }
        }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("one"), reply.text("two")] }))))
    }
  }
})

describe("#13.2 inject with a failing listener", () => {
  it.effect("inject succeeds, the context is logged, the failure is an error event", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      yield* hooks.listeners.register({
        name: "context-spy",
        around: (input, next) => (input.event.type === "context/message" ? Effect.die("spy broke") : next(input))
      })
      const agent = yield* create()
      yield* agent.inject("the cwd is /repo")
      const events = yield* agent.session.events
      expect(ofType(events, "context/message").map((e) => textOf(e.data.content))).toStrictEqual(["the cwd is /repo"])
      expect(ofType(events, "error").map((e) => e.data.code)).toStrictEqual(["MIDDLEWARE"])
      yield* run(agent, "go")
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "completed" }])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("ok")] }))))
})

/** A tool whose body cannot be interrupted: it runs until the test releases it. */
const stubbornTool = (gate: { readonly started: Deferred.Deferred<void>; readonly release: Deferred.Deferred<void> }) =>
  Tool.make("stubborn", {
    description: "Ignores interruption",
    parameters: Schema.Struct({}),
    execute: () =>
      Effect.uninterruptible(
        Deferred.succeed(gate.started, undefined).pipe(Effect.andThen(Deferred.await(gate.release)), Effect.as("finished late"))
      )
  })

/** A tool whose promise ignores the abort signal. */
const deafTool = (started: Deferred.Deferred<void>, finish: { resolve?: (s: string) => void }) =>
  Tool.make("deaf", {
    description: "A promise that ignores its signal",
    parameters: Schema.Struct({}),
    execute: () =>
      Effect.andThen(
        Deferred.succeed(started, undefined),
        Effect.promise(() =>
          new Promise<string>((resolve) => {
            finish.resolve = resolve
          })
        )
      )
  })

describe("#13.3 abort returns within the grace, whatever does not cooperate", () => {
  it.effect("an uninterruptible tool body: the turn ends aborted, the call ABORTED, the late result dropped with a log line", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs("ended after the turn was closed")
      yield* Effect.gen(function*() {
        const gate = yield* makeGate
        yield* register(stubbornTool(gate))
        const agent = yield* create({ abortGrace: "1 second" })
        yield* agent.send("run it")
        yield* Deferred.await(gate.started)
        const aborting = yield* Effect.forkChild(agent.abort("stop"), { startImmediately: true })
        yield* TestClock.adjust("1 second")
        yield* Fiber.join(aborting)
        const events = yield* agent.session.events
        expect(endReasons(events)).toStrictEqual([{ kind: "aborted", reason: "stop" }])
        expect(resultCodes(events)).toStrictEqual(["ABORTED"])
        expect(yield* agent.status).toBe("idle")
        // the body finishes late: nothing reaches the log, a log line says so
        yield* Deferred.succeed(gate.release, undefined)
        yield* Deferred.await(logs.seen)
        expect(yield* agent.session.events).toHaveLength(events.length)
        expect(logs.lines.some((line) => line.includes("did not stop within the abort grace"))).toBe(true)
        // the agent serves the next message
        yield* run(agent, "next")
        expect(endReasons(yield* agent.session.events)[1]).toStrictEqual({ kind: "completed" })
      }).pipe(Effect.provide(logs.layer))
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({ script: [reply.toolCalls([{ name: "stubborn", arguments: {} }]), reply.text("ok")] }))
    ))

  it.effect("a promise that ignores its signal: the abort needs no grace at all", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const finish: { resolve?: (s: string) => void } = {}
      yield* register(deafTool(started, finish))
      const agent = yield* create()
      yield* agent.send("run it")
      yield* Deferred.await(started)
      yield* agent.abort("stop")
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "aborted", reason: "stop" }])
      expect(resultCodes(yield* agent.session.events)).toStrictEqual(["ABORTED"])
      finish.resolve?.("too late")
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.toolCalls([{ name: "deaf", arguments: {} }])] }))))

  it.effect("the flush before a step's calls run fails: recorded as a PERSISTENCE error in the step, the calls run all the same", () =>
    Effect.gen(function*() {
      const checkpoint = yield* FlushCheckpoint
      let flushes = 0
      yield* checkpoint.register({
        name: "full-disk",
        flush: () => (flushes++ === 0 ? Effect.fail(new SessionErrors.PersistenceError({ message: "no space left", sessionId: "" })) : Effect.void)
      })
      const agent = yield* create()
      yield* run(agent, "echo it")
      const events = yield* agent.session.events
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
      expect(kinds(events).filter((k) => k === "tool/call" || k === "error" || k === "tool/result")).toStrictEqual(["tool/call", "error", "tool/result"])
      expect(ofType(events, "error")[0]?.data).toMatchObject({ turn: 1, step: 1, code: "PERSISTENCE" })
      expect(ofType(events, "error")[0]?.data.message).toContain("the flush checkpoint before the calls of step 1 ran failed")
      expect(resultCodes(events)).toStrictEqual([undefined])
      // once before the call, once at the turn's end
      expect(flushes).toBe(2)
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.toolCalls([{ name: "echo", arguments: { text: "x" } }]), reply.text("done")] }))))

  it.effect("the flush before a step's calls stalls, then an abort: abort returns within the grace, the call is answered ABORTED", () =>
    Effect.gen(function*() {
      const stall = yield* stallFirstFlush
      const agent = yield* create({ abortGrace: "500 millis" })
      yield* agent.send("echo it")
      yield* waitFor(agent.session, "tool/call")
      const aborting = yield* Effect.forkChild(agent.abort(), { startImmediately: true })
      yield* TestClock.adjust("500 millis")
      yield* TestClock.adjust("500 millis")
      yield* Fiber.join(aborting)
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      expect(endReasons(events)).toStrictEqual([{ kind: "aborted" }])
      expect(resultCodes(events)).toStrictEqual(["ABORTED"])
      yield* Deferred.succeed(stall, undefined)
      yield* run(agent, "again")
      expect(endReasons(yield* agent.session.events).at(-1)).toStrictEqual({ kind: "completed" })
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.toolCalls([{ name: "echo", arguments: { text: "x" } }]), reply.text("hi again")] }))))

  it.effect("a flush that stalls: abort returns within the grace, the turn stays completed, the given-up flush is recorded", () =>
    Effect.gen(function*() {
      const stall = yield* stallFirstFlush
      const agent = yield* create({ abortGrace: "500 millis" })
      yield* agent.send("hello")
      yield* waitFor(agent.session, "turn/end")
      expect(yield* agent.status).toBe("running")
      const aborting = yield* Effect.forkChild(agent.abort(), { startImmediately: true })
      yield* TestClock.adjust("500 millis")
      yield* Fiber.join(aborting)
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
      const [error] = ofType(events, "error")
      expect(error?.data).toMatchObject({ turn: 1, code: "ABORTED" })
      expect(error?.data.message).toContain("flush checkpoint after turn 1 did not finish")
      yield* Deferred.succeed(stall, undefined)
      yield* run(agent, "again")
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "completed" }, { kind: "completed" }])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("hi"), reply.text("hi again")] }))))

  it.effect("disposal with an uninterruptible tool body: the scope closes within the grace, the turn ends disposed", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate
      yield* register(stubbornTool(gate))
      const scope = yield* Scope.make()
      const agent = yield* create({ abortGrace: "1 second" }).pipe(Scope.provide(scope))
      yield* agent.send("run it")
      yield* Deferred.await(gate.started)
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void), { startImmediately: true })
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(closing)
      const events = yield* agent.session.events
      expect(endReasons(events)).toStrictEqual([{ kind: "disposed" }])
      expect(resultCodes(events)).toStrictEqual(["ABORTED"])
      expect(events.at(-1)?.data).toStrictEqual({ agentId: agent.id, status: "disposed" })
      yield* Deferred.succeed(gate.release, undefined)
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.toolCalls([{ name: "stubborn", arguments: {} }])] }))))

  it.effect("abort from inside the agent (a tool) returns at once; the turn ends aborted", () =>
    Effect.gen(function*() {
      const self = Tool.make("quit", {
        description: "Aborts its own agent",
        parameters: Schema.Struct({}),
        execute: () => Effect.andThen(Effect.suspend(() => holder.agent!.abort("the tool quit")), Effect.succeed("quitting"))
      })
      const holder: { agent?: { readonly abort: (reason?: string) => Effect.Effect<void> } } = {}
      yield* register(self)
      const agent = yield* create()
      holder.agent = agent
      yield* run(agent, "quit")
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "aborted", reason: "the tool quit" }])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.toolCalls([{ name: "quit", arguments: {} }])] }))))
})

describe("a call from inside the agent that would wait for its own turn", () => {
  it.effect("run() from the agent's own tool is INVALID_INPUT at once, not a turn that waits for itself", () =>
    Effect.gen(function*() {
      const holder: { agent?: { readonly run: (input: string) => Effect.Effect<unknown, { readonly code: string; readonly message: string }> } } = {}
      const nested = Tool.make("nested", {
        description: "Runs its own agent",
        parameters: Schema.Struct({}),
        execute: () =>
          Effect.suspend(() => holder.agent!.run("inner")).pipe(
            Effect.match({ onFailure: (error) => `${error.code}: ${error.message}`, onSuccess: () => "it ran" })
          )
      })
      yield* register(nested)
      const agent = yield* create()
      holder.agent = agent
      yield* run(agent, "nest")
      const results = (yield* agent.session.events).filter((e) => e.type === "tool/result")
      expect(JSON.stringify(results[0]?.data)).toContain("INVALID_INPUT: agent")
      expect(JSON.stringify(results[0]?.data)).toContain("run() was called from inside the agent's own turn")
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "completed" }])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.toolCalls([{ name: "nested", arguments: {} }]), reply.text("done")] }))))

  it.effect("awaitIdle from the agent's own tool is INVALID_INPUT at once; from outside it waits as before", () =>
    Effect.gen(function*() {
      const holder: { agent?: { readonly awaitIdle: Effect.Effect<void, { readonly code: string; readonly message: string }> } } = {}
      const waits = Tool.make("waits", {
        description: "Waits for its own agent to be idle",
        parameters: Schema.Struct({}),
        execute: () =>
          Effect.suspend(() => holder.agent!.awaitIdle).pipe(
            Effect.match({ onFailure: (error) => `${error.code}: ${error.message}`, onSuccess: () => "idle" })
          )
      })
      yield* register(waits)
      const agent = yield* create()
      holder.agent = agent
      yield* agent.send("wait")
      yield* agent.awaitIdle
      const results = (yield* agent.session.events).filter((e) => e.type === "tool/result")
      expect(JSON.stringify(results[0]?.data)).toContain("INVALID_INPUT: agent")
      expect(JSON.stringify(results[0]?.data)).toContain("awaitIdle was called from inside the agent's own turn")
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "completed" }])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.toolCalls([{ name: "waits", arguments: {} }]), reply.text("done")] }))))
})

describe("options a type cannot check are refused at creation, each named", () => {
  it.effect("an abortGrace that is no duration, or negative, and a seed that does not count from 0: INVALID_INPUT", () =>
    Effect.gen(function*() {
      const refused = (options: Record<string, unknown>) => Effect.flip(create(options as never))
      const word = yield* refused({ abortGrace: "2 sec" })
      expect(word).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
      expect(word.message).toContain("abortGrace must be a finite duration of zero or more")
      expect((yield* refused({ abortGrace: -1 })).message).toContain("abortGrace")
      expect((yield* refused({ abortGrace: Number.NaN })).message).toContain("abortGrace")
      // an abort would wait for ever on a tool that ignores interruption
      expect((yield* refused({ abortGrace: Number.POSITIVE_INFINITY })).message).toContain("abortGrace must be a finite duration")
      expect((yield* refused({ abortGrace: "Infinity" })).message).toContain("abortGrace must be a finite duration")
      const agent = yield* create()
      yield* run(agent, "hello")
      const events = yield* agent.session.events
      const gap = yield* refused({ session: { seed: events.slice(3) } })
      expect(gap).toMatchObject({ code: "INVALID_INPUT" })
      expect(gap.message).toContain("session.seed must be session events counting from seq 0 with no gap: event 0 has seq 3")
      expect((yield* refused({ session: { seed: [{ type: "foo" }] } })).message).toContain("event 0 has seq undefined")
      expect((yield* refused({ session: { seed: "nope" } })).message).toContain("session.seed must be an array")
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("hi")] }))))
})

describe("a listener that hangs on an event of no turn is detached after the abort grace", () => {
  it.effect("on agent/status running: the turn is served after the grace; on context/message: inject returns", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      const entered = yield* Deferred.make<void>()
      yield* hooks.listeners.register({
        name: "stuck-ui",
        around: (input, next) =>
          (input.event.type === "agent/status" && input.event.data.status === "running") || input.event.type === "context/message"
            ? Effect.andThen(Deferred.succeed(entered, undefined), Effect.never)
            : next(input)
      })
      const agent = yield* create({ abortGrace: "1 second" })
      yield* agent.send("hello")
      yield* Deferred.await(entered)
      const idle = yield* Effect.forkChild(agent.awaitIdle)
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(idle)
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "completed" }])
      // an injected message's listener hangs too: inject returns after the grace
      const injecting = yield* Effect.forkChild(agent.inject("the cwd is /repo"))
      yield* waitFor(agent.session, "context/message")
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(injecting)
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("hi there")] }))))
})

describe("options past the types: each named, INVALID_INPUT, no agent made", () => {
  it.effect("null or malformed session and compaction settings, and out-of-range request settings", () =>
    Effect.gen(function*() {
      const refused = (options: Record<string, unknown>) =>
        Effect.map(Effect.flip(create(options as never)), (error) => ({ code: error.code, message: error.message }))
      for (const [options, named] of [
        [{ session: null }, "session must be { id?, seed? }"],
        [{ session: { id: "" } }, "session.id must be a non-empty string"],
        [{ session: { id: "   " } }, "session.id must not be blank"],
        [{ compaction: null }, "compaction must be an object of compaction settings, got null"],
        [{ compaction: "x" }, "compaction must be an object"],
        [{ compaction: { treshold: 0.5 } }, "compaction.treshold is not a compaction setting"],
        [{ compaction: { prune: [] } }, "compaction.prune must be false or { minChars }"],
        [{ temperature: "hot" }, "temperature must be a number from 0 to 2"],
        [{ temperature: -5 }, "temperature must be a number from 0 to 2"],
        [{ maxTokens: 0 }, "maxTokens must be an integer ≥ 1"],
        [{ prompt: 42 }, "prompt must be text, got 42"],
        [{ id: "" }, "id must be a non-empty string"]
      ] as const) {
        const error = yield* refused(options)
        expect(error.code).toBe("INVALID_INPUT")
        expect(error.message).toContain(named)
      }
      // every problem named at once
      const all = yield* refused({ temperature: 9, maxTokens: -1, compaction: { keepTurns: -1 } })
      expect(all.message).toMatch(/temperature.*maxTokens.*compaction\.keepTurns/)
      expect((yield* (yield* SessionStore).list).length).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(TestLayer())))
})

describe("#13.4 an abort right after send applies to the turn the send started", () => {
  it.effect("the turn logs the message and ends aborted before any step; a 10-second tool never runs", () =>
    Effect.gen(function*() {
      let ran = false
      yield* register(Tool.make("slow", {
        description: "Takes ten seconds",
        parameters: Schema.Struct({}),
        execute: () => Effect.andThen(Effect.sync(() => (ran = true)), Effect.as(Effect.sleep("10 seconds"), "done"))
      }))
      const agent = yield* create()
      yield* agent.send("start the slow job")
      yield* agent.abort("changed my mind")
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      expect(kinds(turnEvents(events, 1))).toStrictEqual(["turn/start", "user/message", "turn/end"])
      expect(endReasons(events)).toStrictEqual([{ kind: "aborted", reason: "changed my mind" }])
      expect(ran).toBe(false)
      expect(yield* requests).toHaveLength(0)
      // the next send is a normal turn
      yield* run(agent, "now run it")
      expect(endReasons(yield* agent.session.events)[1]?.kind).toBe("completed")
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("ok")] }))))

  it.effect("with a turn running, abort stops the running turn and the queued message is served next", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate
      yield* register(stubbornTool(gate))
      const agent = yield* create()
      yield* agent.send("first")
      yield* waitFor(agent.session, "assistant/chunk")
      yield* agent.send("second")
      yield* agent.abort()
      yield* agent.awaitIdle
      expect(endReasons(yield* agent.session.events).map((r) => r.kind)).toStrictEqual(["aborted", "completed"])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.hangAt(reply.text("thinking"), 2), reply.text("ok")] }))))
})

describe("#13.5 a model that repeats a tool-call id within one message", () => {
  it.effect("every call is answered once under its own id, the rewrite is recorded, the history stays provider-valid", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* run(agent, "echo twice")
      const events = yield* agent.session.events
      const [message] = ofType(events, "assistant/message")
      const ids = message!.data.content.flatMap((b) => (b.type === "tool-call" ? [b.id] : []))
      expect(ids).toStrictEqual(["dup", "dup_2", "call_2"])
      expect(message!.data.rewrittenCallIds).toStrictEqual({ dup_2: "dup", call_2: "" })
      expect(ofType(events, "tool/call").map((e) => e.data.callId)).toStrictEqual(ids)
      expect(ofType(events, "tool/result").map((e) => [e.data.callId, textOf(e.data.content)])).toStrictEqual([
        ["dup", "echo: a"],
        ["dup_2", "echo: b"],
        ["call_2", "echo: c"]
      ])
      expectProviderValid(yield* agent.session.messages)
      // the model's second request carries the rewritten ids, answered
      const [, second] = yield* requests
      expectProviderValid(second!.messages)
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([
            { id: "dup", name: "echo", arguments: { text: "a" } },
            { id: "dup", name: "echo", arguments: { text: "b" } },
            { id: "", name: "echo", arguments: { text: "c" } }
          ]),
          reply.text("done")
        ]
      }))
    ))
})

describe("#13.6 a plain object thrown or failed is described by its message, everywhere", () => {
  const cyclic: Record<string, unknown> = { message: "quota exceeded (cyclic)" }
  cyclic["self"] = cyclic
  for (const [name, value, text] of [
    ["a plain object", { message: "quota exceeded" }, "quota exceeded"],
    ["a cyclic object", cyclic, "quota exceeded (cyclic)"],
    ["an object without a message", { status: 503, retry: true }, `{"status":503,"retry":true}`]
  ] as const) {
    it.effect(`${name} failed by a request middleware: the error event and the turn end carry its text`, () =>
      Effect.gen(function*() {
        const hooks = yield* AgentHooks
        yield* hooks.request.register({ name: "gate", around: () => Effect.fail(value as never) })
        const agent = yield* create()
        yield* run(agent, "go")
        const events = yield* agent.session.events
        const [error] = ofType(events, "error")
        expect(error?.data.code).toBe("DEFECT")
        expect(error?.data.message).toContain(text)
        expect(error?.data.message).not.toContain("[object Object]")
        const [end] = endReasons(events)
        expect(end?.kind === "error" && end.message).toBe(error?.data.message)
      }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("ok")] }))))

    it.effect(`${name} thrown by a tool body: the tool result carries its text`, () =>
      Effect.gen(function*() {
        yield* register(Tool.make("thrower", {
          description: "Throws a plain object",
          parameters: Schema.Struct({}),
          execute: () =>
            Effect.sync(() => {
              throw value
            })
        }))
        const agent = yield* create()
        yield* run(agent, "go")
        const [result] = ofType(yield* agent.session.events, "tool/result")
        expect(result?.data.error?.code).toBe("TOOL_FAILED")
        expect(textOf(result!.data.content)).toContain(text)
        expect(textOf(result!.data.content)).not.toContain("[object Object]")
      }).pipe(
        Effect.scoped,
        Effect.provide(TestLayer({ script: [reply.toolCalls([{ name: "thrower", arguments: {} }]), reply.text("ok")] }))
      ))
  }

  it.effect("a model stream that dies with a plain object: DEFECT with its message", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* run(agent, "go")
      const [error] = ofType(yield* agent.session.events, "error")
      expect(error?.data).toMatchObject({ code: "DEFECT" })
      expect(error?.data.message).toContain("socket hang up")
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.dieAt(reply.text("x"), 1, { message: "socket hang up" })] }))))
})

describe("#13.7 a request middleware whose Effect dies is MIDDLEWARE, naming it", () => {
  for (const seam of ["request", "stepResult", "continuation", "listeners"] as const) {
    it.effect(`the ${seam} seam`, () =>
      Effect.gen(function*() {
        const hooks = yield* AgentHooks
        const dies = { name: `dying-${seam}`, around: () => Effect.die(new Error("lost its config")) }
        if (seam === "request") yield* hooks.request.register(dies)
        if (seam === "stepResult") yield* hooks.stepResult.register(dies)
        if (seam === "continuation") yield* hooks.continuation.register(dies)
        if (seam === "listeners") {
          yield* hooks.listeners.register({
            name: dies.name,
            around: (input, next) => (input.event.type === "step/start" ? dies.around() : next(input))
          })
        }
        const agent = yield* create()
        yield* run(agent, "go")
        const [error] = ofType(yield* agent.session.events, "error")
        expect(error?.data.code).toBe("MIDDLEWARE")
        expect(error?.data.message).toContain(`middleware "dying-${seam}" died: lost its config`)
      }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("ok")] }))))
  }

  it.effect("a defect of the model passed on by a request middleware is not blamed on it", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      yield* hooks.request.register({ name: "innocent", around: (input, next) => next(input) })
      const agent = yield* create()
      yield* run(agent, "go")
      const [error] = ofType(yield* agent.session.events, "error")
      expect(error?.data.code).toBe("DEFECT")
      expect(error?.data.message).toContain("adapter bug")
      expect(error?.data.message).not.toContain("innocent")
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.dieAt(reply.text("x"), 1, new Error("adapter bug"))] }))))
})

describe("#13.8 a finish of kind error with a provider's own code", () => {
  it.effect("a catalog code of another layer (TOOL_DENIED) is a provider's own code too: the log and run() agree on LLM_SERVER", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const failed = yield* Effect.flip(agent.run("go"))
      expect(failed).toMatchObject({ _tag: "LlmServerError", code: "LLM_SERVER" })
      const [error] = ofType(yield* agent.session.events, "error")
      expect(error?.data).toMatchObject({ code: "LLM_SERVER", reportedCode: "TOOL_DENIED" })
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({ script: [reply.text("x", { finish: FinishReason.error("TOOL_DENIED", "no") })] }))
    ))

  it.effect("ends the turn with a catalog code; the provider's code is kept as data", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* run(agent, "go")
      const events = yield* agent.session.events
      const [error] = ofType(events, "error")
      expect(error?.data).toMatchObject({ code: "LLM_SERVER", reportedCode: "upstream_overloaded" })
      expect(endReasons(events)).toStrictEqual([{ kind: "error", code: "LLM_SERVER", message: error!.data.message }])
      expect(error?.data.message).toBe("the model reported an error (upstream_overloaded): try again later")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.text("partial", { finish: FinishReason.error("upstream_overloaded", "try again later") })]
      }))
    ))

  it.effect("a failure shaped like a harness error but with a code outside the catalog is DEFECT, its code kept", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      yield* hooks.request.register({
        name: "custom",
        around: () => Effect.fail({ _tag: "QuotaError", code: "QUOTA", message: "over quota" } as unknown as HarnessError.HarnessError)
      })
      const agent = yield* create()
      yield* run(agent, "go")
      const [error] = ofType(yield* agent.session.events, "error")
      expect(error?.data).toMatchObject({ code: "DEFECT", reportedCode: "QUOTA", message: "over quota" })
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("ok")] }))))
})

describe("malformed input from JavaScript or decoded JSON", () => {
  it.effect("send, steer and inject refuse what is not text or content blocks with INVALID_INPUT; nothing is logged", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const before = (yield* agent.session.events).length
      const bad = [{ type: "text" }] as unknown as ReadonlyArray<Content.ContentBlock>
      for (const attempt of [agent.send(bad), agent.steer(bad), agent.inject(bad), agent.send("ok", { source: 7 as never })]) {
        const refused = yield* Effect.flip(attempt)
        expect(refused.code).toBe("INVALID_INPUT")
        expect(refused.message).toContain(agent.id)
      }
      // a value that is neither: the message says what it got
      const number = yield* Effect.flip(agent.send(42 as never))
      expect(number.message).toContain("it must be text or content blocks, got 42")
      // options that are no object are refused, not read as none (run's included)
      const options = yield* Effect.flip(agent.run("q", 5 as never))
      expect(options).toMatchObject({ code: "INVALID_INPUT" })
      expect(options.message).toContain("its options must be an object, got 5")
      expect((yield* Effect.flip(agent.send("q", "user" as never))).message).toContain(`its options must be an object, got "user"`)
      expect(yield* agent.session.events).toHaveLength(before)
      yield* run(agent, "a proper message")
      expect(endReasons(yield* agent.session.events)).toStrictEqual([{ kind: "completed" }])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("ok")] }))))

  it.effect("a message holding a tool-call or tool-result block is INVALID_INPUT: the loop pairs those itself", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const before = (yield* agent.session.events).length
      const call = Content.toolCall(Ids.callId("c1"), "echo", "{}")
      const result = Content.toolResult({ toolCallId: Ids.callId("c1"), content: [Content.text("done")] })
      for (const attempt of [agent.send([Content.text("see"), call]), agent.steer([result]), agent.inject([result])]) {
        const refused = yield* Effect.flip(attempt)
        expect(refused.code).toBe("INVALID_INPUT")
        expect(refused.message).toMatch(/a tool-(call|result) block is the loop's to log/)
      }
      expect(yield* agent.session.events).toHaveLength(before)
    }).pipe(Effect.scoped, Effect.provide(TestLayer())))
})

describe("#13.13 an agent on a log cut mid-turn", () => {
  it.effect("closes the interrupted turn under the contract before serving; the next request is provider-valid", () =>
    Effect.gen(function*() {
      // a log as a crash during a tool leaves it: the call announced, no result, no step/end
      const source = yield* create()
      const gate = yield* makeGate
      yield* register(stubbornTool(gate))
      yield* source.send("run it")
      yield* Deferred.await(gate.started)
      const cut: ReadonlyArray<SessionEvent.SessionEvent> = yield* source.session.events
      expect(cut.at(-1)?.type).toBe("tool/call")
      const resumed = yield* create({ session: { seed: cut } })
      const events = yield* resumed.session.events
      const tail = events.slice(cut.length).map((e) => e.type)
      expect(tail).toStrictEqual(["session/repair", "tool/result", "step/end", "turn/end", "agent/status"])
      expect(ofType(events, "tool/result").at(-1)?.data.error?.code).toBe("TOOL_OUTCOME_UNKNOWN")
      expect(endReasons(events).at(-1)?.kind).toBe("interrupted")
      yield* Deferred.succeed(gate.release, undefined)
      yield* run(resumed, "what happened?")
      const [, request] = yield* requests
      expectProviderValid(request!.messages)
      expect(endReasons(yield* resumed.session.events).at(-1)?.kind).toBe("completed")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.toolCalls([{ name: "stubborn", arguments: {} }]), reply.text("it was interrupted"), reply.text("done")]
      }))
    ))

  it.effect("a fresh session with the id of an open one is SESSION_EXISTS, saying how to continue it", () =>
    Effect.gen(function*() {
      const session = yield* (yield* SessionStore).create({ id: "taken" })
      const refused = yield* Effect.flip(create({ session: { id: session.id } }))
      expect(refused.code).toBe("SESSION_EXISTS")
      expect(refused.message).toContain("session: { resume: session }")
    }).pipe(Effect.scoped, Effect.provide(TestLayer())))

  it.effect("a second agent on a session another agent drives is refused with SESSION_LOCKED", () =>
    Effect.gen(function*() {
      const first = yield* create()
      const refused = yield* Effect.flip(create({ session: { resume: first.session } }))
      expect(refused.code).toBe("SESSION_LOCKED")
      expect(refused.message).toContain(first.id)
    }).pipe(Effect.scoped, Effect.provide(TestLayer())))

  it.effect("resume continues an open session in place: same id, seq and turns continue, no fork", () =>
    Effect.gen(function*() {
      const session = yield* (yield* SessionStore).create({ id: "kept" })
      const scope = yield* Scope.make()
      const first = yield* create({ session: { resume: session } }).pipe(Scope.provide(scope))
      yield* run(first, "one")
      yield* Scope.close(scope, Exit.void)
      const second = yield* create({ session: { resume: session } })
      expect(second.session).toBe(session)
      yield* run(second, "two")
      const events = yield* session.events
      expect(ofType(events, "turn/start").map((e) => e.data.turn)).toStrictEqual([1, 2])
      expect(statuses(events, first.id)).toStrictEqual(["idle", "running", "idle", "disposed"])
      expect(statuses(events, second.id)).toStrictEqual(["idle", "running", "idle"])
      expect((yield* (yield* SessionStore).list).map((s) => s.id)).toStrictEqual(["kept"])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("ok"), reply.text("ok again")] }))))
})

describe("values that are no stream chunks", () => {
  it.effect("a model middleware that returns nothing for some chunks: the turn ends LLM_PROTOCOL, nothing malformed is logged, the next turn runs", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const scope = yield* Scope.make()
      // a plausible slip: a map that forgets to return the chunks it does not rewrite
      yield* model.use({
        name: "shout",
        around: (request, next) =>
          Stream.map(next(request), (chunk) => (chunk.type === "text-delta" ? { ...chunk, delta: chunk.delta.toUpperCase() } : undefined) as never)
      }).pipe(Scope.provide(scope))
      const agent = yield* create()
      yield* run(agent, "hi")
      yield* Scope.close(scope, Exit.void)
      yield* run(agent, "again")
      const events = yield* agent.session.events
      expect(endReasons(events)).toStrictEqual([
        { kind: "error", code: "LLM_PROTOCOL", message: `the response of model "scripted" was cut at its chunk 0, which is no stream chunk: it is undefined, not an object` },
        { kind: "completed" }
      ])
      expect(ofType(events, "assistant/chunk").every((e) => typeof e.data.chunk === "object" && e.data.chunk !== null)).toBe(true)
      expect(textOf(ofType(events, "assistant/message").at(-1)!.data.content)).toBe("ok")
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("hello"), reply.text("ok")] }))))
})

describe("a turn's work that interrupts itself", () => {
  it.effect("a request middleware giving Effect.interrupt: the turn ends aborted saying so, though nobody called abort; the agent goes on", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      const scope = yield* Scope.make()
      yield* hooks.request.register({ name: "cancel", around: () => Effect.interrupt }).pipe(Scope.provide(scope))
      const agent = yield* create()
      const failed = yield* Effect.flip(agent.run("hello"))
      expect(failed.code).toBe("ABORTED")
      yield* Scope.close(scope, Exit.void)
      expect((yield* agent.run("again")).text).toBe("hi")
      expect(endReasons(yield* agent.session.events)).toStrictEqual([
        { kind: "aborted", reason: "the turn's work interrupted itself (a middleware, a prompt section or a listener gave Effect.interrupt); no abort was asked for" },
        { kind: "completed" }
      ])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("hi")] }))))
})
