/**
 * Background jobs on the local backend, with real processes: reading new output, waiting,
 * killing the group, ownership (an agent's jobs, the layer's jobs), the session events of a
 * job started in an agent's call, and bounded output. A call of an agent is given by
 * `ToolContext.within`, as the loop does, over a real session and a real scope.
 */
import { Bash, BashEvents, BashLocal } from "@dsh/bash"
import { Ids } from "@dsh/llm"
import { type Session, SessionEvent, SessionStore } from "@dsh/session"
import { ToolContext } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { writeFile } from "node:fs/promises"
import { join } from "node:path"
import { grandchild, isGone, reporter, reportTo, tempDir } from "./helpers.ts"

const bash = Bash.Bash.use(Effect.succeed)

/** Runs an effect as a tool call of `agentId`, as the loop does. */
const asCall = (session: Session.Session, agentScope: Scope.Scope, agentId = "agent-1") =>
  ToolContext.within({ agentId, session, turn: 1, step: 1, callId: Ids.callId("call_1"), agentScope })

const newSession = SessionStore.use((store) => store.create())

/** The first event of a definition whose data matches, waiting for it if it is not logged yet. */
const eventOf = <Type extends SessionEvent.ExtensionType, A>(
  session: Session.Session,
  definition: SessionEvent.Definition<Type, A>,
  where: (data: A) => boolean = () => true
) =>
  session.stream.pipe(
    Stream.map((event) => definition.decode(event)),
    Stream.filter((data): data is A => data !== undefined && where(data)),
    Stream.runHead,
    Effect.map(Option.getOrThrow)
  )

const dataOf = <Type extends SessionEvent.ExtensionType, A>(
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  definition: SessionEvent.Definition<Type, A>
): Array<A> => events.flatMap((event) => (definition.is(event) ? [definition.decode(event)!] : []))

const fifo = (dir: string, name: string) => {
  const path = join(dir, name)
  execFileSync("mkfifo", [path])
  return path
}

const Sessions = SessionStore.layer
const Layer_ = Layer.mergeAll(BashLocal.layer, Sessions)

