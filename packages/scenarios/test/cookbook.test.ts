/**
 * The code of the cookbook pages docs/cookbook/writing-a-middleware.md (a permission gate and
 * a request middleware) and docs/cookbook/ui-events.md (a UI on `agent.events`), run as
 * scenarios so the pages cannot drift from what works.
 */
import { type Agent, Hooks } from "@dsh/agent"
import { Content, History, type Message } from "@dsh/llm"
import { ScriptedModel } from "@dsh/model"
import type { SessionEvent } from "@dsh/session"
import { Tool, ToolMiddleware, ToolRegistry } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema, Stream } from "effect"
import { create, ofType, requests, TestLayer, textOf } from "./helpers.ts"

const { reply } = ScriptedModel

// ---- writing-a-middleware.md ------------------------------------------------------------------

/** Asks someone (a user, a policy file) whether a tool call may run. */
class Permissions extends Context.Service<Permissions, {
  readonly allows: (call: Content.ToolCallBlock) => Effect.Effect<boolean>
}>()("app/Permissions") {}

/** The gate: registered by a Layer, for the Layer's lifetime, outermost in the chain. */
const PermissionGate = Layer.effectDiscard(Effect.gen(function*() {
  const permissions = yield* Permissions
  const registry = yield* ToolRegistry
  yield* registry.use({
    name: "permission-gate",
    order: -100, // lower runs further outside: nothing else sees a refused call
    around: (call, next) =>
      Effect.flatMap(permissions.allows(call), (allowed) =>
        allowed ? next(call) : ToolMiddleware.deny(call, `the user did not allow ${call.name}`))
  })
}))

/** Redacts API keys from a message: a new message, the logged one is left as it is. */
const redact = (message: Message.Message): Message.Message => ({
  ...message,
  content: message.content.map((block) =>
    block.type === "text" ? Content.text(block.text.replaceAll(/sk-[A-Za-z0-9]{8,}/g, "[secret]")) : block
  )
})

const Redaction = Hooks.layer({
  request: [{
    name: "redact-secrets",
    around: ({ context, request }, next) => next({ context, request: { ...request, messages: History.fromIterable(History.toArray(request.messages).map(redact)) } })
  }]
})

const writeFile = Tool.make("write_file", {
  description: "Writes a file",
  parameters: Schema.Struct({ path: Schema.String, text: Schema.String }),
  execute: ({ path }) => Effect.succeed(`wrote ${path}`)
})
const readFile = Tool.make("read_file", {
  description: "Reads a file",
  parameters: Schema.Struct({ path: Schema.String }),
  concurrencySafe: true,
  execute: ({ path }) => Effect.succeed(`contents of ${path}`)
})

const ReadOnly = Layer.succeed(Permissions, Permissions.of({ allows: (call) => Effect.succeed(call.name === "read_file") }))

describe("cookbook: writing a middleware", () => {
  it.effect("the permission gate denies writes and the request middleware redacts secrets", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* agent.send("my key is sk-abcdef123456; save it in .env")
      yield* agent.awaitIdle
      const events = yield* agent.session.events
      expect(ofType(events, "tool/result").map((e) => [e.data.error?.code, textOf(e.data.content)])).toStrictEqual([
        [undefined, "contents of .env"],
        ["TOOL_DENIED", "Tool \"write_file\" was denied: the user did not allow write_file"]
      ])
      const [first] = yield* requests
      expect(textOf(History.at(first!.messages, 0)!.content)).toBe("my key is [secret]; save it in .env")
      expect(textOf(ofType(events, "user/message")[0]!.data.content)).toBe("my key is sk-abcdef123456; save it in .env")
      expect(ofType(events, "turn/end")[0]!.data.reason).toStrictEqual({ kind: "completed" })
    }).pipe(
      Effect.scoped,
      Effect.provide(
        Layer.mergeAll(PermissionGate, Redaction).pipe(
          Layer.provideMerge(ReadOnly),
          Layer.provideMerge(TestLayer({
            tools: [writeFile, readFile],
            script: [
              reply.toolCalls([
                { name: "read_file", arguments: { path: ".env" } },
                { name: "write_file", arguments: { path: ".env", text: "KEY=…" } }
              ]),
              reply.text("I may not write files here.")
            ]
          }))
        )
      )
    ))

  it.effect("a gate registered in a scope applies until the scope closes", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const agent = yield* create()
      yield* Effect.scoped(Effect.gen(function*() {
        yield* registry.use(ToolMiddleware.denyWhen("plan-mode", (call) =>
          call.name === "write_file" ? "plan mode: describe the change instead" : undefined))
        yield* agent.send("plan it")
        yield* agent.awaitIdle
      }))
      yield* agent.send("now do it")
      yield* agent.awaitIdle
      const codes = ofType(yield* agent.session.events, "tool/result").map((e) => e.data.error?.code)
      expect(codes).toStrictEqual(["TOOL_DENIED", undefined])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        tools: [writeFile],
        script: [
          reply.toolCalls([{ name: "write_file", arguments: { path: "a", text: "x" } }]),
          reply.text("planned"),
          reply.toolCalls([{ name: "write_file", arguments: { path: "a", text: "x" } }]),
          reply.text("done")
        ]
      }))
    ))
})

