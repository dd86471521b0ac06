/**
 * The bash capability inside agents, under the invariants: the scripted model calls the bash
 * tools of `@dsh/bash` on the local backend, with real processes. A non-zero exit is a result
 * the model reads; an abort mid-command answers the call `ABORTED` and leaves no process
 * behind; a background job outlives its turn, logs its start, output and exit to the agent's
 * session, and is killed when the agent is disposed — its exit logged before the agent's last
 * status. Tests wait on what the commands report (a pid sent to a server on 127.0.0.1, a
 * logged event), never on time.
 */
import { BashEvents, BashLocal, BashTools } from "@dsh/bash"
import { AgentLoop } from "@dsh/loop"
import { ScriptedModel } from "@dsh/model"
import type { SessionEvent } from "@dsh/session"
import { Testing } from "@dsh/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Layer, Option, Scope, Stream } from "effect"
import { readFileSync } from "node:fs"
import { createServer, type Socket } from "node:net"
import { create, endReasons, ofType, run, textOf } from "./helpers.ts"

const { reply } = ScriptedModel

/** The loop over the test layer, with the bash tools on the local backend. */
const BashLayer = (script: ReadonlyArray<ScriptedModel.Reply>) =>
  AgentLoop.layer.pipe(
    Layer.provideMerge(
      BashTools.layer.pipe(Layer.orDie, Layer.provideMerge(Layer.merge(Testing.layer({ script }), BashLocal.layer)))
    )
  )

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

/** A shell whose background grandchild (`sleep 1000`) it waits for, printing the grandchild's pid. */
const grandchild = "sh -c 'sleep 1000 & echo $!; wait'"

const resultsOf = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  ofType(events, "tool/result").map((e) => ({ code: e.data.error?.code, text: textOf(e.data.content) }))

describe("bash in an agent", () => {
  it.live("the model runs a command; a non-zero exit is a result it reads, and the turn goes on", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* run(agent, "greet, then fail")
      const events = yield* agent.session.events
      expect(resultsOf(events)).toStrictEqual([{ code: undefined, text: "hello\n[exit code 2]" }])
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
    }).pipe(
      Effect.scoped,
      Effect.provide(BashLayer([
        reply.toolCalls([{ name: "bash", arguments: { command: "echo hello; exit 2" } }]),
        reply.text("It printed hello and exited with 2.")
      ]))
    ))

  it.live("an abort mid-command answers the call ABORTED and leaves no process behind", () =>
    Effect.gen(function*() {
      const report = yield* reporter
      const command = `{ ${grandchild}; } > /dev/tcp/127.0.0.1/${report.port}`
      yield* Effect.gen(function*() {
        // a grace long enough that abort() returns only once the call has ended, its group killed
        const agent = yield* create({ abortGrace: "30 seconds" })
        yield* agent.send("run it")
        const pid = Number(yield* report.line)
        expect(isGone(pid)).toBe(false)
        yield* agent.abort("stop")
        expect(isGone(pid)).toBe(true)
        const events = yield* agent.session.events
        expect(resultsOf(events).map((r) => r.code)).toStrictEqual(["ABORTED"])
        expect(endReasons(events)).toStrictEqual([{ kind: "aborted", reason: "stop" }])
      }).pipe(Effect.scoped, Effect.provide(BashLayer([reply.toolCalls([{ name: "bash", arguments: { command } }])])))
    }).pipe(Effect.scoped))

  it.live("a background job outlives its turn, logs its life, and is killed when the agent is disposed", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const agent = yield* create().pipe(Scope.provide(scope))
      yield* run(agent, "start a server")
      const started = yield* agent.session.events
      expect(resultsOf(started)[0]?.text).toMatch(/^Started job-1 \(pid \d+\)/)
      const pid = Number(
        (yield* agent.session.stream.pipe(
          Stream.map((event) => BashEvents.JobOutput.decode(event)),
          Stream.filter((data) => data !== undefined),
          Stream.runHead,
          Effect.map(Option.getOrThrow)
        )).text.trim()
      )

      // the next turn: the job still runs
      yield* run(agent, "is it up?")
      const checked = resultsOf(yield* agent.session.events)
      expect(checked[1]?.text).toMatch(new RegExp(`^${pid}\\n\\[job-1 is running \\(pid \\d+\\)\\]$`))
      expect(isGone(pid)).toBe(false)

      yield* Scope.close(scope, Exit.void)
      expect(isGone(pid)).toBe(true)
      const events = yield* agent.session.events
      const [jobStarted] = events.flatMap((e) => (BashEvents.JobStarted.is(e) ? [BashEvents.JobStarted.decode(e)!] : []))
      expect(jobStarted).toMatchObject({ jobId: "job-1", command: grandchild, callId: "call_1" })
      expect(isGone(jobStarted!.pid)).toBe(true)
      const exited = events.findIndex((e) => BashEvents.JobExited.is(e))
      expect(BashEvents.JobExited.decode(events[exited]!)).toMatchObject({ jobId: "job-1", exitCode: null, signal: "SIGTERM" })
      // the job's exit is logged before the agent's last status
      expect(events.at(-1)).toMatchObject({ type: "agent/status", data: { status: "disposed" } })
      expect(exited).toBeLessThan(events.length - 1)
    }).pipe(
      Effect.scoped,
      Effect.provide(BashLayer([
        reply.toolCalls([{ name: "bash_background", arguments: { command: grandchild } }]),
        reply.text("Started."),
        reply.toolCalls([{ name: "bash_output", arguments: { jobId: "job-1" } }]),
        reply.text("Still running.")
      ]))
    ))
})
