/**
 * Record and replay. Recording is running with JSONL persistence on (`JsonlSessions.layer`):
 * the session file is the cassette. The replay model answers requests from it: a model
 * adapter that gives the k-th request it receives the recorded chunks of the k-th recorded
 * step that made a model request — but only if the request still equals what the recording
 * asked. Otherwise its stream dies with a {@link ReplayMismatchError} (code `REPLAY_MISMATCH`)
 * naming the first difference, so a change in prompt assembly, tools or derivation is caught
 * by re-running a recorded session.
 *
 * ## What a request must equal
 *
 * For the recorded step of `model/request` event `e` (see {@link steps}):
 *
 * - `model`: the model `e` names;
 * - the settings (system prompt, tools, tool choice, sampling options): the last `settings`
 *   logged at or before `e` (the loop logs them only when they change, so they carry forward);
 * - `messages`: `Derivation.derive` of the events before `e` — what the loop built the
 *   request from.
 *
 * Equality is structural over JSON values (a key holding `undefined` counts as absent, as it
 * would after a trip through the file). The parts are compared in the order model, system,
 * tools, toolChoice, temperature, maxTokens, stop, providerOptions, messages, and the first
 * difference is reported with its path — `system`, `tools[1].name`,
 * `tools[0].parameters.properties.city.type`, `message 2 (user) / block 0 (tool-result) /
 * content[0].text` (indexes from 0) — and previews of the two values (a string difference is
 * shown around its first differing character). See {@link firstDifference}.
 *
 * ## What a matched request gets
 *
 * The step's recorded `assistant/chunk`s, then the step's recorded ending:
 *
 * - the chunks end with `finish`: the stream completes (anything that failed after the answer
 *   — a tool, a listener, a middleware — is the replayed setup's to do again);
 * - no `finish`, and the step logged an `error` before its assistant message: the model call
 *   failed. An `LLM_*` code fails the stream with that `LlmError` class and the recorded
 *   message; any other code (a middleware, a listener or the adapter died) makes the stream die
 *   with an error of that code and message. Either way the loop logs the same `error` event;
 * - no `finish` and no error: the step was interrupted (abort, disposal). The stream hangs
 *   after the chunks, so the replaying test must interrupt it again, as the recording did —
 *   unless its turn ended otherwise (`completed`, `error`, `limit`), which no run logs: the
 *   stream then dies with `REPLAY_MISMATCH` saying the recording was edited or damaged;
 * - the log ends inside the step (a crash), or a resume closed the step after a crash (its
 *   `session/repair` of kind `interrupted-turn`): the stream dies with `REPLAY_MISMATCH`.
 *
 * A request after the last recorded step dies with `REPLAY_MISMATCH` ("recording exhausted").
 * The adapter serves the models the recorded requests name (or `models`): a recording that made
 * no request names none, and a request to it fails with `NO_MODEL` unless `models` names it.
 *
 * ## Limits
 *
 * Requests are matched in the order they reach the adapter: replay one agent per replay
 * layer. The replay sits where the model adapter sits, so what it compares is the request the
 * adapter receives: model middleware (`Model.use`) or a request hook that rewrites requests
 * (redaction, compaction) makes them differ from the derivation — pass `normalize` to bring
 * both sides to the same form (it also hides volatile text, such as a date in a prompt
 * section). A recorded request that never reached an adapter (an unserved model, a model
 * middleware that answered on its own) still counts as a step.
 *
 * @since 0.1.0
 */
import { AdapterSettings, Assembler, Content, HarnessError, History, LlmError, type ModelRequest, ScopedList, type StreamChunk } from "@dsh/llm"
import { ModelErrors, ModelRegistry } from "@dsh/model"
import { Compaction, Derivation, JsonlSessions, type SessionErrors, type SessionEvent } from "@dsh/session"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"

// ---------------------------------------------------------------------------------------------
// errors

/**
 * A replayed request differs from the recording, or goes past it. The stream of the replay
 * model dies with it (its error channel is the closed `LlmError` union): through the loop the
 * turn ends with an `error` event of code `REPLAY_MISMATCH` carrying the message.
 *
 * @since 0.1.0
 * @category errors
 */
