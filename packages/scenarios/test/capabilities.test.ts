/**
 * The coding capabilities together inside an agent, under the invariants: a scripted model
 * works on a real project in a temporary directory with the file tools (`@dsh/files`) and
 * bash (`@dsh/bash` on the local backend, real processes). It reads a source file, runs the
 * project's tests with bash (they fail: a non-zero exit is a result it reads), edits the file
 * from what it read, runs the tests again (they pass) and reports what it saw.
 *
 * Then the same tools under a permission policy (`@dsh/permissions`) with the everything MCP
 * reference server beside them: path globs, command prefixes and a server name decide, the
 * first matching rule wins, the default decides the rest, an ask goes to the (scripted)
 * prompt and "always" covers the rest of the session; every decision is logged between its
 * call and its result, and a denial is a `TOOL_DENIED` result whose reason the model reads.
 *
 * And a command running when its agent is disposed: its whole process group (a grandchild
 * too) is gone before the disposal returns, and the call is answered `ABORTED`.
 *
 * Tests wait on what the commands report (a pid sent to a server on 127.0.0.1) and on the
 * loop's own completion, never on time.
 */
import { BashLocal, BashTools } from "@dsh/bash"
import { Files } from "@dsh/files"
import { type Content, History, type ModelRequest } from "@dsh/llm"
import { AgentLoop } from "@dsh/loop"
import { Mcp } from "@dsh/mcp"
import { ScriptedModel } from "@dsh/model"
import { PermissionEvent, PermissionPrompt, Permissions, type Policy } from "@dsh/permissions"
import { Testing } from "@dsh/testing"
import { ToolResult } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Layer, Scope } from "effect"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { create, endReasons, type Event, ofType, run, statuses, textOf } from "./helpers.ts"

const { reply } = ScriptedModel

const source = "export const sum = (a, b) => a - b\n"

const testFile = [
  `import assert from "node:assert/strict"`,
  `import { test } from "node:test"`,
  `import { sum } from "../src/sum.mjs"`,
  ``,
  `test("sum adds", () => {`,
  `  assert.equal(sum(2, 3), 5)`,
  `})`,
  ``
].join("\n")

/** The test command the model runs: Node's test runner on the project's one test file. */
const testCommand = "node --test test/sum.test.mjs"

/** A project with a bug and a test that finds it, in a fresh directory removed afterwards. */
const project = Effect.acquireRelease(
  Effect.sync(() => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "dsh-scenario-capabilities-")))
    mkdirSync(join(root, "src"))
    mkdirSync(join(root, "test"))
    writeFileSync(join(root, "src", "sum.mjs"), source)
    writeFileSync(join(root, "test", "sum.test.mjs"), testFile)
    return root
  }),
  (root) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
)

/**
 * The backend commands run on: in the project, with this Node first on the `PATH` (the
 * project's Node, whatever `node` the machine has) and nothing else of this process's
 * environment.
 */
const bashIn = (root: string) =>
  BashLocal.layerWith({
    cwd: root,
    env: { PATH: `${dirname(process.execPath)}:${process.env["PATH"] ?? "/usr/bin:/bin"}`, HOME: root }
  })

/** The coding tools (files and bash) on `root`, registered in the test layer's registry. */
const codingTools = (root: string) =>
  Layer.mergeAll(Files.layer({ root }), BashTools.layer.pipe(Layer.provide(bashIn(root))))

/** The tool results of a request's history, in order. */
const resultsOf = (request: ModelRequest.ModelRequest): Array<Content.ToolResultBlock> =>
  History.toArray(request.messages).flatMap((m) =>
    m.content.flatMap((block) => (block.type === "tool-result" ? [block] : []))
  )

/** The exit status line a bash result ends with: `[exit code N]`. */
const exitLine = (text: string): string => text.split("\n").at(-1)!

const toolResults = (events: ReadonlyArray<Event>) =>
  ofType(events, "tool/result").map((e) => ({ code: e.data.error?.code ?? "ok", text: textOf(e.data.content) }))

