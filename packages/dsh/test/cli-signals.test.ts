/**
 * `dsh run` as a real process whose stdout reader goes away (`dsh run … | head -1`) or whose
 * terminal closes (SIGHUP) mid-stream: the turn is aborted as SIGINT aborts it, the session
 * file holds the turn closed, stderr has no stack trace, and the process exits with its
 * documented status (0 for the reader that went away: that is not an error; 130 for SIGHUP). The model never stops streaming (the fake server's endless answer), so
 * the only way out is the fault under test; the tests wait on the command's output, never on a
 * timer.
 */
import { SessionEvent } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { execFileSync } from "node:child_process"
import { closeSync, openSync, readdirSync, readFileSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { endless, type Home, makeHome, type Options, type Result, type Running, server, start, text, toolCall } from "./cli-helpers.ts"

const decodeEvent = Schema.decodeUnknownSync(SessionEvent.SessionEvent)

// real processes on a shared machine
const slow = { timeout: 120_000 }

/** The events of the home's only session file (its header line left out). */
const sessionEvents = (home: Home): ReadonlyArray<SessionEvent.SessionEvent> => {
  const files = readdirSync(home.sessions).filter((file) => file.endsWith(".jsonl"))
  expect(files).toHaveLength(1)
  const lines = readFileSync(join(home.sessions, files[0]!), "utf8").split("\n").filter((line) => line !== "")
  return lines.slice(1).map((line) => decodeEvent(JSON.parse(line)))
}

/** The session file holds one turn, opened and closed `aborted` with `reason`, and the agent idle after it. */
const expectClosedTurn = (home: Home, reason: string) => {
  const events = sessionEvents(home)
  expect(events.map((event) => event.seq)).toStrictEqual(events.map((_, i) => i))
  expect(events.filter((event) => event.type === "turn/start")).toHaveLength(1)
  const ends = events.filter((event) => event.type === "turn/end")
  expect(ends.map((event) => event.data)).toStrictEqual([{ turn: 1, reason: { kind: "aborted", reason } }])
  const after = events.slice(events.indexOf(ends[0]!))
  expect(after.some((event) => event.type === "agent/status" && event.data.status === "idle")).toBe(true)
  // some of the streamed answer was logged before the abort
  expect(events.some((event) => event.type === "assistant/chunk")).toBe(true)
}

/** A process's state letter (`R`, `S`, `Z`, …) from /proc, or `gone`. */
const stateOf = (pid: number): string => {
  try {
    // the name in parentheses may hold spaces: the state follows its closing one
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3)
  } catch {
    return "gone"
  }
}

const noStackTrace = (stderr: string) => {
  expect(stderr).not.toMatch(/^\s+at /m)
  expect(stderr).not.toMatch(/Error: (write )?EPIPE|Unhandled|uncaught/i)
}

/** `dsh run` on an answer that never ends, until `fault` ends it: the command's result, and its home. */
const streamUntil = async (
  flags: ReadonlyArray<string>,
  fault: (running: Running) => Promise<void> | void,
  options: Options = {}
): Promise<{ readonly home: Home; readonly result: Result }> => {
  const fake = await server([endless("one more line\n", 5)])
  const home = makeHome()
  const running = start(home, ["run", ...flags, "Stream forever", "--base-url", fake.url, "--tools", "none"], options)
  await fault(running)
  const result = await running.done
  await fake.close()
  return { home, result }
}

