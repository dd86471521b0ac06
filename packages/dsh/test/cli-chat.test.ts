/**
 * `dsh chat` in a real terminal (tmux): streaming that shows as it arrives, tool calls and the
 * permission prompt, Ctrl-C aborting the running turn (and, twice at the prompt, leaving), a
 * line typed during a turn queued as the next one, the slash commands, and a chat session
 * that replays identically. The screens are polled (bounded) for what each step must show.
 *
 * `DSH_DOCS=1` writes the screens of these sessions to docs/cli/ (the command's documentation).
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdirSync, readdirSync, writeFileSync } from "node:fs"
import { readFile, writeFile } from "node:fs/promises"
import { execFileSync } from "node:child_process"
import { join } from "node:path"
import {
  closeTerminals,
  dsh,
  endless,
  hasTmux,
  type Home,
  makeHome,
  messagesOf,
  server,
  stallAfter,
  type Terminal,
  terminal,
  text,
  tmuxSocket,
  toolCall
} from "./cli-helpers.ts"

const slow = { timeout: 120_000 }

afterAll(closeTerminals)

const docs = join(import.meta.dirname, "..", "..", "..", "docs", "cli")

/** With DSH_DOCS=1, keeps a screen as documentation (trailing blank lines cut). */
const keep = (name: string, screen: string) => {
  if (process.env["DSH_DOCS"] !== "1") return
  mkdirSync(docs, { recursive: true })
  writeFileSync(join(docs, `${name}.txt`), screen.replace(/\s+$/, "") + "\n")
}

const occurrences = (screen: string, text: string) => screen.split(text).length - 1

/** A chat in a terminal, waited on until its prompt is drawn. */
const chat = async (home: Home, args: ReadonlyArray<string>): Promise<Terminal> => {
  const t = terminal(home, ["chat", ...args])
  // (a capture drops trailing spaces: the empty prompt is "›")
  await t.waitFor((screen) => screen.includes("dsh · deepseek · deepseek-v4-flash · session") && /^›/m.test(screen))
  return t
}

/** Waits until the agent is idle: the answer is there and the status line gone. */
const idle = (t: Terminal, answer: string) => t.waitFor((s) => s.includes(answer) && !s.includes("Ctrl-C aborts"))

/** The process id of the shell in the terminal's pane. */
const tmuxPanePid = (t: Terminal): number =>
  Number(execFileSync("tmux", ["-L", tmuxSocket, "list-panes", "-t", t.name, "-F", "#{pane_pid}"], { encoding: "utf8" }).trim())

/** Whether the process is still there. */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Polls (every 25 ms, at most 15 s) until the condition holds. */
const until = async (holds: () => boolean): Promise<void> => {
  const deadline = Date.now() + 15_000
  while (!holds()) {
    if (Date.now() > deadline) throw new Error("the condition never held")
    await new Promise((resolve) => {
      setTimeout(resolve, 25)
    })
  }
}

/** Leaves the chat with /exit, waits for its exit 0, and closes the terminal and the server. */
const leave = async (t: Terminal, fake: { readonly close: () => Promise<void> }) => {
  say(t, "/exit")
  await t.waitFor("[dsh exited 0]")
  t.close()
  await fake.close()
}

const say = (t: Terminal, line: string) => {
  t.type(line)
  t.keys("Enter")
}

