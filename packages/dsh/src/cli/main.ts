/**
 * The `dsh` command's main: parses the command line with `effect/cli`, runs the command on the
 * Node platform (`Platform`: file system, path, stdio), and ends the process with
 * the exit status the command ended with (see `Report`). Failures are reported in words with
 * their catalog code; a usage error names what is wrong and where the help is.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { CliConfig, CliError, CliOutput, Command, GlobalFlag } from "effect/cli"
import { dsh } from "./Command.ts"
import * as Io from "./Io.ts"
import * as Report from "./Report.ts"
import * as Log from "./Log.ts"
import * as Platform from "./Platform.ts"

/**
 * The version `dsh --version` prints.
 *
 * @since 0.1.0
 * @category constants
 */
export const version = "0.1.0"

/**
 * A usage error's message on one line: `effect/cli`'s suggestions, which it puts on lines of
 * their own under a blank one (`Did you mean this?`), become `(did you mean --json?)`, so the
 * report is `dsh: CONFIG_INVALID: …` and the line saying where the help is, as every other.
 *
 * @since 0.1.0
 * @category rendering
 */
export const usageLine = (message: string): string => {
  const lines = message.split("\n").map((line) => line.trim()).filter((line) => line !== "")
  const asked = lines.findIndex((line) => /^did you mean/i.test(line))
  if (asked < 0) return lines.join(" ")
  const suggestions = lines.slice(asked + 1)
  const said = lines.slice(0, asked).join(" ")
  if (suggestions.length === 0) return `${said} (${lines[asked]!.toLowerCase()})`
  const named = suggestions.length === 1 ? suggestions[0]! : `${suggestions.slice(0, -1).join(", ")} or ${suggestions.at(-1)!}`
  return `${said} (did you mean ${named}?)`
}

/** Usage errors on stderr, in the catalog's words; help on stdout. */
const presenter = CliOutput.layerPresenter({
  present: (event) => {
    if (event._tag !== "InvalidInvocation") return CliOutput.defaultPresenter.present(event)
    const messages = event.errors.map((error) => usageLine(error.message)).join("; ")
    const help = `dsh ${event.commandPath.slice(1).join(" ")}`.trim() + " --help"
    return Effect.sync(() => void process.stderr.write(`dsh: CONFIG_INVALID: ${messages}\n  see ${help}\n`))
  }
})

const cliConfig = CliConfig.layer({ builtIns: [GlobalFlag.Help, GlobalFlag.Version, GlobalFlag.Completions] })

/** The exit status of a command that failed outside any report of its own. */
const statusOf = (cause: Cause.Cause<unknown>): Effect.Effect<Report.Status, never, Io.Io> =>
  Effect.gen(function*() {
    for (const reason of cause.reasons) {
      if (!Cause.isFailReason(reason)) continue
      if (Report.isExit(reason.error)) return reason.error.status
      if (CliError.isCliError(reason.error) && reason.error._tag === "ShowHelp") {
        return reason.error.errors.length > 0 ? Report.Status.usage : Report.Status.ok
      }
    }
    const report = Report.ofCause(cause)
    const io = yield* Io.Io
    yield* io.err(Report.render(report))
    if (process.env["DSH_DEBUG"] === "1") yield* io.err(`${Cause.pretty(cause)}\n`)
    return report.status
  })

/**
 * The status of a command that succeeded: `ok`, unless stdout failed under it other than by its
 * reader going away (a full disk: `dsh sessions show … > /dev/full`), which lost part of what it
 * printed — reported as `ABORTED`, exit 130, as a turn whose answer it lost (see `Run.turn`).
 */
const outputWritten = Effect.gen(function*() {
  const io = yield* Io.Io
  const closed = yield* io.stdoutClosedYet
  if (closed === undefined || closed.readerGone) return Report.Status.ok
  yield* io.err(Report.render({
    code: "ABORTED",
    message: `the output was not all written: ${closed.reason}`,
    hint: undefined,
    status: Report.Status.aborted
  }))
  return Report.Status.aborted
})

/**
 * The command for an argument list, ending with its exit status.
 *
 * @since 0.1.0
 * @category running
 */
export const program = (argv: ReadonlyArray<string>): Effect.Effect<Report.Status> =>
  Command.runWith(dsh, { version })(argv).pipe(
    Effect.andThen(outputWritten),
    Effect.catchCause(statusOf),
    Effect.provide(Layer.mergeAll(Io.layer, presenter, cliConfig, Log.logger(process.env["DSH_DEBUG"] === "1"))),
    Effect.provide(Platform.layer)
  )

/** Exits once what was written to stdout and stderr has left the process. */
const exitWith = (status: number) => {
  process.exitCode = status
  process.stdout.write("", () => process.stderr.write("", () => process.exit(status)))
}

/**
 * Runs the command for `process.argv` and exits with its status. SIGINT, SIGTERM and SIGHUP end it
 * (status 130) unless a command handles them (a headless turn aborts; chat reads Ctrl-C as a key).
 *
 * @since 0.1.0
 * @category running
 */
export const main = (argv: ReadonlyArray<string> = process.argv.slice(2)): void => {
  const fiber = Effect.runFork(program(argv))
  Io.installSignals(() => {
    fiber.interruptUnsafe()
    // the interruption closes the agent, which waits out the abort grace for work that ignores
    // the abort (a command trapping SIGTERM): a signal that ends the command ends it at once,
    // leaving what was not closed by then to a resume's repair
    setTimeout(() => exitWith(Report.Status.aborted), signalGraceMillis).unref()
  })
  fiber.addObserver((exit) => exitWith(exit._tag === "Success" ? exit.value : Report.Status.aborted))
}

/** How long a signal that ends the command lets it close what it can (a turn's closing events). */
const signalGraceMillis = 200
