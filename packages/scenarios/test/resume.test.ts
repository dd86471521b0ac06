/**
 * Resuming agents from JSONL sessions (issue #13, items 12–13): an agent resumed from its file
 * appends to that same file under the same id, and one resumed from a file a crash cut mid-turn
 * starts with the interrupted turn closed under the contract, reported to the caller.
 */
import { Agents } from "@dsh/agent"
import { History } from "@dsh/llm"
import { AgentLoop } from "@dsh/loop"
import { ScriptedModel } from "@dsh/model"
import { JsonlSessions } from "@dsh/session"
import { Testing } from "@dsh/testing"
import { Tools } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Result } from "effect"
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { echo, endReasons, gatedTool, makeGate, ofType, register, requests, run, TestLayer, textOf } from "./helpers.ts"

const { reply } = ScriptedModel

/** The loop over the test layer, with every session persisted in `directory`. */
const PersistedLayer = (directory: string, script: ReadonlyArray<ScriptedModel.Reply>) =>
  AgentLoop.layer.pipe(
    Layer.provideMerge(Tools.layer(echo).pipe(Layer.orDie)),
    Layer.provideMerge(JsonlSessions.layer({ directory }).pipe(Layer.orDie)),
    Layer.provideMerge(Testing.layer({ script }))
  )

describe("#13.12 an agent resumed from a JSONL session", () => {
  it.effect("appends to its own file under its own id; the file holds both runs, seq continuing", () =>
    Effect.gen(function*() {
      const directory = mkdtempSync(join(tmpdir(), "dsh-resume-"))
      // the first run, in a scope (and a layer) of its own
      yield* Effect.gen(function*() {
        const agent = yield* (yield* Agents).create({ model: "scripted", session: { id: "work" } })
        yield* run(agent, "first question")
      }).pipe(Effect.scoped, Effect.provide(PersistedLayer(directory, [reply.text("first answer")])))

      // the second run resumes the file
      yield* Effect.gen(function*() {
        const jsonl = yield* JsonlSessions.JsonlSessions
        const { repairs, session } = yield* jsonl.resume("work")
        expect(repairs).toStrictEqual([])
        const agent = yield* (yield* Agents).create({ model: "scripted", session: { resume: session } })
        expect(agent.session.id).toBe("work")
        yield* run(agent, "second question")
        // the history the model saw carries the first run
        const [request] = yield* requests
        expect(History.toArray(request!.messages).map((m) => m.role)).toStrictEqual(["user", "assistant", "user"])
      }).pipe(Effect.scoped, Effect.provide(PersistedLayer(directory, [reply.text("second answer")])))

      expect(readdirSync(directory).filter((f) => f.endsWith(".jsonl"))).toStrictEqual(["work.jsonl"])
      const file = join(directory, JsonlSessions.fileName("work"))
      const parsed = JsonlSessions.parse(file, new Uint8Array(readFileSync(file)))
      if (Result.isFailure(parsed)) return yield* Effect.die(parsed.failure)
      const loaded = parsed.success
      expect(loaded.events.map((e) => e.seq)).toStrictEqual(loaded.events.map((_, i) => i))
      expect(ofType(loaded.events, "user/message").map((e) => textOf(e.data.content))).toStrictEqual([
        "first question",
        "second question"
      ])
      expect(ofType(loaded.events, "turn/start").map((e) => e.data.turn)).toStrictEqual([1, 2])
    }))
})

describe("#13.13 an agent resumed from a file a crash cut mid-turn", () => {
  it.effect("the resume reports the closed turn; the agent's next request is provider-valid", () =>
    Effect.gen(function*() {
      const directory = mkdtempSync(join(tmpdir(), "dsh-crashed-"))
      // a log as a process killed during a tool leaves it: the call announced, no result
      const cut = yield* Effect.gen(function*() {
        const gates = { hold: yield* makeGate }
        yield* register(gatedTool("slow", gates))
        const agent = yield* (yield* Agents).create({ model: "scripted", session: { id: "crashed" } })
        yield* agent.send("run the slow job")
        yield* Deferred.await(gates.hold.started)
        const events = yield* agent.session.events
        yield* Deferred.succeed(gates.hold.release, undefined)
        return events
      }).pipe(
        Effect.scoped,
        Effect.provide(TestLayer({ script: [reply.toolCalls([{ name: "slow", arguments: { id: "hold" } }]), reply.text("-")] }))
      )
      expect(cut.at(-1)?.type).toBe("tool/call")
      writeFileSync(
        join(directory, JsonlSessions.fileName("crashed")),
        JsonlSessions.headerLine("crashed", 0) + cut.map(JsonlSessions.eventLine).join("")
      )

      yield* Effect.gen(function*() {
        const { repairs, session } = yield* (yield* JsonlSessions.JsonlSessions).resume("crashed")
        expect(repairs).toMatchObject([{ kind: "interrupted-turn", turn: 1, step: 1, calls: 1 }])
        const agent = yield* (yield* Agents).create({ model: "scripted", session: { resume: session } })
        const events = yield* agent.session.events
        expect(events.slice(cut.length).map((e) => e.type)).toStrictEqual([
          "session/repair",
          "tool/result",
          "step/end",
          "turn/end",
          "agent/status"
        ])
        expect(ofType(events, "tool/result")[0]?.data.error?.code).toBe("TOOL_OUTCOME_UNKNOWN")
        expect(endReasons(events)).toMatchObject([{ kind: "interrupted" }])
        yield* run(agent, "did it finish?")
        const [request] = yield* requests
        // the call is answered right after its message: a provider accepts this history
        expect(History.toArray(request!.messages).map((m) => m.content.map((b) => b.type).join("+"))).toStrictEqual([
          "text",
          "tool-call",
          "tool-result",
          "text"
        ])
        expect(endReasons(yield* agent.session.events).at(-1)?.kind).toBe("completed")
      }).pipe(Effect.scoped, Effect.provide(PersistedLayer(directory, [reply.text("it may not have")])))

      const file = join(directory, JsonlSessions.fileName("crashed"))
      const loaded = JsonlSessions.parse(file, new Uint8Array(readFileSync(file)))
      expect(Result.isSuccess(loaded) && endReasons(loaded.success.events).map((r) => r.kind)).toStrictEqual([
        "interrupted",
        "completed"
      ])
    }))
})
