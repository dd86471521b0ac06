/**
 * Turns, steps and the seams: multi-step tool use, queued messages, steering (mid-stream and
 * from a listener), injection, seeded sessions and forks, limits, and what each middleware
 * seam sees and changes. Every scenario runs under the invariants (see helpers.ts).
 */
import { AgentHooks } from "@dsh/agent"
import { Content, History, Ids, Message } from "@dsh/llm"
import { ScriptedModel } from "@dsh/model"
import { Derivation } from "@dsh/session"
import { ToolRegistry, ToolResult } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Stream } from "effect"
import {
  create,
  echo,
  endReasons,
  gatedTool,
  kinds,
  makeGate,
  ofType,
  pauseModel,
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

describe("turns and steps", () => {
  it.effect("multi-step tool use: the model calls tools over two steps, then answers", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* run(agent, "what do a, b and c say?")
      const events = yield* agent.session.events
      expect(kinds(events)).toStrictEqual([
        "agent/status",
        "agent/status",
        "turn/start",
        "user/message",
        "step/start",
        "model/request",
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "step/start",
        "model/request",
        "assistant/message",
        "tool/call",
        "tool/result",
        "tool/call",
        "tool/result",
        "step/end",
        "step/start",
        "model/request",
        "assistant/message",
        "step/end",
        "turn/end",
        "agent/status"
      ])
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
      expect(statuses(events, agent.id)).toStrictEqual(["idle", "running", "idle"])
      expect(ofType(events, "tool/result").map((e) => textOf(e.data.content))).toStrictEqual([
        "echo: a",
        "echo: b",
        "echo: c"
      ])
      // every chunk was logged, inside its step
      expect(ofType(events, "assistant/chunk").length).toBeGreaterThan(0)
      // each request carried the history so far: the third sees both steps' calls and results
      const sent = yield* requests
      expect(sent.map((r) => History.toArray(r.messages).map((m) => m.role))).toStrictEqual([
        ["user"],
        ["user", "assistant", "user"],
        ["user", "assistant", "user", "assistant", "user", "user"]
      ])
      expect(sent[0]!.tools?.map((t) => t.name)).toStrictEqual(["echo"])
      expect(yield* agent.session.messages).toStrictEqual(Derivation.derive(events))
      expect(Message.textOf(History.last(yield* agent.session.messages)!)).toBe("a, b and c echoed")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([{ name: "echo", arguments: { text: "a" } }], { text: "Let me ask." }),
          reply.toolCalls([
            { name: "echo", arguments: { text: "b" }, id: "call_b" },
            { name: "echo", arguments: { text: "c" }, id: "call_c" }
          ]),
          reply.text("a, b and c echoed", { fragment: (s) => s.split(/(?= )/) })
        ]
      }))
    ))

  it.effect("messages sent during a turn queue for the next one; the status stays running in between", () =>
    Effect.gen(function*() {
      const gates = { one: yield* makeGate }
      yield* register(gatedTool("slow", gates))
      const agent = yield* create()
      yield* agent.send("first")
      yield* Deferred.await(gates.one.started)
      expect(yield* agent.status).toBe("running")
      yield* agent.send("second")
      yield* agent.send([Content.text("third")])
      yield* Deferred.succeed(gates.one.release, undefined)
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      expect(ofType(turnEvents(events, 1), "user/message").map((e) => textOf(e.data.content))).toStrictEqual([
        "first"
      ])
      // both queued messages open the next turn together
      expect(ofType(turnEvents(events, 2), "user/message").map((e) => textOf(e.data.content))).toStrictEqual([
        "second",
        "third"
      ])
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }, { kind: "completed" }])
      // running from the first turn's start to the second turn's end: never idle in between
      expect(statuses(events, agent.id)).toStrictEqual(["idle", "running", "idle"])
      expect(yield* agent.status).toBe("idle")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([{ name: "slow", arguments: { id: "one" } }]),
          reply.text("first done"),
          reply.text("second and third done")
        ]
      }))
    ))

  it.effect("steering mid-stream is logged before the next step and forces that step", () =>
    Effect.gen(function*() {
      const release = yield* pauseModel({ request: 1, after: 2 })
      const agent = yield* create()
      yield* agent.send("write a poem")
      yield* waitFor(agent.session, "assistant/chunk", () => true, 2)
      yield* agent.steer("make it rhyme")
      yield* Deferred.succeed(release, undefined)
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      // the first step asked for no tool, yet the steering forced a second step
      expect(kinds(turnEvents(events, 1))).toStrictEqual([
        "turn/start",
        "user/message",
        "step/start",
        "model/request",
        "assistant/message",
        "steering/message",
        "step/end",
        "step/start",
        "model/request",
        "assistant/message",
        "step/end",
        "turn/end"
      ])
      const steering = ofType(events, "steering/message")
      expect(steering.map((e) => [e.data.turn, textOf(e.data.content), e.data.source])).toStrictEqual([
        [1, "make it rhyme", "user"]
      ])
      // the second request ends with the steering, in its envelope
      const second = (yield* requests)[1]!
      expect(Message.textOf(History.last(second.messages)!)).toBe("<steering source=\"user\">\nmake it rhyme\n</steering>")
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.text("Roses are red, violets are blue", { fragment: (s) => s.split(/(?= )/) }),
          reply.text("Roses are red, the sky is too")
        ]
      }))
    ))

  it.effect("a step-end listener that steers forces the turn to continue", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      let steered = false
      yield* hooks.listeners.register({
        name: "reviewer",
        around: (input, next) =>
          Effect.andThen(next(input), () => {
            if (input.event.type !== "step/end" || steered) return Effect.void
            steered = true
            return Effect.orDie(input.agent.steer("double-check the result", { source: "reviewer" }))
          })
      })
      const agent = yield* create()
      yield* run(agent, "compute 6 * 7")
      const events = yield* agent.session.events
      const turn = kinds(turnEvents(events, 1))
      // step/end, then the steering before the forced step
      expect(turn.slice(turn.indexOf("step/end"))).toStrictEqual([
        "step/end",
        "steering/message",
        "step/start",
        "model/request",
        "assistant/message",
        "step/end",
        "turn/end"
      ])
      expect(ofType(events, "steering/message")[0]!.data.source).toBe("reviewer")
      expect(yield* requests).toHaveLength(2)
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({ script: [reply.text("42"), reply.text("42, checked")] }))
    ))

  it.effect("steering while idle is like send: it starts a turn", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* agent.steer("hello")
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      expect(ofType(events, "turn/start").map((e) => e.data.trigger)).toStrictEqual(["steer"])
      expect(ofType(events, "user/message").map((e) => textOf(e.data.content))).toStrictEqual(["hello"])
      expect(ofType(events, "steering/message")).toStrictEqual([])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("hi")] }))))
})

