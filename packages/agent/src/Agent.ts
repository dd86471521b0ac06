/**
 * The agent handle and the factory service everything programs against. The one
 * implementation is `@dsh/loop`'s Layer, which only the application's composition root
 * provides; libraries, tools and tests depend on this interface.
 *
 * @since 0.1.0
 */
import { type Content, HarnessError, type Ids, type LlmError, type Middleware } from "@dsh/llm"
import type { ModelErrors } from "@dsh/model"
import type { PromptSectionError } from "@dsh/prompt"
import type { ToolErrors } from "@dsh/tools"
import type { Session, SessionEvent, SessionErrors } from "@dsh/session"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type * as TurnResult from "./TurnResult.ts"

/**
 * An agent's status: `idle` (waiting for a message), `running` (in a turn), `disposed`
 * (its scope closed; it takes nothing more).
 *
 * @since 0.1.0
 * @category models
 */
export type Status = "idle" | "running" | "disposed"

/**
 * What can be sent to an agent: text, or content blocks.
 *
 * @since 0.1.0
 * @category models
 */
export type Input = string | ReadonlyArray<Content.ContentBlock>

/**
 * Options of `send`, `steer` and `inject`.
 *
 * @since 0.1.0
 * @category models
 */
export interface MessageOptions {
  /** Who the message is from (logged as its `source`): `"user"` by default, `"context"` for `inject`. */
  readonly source?: string
}

/**
 * The agent was disposed; it takes no more messages.
 *
 * @since 0.1.0
 * @category errors
 */
export class AgentDisposedError extends Schema.TaggedError<AgentDisposedError>()("AgentDisposedError", {
  ...HarnessError.fields("AGENT_DISPOSED"),
  agentId: Schema.String
}) {}

/**
 * A message given to `send`, `steer` or `inject` is neither text nor valid content blocks
 * (possible only past the types, e.g. from JavaScript or decoded JSON). Nothing was queued or
 * logged: a malformed block in the log could never be persisted nor sent to a provider.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidInputError extends Schema.TaggedError<InvalidInputError>()("InvalidInputError", {
  ...HarnessError.fields("INVALID_INPUT"),
  agentId: Schema.String
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
/**
 * The most steps one turn may take when `Options.maxSteps` is not given.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMaxSteps = 50

export const classes = [AgentDisposedError, InvalidInputError] as const

/**
 * A typed failure of a class dsh does not know — a middleware's own error, say — that ended a
 * turn. At run time it is that error as it is; its type matches no tag literal, so
 * `Effect.catchTag` narrows `RunError` to the classes dsh knows.
 *
 * @since 0.1.0
 * @category models
 */
export interface OtherTurnError extends HarnessError.HarnessError {
  readonly _tag: string & { readonly OtherTurnError: true }
}

/**
 * How `agent.run` fails: a tagged error of a turn that did not answer, or the turn's own typed
 * failure — the `LlmError`s, a middleware's `MiddlewareError`, `NoModelError`,
 * `PromptSectionError`, `AbortedError` (a finish of kind aborted), `InvalidToolError` (an
 * output Schema without a JSON Schema), `TurnDefectError` for a bug — or another harness error
 * ({@link OtherTurnError}).
 *
 * @since 0.1.0
 * @category models
 */
export type RunError =
  | TurnResult.TurnAbortedError
  | TurnResult.TurnLimitError
  | TurnResult.InvalidOutputError
  | TurnResult.TurnDefectError
  | AgentDisposedError
  | InvalidInputError
  | LlmError.LlmError
  | Middleware.MiddlewareError
  | ModelErrors.NoModelError
  | PromptSectionError
  | ToolErrors.AbortedError
  | ToolErrors.InvalidToolError
  | OtherTurnError

/**
 * A running agent.
 *
 * @since 0.1.0
 * @category models
 */