// skipped without tmux only outside CI: .ci/run installs it, so there a missing tmux fails
describe.skipIf(!hasTmux() && process.env["CI"] === undefined)("dsh chat", slow, () => {
  it("streams the answer as it arrives; Ctrl-C aborts the turn, not the chat; the next prompt works", async () => {
    const fake = await server([endless("and so on, ", 50), text("Hello, ", "world!")])
    const home = makeHome()
    const t = await chat(home, ["--base-url", fake.url, "--tools", "none"])
    say(t, "Go on forever")
    // the text grows on the screen while the answer is still streaming, under the status line
    const early = await t.waitFor((s) => occurrences(s, "and so on") >= 2 && s.includes("answering ·"))
    await t.waitFor((s) => occurrences(s, "and so on") > occurrences(early, "and so on") + 2)
    t.keys("C-c")
    // idle again (the status line gone) before the next line, so it is a message, not a queued one
    await idle(t, "(turn aborted: interrupted by the user (Ctrl-C))")
    // the abort closed the answer's connection
    await Effect.runPromise(fake.awaitClosedEarly(0))
    say(t, "Hello?")
    const done = await idle(t, "Hello, world!")
    expect(done).toMatch(/in 10 \(cache hit 0\) · out 2 · <\$0\.0001 · [\d.]+s/)
    keep("chat-abort", done)
    say(t, "/exit")
    const exited = await t.waitFor("[dsh exited 0]")
    expect(exited).toMatch(/dsh: session (\S+) · dsh resume \1/)
    t.close()
    await fake.close()
  })

  it("shows each tool call and its result; asks y / n / always before a command", async () => {
    const fake = await server([
      toolCall("bash", { command: "echo hello-from-bash" }, { say: "Let me run it." }),
      text("It printed hello-from-bash."),
      toolCall("bash", { command: "echo again" }, { id: "call_again" }),
      text("Refused, fine.")
    ])
    const home = makeHome()
    const t = await chat(home, ["--base-url", fake.url])
    say(t, "Run the command")
    const asked = await t.waitFor("allow? [y]es [n]o [a]lways")
    expect(asked).toContain("⚙ bash {\"command\":\"echo hello-from-bash\"}")
    expect(asked).toMatch(/\? allow bash\? the permission policy asks[\s\S]*\n {2}always would allow: allow bash with the command "echo hello-from-bash"/)
    t.type("y")
    const ran = await idle(t, "It printed hello-from-bash.")
    expect(ran).toMatch(/ {2}→ yes\n {2}✓ bash [\d.]+s \(2 lines\) hello-from-bash \[exit code 0\]\n/)
    keep("chat-tool-call", ran)
    say(t, "Again")
    await t.waitFor((s) => occurrences(s, "allow? [y]es") === 1 && s.includes("echo again"))
    t.type("n")
    const refused = await idle(t, "Refused, fine.")
    expect(refused).toMatch(/ {2}→ no\n {2}✗ bash [\d.]+s TOOL_DENIED: /)
    t.keys("C-d")
    await t.waitFor("[dsh exited 0]")
    t.close()
    await fake.close()
  })

  it("a line typed during a turn is queued as the next message; the session then replays identically", async () => {
    const fake = await server([stallAfter("Thinking about it"), text("The queued one.")])
    const home = makeHome()
    const t = await chat(home, ["--base-url", fake.url, "--tools", "none"])
    say(t, "First question")
    await t.waitFor("Thinking about it")
    say(t, "Second question")
    await t.waitFor("(queued: Second question)")
    t.keys("C-c")
    const screen = await idle(t, "The queued one.")
    expect(screen).toMatch(/\(turn aborted: [^)]*\)\)\n.*\n› Second question\nThe queued one\./)
    keep("chat-queued", screen)
    const users = fake.requests().map((r) => messagesOf(r).at(-1)?.content)
    expect(users).toStrictEqual(["First question", "Second question"])
    say(t, "/exit")
    const exited = await t.waitFor("[dsh exited 0]")
    const id = /dsh: session (\S+) ·/.exec(exited)![1]!
    t.close()
    await fake.close()
    // the user's part replays from the log: the queued send, the abort at its point
    const offline = { ...home, env: { ...home.env } }
    delete offline.env["DEEPSEEK_API_KEY"]
    const replayed = await dsh(offline, ["replay", id, "--tools", "none"])
    expect(replayed.stderr).toMatch(/replays identically: 2 turns, 2 model requests/)
    expect(replayed.status).toBe(0)
  })

  it("/usage, /new, /sessions, /resume <id>; Ctrl-C twice at the prompt leaves", async () => {
    const fake = await server([text("One."), text("Two."), text("Three.")])
    const home = makeHome()
    const t = await chat(home, ["--base-url", fake.url, "--tools", "none"])
    const first = /session (\S+) \(new/.exec(t.screen())![1]!
    say(t, "First")
    await idle(t, "One.")
    say(t, "/usage")
    await t.waitFor(`session ${first} · 1 turn · in 10 (cache hit 0) · out 1`)
    say(t, "/new")
    const renewed = await t.waitFor((s) => occurrences(s, "(new, persisted)") === 2)
    const second = [...renewed.matchAll(/session (\S+) \(new/g)][1]![1]!
    expect(second).not.toBe(first)
    say(t, "Second")
    await idle(t, "Two.")
    say(t, "/sessions")
    const listed = await t.waitFor(`  ${first}`)
    expect(listed).toContain(`* ${second}`)
    say(t, `/resume ${first.slice(0, 18)}`)
    const resumed = await t.waitFor(`session ${first} (resumed, 1 turn, persisted)`)
    keep("chat-commands", resumed)
    // the resumed session's usage is the session's, its first turn included
    say(t, "/usage")
    await t.waitFor((s) => occurrences(s, `session ${first} · 1 turn · in 10 (cache hit 0) · out 1`) === 2)
    say(t, "Third")
    // idle first: a Ctrl-C while the turn still runs would abort it rather than arm the exit
    await idle(t, "Three.")
    const history = messagesOf(fake.requests()[2]).map((m) => m.content)
    expect(history.slice(1)).toStrictEqual(["First", "One.", "Third"])
    t.keys("C-c")
    await t.waitFor("(Ctrl-C again to exit, or /exit)")
    t.keys("C-c")
    const exited = await t.waitFor("[dsh exited 0]")
    expect(exited).toContain(`dsh: session ${first} · dsh resume ${first}`)
    t.close()
    await fake.close()
  })

  it("/new typed in the same burst as a message (a paste, a quick typist) waits for that message's turn, never throws it away", async () => {
    const fake = await server([stallAfter("Thinking it over"), text("unused")])
    const home = makeHome()
    const t = await chat(home, ["--base-url", fake.url, "--tools", "none"])
    // one burst of keys: the message's Enter, then /new and its Enter, before the turn's status arrives
    t.type("Answer slowly\r/new\r")
    await t.waitFor("(/new works only between turns")
    await t.waitFor("Thinking it over")
    expect(messagesOf(fake.requests()[0]).at(-1)!.content).toBe("Answer slowly")
    expect(occurrences(t.screen(), "(new, persisted)")).toBe(1)
    t.keys("C-c")
    await t.waitFor("(turn aborted")
    t.close()
    await fake.close()
  })

  it("an input line whose wide characters straddle the right edge redraws in place, leaving no stale rows", async () => {
    const fake = await server([text("unused")])
    const home = makeHome()
    const t = await chat(home, ["--base-url", fake.url, "--tools", "none"])
    // "› a" and 48 × 中 fill 99 of the 100 columns: the next 中 wraps, leaving the last cell empty
    const wide = `a${"中".repeat(97)}a${"中".repeat(49)}a中`
    t.type(wide)
    await t.waitFor((screen) => occurrences(screen, "中") === 147)
    t.type("xxx")
    await t.waitFor("中xxx")
    t.keys("BSpace", "BSpace", "BSpace")
    // the screen settles with the line drawn once (a stale row would stay for good: the wait would fail)
    const redrawn = await t.waitFor((screen) =>
      !screen.includes("中x") && occurrences(screen, "中") === 147 &&
      screen.split("\n").filter((row) => row.startsWith("› a")).length === 1
    )
    expect(redrawn.split("\n").filter((row) => row.startsWith("› a")).length).toBe(1)
    t.keys("C-u")
    await leave(t, fake)
  })

  it("a window narrowed under a long input line redraws it once, as the terminal rewrapped it", async () => {
    const fake = await server([text("unused")])
    const home = makeHome()
    const t = await chat(home, ["--base-url", fake.url, "--tools", "none"])
    const long = "abcdefghij".repeat(15)
    t.type(long)
    await t.waitFor((screen) => occurrences(screen.replaceAll("\n", ""), long) === 1)
    execFileSync("tmux", ["-L", tmuxSocket, "resize-window", "-t", t.name, "-x", "40", "-y", "30"])
    // 152 cells at 40 columns: four rows, drawn once (tmux keeps what the reflow pushed up in its history)
    // the screen settles with the line drawn once (a stale row would stay for good: the wait would fail)
    const narrowed = await t.waitFor((screen) => {
      const shown = screen.split("\n")
      // (right after tmux rewraps and before the redraw, the prompt's row may sit in its history)
      return shown.some((row) => row === "ijabcdefghijabcdefghijabcdefghij") && shown.filter((row) => /^[a-j]+$/.test(row)).length === 3 &&
        shown.filter((row) => row.startsWith("› abcdefghij")).length === 1
    })
    const rows = narrowed.split("\n")
    expect(rows.filter((row) => row.startsWith("› abcdefghij")).length).toBe(1)
    // its three continuation rows, and no stale one left above it from the wider drawing
    expect(rows.filter((row) => /^[a-j]+$/.test(row)).length).toBe(3)
    t.keys("C-u")
    await leave(t, fake)
  })

  it("a >> line during a turn steers it: the next step's request carries it after the tool's result", async () => {
    const home = makeHome()
    // the command blocks reading the FIFO until the test opens it for writing: the turn is in
    // its tool call, for as long as the test needs, with no clock involved
    const gate = join(home.cwd, "gate")
    execFileSync("mkfifo", [gate])
    const fake = await server([
      toolCall("bash", { command: "cat gate" }, { say: "Waiting on the gate." }),
      text("Steered: in French."),
      text("unused")
    ])
    const t = await chat(home, ["--base-url", fake.url, "--yes"])
    say(t, "Open the gate")
    await t.waitFor("⚙ bash {\"command\":\"cat gate\"}")
    say(t, ">> answer in French")
    await t.waitFor("(steering at the next step: answer in French)")
    await writeFile(gate, "opened\n")
    const screen = await idle(t, "Steered: in French.")
    expect(screen).toMatch(/\(steering at the next step: answer in French\)\n {2}✓ bash [\d.]+s[^\n]*\n↳ steering: answer in French\nSteered: in French\./)
    keep("chat-steering", screen)
    expect(fake.requests()).toHaveLength(2)
    const second = messagesOf(fake.requests()[1])
    expect(second.map((m) => m.role)).toStrictEqual(["system", "user", "assistant", "tool", "user"])
    // the provider sees steering marked as such, where the agent took it
    expect(second.at(-1)).toStrictEqual({ role: "user", content: "<steering source=\"user\">\nanswer in French\n</steering>" })
    await leave(t, fake)
  })

  it("a >> line at the idle prompt is a message without the prefix", async () => {
    const fake = await server([text("Brief it is.")])
    const home = makeHome()
    const t = await chat(home, ["--base-url", fake.url, "--tools", "none"])
    say(t, ">> be brief")
    await idle(t, "Brief it is.")
    expect(messagesOf(fake.requests()[0]).at(-1)).toStrictEqual({ role: "user", content: "be brief" })
    await leave(t, fake)
  })

  it("/compact summarizes the turns before the newest two; the next request starts from the summary", async () => {
    const fake = await server([text("One."), text("Two."), text("Three."), text("They said first."), text("Four.")])
    const home = makeHome()
    const t = await chat(home, ["--base-url", fake.url, "--tools", "none"])
    say(t, "/compact")
    await t.waitFor("(nothing to compact yet)")
    for (const [line, answer] of [["First", "One."], ["Second", "Two."], ["Third", "Three."]] as const) {
      say(t, line)
      await idle(t, answer)
    }
    say(t, "/compact")
    const compacted = await t.waitFor((s) =>
      /\(compacted \(manual\): summarized events \d+–\d+ with deepseek-v4-flash · ~[\d,]+ → ~[\d,]+ tokens\)/.test(s)
    )
    keep("chat-compact", compacted)
    say(t, "Fourth")
    await idle(t, "Four.")
    // the summarizing call: the summarizer's instruction, the first turn as a transcript, not the kept ones
    const summarizing = messagesOf(fake.requests()[3])
    expect(summarizing[0]!.role).toBe("system")
    expect(summarizing.at(-1)!.content).toContain("First")
    expect(summarizing.at(-1)!.content).not.toContain("Third")
    // the next request: the system prompt, the summary, then the two newest turns verbatim
    const next = messagesOf(fake.requests()[4]).map((m) => m.content)
    expect(next[1]).toContain("They said first.")
    expect(next.slice(2)).toStrictEqual(["Second", "Two.", "Third", "Three.", "Fourth"])
    await leave(t, fake)
    // the session replays identically, both /compacts included (the one with nothing to do too;
    // the summarizing call is no model/request event: the compaction records what it asked)
    const [file] = readdirSync(home.sessions).filter((name) => name.endsWith(".jsonl"))
    const replayed = await dsh(home, ["replay", join(home.sessions, file!), "--tools", "none"])
    expect(replayed.stderr).toMatch(/replays identically: 4 turns, 4 model requests, \d+ events\n$/)
    expect(replayed.status).toBe(0)
  })

  it("SIGHUP (the terminal closed) mid-turn: the turn ends disposed and is written, exit 130", async () => {
    const fake = await server([endless("and so on, ", 50)])
    const home = makeHome()
    const t = await chat(home, ["--base-url", fake.url, "--tools", "none"])
    say(t, "Go on forever")
    await t.waitFor((s) => occurrences(s, "and so on") >= 2)
    // the pane's shell runs the command as its only child
    const shell = tmuxPanePid(t)
    const command = Number(execFileSync("pgrep", ["-P", String(shell)], { encoding: "utf8" }).trim())
    process.kill(command, "SIGHUP")
    await t.waitFor("[dsh exited 130]")
    t.close()
    await fake.close()
    const [file] = readdirSync(home.sessions).filter((name) => name.endsWith(".jsonl"))
    const events = (await readFile(join(home.sessions, file!), "utf8")).split("\n").filter((line) => line !== "").slice(1)
      .map((line) => JSON.parse(line) as { readonly type: string; readonly data: { readonly reason?: { readonly kind: string } } })
    expect(events.filter((event) => event.type === "turn/end").map((event) => event.data.reason?.kind)).toStrictEqual(["disposed"])
    expect(events.some((event) => event.type === "assistant/chunk")).toBe(true)
  })

  it("the terminal closed under a running turn (its tmux session killed): no crash on the failed writes, the turn is written, the session resumes", async () => {
    const fake = await server([endless("and so on, ", 50), text("Resumed.")])
    const home = makeHome()
    const t = await chat(home, ["--base-url", fake.url, "--tools", "none"])
    say(t, "Go on forever")
    await t.waitFor((s) => occurrences(s, "and so on") >= 2)
    const command = Number(execFileSync("pgrep", ["-P", String(tmuxPanePid(t))], { encoding: "utf8" }).trim())
    // the pane goes: the command gets SIGHUP, and every write to its terminal fails (EIO)
    t.close()
    await until(() => !alive(command))
    const [file] = readdirSync(home.sessions).filter((name) => name.endsWith(".jsonl"))
    const events = (await readFile(join(home.sessions, file!), "utf8")).split("\n").filter((line) => line !== "").slice(1)
      .map((line) => JSON.parse(line) as { readonly type: string; readonly data: { readonly reason?: { readonly kind: string } } })
    // closed by its SIGHUP (disposed) or by the end of its input that the closing also is (aborted, as Ctrl-D):
    // whichever the command saw first, the turn is closed in the file
    const ends = events.filter((event) => event.type === "turn/end").map((event) => event.data.reason?.kind)
    expect(ends).toHaveLength(1)
    expect(["disposed", "aborted"]).toContain(ends[0])
    const id = file!.replace(/\.jsonl$/, "")
    const resumed = await dsh(home, ["resume", id, "go on", "--base-url", fake.url, "--tools", "none"])
    expect(resumed.status).toBe(0)
    expect(resumed.stdout).toContain("Resumed.")
    await fake.close()
  })

  it("dsh resume without an id chats on in the latest session", async () => {
    const fake = await server([text("Noted."), text("You said: remember this.")])
    const home = makeHome()
    const recorded = await dsh(home, ["run", "Remember this.", "--base-url", fake.url, "--tools", "none"])
    const id = /session (\S+) \(dsh resume/.exec(recorded.stderr)![1]!
    const t = terminal(home, ["resume", "--base-url", fake.url, "--tools", "none"])
    const opened = await t.waitFor(`session ${id} (resumed, 1 turn, persisted)`)
    expect(opened).toContain("Remember this.")
    expect(opened).toContain("Noted.")
    say(t, "What did I say?")
    await t.waitFor("You said: remember this.")
    await leave(t, fake)
  })
})

describe("dsh chat without a terminal", slow, () => {
  it("refuses with CONFIG_INVALID pointing to dsh run; exit 2", async () => {
    const home = makeHome()
    const result = await dsh(home, ["chat"])
    expect(result.stderr).toBe("dsh: CONFIG_INVALID: dsh chat needs a terminal on stdin and stdout; for scripts and pipes use dsh run\n")
    expect(result.status).toBe(2)
  })
})
