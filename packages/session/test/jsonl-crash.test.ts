// Crash safety with real processes: a child appends and flushes, is SIGKILLed at a seeded
// pseudo-random point, and the file must still load with every acknowledged event, once, in
// order (the trial logic is in fixtures/crash-trial.ts; stress/crash.ts runs many more).
// A failing trial names its seed; `npx node packages/session/stress/crash.ts --seed <seed>
// --trials 1` replays it.
import { History } from "@dsh/llm"
import { Derivation, FlushCheckpoint, JsonlSessions, SessionStore } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { existsSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { check, crashTrial, pool, resumeTrial, runChild } from "./fixtures/crash-trial.ts"
import { contractViolations, providerViolations } from "./helpers.ts"

const TRIALS = 24
const FIRST_SEED = 4_000
const JOBS = 2

const withDirectory = async <A>(f: (directory: string) => Promise<A>): Promise<A> => {
  const directory = await mkdtemp(join(tmpdir(), "dsh-crash-"))
  try {
    return await f(directory)
  } finally {
    await rm(directory, { recursive: true, force: true })
  }
}

describe("JsonlSessions: crash safety (SIGKILL)", () => {
  it(`${TRIALS} kills at seeded random points leave a loadable file with every acknowledged event once`, () =>
    withDirectory(async (directory) => {
      const reports = await pool(
        JOBS,
        Array.from({ length: TRIALS }, (_, i) => () => crashTrial(directory, FIRST_SEED + i))
      )
      expect(reports).toHaveLength(TRIALS)
      // the kills did land at different points: some in the middle of a flush or of a write
      expect(reports.some((r) => r.plan.at === "write")).toBe(true)
      expect(reports.some((r) => r.plan.at === "flush")).toBe(true)
      expect(reports.some((r) => r.acked > 0)).toBe(true)
      for (const report of reports) {
        expect(report.checked.events, `seed ${report.seed}`).toBeGreaterThanOrEqual(report.acked)
      }
    }), 60_000)

  it("crash, resume and crash again, then resume and exit: consistent after every step", () =>
    withDirectory(async (directory) => {
      const reports = await pool(JOBS, [4_100, 4_200].map((seed) => () => resumeTrial(directory, seed)))
      for (const report of reports) {
        expect(report.steps).toHaveLength(3)
        const [first, second, last] = report.steps
        expect(first!.acked).toBeGreaterThan(0)
        // each resumed run continued the same log: it never shrank below what was acknowledged
        expect(second!.checked.events).toBeGreaterThanOrEqual(first!.acked)
        expect(last!.checked.events).toBeGreaterThan(second!.acked)
        expect(last!.checked.torn).toBeUndefined()
      }
    }), 60_000)

  it("killed while a tool runs: resume takes the stale lock over and closes the turn before handing the session back", () =>
    withDirectory(async (directory) => {
      const run = await runChild({ directory, id: "tool", seed: 11, midTurn: true, kill: { afterAcks: 0, at: "tool" } })
      expect(run.killed).toBe(true)
      const file = join(directory, JsonlSessions.fileName("tool"))
      // the dead process's lock is still there
      expect(existsSync(JsonlSessions.lockFile(file))).toBe(true)
      const Live = JsonlSessions.layer({ directory }).pipe(
        Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer))
      )
      const resumed = await Effect.runPromise(Effect.gen(function*() {
        const { repairs, session } = yield* (yield* JsonlSessions.JsonlSessions).resume("tool")
        return { repairs, seeded: session.seeded, events: yield* session.events }
      }).pipe(Effect.scoped, Effect.provide(Live)))
      expect(resumed.seeded).toBe(run.acked)
      expect(resumed.repairs).toMatchObject([{ kind: "interrupted-turn", turn: 1, step: 1, calls: 1 }])
      const added = resumed.events.slice(resumed.seeded)
      expect(added.map((e) => e.type)).toStrictEqual(["session/repair", "tool/result", "step/end", "turn/end"])
      expect(added[0]!.data).toStrictEqual(resumed.repairs[0])
      expect(added[1]!.type === "tool/result" && added[1]!.data).toMatchObject({
        callId: "crash-call",
        isError: true,
        error: { code: "TOOL_OUTCOME_UNKNOWN" }
      })
      expect(added[3]!.type === "turn/end" && added[3]!.data.reason.kind).toBe("interrupted")
      expect(contractViolations(resumed.events)).toStrictEqual([])
      expect(providerViolations(Derivation.derive(resumed.events))).toStrictEqual([])
      expect(History.toArray(Derivation.derive(resumed.events)).at(-1)!.content[0]).toMatchObject({
        type: "tool-result",
        error: { code: "TOOL_OUTCOME_UNKNOWN" }
      })
      // persisted when the session closed, and the lock given back
      const reloaded = await Effect.runPromise(Effect.gen(function*() {
        return yield* (yield* JsonlSessions.JsonlSessions).load("tool")
      }).pipe(Effect.scoped, Effect.provide(Live)))
      expect(reloaded.events.map((e) => e.type)).toStrictEqual(resumed.events.map((e) => e.type))
      expect(existsSync(JsonlSessions.lockFile(file))).toBe(false)
    }), 60_000)

  it("the checker rejects a file that lost acknowledged events", () =>
    withDirectory(async (directory) => {
      const run = await runChild({ directory, id: "short", seed: 7, batches: 3 })
      expect(run.done).toBe(true)
      await expect(check(directory, "short", run.acked, "control")).resolves.toMatchObject({ events: run.acked })
      await expect(check(directory, "short", run.acked + 1, "control")).rejects.toThrow(/acknowledged/)
    }), 60_000)
})