export interface Agent {
  readonly id: Ids.AgentId
  /** The agent's session: its whole log. */
  readonly session: Session.Session
  /** Queues a message; starts a turn when idle. */
  readonly send: (input: Input, options?: MessageOptions) => Effect.Effect<void, AgentDisposedError | InvalidInputError>
  /**
   * Sends a message, waits for the turn that answers it, and returns what that turn produced
   * (see `TurnResult`): its final text, messages, tool calls with their results, usage summed
   * over its steps — and, with `output`, the answer decoded through that Schema and typed. A
   * turn that did not answer fails with a typed error: the turn's own failure (its `LlmError`,
   * `MiddlewareError`, …, `TurnDefectError` for a bug), `TurnAbortedError`, `TurnLimitError`,
   * `InvalidOutputError`, or `AgentDisposedError` when the agent was disposed first.
   * Interrupting `run` aborts its turn (or drops its message if no turn took it yet). A turn
   * takes every message queued when it starts, so `run`s sent together are answered by one
   * turn. `run` returns once the agent has settled after its turn: `idle`, or on to the next
   * queued message's turn (not waited for). With `output` and a registered tool named
   * `final_answer` (the name the answer is given through) it fails at once with
   * `InvalidInputError`. Called
   * from inside the agent's own turn (a tool, a listener), which it would wait for, it fails
   * at once with `InvalidInputError`; `send` queues a message from there. The same holds
   * through other agents: a turn that another agent's `run` waits for runs inside that agent
   * (A's tool runs B, B's tool runs A: refused, where it would wait on itself).
   */
  readonly run: {
    <A>(
      input: Input,
      options: TurnResult.RunOptions<A> & { readonly output: Schema.Codec<A, any> }
    ): Effect.Effect<TurnResult.TurnResult<A>, RunError>
    (input: Input, options?: TurnResult.RunOptions): Effect.Effect<TurnResult.TurnResult, RunError>
  }
  /**
   * Injects a message between the steps of the running turn; like `send` when idle. Steering
   * that arrives during the turn's last step (its typed answer given, `maxSteps` or the
   * invalid-arguments limit reached) is not logged in it, which no step would answer: it
   * becomes the next turn's message.
   */
  readonly steer: (input: Input, options?: MessageOptions) => Effect.Effect<void, AgentDisposedError | InvalidInputError>
  /**
   * Appends a `context/message` without starting a turn. A listener that fails on it cannot
   * fail `inject`: its failure is recorded as an `error` event.
   */
  readonly inject: (input: Input, options?: MessageOptions) => Effect.Effect<void, AgentDisposedError | InvalidInputError>
  /**
   * Aborts the running turn, or, when none is running, the turn that the queued messages will
   * start (an abort right after `send` is never lost: that turn logs its messages and ends
   * `aborted` before any step). The turn's work is interrupted; what is still running after
   * `abortGrace` (an uninterruptible tool body, a stalled flush) is detached, its late results
   * dropped. Returns once the turn has ended — within twice `abortGrace` of the call (once for
   * the work, once for the turn's closing and flush) — except when called from inside the
   * agent (a tool, a listener), where it returns at once. Messages
   * queued behind the running turn are served next. A running `compact()` is aborted like a
   * turn; with nothing running, one asked for and not started yet fails `ABORTED` without
   * running. No-op when nothing is running or queued. The reason is logged in `turn/end` and
   * carried by `TurnAbortedError`; one that is not text (past the types) is kept as its
   * description.
   */
  readonly abort: (reason?: string) => Effect.Effect<void>
  /** The status now. */
  readonly status: Effect.Effect<Status>
  /** The status now, then every change; it ends with `disposed`. */
  readonly statusChanges: Stream.Stream<Status>
  /**
   * Every event the agent logs from the moment of subscription (status changes included),
   * until disposal: the stream ends with the agent's `disposed` status, also on a session that
   * outlives the agent (one resumed from its store); subscribed after the disposal, it ends at
   * once.
   */
  readonly events: Stream.Stream<SessionEvent.SessionEvent>
  /**
   * Waits until the agent is idle with nothing queued (or disposed). Called from inside the
   * agent's own turn (a tool, a listener), where it would wait for itself, it fails with
   * `InvalidInputError` (`INVALID_INPUT`) at once.
   */
  readonly awaitIdle: Effect.Effect<void, InvalidInputError>
  /**
   * Compacts the history now (between turns: after the running one, before queued messages):
   * prunes, then summarizes the completed turns before the newest `keepTurns`. A summarizer
   * that fails fails the call with its typed error, and the history stays as it was.
   */
  readonly compact: () => Effect.Effect<CompactionReport, RunError>
}

/**
 * Where an agent's session comes from: a fresh one (optionally with an id), a seed log
 * (replay), a fork of another session (its log up to the last completed turn; with `through`,
 * up to the last turn completed at or before that seq — a fork from before a compaction does
 * not inherit it), or an open
 * session to continue (`resume`, e.g. the `session` that `JsonlSessions.resume(id)` returned: the
 * agent appends to it, so it keeps its id and its file). A log that ends inside a turn (a
 * crash) has that turn closed `interrupted` before the agent serves (see `Closing`).
 *
 * @since 0.1.0
 * @category models
 */
