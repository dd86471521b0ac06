/**
 * The permission policy inside an agent, under the invariants: a scripted model whose call is
 * denied reads TOOL_DENIED and answers; a call that is asked and allowed runs, and "always"
 * covers the rest of that agent's session only; with no prompt, the default policy refuses
 * what it would ask about; an abort while the user is asked ends the turn like any abort.
 * The tools are stand-ins named like the capabilities' (`bash`, `write`).
 */
import { Content, History } from "@dsh/llm"
import { AgentLoop } from "@dsh/loop"
import { ScriptedModel } from "@dsh/model"
import { PermissionEvent, PermissionPrompt, Permissions, Policy } from "@dsh/permissions"
import { Testing } from "@dsh/testing"
import { Tool, Tools } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Schema } from "effect"
import { create, endReasons, type Event, kinds, ofType, run, textOf, waitFor } from "./helpers.ts"

const { reply } = ScriptedModel

const ran: Array<string> = []

const bash = Tool.make("bash", {
  description: "Runs a shell command (a stand-in)",
  parameters: Schema.Struct({ command: Schema.String }),
  execute: ({ command }) => Effect.sync(() => (ran.push(command), `$ ${command}\nok`))
})

const write = Tool.make("write", {
  description: "Writes a file (a stand-in)",
  parameters: Schema.Struct({ path: Schema.String, content: Schema.String }),
  execute: ({ path }) => Effect.sync(() => (ran.push(`write ${path}`), `wrote ${path}`))
})

const policy: Policy.Config = {
  rules: [
    { decision: "deny", tool: "bash", command: "rm", reason: "ask the user to remove files" },
    { decision: "allow", tool: "bash", command: ["ls", "git status"] },
    { decision: "ask", tool: ["bash", "write"] }
  ],
  default: "deny"
}

/** The loop over the test layer, the stand-in tools, and the policy with `prompt` (if any). */
const PermissionsLayer = (
  script: ReadonlyArray<ScriptedModel.Reply>,
  config: Policy.Config,
  prompt?: Layer.Layer<PermissionPrompt.PermissionPrompt>
) =>
  AgentLoop.layer.pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        Tools.layer(bash, write),
        prompt === undefined ? Permissions.layer(config) : Permissions.layer(config).pipe(Layer.provide(prompt))
      ).pipe(Layer.orDie, Layer.provideMerge(Testing.layer({ script })))
    )
  )

const results = (events: ReadonlyArray<Event>) =>
  ofType(events, "tool/result").map((e) => `${e.data.callId} ${e.data.error?.code ?? "ok"}: ${textOf(e.data.content)}`)