describe("injection", () => {
  it.effect("inject appends a context message without starting a turn", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* agent.inject("the repository uses pnpm", { source: "workspace" })
      const events = yield* agent.session.events
      expect(kinds(events)).toStrictEqual(["agent/status", "context/message"])
      expect(yield* agent.status).toBe("idle")
      yield* run(agent, "install the dependencies")
      const first = (yield* requests)[0]!
      expect(History.toArray(first.messages).map(Message.textOf)).toStrictEqual([
        "<context source=\"workspace\">\nthe repository uses pnpm\n</context>",
        "install the dependencies"
      ])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("pnpm install")] }))))

  it.effect("a context message injected during tool execution comes after the results in the history", () =>
    Effect.gen(function*() {
      const gates = { a: yield* makeGate }
      yield* register(gatedTool("slow", gates))
      const agent = yield* create()
      yield* agent.send("run it")
      yield* Deferred.await(gates.a.started)
      yield* agent.inject("the build server is down")
      yield* Deferred.succeed(gates.a.release, undefined)
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      // logged while the call was running: between tool/call and tool/result
      const turn = kinds(turnEvents(events, 1))
      expect(turn.slice(turn.indexOf("tool/call"), turn.indexOf("tool/result") + 1)).toStrictEqual([
        "tool/call",
        "context/message",
        "tool/result"
      ])
      // derived: the result answers its call first, then the context
      const second = (yield* requests)[1]!
      expect(History.toArray(second.messages).map((m) => m.content[0]!.type)).toStrictEqual(["text", "tool-call", "tool-result", "text"])
      expect(Message.textOf(History.at(second.messages, 3)!)).toContain("the build server is down")
      expect(ofType(events, "turn/start")).toHaveLength(1)
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.toolCalls([{ name: "slow", arguments: { id: "a" } }]), reply.text("noted")]
      }))
    ))
})

