/**
 * A shell command as an `effect/process` child: the command value (a detached shell, so its
 * own process group, killed as a group), its output as tagged text chunks, its exit status,
 * and the words for what went wrong when it could not be started.
 *
 * @internal
 */
import { HarnessError } from "@dsh/llm"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as PlatformError from "effect/PlatformError"
import * as Predicate from "effect/Predicate"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { ChildProcess, type ChildProcessSpawner } from "effect/process"
import type * as Bash from "../Bash.ts"
import { CommandFailedError } from "../BashError.ts"

/** The layer's settings, resolved. */
export interface Settings {
  readonly shell: string
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  readonly timeout: Duration.Duration
  readonly maxTimeout: Duration.Duration
  readonly killGrace: Duration.Duration
  readonly drainGrace: Duration.Duration
  readonly outputLimit: number
  readonly spillDirectory: string
  readonly eventInterval: Duration.Duration
  readonly eventChars: number
  readonly eventBudget: number
}

/**
 * The shell's arguments: `-c <command>`, and `--` before a command that begins with `-` or `+`,
 * which the shell would otherwise take for its own options (`bash -c "-x"` is "option requires
 * an argument", not the command `-x`).
 */
export const shellArgs = (command: string): ReadonlyArray<string> =>
  command.startsWith("-") || command.startsWith("+") ? ["-c", "--", command] : ["-c", command]

/** The shell running `command` in `cwd`: its own process group, no stdin, the layer's environment under the call's. */
export const commandOf = (settings: Settings, options: Bash.CommandOptions, cwd: string): ChildProcess.Command =>
  ChildProcess.make(settings.shell, shellArgs(options.command), {
    cwd,
    env: { ...settings.env, ...options.env },
    extendEnv: false,
    // a command that reads its input gets end-of-file, not a hang
    stdin: "ignore",
    // a group of its own: what the shell starts is killed with it
    detached: true,
    killSignal: "SIGTERM",
    forceKillAfter: settings.killGrace
  })

/** A piece of output, with the stream it came from. */
export interface Chunk {
  readonly stream: "stdout" | "stderr"
  readonly text: string
}

/** Both output streams decoded as UTF-8 (each on its own, so no character is split) and merged as they arrive. */
export const chunksOf = (handle: ChildProcessSpawner.ChildProcessHandle): Stream.Stream<Chunk, PlatformError.PlatformError> =>
  Stream.merge(
    handle.stdout.pipe(Stream.decodeText(), Stream.map((text): Chunk => ({ stream: "stdout", text }))),
    handle.stderr.pipe(Stream.decodeText(), Stream.map((text): Chunk => ({ stream: "stderr", text })))
  )

// The handle reports a shell killed by a signal only as a failure of `exitCode`, whose cause
// is Node's "Process interrupted due to receipt of signal: 'SIGTERM'"; no field carries it.
const signalOf = (error: PlatformError.PlatformError): string | undefined => {
  const reason = error.reason
  if (reason._tag === "BadArgument" || reason.method !== "exitCode") return undefined
  const cause = reason.cause
  const match = cause instanceof Error ? /signal: '(SIG[A-Z0-9]+)'/.exec(cause.message) : null
  return match?.[1]
}

/** How the shell ended; a failure other than a signal means it could not be watched. */
export const exitStatusOf = (
  handle: ChildProcessSpawner.ChildProcessHandle
): Effect.Effect<Bash.ExitStatus, PlatformError.PlatformError> =>
  handle.exitCode.pipe(
    Effect.map((code): Bash.ExitStatus => ({ exitCode: code, signal: null })),
    Effect.catch((error) => {
      const signal = signalOf(error)
      return signal === undefined ? Effect.fail(error) : Effect.succeed<Bash.ExitStatus>({ exitCode: null, signal })
    })
  )

const errnoCode = (u: unknown): unknown => (u as { readonly code?: unknown } | undefined)?.code