describe("dsh run: the reader or the terminal goes away", slow, () => {
  it.effect("stdout closed after the first line (as head -1 closes it): the turn is aborted, the log closes it, exit 0", () =>
    Effect.promise(async () => {
      const { home, result } = await streamUntil([], async (running) => {
        // the reader: takes the first line, then closes its end of the pipe, as head -1 does
        await running.waitFor("stdout", "\n")
        running.child.stdout!.destroy()
      })
      expect(result.signal).toBe(null)
      expect(result.status).toBe(0)
      noStackTrace(result.stderr)
      expect(result.stderr).toContain("dsh: aborted · 1 step")
      // the reader going away is not an error: nothing is reported
      expect(result.stderr).not.toContain("dsh: ABORTED")
      expectClosedTurn(home, "stdout closed (EPIPE)")
    }))

  it.effect("--json, stdout closed after the first line: the same", () =>
    Effect.promise(async () => {
      const { home, result } = await streamUntil(["--json"], async (running) => {
        // the first line is the agent's idle status; wait for a chunk so the pipe closes mid-stream
        await running.waitFor("stdout", "assistant/chunk")
        running.child.stdout!.destroy()
      })
      expect(result.status).toBe(0)
      noStackTrace(result.stderr)
      expectClosedTurn(home, "stdout closed (EPIPE)")
    }))

  it.effect("SIGHUP once the first delta is out: the turn is aborted, the log closes it, exit 130", () =>
    Effect.promise(async () => {
      const { home, result } = await streamUntil([], async (running) => {
        await running.waitFor("stdout", "one more line")
        running.child.kill("SIGHUP")
      })
      expect(result.signal).toBe(null)
      expect(result.status).toBe(130)
      noStackTrace(result.stderr)
      expect(result.stderr).toContain("dsh: aborted · 1 step")
      expect(result.stderr).toContain("dsh: ABORTED: turn 1 was aborted: interrupted (SIGHUP)")
      expectClosedTurn(home, "interrupted (SIGHUP)")
    }))

  it.effect("a stdout that fails otherwise (a full disk, /dev/full): the turn is aborted and reported, exit 130", () =>
    Effect.promise(async () => {
      const full = openSync("/dev/full", "w")
      // the child holds its own copy of the descriptor once started
      const { home, result } = await streamUntil([], () => closeSync(full), { stdout: full })
      expect(result.status).toBe(130)
      noStackTrace(result.stderr)
      expect(result.stderr).toContain("dsh: ABORTED: turn 1 was aborted: stdout failed (ENOSPC)")
      expectClosedTurn(home, "stdout failed (ENOSPC)")
    }))

  it.effect("a short answer to a full disk, the turn over before the write failed: reported, exit 130", () =>
    Effect.promise(async () => {
      const fake = await server([text("Hi")])
      const home = makeHome()
      const full = openSync("/dev/full", "w")
      const running = start(home, ["run", "hi", "--base-url", fake.url, "--tools", "none"], { stdout: full })
      closeSync(full)
      const result = await running.done
      await fake.close()
      expect(result.status).toBe(130)
      noStackTrace(result.stderr)
      expect(result.stderr).toContain("dsh: ABORTED: turn 1 answered, but its answer was not all written: stdout failed (ENOSPC)")
    }))

  it.effect("a second SIGINT ends the command while a tool ignores the abort; no process of the tool outlives it", () =>
    Effect.promise(async () => {
      const home = makeHome()
      const started = join(home.cwd, "started")
      const termed = join(home.cwd, "termed")
      execFileSync("mkfifo", [started, termed])
      // the shell says its pid (its group's) once it runs, and that it got the abort's SIGTERM,
      // which it ignores for as long as it lasts
      const command = `trap 'echo term > ${termed}' TERM; echo $$ > ${started}; while :; do sleep 1; done`
      const fake = await server([toolCall("bash", { command }), text("unreachable")])
      const running = start(home, ["run", "--yes", "Run it", "--base-url", fake.url])
      // read off the main thread: the fake server answering the model runs on it
      const pid = Number((await readFile(started, "utf8")).trim())
      running.child.kill("SIGINT")
      // the second signal once the first was handled (two at once may arrive as one)
      await readFile(termed, "utf8")
      running.child.kill("SIGINT")
      const result = await running.done
      await fake.close()
      expect(result.status).toBe(130)
      noStackTrace(result.stderr)
      // the shell the command left running was killed on its way out (gone, or a zombie not reaped yet)
      expect(["gone", "Z", "X"]).toContain(stateOf(pid))
    }))

  it.effect("another command's stdout on a full disk (sessions list --json): reported, exit 130", () =>
    Effect.promise(async () => {
      const full = openSync("/dev/full", "w")
      const running = start(makeHome(), ["sessions", "list", "--json"], { stdout: full })
      closeSync(full)
      const result = await running.done
      expect(result.status).toBe(130)
      expect(result.stderr).toBe("dsh: ABORTED: the output was not all written: stdout failed (ENOSPC)\n")
    }))
})
