/**
 * The local backend of `Bash`: commands run as child processes of this one, through
 * `effect/process` (`ChildProcessSpawner`; `@effect/platform-node`'s
 * `NodeChildProcessSpawner` in {@link layer}).
 *
 * - Each call is a fresh `bash -c <command>` (the shell is configurable), a process-group
 *   leader with stdin closed, in the call's working directory (relative to the layer's) and
 *   the layer's environment with the call's variables over it. Nothing carries over between
 *   calls: pass `cwd` rather than `cd`.
 * - A command's group is killed when the shell exits (what it left running in the
 *   background goes with it: start a background job for a server), when the command times
 *   out, and when the call is interrupted (an abort, a disposal): SIGTERM to the group, then
 *   SIGKILL after `killGrace`; `run` returns once the group is gone.
 * - Output (stdout and stderr, interleaved as they arrive) is bounded by `outputLimit`: the
 *   head and the tail are kept, and once the output outgrows the limit all of it goes to a
 *   file in `spillDirectory`, which the output's text names.
 * - Background jobs: see `Bash`. A job's output is read as it comes (it never blocks on a
 *   full pipe), kept for the next read within `outputLimit`, spilled like a command's, and,
 *   for a job started in an agent's call, logged to its session in coalesced `bash:job-output`
 *   events, within `jobEvents.budget` characters per job.
 *
 * @since 0.1.0
 */
import { AdapterSettings } from "@dsh/llm"
import { ToolContext, ToolErrors } from "@dsh/tools"
import * as NodeChildProcessSpawner from "@effect/platform-node/NodeChildProcessSpawner"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FileSystem from "effect/FileSystem"
import type * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Result from "effect/Result"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { ChildProcessSpawner } from "effect/process"
import { tmpdir } from "node:os"
import * as Bash from "./Bash.ts"
import { CommandFailedError, JobNotFoundError } from "./BashError.ts"
import * as BashEvents from "./BashEvents.ts"
import { callProblem, settingsProblems } from "./internal/checks.ts"
import * as Jobs from "./internal/jobs.ts"
import * as Output from "./internal/output.ts"
import { chunksOf, commandFailed, exitStatusOf, refused, type Settings, spawn } from "./internal/process.ts"

/**
 * The local backend's settings. Every one has a default. Settings that cannot be used (a
 * timeout or grace that is no duration, a zero timeout, an empty shell, an environment
 * variable name holding `=`, a key that is no setting, such as a misspelt `timout`) fail the backend's construction with `CommandFailedError`
 * (`COMMAND_FAILED`) naming each.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The shell, run as `<shell> -c <command>` (`-c -- <command>` for a command that begins with `-` or `+`). Defaults to `bash`. */
  readonly shell?: string | undefined
  /** The working directory of commands without one, and the base of relative ones. Defaults to the process's. */
  readonly cwd?: string | undefined
  /** The base environment of every command. Defaults to the process's environment. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
  /** A command's timeout when the call gives none. Defaults to 2 minutes. */
  readonly timeout?: Duration.Input | undefined
  /** The longest timeout a call may ask for (longer ones are cut to it). Defaults to 10 minutes. */
  readonly maxTimeout?: Duration.Input | undefined
  /** How long a killed group has after SIGTERM before SIGKILL. Defaults to 1 second. */
  readonly killGrace?: Duration.Input | undefined
  /**
   * How long output pipes are waited for once a command's group is gone (only a process that
   * left the group can hold them longer). Defaults to 1 second.
   */
  readonly drainGrace?: Duration.Input | undefined
  /** The characters of output a result keeps (head and tail); at least 100. Defaults to 30,000. */
  readonly outputLimit?: number | undefined
  /** Where output that outgrew the limit is written in full. Defaults to the OS temp directory. */
  readonly spillDirectory?: string | undefined
  /** How a job in an agent logs its output to the session. */
  readonly jobEvents?: {
    /** How often pending output is logged. Defaults to 250 milliseconds. */
    readonly interval?: Duration.Input | undefined
    /** The longest text of one `bash:job-output` event. Defaults to 8,192. */
    readonly maxChars?: number | undefined
    /** The characters a job logs in all (what is past it is still read and spilled). Defaults to 200,000. */
    readonly budget?: number | undefined
  } | undefined
}

