/**
 * Containment: every failure path ends the turn (never the agent) with an `error` event and a
 * turn/end carrying its code, and the agent serves the next message. A flush failure is
 * reported after the turn/end and is not fatal; a tool failure is an answer, not a failure.
 */
import { AgentHooks } from "@dsh/agent"
import { FinishReason, LlmError } from "@dsh/llm"
import { ScriptedModel } from "@dsh/model"
import { SystemPrompt } from "@dsh/prompt"
import { FlushCheckpoint, SessionErrors } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { broken, create, echo, endReasons, type Event, kinds, ofType, Refused, requests, run, TestLayer, textOf, turnEvents } from "./helpers.ts"

const { reply } = ScriptedModel

/** Creates an agent and runs its first turn; returns the agent and its log. */
const firstTurn = (options: { readonly model?: string } = {}) =>
  Effect.gen(function*() {
    const agent = yield* create(options.model === undefined ? {} : { model: options.model })
    yield* run(agent, "first")
    yield* agent.status.pipe(Effect.tap((s) => Effect.sync(() => expect(s).toBe("idle"))))
    return { agent, events: yield* agent.session.events }
  })

const expectErrorTurn = (events: ReadonlyArray<Event>, code: string) => {
  const turn = turnEvents(events, 1)
  const errors = ofType(turn, "error")
  expect(errors.map((e) => e.data.code)).toStrictEqual([code])
  const [reason] = endReasons(events)
  expect(reason).toMatchObject({ kind: "error", code })
  expect(reason?.kind === "error" && reason.message).toBe(errors[0]!.data.message)
  return errors[0]!
}

describe("the model fails", () => {
  it.effect("the stream fails with a typed error mid-stream: LLM_SERVER, the partial answer is kept", () =>
    Effect.gen(function*() {
      const { agent, events } = yield* firstTurn()
      const error = expectErrorTurn(events, "LLM_SERVER")
      expect(error.data).toMatchObject({ turn: 1, step: 1, message: "upstream overloaded" })
      expect(kinds(turnEvents(events, 1))).toStrictEqual([
        "turn/start",
        "user/message",
        "step/start",
        "model/request",
        "error",
        "assistant/message",
        "step/end",
        "turn/end"
      ])
      expect(textOf(ofType(events, "assistant/message")[0]!.data.content)).toBe("partial")
      yield* run(agent, "second")
      expect(endReasons(yield* agent.session.events)[1]).toStrictEqual({ kind: "completed" })
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.failAt(reply.text("partial"), 2, new LlmError.LlmServerError({ message: "upstream overloaded" })),
          reply.text("ok")
        ]
      }))
    ))

  it.effect("the stream fails after a tool call was streamed: the call was never logged, nothing runs", () =>
    Effect.gen(function*() {
      const { events } = yield* firstTurn()
      expectErrorTurn(events, "LLM_TRANSPORT")
      // the call was streamed completely, but no assistant message was logged: nothing to answer
      expect(ofType(events, "assistant/message")).toStrictEqual([])
      expect(ofType(events, "tool/call")).toStrictEqual([])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [
          reply.failAt(
            reply.toolCalls([{ name: "echo", arguments: { text: "x" } }]),
            3,
            new LlmError.LlmTransportError({ message: "connection reset" })
          )
        ]
      }))
    ))

  it.effect("the stream ends with finish {kind: error}: the turn ends with the finish's code", () =>
    Effect.gen(function*() {
      const { events } = yield* firstTurn()
      const error = expectErrorTurn(events, "LLM_RATE_LIMIT")
      expect(error.data.message).toContain("slow down")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.text("hm", { finish: FinishReason.error("LLM_RATE_LIMIT", "slow down") })]
      }))
    ))

  it.effect("the stream ends with finish {kind: aborted}: ABORTED", () =>
    Effect.gen(function*() {
      const { events } = yield* firstTurn()
      const error = expectErrorTurn(events, "ABORTED")
      expect(error.data.message).toContain("provider cancelled")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.text("hm", { finish: FinishReason.aborted("provider cancelled") })]
      }))
    ))

  it.effect("the stream ends without finish: LLM_PROTOCOL", () =>
    Effect.gen(function*() {
      const { events } = yield* firstTurn()
      expectErrorTurn(events, "LLM_PROTOCOL")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.chunks([
          { type: "block-start", index: 0, blockType: "text" },
          { type: "text-delta", index: 0, delta: "cut short" }
        ])]
      }))
    ))

  it.effect("the adapter dies (a bug): the turn ends with the defect's code, the agent goes on", () =>
    Effect.gen(function*() {
      const { agent, events } = yield* firstTurn()
      const error = expectErrorTurn(events, "DEFECT")
      expect(error.data.message).toContain("adapter bug")
      yield* run(agent, "second")
      expect(endReasons(yield* agent.session.events)[1]).toStrictEqual({ kind: "completed" })
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.dieAt(reply.text("x"), 1, new Error("adapter bug")), reply.text("ok")]
      }))
    ))

  it.effect("an unknown model: NO_MODEL, with the registered models named", () =>
    Effect.gen(function*() {
      const { events } = yield* firstTurn({ model: "gpt-none" })
      const error = expectErrorTurn(events, "NO_MODEL")
      expect(error.data.message).toContain("scripted")
      expect(yield* requests).toStrictEqual([])
    }).pipe(Effect.scoped, Effect.provide(TestLayer())))
})

