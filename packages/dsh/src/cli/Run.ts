/**
 * `dsh run "<prompt>"`: one turn, headless. The answer streams to stdout as it arrives (the text
 * deltas of `agent.events`); tool activity and a one-line summary (how the turn ended, steps,
 * usage with cache hits, the session to resume) go to stderr. With `--json` stdout gets the
 * session's events as JSON lines instead. SIGINT, SIGTERM or SIGHUP aborts the turn (a second
 * one ends the command at once). So does a stdout whose reader went away (`dsh run … | head -1`):
 * nobody reads the answer any more, so no more of it is paid for; that abort is not an error
 * (exit 0). The exit status says how the turn ended (see `Report`).
 *
 * `dsh resume <id> "<prompt>"` runs its turn the same way, on the resumed session.
 *
 * @since 0.1.0
 */
import { type Agent, TurnAbortedError } from "@dsh/agent"
import { HarnessError, type ModelInfo, Usage } from "@dsh/llm"
import { type SessionEvent, SessionEvent as Events } from "@dsh/session"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Config from "./Config.ts"
import { ConfigInvalidError } from "./ConfigInvalidError.ts"
import * as Io from "./Io.ts"
import * as Render from "./Render.ts"
import * as Report from "./Report.ts"
import * as Runtime from "./Runtime.ts"

/**
 * What the headless printer keeps between events.
 *
 * @since 0.1.0
 * @category models
 */
export interface PrinterState {
  /** Whether stdout got answer text, and whether it ends a line. */
  wroteText: boolean
  atLineStart: boolean
  /** The open tool calls: name and the time of their call event. */
  readonly calls: Map<string, { readonly name: string; readonly time: number }>
  turnOpen: boolean
  steps: number
  usage: Usage.Usage
  started: number | undefined
  ended: { readonly reason: SessionEvent.TurnEndReason; readonly time: number } | undefined
}

/**
 * A printer's first state.
 *
 * @since 0.1.0
 * @category constructors
 */
export const initialState = (): PrinterState => ({
  wroteText: false,
  atLineStart: true,
  calls: new Map(),
  turnOpen: false,
  steps: 0,
  usage: Usage.empty,
  started: undefined,
  ended: undefined
})

/**
 * Text for stdout and for stderr.
 *
 * @since 0.1.0
 * @category models
 */
export interface Printed {
  readonly out: string
  readonly err: string
}

const answerText = (state: PrinterState, text: string): string => {
  if (text === "") return ""
  state.wroteText = true
  state.atLineStart = text.endsWith("\n")
  return text
}

/** Ends the answer's line on stdout before stderr shows something, so the two never share a line on a terminal. */
const breakLine = (state: PrinterState): string => {
  if (state.atLineStart) return ""
  state.atLineStart = true
  return "\n"
}

/**
 * What one event prints in text mode: answer text to stdout; tool calls and results, repairs
 * and failures after a turn's end (a flush) to stderr. The failure that ends the turn is the
 * command's to report, not the printer's.
 *
 * @since 0.1.0
 * @category rendering
 */
export const print = (state: PrinterState, event: SessionEvent.SessionEvent, style: Render.Style): Printed => {
  switch (event.type) {
    case "turn/start":
      state.turnOpen = true
      state.started = event.time
      return { out: "", err: "" }
    case "step/start":
      state.steps++
      return { out: "", err: "" }
    case "assistant/chunk": {
      const chunk = event.data.chunk
      if (chunk.type === "block-start" && chunk.blockType === "text" && state.wroteText) return { out: breakLine(state), err: "" }
      return chunk.type === "text-delta" ? { out: answerText(state, chunk.delta), err: "" } : { out: "", err: "" }
    }
    case "usage":
      state.usage = Usage.add(state.usage, event.data.usage)
      return { out: "", err: "" }
    case "assistant/message":
      // the answer reads complete on stdout; only the finish reason says it was cut
      return event.data.finishReason?.kind === "length"
        ? { out: breakLine(state), err: "dsh: warning: the answer was cut off at the model's output limit (finish reason length)\n" }
        : { out: "", err: "" }
    case "tool/call":
      state.calls.set(event.data.callId, { name: event.data.name, time: event.time })
      return { out: breakLine(state), err: `${Render.toolCall(event.data, style)}\n` }
    case "tool/result": {
      const call = state.calls.get(event.data.callId)
      state.calls.delete(event.data.callId)
      const line = Render.toolResult(call?.name ?? "tool", event.data, call === undefined ? undefined : event.time - call.time, style)
      return { out: breakLine(state), err: `${line}\n` }
    }
    case "session/repair":
      return { out: "", err: `dsh: resume: ${Render.repair(event.data)}\n` }
    case "compaction/applied":
    case "compaction/failed":
      return { out: breakLine(state), err: `dsh: ${Render.compaction(event)}\n` }
    case "error":
      return state.turnOpen ? { out: "", err: "" } : { out: "", err: `dsh: warning: ${event.data.code}: ${event.data.message}\n` }
    case "turn/end":
      state.turnOpen = false
      state.ended = { reason: event.data.reason, time: event.time }
      return { out: breakLine(state), err: "" }
    default:
      return { out: "", err: "" }
  }
}