describe("seeded sessions and forks", () => {
  it.effect("an agent on a seeded session continues the turn numbering and derives the same history", () =>
    Effect.gen(function*() {
      const first = yield* create()
      yield* run(first, "one")
      yield* run(first, "two")
      const recorded = yield* first.session.events
      const second = yield* create({ session: { seed: recorded } })
      expect(second.session.seeded).toBe(recorded.length)
      expect(yield* second.session.messages).toStrictEqual(yield* first.session.messages)
      yield* run(second, "three")
      const events = yield* second.session.events
      expect(events.slice(0, recorded.length)).toStrictEqual(recorded)
      expect(ofType(events, "turn/start").map((e) => e.data.turn)).toStrictEqual([1, 2, 3])
      // the model saw the whole recorded history, then the new message
      const third = (yield* requests)[2]!
      expect(History.toArray(third.messages).map(Message.textOf)).toStrictEqual(["one", "1", "two", "2", "three"])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({ script: [reply.text("1"), reply.text("2"), reply.text("3")] }))
    ))

  it.effect("a sub-agent forked in a nested scope starts from the parent's log up to its last completed turn", () =>
    Effect.gen(function*() {
      const gates = { hold: yield* makeGate }
      yield* register(gatedTool("slow", gates))
      const parent = yield* create({ id: "parent" })
      yield* run(parent, "first task")
      // the parent is in the middle of its second turn when the child is forked
      yield* parent.send("second task")
      yield* Deferred.await(gates.hold.started)
      const parentLog = yield* parent.session.events
      const cut = parentLog.findIndex((e) => e.type === "turn/end") + 1

      const child = yield* Effect.scoped(Effect.gen(function*() {
        const child = yield* create({ id: "child", session: { fork: parent.session } })
        const start = yield* child.session.events
        const seed = start.slice(0, child.session.seeded)
        expect(seed).toStrictEqual(parentLog.slice(0, cut))
        expect(seed.at(-1)!.type).toBe("turn/end")
        // then the child's own first status
        expect(start.slice(seed.length).map((e) => e.data)).toStrictEqual([{ agentId: "child", status: "idle" }])
        yield* run(child, "side question")
        const events = yield* child.session.events
        expect(events.slice(0, start.length)).toStrictEqual(start)
        expect(ofType(events, "turn/start").map((e) => e.data.turn)).toStrictEqual([1, 2])
        const sent = (yield* requests).at(-1)!
        expect(History.toArray(sent.messages).map(Message.textOf)).toStrictEqual(["first task", "done 1", "side question"])
        return child
      }))
      // the nested scope closed: the child is disposed, the parent runs on
      expect(yield* child.status).toBe("disposed")
      expect(yield* parent.status).toBe("running")
      yield* Deferred.succeed(gates.hold.release, undefined)
      yield* parent.awaitIdle
      expect(endReasons(yield* parent.session.events)).toStrictEqual([{ kind: "completed" }, { kind: "completed" }])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.text("done 1"),
          reply.toolCalls([{ name: "slow", arguments: { id: "hold" } }]),
          reply.text("child answer"),
          reply.text("done 2")
        ]
      }))
    ))
})