describe("the coding tools in an agent", () => {
  // the model reads, tests, edits from what it read, tests again, and reports what bash said
  const script: ReadonlyArray<ScriptedModel.Reply> = [
    reply.toolCalls([{ name: "read", arguments: { path: "src/sum.mjs" } }]),
    reply.toolCalls([{ name: "bash", arguments: { command: testCommand } }]),
    (request) => {
      // the line it read, without its number: what edit must be given exactly
      const read = ToolResult.textOf(resultsOf(request)[0]!)
      const line = read.split("\n").map((l) => l.split("\t")[1] ?? "").find((l) => l.includes("a - b"))!
      return reply.toolCalls([{
        name: "edit",
        arguments: { path: "src/sum.mjs", old: line, new: line.replace("a - b", "a + b") }
      }])
    },
    reply.toolCalls([{ name: "bash", arguments: { command: testCommand } }]),
    (request) => {
      const [, before, edit, after] = resultsOf(request).map((r) => ToolResult.textOf(r))
      return reply.text(
        `${edit!.split("\n")[0]}. The tests: ${exitLine(before!)} before the edit, ${exitLine(after!)} after it.`
      )
    }
  ]

  it.live("the model reads a file, runs the tests (they fail), edits it, runs them again (they pass) and reports", () =>
    Effect.gen(function*() {
      const root = yield* project
      const events = yield* Effect.gen(function*() {
        const agent = yield* create()
        const { text } = yield* agent.run("The sum test fails. Fix src/sum.mjs and make sure the tests pass.")
        expect(text).toBe(`Edited "src/sum.mjs": 1 replacement (line 1). The tests: [exit code 1] before the edit, [exit code 0] after it.`)
        return yield* agent.session.events
      }).pipe(
        Effect.scoped,
        Effect.provide(
          AgentLoop.layer.pipe(
            Layer.provideMerge(codingTools(root).pipe(Layer.orDie, Layer.provideMerge(Testing.layer({ script }))))
          )
        )
      )

      // the file really changed, and the test file did not
      expect(readFileSync(join(root, "src", "sum.mjs"), "utf8")).toBe("export const sum = (a, b) => a + b\n")
      expect(readFileSync(join(root, "test", "sum.test.mjs"), "utf8")).toBe(testFile)
      // nothing but the project: the atomic write left no temporary file behind
      expect(readdirSync(join(root, "src"))).toStrictEqual(["sum.mjs"])

      const [read, failing, edited, passing] = toolResults(events)
      expect(ofType(events, "tool/call").map((e) => e.data.name)).toStrictEqual(["read", "bash", "edit", "bash"])
      expect(read).toStrictEqual({ code: "ok", text: "     1\texport const sum = (a, b) => a - b" })
      // bash really ran Node's test runner: the failure it reported, as a result the model read
      expect(failing!.code).toBe("ok")
      expect(failing!.text).toMatch(/✖ sum adds/)
      expect(failing!.text).toMatch(/\bfail 1\b/)
      expect(failing!.text).toMatch(/\n\[exit code 1\]$/)
      expect(edited).toStrictEqual({
        code: "ok",
        text: `Edited "src/sum.mjs": 1 replacement (line 1)\n@@ -1,1 +1,1 @@\n` +
          "-export const sum = (a, b) => a - b\n+export const sum = (a, b) => a + b"
      })
      expect(passing!.code).toBe("ok")
      expect(passing!.text).toMatch(/✔ sum adds/)
      expect(passing!.text).toMatch(/\bpass 1\b/)
      expect(passing!.text).toMatch(/\bfail 0\b/)
      expect(passing!.text).toMatch(/\n\[exit code 0\]$/)

      // the change is recorded by the call that made it; one turn, completed
      const editCall = ofType(events, "tool/call").find((e) => e.data.name === "edit")!
      expect(events.flatMap((e) => (Files.Changed.is(e) ? [Files.Changed.decode(e)] : []))).toStrictEqual([
        { callId: editCall.data.callId, tool: "edit", path: "src/sum.mjs", change: "edited", bytes: 35 }
      ])
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
    }).pipe(Effect.scoped), 60_000)
})

