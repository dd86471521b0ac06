/**
 * A process killed while a tool runs, with the production composition (`Dsh.layer` on JSONL
 * sessions): the loop's checkpoint before the calls run (ADR 0033) leaves the user's message
 * and the call in the file, and the resume answers the call `TOOL_OUTCOME_UNKNOWN` and closes
 * the turn `interrupted` instead of losing it. A real child process, killed with SIGKILL when
 * it says its tool runs.
 */
import { Dsh, ScriptedModel, Tool } from "dsh"
import { History } from "@dsh/llm"
import { Derivation, JsonlSessions } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const child = fileURLToPath(new URL("./fixtures/crash-agent.ts", import.meta.url))

// a child that never says its tool runs is a bug: fail instead of hanging the suite
const WATCHDOG_MS = 60_000

/** Runs the child until its tool runs, then kills it with SIGKILL. */
const killWhileToolRuns = (directory: string): Promise<void> =>
  new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ["--conditions=@dsh/source", child, directory], { stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    const watchdog = setTimeout(() => {
      proc.kill("SIGKILL")
      reject(new Error(`the child never said its tool runs; stdout: ${stdout}; stderr: ${stderr}`))
    }, WATCHDOG_MS)
    proc.stdout.on("data", (data: Buffer) => {
      stdout += data.toString()
      if (stdout.includes("tool running\n")) proc.kill("SIGKILL")
    })
    proc.stderr.on("data", (data: Buffer) => {
      stderr += data.toString()
    })
    proc.on("exit", (_code, signal) => {
      clearTimeout(watchdog)
      if (signal === "SIGKILL") resolve()
      else reject(new Error(`the child ended without being killed; stdout: ${stdout}; stderr: ${stderr}`))
    })
  })

const deploy = Tool.make("deploy", {
  description: "Deploys the build",
  parameters: Schema.Struct({ target: Schema.String }),
  execute: () => Effect.succeed("deployed")
})

describe("a process killed while a tool runs (Dsh.layer, JSONL sessions)", () => {
  it("the message and the call survive; the resume answers it TOOL_OUTCOME_UNKNOWN and the agent goes on", async () => {
    const directory = mkdtempSync(join(tmpdir(), "dsh-crash-"))
    try {
      await killWhileToolRuns(directory)
      const resumed = await Effect.runPromise(Effect.gen(function*() {
        const { repairs, session } = yield* (yield* JsonlSessions.JsonlSessions).resume("crashed")
        const agent = yield* Dsh.agent({ session: { resume: session } })
        const answer = yield* agent.run("did it deploy?")
        const requests = yield* (yield* ScriptedModel.ScriptedModel).requests
        return { repairs, answer, events: yield* session.events, request: requests[0]! }
      }).pipe(
        Effect.scoped,
        Effect.provide(Dsh.layer({
          model: ScriptedModel.layer({ script: [ScriptedModel.reply.text("I cannot tell; I will check")] }),
          tools: [deploy],
          sessions: { directory },
          invariants: true
        }))
      ))
      expect(resumed.repairs).toMatchObject([{ kind: "interrupted-turn", turn: 2, calls: 1 }])
      const texts = resumed.events.flatMap((e) => (e.type === "user/message" && e.data.content[0]?.type === "text" ? [e.data.content[0].text] : []))
      expect(texts).toStrictEqual(["hello", "deploy to staging", "did it deploy?"])
      const unknown = resumed.events.find((e) => e.type === "tool/result")
      expect(unknown?.type === "tool/result" && unknown.data.error?.code).toBe("TOOL_OUTCOME_UNKNOWN")
      expect(resumed.events.find((e) => e.type === "turn/end" && e.data.turn === 2)).toMatchObject({ data: { reason: { kind: "interrupted" } } })
      // the model is told: the call and its unknown outcome are in the history it is sent
      const sent = History.toArray(resumed.request.messages)
      expect(sent.map((m) => m.role)).toStrictEqual(["user", "assistant", "user", "assistant", "user", "user"])
      expect(History.toArray(Derivation.derive(resumed.events)).at(-1)?.role).toBe("assistant")
      expect([resumed.answer.turn, resumed.answer.text]).toStrictEqual([3, "I cannot tell; I will check"])
    } finally {
      rmSync(directory, { recursive: true, force: true })
    }
  }, 120_000)
})