const encodeEvent = Schema.encodeSync(Events.SessionEvent)

/**
 * An event as one JSON line.
 *
 * @since 0.1.0
 * @category rendering
 */
export const jsonLine = (event: SessionEvent.SessionEvent): string => `${JSON.stringify(encodeEvent(event))}\n`

/**
 * The summary line on stderr: how the turn ended, its steps, usage with cache hits, the time
 * it took, and the session to resume.
 *
 * @since 0.1.0
 * @category rendering
 */
export const summary = (
  state: PrinterState,
  session: string | undefined,
  style: Render.Style,
  pricing?: ModelInfo.Pricing
): string => {
  const reason = state.ended?.reason.kind ?? "not started"
  const took = state.started !== undefined && state.ended !== undefined ? ` · ${Render.duration(state.ended.time - state.started)}` : ""
  const steps = `${state.steps} step${state.steps === 1 ? "" : "s"}`
  const resume = session === undefined ? "" : ` · session ${session} (dsh resume ${session})`
  return style.dim(`dsh: ${reason} · ${steps} · ${Render.usage(state.usage, pricing)}${took}${resume}`) + "\n"
}

/** The events of the run: from `from` to the agent's next `idle` after it ran. */
const runEvents = (agent: Agent.Agent, from: number): Stream.Stream<SessionEvent.SessionEvent> => {
  let ran = false
  return agent.session.streamFrom(from).pipe(
    Stream.takeUntil((event) => {
      if (event.type !== "agent/status") return false
      if (event.data.status === "running") ran = true
      return ran && event.data.status !== "running"
    })
  )
}

/**
 * Prints the run's events as they are logged (text, or JSON lines with `json`), until the agent
 * is idle again.
 *
 * @since 0.1.0
 * @category rendering
 */
export const printer = (
  agent: Agent.Agent,
  from: number,
  options: { readonly json: boolean; readonly style: Render.Style; readonly state: PrinterState }
): Effect.Effect<void, never, Io.Io> =>
  Effect.gen(function*() {
    const io = yield* Io.Io
    yield* Stream.runForEach(runEvents(agent, from), (event) => {
      const printed = print(options.state, event, options.style)
      if (options.json) return io.out(jsonLine(event))
      return Effect.andThen(io.out(printed.out), io.err(printed.err))
    })
  })

/**
 * One headless turn on an agent: prints as it goes, aborts on SIGINT/SIGTERM/SIGHUP or once
 * stdout cannot be written to, then prints the summary. Fails with the turn's failure (not with
 * the abort a stdout whose reader went away caused), or `INVARIANT` with `--dev`.
 *
 * @since 0.1.0
 * @category commands
 */
