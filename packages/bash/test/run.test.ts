/**
 * `Bash.run` on the local backend, with real processes: exit status as a result, failures to
 * start as COMMAND_FAILED, the process group killed on exit, timeout and interruption, and
 * bounded output with the rest spilled to a file.
 */
import { Bash, BashLocal } from "@dsh/bash"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { copyTo, grandchild, isGone, reporter, reportTo, tempDir } from "./helpers.ts"

const run = (options: Bash.RunOptions) => Bash.Bash.use((bash) => bash.run(options))

const lines = (text: string) => text.split("\n").filter((line) => line.length > 0)

describe("Bash.run", () => {
  it.live("a non-zero exit is a result: its code, and stdout and stderr both in the output", () =>
    Effect.gen(function*() {
      const result = yield* run({ command: "echo out; echo err >&2; exit 3" })
      expect(result.exitCode).toBe(3)
      expect(result.signal).toBeNull()
      // two pipes: the order between them is the order they were read in
      expect(lines(result.output.text).sort()).toStrictEqual(["err", "out"])
      expect(result.output).toMatchObject({ chars: 8, cutChars: 0, file: undefined })
    }).pipe(Effect.provide(BashLocal.layer)))

  it.live("a shell killed by a signal reports the signal and no exit code", () =>
    Effect.gen(function*() {
      const result = yield* run({ command: "echo before; kill -TERM $$; echo after" })
      expect(result).toMatchObject({ exitCode: null, signal: "SIGTERM" })
      expect(result.output.text).toBe("before\n")
    }).pipe(Effect.provide(BashLocal.layer)))

  it.live("a working directory relative to the layer's, and the call's variables over the layer's environment", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("dsh-bash-cwd-")
      mkdirSync(join(dir, "sub"))
      const result = yield* run({
        command: `pwd; echo "$BASE $OVER \${VITEST-not inherited}"`,
        cwd: "sub",
        env: { OVER: "call" }
      }).pipe(
        Effect.provide(BashLocal.layerWith({ cwd: dir, env: { PATH: process.env["PATH"], BASE: "base", OVER: "layer" } }))
      )
      expect(lines(result.output.text)).toStrictEqual([join(dir, "sub"), "base call not inherited"])
      expect(result.cwd).toBe(join(dir, "sub"))
      // by default the layer's environment is the process's
      const inherited = yield* run({ command: "echo $VITEST", cwd: dir }).pipe(Effect.provide(BashLocal.layer))
      expect(inherited.output.text).toBe(`${process.env["VITEST"]}\n`)
    }))

  it.live("a working directory that does not exist is COMMAND_FAILED, naming it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("dsh-bash-nocwd-")
      const error = yield* run({ command: "true", cwd: "missing" }).pipe(
        Effect.flip,
        Effect.provide(BashLocal.layerWith({ cwd: dir }))
      )
      expect(error._tag).toBe("CommandFailedError")
      expect(error.code).toBe("COMMAND_FAILED")
      expect(error.message).toBe(`The command could not be started: the working directory ${join(dir, "missing")} does not exist`)
    }))

  it.live("a command longer than the system starts (a 200 KB heredoc) is COMMAND_FAILED saying so and what to do instead", () =>
    Effect.gen(function*() {
      const error = yield* run({ command: `cat <<'EOF'\n${"x".repeat(200_000)}\nEOF` }).pipe(Effect.flip, Effect.provide(BashLocal.layer))
      expect(error.code).toBe("COMMAND_FAILED")
      expect(error.message).toContain("the command is too long for the system to start (one command line may hold about 128 KiB)")
      expect(error.message).toContain("write the long text to a file first")
    }))

  it.live("a working directory that is a file, and a shell that does not exist, are COMMAND_FAILED", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("dsh-bash-nofile-")
      writeFileSync(join(dir, "file"), "")
      const notDir = yield* run({ command: "true", cwd: join(dir, "file") }).pipe(Effect.flip, Effect.provide(BashLocal.layer))
      expect(notDir.code).toBe("COMMAND_FAILED")
      expect(notDir.message).toContain(join(dir, "file"))
      const noShell = yield* run({ command: "true" }).pipe(
        Effect.flip,
        Effect.provide(BashLocal.layerWith({ shell: join(dir, "no-such-shell") }))
      )
      expect(noShell.code).toBe("COMMAND_FAILED")
      expect(noShell.message).toContain(`the shell "${join(dir, "no-such-shell")}" was not found`)
    }))

  it.live("an environment variable name that is empty or holds = is COMMAND_FAILED, not another variable set", () =>
    Effect.gen(function*() {
      // `A=B` set to `x` would be the entry `A=B=x`: the variable A, set to `B=x`
      const withEquals = yield* run({ command: "echo \"[$A]\"", env: { "A=B": "x" } }).pipe(Effect.flip)
      expect(withEquals.code).toBe("COMMAND_FAILED")
      expect(withEquals.message).toBe(
        `The command could not be started: the environment variable name "A=B" is not valid (a name is not empty and holds no "=")`
      )
      expect((yield* run({ command: "true", env: { "": "x" } }).pipe(Effect.flip)).code).toBe("COMMAND_FAILED")
      // a job is refused the same way, and none is left behind
      const job = yield* Bash.Bash.use((bash) => bash.start({ command: "true", env: { "PATH=/tmp": "x" } })).pipe(Effect.flip)
      expect(job.code).toBe("COMMAND_FAILED")
      expect(yield* Bash.Bash.use((bash) => bash.jobs)).toStrictEqual([])
      // a value may hold anything but NUL
      expect((yield* run({ command: "echo \"[$A]\"", env: { A: "B=x y" } })).output.text).toBe("[B=x y]\n")
    }).pipe(Effect.provide(BashLocal.layer)))

  it.live("options past the types are COMMAND_FAILED saying which, never a defect, and nothing runs", () =>
    Effect.gen(function*() {
      const refused = (options: unknown) =>
        Effect.flip(Bash.Bash.use((bash) => bash.run(options as Bash.RunOptions))).pipe(
          Effect.map((error) => ({ tag: error._tag, code: error.code, message: error.message }))
        )
      const failed = (problem: string) => ({
        tag: "CommandFailedError",
        code: "COMMAND_FAILED",
        message: `The command could not be started: ${problem}`
      })
      expect(yield* refused({ command: 42 })).toStrictEqual(failed("the command must be a string, got 42"))
      expect(yield* refused(undefined)).toStrictEqual(
        failed("the options must be an object with a command, got undefined")
      )
      expect(yield* refused({ command: "pwd", cwd: 5 })).toStrictEqual(failed("the working directory must be a path, got 5"))
      expect(yield* refused({ command: "echo $A", env: { A: 1 } })).toStrictEqual(failed("env.A must be a string, got 1"))
      expect(yield* refused({ command: "echo $A", env: "A=1" })).toStrictEqual(
        failed(`env must be an object of variables, got "A=1"`)
      )
      expect(yield* refused({ command: "true", timeout: 0 })).toStrictEqual(failed("timeout must be longer than zero, got 0"))
      expect(yield* refused({ command: "true", timeout: -1 })).toStrictEqual(failed("timeout must be longer than zero, got -1ms"))
      expect(yield* refused({ command: "true", timeout: Number.NaN })).toStrictEqual(
        failed(`timeout must be a duration ("30 seconds", a number of milliseconds), got NaN`)
      )
      expect(yield* refused({ command: "true", timeout: "soon" })).toStrictEqual(
        failed(`timeout must be a duration ("30 seconds", a number of milliseconds), got "soon"`)
      )
      // a job is refused the same way, and none is left behind
      const job = yield* Bash.Bash.use((bash) => bash.start({ command: ["ls"] } as unknown as Bash.StartOptions)).pipe(Effect.flip)
      expect(job.message).toBe(`The command could not be started: the command must be a string, got ["ls"]`)
      expect(yield* Bash.Bash.use((bash) => bash.jobs)).toStrictEqual([])
    }).pipe(Effect.provide(BashLocal.layer)))

  it.live("settings that cannot be used fail the backend's construction with COMMAND_FAILED naming each", () =>
    Effect.gen(function*() {
      const options = {
        shell: "",
        env: { PATH: "/bin", "A=B": "x" },
        timeout: -1,
        killGrace: "a while",
        drainGrace: Number.NaN,
        jobEvents: { interval: 0, maxChar: 10 },
        timout: "1 second"
      } as unknown as BashLocal.Options
      const error = yield* Effect.flip(Layer.build(BashLocal.layerWith(options)))
      expect(error).toMatchObject({ _tag: "CommandFailedError", code: "COMMAND_FAILED" })
      expect(error.message).toBe(
        "The bash backend's settings are invalid: " + [
          `the settings object has "timout", which is no option (known: shell, cwd, env, timeout, maxTimeout, killGrace, drainGrace, ` +
          "outputLimit, spillDirectory, jobEvents)",
          `jobEvents has "maxChar", which is no option (known: interval, maxChars, budget)`,
          `shell must be the name or path of a shell, got ""`,
          `the environment variable name "A=B" is not valid (a name is not empty and holds no "=")`,
          "timeout must be longer than zero, got -1ms",
          `killGrace must be a duration ("30 seconds", a number of milliseconds), got "a while"`,
          `drainGrace must be a duration ("30 seconds", a number of milliseconds), got NaN`,
          "jobEvents.interval must be longer than zero, got 0"
        ].join("; ")
      )
      // a command run on it fails the same way: the program never gets a backend
      const run_ = yield* run({ command: "true" }).pipe(Effect.provide(BashLocal.layerWith({ maxTimeout: 0 })), Effect.flip)
      expect(run_.code).toBe("COMMAND_FAILED")
      expect(run_.message).toBe("The bash backend's settings are invalid: maxTimeout must be longer than zero, got 0")
    }).pipe(Effect.scoped))

  it.live("a command that begins with - or + is the command, not options of the shell", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("dsh-bash-dash-")
      for (const name of ["-greet", "+greet"]) {
        writeFileSync(join(dir, name), `#!/bin/sh\necho "${name} ran: $*"\n`)
        chmodSync(join(dir, name), 0o755)
      }
      const env = { PATH: `${dir}:${process.env["PATH"]}` }
      expect(yield* run({ command: "-greet --version", env })).toMatchObject({
        exitCode: 0,
        output: { text: "-greet ran: --version\n" }
      })
      expect((yield* run({ command: "+greet", env })).output.text).toBe("+greet ran: \n")
      // an option of the shell's own is a command too, which the shell does not find
      expect(yield* run({ command: "--version" })).toMatchObject({ exitCode: 127 })
    }).pipe(Effect.provide(BashLocal.layer)))

  it.live("stdin is closed: a command reading it gets end-of-file instead of hanging", () =>
    Effect.gen(function*() {
      const result = yield* run({ command: "cat; read line || echo eof" })
      expect(result).toMatchObject({ exitCode: 0, output: { text: "eof\n" } })
    }).pipe(Effect.provide(BashLocal.layer)))

  it.live("what a command leaves running in the background is killed when the shell exits", () =>
    Effect.gen(function*() {
      const result = yield* run({ command: "sleep 1000 & echo $!" })
      expect(result.exitCode).toBe(0)
      expect(isGone(Number(result.output.text.trim()))).toBe(true)
    }).pipe(Effect.provide(BashLocal.layer)))

  it.effect("a timeout kills the whole group, then fails with TOOL_TIMEOUT holding the output so far", () =>
    Effect.gen(function*() {
      const report = yield* reporter
      const running = yield* Effect.forkChild(run({ command: copyTo(report, grandchild), timeout: "1 minute" }), {
        startImmediately: true
      })
      const pid = Number(yield* report.line)
      yield* TestClock.adjust("1 minute")
      const error = yield* Effect.flip(Fiber.join(running))
      expect(error._tag).toBe("ToolTimeoutError")
      expect(error.code).toBe("TOOL_TIMEOUT")
      expect(error).toMatchObject({ tool: "bash", timeoutMillis: 60_000 })
      // what the command wrote before it was stopped is read to the end, after the kill
      expect(error.message).toBe(
        `The command timed out after 1m and was stopped (its process group was killed). Its output until then:\n${pid}\n`
      )
      expect(isGone(pid)).toBe(true)
    }).pipe(Effect.provide(BashLocal.layer)))

  it.effect("a timeout longer than the layer's maximum is cut to it", () =>
    Effect.gen(function*() {
      const report = yield* reporter
      const running = yield* Effect.forkChild(run({ command: copyTo(report, grandchild), timeout: "1 hour" }), {
        startImmediately: true
      })
      yield* report.line
      yield* TestClock.adjust("500 millis")
      expect(yield* Effect.flip(Fiber.join(running))).toMatchObject({ code: "TOOL_TIMEOUT", timeoutMillis: 500 })
    }).pipe(Effect.provide(BashLocal.layerWith({ maxTimeout: "500 millis" }))))

  it.live("an interruption kills the whole group before it returns", () =>
    Effect.gen(function*() {
      const report = yield* reporter
      const running = yield* Effect.forkChild(run({ command: reportTo(report, grandchild) }), { startImmediately: true })
      const pid = Number(yield* report.line)
      expect(isGone(pid)).toBe(false)
      yield* Fiber.interrupt(running)
      expect(isGone(pid)).toBe(true)
    }).pipe(Effect.provide(BashLocal.layer)))

  it.live("a group that ignores SIGTERM is killed with SIGKILL after the grace", () =>
    Effect.gen(function*() {
      const report = yield* reporter
      // an ignored signal stays ignored in the children: the sleep ignores SIGTERM too
      const command = reportTo(report, "trap '' TERM; sleep 1000 & echo $!; wait")
      const running = yield* Effect.forkChild(run({ command }), { startImmediately: true })
      const pid = Number(yield* report.line)
      yield* Fiber.interrupt(running)
      expect(isGone(pid)).toBe(true)
    }).pipe(Effect.provide(BashLocal.layerWith({ killGrace: "200 millis" }))))

  it.live("output past the limit keeps its head and tail, says how much was cut, and is spilled whole to a file", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("dsh-bash-spill-")
      const result = yield* run({ command: "seq 1 20000" }).pipe(
        Effect.provide(BashLocal.layerWith({ outputLimit: 1000, spillDirectory: dir }))
      )
      const full = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join("")
      const { chars, cutChars, file, text } = result.output
      expect(chars).toBe(full.length)
      expect(file).toBeDefined()
      expect(readdirSync(dir)).toStrictEqual([file!.slice(dir.length + 1)])
      expect(readFileSync(file!, "utf8")).toBe(full)
      // the output may hold secrets: its owner's only
      expect(statSync(file!).mode & 0o777).toBe(0o600)
      expect(text.startsWith("1\n2\n3\n")).toBe(true)
      expect(text.endsWith("19999\n20000\n")).toBe(true)
      const marker = `[… ${cutChars.toLocaleString("en-US")} of ${chars.toLocaleString("en-US")} characters cut here; ` +
        `the full output is in ${file} …]`
      expect(text).toContain(marker)
      // what is kept is within the limit, cut at line ends
      const kept = text.replace(`${marker}\n`, "")
      expect(kept.length).toBe(chars - cutChars)
      expect(kept.length).toBeLessThanOrEqual(1000)
      expect(text.split("\n").filter((l) => l !== marker && l !== "").every((l) => /^\d+$/.test(l))).toBe(true)
    }))

  it.live("a spill file keeps at most its cap (64 MiB): a command that prints without end cannot fill the disk", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("dsh-bash-cap-")
      const printed = 70 * 1024 * 1024
      const result = yield* run({ command: `head -c ${printed} /dev/zero | tr '\\0' y` }).pipe(
        Effect.provide(BashLocal.layerWith({ outputLimit: 1000, spillDirectory: dir }))
      )
      const { chars, file, text } = result.output
      expect(chars).toBe(printed)
      expect(statSync(file!).size).toBe(64 * 1024 * 1024)
      expect(text).toContain(`characters cut here; its first 64 MiB are in ${file}, the rest was not kept …]`)
    }))

  it.live("output within the limit is kept whole, and no file is written", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("dsh-bash-nospill-")
      const result = yield* run({ command: "seq 1 100" }).pipe(
        Effect.provide(BashLocal.layerWith({ outputLimit: 1000, spillDirectory: dir }))
      )
      expect(result.output).toMatchObject({ cutChars: 0, file: undefined })
      expect(result.output.text).toBe(Array.from({ length: 100 }, (_, i) => `${i + 1}\n`).join(""))
      expect(readdirSync(dir)).toStrictEqual([])
    }))

  it.live("a spill file that cannot be written is reported in the text; the command's result stands", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("dsh-bash-badspill-")
      writeFileSync(join(dir, "file"), "")
      const result = yield* run({ command: "seq 1 20000; exit 1" }).pipe(
        Effect.provide(BashLocal.layerWith({ outputLimit: 1000, spillDirectory: join(dir, "file", "spill") }))
      )
      expect(result.exitCode).toBe(1)
      expect(result.output.file).toBeUndefined()
      expect(result.output.text).toMatch(/characters cut here; the full output could not be saved: .+ …\]/)
    }))
})
