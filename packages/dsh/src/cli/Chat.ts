/**
 * `dsh chat`: an interactive session in the terminal, on `agent.events` and the agent handle.
 *
 * - The answer streams into the transcript as it arrives; reasoning dimmed (`--hide-reasoning`
 *   hides it); each tool call and its result one line each (name, arguments, a bounded preview,
 *   duration, the code on failure); usage with cache hits at each turn's end.
 * - A status line runs while the agent works (waiting for the first token, thinking, answering,
 *   running a tool), with the time since the turn started.
 * - The input line stays at the bottom and takes keys while a turn runs: a line submitted then
 *   is queued as the next message (`agent.send`), or steers the running turn when it starts
 *   with `>>` (`agent.steer`).
 * - Ctrl-C aborts the running turn (`agent.abort`); at the prompt it clears the line, and a
 *   second one in a row exits. Ctrl-D on an empty line exits.
 * - Commands: `/new`, `/sessions`, `/resume <id>`, `/compact`, `/usage`, `/help`, `/exit`.
 * - Each compaction of the history (automatic, `/compact`, or after an overflow) is one line.
 *
 * Each session is an agent in its own scope: `/new` and `/resume` close it (the agent is
 * disposed, its session flushed) and open the next; the keyboard, the screen and the model
 * outlive them.
 *
 * @since 0.1.0
 */
import type { Agent } from "@dsh/agent"
import { type ModelInfo, Usage } from "@dsh/llm"
import type { SessionEvent } from "@dsh/session"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import { PermissionPrompt, Policy } from "@dsh/permissions"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Terminal from "effect/Terminal"
import * as Config from "./Config.ts"
import { ConfigInvalidError } from "./ConfigInvalidError.ts"
import * as Io from "./Io.ts"
import * as LineEditor from "./LineEditor.ts"
import * as Render from "./Render.ts"
import * as Report from "./Report.ts"
import * as Runtime from "./Runtime.ts"
import * as Screen from "./Screen.ts"
import * as Store from "./Store.ts"

/**
 * The prefix that makes a line typed during a turn steer it instead of queueing.
 *
 * @since 0.1.0
 * @category constants
 */
export const steerPrefix = ">>"

const PROMPT = "› "

/**
 * What the keyboard and the agent tell the conversation.
 *
 * @since 0.1.0
 * @category models
 */
export type Submission =
  | { readonly _tag: "Line"; readonly text: string }
  | { readonly _tag: "Interrupt" }
  | { readonly _tag: "End" }
  | { readonly _tag: "TurnEnded" }

/**
 * What comes after a session.
 *
 * @since 0.1.0
 * @category models
 */
export type Next =
  | { readonly _tag: "New" }
  | { readonly _tag: "Resume"; readonly id: string }
  | { readonly _tag: "Exit" }

/**
 * The chat's state, shared by the keyboard, the renderer and the conversation (one JavaScript
 * thread: each reads and writes it in synchronous steps).
 *
 * @since 0.1.0
 * @category models
 */
export interface State {
  editor: LineEditor.State
  /** Whether the agent is in a turn (from its status events). */
  running: boolean
  /** A Ctrl-C at an empty prompt was pressed last: the next one exits. */
  exitArmed: boolean
  /** What the status line says the agent is doing, and since when the turn runs. */
  phase: string
  turnStarted: number
  spinner: number
  /** The current turn's usage, the session's. */
  turnUsage: Usage.Usage
  sessionUsage: Usage.Usage
  /** The model's pricing, when its registry entry has one: usage is shown with its cost. */
  pricing: ModelInfo.Pricing | undefined
  turns: number
  /** The open tool calls: name and when they were called. */
  readonly calls: Map<string, { readonly name: string; readonly time: number }>
  /** The tone the transcript streams in now (a switch from reasoning to text starts a line). */
  tone: Screen.Tone | undefined
  sessionId: string
  /** The permission policy's question waiting for y / n / a. */
  question: Question | undefined
  /** Who waits for a tool call to be on the screen (a question shows below its call). */
  readonly shown: Map<string, () => void>
}

/**
 * A question of the permission policy, waiting for the user.
 *
 * @since 0.1.0
 * @category models
 */
export interface Question {
  readonly request: PermissionPrompt.Request
  readonly answer: Deferred.Deferred<PermissionPrompt.Answer>
}

