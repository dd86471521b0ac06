/**
 * `dsh run` as a real process against the fake OpenAI-compatible server: the answer on stdout
 * as it streams, tool activity and the summary on stderr, `--json`, the prompt from stdin, and
 * an exit status for every way a turn ends and every usage or configuration error.
 */
import { SessionEvent } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { existsSync, readdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { dsh, Fixture, makeHome, messagesOf, server, start, stallAfter, text, toolCall, writeConfig } from "./cli-helpers.ts"

const decodeEvent = Schema.decodeUnknownSync(SessionEvent.SessionEvent)

// real processes on a shared machine: each test starts the command once or twice
const slow = { timeout: 120_000 }

describe("dsh run", slow, () => {
  it("streams the answer to stdout and the summary to stderr; exit 0; the session is persisted", async () => {
    const fake = await server([text("Hel", "lo, ", "world!")])
    const home = makeHome()
    const result = await dsh(home, ["run", "Say hello", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(result.stdout).toBe("Hello, world!\n")
    expect(result.stderr).toMatch(/^dsh: completed · 1 step · in 10 \(cache hit 0\) · out 3 · <\$0\.0001 · [\d.]+s · session (\S+) \(dsh resume \1\)\n$/)
    expect(result.status).toBe(0)
    const [request] = fake.requests()
    expect(request?.headers["authorization"]).toBe("Bearer sk-test")
    expect(request?.json).toMatchObject({ model: "deepseek-v4-flash", messages: [{ role: "system" }, { role: "user", content: "Say hello" }] })
    expect(readdirSync(home.sessions).filter((f) => f.endsWith(".jsonl"))).toHaveLength(1)
  })

  it("an answer cut off at the model's output limit says so on stderr; the turn still completes", async () => {
    const cut: Fixture.Fixture = {
      description: "an answer cut at the output limit",
      writes: [
        Fixture.data(Fixture.chunk({ role: "assistant", content: "" })),
        Fixture.data(Fixture.chunk({ content: "The first half of" })),
        Fixture.data(Fixture.chunk({ content: "" }, { finish: "length" })),
        Fixture.done
      ]
    }
    const fake = await server([cut])
    const home = makeHome()
    const result = await dsh(home, ["run", "Say a lot", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(result.stdout).toBe("The first half of\n")
    expect(result.stderr).toMatch(/^dsh: warning: the answer was cut off at the model's output limit \(finish reason length\)\ndsh: completed · 1 step/)
    expect(result.status).toBe(0)
  })

  it("writes the answer as it arrives: text before the stream ends; SIGINT aborts the turn, exit 130", async () => {
    const fake = await server([stallAfter("Thinking about")])
    const home = makeHome()
    const running = start(home, ["run", "Think", "--base-url", fake.url, "--tools", "none"])
    await running.waitFor("stdout", "Thinking about")
    running.child.kill("SIGINT")
    const result = await running.done
    await fake.close()
    expect(result.stdout).toBe("Thinking about\n")
    expect(result.stderr).toContain("dsh: aborted · 1 step")
    expect(result.stderr).toContain("dsh: ABORTED: turn 1 was aborted: interrupted (SIGINT)")
    expect(result.status).toBe(130)
  })

  it("--json: the session's events as JSON lines on stdout, from the first to the agent idle again", async () => {
    const fake = await server([text("Hi")])
    const home = makeHome()
    const result = await dsh(home, ["run", "--json", "Hello?", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    const events = result.stdout.trimEnd().split("\n").map((line) => decodeEvent(JSON.parse(line)))
    expect(events.map((e) => e.seq)).toStrictEqual(events.map((_, i) => i))
    expect(events[0]).toMatchObject({ type: "agent/status", data: { status: "idle" } })
    expect(events.at(-1)).toMatchObject({ type: "agent/status", data: { status: "idle" } })
    expect(events.find((e) => e.type === "turn/end")?.data).toStrictEqual({ turn: 1, reason: { kind: "completed" } })
    expect(events.filter((e) => e.type === "assistant/chunk").length).toBeGreaterThan(0)
    expect(result.stderr).toBe("")
    expect(result.status).toBe(0)
  })

  it("reads the prompt from stdin without an argument, or with -", async () => {
    const fake = await server([text("one"), text("two")])
    const home = makeHome()
    const piped = await dsh(home, ["run", "--base-url", fake.url, "--tools", "none"], { stdin: "from stdin\n" })
    const dashed = await dsh(home, ["run", "-", "--base-url", fake.url, "--tools", "none"], { stdin: "from a dash" })
    await fake.close()
    expect([piped.stdout, dashed.stdout]).toStrictEqual(["one\n", "two\n"])
    const users = fake.requests().map((r) => messagesOf(r).at(-1)?.content)
    expect(users).toStrictEqual(["from stdin\n", "from a dash"])
  })

  it("shows tool calls and their results on stderr, the answer on stdout", async () => {
    const fake = await server([toolCall("lookup", { q: "x" }, { say: "Let me look." }), text("Nothing found.")])
    const home = makeHome()
    const result = await dsh(home, ["run", "Look it up", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(result.stdout).toBe("Let me look.\nNothing found.\n")
    expect(result.stderr).toContain("⚙ lookup {\"q\":\"x\"}\n")
    expect(result.stderr).toMatch(/ {2}✗ lookup [\d.]+s UNKNOWN_TOOL: /)
    expect(result.stderr).toContain("dsh: completed · 2 steps · in 94 (cache hit 64) · out 9")
    expect(result.status).toBe(0)
  })

  it("--tools coding: asking is refusing without --yes (TOOL_DENIED); --yes runs the command", async () => {
    const home = makeHome()
    const refused = await server([toolCall("bash", { command: "echo from-bash > made.txt" }), text("Refused.")])
    const denied = await dsh(home, ["run", "Make a file", "--base-url", refused.url])
    await refused.close()
    expect(denied.stderr).toMatch(/ {2}✗ bash [\d.]+s TOOL_DENIED: /)
    // the model is told why, and what the user could do
    const result = messagesOf(refused.requests()[1]).find((m) => m.role === "tool")
    expect(result?.content).toContain("dsh run asks no one, so it is refused: the user can allow such calls with --yes")
    expect(existsSync(join(home.cwd, "made.txt"))).toBe(false)
    expect(denied.status).toBe(0)
    const approved = await server([toolCall("bash", { command: "echo from-bash > made.txt" }), text("Made.")])
    const ran = await dsh(home, ["run", "--yes", "Make a file", "--base-url", approved.url])
    await approved.close()
    expect(ran.stderr).toMatch(/ {2}✓ bash [\d.]+s/)
    expect(existsSync(join(home.cwd, "made.txt"))).toBe(true)
    expect(ran.stdout).toBe("Made.\n")
  })

  it("the config file's permission rules come first: an allow runs without asking, a deny holds under --yes", async () => {
    const home = makeHome()
    writeConfig(home, {
      permissions: {
        rules: [
          { decision: "allow", tool: "bash", command: "echo" },
          { decision: "deny", tool: "write", path: "secrets/**", reason: "secrets are not the agent's" }
        ]
      }
    })
    const fake = await server([
      toolCall("bash", { command: "echo allowed-by-config" }, { id: "call_echo" }),
      toolCall("bash", { command: "touch asked.txt" }, { id: "call_touch" }),
      text("Done.")
    ])
    const headless = await dsh(home, ["run", "Run things", "--base-url", fake.url])
    expect(headless.stderr).toMatch(/ {2}✓ bash [\d.]+s \(2 lines\) allowed-by-config/)
    // a command no rule of the file allows is asked about, as before: refused headless
    expect(headless.stderr).toMatch(/ {2}✗ bash [\d.]+s TOOL_DENIED: /)
    expect(existsSync(join(home.cwd, "asked.txt"))).toBe(false)
    expect(headless.status).toBe(0)

    const writing = await server([toolCall("write", { path: "secrets/key.txt", content: "x" }), text("Could not.")])
    const denied = await dsh(home, ["run", "--yes", "Write the key", "--base-url", writing.url])
    expect(messagesOf(writing.requests()[1]).find((m) => m.role === "tool")?.content).toContain("secrets are not the agent's")
    expect(existsSync(join(home.cwd, "secrets", "key.txt"))).toBe(false)
    expect(denied.status).toBe(0)
    await fake.close()
    await writing.close()
  })

  it("a bad permission rule in the config file: CONFIG_INVALID naming it, exit 2", async () => {
    const misspelt = makeHome()
    writeConfig(misspelt, { permissions: { rules: [{ decision: "allow", tool: "bash", comand: "git status" }] } })
    const unknownKey = await dsh(misspelt, ["run", "Hi", "--sessions", "memory"])
    expect(unknownKey.stderr).toContain("dsh: CONFIG_INVALID: ")
    expect(unknownKey.stderr).toContain("permissions.rules.0.comand: Expected no excess property")
    expect(unknownKey.status).toBe(2)

    const badDecision = makeHome()
    writeConfig(badDecision, { permissions: { rules: [{ decision: "maybe", tool: "bash" }] } })
    const decision = await dsh(badDecision, ["run", "Hi", "--sessions", "memory"])
    expect(decision.stderr).toContain("permissions.rules.0.decision")
    expect(decision.status).toBe(2)

    // well-formed, but the policy cannot use it
    const noTool = makeHome()
    writeConfig(noTool, { permissions: { rules: [{ decision: "allow", tool: "read" }, { decision: "allow", command: "ls" }] } })
    const unusable = await dsh(noTool, ["run", "Hi", "--sessions", "memory"])
    expect(unusable.stderr).toContain("is invalid: permissions.rules.1: names no tool")
    expect(unusable.status).toBe(2)
  })
})

describe("dsh run: how it ends", slow, () => {
  it("a rejected API key (HTTP 401): LLM_AUTH and what to check, exit 1", async () => {
    const fake = await server(Fixture.load("401"))
    const home = makeHome()
    const result = await dsh(home, ["run", "Hi", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(result.stderr).toContain("dsh: LLM_AUTH: ")
    expect(result.stderr).toContain("check DEEPSEEK_API_KEY")
    // the adapter's advice to a program (`pass apiKey: … to DeepSeek.layer`) is not the command line's
    expect(result.stderr).not.toContain("Redacted.make")
    expect(result.stderr).not.toContain("..")
    expect(result.stdout).toBe("")
    expect(result.status).toBe(1)
  })

  it("a provider failing (HTTP 500): LLM_SERVER, exit 1 (retries set by the config file)", async () => {
    const fake = await server(Fixture.load("500"))
    const home = makeHome()
    writeConfig(home, { deepseek: { retries: 0 } })
    const result = await dsh(home, ["run", "Hi", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(fake.requests()).toHaveLength(1)
    expect(result.stderr).toContain("dsh: LLM_SERVER: ")
    expect(result.stderr).toContain("try again later")
    expect(result.status).toBe(1)
  })

  it("a turn stopped at its step limit: TURN_LIMIT, exit 3", async () => {
    const fake = await server([toolCall("lookup", {}), toolCall("lookup", {})])
    const home = makeHome()
    const result = await dsh(home, ["run", "Loop", "--max-steps", "1", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(result.stderr).toContain("dsh: limit · 1 step")
    expect(result.stderr).toContain("dsh: TURN_LIMIT: ")
    expect(result.status).toBe(3)
  })

  it("no API key: LLM_CONFIG saying which variable to set and which file, exit 2, no request", async () => {
    const fake = await server(text("never"))
    const home = makeHome()
    delete home.env["DEEPSEEK_API_KEY"]
    const result = await dsh(home, ["run", "Hi", "--base-url", fake.url])
    await fake.close()
    expect(fake.requests()).toHaveLength(0)
    expect(result.stderr).toContain("dsh: LLM_CONFIG: No DeepSeek API key is configured. Set the DEEPSEEK_API_KEY environment variable")
    expect(result.stderr).toContain(join(home.config, "dsh", "config.json"))
    expect(result.status).toBe(2)
  })

  it("the key and the base URL from the config file", async () => {
    const fake = await server(text("Configured."))
    const home = makeHome()
    delete home.env["DEEPSEEK_API_KEY"]
    writeConfig(home, { model: "deepseek-v4-pro", deepseek: { apiKey: "sk-from-file", baseUrl: fake.url }, tools: "none" })
    const result = await dsh(home, ["run", "Hi"])
    await fake.close()
    expect(result.stdout).toBe("Configured.\n")
    expect(fake.requests()[0]?.headers["authorization"]).toBe("Bearer sk-from-file")
    expect(fake.requests()[0]?.json).toMatchObject({ model: "deepseek-v4-pro" })
  })

  it("a bad config file: CONFIG_INVALID naming the file and the field, exit 2", async () => {
    const home = makeHome()
    const file = writeConfig(home, { deepseek: { baseURL: "https://example.com" }, maxSteps: 0 })
    const result = await dsh(home, ["run", "Hi"])
    expect(result.stderr).toContain(`dsh: CONFIG_INVALID: ${file} is invalid: `)
    expect(result.stderr).toContain("deepseek.baseURL: ")
    expect(result.stderr).toContain("maxSteps: ")
    expect(result.status).toBe(2)
    writeFileSync(file, "{ not json")
    const broken = await dsh(home, ["run", "Hi"])
    expect(broken.stderr).toContain(`dsh: CONFIG_INVALID: ${file} is not JSON`)
    expect(broken.status).toBe(2)
    const missing = await dsh(home, ["run", "Hi", "--config", join(home.root, "nope.json")])
    expect(missing.stderr).toContain("dsh: CONFIG_INVALID: --config: the config file")
    expect(missing.status).toBe(2)
  })

  it("a bad base URL names where it came from: CONFIG_INVALID, exit 2", async () => {
    const home = makeHome({ DEEPSEEK_BASE_URL: "ftp://example.com" })
    const result = await dsh(home, ["run", "Hi"])
    expect(result.stderr).toContain("dsh: CONFIG_INVALID: DEEPSEEK_BASE_URL: expected an http(s) URL")
    expect(result.status).toBe(2)
  })

  it("--max-steps below 1 is a usage error like the same value in the config file: CONFIG_INVALID, exit 2", async () => {
    const home = makeHome()
    const result = await dsh(home, ["run", "Hi", "--max-steps", "0", "--tools", "none"])
    expect(result.stderr).toContain("dsh: CONFIG_INVALID: --max-steps: expected a whole number of steps, at least 1, got 0")
    expect(result.status).toBe(2)
  })

  it("usage errors: an unknown flag, an empty prompt, a bad value — CONFIG_INVALID and where the help is, exit 2", async () => {
    const home = makeHome()
    const flag = await dsh(home, ["run", "--bogus", "Hi"])
    expect(flag.stderr).toBe("dsh: CONFIG_INVALID: Unrecognized flag: --bogus in command dsh run\n  see dsh run --help\n")
    expect(flag.stdout).toBe("")
    expect(flag.status).toBe(2)
    const empty = await dsh(home, ["run", "  "])
    expect(empty.stderr).toBe("dsh: CONFIG_INVALID: the prompt is empty (from the prompt argument)\n")
    expect(empty.status).toBe(2)
    const tools = await dsh(home, ["run", "--tools", "all", "Hi"])
    expect(tools.stderr).toContain("dsh: CONFIG_INVALID: ")
    expect(tools.stderr).toContain('Invalid value for flag --tools: "all". Expected: "none" | "coding"')
    expect(tools.status).toBe(2)
  })

  it.each([
    ["--model", "a model's name"],
    ["--provider", "a provider's name"],
    ["--base-url", "a URL"],
    ["--config", "a config file"],
    ["--mcp", "an MCP config file"]
  ])("an empty %s is CONFIG_INVALID naming it, not a silent fall-back, exit 2", async (flag, expected) => {
    const home = makeHome()
    const result = await dsh(home, ["run", "Hi", flag, " ", "--sessions", "memory"])
    expect(result.stderr).toBe(`dsh: CONFIG_INVALID: ${flag}: expected ${expected}, got an empty string\n`)
    expect(result.status).toBe(2)
  })

  it("--help and --version: on stdout, exit 0", async () => {
    const home = makeHome()
    const help = await dsh(home, ["--help"])
    expect(help.stdout).toContain("dsh <subcommand>")
    for (const command of ["run", "chat", "resume", "sessions", "replay"]) expect(help.stdout).toContain(command)
    expect(help.status).toBe(0)
    const version = await dsh(home, ["--version"])
    expect(version.stdout).toContain("0.1.0")
    expect(version.status).toBe(0)
  })
})