export const turn = (
  agent: Agent.Agent,
  prompt: string,
  options: {
    readonly json: boolean
    readonly from: number
    readonly session: string | undefined
    readonly pricing?: ModelInfo.Pricing | undefined
  }
) =>
  Effect.gen(function*() {
    const io = yield* Io.Io
    const style = Render.styleFor(yield* io.stderrIsTerminal, process.env)
    const state = initialState()
    const printing = yield* Effect.forkScoped(printer(agent, options.from, { json: options.json, style, state }), {
      startImmediately: true
    })
    yield* abortOnSignal(agent)
    yield* Effect.forkScoped(Effect.flatMap(io.stdoutClosed, (closed) => agent.abort(closed.reason)))
    // with --dev, a resumed log that already breaks the contract ends the command before any request
    yield* Runtime.verify
    const result = yield* Effect.exit(agent.run(prompt))
    yield* Fiber.join(printing)
    if (!options.json) yield* io.err(summary(state, options.session, style, options.pricing))
    yield* Runtime.verify
    const closed = yield* io.stdoutClosedYet
    if (Exit.isFailure(result) && !abortedForGoneReader(result.cause, closed)) {
      return yield* Effect.failCause(result.cause)
    }
    // a write that failed after the turn had answered (a short answer to a full disk) lost it
    if (Exit.isSuccess(result) && closed !== undefined && !closed.readerGone) return yield* lostAnswer(result.value.turn, closed)
  })

/** The answer of a turn that completed, but stdout failed before it was all written: `ABORTED`, exit 130. */
const lostAnswer = (turn: number, closed: Io.StdoutClosed): Effect.Effect<never, TurnAbortedError> =>
  Effect.fail(
    new TurnAbortedError({
      message: `turn ${turn} answered, but its answer was not all written: ${closed.reason}`,
      turn,
      reason: closed.reason
    })
  )

/** Whether the turn failed only by the abort that a stdout whose reader went away caused. */
const abortedForGoneReader = (cause: Cause.Cause<unknown>, closed: Io.StdoutClosed | undefined): boolean =>
  closed !== undefined && closed.readerGone &&
  cause.reasons.some((reason) => Cause.isFailReason(reason) && HarnessError.isHarnessError(reason.error) && reason.error.code === "ABORTED")

/** The first SIGINT, SIGTERM or SIGHUP aborts the turn; a second one is passed on (it ends the command). */
const abortOnSignal = (agent: Agent.Agent): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const first = yield* Deferred.make<Io.Signal>()
    yield* Io.onSignal((signal, passOn) => {
      if (!Deferred.doneUnsafe(first, Effect.succeed(signal))) passOn(signal)
    })
    yield* Effect.forkScoped(Effect.flatMap(Deferred.await(first), (signal) => agent.abort(`interrupted (${signal})`)))
  })

/**
 * The prompt: the argument, or stdin when there is none or it is `-`.
 *
 * @since 0.1.0
 * @category commands
 */
export const readPrompt = (argument: string | undefined): Effect.Effect<string, ConfigInvalidError, Io.Io> =>
  Effect.gen(function*() {
    const io = yield* Io.Io
    if (argument !== undefined && argument !== "-") return yield* nonEmptyPrompt(argument, "the prompt argument")
    if (argument === undefined && (yield* io.stdinIsTerminal)) {
      return yield* new ConfigInvalidError({
        message: "no prompt: give it as an argument (dsh run \"…\"), or on stdin (dsh run - < prompt.txt)",
        field: "prompt",
        source: "the command line"
      })
    }
    return yield* nonEmptyPrompt(yield* io.readStdin, "stdin")
  })

const nonEmptyPrompt = (text: string, source: string): Effect.Effect<string, ConfigInvalidError> =>
  text.trim() === ""
    ? Effect.fail(new ConfigInvalidError({ message: `the prompt is empty (from ${source})`, field: "prompt", source }))
    : Effect.succeed(text)

/**
 * What `dsh run` takes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Input {
  readonly prompt: string | undefined
  readonly json: boolean
  readonly flags: Config.Flags
}

/**
 * `dsh run`: a new session, one turn.
 *
 * @since 0.1.0
 * @category commands
 */
export const command = (input: Input, env: Config.Environment) =>
  Effect.gen(function*() {
    const settings = yield* Config.load(input.flags, env)
    const prompt = yield* readPrompt(input.prompt)
    const apiKey = yield* Config.apiKey(settings)
    const id = Runtime.sessionId()
    yield* Effect.gen(function*() {
      const agent = yield* Runtime.agent(settings, { id })
      const pricing = yield* Runtime.pricing(settings)
      yield* turn(agent, prompt, { json: input.json, from: 0, session: settings.sessions === "memory" ? undefined : id, pricing })
    }).pipe(Effect.scoped, Effect.provide(Runtime.layer(settings, Runtime.model(settings, apiKey))), Report.reported(settings))
  })
