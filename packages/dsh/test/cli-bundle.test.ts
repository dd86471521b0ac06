/**
 * The bundled command (ADR 0029), what `npm install dsh` puts on a user's PATH: bundled here
 * by the build's own script into a temporary directory, then run as a real process for what
 * each part of the bundle carries — the parser and help, a headless turn with the coding tools
 * (bash runs a real child process), `--json`, the session written, listed, resumed and
 * replayed, the lazily loaded chunks (Anthropic's adapter, MCP with a real server), and the
 * typed failures, and the launcher's code cache — so a bundling mistake (a module the bundle
 * cannot carry, a lazily loaded part that does not load) fails here, not on a user's machine. The rest of the command's behaviour is
 * tested from the sources by the other cli-*.test.ts files.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { bundleCommand } from "../../../scripts/bundle-command.mjs"
import { dsh as dshFrom, Fixture, type Home, makeHome, messagesOf, type Options, server, text, toolCall, writeEverythingServers } from "./cli-helpers.ts"

const slow = { timeout: 120_000 }

let outDir = ""
let entry = ""
beforeAll(async () => {
  outDir = mkdtempSync(join(tmpdir(), "dsh-bundle-"))
  entry = await bundleCommand(outDir)
}, 120_000)
afterAll(() => rmSync(outDir, { recursive: true, force: true }))

const dsh = (home: Home, args: ReadonlyArray<string>, options: Options = {}) => dshFrom(home, args, { ...options, bin: entry })

const sessionOf = (stderr: string): string => /session (\S+) \(dsh resume/.exec(stderr)?.[1] ?? "(no session id)"

describe("the bundled dsh command", slow, () => {
  it("--help and --version", async () => {
    const home = makeHome()
    const help = await dsh(home, ["--help"])
    expect(help.stdout).toContain("USAGE")
    expect(help.stdout).toContain("chat")
    expect(help.status).toBe(0)
    const version = await dsh(home, ["--version"])
    expect(version.stdout).toContain("0.1.0")
    expect(version.status).toBe(0)
  })

  it("a turn with the coding tools: bash runs, its output reaches the model; the session is listed, resumed and replays identically", async () => {
    const home = makeHome()
    const fake = await server([
      toolCall("bash", { command: "echo from-the-bundle" }, { say: "Running it." }),
      text("It printed ", "from-the-bundle."),
      text("Still here.")
    ])
    const ran = await dsh(home, ["run", "Run echo", "--yes", "--base-url", fake.url])
    expect(ran.stderr).toMatch(/ {2}✓ bash [\d.]+s/)
    expect(ran.stdout).toBe("Running it.\nIt printed from-the-bundle.\n")
    expect(ran.status).toBe(0)
    expect(messagesOf(fake.requests()[1]).find((m) => m.role === "tool")?.content).toContain("from-the-bundle")
    const id = sessionOf(ran.stderr)

    const listed = await dsh(home, ["sessions", "list", "--json"])
    expect(JSON.parse(listed.stdout)).toMatchObject([{ id }])

    const resumed = await dsh(home, ["resume", id, "Anything else?", "--yes", "--base-url", fake.url])
    await fake.close()
    expect(resumed.stdout).toBe("Still here.\n")
    expect(resumed.status).toBe(0)
    expect(messagesOf(fake.requests()[2]).map((m) => m.role)).toStrictEqual(["system", "user", "assistant", "tool", "assistant", "user"])

    const offline = { ...home, env: { ...home.env } }
    delete offline.env["DEEPSEEK_API_KEY"]
    const replayed = await dsh(offline, ["replay", id, "--json"])
    expect(JSON.parse(replayed.stdout)).toMatchObject({ _tag: "Identical", turns: 2, requests: 3 })
    expect(replayed.status).toBe(0)
  })

  it("--json: the session's events as JSON lines", async () => {
    const fake = await server([text("Hi")])
    const result = await dsh(makeHome(), ["run", "--json", "Hello?", "--base-url", fake.url, "--tools", "none", "--sessions", "memory"])
    await fake.close()
    const events = result.stdout.trimEnd().split("\n").map((line) => JSON.parse(line) as { readonly seq: number; readonly type: string })
    expect(events.map((e) => e.seq)).toStrictEqual(events.map((_, i) => i))
    expect(events.some((e) => e.type === "assistant/chunk")).toBe(true)
    expect(result.status).toBe(0)
  })

  it("MCP, loaded when a server is named: a real server's tool runs", async () => {
    const home = makeHome()
    const file = writeEverythingServers(home)
    const fake = await server([toolCall("everything__echo", { message: "hello over MCP" }), text("It echoed.")])
    const result = await dsh(home, ["run", "Echo", "--mcp", file, "--tools", "none", "--yes", "--base-url", fake.url])
    await fake.close()
    expect(result.stderr).toMatch(/ {2}✓ everything__echo [\d.]+s/)
    expect(result.stdout).toBe("It echoed.\n")
    expect(result.status).toBe(0)
  })

  it("the launcher's code cache: written after a first run (an older one of the command removed), used by the next, rewritten when V8 rejects it, off with NODE_DISABLE_COMPILE_CACHE", async () => {
    const home = makeHome()
    const directory = join(home.root, ".cache", "dsh", "code-cache")
    // an earlier build's cache of the same command, and another command's
    mkdirSync(directory, { recursive: true })
    writeFileSync(join(directory, "other-v0.0.0-x64-1-1.bin"), "stale")
    writeFileSync(join(directory, "run-v0.0.0-x64-1-1.bin"), "another command's")
    const first = await dsh(home, ["--help"])
    expect(first.status).toBe(0)
    const [file, ...others] = readdirSync(directory).filter((name) => name.startsWith("other-"))
    expect(others).toStrictEqual([])
    expect(existsSync(join(directory, "run-v0.0.0-x64-1-1.bin"))).toBe(true)
    expect(file).toMatch(new RegExp(`^other-${process.version}-${process.arch}-\\d+-\\d+\\.bin$`))
    const cache = readFileSync(join(directory, file!))
    const second = await dsh(home, ["--help"])
    expect(second.stdout).toBe(first.stdout)
    // used, so not written again
    expect(readFileSync(join(directory, file!)).equals(cache)).toBe(true)
    writeFileSync(join(directory, file!), "not a code cache")
    const third = await dsh(home, ["--help"])
    expect(third.stdout).toBe(first.stdout)
    expect(readFileSync(join(directory, file!)).length).toBeGreaterThan(1000)

    const off = makeHome({ NODE_DISABLE_COMPILE_CACHE: "1" })
    expect((await dsh(off, ["--version"])).status).toBe(0)
    expect(existsSync(join(off.root, ".cache", "dsh"))).toBe(false)
  })

  it("the launcher's code cache never goes under the working directory: a relative XDG_CACHE_HOME is ignored for ~/.cache", async () => {
    const home = makeHome({ XDG_CACHE_HOME: "cache" })
    const result = await dsh(home, ["--version"])
    expect(result.status).toBe(0)
    expect(readdirSync(home.cwd)).toStrictEqual([])
    expect(readdirSync(join(home.root, ".cache", "dsh", "code-cache")).filter((name) => name.startsWith("other-"))).toHaveLength(1)
  })

  it("typed failures: no key (LLM_CONFIG, exit 2), Anthropic's adapter without its key, a failing provider", async () => {
    const noKey = makeHome()
    delete noKey.env["DEEPSEEK_API_KEY"]
    const missing = await dsh(noKey, ["run", "Hi", "--tools", "none", "--sessions", "memory"])
    expect(missing.stderr).toContain("LLM_CONFIG")
    expect(missing.stderr).toContain("DEEPSEEK_API_KEY")
    expect(missing.status).toBe(2)

    const anthropic = await dsh(noKey, ["run", "Hi", "--provider", "anthropic", "--tools", "none", "--sessions", "memory"])
    expect(anthropic.stderr).toContain("LLM_CONFIG")
    expect(anthropic.stderr).toContain("ANTHROPIC_API_KEY")
    expect(anthropic.status).toBe(2)

    const fake = await server(Fixture.load("401"))
    const refused = await dsh(makeHome(), ["run", "Hi", "--base-url", fake.url, "--tools", "none", "--sessions", "memory"])
    await fake.close()
    expect(refused.stderr).toContain("dsh: LLM_AUTH: ")
    expect(refused.status).toBe(1)
  })
})