describe("background jobs", () => {
  it.live("start answers at once; output reads what is new since the last read; wait answers when it ends", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("dsh-bash-job-")
      const gate = fifo(dir, "gate")
      const session = yield* newSession
      const agentScope = yield* Scope.make()
      const service = yield* bash
      const call = asCall(session, agentScope)

      const job = yield* service.start({ command: `echo one; read line < gate; echo two; exit 5`, cwd: dir }).pipe(call)
      expect(job).toMatchObject({ id: "job-1", cwd: dir, status: { _tag: "Running" } })
      yield* eventOf(session, BashEvents.JobOutput, (data) => data.text.includes("one"))

      const first = yield* service.output(job.id).pipe(call)
      expect(first.output.text).toBe("one\n")
      expect(first.job.status._tag).toBe("Running")
      expect((yield* service.output(job.id).pipe(call)).output).toMatchObject({ text: "", chars: 0 })

      yield* Effect.promise(() => writeFile(gate, "go\n"))
      const waited = yield* service.wait(job.id).pipe(call)
      expect(waited).toMatchObject({ timedOut: false, output: { text: "two\n" } })
      expect(waited.job.status).toStrictEqual({ _tag: "Exited", exitCode: 5, signal: null })

      const events = yield* session.events
      const started = dataOf(events, BashEvents.JobStarted)
      expect(started).toStrictEqual([{ jobId: "job-1", command: job.command, cwd: dir, pid: job.pid, callId: "call_1" }])
      expect(dataOf(events, BashEvents.JobOutput).map((data) => data.text).join("")).toBe("one\ntwo\n")
      expect(dataOf(events, BashEvents.JobExited)).toStrictEqual([
        { jobId: "job-1", exitCode: 5, signal: null, outputChars: 8 }
      ])
      // started, then its output, then its exit
      const order = events.map((e) => e.type).filter((type) => type.startsWith("bash:"))
      expect(order[0]).toBe("bash:job-started")
      expect(order.at(-1)).toBe("bash:job-exited")
      yield* Scope.close(agentScope, Exit.void)
    }).pipe(Effect.provide(Layer_)))

  it.live("kill stops the whole group (SIGTERM) and answers how the job ended", () =>
    Effect.gen(function*() {
      const report = yield* reporter
      const service = yield* bash
      const job = yield* service.start({ command: reportTo(report, grandchild) })
      const pid = Number(yield* report.line)
      expect(isGone(pid)).toBe(false)
      const killed = yield* service.kill(job.id)
      expect(killed.job.status).toStrictEqual({ _tag: "Exited", exitCode: null, signal: "SIGTERM" })
      expect(isGone(pid)).toBe(true)
      // a job that ended is left as it is
      expect((yield* service.kill(job.id)).job.status).toStrictEqual(killed.job.status)
    }).pipe(Effect.provide(Layer_)))

  it.effect("wait gives up at its timeout, and the job goes on", () =>
    Effect.gen(function*() {
      const report = yield* reporter
      const service = yield* bash
      const job = yield* service.start({ command: reportTo(report, grandchild) })
      const pid = Number(yield* report.line)
      const waiting = yield* Effect.forkChild(service.wait(job.id, { timeout: "5 seconds" }), { startImmediately: true })
      yield* TestClock.adjust("5 seconds")
      const waited = yield* Fiber.join(waiting)
      expect(waited.timedOut).toBe(true)
      expect(waited.job.status._tag).toBe("Running")
      expect(isGone(pid)).toBe(false)
      yield* service.kill(job.id)
      expect(isGone(pid)).toBe(true)
    }).pipe(Effect.provide(Layer_)))

  it.live("a wait's timeout of zero, below zero or no duration reads at once; a job id that is no string is not found", () =>
    Effect.gen(function*() {
      const report = yield* reporter
      const service = yield* bash
      const job = yield* service.start({ command: reportTo(report, grandchild) })
      yield* report.line
      for (const timeout of [0, -5, Number.NaN, "soon"]) {
        const waited = yield* service.wait(job.id, { timeout: timeout as Bash.WaitOptions["timeout"] })
        expect(waited).toMatchObject({ timedOut: true, job: { status: { _tag: "Running" } } })
      }
      const notFound = yield* service.output(5 as unknown as string).pipe(Effect.flip)
      expect(notFound).toMatchObject({ _tag: "JobNotFoundError", code: "JOB_NOT_FOUND", jobId: "5", known: [job.id] })
      yield* service.kill(job.id)
    }).pipe(Effect.provide(Layer_)))

  it.live("a job belongs to its agent: others do not see it, and an unknown id is JOB_NOT_FOUND naming the caller's jobs", () =>
    Effect.gen(function*() {
      const session = yield* newSession
      const other = yield* newSession
      const scopeA = yield* Scope.make()
      const scopeB = yield* Scope.make()
      const service = yield* bash
      const asA = asCall(session, scopeA, "agent-a")
      const asB = asCall(other, scopeB, "agent-b")
      const job = yield* service.start({ command: "exit 0" }).pipe(asA)
      yield* service.wait(job.id).pipe(asA)

      const fromB = yield* service.output(job.id).pipe(asB, Effect.flip)
      expect(fromB).toMatchObject({ _tag: "JobNotFoundError", code: "JOB_NOT_FOUND", jobId: job.id, known: [] })
      expect(fromB.message).toBe(`No background job "${job.id}": this agent has started none`)
      const outside = yield* service.wait(job.id).pipe(Effect.flip)
      expect(outside.message).toBe(`No background job "${job.id}": this Bash layer (outside an agent) has started none`)
      const unknown = yield* service.kill("job-99").pipe(asA, Effect.flip)
      expect(unknown.known).toStrictEqual([job.id])
      expect(unknown.message).toBe(`No background job "job-99" among the jobs of this agent: ${job.id}`)

      expect((yield* service.jobs.pipe(asA)).map((j) => j.id)).toStrictEqual([job.id])
      expect(yield* service.jobs.pipe(asB)).toStrictEqual([])
      expect(yield* service.jobs).toStrictEqual([])
      // the other agent's log has nothing of it
      expect((yield* other.events).filter((e) => e.type.startsWith("bash:"))).toStrictEqual([])
      yield* Scope.close(scopeA, Exit.void)
      yield* Scope.close(scopeB, Exit.void)
    }).pipe(Effect.provide(Layer_)))

  it.live("closing the agent's scope kills its running jobs and logs their exits before it returns", () =>
    Effect.gen(function*() {
      const session = yield* newSession
      const agentScope = yield* Scope.make()
      const service = yield* bash
      const job = yield* service.start({ command: grandchild }).pipe(asCall(session, agentScope))
      const pid = Number((yield* eventOf(session, BashEvents.JobOutput)).text.trim())
      expect(isGone(pid)).toBe(false)

      yield* Scope.close(agentScope, Exit.void)
      expect(isGone(pid)).toBe(true)
      expect(isGone(job.pid)).toBe(true)
      expect(dataOf(yield* session.events, BashEvents.JobExited)).toStrictEqual([
        { jobId: job.id, exitCode: null, signal: "SIGTERM", outputChars: `${pid}\n`.length }
      ])
    }).pipe(Effect.provide(Layer_)))

  it.live("outside an agent a job belongs to the layer, and ends with it", () =>
    Effect.gen(function*() {
      const report = yield* reporter
      const pid = yield* Effect.gen(function*() {
        yield* (yield* bash).start({ command: reportTo(report, grandchild) })
        return Number(yield* report.line)
      }).pipe(Effect.provide(BashLocal.layer))
      expect(isGone(pid)).toBe(true)
    }))

  it.live("a job's output is bounded at each read and spilled whole; its events are coalesced and within the budget", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("dsh-bash-jobspill-")
      const Limited = Layer.mergeAll(
        BashLocal.layerWith({ outputLimit: 1000, spillDirectory: dir, jobEvents: { maxChars: 500, budget: 5000 } }),
        Sessions
      )
      yield* Effect.gen(function*() {
        const session = yield* newSession
        const agentScope = yield* Scope.make()
        const call = asCall(session, agentScope)
        const service = yield* bash
        const job = yield* service.start({ command: "seq 1 20000" }).pipe(call)
        const waited = yield* service.wait(job.id).pipe(call)
        const full = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join("")

        const { chars, cutChars, file, text } = waited.output
        expect(chars).toBe(full.length)
        expect(cutChars).toBeGreaterThan(full.length - 1000)
        expect(file?.startsWith(dir)).toBe(true)
        expect(text).toContain(`characters cut here; the full output is in ${file} …]`)
        expect(readFileSync(file!, "utf8")).toBe(full)

        const events = yield* session.events
        const output = dataOf(events, BashEvents.JobOutput)
        expect(output.every((data) => data.stream === "stdout" && data.text.length <= 500)).toBe(true)
        expect(output.map((data) => data.text).join("")).toBe(full.slice(0, 5000))
        // coalesced: about the fewest events of 500 characters that hold the budget
        expect(output.length).toBeLessThan(40)
        expect(dataOf(events, BashEvents.JobExited)).toStrictEqual([
          { jobId: job.id, exitCode: 0, signal: null, outputChars: full.length, outputFile: file! }
        ])
        yield* Scope.close(agentScope, Exit.void)
      }).pipe(Effect.provide(Limited))
    }))

  it.live("the events' budget ends on a whole character: no half of a surrogate pair is logged", () =>
    Effect.gen(function*() {
      yield* Effect.gen(function*() {
        const session = yield* newSession
        const agentScope = yield* Scope.make()
        const call = asCall(session, agentScope)
        const service = yield* bash
        // "a", then U+1F600 (two UTF-16 code units), then "b": a budget of 2 ends inside the pair
        const job = yield* service.start({ command: "printf 'a\\xf0\\x9f\\x98\\x80b'" }).pipe(call)
        const waited = yield* service.wait(job.id).pipe(call)
        expect(waited.output.text).toBe("a\u{1F600}b")
        const events = yield* session.events
        expect(dataOf(events, BashEvents.JobOutput).map((data) => data.text)).toStrictEqual(["a"])
        expect(dataOf(events, BashEvents.JobExited)).toStrictEqual([
          { jobId: job.id, exitCode: 0, signal: null, outputChars: 4 }
        ])
        yield* Scope.close(agentScope, Exit.void)
      }).pipe(Effect.provide(Layer.mergeAll(BashLocal.layerWith({ jobEvents: { budget: 2 } }), Sessions)))
    }))

  it.live("a job that cannot start is COMMAND_FAILED and leaves no job behind", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("dsh-bash-jobfail-")
      const service = yield* bash
      const error = yield* service.start({ command: "true", cwd: join(dir, "missing") }).pipe(Effect.flip)
      expect(error.code).toBe("COMMAND_FAILED")
      expect(yield* service.jobs).toStrictEqual([])
      // nor an id: the next job that runs is the first
      const job = yield* service.start({ command: "true", cwd: dir })
      expect(job.id).toBe("job-1")
    }).pipe(Effect.provide(Layer_)))
})