const defaults = {
  shell: "bash",
  timeout: Duration.minutes(2),
  maxTimeout: Duration.minutes(10),
  killGrace: Duration.seconds(1),
  drainGrace: Duration.seconds(1),
  outputLimit: 30_000,
  minOutputLimit: 100,
  eventInterval: Duration.millis(250),
  eventChars: 8192,
  eventBudget: 200_000
}

const stringsOf = (env: Readonly<Record<string, string | undefined>>): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined))

const durationOr = (input: Duration.Input | undefined, fallback: Duration.Duration): Duration.Duration =>
  input === undefined ? fallback : Duration.fromInputUnsafe(input)

const countOr = (n: number | undefined, fallback: number, minimum: number): number =>
  n === undefined || !Number.isFinite(n) ? fallback : Math.max(minimum, Math.floor(n))

const settingsOf = (options: Options, path: Path.Path): Settings => ({
  shell: options.shell ?? defaults.shell,
  cwd: path.resolve(options.cwd ?? process.cwd()),
  env: stringsOf(options.env ?? process.env),
  timeout: durationOr(options.timeout, defaults.timeout),
  maxTimeout: durationOr(options.maxTimeout, defaults.maxTimeout),
  killGrace: durationOr(options.killGrace, defaults.killGrace),
  drainGrace: durationOr(options.drainGrace, defaults.drainGrace),
  outputLimit: countOr(options.outputLimit, defaults.outputLimit, defaults.minOutputLimit),
  spillDirectory: path.resolve(options.spillDirectory ?? tmpdir()),
  eventInterval: durationOr(options.jobEvents?.interval, defaults.eventInterval),
  eventChars: countOr(options.jobEvents?.maxChars, defaults.eventChars, 1),
  eventBudget: countOr(options.jobEvents?.budget, defaults.eventBudget, 0)
})

/** Settings that cannot be used, as the failure of the backend's construction naming each. */
const invalidSettings = (options: Options | null, problems: ReadonlyArray<string>): CommandFailedError =>
  new CommandFailedError({
    command: "",
    cwd: typeof options?.cwd === "string" ? options.cwd : process.cwd(),
    message: `The bash backend's settings are invalid: ${problems.join("; ")}`
  })

// A wait's timeout past the types: zero, a negative one or no duration at all reads at once.
const waitTimeoutOf = (input: Duration.Input): Duration.Duration =>
  Result.getOrElse(AdapterSettings.duration("timeout", input, "non-negative"), () => Duration.zero)