// ---- ui-events.md ------------------------------------------------------------------------------

/** What a terminal UI prints for each event (chunks as they stream, tools, errors, turn ends). */
const render = (event: SessionEvent.SessionEvent): string | undefined => {
  switch (event.type) {
    case "assistant/chunk":
      return event.data.chunk.type === "text-delta" ? event.data.chunk.delta : undefined
    case "tool/call":
      return `\n[${event.data.name} ${event.data.arguments}]`
    case "tool/result":
      return event.data.isError ? ` failed (${event.data.error?.code})\n` : " ok\n"
    case "steering/message":
      return "\n(steered)\n"
    case "error":
      return `\n! ${event.data.code}: ${event.data.message}\n`
    case "turn/end":
      return event.data.reason.kind === "completed" ? "\n" : `\n(turn ${event.data.reason.kind})\n`
    case "agent/status":
      return `<${event.data.status}>`
    default:
      return undefined
  }
}

/**
 * A UI: the status now, then a fiber printing every event from now on (status changes
 * included, in log order), stopped when the scope closes. It returns an Effect that waits
 * until the UI has drawn everything the agent logged so far: readers run on their own fibers
 * and take what was appended in batches, so `awaitIdle` says the agent is done, not the UI.
 */
const attachUi = (agent: Agent.Agent, print: (text: string) => void) =>
  Effect.gen(function*() {
    print(`<${yield* agent.status}>`)
    let drawn = (yield* agent.session.seq) - 1
    yield* agent.events.pipe(
      Stream.runForEach((event) =>
        Effect.sync(() => {
          const text = render(event)
          if (text !== undefined) print(text)
          drawn = event.seq
        })
      ),
      Effect.forkScoped({ startImmediately: true })
    )
    // `drawn` moves on the UI's fiber; yielding lets it run
    const hasDrawn = (seq: number) => drawn >= seq
    const caughtUp = Effect.gen(function*() {
      const last = (yield* agent.session.seq) - 1
      while (!hasDrawn(last)) yield* Effect.yieldNow
    })
    return caughtUp
  })

describe("cookbook: a UI on agent events", () => {
  it.effect("prints the streamed text, the tool calls and the status changes", () =>
    Effect.gen(function*() {
      let screen = ""
      const agent = yield* create()
      const uiCaughtUp = yield* attachUi(agent, (text) => (screen += text))
      yield* agent.send("read a")
      yield* agent.awaitIdle
      yield* uiCaughtUp
      expect(screen).toBe("<idle><running>Let me look.\n[read_file {\"path\":\"a\"}] ok\nIt says hi.\n<idle>")
    }).pipe(
      Effect.scoped,
      Effect.provide(TestLayer({
        tools: [readFile],
        script: [
          reply.toolCalls([{ name: "read_file", arguments: { path: "a" } }], {
            text: "Let me look.",
            fragment: (s) => s.split(/(?= )/)
          }),
          reply.text("It says hi.", { fragment: (s) => s.split(/(?= )/) })
        ]
      }))
    ))
})
