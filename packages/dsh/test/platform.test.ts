/**
 * The command's platform (`cli/Platform.ts`): the terminal and the child-process spawner that
 * `effect/cli`'s environment names are provided on demand, and work when something uses them:
 * the spawner runs a real process, the terminal answers for this process's stdout.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Terminal } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as Platform from "../src/cli/Platform.ts"

describe("the command's platform", () => {
  it.effect("the spawner on demand runs a real process", () =>
    Effect.gen(function*() {
      const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
      const printed = yield* spawner.string(ChildProcess.make(process.execPath, ["-e", "console.log(6 * 7)"]))
      expect(printed.trim()).toBe("42")
      // a second spawn reuses the loaded spawner
      expect(yield* spawner.exitCode(ChildProcess.make(process.execPath, ["-e", "process.exit(3)"]))).toBe(3)
    }).pipe(Effect.provide(Platform.layer)))

  it.effect("the terminal on demand answers for this process's stdout", () =>
    Effect.gen(function*() {
      const terminal = yield* Terminal.Terminal
      expect(yield* terminal.columns).toBe(process.stdout.columns ?? 0)
    }).pipe(Effect.provide(Platform.layer)))
})
