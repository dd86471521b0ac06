/**
 * The startup benchmark (`npm run bench startup`): how long the `dsh` command takes to start,
 * each run a real child process on this Node. Measured, per way of running it:
 *
 * - `dsh --help`: from spawn to the process's exit;
 * - `dsh run "hi" --tools none --sessions memory`: from spawn to the moment the fake
 *   OpenAI-compatible server (`@dsh/deepseek/testing`, on 127.0.0.1 in this process) has
 *   received the first request, and from spawn to the process's exit (the one-word answer
 *   streamed and the summary printed);
 * - `dsh run "hi"` with the defaults (the coding tools, sessions in the home's JSONL
 *   directory), the same two times;
 *
 * from the sources (`--conditions=@dsh/source`, Node stripping the types: how the workspace
 * runs it) and from the bundle a user runs (`dist/bin/dsh.cjs`, the launcher, and the script it runs, ADR 0029; made here, into a
 * temporary directory, by `scripts/bundle-command.mjs`, so it is always the current code), with
 * the compile cache warm (the second and later starts: `bin.ts` turns Node's on, the launcher
 * keeps its own code cache in the home, and one unmeasured round fills them) and cold (a first start: an empty cache directory every run).
 * `node -e 0` is the floor, what any Node process costs. `STARTUP_BENCH_BIN=<file.js>` adds the
 * same cases for another build of the command, named "other".
 *
 * Every case runs RUNS times, the cases interleaved round by round so that the shared machine's
 * load falls on all of them alike; reported are the median and p90 of the wall time in ms, and
 * the median CPU time (user + system) the process used, which the machine's other work disturbs
 * less than the wall time (the load average is printed beside them). Each process runs in a home
 * of its own (HOME, XDG_* and TMPDIR in a temporary directory: no real config, sessions or
 * compile cache is read), with DEEPSEEK_API_KEY and DEEPSEEK_BASE_URL pointing at the fake
 * server. A run that does not end as expected (exit 0, the answer on stdout, one request) is
 * counted and reported. Measures only; nothing here asserts. Run directly by Node (type
 * stripping), so the file is erasable TypeScript.
 */
import { FakeServer, Fixture } from "@dsh/deepseek/testing"
import { bundleCommand } from "../../../scripts/bundle-command.mjs"
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"

const RUNS = 15
const root = join(import.meta.dirname, "..", "..", "..")
const sources = join(root, "packages", "dsh", "src", "bin.ts")
const TARGET_MS = 300

// ---------------------------------------------------------------------------------------------
// the fake server: answers every request with "hi", and notes when each one arrived

let arrivedAt: number | undefined
let requests = 0
const fake = await FakeServer.start(() => {
  requests++
  arrivedAt ??= performance.now()
  return Fixture.text(["hi"])
})

// ---------------------------------------------------------------------------------------------
// the homes: nothing of the user's is read; the compile cache lives in the home's TMPDIR

const scratch = mkdtempSync(join(tmpdir(), "dsh-startup-bench-"))
const bundle = await bundleCommand(join(scratch, "bundle"))
/** Prints the process's CPU time (µs) to the file STARTUP_BENCH_CPU names, at exit. */
const cpuProbe = join(scratch, "cpu-probe.cjs")
writeFileSync(
  cpuProbe,
  `process.on("exit", () => { const u = process.cpuUsage(); require("node:fs").writeFileSync(process.env.STARTUP_BENCH_CPU, String(u.user + u.system)) })\n`
)

/** Not inherited: dsh's variables, the XDG directories, the providers' keys and base URLs. */
const isolated = ["DSH_", "XDG_", "DEEPSEEK_", "OPENAI_", "ANTHROPIC_", "OPENROUTER_", "OLLAMA_", "VLLM_", "LLAMA_", "LMSTUDIO_"]
/** Nor these: `npm run bench` puts --conditions=@dsh/source in NODE_OPTIONS (the build must run without it). */
const dropped = ["NODE_OPTIONS", "NODE_COMPILE_CACHE", "NODE_DISABLE_COMPILE_CACHE", "TMPDIR"]
const inherited = Object.fromEntries(
  Object.entries(process.env).filter((entry): entry is [string, string] =>
    entry[1] !== undefined && !isolated.some((prefix) => entry[0].startsWith(prefix)) && !dropped.includes(entry[0])
  )
)

let homes = 0
const makeHome = (): { readonly cwd: string; readonly env: Record<string, string> } => {
  const home = join(scratch, `home-${++homes}`)
  const dirs = { config: join(home, "config"), data: join(home, "data"), tmp: join(home, "tmp"), cwd: join(home, "work") }
  for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true })
  return {
    cwd: dirs.cwd,
    env: {
      ...inherited,
      HOME: home,
      XDG_CONFIG_HOME: dirs.config,
      XDG_DATA_HOME: dirs.data,
      TMPDIR: dirs.tmp,
      DEEPSEEK_API_KEY: "sk-bench",
      DEEPSEEK_BASE_URL: fake.url,
      NO_COLOR: "1"
    }
  }
}

// ---------------------------------------------------------------------------------------------
// the cases

interface Case {
  readonly name: string
  /** Node's arguments. */
  readonly args: ReadonlyArray<string>
  /** Whether the process should make a request (and its time to it is measured). */
  readonly requests: boolean
  /** An empty compile cache every run (a first start). */
  readonly cold: boolean
  /** What stdout should contain. */
  readonly expect: string
}

interface Sample {
  readonly firstRequestMs: number | undefined
  readonly exitMs: number
  readonly cpuMs: number | undefined
  readonly problem: string | undefined
}

