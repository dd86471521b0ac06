/**
 * Helpers of the `dsh` command's tests: the command as a real process (the sources' bin.ts on
 * this Node), each test in its own home (config, data and working directories, and none of the
 * machine's provider variables), the fake OpenAI-compatible server of `@dsh/deepseek/testing`
 * on 127.0.0.1, wire fixtures, and a real terminal for `dsh chat` (tmux, on a socket of its
 * own).
 */
import { FakeServer, Fixture } from "@dsh/deepseek/testing"
import { Profiles } from "@dsh/openai"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

/** The command from its sources (this Node strips the types). */
export const bin = join(import.meta.dirname, "..", "src", "bin.ts")

/** A test's own home: nothing of the user's configuration or sessions is read or written. */
export interface Home {
  readonly root: string
  readonly config: string
  readonly data: string
  /** The default sessions directory under this home. */
  readonly sessions: string
  /** The working directory the command runs in. */
  readonly cwd: string
  readonly env: Record<string, string>
}

/**
 * The variables a test never inherits: dsh's own, the XDG directories, and every provider's
 * key and base URL (the shipped profiles' variables, Anthropic's, and their families:
 * `OPENAI_ORG_ID`, …), so the machine's real keys never reach a test.
 */
const isolated: ReadonlyArray<string> = [
  ...new Set([
    "DSH_",
    "XDG_",
    "DEEPSEEK_",
    "OPENAI_",
    "ANTHROPIC_",
    "OLLAMA_",
    "VLLM_",
    "LLAMA_",
    "LMSTUDIO_",
    "OPENROUTER_",
    ...Object.values(Profiles.all).flatMap((profile) => [profile.apiKeyEnv, profile.baseUrlEnv].filter((name) => name !== undefined))
  ])
]

export const makeHome = (extra: Record<string, string> = {}): Home => {
  const root = mkdtempSync(join(tmpdir(), "dsh-cli-"))
  const config = join(root, "config")
  const data = join(root, "data")
  const cwd = join(root, "work")
  for (const dir of [config, data, cwd]) mkdirSync(dir, { recursive: true })
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter((entry): entry is [string, string] =>
      entry[1] !== undefined && !isolated.some((prefix) => entry[0].startsWith(prefix))
    )
  )
  return {
    root,
    config,
    data,
    sessions: join(data, "dsh", "sessions"),
    cwd,
    env: { ...inherited, HOME: root, XDG_CONFIG_HOME: config, XDG_DATA_HOME: data, DEEPSEEK_API_KEY: "sk-test", NO_COLOR: "1", ...extra }
  }
}

/**
 * Writes an MCP servers file in the home's working directory naming the reference server
 * `@modelcontextprotocol/server-everything` over stdio, with this Node, as `everything`; returns its path.
 */
export const writeEverythingServers = (home: Home): string => {
  const everything = fileURLToPath(import.meta.resolve("@modelcontextprotocol/server-everything/dist/index.js"))
  const file = join(home.cwd, "mcp.json")
  writeFileSync(file, JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [everything, "stdio"] } } }))
  return file
}

/** Writes the home's config file (`$XDG_CONFIG_HOME/dsh/config.json`). */
export const writeConfig = (home: Home, config: unknown): string => {
  const file = join(home.config, "dsh", "config.json")
  mkdirSync(join(home.config, "dsh"), { recursive: true })
  writeFileSync(file, typeof config === "string" ? config : JSON.stringify(config))
  return file
}

export interface Result {
  readonly status: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

export interface Running {
  readonly child: ChildProcess
  /** Resolves once the stream has printed text containing `text`. */
  readonly waitFor: (stream: "stdout" | "stderr", text: string) => Promise<void>
  readonly done: Promise<Result>
}

/** How a test runs the command: its stdin, its stdout (a pipe unless given a file descriptor), and which entry file (the sources' `bin.ts` unless given). */
export interface Options {
  readonly stdin?: string
  readonly stdout?: number
  readonly bin?: string
}

/** Starts `dsh <args>` in the home; stdin is `stdin` (closed after it), or closed at once. */
export const start = (home: Home, args: ReadonlyArray<string>, options: Options = {}): Running => {
  const child = spawn(process.execPath, [options.bin ?? bin, ...args], { cwd: home.cwd, env: home.env, stdio: ["pipe", options.stdout ?? "pipe", "pipe"] })
  const output = { stdout: "", stderr: "" }
  const waiters: Array<{ readonly stream: "stdout" | "stderr"; readonly text: string; readonly resolve: () => void }> = []
  const check = () => {
    for (const waiter of waiters.filter((w) => output[w.stream].includes(w.text))) {
      waiters.splice(waiters.indexOf(waiter), 1)
      waiter.resolve()
    }
  }
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    output.stdout += chunk
    check()
  })
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    output.stderr += chunk
    check()
  })
  child.stdin!.end(options.stdin ?? "")
  const done = new Promise<Result>((resolve) => {
    child.on("close", (status, signal) => resolve({ status, signal, stdout: output.stdout, stderr: output.stderr }))
  })
  const waitFor = (stream: "stdout" | "stderr", text: string) =>
    new Promise<void>((resolve, reject) => {
      waiters.push({ stream, text, resolve })
      check()
      child.on("close", () => {
        if (waiters.some((w) => w.resolve === resolve)) reject(new Error(`dsh exited before its ${stream} showed ${JSON.stringify(text)}:\n${output[stream]}`))
      })
    })
  return { child, waitFor, done }
}

