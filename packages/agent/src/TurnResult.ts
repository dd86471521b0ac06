/**
 * What one turn produced, for `agent.run(input)`: the call that sends a message, waits for
 * the turn that answers it and returns the answer — the final text, the turn's messages, its
 * tool calls with their results, the usage summed over its steps, how it ended — and, with an
 * `output` Schema, the answer decoded and typed.
 *
 * A turn that did not answer fails the call with a typed error: the turn's own failure (the
 * `LlmError`, `MiddlewareError`, … that ended it, or `TurnDefectError` for a bug), a
 * {@link TurnAbortedError} when it was aborted, a {@link TurnLimitError} when a guard stopped it,
 * an {@link InvalidOutputError} when the answer never decoded through the output Schema.
 *
 * @since 0.1.0
 */
import { Content, HarnessError, History, Usage } from "@dsh/llm"
import { Derivation, type SessionEvent } from "@dsh/session"
import * as Schema from "effect/Schema"

/**
 * Options of `agent.run`.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions<A = never> {
  /** Who the message is from (its `source`): `"user"` by default. */
  readonly source?: string
  /**
   * The Schema of the answer. The model is offered a `final_answer` tool whose parameters are
   * this Schema (a struct or a `Schema.Class` as it is; any other Schema wrapped as
   * `{ answer }`). An answer given as JSON text is accepted too, and for a wrapped Schema so is
   * plain text that decodes as a string (prose answers `Schema.String`). An answer that does
   * not decode goes back to the model with every violation, under the agent's `maxInvalidArgs`
   * budget. The decoded answer is the result's `output`. A Schema JSON cannot carry (a
   * `Schema.declare` without a `toCodecJson` annotation, anywhere in it) fails the call with
   * `INVALID_TOOL` before any request. During such a run `final_answer` is the answer's tool: a
   * registered tool of that name is not offered to the model (name yours otherwise).
   */
  readonly output?: Schema.Codec<A, any>
}

/**
 * A tool call of the turn with the result that answered it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolExchange {
  readonly call: Content.ToolCallBlock
  readonly result: Content.ToolResultBlock
}

/**
 * What a turn produced.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnResult<A = undefined> {
  /** The turn's number in its session. */
  readonly turn: number
  /** The text of the turn's last assistant message ("" when it had none). */
  readonly text: string
  /** The turn's messages, as the model saw and wrote them (derived from the log). */
  readonly messages: History.History
  /** Every tool call of the turn, in order, with its result. */
  readonly toolCalls: ReadonlyArray<ToolExchange>
  /**
   * The usage of the turn's model calls, summed over its steps (a summary a compaction wrote
   * during the turn keeps its own, in its `compaction/applied` event).
   */
  readonly usage: Usage.Usage
  /** How the turn ended: `completed`. */
  readonly reason: SessionEvent.TurnEndReason
  /** The decoded answer, with `output`; `undefined` without. */
  readonly output: A
}

/**
 * The turn that was to answer was aborted (or disposed of with its agent).
 *
 * @since 0.1.0
 * @category errors
 */
export class TurnAbortedError extends Schema.TaggedError<TurnAbortedError>()("TurnAbortedError", {
  ...HarnessError.fields("ABORTED"),
  turn: Schema.Int,
  reason: Schema.optionalKey(Schema.String)
}) {}

/**
 * The turn stopped at a guard before it answered (`max-steps`, or repeated invalid arguments
 * for one tool); `limit` names it.
 *
 * @since 0.1.0
 * @category errors
 */
export class TurnLimitError extends Schema.TaggedError<TurnLimitError>()("TurnLimitError", {
  ...HarnessError.fields("TURN_LIMIT"),
  turn: Schema.Int,
  limit: Schema.String
}) {}

/**
 * The model's answer never decoded through the run's output Schema within the retry budget
 * (or the turn ended without one); the message says what was wrong last.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidOutputError extends Schema.TaggedError<InvalidOutputError>()("InvalidOutputError", {
  ...HarnessError.fields("INVALID_OUTPUT"),
  turn: Schema.Int
}) {}

/**
 * Something inside a turn died with an exception that is not a harness error (a bug). The
 * turn ends with an `error` event carrying this code; the agent goes on; `agent.run` fails
 * with it.
 *
 * @since 0.1.0
 * @category errors
 */
export class TurnDefectError extends Schema.TaggedError<TurnDefectError>()("TurnDefectError", {
  ...HarnessError.fields("DEFECT")
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [TurnAbortedError, TurnLimitError, InvalidOutputError, TurnDefectError] as const

/**
 * The result of the turn whose events are `events` (its `turn/start` to its `turn/end`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromEvents = <A>(
  turn: number,
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  output: A
): TurnResult<A> => {
  let text = ""
  let usage = Usage.empty
  let reason: SessionEvent.TurnEndReason = { kind: "completed" }
  const calls = new Map<string, Content.ToolCallBlock>()
  const toolCalls: Array<ToolExchange> = []
  for (const event of events) {
    switch (event.type) {
      case "assistant/message":
        text = textOf(event.data.content)
        break
      case "usage":
        usage = Usage.add(usage, event.data.usage)
        break
      case "tool/call":
        calls.set(event.data.callId, Content.toolCall(event.data.callId, event.data.name, event.data.arguments))
        break
      case "tool/result": {
        const call = calls.get(event.data.callId)
        if (call !== undefined) toolCalls.push({ call, result: resultBlock(event.data) })
        break
      }
      case "turn/end":
        reason = event.data.reason
        break
    }
  }
  return { turn, text, messages: messagesOf(events), toolCalls, usage, reason, output }
}

const textOf = (content: ReadonlyArray<Content.ContentBlock>): string =>
  content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("")

const resultBlock = (data: SessionEvent.DataOf<"tool/result">): Content.ToolResultBlock =>
  data.error === undefined
    ? Content.toolResult({ toolCallId: data.callId, content: data.content, isError: data.isError })
    : Content.toolResult({ toolCallId: data.callId, content: data.content, isError: data.isError, error: data.error })

const messagesOf = (events: ReadonlyArray<SessionEvent.SessionEvent>): History.History =>
  events.length === 0 ? History.empty : Derivation.derive(events)