const initialState = (): State => ({
  editor: LineEditor.empty,
  running: false,
  exitArmed: false,
  phase: "",
  turnStarted: 0,
  spinner: 0,
  turnUsage: Usage.empty,
  sessionUsage: Usage.empty,
  pricing: undefined,
  turns: 0,
  calls: new Map(),
  tone: undefined,
  sessionId: "",
  question: undefined,
  shown: new Map()
})

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

/**
 * The status line for the state: the spinner, what the agent does, for how long.
 *
 * @since 0.1.0
 * @category rendering
 */
export const statusLine = (state: State, now: number): string | undefined =>
  state.running
    ? `${SPINNER[state.spinner % SPINNER.length]} ${state.phase} · ${Render.duration(now - state.turnStarted)} · Ctrl-C aborts · ${steerPrefix} steers`
    : undefined

/**
 * What the chat works with.
 *
 * @since 0.1.0
 * @category models
 */
export interface Context {
  readonly settings: Config.Settings
  readonly state: State
  readonly screen: Screen.Screen
  readonly style: Render.Style
  readonly submissions: Queue.Queue<Submission>
}

const QUESTION_PROMPT = "allow? [y]es [n]o [a]lways › "

const drawInput = (context: Context) => {
  const { editor, question } = context.state
  if (question !== undefined) context.screen.input(QUESTION_PROMPT, "", 0)
  else context.screen.input(PROMPT, editor.text, editor.cursor)
}

const drawStatus = (context: Context) => context.screen.status(statusLine(context.state, Date.now()))

const note = (context: Context, text: string) => context.screen.line(context.style.dim(text))

// ---------------------------------------------------------------------------------------------
// the keyboard

const keyOf = (input: Terminal.UserInput): LineEditor.Key => ({
  input: Option.getOrUndefined(input.input),
  name: input.key.name,
  ctrl: input.key.ctrl,
  meta: input.key.meta
})

const answers: Readonly<Record<string, PermissionPrompt.Answer>> = { y: "yes", n: "no", a: "always" }

/** A key while the permission policy asks: y, n or a answers; Ctrl-C aborts the turn (and so the question). */
const onAnswerKey = (context: Context, question: Question, input: Terminal.UserInput): Submission | undefined => {
  if (input.key.ctrl && input.key.name === "c") return { _tag: "Interrupt" }
  const answer = answers[(Option.getOrUndefined(input.input) ?? "").toLowerCase()]
  if (answer === undefined) return undefined
  context.state.question = undefined
  note(context, `  → ${answer}`)
  drawInput(context)
  Deferred.doneUnsafe(question.answer, Effect.succeed(answer))
  return undefined
}

/** One key: edits the line, or submits, interrupts, ends. */
const onKey = (context: Context, input: Terminal.UserInput): Submission | undefined => {
  const { state } = context
  if (state.question !== undefined) return onAnswerKey(context, state.question, input)
  const outcome = LineEditor.press(state.editor, keyOf(input))
  if (outcome._tag !== "Interrupted") state.exitArmed = false
  state.editor = outcome.state
  switch (outcome._tag) {
    case "Edited":
      drawInput(context)
      return undefined
    case "Submitted":
      drawInput(context)
      return { _tag: "Line", text: outcome.line }
    case "Ended":
      return { _tag: "End" }
    case "Interrupted":
      // at the prompt, a Ctrl-C on a line being typed clears it
      if (!state.running && state.editor.text !== "") {
        state.editor = { ...state.editor, text: "", cursor: 0 }
        drawInput(context)
        return undefined
      }
      return { _tag: "Interrupt" }
  }
}

/** Reads keys until stdin ends; every submission goes to the conversation. */
const keyboard = (context: Context, terminal: Terminal.Terminal): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const keys = yield* terminal.readInput
    for (;;) {
      const input = yield* Queue.take(keys).pipe(Effect.option)
      if (Option.isNone(input)) {
        yield* Queue.offer(context.submissions, { _tag: "End" })
        return
      }
      const submission = onKey(context, input.value)
      if (submission !== undefined) yield* Queue.offer(context.submissions, submission)
    }
  })

/** Turns the spinner while a turn runs. */
const spinner = (context: Context): Effect.Effect<never> =>
  Effect.forever(
    Effect.andThen(Effect.sleep("100 millis"), Effect.sync(() => {
      if (!context.state.running) return
      context.state.spinner++
      drawStatus(context)
    }))
  )

// ---------------------------------------------------------------------------------------------
// the agent's events

