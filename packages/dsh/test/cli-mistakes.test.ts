/**
 * A user's mistakes with the `dsh` command, each ending in a typed error line with its catalog
 * code and exit status (docs/cli.md, Exit statuses and errors), never in a silent fall-back: a
 * config file the default path holds that cannot be read, an empty session id, a damaged
 * session header reported on one line, a misspelt flag's suggestion on the error's line, a
 * torn last line under `show --json`, `~/` in `--mcp`, and the defaults' directories when
 * `HOME` is empty or an XDG variable is relative.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir, userInfo } from "node:os"
import { join } from "node:path"
import * as Config from "../src/cli/Config.ts"
import * as Platform from "../src/cli/Platform.ts"
import { dsh, makeHome, server, text } from "./cli-helpers.ts"

const slow = { timeout: 120_000 }

const sessionOf = (stderr: string): string => /session (\S+) \(dsh resume/.exec(stderr)?.[1] ?? "(no session id)"

describe("dsh: a user's mistakes", slow, () => {
  it("a directory where the default config file goes: CONFIG_INVALID naming it, exit 2, no request", async () => {
    const fake = await server(text("never"))
    const home = makeHome()
    const file = join(home.config, "dsh", "config.json")
    mkdirSync(file, { recursive: true })
    const result = await dsh(home, ["run", "Hi", "--base-url", fake.url, "--tools", "none", "--sessions", "memory"])
    await fake.close()
    expect(fake.requests()).toHaveLength(0)
    expect(result.stderr).toBe(`dsh: CONFIG_INVALID: the config file ${file} cannot be read: it is a directory, not a file\n`)
    expect(result.status).toBe(2)
    const named = await dsh(home, ["sessions", "list", "--config", file])
    expect(named.stderr).toBe(`dsh: CONFIG_INVALID: --config: the config file ${file} cannot be read: it is a directory, not a file\n`)
    expect(named.status).toBe(2)
  })

  it("a blank model in the config file: CONFIG_INVALID saying so, not that the profile lists no models; exit 2, no request", async () => {
    const fake = await server(text("never"))
    const home = makeHome()
    const file = join(home.config, "dsh", "config.json")
    mkdirSync(join(home.config, "dsh"), { recursive: true })
    writeFileSync(file, JSON.stringify({ model: " " }))
    const result = await dsh(home, ["run", "Hi", "--base-url", fake.url, "--tools", "none", "--sessions", "memory"])
    await fake.close()
    expect(fake.requests()).toHaveLength(0)
    expect(result.stderr).toContain(`CONFIG_INVALID: ${file}: model: expected a model's name, got the blank string " "`)
    expect(result.status).toBe(2)
  })

  it("an empty session id names no session: CONFIG_INVALID for show, resume and replay, exit 2", async () => {
    const fake = await server(text("Hello."))
    const home = makeHome()
    const ran = await dsh(home, ["run", "Say hello", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(ran.status).toBe(0)
    // the only session: "" is the start of its id, but is no id the user gave
    for (const args of [["sessions", "show", ""], ["resume", " ", "and again?"], ["replay", "", "--tools", "none"]]) {
      const result = await dsh(home, args)
      expect(result.stderr, args.join(" ")).toContain("CONFIG_INVALID: ")
      expect(result.stderr, args.join(" ")).toContain("the session id is empty")
      expect(result.stdout, args.join(" ")).toBe("")
      expect(result.status, args.join(" ")).toBe(2)
    }
    const shown = await dsh(home, ["sessions", "show", sessionOf(ran.stderr)])
    expect(shown.status).toBe(0)
  })

  it("a session file with a damaged header: CORRUPT_LOG on one line, then the hint, nothing like a stack frame; exit 1", async () => {
    const home = makeHome()
    mkdirSync(home.sessions, { recursive: true })
    const id = "20260101-000000-abcd"
    writeFileSync(join(home.sessions, `${id}.jsonl`), "{\"not\":\"a header\"}\n")
    const result = await dsh(home, ["sessions", "show", id])
    const lines = result.stderr.trimEnd().split("\n")
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(new RegExp(`^dsh: CORRUPT_LOG: .*${id}\\.jsonl:1: bad header`))
    expect(lines[1]).toBe("  the session file is damaged at the line named: move the file aside to start afresh")
    expect(result.stderr).not.toMatch(/^\s+at /m)
    expect(result.status).toBe(1)
  })

  it("show --json of a session whose last line is torn: the events on stdout, the torn line reported on stderr as without --json", async () => {
    const fake = await server(text("Hello."))
    const home = makeHome()
    const ran = await dsh(home, ["run", "Say hello", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    const id = sessionOf(ran.stderr)
    appendFileSync(join(home.sessions, `${id}.jsonl`), "{\"type\":\"agent/st")
    const note = `dsh: the last line of ${join(home.sessions, `${id}.jsonl`)} is torn (a write a crash cut short); dsh resume ${id} repairs it\n`
    const shown = await dsh(home, ["sessions", "show", id])
    expect(shown.stderr).toBe(note)
    const json = await dsh(home, ["sessions", "show", id, "--json"])
    expect(json.stderr).toBe(note)
    expect(json.stdout.trimEnd().split("\n").map((line) => (JSON.parse(line) as { readonly type: string }).type).at(-1)).toBe("agent/status")
    expect(json.status).toBe(0)
  })

  it("--mcp takes ~/ as the home directory, like the other paths", async () => {
    const fake = await server(text("No servers."))
    const home = makeHome()
    writeFileSync(join(home.root, "mcp.json"), JSON.stringify({ mcpServers: {} }))
    const result = await dsh(home, ["run", "Hi", "--mcp=~/mcp.json", "--tools", "none", "--sessions", "memory", "--base-url", fake.url])
    await fake.close()
    expect(result.stdout).toBe("No servers.\n")
    expect(result.status).toBe(0)
  })

  it("a misspelt flag or command: one CONFIG_INVALID line with the suggestion, then where the help is; exit 2", async () => {
    const home = makeHome()
    const flag = await dsh(home, ["run", "--jsn", "Hi"])
    expect(flag.stderr).toBe("dsh: CONFIG_INVALID: Unrecognized flag: --jsn in command dsh run (did you mean --json?)\n  see dsh run --help\n")
    expect(flag.status).toBe(2)
    const command = await dsh(home, ["sessions", "lst"])
    expect(command.stderr).toBe(
      "dsh: CONFIG_INVALID: Unknown subcommand \"lst\" for \"dsh sessions\" (did you mean list or ls?)\n  see dsh sessions --help\n"
    )
    expect(command.stdout).toBe("")
    expect(command.status).toBe(2)
  })

  it("--json's help says what each command prints", async () => {
    const home = makeHome()
    const list = await dsh(home, ["sessions", "list", "--help"])
    expect(list.stdout).toMatch(/--json\s+Machine-readable output: the sessions as one JSON array/)
    const replay = await dsh(home, ["replay", "--help"])
    expect(replay.stdout).toMatch(/--json\s+Machine-readable output: the verdict as one JSON object/)
  })
})

describe("dsh: the defaults' directories", () => {
  const account = userInfo().homedir

  it("an empty HOME is as unset: the account's home directory, never a path relative to the working directory", () => {
    expect(Config.homeDirectory({ HOME: "" })).toBe(account)
    expect(Config.defaultSessionsDirectory({ HOME: "" })).toBe(join(account, ".local", "share", "dsh", "sessions"))
    expect(Config.defaultConfigFile({ HOME: " " })).toBe(join(account, ".config", "dsh", "config.json"))
    expect(Config.defaultConfigFile({ HOME: "/home/me" })).toBe(join("/home/me", ".config", "dsh", "config.json"))
  })

  it.effect("--model and DSH_MODEL are trimmed, as --provider is", () =>
    Effect.gen(function*() {
      const home = mkdtempSync(join(tmpdir(), "dsh-model-"))
      const flag = yield* Config.load({ model: "  deepseek-v4-pro ", tools: "none" }, { HOME: home, DEEPSEEK_API_KEY: "sk-x" })
      expect(flag.model).toBe("deepseek-v4-pro")
      const env = yield* Config.load({ tools: "none" }, { HOME: home, DEEPSEEK_API_KEY: "sk-x", DSH_MODEL: "deepseek-v4-pro\n" })
      expect(env.model).toBe("deepseek-v4-pro")
    }).pipe(Effect.provide(Platform.layer)))

  it("a relative XDG_CONFIG_HOME or XDG_DATA_HOME is ignored, as the XDG spec has it", () => {
    const env = { HOME: "/home/me", XDG_CONFIG_HOME: "conf", XDG_DATA_HOME: "./data" }
    expect(Config.defaultConfigFile(env)).toBe(join("/home/me", ".config", "dsh", "config.json"))
    expect(Config.defaultSessionsDirectory(env)).toBe(join("/home/me", ".local", "share", "dsh", "sessions"))
    expect(Config.defaultSessionsDirectory({ ...env, XDG_DATA_HOME: "/xdg/data" })).toBe(join("/xdg/data", "dsh", "sessions"))
  })
})
