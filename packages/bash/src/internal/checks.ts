/**
 * Checks of what reaches the local backend past the types: a layer's settings (a timeout that
 * is no duration above zero, a shell that is no name, an environment variable name holding
 * `=`) and a call's options (a command that is not a string, a `cwd` that is not one, an `env`
 * whose values are not strings). Each check gives the problems in words naming the setting or
 * option; the backend raises `CommandFailedError` (`COMMAND_FAILED`) with them, so no such
 * mistake is a defect or a command that silently does something else.
 *
 * @internal
 */
import { AdapterSettings, HarnessError } from "@dsh/llm"
import type * as Duration from "effect/Duration"
import * as Result from "effect/Result"

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const shown = (u: unknown): string => (typeof u === "string" ? JSON.stringify(u) : HarnessError.describe(u))

/**
 * An environment entry is `name=value`: a name that is empty or holds "=" would set another
 * variable than the one named (`{"A=B": "x"}` is `A` set to `B=x`).
 */
export const badEnvName = (env: Readonly<Record<string, unknown>> | undefined): string | undefined =>
  Object.keys(env ?? {}).find((name) => name === "" || name.includes("="))

// A value of `undefined` unsets a variable of the base environment.
const envProblem = (name: string, env: unknown): string | undefined => {
  if (env === undefined) return undefined
  if (!isRecord(env)) return `${name} must be an object of variables, got ${shown(env)}`
  const bad = badEnvName(env)
  if (bad !== undefined) {
    return `the environment variable name ${JSON.stringify(bad)} is not valid (a name is not empty and holds no "=")`
  }
  const value = Object.entries(env).find(([, v]) => typeof v !== "string" && v !== undefined)
  return value === undefined ? undefined : `${name}.${value[0]} must be a string, got ${shown(value[1])}`
}

const durationProblem = (
  name: string,
  input: unknown,
  sign: "positive" | "non-negative"
): string | undefined => {
  if (input === undefined) return undefined
  // JSON shows NaN as null: said in words here
  if (Number.isNaN(input)) return `${name} must be a duration ("30 seconds", a number of milliseconds), got NaN`
  const checked = AdapterSettings.duration(name, input as Duration.Input, sign)
  return Result.isFailure(checked) ? checked.failure : undefined
}

const pathProblem = (name: string, u: unknown): string | undefined =>
  u === undefined || typeof u === "string" ? undefined : `${name} must be a path, got ${shown(u)}`

const settingNames = ["shell", "cwd", "env", "timeout", "maxTimeout", "killGrace", "drainGrace", "outputLimit", "spillDirectory", "jobEvents"]
const jobEventNames = ["interval", "maxChars", "budget"]

/**
 * Why a layer's settings cannot be used, each problem naming its setting. Counts (`outputLimit`,
 * `jobEvents.maxChars`, `jobEvents.budget`) are not checked: a count out of its range is
 * brought into it, as the settings say.
 */
export const settingsProblems = (options: unknown): ReadonlyArray<string> => {
  if (options === undefined) return []
  if (!isRecord(options)) return [`the settings must be an object, got ${shown(options)}`]
  const { jobEvents, shell } = options
  const problems = [
    AdapterSettings.unknownKeys("the settings object", options, settingNames),
    isRecord(jobEvents) ? AdapterSettings.unknownKeys("jobEvents", jobEvents, jobEventNames) : undefined,
    shell === undefined || (typeof shell === "string" && shell !== "")
      ? undefined
      : `shell must be the name or path of a shell, got ${shown(shell)}`,
    pathProblem("cwd", options["cwd"]),
    envProblem("env", options["env"]),
    durationProblem("timeout", options["timeout"], "positive"),
    durationProblem("maxTimeout", options["maxTimeout"], "positive"),
    durationProblem("killGrace", options["killGrace"], "non-negative"),
    durationProblem("drainGrace", options["drainGrace"], "non-negative"),
    pathProblem("spillDirectory", options["spillDirectory"]),
    jobEvents === undefined || isRecord(jobEvents)
      ? durationProblem("jobEvents.interval", isRecord(jobEvents) ? jobEvents["interval"] : undefined, "positive")
      : `jobEvents must be an object, got ${shown(jobEvents)}`
  ]
  return problems.filter((problem): problem is string => problem !== undefined)
}

/**
 * Why a call's options cannot be used (the first problem), or `undefined`. `timeout` is a
 * foreground command's: a duration above zero.
 */
export const callProblem = (options: unknown): string | undefined => {
  if (!isRecord(options)) return `the options must be an object with a command, got ${shown(options)}`
  const { command, cwd, env, timeout } = options
  if (typeof command !== "string") return `the command must be a string, got ${shown(command)}`
  if (cwd !== undefined && typeof cwd !== "string") return `the working directory must be a path, got ${shown(cwd)}`
  return envProblem("env", env) ?? durationProblem("timeout", timeout, "positive")
}
