/**
 * Closing what a log left open, under the event contract: the one mechanism for ending a step
 * or a turn that did not end on its own — an abort, a failure, a disposal in the loop, and a
 * crash found when a session is resumed.
 *
 * Everything is computed from the log itself, so whoever closes needs no bookkeeping of its
 * own: for the open step, the partial answer its chunks carry (text and reasoning) becomes its
 * `assistant/message` when none was logged; every tool call of the step's message that lacks
 * them gets its `tool/call` and its `tool/result` (from `answer`); then `step/end`, and, with a
 * `reason`, `turn/end`. The derived history is then one a provider accepts and the invariants
 * hold.
 *
 * @since 0.1.0
 */
import { Assembler, Content, type Ids, type StreamChunk } from "@dsh/llm"
import * as Effect from "effect/Effect"
import type { Session } from "./Session.ts"
import { ToolOutcomeUnknownError } from "./SessionError.ts"
import type { CoreType, DataOf, SessionEvent, TurnEndReason } from "./SessionEvent.ts"

/**
 * An event to append: a core type with its data.
 *
 * @since 0.1.0
 * @category models
 */
export type Pending = { readonly [T in CoreType]: { readonly type: T; readonly data: DataOf<T> } }[CoreType]

/**
 * The turn a log leaves open.
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenTurn {
  readonly turn: number
  /** The `seq` of its `turn/start`. */
  readonly start: number
  /** The step left open, if any. */
  readonly step: number | undefined
}

/**
 * The turn a log leaves open (its last `turn/start` has no `turn/end`), if any.
 *
 * @since 0.1.0
 * @category utils
 */
export const openTurn = (events: ReadonlyArray<SessionEvent>): OpenTurn | undefined => {
  let step: number | undefined
  let stepClosed = false
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    switch (event.type) {
      case "turn/end":
        return undefined
      case "step/end":
        if (step === undefined) stepClosed = true
        break
      case "step/start":
        if (step === undefined && !stepClosed) step = event.data.step
        stepClosed = true
        break
      case "turn/start":
        return { turn: event.data.turn, start: event.seq, step }
    }
  }
  return undefined
}

/**
 * Options of {@link plan} and {@link close}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The result of a call of the open step that has none (e.g. `ABORTED`, `TOOL_OUTCOME_UNKNOWN`). */
  readonly answer: (call: Content.ToolCallBlock) => Content.ToolResultBlock
  /** How the open turn ends; without it only the open step is closed. */
  readonly reason?: TurnEndReason | undefined
}

/** What the open step logged: its chunks, its message and which calls were announced and answered. */
interface StepRecord {
  readonly turn: number
  readonly step: number
  readonly chunks: Array<StreamChunk.StreamChunk>
  message: ReadonlyArray<Content.ContentBlock> | undefined
  readonly called: Set<Ids.CallId>
  readonly answered: Set<Ids.CallId>
}

const recordOf = (events: ReadonlyArray<SessionEvent>, open: OpenTurn): StepRecord | undefined => {
  if (open.step === undefined) return undefined
  const record: StepRecord = {
    turn: open.turn,
    step: open.step,
    chunks: [],
    message: undefined,
    called: new Set(),
    answered: new Set()
  }
  // events are indexed by seq when the array holds the whole log, and start at the turn otherwise
  const from = events.length > 0 && events[0]!.seq <= open.start ? open.start - events[0]!.seq : 0
  let inStep = false
  for (let i = from; i < events.length; i++) {
    const event = events[i]!
    if (event.type === "step/start" && event.data.step === open.step) inStep = true
    if (!inStep) continue
    switch (event.type) {
      case "assistant/chunk":
        record.chunks.push(event.data.chunk)
        break
      case "assistant/message":
        record.message = event.data.content
        break
      case "tool/call":
        record.called.add(event.data.callId)
        break
      case "tool/result":
        record.answered.add(event.data.callId)
        break
    }
  }
  return record
}

/** The partial answer of a step cut short: the text and reasoning its chunks carry. */
const partialAnswer = (chunks: ReadonlyArray<StreamChunk.StreamChunk>): ReadonlyArray<Content.ContentBlock> =>
  chunks.length === 0
    ? []
    : Assembler.assemble(chunks).message.content.filter((block) =>
      (block.type === "text" || block.type === "reasoning") && block.text !== ""
    )