export class ReplayMismatchError extends Schema.TaggedError<ReplayMismatchError>()("ReplayMismatchError", {
  ...HarnessError.fields("REPLAY_MISMATCH"),
  /** Which request of the replay (from 1). */
  requestNumber: Schema.Int,
  /** The recorded step it was matched to; absent when the recording is exhausted. */
  turn: Schema.optionalKey(Schema.Int),
  step: Schema.optionalKey(Schema.Int),
  /** Where the first difference is (`system`, `tools[0].name`, `message 1 (user) / block 0 (text) / text`…), or `recording exhausted`. */
  part: Schema.String,
  /** A preview of the recorded value (`(absent)` when there is none). */
  expected: Schema.String,
  /** A preview of the received value (`(absent)` when there is none). */
  actual: Schema.String
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [ReplayMismatchError] as const

/**
 * A recorded failure whose code is not an `LlmError`'s, raised again as a defect with the
 * same code and message (so the loop logs the same `error` event).
 */
class RecordedFailure extends Error {
  readonly _tag = "RecordedFailure"
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.code = code
  }
}

// ---------------------------------------------------------------------------------------------
// differences

/**
 * A path into a value: object keys and array indexes.
 *
 * @since 0.1.0
 * @category models
 */
export type Path = ReadonlyArray<string | number>

/**
 * The first place where two values differ.
 *
 * @since 0.1.0
 * @category models
 */
export interface Difference {
  readonly path: Path
  /** The path in words: `model`, `system`, `tools[1].name`, `message 2 (user) / block 0 (text) / text`. */
  readonly part: string
  /** The value at `path` in the expected value; `undefined` when it has none. */
  readonly expected: unknown
  /** The value at `path` in the actual value; `undefined` when it has none. */
  readonly actual: unknown
  /** A preview of `expected` (`(absent)` when undefined), truncated. */
  readonly expectedPreview: string
  /** A preview of `actual`, truncated. */
  readonly actualPreview: string
  /** `<part>: expected <preview>, got <preview>`. */
  readonly description: string
}

// The parts of a request, in the order they are compared (other keys follow).
const requestKeys = [
  "model",
  "system",
  "tools",
  "toolChoice",
  "temperature",
  "maxTokens",
  "stop",
  "providerOptions",
  "messages"
]

const keyRank = (key: string) => {
  const rank = requestKeys.indexOf(key)
  return rank < 0 ? requestKeys.length : rank
}

const isPlainObject = (u: unknown): u is Readonly<Record<string, unknown>> => Predicate.isObject(u)

const keysOf = (expected: Readonly<Record<string, unknown>>, actual: Readonly<Record<string, unknown>>) => {
  const keys: Array<string> = []
  for (const key of Object.keys(expected)) if (expected[key] !== undefined) keys.push(key)
  for (const key of Object.keys(actual)) if (actual[key] !== undefined && expected[key] === undefined) keys.push(key)
  // stable: the request's parts in their order, any other key where it was
  return keys.map((key, i) => ({ key, i })).sort((a, b) => keyRank(a.key) - keyRank(b.key) || a.i - b.i).map((k) => k.key)
}

// A message history is compared, and walked by a path, as the array of its messages.
const flat = (u: unknown): unknown => (History.isHistory(u) ? History.toArray(u) : u)

const find = (expectedValue: unknown, actualValue: unknown, path: Array<string | number>): Path | undefined => {
  if (expectedValue === actualValue) return undefined
  const expected = flat(expectedValue)
  const actual = flat(actualValue)
  if (Array.isArray(expected) && Array.isArray(actual)) {
    const common = Math.min(expected.length, actual.length)
    for (let i = 0; i < common; i++) {
      path.push(i)
      const found = find(expected[i], actual[i], path)
      if (found !== undefined) return found
      path.pop()
    }
    return expected.length === actual.length ? undefined : [...path, common]
  }
  if (isPlainObject(expected) && isPlainObject(actual)) {
    for (const key of keysOf(expected, actual)) {
      path.push(key)
      const found = find(expected[key], actual[key], path)
      if (found !== undefined) return found
      path.pop()
    }
    return undefined
  }
  if (typeof expected === "number" && typeof actual === "number" && Number.isNaN(expected) && Number.isNaN(actual)) {
    return undefined
  }
  return [...path]
}

const at = (value: unknown, path: Path): unknown => {
  let current = value
  for (const key of path) {
    current = flat(current)
    if (!Predicate.isObjectOrArray(current)) return undefined
    current = (current as Record<string | number, unknown>)[key]
  }
  return current
}

const jsPath = (path: Path): string =>
  path.map((key, i) => (typeof key === "number" ? `[${key}]` : i === 0 ? key : `.${key}`)).join("")

const label = (value: unknown, field: "role" | "type"): string => {
  const tag = Predicate.isObject(value) ? (value as Record<string, unknown>)[field] : undefined
  return typeof tag === "string" ? ` (${tag})` : ""
}

const describePath = (expected: unknown, actual: unknown, path: Path): string => {
  if (path.length === 0) return "the value"
  const [head, index, field, block] = path
  if (head === "messages" && typeof index === "number") {
    const prefix = path.slice(0, 2)
    const message = at(expected, prefix) ?? at(actual, prefix)
    let text = `message ${index}${label(message, "role")}`
    if (field === undefined) return text
    if (field === "content" && typeof block === "number") {
      const blockPath = path.slice(0, 4)
      text += ` / block ${block}${label(at(expected, blockPath) ?? at(actual, blockPath), "type")}`
      return path.length > 4 ? `${text} / ${jsPath(path.slice(4))}` : text
    }
    return `${text} / ${jsPath(path.slice(2))}`
  }
  return jsPath(path)
}

const PREVIEW = 80
const CONTEXT = 24

const truncate = (text: string) => (text.length <= PREVIEW ? text : `${text.slice(0, PREVIEW - 1)}…`)

const json = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** Previews of two values; two strings are shown from a little before their first difference. */
const previews = (expected: unknown, actual: unknown): readonly [string, string] => {
  const one = (value: unknown) => (value === undefined ? "(absent)" : truncate(json(value)))
  if (typeof expected !== "string" || typeof actual !== "string") return [one(expected), one(actual)]
  let first = 0
  while (first < expected.length && first < actual.length && expected[first] === actual[first]) first++
  let from = first <= CONTEXT ? 0 : first - CONTEXT
  // start at a word when one starts shortly before
  if (from > 0) {
    const space = expected.lastIndexOf(" ", from)
    if (space >= 0 && from - space <= CONTEXT / 2) from = space + 1
  }
  const cut = (text: string) => {
    const shown = text.slice(from)
    const quoted = json(shown.length <= PREVIEW ? shown : shown.slice(0, PREVIEW))
    return `${from > 0 ? "…" : ""}${quoted}${shown.length > PREVIEW ? "…" : ""}`
  }
  const where = from > 0 ? ` (from char ${from})` : ""
  return [cut(expected) + where, cut(actual) + where]
}

/**
 * The first difference between two JSON-like values (plain objects, arrays, primitives, and
 * message histories, which count as the array of their messages), or `undefined` when they are
 * structurally equal. A key holding `undefined` counts as absent. Arrays are compared element
 * by element, then by length (the first extra or missing element is the difference). Object
 * keys are compared in the expected value's order, then the actual value's extra keys —
 * except that the parts of a model request come first in the order
 * model, system, tools, toolChoice, temperature, maxTokens, stop, providerOptions, messages —
 * so for two requests this is the difference the replay model reports.
 *
 * @example
 * ```ts
 * import { Replay } from "@dsh/testing"
 *
 * const difference = Replay.firstDifference(
 *   { model: "m", messages: [{ role: "user", content: [{ type: "text", text: "hello" }] }] },
 *   { model: "m", messages: [{ role: "user", content: [{ type: "text", text: "hullo" }] }] }
 * )
 * difference?.description // 'message 0 (user) / block 0 (text) / text: expected "hello", got "hullo"'
 * ```
 *
 * @since 0.1.0
 * @category differences
 */
export const firstDifference = (expected: unknown, actual: unknown): Difference | undefined => {
  const path = find(expected, actual, [])
  if (path === undefined) return undefined
  const left = at(expected, path)
  const right = at(actual, path)
  const part = describePath(expected, actual, path)
  const [expectedPreview, actualPreview] = previews(left, right)
  return {
    path,
    part,
    expected: left,
    actual: right,
    expectedPreview,
    actualPreview,
    description: `${part}: expected ${expectedPreview}, got ${actualPreview}`
  }
}

// ---------------------------------------------------------------------------------------------
// recorded steps

/**
 * How a recorded step's model call ended (see the module documentation).
 *
 * @since 0.1.0
 * @category models
 */
export type Ending =
  /** The chunks end with `finish`. */
  | { readonly _tag: "Finished" }
  /** The call failed before the answer was complete: an `error` event before the step's assistant message. */
  | { readonly _tag: "Failed"; readonly code: string; readonly message: string }
  /** No finish and no error: the step was aborted or disposed while the model answered. */
  | { readonly _tag: "Interrupted" }
  /** The log ends inside the step. */
  | { readonly _tag: "Cut" }
  /**
   * No finish and no error, yet its turn ended neither aborted nor disposed (`completed`,
   * `error`, `limit`): no run logs that, so the log was edited or damaged; `why` says so.
   */
  | { readonly _tag: "Inconsistent"; readonly why: string }

/**
 * A recorded step that made a model request: what it asked and what it got.
 *
 * @since 0.1.0
 * @category models
 */
export interface Step {
  /** Its position among the recording's requests (from 1): the replayed request it answers. */
  readonly number: number
  /**
   * `model`: a step's model request; `compaction`: a summarizing call, recorded by its
   * `compaction/applied` (answered with the summary) or `compaction/failed` (with the failure).
   */
  readonly kind: "model" | "compaction"
  readonly turn: number
  readonly step: number
  /** The `seq` of its `model/request` event. */
  readonly seq: number
  /** The request the step made: its model, the settings carried forward, the derived messages. */
  readonly request: ModelRequest.ModelRequest
  readonly chunks: ReadonlyArray<StreamChunk.StreamChunk>
  readonly ending: Ending
}

/**
 * Options of {@link steps}.
 *
 * @since 0.1.0
 * @category models
 */
export interface StepsOptions {
  /**
   * The `seq` of the first event the recording logged itself: steps before it came from a
   * seed (a fork, a replay) and are history, not requests to answer. 0 by default.
   */
  readonly from?: number
}

interface Open {
  readonly number: number
  readonly turn: number
  readonly step: number
  readonly seq: number
  readonly request: ModelRequest.ModelRequest
  readonly chunks: Array<StreamChunk.StreamChunk>
  answered: boolean
  failure: { readonly code: string; readonly message: string } | undefined
  /** Open when a resume repaired the log of a crash: its step/end is the repair's, not an interruption. */
  crashed: boolean
}

const close = (open: Open, ended: boolean): Step => {
  const last = open.chunks.at(-1)
  const ending: Ending = last?.type === "finish"
    ? { _tag: "Finished" }
    : open.failure !== undefined
    ? { _tag: "Failed", code: open.failure.code, message: open.failure.message }
    : ended
    ? { _tag: "Interrupted" }
    : { _tag: "Cut" }
  return {
    number: open.number,
    kind: "model",
    turn: open.turn,
    step: open.step,
    seq: open.seq,
    request: open.request,
    chunks: open.chunks,
    ending
  }
}

/**
 * The steps of a recorded log that made a model request, in order, each with the request it
 * made (settings carried forward from the last `model/request` that logged them, messages
 * derived from the events before it), its chunks and how its model call ended. One pass over
 * the log; the messages share structure with it.
 *
 * @since 0.1.0
 * @category recording
 */
export const steps = (
  events: Iterable<SessionEvent.SessionEvent>,
  options: StepsOptions = {}
): ReadonlyArray<Step> => {
  const from = options.from ?? 0
  const derivation = Derivation.make()
  // events not yet fed: the derivation takes them in one batch when a request needs the history
  let unfed: Array<SessionEvent.SessionEvent> = []
  const done: Array<Step> = []
  const open = new Map<string, Open>()
  let settings: SessionEvent.RequestSettings = {}
  let number = 0
  // every event so far, for the part of the history a summary replaced
  const seen: Array<SessionEvent.SessionEvent> = []
  let turn = 0
  // the steps of this turn that ended with neither finish nor error: its turn/end says whether they were stopped
  let interrupted: Array<number> = []
  const key = (turn: number, step: number) => `${turn}/${step}`
  for (const event of events) {
    seen.push(event)
    switch (event.type) {
      case "turn/start":
        turn = event.data.turn
        break
      case "compaction/applied":
      case "compaction/failed": {
        if (event.seq < from) break
        const data = event.data
        if (data.kind !== "summary" || data.through === undefined || data.model === undefined) break
        if (unfed.length > 0) {
          derivation.feed(unfed)
          unfed = []
        }
        const through = seen.findIndex((logged) => logged.seq === data.through)
        const input = Compaction.summarized(derivation.messages(), seen.slice(through + 1, -1))
        const request = Compaction.summaryRequest(input, {
          model: data.model,
          prompt: data.prompt ?? "",
          maxTokens: data.maxTokens ?? 0
        })
        done.push(compactionStep(++number, turn, event, request))
        break
      }
      case "model/request": {
        if (event.data.settings !== undefined) settings = event.data.settings
        if (event.seq < from) break
        if (unfed.length > 0) {
          derivation.feed(unfed)
          unfed = []
        }
        const request: ModelRequest.ModelRequest = {
          ...settings,
          model: event.data.model,
          messages: derivation.messages()
        }
        open.set(key(event.data.turn, event.data.step), {
          number: ++number,
          turn: event.data.turn,
          step: event.data.step,
          seq: event.seq,
          request,
          chunks: [],
          answered: false,
          failure: undefined,
          crashed: false
        })
        break
      }
      case "assistant/chunk":
        open.get(key(event.data.turn, event.data.step))?.chunks.push(event.data.chunk)
        break
      case "assistant/message":
      case "tool/call": {
        const current = open.get(key(event.data.turn, event.data.step))
        if (current !== undefined) current.answered = true
        break
      }
      case "error": {
        if (event.data.turn === undefined || event.data.step === undefined) break
        const current = open.get(key(event.data.turn, event.data.step))
        if (current !== undefined && !current.answered && current.failure === undefined) {
          current.failure = { code: event.data.code, message: event.data.message }
        }
        break
      }
      case "session/repair":
        // the process died inside these steps: a resume closed them, the recording never ended them
        if (event.data.kind === "interrupted-turn") for (const current of open.values()) current.crashed = true
        break
      case "step/end": {
        const k = key(event.data.turn, event.data.step)
        const current = open.get(k)
        if (current !== undefined) {
          open.delete(k)
          const step = close(current, !current.crashed)
          if (step.ending._tag === "Interrupted") interrupted.push(done.length)
          done.push(step)
        }
        break
      }
      case "turn/end":
        checkInterrupted(done, interrupted, event.data.reason)
        interrupted = []
        break
      default:
        break
    }
    unfed.push(event)
  }
  for (const current of open.values()) done.push(close(current, false))
  return done.sort((a, b) => a.number - b.number)
}

/**
 * Marks `Inconsistent` the steps at `indexes` of `done` (each ended with neither finish nor
 * error) when their turn ended other than stopped: answering them by hanging would hang the
 * replay for ever, waiting on an interruption the recording never made.
 */
const checkInterrupted = (done: Array<Step>, indexes: ReadonlyArray<number>, reason: SessionEvent.TurnEndReason): void => {
  if (reason.kind === "aborted" || reason.kind === "disposed" || reason.kind === "interrupted") return
  for (const index of indexes) {
    const step = done[index]!
    const why = `its step (${where(step)}) logged no finish chunk and no error, yet its turn ended ${reason.kind}, ` +
      "which no run logs: the recording was edited or damaged"
    done[index] = { ...step, ending: { _tag: "Inconsistent", why } }
  }
}

/** The recorded step of a summarizing call: its summary as a text answer, or its failure. */
const compactionStep = (
  number: number,
  turn: number,
  event: SessionEvent.SessionEvent & { readonly type: "compaction/applied" | "compaction/failed" },
  request: ModelRequest.ModelRequest
): Step => {
  const base = { number, kind: "compaction" as const, turn, step: 0, seq: event.seq, request }
  if (event.type === "compaction/applied") {
    const data = event.data as Extract<SessionEvent.Compaction, { readonly kind: "summary" }>
    const chunks = Assembler.toChunks([Content.text(data.summary)], data.usage === undefined ? {} : { usage: data.usage })
    return { ...base, chunks, ending: { _tag: "Finished" } }
  }
  const { code, message } = event.data as SessionEvent.DataOf<"compaction/failed">
  return { ...base, chunks: [], ending: code === "ABORTED" ? { _tag: "Interrupted" } : { _tag: "Failed", code, message } }
}

// ---------------------------------------------------------------------------------------------
// the replay model

const llmErrors: Record<string, (message: string) => LlmError.LlmError> = {
  LLM_AUTH: (message) => new LlmError.LlmAuthError({ message }),
  LLM_RATE_LIMIT: (message) => new LlmError.LlmRateLimitError({ message }),
  LLM_INVALID_REQUEST: (message) => new LlmError.LlmInvalidRequestError({ message }),
  LLM_CONTEXT_OVERFLOW: (message) => new LlmError.LlmContextOverflowError({ message }),
  LLM_SERVER: (message) => new LlmError.LlmServerError({ message }),
  LLM_PROTOCOL: (message) => new LlmError.LlmProtocolError({ message }),
  LLM_TRANSPORT: (message) => new LlmError.LlmTransportError({ message })
}

const where = (step: Step) => `turn ${step.turn}, step ${step.step}, seq ${step.seq}`

const ending = (step: Step, requestNumber: number): Stream.Stream<never, LlmError.LlmError> => {
  const end = step.ending
  switch (end._tag) {
    case "Finished":
      return Stream.empty
    case "Failed": {
      const make = llmErrors[end.code]
      return make === undefined ? Stream.die(new RecordedFailure(end.code, end.message)) : Stream.fail(make(end.message))
    }
    case "Interrupted":
      return Stream.never
    case "Inconsistent":
      return Stream.die(
        new ReplayMismatchError({
          message: `request ${requestNumber} cannot be answered from the recording: ${end.why}`,
          requestNumber,
          turn: step.turn,
          step: step.step,
          part: "recording inconsistent",
          expected: "(absent)",
          actual: "(absent)"
        })
      )
    case "Cut":
      return Stream.die(
        new ReplayMismatchError({
          message: `request ${requestNumber} goes past the recording: recording exhausted — the log ends inside ` +
            `its step (${where(step)}) after ${step.chunks.length} chunk${step.chunks.length === 1 ? "" : "s"}`,
          requestNumber,
          turn: step.turn,
          step: step.step,
          part: "recording exhausted",
          expected: "(absent)",
          actual: "(absent)"
        })
      )
  }
}

/**
 * The handle of the replay model: what it replays and what it received.
 *
 * @since 0.1.0
 * @category services
 */
export class Replay extends Context.Service<Replay, {
  /** The recorded steps it answers from, in order. */
  readonly steps: ReadonlyArray<Step>
  /** Every request received so far, in order. */
  readonly requests: Effect.Effect<ReadonlyArray<ModelRequest.ModelRequest>>
  /** How many recorded steps are not replayed yet. */
  readonly remaining: Effect.Effect<number>
}>()("@dsh/testing/Replay") {}

/**
 * Options of {@link layer}, besides the recording.
 *
 * @since 0.1.0
 * @category models
 */
export interface CommonOptions extends StepsOptions {
  /** The model names it serves; by default those the recorded requests name. */
  readonly models?: ReadonlyArray<string>
  /** The adapter name; `"replay"` by default. */
  readonly name?: string
  /**
   * Applied to the recorded and to the received request before they are compared: brings a
   * request rewritten by middleware, or one holding volatile text, to a comparable form.
   */
  readonly normalize?: (request: ModelRequest.ModelRequest) => ModelRequest.ModelRequest
}

/**
 * Replays recorded events.
 *
 * @since 0.1.0
 * @category models
 */
export interface EventsOptions extends CommonOptions {
  readonly events: ReadonlyArray<SessionEvent.SessionEvent>
}

/**
 * Replays a session file written by `JsonlSessions` (loaded with `JsonlSessions.loadFile`; a
 * torn last line is left out).
 *
 * @since 0.1.0
 * @category models
 */
export interface FileOptions extends CommonOptions {
  readonly file: string
}

/**
 * @since 0.1.0
 * @category models
 */
export type Options = EventsOptions | FileOptions

const make = (events: ReadonlyArray<SessionEvent.SessionEvent>, options: CommonOptions) =>
  Effect.gen(function*() {
    const registry = yield* ModelRegistry
    const recorded = steps(events, options)
    const normalize = options.normalize ?? ((request: ModelRequest.ModelRequest) => request)
    const requests: Array<ModelRequest.ModelRequest> = []

    const stream = (request: ModelRequest.ModelRequest): Stream.Stream<StreamChunk.StreamChunk, LlmError.LlmError> =>
      Stream.unwrap(Effect.sync(() => {
        requests.push(request)
        const requestNumber = requests.length
        const step = recorded[requestNumber - 1]
        if (step === undefined) {
          return Stream.die(
            new ReplayMismatchError({
              message: `request ${requestNumber} goes past the recording: recording exhausted — it holds ` +
                `${recorded.length} model request${recorded.length === 1 ? "" : "s"}`,
              requestNumber,
              part: "recording exhausted",
              expected: "(absent)",
              actual: truncate(json({ model: request.model, messages: request.messages.length }))
            })
          )
        }
        const difference = firstDifference(normalize(step.request), normalize(request))
        if (difference !== undefined) {
          return Stream.die(
            new ReplayMismatchError({
              message: `request ${requestNumber} does not match the recording (${where(step)}): ${difference.description}`,
              requestNumber,
              turn: step.turn,
              step: step.step,
              part: difference.part,
              expected: difference.expectedPreview,
              actual: difference.actualPreview
            })
          )
        }
        return Stream.concat(Stream.fromIterable(step.chunks), ending(step, requestNumber))
      }))

    const models = options.models ?? [...new Set(recorded.map((step) => step.request.model))]
    yield* ScopedList.inOpenScope(registry.register({ name: options.name ?? "replay", models, stream }))

    return Replay.of({
      steps: recorded,
      requests: Effect.sync(() => requests.slice()),
      remaining: Effect.sync(() => Math.max(0, recorded.length - requests.length))
    })
  })

/**
 * The replay model: registers an adapter answering from a recording (events, or a session
 * file) and provides its {@link Replay} handle. Requires the `ModelRegistry` (the test layer
 * provides it) and, for a file, a `FileSystem` (`NodeFileSystem.layer` from
 * `@effect/platform-node`). Options past their types (neither or both of `events` and `file`,
 * events that are no list of events, an unknown key) fail the Layer with
 * `ModelErrors.AdapterConfigError` (`LLM_CONFIG`) naming the setting, before anything is read.
 *
 * @example
 * ```ts
 * import { Replay, Testing } from "@dsh/testing"
 * import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
 * import { Layer } from "effect"
 *
 * const ReplayLayer = Replay.layer({ file: "test/cassettes/weather.jsonl" }).pipe(
 *   Layer.provideMerge(Testing.layer()),
 *   Layer.provide(NodeFileSystem.layer)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export function layer(options: EventsOptions): Layer.Layer<Replay, ModelErrors.ModelConflictError | ModelErrors.AdapterConfigError, ModelRegistry>
export function layer(
  options: FileOptions
): Layer.Layer<
  Replay,
  ModelErrors.ModelConflictError | ModelErrors.AdapterConfigError | SessionErrors.PersistenceError | SessionErrors.CorruptLogError,
  ModelRegistry | FileSystem.FileSystem
>
export function layer(
  options: Options
): Layer.Layer<
  Replay,
  ModelErrors.ModelConflictError | ModelErrors.AdapterConfigError | SessionErrors.PersistenceError | SessionErrors.CorruptLogError,
  ModelRegistry | FileSystem.FileSystem
>
export function layer(
  options: Options
): Layer.Layer<
  Replay,
  ModelErrors.ModelConflictError | ModelErrors.AdapterConfigError | SessionErrors.PersistenceError | SessionErrors.CorruptLogError,
  ModelRegistry | FileSystem.FileSystem
> {
  const problem = optionsProblem(options)
  if (problem !== undefined) {
    return Layer.effect(Replay, Effect.fail(new ModelErrors.AdapterConfigError({ message: `the replay model was not made: ${problem.message}`, setting: problem.setting })))
  }
  const events = "events" in options
    ? Effect.succeed(options.events)
    : Effect.map(JsonlSessions.loadFile(options.file), (loaded) => loaded.events)
  return Layer.effect(Replay, Effect.flatMap(events, (recorded) => make(recorded, options)))
}

const optionNames = ["events", "file", "models", "name", "normalize", "from"]

/** What is wrong with options past their types, named before anything is read or registered. */
const optionsProblem = (options: unknown): { readonly setting: string; readonly message: string } | undefined => {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    return { setting: "options", message: `its options must be { events } or { file }, got ${AdapterSettings.shown(options)}` }
  }
  const unknown = AdapterSettings.unknownKeys("the options object", options, optionNames)
  if (unknown !== undefined) return { setting: "options", message: unknown }
  const given = options as Partial<Record<"events" | "file" | "models" | "name" | "normalize" | "from", unknown>>
  if (("events" in given) === ("file" in given)) {
    return { setting: "options", message: "give the recording as exactly one of events (the logged events) or file (a session file)" }
  }
  if ("events" in given) {
    if (!Array.isArray(given.events)) return { setting: "events", message: `events must be a list of session events, got ${AdapterSettings.shown(given.events)}` }
    const index = given.events.findIndex((event: unknown) => typeof event !== "object" || event === null || typeof (event as { readonly type?: unknown }).type !== "string")
    if (index >= 0) return { setting: "events", message: `events[${index}] is no session event, got ${AdapterSettings.shown(given.events[index])}` }
  } else if (typeof given.file !== "string" || given.file === "") {
    return { setting: "file", message: `file must be the path of a session file, got ${AdapterSettings.shown(given.file)}` }
  }
  if (given.models !== undefined && !Array.isArray(given.models)) {
    return { setting: "models", message: `models must be a list of model names, got ${AdapterSettings.shown(given.models)}` }
  }
  if (given.name !== undefined && (typeof given.name !== "string" || given.name === "")) {
    return { setting: "name", message: `name must be a non-empty string, got ${AdapterSettings.shown(given.name)}` }
  }
  if (given.normalize !== undefined && typeof given.normalize !== "function") {
    return { setting: "normalize", message: `normalize must be a function of a request, got ${AdapterSettings.shown(given.normalize)}` }
  }
  if (given.from !== undefined && !(Number.isSafeInteger(given.from) && (given.from as number) >= 0)) {
    return { setting: "from", message: `from must be the seq of an event (an integer ≥ 0), got ${AdapterSettings.shown(given.from)}` }
  }
  return undefined
}
