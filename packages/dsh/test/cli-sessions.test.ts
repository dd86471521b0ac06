/**
 * `dsh sessions list|show` and `dsh resume` as real processes, on sessions written by earlier
 * runs: the table and `--json`, a conversation rendered from its log, a headless turn on a
 * resumed session (and what resuming repaired), `--dev` ending on a log that breaks the event
 * contract.
 */
import { describe, expect, it } from "@effect/vitest"
import { appendFileSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { dsh, type Home, makeHome, messagesOf, server, stallAfter, start, text, toolCall } from "./cli-helpers.ts"

const slow = { timeout: 120_000 }

/** Runs one headless turn; returns the id of the session it wrote. */
const record = async (home: Home, prompt: string, answer: ReturnType<typeof text> | ReadonlyArray<ReturnType<typeof text>>) => {
  const fake = await server(answer)
  const result = await dsh(home, ["run", prompt, "--base-url", fake.url, "--tools", "none"])
  await fake.close()
  expect(result.status).toBe(0)
  return /session (\S+) \(dsh resume/.exec(result.stderr)![1]!
}

const lines = (file: string) => readFileSync(file, "utf8").split("\n").filter((line) => line !== "")

describe("dsh sessions", slow, () => {
  it("list: a table of the sessions, newest first, with their first message; --json", async () => {
    const home = makeHome()
    const empty = await dsh(home, ["sessions", "list"])
    expect(empty.stderr).toBe(`dsh: no sessions in ${home.sessions} yet\n`)
    expect(empty.status).toBe(0)
    const first = await record(home, "What is a monad?", text("A monoid in the category of endofunctors."))
    const second = await record(home, "And a functor?", text("A mapping."))
    const table = await dsh(home, ["sessions", "list"])
    const [header, ...rows] = table.stdout.trimEnd().split("\n")
    expect(header).toMatch(/^ID\s+LAST ACTIVITY\s+EVENTS\s+FIRST MESSAGE$/)
    expect(rows.map((row) => row.split(/\s{2,}/)[0])).toStrictEqual([second, first])
    const events = (id: string) => lines(join(home.sessions, `${id}.jsonl`)).length - 1
    expect(rows[1]).toMatch(new RegExp(`\\s${events(first)}\\s+What is a monad\\?$`))
    const json = await dsh(home, ["sessions", "list", "--json"])
    const listed = JSON.parse(json.stdout) as Array<{ id: string; events: number; firstMessage: string }>
    expect(listed.map((s) => [s.id, s.events, s.firstMessage])).toStrictEqual([
      [second, events(second), "And a functor?"],
      [first, events(first), "What is a monad?"]
    ])
  })

  it("a damaged file beside good sessions is named on stderr and left out; the others list and show by a prefix", async () => {
    const home = makeHome()
    const good = await record(home, "What is a monad?", text("A monoid."))
    writeFileSync(join(home.sessions, "20261202-000000-bbbb.jsonl"), "garbage\n")
    writeFileSync(join(home.sessions, "20261202-000001-cccc.jsonl"), "")
    const table = await dsh(home, ["sessions", "list"])
    expect(table.status).toBe(0)
    expect(table.stdout.trimEnd().split("\n").slice(1).map((row) => row.split(/\s{2,}/)[0])).toStrictEqual([good])
    expect(table.stderr).toContain("left out of the listing: ")
    expect(table.stderr).toContain("20261202-000000-bbbb.jsonl")
    expect(table.stderr).toContain("20261202-000001-cccc.jsonl")
    expect(table.stderr).toContain("CORRUPT_LOG")
    const shown = await dsh(home, ["sessions", "show", good.slice(0, 18)])
    expect(shown.status).toBe(0)
    expect(shown.stdout).toContain("What is a monad?")
    // the damaged one itself, named in full, is still its CORRUPT_LOG
    const damaged = await dsh(home, ["sessions", "show", "20261202-000000-bbbb"])
    expect([damaged.status, damaged.stderr]).toMatchObject([1, expect.stringContaining("CORRUPT_LOG")])
  })

  it("show: the conversation from the log (by a unique prefix of the id); --json: its events", async () => {
    const home = makeHome()
    const id = await record(home, "Look it up", [toolCall("lookup", { q: "monads" }, { say: "Let me look." }), text("Not found.")])
    const shown = await dsh(home, ["sessions", "show", id.slice(0, 18)])
    expect(shown.stdout).toMatch(new RegExp(`^session ${id} · created .* · 1 turn · .*${id}\\.jsonl\n\n`))
    expect(shown.stdout.split("\n\n")[1]).toMatch(
      /^› user\nLook it up\n‹ assistant\nLet me look\.\n⚙ lookup \{"q":"monads"\}\n {2}✗ UNKNOWN_TOOL .*\n‹ assistant\nNot found\.\n$/
    )
    const json = await dsh(home, ["sessions", "show", id, "--json"])
    const types = json.stdout.trimEnd().split("\n").map((line) => (JSON.parse(line) as { type: string }).type)
    expect(types[0]).toBe("agent/status")
    expect(types.at(-1)).toBe("agent/status")
    expect(types).toContain("tool/result")
  })

  it("an id that names no session, or two: CONFIG_INVALID, exit 2; --sessions memory keeps none", async () => {
    const home = makeHome()
    const unknown = await dsh(home, ["sessions", "show", "nope"])
    expect(unknown.stderr).toBe(`dsh: CONFIG_INVALID: no session "nope" in ${home.sessions} (it has none)\n`)
    expect(unknown.status).toBe(2)
    await record(home, "one", text("1"))
    await record(home, "two", text("2"))
    const ambiguous = await dsh(home, ["sessions", "show", "2"])
    expect(ambiguous.stderr).toMatch(/^dsh: CONFIG_INVALID: "2" is the start of 2 sessions/)
    expect(ambiguous.status).toBe(2)
    const memory = await dsh(home, ["sessions", "list", "--sessions", "memory"])
    expect(memory.stderr).toContain("dsh: CONFIG_INVALID: dsh sessions list needs a sessions directory")
    expect(memory.status).toBe(2)
  })

  it("--sessions <dir> and DSH_SESSIONS choose the directory", async () => {
    const home = makeHome()
    const dir = join(home.root, "elsewhere")
    const fake = await server(text("ok"))
    await dsh(home, ["run", "Hi", "--base-url", fake.url, "--tools", "none", "--sessions", dir])
    await fake.close()
    expect(readdirSync(dir).filter((f) => f.endsWith(".jsonl"))).toHaveLength(1)
    const listed = await dsh({ ...home, env: { ...home.env, DSH_SESSIONS: dir } }, ["sessions", "list", "--json"])
    expect(JSON.parse(listed.stdout)).toHaveLength(1)
  })
})

describe("dsh resume", slow, () => {
  it("continues a session an earlier run wrote: the same file, the next turn, the history sent", async () => {
    const home = makeHome()
    const id = await record(home, "My name is Ada.", text("Nice to meet you, Ada."))
    const fake = await server(text("You are Ada."))
    const result = await dsh(home, ["resume", id, "What is my name?", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(result.stdout).toBe("You are Ada.\n")
    expect(result.stderr).toContain(`session ${id} (dsh resume ${id})`)
    expect(result.status).toBe(0)
    const messages = messagesOf(fake.requests()[0])
    expect(messages.map((m) => [m.role, m.content])).toStrictEqual([
      ["system", expect.any(String)],
      ["user", "My name is Ada."],
      ["assistant", "Nice to meet you, Ada."],
      ["user", "What is my name?"]
    ])
    const file = join(home.sessions, `${id}.jsonl`)
    const turns = lines(file).map((line) => JSON.parse(line) as { type?: string; data?: { turn?: number } }).filter((e) => e.type === "turn/end")
    expect(turns.map((e) => e.data?.turn)).toStrictEqual([1, 2])
  })

  it("dsh resume \"<prompt>\": a lone argument with a space that names no session is a turn on the latest session", async () => {
    const home = makeHome()
    await record(home, "First session.", text("One."))
    const latest = await record(home, "Second session.", text("Two."))
    const fake = await server(text("Three."))
    const result = await dsh(home, ["resume", "And now?", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(result.stdout).toBe("Three.\n")
    expect(result.stderr).toContain(`session ${latest} (dsh resume ${latest})`)
    expect(messagesOf(fake.requests()[0]).map((m) => m.content).slice(1)).toStrictEqual(["Second session.", "Two.", "And now?"])
    // a word without a space is an id, as before: it names no session here
    const word = await dsh(home, ["resume", "continue", "--tools", "none"])
    expect(word.stderr).toContain("dsh: CONFIG_INVALID: no session \"continue\"")
    expect(word.status).toBe(2)
  })

  it("an id may be a unique prefix", async () => {
    const home = makeHome()
    const id = await record(home, "First.", text("One."))
    const fake = await server(text("Two."))
    const result = await dsh(home, ["resume", id.slice(0, 16), "Second.", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(result.stdout).toBe("Two.\n")
    expect(result.stderr).toContain(`session ${id}`)
  })

  it("prints what resuming repaired: a torn last line, a turn a crash left open", async () => {
    const home = makeHome()
    const id = await record(home, "First.", text("One."))
    const file = join(home.sessions, `${id}.jsonl`)
    // the process died mid-turn (after the model began answering), and mid-write
    const all = lines(file)
    const chunk = all.findIndex((line) => line.includes("\"assistant/chunk\""))
    writeFileSync(file, all.slice(0, chunk + 1).join("\n") + "\n")
    appendFileSync(file, "{\"type\":\"assistant/ch")
    const fake = await server(text("Two."))
    const result = await dsh(home, ["resume", id, "Second.", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(result.stderr).toContain("dsh: resume: repaired a torn last line: line ")
    expect(result.stderr).toContain("dsh: resume: closed turn 1, which a crash left open: ")
    expect(result.stdout).toBe("Two.\n")
    expect(result.status).toBe(0)
    const types = lines(file).map((line) => (JSON.parse(line) as { type?: string }).type)
    expect(types.filter((t) => t === "session/repair")).toHaveLength(2)
  })

  it("--dev: a resumed log that breaks the event contract ends the command with INVARIANT, its rule and seq; exit 5", async () => {
    const home = makeHome()
    const id = await record(home, "First.", text("One."))
    const file = join(home.sessions, `${id}.jsonl`)
    // the agent's last status repeated instead of disposed: `status-transition` (no status repeats)
    const all = lines(file)
    const last = all.length - 1
    writeFileSync(file, [...all.slice(0, last), all[last]!.replace("\"disposed\"", "\"idle\"")].join("\n") + "\n")
    const fake = await server(text("never"))
    const result = await dsh(home, ["resume", id, "Second.", "--dev", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(fake.requests()).toHaveLength(0)
    expect(result.stderr).toContain(`dsh: INVARIANT: invariant "status-transition" violated in session ${id} at seq ${last - 1} (agent/status): `)
    expect(result.status).toBe(5)
    const clean = await record(home, "Fine.", text("Fine."))
    const ok = await server(text("Still fine."))
    const checked = await dsh(home, ["resume", clean, "Again.", "--dev", "--base-url", ok.url, "--tools", "none"])
    await ok.close()
    expect(checked.status).toBe(0)
  })

  it("a session another dsh process is writing: SESSION_LOCKED naming it, exit 1", async () => {
    const home = makeHome()
    const id = await record(home, "First.", text("One."))
    const fake = await server([stallAfter("Thinking"), text("never")])
    const holder = start(home, ["resume", id, "Second.", "--base-url", fake.url, "--tools", "none"])
    await holder.waitFor("stdout", "Thinking")
    const second = await dsh(home, ["resume", id, "Third.", "--base-url", fake.url, "--tools", "none"])
    holder.child.kill("SIGINT")
    const first = await holder.done
    await fake.close()
    expect(second.stderr).toMatch(/^dsh: SESSION_LOCKED: .*pid \d+/m)
    expect(second.status).toBe(1)
    expect(first.status).toBe(130)
  })
})
