/**
 * The bash capability's interface: the `Bash` service and its vocabulary. Tools and programs
 * depend on this module only; a backend (local processes, a sandbox, a remote machine) is a
 * Layer providing {@link Bash}, and swapping it never touches a tool schema.
 *
 * What every backend promises:
 *
 * - **A command is a process group.** `run` passes the command string to a shell in a group
 *   of its own; when the shell exits, what it left behind in the group is killed, and an
 *   interruption (an abort, a disposal) or a timeout kills the whole group — SIGTERM, then
 *   SIGKILL after a short grace — before `run` returns.
 * - **A non-zero exit is a result**, not a failure: {@link ExitStatus} carries the exit code,
 *   or the signal that ended the shell. `CommandFailedError` (`COMMAND_FAILED`) is for a
 *   command that could not be started (no shell, no such working directory, options that got
 *   past the types) or watched; a
 *   timeout is `ToolTimeoutError` (`TOOL_TIMEOUT`) after the group was killed, its message
 *   holding the output so far.
 * - **Output is bounded**: {@link Output} keeps the head and the tail of what the command
 *   wrote to stdout and stderr, interleaved as it arrived, within the backend's limit; when it
 *   cuts, the text says how much and where, and the full output is in a file whose path it
 *   gives.
 * - **Background jobs belong to their caller**: a job started inside a tool call
 *   (`ToolContext.current`) belongs to that call's agent — it outlives the call and the turn,
 *   is killed when the agent is disposed, and its start, output and exit are logged to the
 *   agent's session as `BashEvents`. Outside an agent a job belongs to the backend's Layer and
 *   ends with it. Job ids are looked up among the caller's jobs only: another agent's id is
 *   `JobNotFoundError` (`JOB_NOT_FOUND`).
 *
 * @since 0.1.0
 */
import type { ToolErrors } from "@dsh/tools"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type { CommandFailedError, JobNotFoundError } from "./BashError.ts"

/**
 * Where and how a command runs.
 *
 * @since 0.1.0
 * @category models
 */
export interface CommandOptions {
  /** The command line, run by the backend's shell (`bash -c` for `BashLocal`). */
  readonly command: string
  /** The working directory; a relative one is resolved against the backend's. Defaults to the backend's. */
  readonly cwd?: string | undefined
  /** Variables set over the backend's base environment for this command only (a name that is empty or holds `=` is `COMMAND_FAILED`). */
  readonly env?: Readonly<Record<string, string>> | undefined
}

/**
 * A foreground command.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions extends CommandOptions {
  /**
   * How long it may run before its group is killed (`TOOL_TIMEOUT`). Defaults to the backend's,
   * capped at its maximum; one that is no duration above zero is `COMMAND_FAILED`.
   */
  readonly timeout?: Duration.Input | undefined
}

/**
 * How a command ended: its exit code, or, when a signal killed the shell, the signal
 * (`exitCode` is then `null`). Both are `null` when the backend could not tell.
 *
 * @since 0.1.0
 * @category models
 */
export interface ExitStatus {
  readonly exitCode: number | null
  readonly signal: string | null
}

/**
 * Bounded output: stdout and stderr interleaved in the order they arrived.
 *
 * @since 0.1.0
 * @category models
 */
export interface Output {
  /**
   * The output when it fits the limit; otherwise its head and its tail with a line between
   * them saying how many characters were cut and where the full output is.
   */
  readonly text: string
  /** How many characters the command wrote (to this read, for a job's new output). */
  readonly chars: number
  /** How many of them `text` leaves out (0 when nothing was cut). */
  readonly cutChars: number
  /** The file holding the full output, once it outgrew the limit. */
  readonly file: string | undefined
}

/**
 * What a foreground command did.
 *
 * @since 0.1.0
 * @category models
 */
export interface CommandResult extends ExitStatus {
  readonly command: string
  /** The working directory it ran in, resolved. */
  readonly cwd: string
  readonly output: Output
  readonly durationMillis: number
}

/**
 * Options of a background job.
 *
 * @since 0.1.0
 * @category models
 */
export interface StartOptions extends CommandOptions {}

/**
 * Whether a job still runs, and how it ended.
 *
 * @since 0.1.0
 * @category models
 */
export type JobStatus =
  | { readonly _tag: "Running" }
  | ({ readonly _tag: "Exited" } & ExitStatus)

/**
 * A background job.
 *
 * @since 0.1.0
 * @category models
 */
export interface Job {
  /** Unique within the backend's Layer (`job-1`, `job-2`, …). */
  readonly id: string
  readonly command: string
  readonly cwd: string
  /** The shell's pid, which is also the job's process group id. */
  readonly pid: number
  /** Epoch milliseconds. */
  readonly startedAt: number
  readonly status: JobStatus
}

/**
 * A job and the output it wrote since the previous read (of `output`, `wait` or `kill`).
 *
 * @since 0.1.0
 * @category models
 */
export interface JobOutput {
  readonly job: Job
  /** The new output, bounded like a command's; `file` is the job's full output, when it outgrew the limit. */
  readonly output: Output
}

/**
 * What `wait` saw: the job's new output, and whether the wait gave up before the job ended.
 *
 * @since 0.1.0
 * @category models
 */
export interface WaitResult extends JobOutput {
  readonly timedOut: boolean
}

/**
 * How long `wait` waits.
 *
 * @since 0.1.0
 * @category models
 */
export interface WaitOptions {
  /** Defaults to the backend's command timeout, capped at its maximum; zero (or less, or no duration) reads at once. */
  readonly timeout?: Duration.Input | undefined
}

/**
 * What running a foreground command can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type RunError = CommandFailedError | ToolErrors.ToolTimeoutError

/**
 * What starting a background job can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type StartError = CommandFailedError

/**
 * The bash service.
 *
 * @since 0.1.0
 * @category services
 */
export class Bash extends Context.Service<Bash, {
  /** Runs a command to its end (or its timeout) and returns its exit status and bounded output. */
  readonly run: (options: RunOptions) => Effect.Effect<CommandResult, RunError>
  /** Starts a background job, owned by the calling agent (or by the backend outside an agent). */
  readonly start: (options: StartOptions) => Effect.Effect<Job, StartError>
  /** The job's output since the previous read. */
  readonly output: (jobId: string) => Effect.Effect<JobOutput, JobNotFoundError>
  /** Waits until the job ends or the timeout passes, then reads its new output. */
  readonly wait: (jobId: string, options?: WaitOptions) => Effect.Effect<WaitResult, JobNotFoundError>
  /** Kills the job's process group (SIGTERM, then SIGKILL after the grace), then reads its last output. A finished job is left as it is. */
  readonly kill: (jobId: string) => Effect.Effect<JobOutput, JobNotFoundError>
  /** The caller's jobs, running and finished, oldest first. */
  readonly jobs: Effect.Effect<ReadonlyArray<Job>>
}>()("@dsh/bash/Bash") {}