const everything = {
  command: process.execPath,
  args: [fileURLToPath(import.meta.resolve("@modelcontextprotocol/server-everything/dist/index.js")), "stdio"]
}

const policy: Policy.Config = {
  rules: [
    { decision: "deny", tool: ["write", "edit"], path: "test/**", reason: "the tests are not changed to make them pass" },
    { decision: "deny", tool: ["bash", "bash_background"], command: "rm", reason: "nothing is removed here" },
    { decision: "allow", tool: ["read", "edit"], path: "src/**" },
    { decision: "allow", tool: "bash", command: "node --test" },
    { decision: "ask", tool: "bash" },
    { decision: "allow", server: "everything" }
  ],
  default: "deny"
}

describe("the coding tools and an MCP server under a permission policy", () => {
  const calls: ReadonlyArray<{ readonly name: string; readonly arguments: Record<string, unknown> }> = [
    // rules[0]: a path glob denies editing the tests
    { name: "edit", arguments: { path: "test/sum.test.mjs", old: "5)", new: "-1)" } },
    // rules[1]: a command prefix denies rm, wherever it is in the line
    { name: "bash", arguments: { command: `rm -rf test && ${testCommand}` } },
    // rules[2]: a path glob allows reading and editing the sources
    { name: "read", arguments: { path: "src/sum.mjs" } },
    { name: "edit", arguments: { path: "./src/sum.mjs", old: "a - b", new: "a + b" } },
    // rules[3]: a command prefix allows the test runner
    { name: "bash", arguments: { command: testCommand } },
    // rules[4]: any other command is asked about; "always" allows it again without asking
    { name: "bash", arguments: { command: "ls src" } },
    { name: "bash", arguments: { command: "ls src" } },
    // rules[5]: a server name allows the MCP server's tools
    { name: "everything__echo", arguments: { message: "tests pass" } },
    // no rule: the default denies
    { name: "write", arguments: { path: "NOTES.md", content: "fixed sum\n" } }
  ]
  const script: ReadonlyArray<ScriptedModel.Reply> = [
    ...calls.map((call) => reply.toolCalls([call])),
    (request) =>
      reply.text(resultsOf(request).map((r) => r.error?.code ?? "ok").join(", "))
  ]

  it.live("path globs, command prefixes and a server name decide; every decision is logged; denials reach the model", () =>
    Effect.gen(function*() {
      const root = yield* project
      const { asked, events, requests } = yield* Effect.gen(function*() {
        const agent = yield* create()
        yield* run(agent, "Fix the sum and tell me when the tests pass.")
        return {
          events: yield* agent.session.events,
          asked: yield* (yield* PermissionPrompt.Scripted).asked,
          requests: yield* (yield* ScriptedModel.ScriptedModel).requests
        }
      }).pipe(
        Effect.scoped,
        Effect.provide(
          AgentLoop.layer.pipe(
            Layer.provideMerge(
              Layer.mergeAll(codingTools(root), Mcp.layer({ servers: { everything } }), Permissions.layer(policy, { root }))
                .pipe(
                  Layer.orDie,
                  Layer.provideMerge(PermissionPrompt.scripted(["always"])),
                  Layer.provideMerge(Testing.layer({ script }))
                )
            )
          )
        )
      )

      const decisions = PermissionEvent.decisionsOf(events)
      expect(decisions.map((d) => [d.tool, d.decision, d.rule])).toStrictEqual([
        ["edit", "deny", 0],
        ["bash", "deny", 1],
        ["read", "allow", 2],
        ["edit", "allow", 2],
        ["bash", "allow", 3],
        ["bash", "ask-always", 4],
        ["bash", "allow", 4],
        ["everything__echo", "allow", 5],
        ["write", "deny", "default"]
      ])
      // "always" added the exact command for the rest of the session, and the second call used it
      const alwaysRule = { decision: "allow", tool: "bash", command: ["ls src"], exact: true, cwd: root }
      expect(decisions[5]!.always).toStrictEqual(alwaysRule)
      expect(decisions[6]!.always).toStrictEqual(alwaysRule)
      expect(asked.map((r) => [r.tool, r.arguments, r.rule])).toStrictEqual([
        ["bash", JSON.stringify({ command: "ls src" }), 4]
      ])

      // every decision is logged after its call and before its result
      for (const decision of decisions) {
        const at = (type: string) =>
          events.findIndex((e) =>
            e.type === type && (e.data as { readonly callId?: string }).callId === decision.callId
          )
        const logged = events.findIndex((e) => PermissionEvent.Decision.decode(e)?.callId === decision.callId)
        expect(at("tool/call")).toBeLessThan(logged)
        expect(logged).toBeLessThan(at("tool/result"))
      }

      // the denials are results with their reasons, which the model read in its next request
      const denials = {
        edit: `Tool "edit" was denied: the permission policy forbids it (rules[0]: deny write or edit with a path ` +
          `matching "test/**"): the tests are not changed to make them pass`,
        rm: `Tool "bash" was denied: the permission policy forbids it (rules[1]: deny bash or bash_background with a ` +
          `command starting "rm"): nothing is removed here`,
        write: `Tool "write" was denied: the permission policy forbids it (the default decision, as no rule matched)`
      }
      const results = toolResults(events)
      expect(results.map((r) => r.code)).toStrictEqual([
        "TOOL_DENIED",
        "TOOL_DENIED",
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "TOOL_DENIED"
      ])
      expect([results[0]!.text, results[1]!.text, results[8]!.text]).toStrictEqual([denials.edit, denials.rm, denials.write])
      expect(decisions[0]!.reason).toBe(denials.edit.replace(`Tool "edit" was denied: `, ""))
      const readByModel = resultsOf(requests.at(-1)!)
      expect(readByModel.map((r) => r.error?.code ?? "ok")).toStrictEqual(results.map((r) => r.code))
      expect(ToolResult.textOf(readByModel[1]!)).toBe(denials.rm)

      // what was allowed ran for real; what was denied never did
      expect(readFileSync(join(root, "src", "sum.mjs"), "utf8")).toBe("export const sum = (a, b) => a + b\n")
      expect(readFileSync(join(root, "test", "sum.test.mjs"), "utf8")).toBe(testFile)
      expect(readdirSync(root).sort()).toStrictEqual(["src", "test"])
      expect(results[4]!.text).toMatch(/\n\[exit code 0\]$/)
      expect(results[5]!.text).toBe("sum.mjs\n[exit code 0]")
      expect(results[7]!.text).toBe("Echo: tests pass")
      expect(ofType(events, "assistant/message").map((e) => textOf(e.data.content)).at(-1)).toBe(
        "TOOL_DENIED, TOOL_DENIED, ok, ok, ok, ok, ok, ok, TOOL_DENIED"
      )
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
    }).pipe(Effect.scoped), 90_000)
})