const help = ["--help"]
const run = ["run", "hi", "--tools", "none", "--sessions", "memory"]
const runWithDefaults = ["run", "hi"]
const other = process.env["STARTUP_BENCH_BIN"]
const ways: ReadonlyArray<{ readonly name: string; readonly entry: ReadonlyArray<string> }> = [
  { name: "sources", entry: ["--conditions=@dsh/source", sources] },
  { name: "bundle", entry: [bundle] },
  ...(other === undefined || other === "" ? [] : [{ name: "other", entry: [other] }])
]
const cases: ReadonlyArray<Case> = [
  { name: "node -e 0 (floor)", args: ["-e", "0"], requests: false, cold: false, expect: "" },
  ...ways.flatMap((way): Array<Case> => [
    { name: `${way.name}: dsh --help`, args: [...way.entry, ...help], requests: false, cold: false, expect: "USAGE" },
    { name: `${way.name}: dsh run`, args: [...way.entry, ...run], requests: true, cold: false, expect: "hi\n" },
    { name: `${way.name}: dsh run, cold cache`, args: [...way.entry, ...run], requests: true, cold: true, expect: "hi\n" },
    { name: `${way.name}: dsh run, defaults`, args: [...way.entry, ...runWithDefaults], requests: true, cold: false, expect: "hi\n" }
  ])
]

/** The warm cases share a home per case, so their compile cache persists from run to run. */
const warmHomes = new Map(cases.map((c) => [c.name, makeHome()]))

let probes = 0
const once = (c: Case): Promise<Sample> =>
  new Promise((resolve) => {
    const home = c.cold ? makeHome() : warmHomes.get(c.name)!
    const cpuFile = join(scratch, `cpu-${++probes}.txt`)
    const before = requests
    arrivedAt = undefined
    const started = performance.now()
    const child = spawn(process.execPath, ["--require", cpuProbe, ...c.args], {
      cwd: home.cwd,
      env: { ...home.env, STARTUP_BENCH_CPU: cpuFile },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let exitedAt = 0
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => void (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => void (stderr += chunk))
    child.on("exit", () => void (exitedAt = performance.now()))
    child.on("close", (status) => {
      const made = requests - before
      const problem = status !== 0
        ? `exit ${status}: ${stderr.trim().split("\n").slice(-2).join(" / ")}`
        : !stdout.includes(c.expect)
        ? `stdout ${JSON.stringify(stdout.slice(0, 80))}`
        : made !== (c.requests ? 1 : 0)
        ? `${made} requests`
        : undefined
      const cpu = existsSync(cpuFile) ? Number(readFileSync(cpuFile, "utf8")) / 1000 : undefined
      if (c.cold) rmSync(join(home.cwd, ".."), { recursive: true, force: true })
      resolve({
        firstRequestMs: c.requests && arrivedAt !== undefined ? arrivedAt - started : undefined,
        exitMs: exitedAt - started,
        cpuMs: cpu,
        problem
      })
    })
  })

// ---------------------------------------------------------------------------------------------
// measuring

const quantile = (values: ReadonlyArray<number>, q: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN
}
const ms = (value: number): string => Number.isNaN(value) ? "-" : value.toFixed(0)
const load = () => loadavg().map((l) => l.toFixed(1)).join(" ")

console.log(`${RUNS} runs per case, interleaved; wall time from spawn, in ms (median / p90); CPU = user + system, median`)
console.log(`load average before: ${load()}`)

// one unmeasured round: fills the warm cases' compile caches
for (const c of cases) await once(c)
const samples = new Map<string, Array<Sample>>(cases.map((c) => [c.name, []]))
for (let round = 0; round < RUNS; round++) {
  for (const c of cases) samples.get(c.name)!.push(await once(c))
}
console.log(`load average after:  ${load()}`)

interface Row {
  readonly name: string
  readonly firstRequest: ReadonlyArray<number>
  readonly exit: ReadonlyArray<number>
  readonly cpu: ReadonlyArray<number>
  readonly failed: number
  readonly problems: ReadonlyArray<string>
}
const rows = cases.map((c): Row => {
  const all = samples.get(c.name)!
  const good = all.filter((s) => s.problem === undefined)
  return {
    name: c.name,
    firstRequest: good.flatMap((s) => s.firstRequestMs === undefined ? [] : [s.firstRequestMs]),
    exit: good.map((s) => s.exitMs),
    cpu: good.flatMap((s) => s.cpuMs === undefined ? [] : [s.cpuMs]),
    failed: all.length - good.length,
    problems: [...new Set(all.flatMap((s) => s.problem === undefined ? [] : [s.problem]))]
  }
})
const spread = (values: ReadonlyArray<number>) => values.length === 0 ? "" : `${ms(quantile(values, 0.5))} / ${ms(quantile(values, 0.9))}`
console.table(rows.map((row) => ({
  case: row.name,
  "first request": spread(row.firstRequest),
  exit: spread(row.exit),
  "CPU to exit": row.cpu.length === 0 ? "" : ms(quantile(row.cpu, 0.5)),
  failed: row.failed
})))
for (const row of rows) for (const problem of row.problems) console.log(`${row.name}: ${problem}`)
for (const row of rows) {
  if (row.firstRequest.length === 0 || row.name.includes("cold")) continue
  const median = quantile(row.firstRequest, 0.5)
  console.log(`${row.name}: first request at ${ms(median)} ms (median), target < ${TARGET_MS} ms: ${median < TARGET_MS ? "met" : "missed"}`)
}

await fake.close()
rmSync(scratch, { recursive: true, force: true })