/** A seam's middleware that fails with a harness error, or throws. */
type Seam = "request" | "stepResult" | "continuation" | "listener"
const failing = (seam: Seam, how: "fails" | "throws") =>
  Effect.gen(function*() {
    const hooks = yield* AgentHooks
    const fail = <A>(): Effect.Effect<A, Refused> => {
      if (how === "throws") throw new Error(`${seam} middleware bug`)
      return Effect.fail(new Refused({ message: `${seam} refused` }))
    }
    const name = `failing-${seam}`
    switch (seam) {
      case "request":
        return yield* hooks.request.register({ name, around: () => fail() })
      case "stepResult":
        return yield* hooks.stepResult.register({ name, around: () => fail() })
      case "continuation":
        return yield* hooks.continuation.register({ name, around: () => fail() })
      case "listener":
        return yield* hooks.listeners.register({
          name,
          around: (input, next) => (input.event.type === "assistant/message" ? fail() : next(input))
        })
    }
  })

describe("a middleware fails", () => {
  const cases = (["request", "stepResult", "continuation", "listener"] as const).flatMap((seam) =>
    (["fails", "throws"] as const).map((how) => ({ seam, how, code: how === "fails" ? "LLM_INVALID_REQUEST" : "MIDDLEWARE" }))
  )
  for (const { code, how, seam } of cases) {
    it.effect(`the ${seam} middleware ${how}: the turn ends with ${code}, the agent goes on`, () =>
      Effect.gen(function*() {
        const agent = yield* create()
        // the middleware is registered for the first turn only
        yield* Effect.scoped(Effect.andThen(failing(seam, how), run(agent, "first")))
        const events = yield* agent.session.events
        const error = expectErrorTurn(events, code)
        if (how === "throws") expect(error.data.message).toContain(`failing-${seam}`)
        // a failure inside a step names it (the continuation runs after the step ended)
        expect(error.data.step).toBe(seam === "continuation" ? undefined : 1)
        // every call of a logged message is answered: by the tool, or ABORTED if the turn failed first
        const answers = ofType(events, "tool/result").map((e) => e.data.error?.code)
        expect(answers).toStrictEqual(
          seam === "listener" ? ["ABORTED"] : seam === "continuation" ? [undefined] : []
        )
        yield* run(agent, "second")
        expect(endReasons(yield* agent.session.events)[1]).toStrictEqual({ kind: "completed" })
      }).pipe(
        Effect.scoped,
        Effect.provide(TestLayer({
          script: [
            reply.toolCalls([{ name: "echo", arguments: { text: "x" } }], { text: "calling" }),
            reply.text("ok"),
            reply.text("ok")
          ]
        }))
      ))
  }

  it.effect("the agent keeps serving with the failing middleware still registered", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      let failures = 1
      yield* hooks.request.register({
        name: "flaky",
        around: (input, next) => (failures-- > 0 ? Effect.fail(new Refused({ message: "not now" })) : next(input))
      })
      const agent = yield* create()
      yield* run(agent, "first")
      yield* run(agent, "second")
      expect(endReasons(yield* agent.session.events).map((r) => r.kind)).toStrictEqual(["error", "completed"])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("ok")] }))))
})

