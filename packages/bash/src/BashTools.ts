/**
 * The model-facing bash tools. They require only the `Bash` service, so any backend serves
 * them and none changes their schemas:
 *
 * | tool | does | concurrency-safe |
 * |---|---|---|
 * | `bash` | runs a command to its end: output, then `[exit code N]` or `[killed by signal S]` | no |
 * | `bash_background` | starts a background job, answers its id at once | no |
 * | `bash_output` | a job's output since the last read, then its status | yes |
 * | `bash_wait` | waits for a job to end (or the timeout), then its new output and status | yes |
 * | `bash_kill` | kills a job's process group, then its last output and status | no |
 * | `bash_jobs` | this agent's jobs and their status | yes |
 *
 * A non-zero exit is a successful result the model reads; what fails is what the backend
 * fails with: `COMMAND_FAILED` (the command could not be started), `TOOL_TIMEOUT` (it ran out
 * of time and was killed; the message holds its output so far), `JOB_NOT_FOUND`.
 *
 * @since 0.1.0
 */
import { Tool, type ToolErrors, type ToolRegistry, Tools } from "@dsh/tools"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Bash from "./Bash.ts"

const Command = Schema.String.check(Schema.isMinCodePoints(1)).annotate({
  description: "The command line, run by bash -c in a fresh shell"
})

const Cwd = Schema.String.check(Schema.isMinCodePoints(1)).annotate({
  description: "The working directory; a relative one is resolved against the default working directory"
})

const Env = Schema.Record(Schema.String, Schema.String).annotate({
  description: "Environment variables to set for this command only"
})

const Seconds = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 86_400 }))

const JobId = Schema.String.check(Schema.isMinCodePoints(1)).annotate({
  description: "The job id bash_background answered with (e.g. job-1)"
})

// What the model reads: a line of status after the output, as a terminal would show it.

const withoutFinalNewline = (text: string) => (text.endsWith("\n") ? text.slice(0, -1) : text)

const exitWords = (status: Bash.ExitStatus): string =>
  status.exitCode !== null
    ? `exit code ${status.exitCode}`
    : status.signal !== null
    ? `killed by signal ${status.signal}`
    : "exit status unknown"

const commandText = (result: Bash.CommandResult): string =>
  `${result.output.text.length === 0 ? "(no output)" : withoutFinalNewline(result.output.text)}\n[${exitWords(result)}]`

// A command as one short line, for lists and notes.
const oneLine = (command: string): string => {
  const line = command.replaceAll(/\s+/g, " ").trim()
  return line.length > 200 ? `${line.slice(0, 199)}…` : line
}

const jobState = (job: Bash.Job): string =>
  job.status._tag === "Running" ? `${job.id} is running (pid ${job.pid})` : `${job.id} ended: ${exitWords(job.status)}`

const jobText = (read: Bash.JobOutput, note?: string): string =>
  `${read.output.text.length === 0 ? "(no new output)" : withoutFinalNewline(read.output.text)}\n[${jobState(read.job)}${
    note === undefined ? "" : `; ${note}`
  }]`

const startedText = (job: Bash.Job): string =>
  `Started ${job.id} (pid ${job.pid}) in ${job.cwd}: ${oneLine(job.command)}\n` +
  `Read its output with bash_output, wait for it with bash_wait, stop it with bash_kill.`

const jobsText = (jobs: ReadonlyArray<Bash.Job>): string =>
  jobs.length === 0
    ? "No background jobs."
    : jobs.map((job) => `${jobState(job)}: ${oneLine(job.command)}`).join("\n")

/**
 * `bash`: runs a command and answers with its output and exit status.
 *
 * @since 0.1.0
 * @category tools
 */
