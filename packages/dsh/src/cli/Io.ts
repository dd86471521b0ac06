/**
 * The command's standard streams, over the platform's `Stdio`: text to stdout and stderr, the
 * whole of stdin, whether each is a terminal, and whether stdout's reader went away; and the
 * process signals (SIGINT, SIGTERM, SIGHUP) routed to whoever handles them now — a running
 * headless turn aborts, anything else ends the command.
 *
 * @since 0.1.0
 */
import { SystemCode } from "@dsh/llm"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"

/**
 * Why stdout takes no more writes: `readerGone` when its reader closed the pipe (`EPIPE`), which
 * ends a headless turn without being an error; `reason` in words, for the turn's abort.
 *
 * @since 0.1.0
 * @category models
 */
export interface StdoutClosed {
  readonly readerGone: boolean
  readonly reason: string
}

/**
 * @since 0.1.0
 * @category services
 */
export class Io extends Context.Service<Io, {
  /**
   * Writes to stdout. A write that fails (the reader went away: `dsh run … | head -1`) is not a
   * failure of the caller's: it completes `stdoutClosed`, and later writes are dropped.
   */
  readonly out: (text: string) => Effect.Effect<void>
  /**
   * Waits until a write to stdout has failed, and gives why: `stdout closed (EPIPE)` when its
   * reader went away, `stdout failed (CODE)` for another error (a full disk: `ENOSPC`).
   */
  readonly stdoutClosed: Effect.Effect<StdoutClosed>
  /** Whether a write to stdout has failed yet (see `stdoutClosed`). */
  readonly stdoutClosedYet: Effect.Effect<StdoutClosed | undefined>
  /** Writes to stderr. */
  readonly err: (text: string) => Effect.Effect<void>
  /** All of stdin, as UTF-8 text. */
  readonly readStdin: Effect.Effect<string>
  readonly stdinIsTerminal: Effect.Effect<boolean>
  readonly stdoutIsTerminal: Effect.Effect<boolean>
  readonly stderrIsTerminal: Effect.Effect<boolean>
}>()("dsh/cli/Io") {}

/**
 * What a failed write to stdout means. A write after the pipe's reader is gone fails with
 * `EPIPE`, or, once Node has destroyed the stream, with the error it was destroyed by.
 *
 * @since 0.1.0
 * @category models
 */
export const stdoutClosedBy = (error: unknown): StdoutClosed => {
  const code = SystemCode.of(error)
  return code === "EPIPE" || code === undefined
    ? { readerGone: true, reason: "stdout closed (EPIPE)" }
    : { readerGone: false, reason: `stdout failed (${code})` }
}

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
    const closed = yield* Deferred.make<StdoutClosed>()
    let closedBy: StdoutClosed | undefined
    const close = (error: unknown) =>
      Effect.suspend(() => {
        closedBy ??= stdoutClosedBy(error)
        return Deferred.succeed(closed, closedBy)
      })
    const write = (sink: () => ReturnType<Stdio.Stdio["stdout"]>) => (text: string) => Stream.run(Stream.succeed(text), sink())
    const out = (text: string) =>
      text === "" || closedBy !== undefined
        ? Effect.void
        : write(() => stdio.stdout())(text).pipe(Effect.catch(close), Effect.asVoid)
    return Io.of({
      out,
      // a stderr that cannot be written to leaves nowhere to say so
      err: (text) => text === "" ? Effect.void : Effect.ignore(write(() => stdio.stderr())(text)),
      stdoutClosed: Deferred.await(closed),
      stdoutClosedYet: Effect.sync(() => closedBy),
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
export type Signal = "SIGINT" | "SIGTERM" | "SIGHUP"

type Handler = (signal: Signal) => void

// The process has one set of signals: the handlers form a stack, the latest registered handles them.
const handlers: Array<Handler> = []
let fallback: Handler = () => {}
let installed = false

const dispatch = (signal: Signal) => (handlers.at(-1) ?? fallback)(signal)
const onSigint = () => dispatch("SIGINT")
const onSigterm = () => dispatch("SIGTERM")
const onSighup = () => dispatch("SIGHUP")

/**
 * Routes SIGINT, SIGTERM and SIGHUP (the terminal closed) to the handlers registered with
 * {@link onSignal}, and to `otherwise` while none is.
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
  process.on("SIGHUP", onSighup)
}

/**
 * Handles `signal` as if the process had received it: a terminal that fails every write is a
 * terminal that closed, whether or not its SIGHUP came first.
 *
 * @since 0.1.0
 * @category signals
 */
export const raise = (signal: Signal): void => dispatch(signal)

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