const setPhase = (context: Context, phase: string) => {
  context.state.phase = phase
  drawStatus(context)
}

const stream = (context: Context, text: string, tone: Screen.Tone) => {
  const { screen, state } = context
  if (state.tone !== undefined && state.tone !== tone) screen.endLine()
  state.tone = tone
  screen.write(text, tone)
}

const onChunk = (context: Context, event: SessionEvent.CoreEvent<"assistant/chunk">) => {
  const chunk = event.data.chunk
  switch (chunk.type) {
    case "text-delta":
      if (context.state.phase !== "answering") setPhase(context, "answering")
      return stream(context, chunk.delta, "plain")
    case "reasoning-delta":
      if (context.state.phase !== "thinking") setPhase(context, "thinking")
      if (context.settings.showReasoning) stream(context, chunk.delta, "dim")
      return
    case "tool-call-delta":
      if (chunk.name !== undefined) setPhase(context, `calling ${chunk.name}`)
      return
    default:
      return
  }
}

const endStream = (context: Context) => {
  context.screen.endLine()
  context.state.tone = undefined
}

/**
 * What an event does to the screen and the state.
 *
 * @since 0.1.0
 * @category rendering
 */
export const onEvent = (context: Context, event: SessionEvent.SessionEvent): void => {
  const { screen, state, style } = context
  switch (event.type) {
    case "agent/status":
      state.running = event.data.status === "running"
      if (state.running) {
        state.turnStarted = Date.now()
        state.phase = "starting"
      }
      drawStatus(context)
      return
    case "turn/start":
      state.turnStarted = Date.now()
      state.turnUsage = Usage.empty
      return
    case "user/message":
      endStream(context)
      screen.line(style.bold(`${PROMPT}${textOf(event.data.content)}`))
      return
    case "steering/message":
      endStream(context)
      screen.line(style.cyan(`↳ steering: ${textOf(event.data.content)}`))
      return
    case "model/request":
      return setPhase(context, `waiting for ${event.data.model}`)
    case "assistant/chunk":
      return onChunk(context, event)
    case "assistant/message":
      return endStream(context)
    case "usage":
      state.turnUsage = Usage.add(state.turnUsage, event.data.usage)
      state.sessionUsage = Usage.add(state.sessionUsage, event.data.usage)
      return
    case "tool/call":
      endStream(context)
      state.calls.set(event.data.callId, { name: event.data.name, time: event.time })
      screen.line(Render.toolCall(event.data, style, { columns: process.stdout.columns }))
      // the phase first: showing the call wakes its permission question, whose phase must win
      setPhase(context, `running ${event.data.name}`)
      return state.shown.get(event.data.callId)?.()
    case "tool/result": {
      const call = state.calls.get(event.data.callId)
      state.calls.delete(event.data.callId)
      screen.line(Render.toolResult(call?.name ?? "tool", event.data, call === undefined ? undefined : event.time - call.time, style, {
        columns: process.stdout.columns
      }))
      return setPhase(context, "waiting")
    }
    case "error": {
      endStream(context)
      const report = Report.fromCode(event.data.code, event.data.message, hintContext(context.settings))
      screen.line(style.red(`✗ ${report.code}: ${report.message}`) + (report.hint === undefined ? "" : `\n  ${style.dim(report.hint)}`))
      return
    }
    case "session/repair":
      return note(context, `(${Render.repair(event.data)})`)
    case "compaction/applied":
    case "compaction/failed":
      endStream(context)
      return note(context, `(${Render.compaction(event)})`)
    case "turn/end": {
      endStream(context)
      state.turns++
      const ended = Render.turnEnd(event.data.reason)
      if (ended !== undefined) screen.line(style.yellow(`(${ended})`))
      note(context, `  ${Render.usage(state.turnUsage, state.pricing)} · ${Render.duration(Date.now() - state.turnStarted)}`)
      Queue.offerUnsafe(context.submissions, { _tag: "TurnEnded" })
      return
    }
    default:
      return
  }
}

const textOf = (content: ReadonlyArray<{ readonly type: string; readonly text?: string }>): string =>
  content.map((block) => (block.type === "text" ? block.text ?? "" : `[${block.type}]`)).join(" ")

const hintContext = (settings: Config.Settings): Report.HintContext => ({
  configFile: settings.configFile,
  baseUrl: settings.baseUrl,
  model: settings.model,
  provider: settings.provider
})