export const bash = Tool.make("bash", {
  description: "Runs a shell command (bash -c) and returns its output (stdout and stderr, interleaved) and its exit " +
    "status; a non-zero exit is reported, not an error. Each call is a fresh shell: cd and variables do not carry " +
    "over, so pass cwd. Long output keeps its head and tail and names a file holding all of it. When the command " +
    "exits, times out or is aborted, its process group is killed: what it started goes too, unless it left the " +
    "group (e.g. with setsid). Use bash_background for servers, watchers and other long-running commands.",
  parameters: Schema.Struct({
    command: Command,
    cwd: Schema.optionalKey(Cwd),
    timeout: Schema.optionalKey(Seconds.annotate({
      description: "Seconds before the command is stopped; without it the default applies, and more than the maximum " +
        "is cut to the maximum"
    })),
    env: Schema.optionalKey(Env)
  }),
  execute: ({ command, cwd, env, timeout }) =>
    Bash.Bash.use((service) =>
      service.run({ command, cwd, env, timeout: timeout === undefined ? undefined : Duration.seconds(timeout) })
    ).pipe(Effect.map(commandText))
})

/**
 * `bash_background`: starts a background job.
 *
 * @since 0.1.0
 * @category tools
 */
export const bashBackground = Tool.make("bash_background", {
  description: "Starts a shell command in the background and answers with its job id at once. The job runs across " +
    "turns until it exits, is stopped with bash_kill, or the agent ends. Read its new output with bash_output, wait " +
    "for it with bash_wait.",
  parameters: Schema.Struct({
    command: Command,
    cwd: Schema.optionalKey(Cwd),
    env: Schema.optionalKey(Env)
  }),
  execute: ({ command, cwd, env }) =>
    Bash.Bash.use((service) => service.start({ command, cwd, env })).pipe(Effect.map(startedText))
})

/**
 * `bash_output`: a job's new output and its status.
 *
 * @since 0.1.0
 * @category tools
 */
export const bashOutput = Tool.make("bash_output", {
  description: "Returns the output a background job wrote since the last read of it, and whether it still runs.",
  parameters: Schema.Struct({ jobId: JobId }),
  concurrencySafe: true,
  execute: ({ jobId }) => Bash.Bash.use((service) => service.output(jobId)).pipe(Effect.map((read) => jobText(read)))
})

/**
 * `bash_wait`: waits for a job to end.
 *
 * @since 0.1.0
 * @category tools
 */
export const bashWait = Tool.make("bash_wait", {
  description: "Waits until a background job ends or the timeout passes, then returns its new output and status.",
  parameters: Schema.Struct({
    jobId: JobId,
    timeout: Schema.optionalKey(Seconds.annotate({
      description: "Seconds to wait at most; without it the default command timeout applies"
    }))
  }),
  concurrencySafe: true,
  execute: ({ jobId, timeout }) =>
    Bash.Bash.use((service) =>
      service.wait(jobId, { timeout: timeout === undefined ? undefined : Duration.seconds(timeout) })
    ).pipe(Effect.map((read) => jobText(read, read.timedOut ? "the wait timed out, the job goes on" : undefined)))
})

/**
 * `bash_kill`: kills a job's process group.
 *
 * @since 0.1.0
 * @category tools
 */
export const bashKill = Tool.make("bash_kill", {
  description: "Stops a background job and its process group, what it started included unless that left the group (SIGTERM, then SIGKILL), then returns its last " +
    "output and how it ended. A job that already ended is left as it is.",
  parameters: Schema.Struct({ jobId: JobId }),
  execute: ({ jobId }) => Bash.Bash.use((service) => service.kill(jobId)).pipe(Effect.map((read) => jobText(read)))
})

/**
 * `bash_jobs`: the agent's background jobs.
 *
 * @since 0.1.0
 * @category tools
 */
export const bashJobs = Tool.make("bash_jobs", {
  description: "Lists this agent's background jobs, running and ended, with their status.",
  parameters: Schema.Struct({}),
  concurrencySafe: true,
  execute: () => Bash.Bash.use((service) => service.jobs).pipe(Effect.map(jobsText))
})

/**
 * Every bash tool, in the order they are registered.
 *
 * @since 0.1.0
 * @category tools
 */
export const tools = [bash, bashBackground, bashOutput, bashWait, bashKill, bashJobs] as const

/**
 * A Layer registering the bash tools for its lifetime; it requires a `Bash` backend.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never, ToolErrors.RegistrationError, ToolRegistry | Bash.Bash> = Tools.layer(...tools)
