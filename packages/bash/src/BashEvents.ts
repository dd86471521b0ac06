/**
 * The session events of background jobs: a job started in an agent's tool call logs its
 * start, its output and its exit to that agent's session, so a UI following the log shows
 * them live and the invariants checker sees them.
 *
 * Output is coalesced: what a job writes within a short interval is logged as one event per
 * stream change, each at most a few thousand characters, and a job logs at most a budget of
 * characters in all (the backend's setting); `bash:job-exited` says how many it wrote in all
 * and where the full output is, when it outgrew the output limit. A job's events come before
 * its agent's `agent/status disposed`: disposal kills the job and logs its exit first.
 *
 * @example
 * ```ts
 * import { BashEvents } from "@dsh/bash"
 * import type { SessionEvent } from "@dsh/session"
 *
 * const exits = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
 *   events.flatMap((e) => {
 *     const exited = BashEvents.JobExited.decode(e)
 *     return exited === undefined ? [] : [`${exited.jobId}: ${exited.exitCode ?? exited.signal}`]
 *   })
 * ```
 *
 * @since 0.1.0
 */
import { SessionEvent } from "@dsh/session"
import * as Schema from "effect/Schema"

/**
 * `bash:job-started`: a job's shell is running; `pid` is its process group id.
 *
 * @since 0.1.0
 * @category events
 */
export const JobStarted = SessionEvent.define(
  "bash:job-started",
  Schema.Struct({
    jobId: Schema.String,
    command: Schema.String,
    cwd: Schema.String,
    pid: Schema.Int,
    /** The tool call that started it. */
    callId: Schema.optionalKey(Schema.String)
  })
)

/**
 * `bash:job-output`: text a job wrote to one of its streams.
 *
 * @since 0.1.0
 * @category events
 */
export const JobOutput = SessionEvent.define(
  "bash:job-output",
  Schema.Struct({
    jobId: Schema.String,
    stream: Schema.Literals(["stdout", "stderr"]),
    text: Schema.String
  })
)

/**
 * `bash:job-exited`: a job ended (on its own, killed, or with its agent). `outputChars` counts
 * everything it wrote, logged or not; `outputFile` holds it all when it outgrew the limit.
 *
 * @since 0.1.0
 * @category events
 */
export const JobExited = SessionEvent.define(
  "bash:job-exited",
  Schema.Struct({
    jobId: Schema.String,
    exitCode: Schema.NullOr(Schema.Int),
    signal: Schema.NullOr(Schema.String),
    outputChars: Schema.Int,
    outputFile: Schema.optionalKey(Schema.String)
  })
)

/**
 * The definitions of this module.
 *
 * @since 0.1.0
 * @category events
 */
export const definitions = [JobStarted, JobOutput, JobExited] as const