// ---------------------------------------------------------------------------------------------
// the permission policy's questions

/**
 * Asks the user about a tool call, in the transcript; the answer is a key (y / n / a).
 *
 * @since 0.1.0
 * @category prompts
 */
export const ask = (context: Context) => (request: PermissionPrompt.Request): Effect.Effect<PermissionPrompt.Answer> =>
  Effect.gen(function*() {
    const { state, style } = context
    // the call's line comes first: the renderer shows it from the log, the question waits for it
    yield* untilShown(state, request.callId)
    const answer = yield* Deferred.make<PermissionPrompt.Answer>()
    const always = request.always === undefined ? "this call only" : Policy.describeRule(request.always)
    context.screen.line(
      style.yellow(`? allow ${request.tool}?`) + style.dim(` ${request.reason}`) + "\n" + style.dim(`  always would allow: ${always}`)
    )
    state.question = { request, answer }
    setPhase(context, `asking about ${request.tool}`)
    drawInput(context)
    return yield* Deferred.await(answer)
  }).pipe(Effect.ensuring(Effect.sync(() => {
    context.state.question = undefined
    drawInput(context)
  })))

const untilShown = (state: State, callId: string): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    if (state.calls.has(callId)) return resume(Effect.void)
    state.shown.set(callId, () => resume(Effect.void))
    return Effect.sync(() => void state.shown.delete(callId))
  }).pipe(Effect.ensuring(Effect.sync(() => void state.shown.delete(callId))))

// ---------------------------------------------------------------------------------------------
// the conversation

const help = [
  "Type a message and press Enter. While a turn runs, a line is queued as the next message;",
  `one starting with ${steerPrefix} steers the running turn. Ctrl-C aborts the turn; twice at the prompt exits.`,
  "  /new            a new session",
  "  /sessions       the persisted sessions",
  "  /resume <id>    continue a session (an id or a unique prefix)",
  "  /compact        summarize the older turns now (the newest stay verbatim)",
  "  /usage          this session's usage",
  "  /help           this help",
  "  /exit, /quit    leave (Ctrl-D too)"
].join("\n")

const usageReport = (state: State): string =>
  `session ${state.sessionId} · ${state.turns} turn${state.turns === 1 ? "" : "s"} · ${Render.usage(state.sessionUsage, state.pricing)}`

/** A slash command: what it prints, and what comes next when it ends the session. */
const slash = (context: Context, agent: Agent.Agent, line: string) =>
  Effect.gen(function*() {
    const [name = "", ...rest] = line.trim().split(/\s+/)
    const argument = rest.join(" ")
    const { settings, state } = context
    const idleOnly = () => {
      note(context, `(${name} works only between turns: type it again once this one ends; Ctrl-C aborts it)`)
      return undefined
    }
    switch (name) {
      case "/exit":
      case "/quit":
        return { _tag: "Exit" } as const
      case "/help":
        note(context, help)
        return undefined
      case "/usage":
        note(context, usageReport(state))
        return undefined
      case "/compact":
        // after the running turn, if any; what it did (or why it failed) is logged and shown as events
        yield* Effect.forkScoped(
          agent.compact().pipe(
            Effect.tap((report) => (report.applied.length === 0 ? Effect.sync(() => note(context, "(nothing to compact yet)")) : Effect.void)),
            Effect.ignore
          )
        )
        return undefined
      case "/new":
        return state.running ? idleOnly() : ({ _tag: "New" } as const)
      case "/sessions": {
        if (settings.sessions === "memory") {
          note(context, "(sessions are kept in memory: --sessions memory)")
          return undefined
        }
        const sessions = yield* Store.list(settings.sessions.directory).pipe(Effect.option)
        const shown = Option.getOrElse(sessions, () => [])
        const rows = shown.slice(0, 20).map((s) =>
          `${s.id === state.sessionId ? "*" : " "} ${s.id}  ${Store.localTime(s.lastActivity)}  ${Render.preview(s.firstMessage, 50)}`
        )
        note(context, rows.length === 0 ? "(no sessions yet)" : rows.join("\n"))
        return undefined
      }
      case "/resume": {
        if (state.running) return idleOnly()
        if (settings.sessions === "memory") {
          note(context, "(nothing to resume: --sessions memory keeps no sessions)")
          return undefined
        }
        const id = yield* Store.resolveId(settings.sessions.directory, argument === "" ? undefined : argument).pipe(Effect.result)
        if (id._tag === "Failure") {
          note(context, `(${id.failure.message})`)
          return undefined
        }
        return { _tag: "Resume", id: id.success } as const
      }
      default:
        note(context, `(unknown command ${name}: /help lists them)`)
        return undefined
    }
  })