/** Whether a process is gone; a zombie (dead, not yet reaped by init) counts as gone. */
const isGone = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH"
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return true
  }
}

/** A server on 127.0.0.1 a command sends its output to (`> /dev/tcp/127.0.0.1/<port>`); `line` is its first line. */
const reporter = Effect.gen(function*() {
  const line = yield* Deferred.make<string>()
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
    socket.setEncoding("utf8")
    let text = ""
    socket.on("data", (data: string) => {
      text += data
      if (text.includes("\n")) Deferred.doneUnsafe(line, Exit.succeed(text.slice(0, text.indexOf("\n"))))
    })
  })
  const port = yield* Effect.acquireRelease(
    Effect.callback<number>((resume) => {
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
      })
    }),
    () =>
      Effect.callback<void>((resume) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  )
  return { port, line: Deferred.await(line) }
})

describe("bash when its agent is aborted or disposed", () => {
  it.live("a command running at disposal: its whole group is gone before the disposal returns; the call is ABORTED", () =>
    Effect.gen(function*() {
      const root = yield* project
      const report = yield* reporter
      // a shell whose background grandchild it waits for, reporting the grandchild's pid
      const command = `{ sh -c 'sleep 1000 & echo $!; wait'; } > /dev/tcp/127.0.0.1/${report.port}`
      yield* Effect.gen(function*() {
        const scope = yield* Scope.make()
        // a grace long enough that the disposal returns only once the call has ended, its group killed
        const agent = yield* create({ abortGrace: "30 seconds" }).pipe(Scope.provide(scope))
        yield* agent.send("run it")
        const pid = Number(yield* report.line)
        expect(isGone(pid)).toBe(false)

        yield* Scope.close(scope, Exit.void)
        expect(isGone(pid)).toBe(true)
        const events = yield* agent.session.events
        expect(ofType(events, "tool/result").map((e) => e.data.error?.code)).toStrictEqual(["ABORTED"])
        expect(endReasons(events)).toStrictEqual([{ kind: "disposed" }])
        expect(statuses(events, agent.id).at(-1)).toBe("disposed")
        expect(events.at(-1)).toMatchObject({ type: "agent/status", data: { status: "disposed" } })
      }).pipe(
        Effect.scoped,
        Effect.provide(
          AgentLoop.layer.pipe(
            Layer.provideMerge(
              codingTools(root).pipe(
                Layer.orDie,
                Layer.provideMerge(Testing.layer({ script: [reply.toolCalls([{ name: "bash", arguments: { command } }])] }))
              )
            )
          )
        )
      )
    }).pipe(Effect.scoped))

  it.live("an abort kills the running command's group but not the agent's background job, which dies with the agent", () =>
    Effect.gen(function*() {
      const root = yield* project
      const jobReport = yield* reporter
      const commandReport = yield* reporter
      const grandchild = "sh -c 'sleep 1000 & echo $!; wait'"
      const job = `{ ${grandchild}; } > /dev/tcp/127.0.0.1/${jobReport.port}`
      const command = `{ ${grandchild}; } > /dev/tcp/127.0.0.1/${commandReport.port}`
      yield* Effect.gen(function*() {
        const scope = yield* Scope.make()
        const agent = yield* create({ abortGrace: "30 seconds" }).pipe(Scope.provide(scope))
        yield* agent.send("start the server, then run the command")
        const jobPid = Number(yield* jobReport.line)
        const commandPid = Number(yield* commandReport.line)

        // the abort is the turn's: the command it was running goes, the job the agent owns stays
        yield* agent.abort("stop")
        expect(isGone(commandPid)).toBe(true)
        expect(isGone(jobPid)).toBe(false)
        const aborted = yield* agent.session.events
        expect(ofType(aborted, "tool/result").map((e) => e.data.error?.code ?? "ok")).toStrictEqual(["ok", "ABORTED"])
        expect(endReasons(aborted)).toStrictEqual([{ kind: "aborted", reason: "stop" }])
        expect(aborted.some((e) => e.type === "bash:job-exited")).toBe(false)

        yield* Scope.close(scope, Exit.void)
        expect(isGone(jobPid)).toBe(true)
        const events = yield* agent.session.events
        const exited = events.findIndex((e) => e.type === "bash:job-exited")
        expect(events[exited]?.data).toMatchObject({ jobId: "job-1", exitCode: null, signal: "SIGTERM" })
        expect(exited).toBeLessThan(events.length - 1)
        expect(events.at(-1)).toMatchObject({ type: "agent/status", data: { status: "disposed" } })
      }).pipe(
        Effect.scoped,
        Effect.provide(
          AgentLoop.layer.pipe(
            Layer.provideMerge(
              codingTools(root).pipe(
                Layer.orDie,
                Layer.provideMerge(Testing.layer({
                  script: [
                    reply.toolCalls([{ name: "bash_background", arguments: { command: job } }]),
                    reply.toolCalls([{ name: "bash", arguments: { command } }])
                  ]
                }))
              )
            )
          )
        )
      )
    }).pipe(Effect.scoped))
})
