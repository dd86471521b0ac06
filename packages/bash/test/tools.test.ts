/**
 * The bash tools through the tool registry, on the local backend: what the model reads for an
 * exit, a signal, a timeout, a command that cannot start, a job's life, an unknown job id; and
 * the schemas the model is shown.
 */
import { BashLocal, BashTools } from "@dsh/bash"
import { Content, Ids } from "@dsh/llm"
import { ToolRegistry, ToolResult } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { copyTo, grandchild, isGone, reporter, reportTo } from "./helpers.ts"

const Live = BashTools.layer.pipe(Layer.provideMerge(ToolRegistry.layer), Layer.provide(BashLocal.layer), Layer.orDie)

let calls = 0
const call = (name: string, args: unknown) =>
  ToolRegistry.use((registry) => registry.execute(Content.toolCall(Ids.callId(`c${++calls}`), name, JSON.stringify(args))))

const answer = (result: Content.ToolResultBlock) => ({
  text: ToolResult.textOf(result),
  isError: result.isError,
  code: result.error?.code
})

describe("BashTools", () => {
  it.effect("the schemas the model sees: six tools, what each requires", () =>
    Effect.gen(function*() {
      const schemas = yield* ToolRegistry.use((registry) => registry.schemas())
      expect(schemas.map((s) => [s.name, s.parameters["required"] ?? []])).toStrictEqual([
        ["bash", ["command"]],
        ["bash_background", ["command"]],
        ["bash_output", ["jobId"]],
        ["bash_wait", ["jobId"]],
        ["bash_kill", ["jobId"]],
        ["bash_jobs", []]
      ])
      const bash = schemas[0]!.parameters["properties"] as Record<string, Record<string, unknown>>
      expect(Object.keys(bash)).toStrictEqual(["command", "cwd", "timeout", "env"])
      expect(bash["timeout"]).toMatchObject({ type: "integer", minimum: 1 })
      expect(bash["env"]).toMatchObject({ type: "object", additionalProperties: { type: "string" } })
    }).pipe(Effect.provide(Live)))

  it.live("bash: a non-zero exit is a result the model reads, not an error", () =>
    Effect.gen(function*() {
      expect(answer(yield* call("bash", { command: "echo hello; exit 3" }))).toStrictEqual({
        text: "hello\n[exit code 3]",
        isError: false,
        code: undefined
      })
      expect(answer(yield* call("bash", { command: "true" })).text).toBe("(no output)\n[exit code 0]")
      expect(answer(yield* call("bash", { command: "kill -KILL $$" })).text).toBe("(no output)\n[killed by signal SIGKILL]")
      expect(answer(yield* call("bash", { command: "echo $GREETING", env: { GREETING: "hi" }, cwd: "/" })).text).toBe(
        "hi\n[exit code 0]"
      )
    }).pipe(Effect.provide(Live)))

  it.effect("bash: a timeout is TOOL_TIMEOUT with the output so far, after the group was killed", () =>
    Effect.gen(function*() {
      const report = yield* reporter
      const running = yield* Effect.forkChild(call("bash", { command: copyTo(report, grandchild), timeout: 5 }), {
        startImmediately: true
      })
      const pid = Number(yield* report.line)
      yield* TestClock.adjust("5 seconds")
      expect(answer(yield* Fiber.join(running))).toStrictEqual({
        text: `The command timed out after 5s and was stopped (its process group was killed). Its output until then:\n${pid}\n`,
        isError: true,
        code: "TOOL_TIMEOUT"
      })
      expect(isGone(pid)).toBe(true)
    }).pipe(Effect.provide(Live)))

  it.live("bash: a command that cannot start is COMMAND_FAILED; bad arguments never reach the backend", () =>
    Effect.gen(function*() {
      expect(answer(yield* call("bash", { command: "true", cwd: "/no/such/dir" }))).toStrictEqual({
        text: "The command could not be started: the working directory /no/such/dir does not exist",
        isError: true,
        code: "COMMAND_FAILED"
      })
      expect(answer(yield* call("bash", { command: "true", timeout: 0 })).code).toBe("INVALID_ARGS")
      expect(answer(yield* call("bash", { command: "" })).code).toBe("INVALID_ARGS")
    }).pipe(Effect.provide(Live)))

  it.live("a job's life through the tools: started, listed, read, waited for, and an unknown id", () =>
    Effect.gen(function*() {
      const started = answer(yield* call("bash_background", { command: "echo working; exit 2", cwd: "/" }))
      expect(started.text).toMatch(/^Started job-(\d+) \(pid \d+\) in \/: echo working; exit 2\nRead its output with bash_output/)
      const id = /^Started (job-\d+)/.exec(started.text)![1]!
      const waited = answer(yield* call("bash_wait", { jobId: id }))
      expect(waited).toStrictEqual({ text: `working\n[${id} ended: exit code 2]`, isError: false, code: undefined })
      expect(answer(yield* call("bash_output", { jobId: id })).text).toBe(`(no new output)\n[${id} ended: exit code 2]`)
      expect(answer(yield* call("bash_jobs", {})).text).toBe(`${id} ended: exit code 2: echo working; exit 2`)
      expect(answer(yield* call("bash_output", { jobId: "job-77" }))).toMatchObject({ isError: true, code: "JOB_NOT_FOUND" })
    }).pipe(Effect.provide(Live)))

  it.effect("a job waited for with a timeout goes on, and bash_kill stops it", () =>
    Effect.gen(function*() {
      const report = yield* reporter
      const command = reportTo(report, grandchild)
      const started = answer(yield* call("bash_background", { command }))
      const id = /^Started (job-\d+)/.exec(started.text)![1]!
      const pid = Number(yield* report.line)
      const waiting = yield* Effect.forkChild(call("bash_wait", { jobId: id, timeout: 1 }), { startImmediately: true })
      yield* TestClock.adjust("1 second")
      const waited = answer(yield* Fiber.join(waiting))
      expect(waited.text).toMatch(
        new RegExp(`^\\(no new output\\)\\n\\[${id} is running \\(pid \\d+\\); the wait timed out, the job goes on\\]$`)
      )
      expect(isGone(pid)).toBe(false)
      expect(answer(yield* call("bash_kill", { jobId: id })).text).toBe(`(no new output)\n[${id} ended: killed by signal SIGTERM]`)
      expect(isGone(pid)).toBe(true)
      expect(answer(yield* call("bash_jobs", {})).text).toBe(`${id} ended: killed by signal SIGTERM: ${command}`)
    }).pipe(Effect.provide(Live)))
})