/** A line the user submitted: a command, a message, a queued message or steering. */
const onLine = (context: Context, agent: Agent.Agent, text: string) =>
  Effect.gen(function*() {
    if (text.trim() === "") return undefined
    if (text.startsWith("/")) return yield* slash(context, agent, text)
    if (!context.state.running) {
      // steering with nothing running is a message, as agent.steer makes it: without the prefix
      const message = text.startsWith(steerPrefix) ? text.slice(steerPrefix.length).trim() : text
      if (message === "") return undefined
      // the turn it starts runs from now: lines typed before its status arrives (a paste, a
      // quick /new) are queued or refused as during it, never run against it (set before the
      // send, so the turn's own statuses, however fast, come after it)
      context.state.running = true
      yield* agent.send(message)
      return undefined
    }
    if (text.startsWith(steerPrefix)) {
      const steering = text.slice(steerPrefix.length).trim()
      if (steering === "") return undefined
      // shown as "↳ steering" once the turn takes it, at its next step; until then, this
      note(context, `(steering at the next step: ${Render.preview(steering, 60)})`)
      yield* agent.steer(steering)
      return undefined
    }
    note(context, `(queued: ${Render.preview(text, 60)})`)
    yield* agent.send(text)
    return undefined
  })

/** Ctrl-C: aborts the turn; at the prompt, arms the exit, or exits when it is armed. */
const onInterrupt = (context: Context, agent: Agent.Agent) =>
  Effect.gen(function*() {
    const { state } = context
    if (state.running) {
      setPhase(context, "aborting")
      yield* Effect.forkScoped(agent.abort("interrupted by the user (Ctrl-C)"))
      return undefined
    }
    if (state.exitArmed) return { _tag: "Exit" } as const
    state.exitArmed = true
    note(context, "(Ctrl-C again to exit, or /exit)")
    return undefined
  })

const banner = (context: Context, resumed: boolean, events: ReadonlyArray<SessionEvent.SessionEvent>) => {
  const { settings, state, style } = context
  const kept = settings.sessions === "memory" ? "in memory" : "persisted"
  const turns = events.filter((e) => e.type === "turn/start").length
  if (resumed && turns > 0) {
    const lastTurn = events.findLastIndex((e) => e.type === "turn/start")
    context.screen.line(Render.conversation(events.slice(lastTurn), style).trimEnd())
  }
  note(
    context,
    `dsh · ${settings.provider.name} · ${settings.model} · session ${state.sessionId} (${resumed ? `resumed, ${turns} turn${turns === 1 ? "" : "s"}` : "new"}, ${kept}) · /help`
  )
}

/** One session: an agent for its scope, its events on the screen, the user's lines to it. */
const converse = (context: Context, source: Runtime.Source, resumed: boolean) =>
  Effect.gen(function*() {
    const { state } = context
    const agent = yield* Runtime.agent(context.settings, source)
    state.sessionId = agent.session.id
    // a resumed session's turns and usage so far count: /usage is the session's, not this process's
    const past = yield* agent.session.events
    state.turns = past.filter((event) => event.type === "turn/end").length
    state.sessionUsage = past.reduce(
      (sum, event) => (event.type === "usage" ? Usage.add(sum, event.data.usage) : sum),
      Usage.empty
    )
    state.running = false
    banner(context, resumed, past)
    yield* Runtime.verify
    yield* Effect.forkScoped(Stream.runForEach(agent.events, (event) => Effect.sync(() => onEvent(context, event))), {
      startImmediately: true
    })
    drawInput(context)
    for (;;) {
      const submission = yield* Queue.take(context.submissions)
      const next: Next | undefined = yield* dispatch(context, agent, submission)
      if (next === undefined) continue
      if (state.running) yield* agent.abort("the user left the session")
      return next
    }
  }).pipe(Effect.scoped)

const dispatch = (context: Context, agent: Agent.Agent, submission: Submission) => {
  switch (submission._tag) {
    case "Line":
      return onLine(context, agent, submission.text)
    case "Interrupt":
      return onInterrupt(context, agent)
    case "End":
      return Effect.succeed({ _tag: "Exit" } as const)
    case "TurnEnded":
      // with --dev, a violation of the event contract ends the chat
      return Effect.as(Runtime.verify, undefined)
  }
}