describe("permissions in an agent", () => {
  it.effect("a denied call: the model reads TOOL_DENIED naming the rule and answers; the tool never runs", () =>
    Effect.gen(function*() {
      ran.length = 0
      const agent = yield* create()
      yield* run(agent, "clean up the build")
      const events = yield* agent.session.events
      const denial =
        `Tool "bash" was denied: the permission policy forbids it (rules[0]: deny bash with a command starting "rm"): ask the user to remove files`
      expect(results(events)).toStrictEqual([`call_1 TOOL_DENIED: ${denial}`])
      expect(ran).toStrictEqual([])
      // the decision is logged between the call and its result
      expect(kinds(events).slice(kinds(events).indexOf("tool/call"), kinds(events).indexOf("tool/result") + 1)).toStrictEqual([
        "tool/call",
        "permission:decision",
        "tool/result"
      ])
      expect(PermissionEvent.decisionsOf(events)).toStrictEqual([{
        callId: "call_1",
        tool: "bash",
        decision: "deny",
        rule: 0,
        reason: denial.replace(`Tool "bash" was denied: `, "")
      }])
      // what the model read next
      const requests = yield* (yield* ScriptedModel.ScriptedModel).requests
      const answered = History.toArray(requests[1]!.messages).flatMap((m) => m.content).find(
        (b): b is Content.ToolResultBlock => b.type === "tool-result"
      )
      expect(answered?.error?.code).toBe("TOOL_DENIED")
      expect(textOf(answered!.content)).toBe(denial)
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
    }).pipe(
      Effect.scoped,
      Effect.provide(PermissionsLayer([
        reply.toolCalls([{ name: "bash", arguments: { command: "ls build && rm -rf build" } }]),
        reply.text("I may not remove it; please run rm -rf build yourself.")
      ], policy))
    ))

  it.effect("an asked call the user allows runs; always covers the rest of the session, and only that session", () =>
    Effect.gen(function*() {
      ran.length = 0
      const first = yield* create()
      yield* run(first, "write the file")
      yield* run(first, "write it again")
      const second = yield* create()
      yield* run(second, "write the file")
      expect(ran).toStrictEqual(["write src/a.ts", "write ./src/a.ts"])
      const asked = yield* (yield* PermissionPrompt.Scripted).asked
      expect(asked.map((r) => [r.sessionId, r.tool, r.rule])).toStrictEqual([
        [first.session.id, "write", 2],
        [second.session.id, "write", 2]
      ])
      expect(asked[0]?.always).toStrictEqual({ decision: "allow", tool: "write", path: `${process.cwd()}/src/a.ts` })
      const decided = (events: ReadonlyArray<Event>) => PermissionEvent.decisionsOf(events).map((d) => d.decision)
      expect(decided(yield* first.session.events)).toStrictEqual(["ask-always", "allow"])
      expect(decided(yield* second.session.events)).toStrictEqual(["ask-deny"])
      expect(results(yield* second.session.events)).toStrictEqual([
        `call_1 TOOL_DENIED: Tool "write" was denied: the user refused (asked by rules[2]: ask bash or write)`
      ])
    }).pipe(
      Effect.scoped,
      Effect.provide(
        PermissionsLayer(
          [
            reply.toolCalls([{ name: "write", arguments: { path: "src/a.ts", content: "one" } }]),
            reply.text("Written."),
            reply.toolCalls([{ name: "write", arguments: { path: "./src/a.ts", content: "two" } }]),
            reply.text("Written again, without asking."),
            reply.toolCalls([{ name: "write", arguments: { path: "src/a.ts", content: "three" } }]),
            reply.text("You refused; I did not write it.")
          ],
          policy
        ).pipe(Layer.provideMerge(PermissionPrompt.scripted(["always", "no"])))
      )
    ))

  it.effect("askBeforeChanges without a prompt: reads run, a command is refused saying no one can be asked", () =>
    Effect.gen(function*() {
      ran.length = 0
      const agent = yield* create()
      yield* run(agent, "look, then change")
      expect(results(yield* agent.session.events)).toStrictEqual([
        `call_1 TOOL_DENIED: Tool "bash" was denied: the permission policy asks the user (rules[1]: ask bash, bash_background, write or edit), and there is no one to ask: no PermissionPrompt is provided`
      ])
    }).pipe(
      Effect.scoped,
      Effect.provide(PermissionsLayer([
        reply.toolCalls([{ name: "bash", arguments: { command: "make" } }]),
        reply.text("I cannot run commands here.")
      ], Policy.askBeforeChanges))
    ))

  it.effect("an abort while the user is asked: the turn ends aborted, the call is answered ABORTED, nothing runs", () =>
    Effect.gen(function*() {
      ran.length = 0
      const questions = yield* Deferred.make<PermissionPrompt.Request>()
      const prompt = PermissionPrompt.layer((request) => Effect.andThen(Deferred.succeed(questions, request), Effect.never))
      yield* Effect.gen(function*() {
        const agent = yield* create()
        yield* agent.send("build it")
        const request = yield* Deferred.await(questions)
        expect(request.always).toStrictEqual({ decision: "allow", tool: "bash", command: ["make"], exact: true })
        yield* agent.abort("the user pressed stop")
        const events = yield* agent.session.events
        expect(endReasons(events)).toStrictEqual([{ kind: "aborted", reason: "the user pressed stop" }])
        expect(ofType(events, "tool/result").map((e) => e.data.error?.code)).toStrictEqual(["ABORTED"])
        expect(PermissionEvent.decisionsOf(events)).toStrictEqual([])
        expect(ran).toStrictEqual([])
        // the agent goes on: the next call is decided by the rules alone
        yield* agent.send("list")
        yield* waitFor(agent.session, "turn/end", (e) => e.data.turn === 2)
        expect(ran).toStrictEqual(["ls"])
      }).pipe(
        Effect.scoped,
        Effect.provide(PermissionsLayer([
          reply.toolCalls([{ name: "bash", arguments: { command: "make" } }]),
          reply.toolCalls([{ name: "bash", arguments: { command: "ls" } }]),
          reply.text("Listed.")
        ], policy, prompt))
      )
    }))
})