/** The messages of a request the fake server received. */
export const messagesOf = (request: FakeServer.RecordedRequest | undefined): ReadonlyArray<{ readonly role: string; readonly content: string }> =>
  (request?.json as { readonly messages?: ReadonlyArray<{ readonly role: string; readonly content: string }> } | undefined)?.messages ?? []

/** Runs `dsh <args>` to its end. */
export const dsh = (home: Home, args: ReadonlyArray<string>, options: Options = {}): Promise<Result> =>
  start(home, args, options).done

/** A fake OpenAI-compatible server answering with these fixtures, in order. */
export const server = (respond: FakeServer.Respond): Promise<FakeServer.Running> => FakeServer.start(respond)

// ---------------------------------------------------------------------------------------------
// fixtures

const usage = Fixture.usageChunk(Fixture.usage({ hit: 64, miss: 20, completion: 8 }))

/** A streamed text answer in these pieces. */
export const text = (...pieces: ReadonlyArray<string>): Fixture.Fixture => Fixture.text(pieces)

/** An answer that calls one tool (after a sentence, when given). */
export const toolCall = (name: string, args: unknown, options: { readonly id?: string; readonly say?: string } = {}): Fixture.Fixture => ({
  description: `a call of ${name}`,
  writes: [
    Fixture.data(Fixture.chunk({ role: "assistant", content: options.say ?? "" })),
    Fixture.data(Fixture.chunk({
      tool_calls: [{ index: 0, id: options.id ?? `call_${name}`, type: "function", function: { name, arguments: JSON.stringify(args) } }]
    })),
    Fixture.data(Fixture.chunk({}, { finish: "tool_calls" })),
    Fixture.data(usage),
    Fixture.done
  ]
})

/** An answer that streams `text`, then holds the connection open without a byte more. */
export const stallAfter = (text: string): Fixture.Fixture => ({
  description: `${JSON.stringify(text)}, then a stall`,
  writes: [Fixture.data(Fixture.chunk({ role: "assistant", content: "" })), Fixture.data(Fixture.chunk({ content: text })), { stall: true }]
})

/** An answer that never ends: `piece` every `everyMillis` ms until the client leaves. */
export const endless = (piece: string, everyMillis = 20): Fixture.Fixture => ({
  description: `${JSON.stringify(piece)} forever`,
  writes: [
    Fixture.data(Fixture.chunk({ role: "assistant", content: "" })),
    { repeat: { data: Fixture.chunk({ content: piece }) }, everyMillis }
  ]
})

export { Fixture }

// ---------------------------------------------------------------------------------------------
// a real terminal

/** A tmux server of the test file's own (its socket), so tests never touch the user's. */
export const tmuxSocket = `dsh-test-${process.pid}`

const tmux = (...args: ReadonlyArray<string>): string =>
  execFileSync("tmux", ["-L", tmuxSocket, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })

export interface Terminal {
  readonly name: string
  /** Sends keys (tmux key names: `Enter`, `C-c`, or literal text with `literal`). */
  readonly keys: (...keys: ReadonlyArray<string>) => void
  readonly type: (text: string) => void
  /** The screen now, as text. */
  readonly screen: () => string
  /** Polls the screen (every 25 ms, at most `within` ms) until `until` holds; returns that screen. */
  readonly waitFor: (until: string | ((screen: string) => boolean), within?: number) => Promise<string>
  readonly close: () => void
}

let terminals = 0

/**
 * `dsh <args>` in a real terminal of `columns` × `rows`. When the command exits, the pane
 * prints `[dsh exited <status>]` and stays, so a test can read the status from the screen.
 */
export const terminal = (home: Home, args: ReadonlyArray<string>, size = { columns: 100, rows: 30 }): Terminal => {
  const name = `t${++terminals}`
  const script = join(home.root, `${name}.sh`)
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`
  const exports = Object.entries({ ...home.env, TERM: "xterm-256color" })
    .filter(([key]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
    .map(([key, value]) => `export ${key}=${quote(value)}`)
  writeFileSync(
    script,
    [
      ...exports,
      `cd ${quote(home.cwd)}`,
      `${quote(process.execPath)} ${[bin, ...args].map(quote).join(" ")}`,
      `echo "[dsh exited $?]"`,
      "exec sleep 3600"
    ].join("\n") + "\n"
  )
  tmux("new-session", "-d", "-s", name, "-x", String(size.columns), "-y", String(size.rows), `sh ${quote(script)}`)
  const screen = () => tmux("capture-pane", "-p", "-t", name)
  const waitFor = async (until: string | ((screen: string) => boolean), within = 15_000) => {
    const holds = typeof until === "string" ? (s: string) => s.includes(until) : until
    const deadline = Date.now() + within
    for (;;) {
      const now = screen()
      if (holds(now)) return now
      if (Date.now() > deadline) throw new Error(`the terminal never showed ${typeof until === "string" ? JSON.stringify(until) : "what was expected"}:\n${now}`)
      await new Promise((resolve) => {
        setTimeout(resolve, 25)
      })
    }
  }
  return {
    name,
    keys: (...keys) => void tmux("send-keys", "-t", name, ...keys),
    type: (text) => void tmux("send-keys", "-t", name, "-l", text),
    screen,
    waitFor,
    close: () => {
      try {
        tmux("kill-session", "-t", name)
      } catch {
        // already gone
      }
    }
  }
}

/** Stops the test file's tmux server. */
export const closeTerminals = () => {
  try {
    tmux("kill-server")
  } catch {
    // no server
  }
}

/** Whether tmux is installed (`.ci/run` installs it). */
export const hasTmux = (): boolean => {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}