describe("limits", () => {
  it.effect("maxSteps ends the turn with reason limit (max-steps)", () =>
    Effect.gen(function*() {
      const agent = yield* create({ maxSteps: 2 })
      yield* run(agent, "loop forever")
      const events = yield* agent.session.events
      const [reason] = endReasons(events)
      expect(reason).toMatchObject({ kind: "limit", name: "max-steps" })
      expect(ofType(events, "step/start")).toHaveLength(2)
      expect(yield* requests).toHaveLength(2)
      // the agent takes the next message
      yield* run(agent, "stop")
      expect(endReasons(yield* agent.session.events)[1]).toStrictEqual({ kind: "completed" })
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([{ name: "echo", arguments: { text: "1" } }]),
          reply.toolCalls([{ name: "echo", arguments: { text: "2" } }]),
          reply.text("ok")
        ]
      }))
    ))

  it.effect("consecutive INVALID_ARGS for one tool end the turn with reason limit (invalid-args)", () =>
    Effect.gen(function*() {
      const agent = yield* create({ maxInvalidArgs: 2 })
      yield* run(agent, "echo something")
      const events = yield* agent.session.events
      expect(ofType(events, "tool/result").map((e) => e.data.error?.code)).toStrictEqual([
        "INVALID_ARGS",
        "INVALID_ARGS"
      ])
      const [reason] = endReasons(events)
      expect(reason).toMatchObject({ kind: "limit", name: "invalid-args" })
      expect(reason?.kind === "limit" && reason.message).toContain("\"echo\"")
      expect(yield* requests).toHaveLength(2)
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([{ name: "echo", arguments: { txt: "typo" } }]),
          reply.toolCalls([{ name: "echo", arguments: "{not json" }]),
          reply.text("never asked")
        ]
      }))
    ))

  it.effect("a valid call in between resets the INVALID_ARGS count", () =>
    Effect.gen(function*() {
      const agent = yield* create({ maxInvalidArgs: 2 })
      yield* run(agent, "echo something")
      const events = yield* agent.session.events
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
      expect(ofType(events, "tool/result").map((e) => e.data.error?.code)).toStrictEqual([
        "INVALID_ARGS",
        undefined,
        "INVALID_ARGS"
      ])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([{ name: "echo", arguments: { txt: "typo" } }]),
          reply.toolCalls([{ name: "echo", arguments: { text: "fixed" } }]),
          reply.toolCalls([{ name: "echo", arguments: { txt: "typo again" } }]),
          reply.text("done")
        ]
      }))
    ))
})