describe("other failures", () => {
  it.effect("a prompt section that fails: PROMPT_SECTION", () =>
    Effect.gen(function*() {
      const prompt = yield* SystemPrompt
      yield* prompt.addSection({ name: "cwd", content: Effect.die(new Error("ENOENT: no such directory")) })
      const { events } = yield* firstTurn()
      const error = expectErrorTurn(events, "PROMPT_SECTION")
      expect(error.data.message).toContain("\"cwd\"")
      expect(yield* requests).toStrictEqual([])
    }).pipe(Effect.scoped, Effect.provide(TestLayer())))

  it.effect("a seam middleware that gives back a value of another shape: MIDDLEWARE naming it, no DEFECT", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      const scope = yield* Scope.make()
      yield* hooks.request.register({ name: "redactor", around: () => Effect.succeed(42 as never) }).pipe(Scope.provide(scope))
      const first = yield* firstTurn()
      const error = expectErrorTurn(first.events, "MIDDLEWARE")
      expect(error.data.message).toBe("the request middleware (redactor) gave 42, not a model request")
      yield* Scope.close(scope, Exit.void)
      yield* hooks.continuation.register({ name: "keeps-going", around: () => Effect.succeed("yes" as never) })
      const agent = yield* create()
      yield* run(agent, "again")
      const [failed] = ofType(yield* agent.session.events, "error")
      expect(failed?.data).toMatchObject({ code: "MIDDLEWARE", message: "the continuation middleware (keeps-going) gave yes, not true or false" })
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("one"), reply.text("two")] }))))

  it.effect("a prompt assembly middleware that gives back no assembly: MIDDLEWARE naming it", () =>
    Effect.gen(function*() {
      const prompt = yield* SystemPrompt
      yield* prompt.use({ name: "trimmer", around: () => Effect.succeed(null as never) })
      const { events } = yield* firstTurn()
      const error = expectErrorTurn(events, "MIDDLEWARE")
      expect(error.data.message).toBe("the prompt assembly middleware (trimmer) gave null, not an assembly")
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [] }))))

  it.effect("a step-result middleware that gives a message with a made-up block: MIDDLEWARE, the model's own message logged", () =>
    Effect.gen(function*() {
      const hooks = yield* AgentHooks
      yield* hooks.stepResult.register({
        name: "annotator",
        around: () => Effect.succeed({ role: "assistant", content: [{ type: "thought", text: "hm" }] } as never)
      })
      const { events } = yield* firstTurn()
      const error = expectErrorTurn(events, "MIDDLEWARE")
      expect(error.data.message).toContain("the step-result middleware (annotator) gave ")
      expect(error.data.message).toContain("not an assistant message")
      // the failed step is closed with what the model said, not with the middleware's message
      expect(ofType(events, "assistant/message").map((event) => event.data.content)).toStrictEqual([[{ type: "text", text: "ok" }]])
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("ok")] }))))

  const misbehaving: ReadonlyArray<readonly [string, unknown, string]> = [
    ["content that is no Effect", 42, "its content is 42, neither a string nor an Effect"],
    ["an Effect that gives no string", Effect.succeed({ text: "x" }), `its Effect produced {"text":"x"}, not a string`]
  ]
  for (const [what, content, why] of misbehaving) {
    it.effect(`a prompt section with ${what}: PROMPT_SECTION naming it, no request sent`, () =>
      Effect.gen(function*() {
        const prompt = yield* SystemPrompt
        yield* prompt.addSection({ name: "plugin", content } as never)
        const { events } = yield* firstTurn()
        const error = expectErrorTurn(events, "PROMPT_SECTION")
        expect(error.data.message).toContain(`prompt section "plugin" failed: ${why}`)
        expect(yield* requests).toStrictEqual([])
      }).pipe(Effect.scoped, Effect.provide(TestLayer())))
  }

  it.effect("a flush hook that fails: an error event (PERSISTENCE) after turn/end, and the agent goes on", () =>
    Effect.gen(function*() {
      const checkpoint = yield* FlushCheckpoint
      let flushes = 0
      yield* checkpoint.register({
        name: "disk",
        flush: (session) =>
          Effect.suspend(() =>
            flushes++ === 0
              ? Effect.fail(new SessionErrors.PersistenceError({ message: "disk full", sessionId: session.id }))
              : Effect.void
          )
      })
      const agent = yield* create()
      yield* run(agent, "first")
      yield* run(agent, "second")
      const events = yield* agent.session.events
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }, { kind: "completed" }])
      const firstEnd = events.findIndex((e) => e.type === "turn/end")
      expect(events[firstEnd + 1]).toMatchObject({
        type: "error",
        data: { turn: 1, code: "PERSISTENCE", message: "disk full" }
      })
      expect(ofType(events, "error")).toHaveLength(1)
      expect(flushes).toBe(2)
    }).pipe(Effect.scoped, Effect.provide(TestLayer({ script: [reply.text("one"), reply.text("two")] }))))

  it.effect("a tool that dies: its result is TOOL_FAILED and the turn goes on", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* run(agent, "crash it")
      const events = yield* agent.session.events
      const [result] = ofType(events, "tool/result")
      expect(result!.data).toMatchObject({ isError: true, error: { code: "TOOL_FAILED" } })
      expect(textOf(result!.data.content)).toContain("segfault in the tool")
      expect(ofType(events, "error")).toStrictEqual([])
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
      expect(yield* requests).toHaveLength(2)
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        tools: [echo, broken],
        script: [reply.toolCalls([{ name: "broken", arguments: {} }]), reply.text("it crashed")]
      }))
    ))

  it.effect("an unknown tool: UNKNOWN_TOOL, and the turn goes on", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* run(agent, "go")
      const events = yield* agent.session.events
      expect(ofType(events, "tool/result")[0]!.data.error?.code).toBe("UNKNOWN_TOOL")
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        script: [reply.toolCalls([{ name: "ecko", arguments: { text: "x" } }]), reply.text("sorry")]
      }))
    ))

  it.effect("a scripted model asked more than it was scripted: the turn ends SCRIPT_EXHAUSTED", () =>
    Effect.gen(function*() {
      const { events } = yield* firstTurn()
      expectErrorTurn(events, "SCRIPT_EXHAUSTED")
    }).pipe(Effect.scoped, Effect.provide(TestLayer())))
})
