/**
 * The command's standard streams, over the platform's `Stdio`: text to stdout and stderr, the
 * whole of stdin, whether each is a terminal; and the process signals (SIGINT, SIGTERM) routed
 * to whoever handles them now — a running headless turn aborts, anything else ends the command.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"

/**
 * @since 0.1.0
 * @category services
 */
export class Io extends Context.Service<Io, {
  /** Writes to stdout (a closed stdout is ignored: `dsh run … | head -1` is not a failure). */
  readonly out: (text: string) => Effect.Effect<void>
  /** Writes to stderr. */
  readonly err: (text: string) => Effect.Effect<void>
  /** All of stdin, as UTF-8 text. */
  readonly readStdin: Effect.Effect<string>
  readonly stdinIsTerminal: Effect.Effect<boolean>
  readonly stdoutIsTerminal: Effect.Effect<boolean>
  readonly stderrIsTerminal: Effect.Effect<boolean>
}>()("dsh/cli/Io") {}

/**
 * The streams of the platform's `Stdio`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Io, never, Stdio.Stdio> = Layer.effect(
  Io,
  Effect.gen(function*() {
    const stdio = yield* Stdio.Stdio
    const write = (sink: () => ReturnType<Stdio.Stdio["stdout"]>) => (text: string) =>
      text === "" ? Effect.void : Stream.run(Stream.succeed(text), sink()).pipe(Effect.ignore)
    return Io.of({
      out: write(() => stdio.stdout()),
      err: write(() => stdio.stderr()),
      readStdin: stdio.stdin.pipe(Stream.decodeText(), Stream.mkString, Effect.orElseSucceed(() => "")),
      stdinIsTerminal: stdio.stdinIsTerminal,
      stdoutIsTerminal: stdio.stdoutIsTerminal,
      stderrIsTerminal: stdio.stderrIsTerminal
    })
  })
)

// ---------------------------------------------------------------------------------------------
// signals

/**
 * The process signals the command handles.
 *
 * @since 0.1.0
 * @category models
 */
export type Signal = "SIGINT" | "SIGTERM"

type Handler = (signal: Signal) => void

// The process has one set of signals: the handlers form a stack, the latest registered handles them.
const handlers: Array<Handler> = []
let fallback: Handler = () => {}
let installed = false

const dispatch = (signal: Signal) => (handlers.at(-1) ?? fallback)(signal)
const onSigint = () => dispatch("SIGINT")
const onSigterm = () => dispatch("SIGTERM")

/**
 * Routes SIGINT and SIGTERM to the handlers registered with {@link onSignal}, and to `otherwise`
 * while none is.
 *
 * @since 0.1.0
 * @category signals
 */
export const installSignals = (otherwise: Handler): void => {
  fallback = otherwise
  if (installed) return
  installed = true
  process.on("SIGINT", onSigint)
  process.on("SIGTERM", onSigterm)
}

/**
 * The signals that arrive while the scope is open go to `handler` (the one registered last
 * wins); `passOn` hands a signal to the handler below it.
 *
 * @since 0.1.0
 * @category signals
 */
export const onSignal = (
  handler: (signal: Signal, passOn: (signal: Signal) => void) => void
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const depth = handlers.length
      const passOn = (signal: Signal) => (handlers[depth - 1] ?? fallback)(signal)
      const registered: Handler = (signal) => handler(signal, passOn)
      handlers.push(registered)
      return registered
    }),
    (registered) =>
      Effect.sync(() => {
        const at = handlers.lastIndexOf(registered)
        if (at >= 0) handlers.splice(at, 1)
      })
  )