export type SessionSource =
  | { readonly id?: string }
  | { readonly id?: string; readonly seed: ReadonlyArray<SessionEvent.SessionEvent> }
  | { readonly id?: string; readonly fork: Session.Session; readonly through?: number }
  | { readonly resume: Session.Session }

/**
 * How to create an agent.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The model to call (routed by the model registry). */
  readonly model: string
  /** The agent's id; a random UUID when omitted. */
  readonly id?: string
  /** The agent's own prompt, after the system prompt's sections. */
  readonly prompt?: string
  readonly session?: SessionSource
  /** The most steps one turn may take before it ends with reason `limit` (`max-steps`); {@link defaultMaxSteps} by default. */
  readonly maxSteps?: number
  /**
   * After this many consecutive `INVALID_ARGS` results for the same tool in a turn, the turn
   * ends with reason `limit` (`invalid-args`) instead of looping; 3 by default.
   */
  readonly maxInvalidArgs?: number
  /**
   * How long an abort (or the agent's disposal) waits for the interrupted work to stop before
   * it detaches it and ends the turn anyway; 2 seconds by default, zero or more (anything else
   * is `InvalidInputError` at creation). Measured on Effect's `Clock` (under `TestClock`,
   * advance it to let the grace pass).
   */
  readonly abortGrace?: Duration.Input
  readonly temperature?: number
  readonly maxTokens?: number
  readonly providerOptions?: Record<string, Schema.Json>
  /** Context management: when and how the history is compacted (see {@link CompactionOptions}). */
  readonly compaction?: CompactionOptions
}

/**
 * How an agent keeps its requests within the model's context window. Compaction is data in
 * the log (`compaction/applied`, `compaction/failed`); the history is derived from it.
 *
 * Before each step the loop estimates the size of the next request (the provider's reported
 * usage of the previous step, plus four characters a token for what was appended since). Past
 * `threshold` of the window it first **prunes** (old tool results larger than `prune.minChars`
 * become stubs naming the tool, the size and the seq of the original), then, if that is not
 * enough, **summarizes** the completed turns before the newest `keepTurns` with a model call.
 * A provider's context-length-exceeded answer (`LLM_CONTEXT_OVERFLOW`) compacts and retries the
 * step once. A compaction never separates a tool call from its result, never touches the
 * turn in progress, the system prompt or the tool schemas, and a failed or aborted one leaves
 * the history as it was (and says so in the log).
 *
 * @since 0.1.0
 * @category models
 */
export interface CompactionOptions {
  /** The share of the context window a request may fill before compacting; 0.8 by default; `false`: only on demand and on overflow. */
  readonly threshold?: number | false
  /** The context window in tokens, when the model registry does not know it (`registry.info`). */
  readonly contextWindow?: number
  /** How many of the newest completed turns stay verbatim; 2 by default. */
  readonly keepTurns?: number
  /** Old tool results larger than `minChars` characters (2,000 by default) are pruned first; `false` never prunes. */
  readonly prune?: false | { readonly minChars?: number }
  /** The model that writes summaries; the agent's own by default. */
  readonly model?: string
  /** The summarizer's instruction (its system prompt); `Compaction.defaultPrompt` by default. */
  readonly prompt?: string
  /** The summary's budget in tokens; 1,500 by default. */
  readonly maxSummaryTokens?: number
}

/**
 * What `agent.compact` did: the compactions it applied (prune and summary events' data) and
 * the estimated size of the next request before and after.
 *
 * @since 0.1.0
 * @category models
 */
export interface CompactionReport {
  readonly applied: ReadonlyArray<SessionEvent.Compaction>
  readonly tokensBefore: number
  readonly tokensAfter: number
}

/**
 * Creates agents. An agent lives until the scope it was created in closes; then it is
 * disposed (a running turn ends `disposed`, within `abortGrace`). `create` fails with
 * `SessionExistsError` for a session id the store holds already, and with
 * `SessionLockedError` for a `resume` of a session another agent drives (a session has one
 * writer), and with `InvalidInputError` for options out of their ranges or of another shape (a
 * `resume` or `fork` that is no session, options that are no object), each one named.
 *
 * @since 0.1.0
 * @category services
 */
export class Agents extends Context.Service<Agents, {
  readonly create: (
    options: Options
  ) => Effect.Effect<Agent, SessionErrors.SessionExistsError | SessionErrors.SessionLockedError | InvalidInputError, Scope.Scope>
}>()("@dsh/agent/Agents") {}
