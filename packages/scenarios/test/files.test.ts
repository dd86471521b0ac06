/**
 * The file capability inside an agent, under the invariants: a scripted model reads a file,
 * edits it from what it read, tries to read outside the workspace and is refused with a
 * TOOL_DENIED result it reads, and reports. Real files in a temporary directory.
 */
import { Agents } from "@dsh/agent"
import { Files } from "@dsh/files"
import { type Content, History, type ModelRequest } from "@dsh/llm"
import { AgentLoop } from "@dsh/loop"
import { ScriptedModel } from "@dsh/model"
import { Testing } from "@dsh/testing"
import { ToolResult } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ofType, textOf } from "./helpers.ts"

const { reply } = ScriptedModel

const workspace = Effect.acquireRelease(
  Effect.sync(() => {
    const base = realpathSync(mkdtempSync(join(tmpdir(), "dsh-scenario-files-")))
    mkdirSync(join(base, "project"))
    writeFileSync(join(base, "project", "notes.md"), "# Release\nstatus: draft\nowner: ada\n")
    writeFileSync(join(base, "secret.txt"), "the launch codes\n")
    return { base, root: join(base, "project") }
  }),
  ({ base }) => Effect.sync(() => rmSync(base, { recursive: true, force: true }))
)

/** The tool results of a request's history, in order. */
const results = (request: ModelRequest.ModelRequest): Array<Content.ToolResultBlock> =>
  History.toArray(request.messages).flatMap((m) =>
    m.content.flatMap((block) => (block.type === "tool-result" ? [block] : []))
  )

const script: ReadonlyArray<ScriptedModel.Reply> = [
  reply.toolCalls([{ name: "read", arguments: { path: "notes.md" } }]),
  // the model edits the line it read, copied from the numbered output without its number
  (request) => {
    const shown = ToolResult.textOf(results(request).at(-1)!)
    const line = shown.split("\n").map((l) => l.split("\t")[1] ?? "").find((l) => l.startsWith("status:"))!
    return reply.toolCalls([{ name: "edit", arguments: { path: "notes.md", old: line, new: "status: final" } }])
  },
  reply.toolCalls([{ name: "read", arguments: { path: "../secret.txt" } }]),
  (request) => {
    const [, edit, escape] = results(request)
    return reply.text(
      `${ToolResult.textOf(edit!).split("\n")[0]}; reading ../secret.txt: ${escape!.error?.code ?? "allowed"}`
    )
  }
]

const FilesRuntime = (root: string) =>
  AgentLoop.layer.pipe(
    Layer.provideMerge(Files.layer({ root }).pipe(Layer.orDie, Layer.provideMerge(Testing.layer({ script }))))
  )

describe("files in an agent", () => {
  it.effect("the model reads a file, edits it, is refused outside the root, and reports", () =>
    Effect.gen(function*() {
      const { root } = yield* workspace
      const events = yield* Effect.gen(function*() {
        const agent = yield* (yield* Agents).create({ model: "scripted" })
        yield* agent.send("Mark the release notes final.")
        yield* agent.awaitIdle
        return yield* agent.session.events
      }).pipe(Effect.provide(FilesRuntime(root)))

      expect(readFileSync(join(root, "notes.md"), "utf8")).toBe("# Release\nstatus: final\nowner: ada\n")

      const toolResults = ofType(events, "tool/result").map((e) => ({
        code: e.data.error?.code ?? "ok",
        text: textOf(e.data.content)
      }))
      expect(toolResults).toStrictEqual([
        { code: "ok", text: "     1\t# Release\n     2\tstatus: draft\n     3\towner: ada" },
        {
          code: "ok",
          text: `Edited "notes.md": 1 replacement (line 2)\n@@ -2,1 +2,1 @@\n-status: draft\n+status: final`
        },
        {
          code: "TOOL_DENIED",
          text: `Tool "read" was denied: "../secret.txt" is outside the workspace root ${
            JSON.stringify(root)
          }; paths must stay inside it`
        }
      ])
      // the refusal is a result the model read, and what it reported
      const answers = ofType(events, "assistant/message").map((e) => textOf(e.data.content)).filter((t) => t !== "")
      expect(answers).toStrictEqual([`Edited "notes.md": 1 replacement (line 2); reading ../secret.txt: TOOL_DENIED`])
      expect(ofType(events, "turn/end").map((e) => e.data.reason)).toStrictEqual([{ kind: "completed" }])

      // the change is recorded in the session, by the call that made it
      const edit = ofType(events, "tool/call").find((e) => e.data.name === "edit")!
      expect(events.flatMap((e) => (Files.Changed.is(e) ? [Files.Changed.decode(e)] : []))).toStrictEqual([
        { callId: edit.data.callId, tool: "edit", path: "notes.md", change: "edited", bytes: 35 }
      ])
    }).pipe(Effect.scoped))
})