/** Sessions one after the other, until the user exits. */
const sessions = (context: Context, first: Next) =>
  Effect.gen(function*() {
    context.state.pricing = yield* Runtime.pricing(context.settings)
    let next: Next = first
    for (;;) {
      if (next._tag === "Exit") return
      if (next._tag === "New") {
        next = yield* converse(context, { id: Runtime.sessionId() }, false)
        continue
      }
      const id = next.id
      next = yield* Effect.gen(function*() {
        const resumed = yield* Store.open(id).pipe(Effect.provideService(Io.Io, silentIo(context)))
        return yield* converse(context, { resume: resumed.session }, true)
      }).pipe(Effect.scoped)
    }
  })

/** Resume's notes go to the transcript (the repairs are also logged, and shown from the log). */
const silentIo = (context: Context): Io.Io["Service"] => ({
  out: (text) => Effect.sync(() => context.screen.line(text.trimEnd())),
  err: (text) => Effect.sync(() => note(context, text.trimEnd())),
  stdoutClosed: Effect.never,
  stdoutClosedYet: Effect.succeed(undefined),
  readStdin: Effect.succeed(""),
  stdinIsTerminal: Effect.succeed(true),
  stdoutIsTerminal: Effect.succeed(true),
  stderrIsTerminal: Effect.succeed(true)
})

/**
 * What `dsh chat` (and `dsh resume` without a prompt) takes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Input {
  readonly flags: Config.Flags
  /** The session to resume; a new one when undefined. */
  readonly resume: string | undefined
}

/**
 * `dsh chat`.
 *
 * @since 0.1.0
 * @category commands
 */
export const command = (input: Input, env: Config.Environment) =>
  Effect.gen(function*() {
    const settings = yield* Config.load(input.flags, env)
    const io = yield* Io.Io
    if (!(yield* io.stdinIsTerminal) || !(yield* io.stdoutIsTerminal)) {
      return yield* new ConfigInvalidError({
        message: "dsh chat needs a terminal on stdin and stdout; for scripts and pipes use dsh run",
        field: "terminal",
        source: "stdin/stdout"
      })
    }
    const apiKey = yield* Config.apiKey(settings)
    yield* Effect.gen(function*() {
      const terminal = yield* NodeTerminal.make(() => false)
      const style = Render.styleFor(true, env)
      // A closed terminal (its window shut, its tmux pane killed) fails the next write with EIO:
      // without a listener that error would end the process before the turn is written. It is
      // the terminal's hang-up, handled as SIGHUP: the turn ends disposed and is written, exit 130.
      let terminalGone = false
      const onTerminalError = () => {
        if (terminalGone) return
        terminalGone = true
        Io.raise("SIGHUP")
      }
      process.stdout.on("error", onTerminalError)
      process.stdin.on("error", onTerminalError)
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          // a gone terminal keeps its listener: the process's last writes on the way out fail too
          if (terminalGone) return
          process.stdout.off("error", onTerminalError)
          process.stdin.off("error", onTerminalError)
        })
      )
      const screen = Screen.make(
        { write: (text) => void (terminalGone || process.stdout.write(text)), columns: () => process.stdout.columns ?? 80 },
        { dim: style !== Render.plain }
      )
      yield* Effect.addFinalizer(() => Effect.sync(() => screen.close()))
      const context: Context = { settings, state: initialState(), screen, style, submissions: yield* Queue.unbounded<Submission>() }
      const onResize = () => screen.redraw()
      process.stdout.on("resize", onResize)
      yield* Effect.addFinalizer(() => Effect.sync(() => void process.stdout.off("resize", onResize)))
      yield* Effect.forkScoped(keyboard(context, terminal))
      yield* Effect.forkScoped(spinner(context))
      const first: Next = input.resume === undefined ? { _tag: "New" } : { _tag: "Resume", id: input.resume }
      yield* sessions(context, first).pipe(
        Effect.provide(Runtime.layer(settings, Runtime.model(settings, apiKey), PermissionPrompt.layer(ask(context))))
      )
      screen.close()
      if (settings.sessions !== "memory" && context.state.sessionId !== "") {
        yield* io.err(style.dim(`dsh: session ${context.state.sessionId} · dsh resume ${context.state.sessionId}\n`))
      }
    }).pipe(Effect.scoped, Report.reported(hintContext(settings)))
  })