// Node reports a few spawn errors (ENOTDIR, EACCES on the working directory) by throwing
// rather than by an error event, and the spawner lets the throw through as a defect.
const spawnProblem = (code: unknown, shell: string, cwd: string): string | undefined => {
  switch (code) {
    case "ENOENT":
      return `the shell "${shell}" was not found, or the working directory ${cwd} does not exist`
    case "ENOTDIR":
      return `the working directory ${cwd} is not a directory`
    case "EACCES":
      return `the shell "${shell}" or the working directory ${cwd} is not accessible`
    case "E2BIG":
      // the kernel refuses one argument of more than 128 KiB (a big heredoc written inline)
      return "the command is too long for the system to start (one command line may hold about 128 KiB): " +
        "write the long text to a file first (the write tool, or several shorter commands) and run a command that reads it"
    default:
      return undefined
  }
}

const why = (error: unknown, shell: string, cwd: string): string => {
  if (!Predicate.isTagged(error, "PlatformError")) {
    return spawnProblem(errnoCode(error), shell, cwd) ?? HarnessError.describe(error)
  }
  const reason = (error as PlatformError.PlatformError).reason
  if (reason._tag === "BadArgument") return reason.description ?? reason.message
  // the spawner checks the working directory with the file system before it spawns
  if (reason.module === "FileSystem") {
    return reason._tag === "NotFound"
      ? `the working directory ${cwd} does not exist`
      : reason._tag === "PermissionDenied"
      ? `the working directory ${cwd} is not accessible`
      : `the working directory ${cwd} cannot be used (${reason._tag})`
  }
  return (reason.method === "spawn" ? spawnProblem(errnoCode(reason.cause), shell, cwd) : undefined) ??
    HarnessError.describe(reason.cause ?? error)
}

/** A command that could not be started or watched, in words for the model. */
export const commandFailed = (
  error: unknown,
  options: { readonly command: string; readonly shell: string; readonly cwd: string; readonly doing: string }
): CommandFailedError =>
  new CommandFailedError({
    command: options.command,
    cwd: options.cwd,
    message: `The command could not be ${options.doing}: ${why(error, options.shell, options.cwd)}`,
    cause: error
  })

/** Options refused before anything ran, past the types: the command's fields may be anything. */
export const refused = (options: unknown, cwd: string, problem: string): CommandFailedError => {
  const command = (options as { readonly command?: unknown } | null | undefined)?.command
  return new CommandFailedError({
    command: typeof command === "string" ? command : HarnessError.describe(command),
    cwd,
    message: `The command could not be started: ${problem}`
  })
}

/**
 * Spawns the command in the current scope (its options checked already: see `callProblem`);
 * any failure to start, thrown or not, is `COMMAND_FAILED`.
 */
export const spawn = (
  spawner: ChildProcessSpawner.ChildProcessSpawner["Service"],
  settings: Settings,
  options: Bash.CommandOptions,
  cwd: string
): Effect.Effect<ChildProcessSpawner.ChildProcessHandle, CommandFailedError, Scope.Scope> =>
  Effect.flatMap(
    // registered before the spawn, so that it runs after the spawn's own finalizer has stopped the shell
    Effect.acquireRelease(Effect.sync(() => ({ pid: -1 })), (slot) => Effect.sync(() => void liveGroups.delete(slot.pid))),
    (slot) =>
      spawner.spawn(commandOf(settings, options, cwd)).pipe(
        Effect.catchDefect((defect) => Effect.fail(defect)),
        Effect.mapError((error) => commandFailed(error, { command: options.command, cwd, shell: settings.shell, doing: "started" })),
        Effect.tap((handle) => Effect.sync(() => watch((slot.pid = Number(handle.pid)))))
      )
  )

// The process groups of the shells running now. Their scopes kill them as a group; a process
// that exits before those scopes close (a second Ctrl-C, `process.exit`) kills them on its way
// out, so no command outlives the program that started it.
const liveGroups = new Set<number>()
let killingOnExit = false

const killLiveGroups = (): void => {
  for (const pid of liveGroups) {
    try {
      process.kill(-pid, "SIGKILL")
    } catch {
      // gone already
    }
  }
}

const watch = (pid: number): void => {
  if (!killingOnExit) {
    killingOnExit = true
    process.once("exit", killLiveGroups)
  }
  liveGroups.add(pid)
}
