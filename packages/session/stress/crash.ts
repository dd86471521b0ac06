// Crash stress for JSONL persistence, run by hand (the CI suite runs a few dozen trials):
//
//   npx node packages/session/stress/crash.ts --trials 500 [--seed 1] [--jobs 4] [--resume-every 10]
//
// Every trial runs a child that appends and flushes, SIGKILLs it at a seeded pseudo-random
// point and checks the file (see test/fixtures/crash-trial.ts); every `resume-every`-th trial
// is a crash / resume / crash / resume-and-exit chain. A failure prints its seed: rerun it with
// `--seed <seed> --trials 1`. Exits 1 when any trial failed.
import { mkdtemp, rm } from "node:fs/promises"
import { availableParallelism, tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { crashTrial, pool, type ResumeReport, resumeTrial, type TrialReport } from "../test/fixtures/crash-trial.ts"

const { values } = parseArgs({
  options: {
    trials: { type: "string", default: "200" },
    seed: { type: "string", default: "1" },
    jobs: { type: "string", default: String(Math.max(2, availableParallelism())) },
    "resume-every": { type: "string", default: "10" }
  }
})
const trials = Number(values.trials)
const firstSeed = Number(values.seed)
const jobs = Number(values.jobs)
const resumeEvery = Number(values["resume-every"])

type Outcome =
  | { readonly kind: "crash"; readonly report: TrialReport }
  | { readonly kind: "resume"; readonly report: ResumeReport }
  | { readonly kind: "failed"; readonly seed: number; readonly error: string }

const directory = await mkdtemp(join(tmpdir(), "dsh-crash-stress-"))
const started = performance.now()
let finished = 0
try {
  const outcomes = await pool(
    jobs,
    Array.from({ length: trials }, (_, index) => async (): Promise<Outcome> => {
      const seed = firstSeed + index * 7
      try {
        const outcome: Outcome = resumeEvery > 0 && index % resumeEvery === resumeEvery - 1
          ? { kind: "resume", report: await resumeTrial(directory, seed) }
          : { kind: "crash", report: await crashTrial(directory, seed) }
        return outcome
      } catch (error) {
        return { kind: "failed", seed, error: error instanceof Error ? error.message : String(error) }
      } finally {
        finished++
        if (finished % 50 === 0) process.stderr.write(`${finished}/${trials}\n`)
      }
    })
  )

  const crashes = outcomes.flatMap((o) => (o.kind === "crash" ? [o.report] : []))
  const resumes = outcomes.flatMap((o) => (o.kind === "resume" ? [o.report] : []))
  const failures = outcomes.flatMap((o) => (o.kind === "failed" ? [o] : []))
  const checks = [...crashes.map((r) => r.checked), ...resumes.flatMap((r) => r.steps.map((s) => s.checked))]
  const count = (p: (c: (typeof checks)[number]) => boolean) => checks.filter(p).length
  const seconds = (performance.now() - started) / 1000

  const rows: ReadonlyArray<readonly [string, string | number]> = [
    ["trials", trials],
    ["  crash trials", crashes.length],
    ["    killed right after an ack", crashes.filter((r) => r.plan.at === "ack").length],
    ["    killed right after a flush started", crashes.filter((r) => r.plan.at === "flush").length],
    ["    killed right after a write call started", crashes.filter((r) => r.plan.at === "write").length],
    ["    writing in pieces cut anywhere", crashes.filter((r) => r.splitWrites).length],
    ["  crash/resume chains (3 runs each)", resumes.length],
    ["files checked", checks.length],
    ["  no file yet (killed before the first flush)", count((c) => !c.exists)],
    ["  torn last line", count((c) => c.torn !== undefined)],
    ["  events found beyond the last ack", crashes.filter((r) => r.checked.events > r.acked).length],
    ["events verified", checks.reduce((n, c) => n + c.events, 0)],
    ["failures", failures.length],
    ["time", `${seconds.toFixed(1)} s (${jobs} jobs)`]
  ]
  const width = Math.max(...rows.map(([label]) => label.length))
  for (const [label, value] of rows) console.log(`${label.padEnd(width)}  ${value}`)
  for (const failure of failures) console.log(`\nFAILED seed ${failure.seed}: ${failure.error}`)
  process.exitCode = failures.length === 0 ? 0 : 1
} finally {
  await rm(directory, { recursive: true, force: true })
}
