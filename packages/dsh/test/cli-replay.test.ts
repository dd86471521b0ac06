/**
 * `dsh replay` as a real process on sessions recorded by `dsh run` and `dsh resume` against the
 * fake server: identical replays (no key, no network: the model answers from the file), and
 * the first difference when the prompt, the tools or a tool's answer changed.
 */
import { describe, expect, it } from "@effect/vitest"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { dsh, type Home, makeHome, server, text, toolCall, writeConfig } from "./cli-helpers.ts"

const slow = { timeout: 120_000 }

/** A session in which the model reads notes.txt with the coding tools, then answers. */
const recordReading = async (home: Home) => {
  writeFileSync(join(home.cwd, "notes.txt"), "hi from the notes\n")
  const fake = await server([toolCall("read", { path: "notes.txt" }, { say: "Let me read it." }), text("It says hi.")])
  const result = await dsh(home, ["run", "What do my notes say?", "--base-url", fake.url])
  await fake.close()
  expect(result.stderr).toMatch(/ {2}✓ read /)
  expect(result.status).toBe(0)
  const id = /session (\S+) \(dsh resume/.exec(result.stderr)![1]!
  return { id, file: join(home.sessions, `${id}.jsonl`) }
}

/** The replay runs with no key: it never calls a provider. */
const replay = (home: Home, args: ReadonlyArray<string>) => {
  const offline = { ...home, env: { ...home.env } }
  delete offline.env["DEEPSEEK_API_KEY"]
  return dsh(offline, ["replay", ...args])
}

describe("dsh replay", slow, () => {
  it("a recorded session replays identically, by file or by id; exit 0", async () => {
    const home = makeHome()
    const { file, id } = await recordReading(home)
    const byFile = await replay(home, [file])
    expect(byFile.stderr).toBe(`dsh: ${file} replays identically: 1 turn, 2 model requests, ${await eventCount(file)} events\n`)
    expect(byFile.status).toBe(0)
    const byId = await replay(home, [id, "--json"])
    expect(JSON.parse(byId.stdout)).toMatchObject({ _tag: "Identical", turns: 1, requests: 2 })
    expect(byId.status).toBe(0)
  })

  it("a session that stopped at its --max-steps limit replays identically without the flag", async () => {
    const home = makeHome()
    const fake = await server([toolCall("lookup", { q: "x" }, { say: "Let me look." })])
    const recorded = await dsh(home, ["run", "Loop", "--max-steps", "1", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(recorded.status).toBe(3)
    const id = /session (\S+) \(dsh resume/.exec(recorded.stderr)![1]!
    const replayed = await replay(home, [id, "--tools", "none"])
    expect(replayed.stderr).toMatch(/replays identically: 1 turn, 1 model request/)
    expect(replayed.status).toBe(0)
  })

  it("a changed prompt: REPLAY_MISMATCH naming the first difference (the system prompt); exit 4", async () => {
    const home = makeHome()
    const { file } = await recordReading(home)
    writeConfig(home, { prompt: "You are terse." })
    const result = await replay(home, [file])
    expect(result.stderr).toMatch(
      /^dsh: REPLAY_MISMATCH: the replay differs from the recording at seq 5: model\/request, turn 1 step 1: data\.settings\.system: expected "You are dsh, [^"]*"…, got "You are terse\."/
    )
    expect(result.status).toBe(4)
  })

  it("a tool that answers differently now: the first event that differs is its result; exit 4", async () => {
    const home = makeHome()
    const { file } = await recordReading(home)
    writeFileSync(join(home.cwd, "notes.txt"), "bye from the notes\n")
    const result = await replay(home, [file, "--json"])
    const verdict = JSON.parse(result.stdout) as { _tag: string; mismatch: boolean; message: string }
    expect(verdict).toMatchObject({ _tag: "Differs", mismatch: false })
    expect(verdict.message).toMatch(/^the replay differs from the recording at seq \d+: tool\/result, turn 1 step 1: data\.content\[0\]\.text: /)
    expect(verdict.message).toContain("hi from the notes")
    expect(verdict.message).toContain("bye from the notes")
    expect(result.status).toBe(4)
  })

  it("other tools now (--tools none): the tools differ; exit 4", async () => {
    const home = makeHome()
    const { file } = await recordReading(home)
    const result = await replay(home, [file, "--tools", "none"])
    expect(result.stderr).toMatch(/^dsh: REPLAY_MISMATCH: the replay differs from the recording at seq 5: model\/request, turn 1 step 1: data\.settings\.tools: expected \[\{"name":"bash"/)
    expect(result.status).toBe(4)
  })

  it("a session resumed by a later process (two agents, one after the other) replays identically", async () => {
    const home = makeHome()
    const { file, id } = await recordReading(home)
    const fake = await server(text("Nothing else."))
    const resumed = await dsh(home, ["resume", id, "Anything else?", "--base-url", fake.url])
    await fake.close()
    expect(resumed.status).toBe(0)
    const result = await replay(home, [file])
    expect(result.stderr).toBe(`dsh: ${file} replays identically: 2 turns, 3 model requests, ${await eventCount(file)} events\n`)
    expect(result.status).toBe(0)
  })

  it("neither a file nor a session: CONFIG_INVALID, exit 2", async () => {
    const home = makeHome()
    const result = await replay(home, ["missing.jsonl"])
    expect(result.stderr).toMatch(/^dsh: CONFIG_INVALID: missing\.jsonl is neither a file nor a session: /)
    expect(result.status).toBe(2)
    // a directory (the sessions directory, say) is no recording either
    const directory = await replay(home, [home.root])
    expect(directory.stderr).toMatch(/^dsh: CONFIG_INVALID: .* is a directory, neither a session file nor a session/)
    expect(directory.status).toBe(2)
  })
})

const eventCount = async (file: string) => {
  const { readFileSync } = await import("node:fs")
  return readFileSync(file, "utf8").split("\n").filter((line) => line !== "").length - 1
}