const closeStep = (record: StepRecord, options: Options): Array<Pending> => {
  const { step, turn } = record
  const out: Array<Pending> = []
  let content = record.message
  if (content === undefined) {
    const partial = partialAnswer(record.chunks)
    if (partial.length > 0) out.push({ type: "assistant/message", data: { turn, step, content: partial } })
    content = partial
  }
  const answered = new Set(record.answered)
  for (const block of content) {
    if (block.type !== "tool-call" || answered.has(block.id)) continue
    answered.add(block.id)
    if (!record.called.has(block.id)) {
      out.push({
        type: "tool/call",
        data: { turn, step, callId: block.id, name: block.name, arguments: block.arguments }
      })
    }
    out.push({ type: "tool/result", data: resultData(turn, step, block.id, options.answer(block)) })
  }
  out.push({ type: "step/end", data: { turn, step } })
  return out
}

/**
 * The data of the `tool/result` answering a call: the result's content and error, with the
 * call's own id whatever the result says.
 *
 * @since 0.1.0
 * @category utils
 */
export const resultData = (
  turn: number,
  step: number,
  callId: Ids.CallId,
  result: Content.ToolResultBlock
): DataOf<"tool/result"> =>
  result.error === undefined
    ? { turn, step, callId, content: result.content, isError: result.isError }
    : { turn, step, callId, content: result.content, isError: result.isError, error: result.error }

/**
 * The events that close the open step of `events` and, given a `reason`, its open turn;
 * nothing when no turn is open. `events` is the log, or any part of it from the open turn's
 * `turn/start` on.
 *
 * @since 0.1.0
 * @category closing
 */
export const plan = (events: ReadonlyArray<SessionEvent>, options: Options): ReadonlyArray<Pending> => {
  const open = openTurn(events)
  if (open === undefined) return []
  const record = recordOf(events, open)
  const out = record === undefined ? [] : closeStep(record, options)
  if (options.reason !== undefined) out.push({ type: "turn/end", data: { turn: open.turn, reason: options.reason } })
  return out
}

/**
 * Appends {@link plan} to the session, reading its log from `from` (the open turn's
 * `turn/start` seq when the caller knows it, 0 otherwise); returns what was appended.
 *
 * @since 0.1.0
 * @category closing
 */
export const close = (
  session: Session,
  options: Options & { readonly from?: number }
): Effect.Effect<ReadonlyArray<SessionEvent>> =>
  Effect.flatMap(session.eventsFrom(options.from ?? 0), (events) =>
    Effect.forEach(plan(events, options), (pending) => session.append(pending.type, pending.data as never)))

/**
 * The answer to a call that was running when its process ended: `TOOL_OUTCOME_UNKNOWN`.
 *
 * @since 0.1.0
 * @category answers
 */
export const outcomeUnknown = (call: Content.ToolCallBlock): Content.ToolResultBlock => {
  const error = new ToolOutcomeUnknownError({
    tool: call.name,
    callId: call.id,
    message: `Tool "${call.name}" was running when the session's process ended; whether it took effect is unknown. ` +
      "Check its effect before calling it again."
  })
  return Content.toolResult({
    toolCallId: call.id,
    content: [Content.text(error.message)],
    isError: true,
    error: { tag: error._tag, code: error.code }
  })
}

/**
 * Closes a turn that a crash left open (see {@link plan}): a `session/repair` event of kind
 * `interrupted-turn` first, then the closing events, the open calls answered
 * `TOOL_OUTCOME_UNKNOWN` and the turn ended `interrupted`. Returns the repair, or `undefined`
 * when the log has no open turn.
 *
 * @since 0.1.0
 * @category closing
 */
export const closeInterrupted = (
  session: Session
): Effect.Effect<Extract<DataOf<"session/repair">, { readonly kind: "interrupted-turn" }> | undefined> =>
  Effect.gen(function*() {
    const events = yield* session.events
    const open = openTurn(events)
    if (open === undefined) return undefined
    const closing = plan(events, {
      answer: outcomeUnknown,
      reason: { kind: "interrupted", message: interruptedMessage(open) }
    })
    const calls = closing.filter((pending) => pending.type === "tool/result").length
    const repair = {
      kind: "interrupted-turn" as const,
      turn: open.turn,
      ...(open.step === undefined ? {} : { step: open.step }),
      calls,
      message: `${interruptedMessage(open)}; closed on resume${calls === 0 ? "" : `, ${calls} open tool call(s) answered TOOL_OUTCOME_UNKNOWN`}`
    }
    yield* session.append("session/repair", repair)
    for (const pending of closing) yield* session.append(pending.type, pending.data as never)
    return repair
  })

const interruptedMessage = (open: OpenTurn): string =>
  `the process ended during turn ${open.turn}${open.step === undefined ? "" : `, step ${open.step}`}`