/**
 * The backend on any `ChildProcessSpawner` (and the `FileSystem` and `Path` for spill files
 * and working directories). Jobs outside an agent end with the given scope. Settings that
 * cannot be used fail it with `CommandFailedError`, naming each.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Options = {}
): Effect.Effect<
  Bash.Bash["Service"],
  CommandFailedError,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Path.Path | Scope.Scope
> =>
  Effect.gen(function*() {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const problems = settingsProblems(options)
    if (problems.length > 0) return yield* invalidSettings(options, problems)
    const settings = settingsOf(options, path)
    const layerOwner: Jobs.Owner = {
      label: "this Bash layer (outside an agent)",
      scope: yield* Effect.scope,
      session: undefined,
      jobs: new Map(),
      closed: false
    }
    const agentOwners = new Map<string, Jobs.Owner>()
    let jobCount = 0

    yield* Effect.addFinalizer(() =>
      Effect.forEach([...agentOwners.values(), layerOwner], (owner) => Jobs.closeOwner(owner, settings), {
        concurrency: "unbounded",
        discard: true
      })
    )

    // a cwd that is no string (past the types) is refused by `callProblem`; the layer's is named
    const cwdOf = (cwd: unknown) => (typeof cwd === "string" ? path.resolve(settings.cwd, cwd) : settings.cwd)

    /** The call's options, refused as `COMMAND_FAILED` when they cannot be used (past the types). */
    const checked = (options: Bash.CommandOptions | Bash.RunOptions) => {
      const problem = callProblem(options)
      return problem === undefined ? Effect.void : Effect.fail(refused(options, cwdOf(options?.cwd), problem))
    }

    const capped = (timeout: Duration.Input | undefined) =>
      Duration.min(durationOr(timeout, settings.timeout), settings.maxTimeout)

    const spillPath = (label: string) =>
      path.join(settings.spillDirectory, `dsh-bash-${label}-${crypto.randomUUID().slice(0, 8)}.log`)

    const timedOut = (timeout: Duration.Duration, output: Bash.Output) =>
      new ToolErrors.ToolTimeoutError({
        tool: "bash",
        timeoutMillis: Duration.toMillis(timeout),
        message: `The command timed out after ${Duration.format(timeout)} and was stopped (its process group was killed). ` +
          `Its output until then:\n${output.text.length === 0 ? "(no output)" : output.text}`
      })

    const run = (options: Bash.RunOptions): Effect.Effect<Bash.CommandResult, Bash.RunError> =>
      Effect.scoped(Effect.gen(function*() {
        yield* checked(options)
        const cwd = cwdOf(options.cwd)
        const timeout = capped(options.timeout)
        const started = yield* Clock.currentTimeMillis
        // created first, closed last: the readers are done with the file by then
        const files = yield* Scope.fork(yield* Effect.scope)
        const capture = Output.makeCapture({
          fs,
          limit: settings.outputLimit,
          directory: settings.spillDirectory,
          path: spillPath("run"),
          scope: files
        })
        const readers = yield* Effect.scope
        let reader: Fiber.Fiber<void, unknown> | undefined
        // closing this scope kills what is left of the group: on exit, timeout or interruption
        const watched = Effect.scoped(Effect.gen(function*() {
          const handle = yield* spawn(spawner, settings, options, cwd)
          reader = yield* Effect.forkIn(
            Stream.runForEach(chunksOf(handle), (chunk) => Output.append(capture, chunk.text)),
            readers,
            { startImmediately: true }
          )
          return yield* exitStatusOf(handle).pipe(
            Effect.mapError((error) =>
              commandFailed(error, { command: options.command, cwd, shell: settings.shell, doing: "watched" })
            )
          )
        }))
        const status = yield* Effect.timeoutOption(watched, timeout)
        if (reader !== undefined) yield* Jobs.drain(reader, settings.drainGrace)
        const output = Output.output(capture)
        if (Option.isNone(status)) return yield* timedOut(timeout, output)
        const ended = yield* Clock.currentTimeMillis
        return { command: options.command, cwd, ...status.value, output, durationMillis: ended - started }
      }))

    const ownerOf = Effect.gen(function*() {
      const call = yield* ToolContext.current
      if (Option.isNone(call)) return layerOwner
      const known = agentOwners.get(call.value.agentId)
      if (known !== undefined) return known
      const owner: Jobs.Owner = {
        label: "this agent",
        scope: call.value.agentScope,
        session: call.value.session,
        jobs: new Map(),
        closed: false
      }
      agentOwners.set(call.value.agentId, owner)
      // the agent's disposal kills its jobs and logs their exits before its last status
      yield* Scope.addFinalizer(
        owner.scope,
        Effect.ensuring(Jobs.closeOwner(owner, settings), Effect.sync(() => agentOwners.delete(call.value.agentId)))
      )
      return owner
    })

    const start = (options: Bash.StartOptions): Effect.Effect<Bash.Job, Bash.StartError> =>
      Effect.uninterruptible(Effect.gen(function*() {
        yield* checked(options)
        const owner = yield* ownerOf
        const cwd = cwdOf(options.cwd)
        const processScope = yield* Scope.make()
        const handle = yield* spawn(spawner, settings, options, cwd).pipe(
          Scope.provide(processScope),
          Effect.tapError(() => Scope.close(processScope, Exit.void))
        )
        // numbered once it runs: a start that failed takes no id
        const id = `job-${++jobCount}`
        const files = yield* Scope.make()
        const call = yield* ToolContext.current
        const job: Jobs.JobState = {
          id,
          command: options.command,
          cwd,
          pid: handle.pid,
          startedAt: yield* Clock.currentTimeMillis,
          handle,
          capture: Output.makeCapture({
            fs,
            limit: settings.outputLimit,
            directory: settings.spillDirectory,
            path: spillPath(id),
            scope: files
          }),
          unread: Output.makeWindow(settings.outputLimit),
          log: owner.session === undefined ? undefined : Jobs.makeEventLog(settings, owner.session, id),
          status: { _tag: "Running" },
          ended: yield* Deferred.make<void>()
        }
        owner.jobs.set(id, job)
        yield* Jobs.record(owner.session, BashEvents.JobStarted, {
          jobId: id,
          command: options.command,
          cwd,
          pid: handle.pid,
          ...(Option.isSome(call) ? { callId: call.value.callId } : {})
        })
        yield* Effect.forkDetach(Jobs.supervise(job, settings, { process: processScope, files }), { startImmediately: true })
        // its owner began closing while it started: it does not outlive the owner
        if (owner.closed) yield* Jobs.terminate(job, settings)
        return Jobs.info(job)
      }))

    const find = (jobId: string): Effect.Effect<Jobs.JobState, JobNotFoundError> =>
      Effect.gen(function*() {
        const call = yield* ToolContext.current
        const owner = Option.isNone(call) ? layerOwner : agentOwners.get(call.value.agentId)
        const job = typeof jobId === "string" ? owner?.jobs.get(jobId) : undefined
        if (job !== undefined) return job
        const known = owner === undefined ? [] : [...owner.jobs.keys()]
        const label = owner?.label ?? "this agent"
        return yield* new JobNotFoundError({
          jobId: String(jobId),
          known,
          message: known.length === 0
            ? `No background job "${jobId}": ${label} has started none`
            : `No background job "${jobId}" among the jobs of ${label}: ${known.join(", ")}`
        })
      })

    const output = (jobId: string) => Effect.map(find(jobId), Jobs.take)

    const wait = (jobId: string, options?: Bash.WaitOptions) =>
      Effect.gen(function*() {
        const job = yield* find(jobId)
        const timeout = options?.timeout === undefined ? capped(undefined) : capped(waitTimeoutOf(options.timeout))
        const ended = yield* Effect.timeoutOption(Deferred.await(job.ended), timeout)
        return { ...Jobs.take(job), timedOut: Option.isNone(ended) }
      })

    const kill = (jobId: string) =>
      Effect.gen(function*() {
        const job = yield* find(jobId)
        yield* Jobs.terminate(job, settings)
        return Jobs.take(job)
      })

    const jobs = Effect.map(ToolContext.current, (call) => {
      const owner = Option.isNone(call) ? layerOwner : agentOwners.get(call.value.agentId)
      return owner === undefined ? [] : [...owner.jobs.values()].map(Jobs.info)
    })

    return Bash.Bash.of({ run, start, output, wait, kill, jobs })
  })

const NodePlatform = NodeChildProcessSpawner.layer.pipe(Layer.provideMerge(Layer.merge(NodeFileSystem.layer, NodePath.layer)))

/**
 * The local backend on Node, with these settings; settings that cannot be used fail it with
 * `CommandFailedError` (`COMMAND_FAILED`), naming each.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (options: Options): Layer.Layer<Bash.Bash, CommandFailedError> =>
  Layer.effect(Bash.Bash, make(options)).pipe(Layer.provide(NodePlatform))

/**
 * The local backend on Node with the default settings: `bash`, the process's working
 * directory and environment, a 2-minute timeout (10 at most), 30,000 characters of output,
 * spill files in the OS temp directory. It cannot fail.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Bash.Bash> = layerWith({}).pipe(Layer.orDie)