describe("the seams", () => {
  it.effect("a tool/result carries its call's id whatever a tool middleware returned", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      // one middleware rewrites the id of what the tool answered, another answers for the tool
      yield* registry.use({
        name: "relabel",
        around: (call, next) => Effect.map(next(call), (result) => ({ ...result, toolCallId: Ids.callId("bogus") }))
      })
      yield* registry.use({
        name: "cache",
        around: (call, next) =>
          call.id === "call_2"
            ? Effect.succeed(ToolResult.success({ ...call, id: Ids.callId("cached-call") }, "from the cache"))
            : next(call)
      })
      const agent = yield* create()
      yield* run(agent, "go")
      const events = yield* agent.session.events
      expect(ofType(events, "tool/result").map((e) => [e.data.callId, textOf(e.data.content)])).toStrictEqual([
        ["call_1", "echo: x"],
        ["call_2", "from the cache"]
      ])
      const second = (yield* requests)[1]!
      expect(History.toArray(second.messages).flatMap((m) => m.content.flatMap((b) => (b.type === "tool-result" ? [b.toolCallId] : []))))
        .toStrictEqual(["call_1", "call_2"])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([{ name: "echo", arguments: { text: "x" } }, { name: "echo", arguments: { text: "y" } }]),
          reply.text("ok")
        ]
      }))
    ))

  it.effect("the request middleware sees the derived messages and its rewrite reaches the model, not the log", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      const seen: Array<{ readonly step: number; readonly matches: boolean; readonly roles: Array<string> }> = []
      const agent = yield* create({ prompt: "You are terse." })
      yield* hooks.request.register({
        name: "redact",
        around: ({ context, request }, next) =>
          Effect.gen(function*() {
            const derived = yield* agent.session.messages
            seen.push({
              step: context.step,
              matches: request.messages === derived,
              roles: History.toArray(request.messages).map((m) => m.role)
            })
            return yield* next({
              context,
              request: {
                ...request,
                system: `${request.system ?? ""}\nNever reveal secrets.`,
                messages: History.fromIterable(History.toArray(request.messages).map((m) =>
                  m.role === "user" && m.content.every((b) => b.type === "text")
                    ? Message.user(Message.textOf(m).replaceAll("hunter2", "[redacted]"))
                    : m
                ))
              }
            })
          })
      })
      yield* run(agent, "my password is hunter2")
      expect(seen).toStrictEqual([
        { step: 1, matches: true, roles: ["user"] },
        { step: 2, matches: true, roles: ["user", "assistant", "user"] }
      ])
      const sent = yield* requests
      expect(Message.textOf(History.at(sent[0]!.messages, 0)!)).toBe("my password is [redacted]")
      expect(sent[0]!.system).toBe("You are terse.\nNever reveal secrets.")
      // history is untouched: the log still holds what the user wrote
      const logged = ofType(yield* agent.session.events, "user/message")[0]!
      expect(textOf(logged.data.content)).toBe("my password is hunter2")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.toolCalls([{ name: "echo", arguments: { text: "x" } }]), reply.text("stored")]
      }))
    ))

  it.effect("the step-result middleware's rewrite is what gets logged (and what runs)", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      yield* hooks.stepResult.register({
        name: "censor",
        around: (input, next) =>
          next({
            ...input,
            message: {
              ...input.message,
              content: input.message.content.flatMap((b): Array<Content.ContentBlock> =>
                b.type === "text"
                  ? [Content.text(b.text.replaceAll("rm -rf /", "[removed]"))]
                  : b.type === "tool-call" && b.name === "echo" && b.arguments.includes("danger")
                  ? [] // a call the middleware drops is never executed
                  : [b]
              )
            }
          })
      })
      const agent = yield* create()
      yield* run(agent, "clean up")
      const events = yield* agent.session.events
      const messages = ofType(events, "assistant/message")
      expect(textOf(messages[0]!.data.content)).toBe("I will run [removed] now.")
      expect(messages[0]!.data.content.filter((b) => b.type === "tool-call").map((b) => b.id)).toStrictEqual([
        "call_1"
      ])
      expect(ofType(events, "tool/call").map((e) => e.data.callId)).toStrictEqual(["call_1"])
      expect(ofType(events, "tool/result").map((e) => textOf(e.data.content))).toStrictEqual(["echo: safe"])
      // the chunks are the raw stream (replay and UI data); the history is derived from the message
      expect(Message.textOf(History.at(yield* agent.session.messages, 1)!)).toBe("I will run [removed] now.")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.toolCalls([
            { name: "echo", arguments: { text: "safe" } },
            { name: "echo", arguments: { text: "danger" } }
          ], { text: "I will run rm -rf / now." }),
          reply.text("done")
        ]
      }))
    ))

  it.effect("the continuation middleware can stop a turn that had tool calls", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      const decisions: Array<unknown> = []
      yield* hooks.continuation.register({
        name: "one-step",
        around: (input, next) =>
          Effect.map(next(input), (proceed) => {
            decisions.push({ proceed, hadToolCalls: input.hadToolCalls, steered: input.steered, step: input.context.step })
            return false
          })
      })
      const agent = yield* create()
      yield* run(agent, "go")
      const events = yield* agent.session.events
      expect(decisions).toStrictEqual([{ proceed: true, hadToolCalls: true, steered: false, step: 1 }])
      expect(ofType(events, "tool/result")).toHaveLength(1)
      expect(ofType(events, "step/start")).toHaveLength(1)
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
      expect(yield* requests).toHaveLength(1)
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({ script: [reply.toolCalls([{ name: "echo", arguments: { text: "x" } }])] }))
    ))

  it.effect("listeners see events after they are logged, turn/end included", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      const seen: Array<string> = []
      const agent = yield* create()
      yield* hooks.listeners.register({
        name: "watch",
        around: (input, next) =>
          Effect.gen(function*() {
            // the event is in the log when the listener runs
            const logged = yield* agent.session.eventsFrom(input.event.seq)
            if (logged[0] === input.event && input.event.type !== "assistant/chunk") seen.push(input.event.type)
            return yield* next(input)
          })
      })
      yield* run(agent, "hi")
      yield* agent.inject("later")
      expect(seen).toStrictEqual(kinds((yield* agent.session.events).slice(1)))
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("hello")] }))))

  it.effect("a UI consuming events sees every event from its subscription on, in order", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const ui = yield* agent.events.pipe(
        Stream.takeUntil((e) => e.type === "turn/end"),
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      yield* run(agent, "hi")
      const seen = yield* Fiber.join(ui)
      const events = yield* agent.session.events
      // everything after the agent's first status (logged before the subscription), chunks included
      expect(seen).toStrictEqual(events.slice(1, events.findIndex((e) => e.type === "turn/end") + 1))
      expect(ofType(seen, "assistant/chunk").length).toBeGreaterThan(5)
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("hello", { fragment: (s) => [...s] })] }))))

  it.effect("the tool schemas and the agent's prompt reach the model", () =>
    Effect.gen(function*() {
      const agent = yield* create({ prompt: "Be brief.", temperature: 0.2, maxTokens: 100 })
      yield* run(agent, "hi")
      const [first] = yield* requests
      expect(first).toMatchObject({ model: "scripted", system: "Be brief.", temperature: 0.2, maxTokens: 100 })
      expect(first!.tools?.map((t) => t.name)).toStrictEqual([echo.name])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("hello")] }))))
})
