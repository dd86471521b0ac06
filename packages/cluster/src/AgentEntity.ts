/**
 * An agent as an `effect/cluster` entity, addressed by its session id: the protocol (`Send`,
 * `Steer`, `Inject`, `Abort`, `Run`, `Events`, `Status`), and the Layer that serves it on a
 * runner from the agent graph (`Agents`) and the sessions in PostgreSQL (`PgSessions`).
 *
 * Delivery (docs/adr/0028-agents-on-effect-cluster.md):
 *
 * - `Send`, `Steer`, `Inject` and `Run` are **persisted** (`ClusterSchema.Persisted`): the
 *   request is stored in the cluster's message table before it is delivered, and delivered
 *   again to the entity's next owner when its runner dies before replying — at least once.
 *   Each carries a client-chosen `messageId` (a UUID): the request's primary key in the
 *   cluster's storage (`DshAgent/<session>/<rpc>/<messageId>`: a client retrying with the same
 *   id gets the first request's reply), and
 *   logged with the message itself as a custom content block (`MessageId`), so a delivery whose
 *   message the log already holds is answered from the log instead of delivered twice. The
 *   model never sees the block (the entity's request middleware removes it).
 * - A `Send`, `Steer` or `Inject` is **acknowledged** (it succeeds) once its message is
 *   committed in the session log in PostgreSQL: it replies `{ seq }`, the message's place in
 *   the log. A message sent while a turn runs is queued by the agent and logged when its turn
 *   starts, so its acknowledgement waits for that (a steer: for the running turn's next step).
 * - `Run` succeeds with the turn's result once the turn ended and was committed; a turn that
 *   ended without answering fails with its typed error (the turn's `LlmError`, …), a turn that
 *   its runner's death (or the agent's move) cut short with {@link TurnInterruptedError}.
 * - An agent the runner cannot create — `AgentHost`'s options out of their ranges, or a session
 *   id no session may have (the empty one) — never will be: every call of that entity fails
 *   with the agent's `InvalidInputError` (`INVALID_INPUT`, naming what is wrong), `Abort` has
 *   nothing to abort.
 * - `Abort`, `Events` and `Status` are volatile: they reach the entity's current runner, or
 *   fail. `Events` streams the session's events from a `seq`, the logged ones then every later
 *   one, until the agent stops on that runner; a dead runner's stream is not ended by the
 *   cluster, so `ClusterClient`'s `events` watches where the agent runs and resubscribes.
 *
 * @since 0.1.0
 */
import { AgentDisposedError, InvalidInputError, TurnResult } from "@dsh/agent"
import { Content, LlmError, Middleware, Usage } from "@dsh/llm"
import { ModelErrors } from "@dsh/model"
import { PromptSectionError } from "@dsh/prompt"
import { SessionEvent } from "@dsh/session"
import { ToolErrors } from "@dsh/tools"
import * as Schema from "effect/Schema"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { TurnInterruptedError } from "./ClusterErrors.ts"

/**
 * What a message may be: text, or content blocks (as `agent.send` takes).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Input = Schema.Union([Schema.String, Schema.Array(Content.ContentBlock)])

/**
 * The custom content block that carries a message's id in the session log, beside the
 * message's own content: `{ type: "custom", kind: "dsh.cluster/message", data: { id } }`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MessageId = Content.defineCustom("dsh.cluster/message", Schema.Struct({ id: Schema.String }))

const MessagePayload = {
  /** The message's id, unique in its session (a UUID): the idempotency key of its delivery. */
  messageId: Schema.String.check(Schema.isMinLength(1)),
  input: Input,
  /** Who the message is from (logged as its `source`); the agent's default when omitted. */
  source: Schema.optionalKey(Schema.String)
}

/**
 * The payload of `Send`, `Steer`, `Inject` and `Run`, as a Schema: `ClusterClient` checks a
 * message against it before sending (a message it refuses is `InvalidInputError`, never sent).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Message = Schema.Struct(MessagePayload)

/**
 * The acknowledgement of a `Send`, `Steer` or `Inject`: the message is committed in the session
 * log at `seq`. `duplicate` is true when the log already held it (a delivery again of a
 * message whose first reply was lost, or a client's retry).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Accepted = Schema.Struct({ seq: Schema.Int, duplicate: Schema.Boolean })

/**
 * @since 0.1.0
 * @category models
 */
export type Accepted = typeof Accepted.Type

/**
 * How a message is refused: the agent was disposed, or the input is neither text nor content blocks.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MessageError = Schema.Union([AgentDisposedError, InvalidInputError])

/**
 * @since 0.1.0
 * @category models
 */
export type MessageError = typeof MessageError.Type

/**
 * What a `Run` answers: the turn's number, its final text, its tool calls with their results,
 * its usage and how it ended (`completed`), as `agent.run`'s `TurnResult` has them (its derived
 * `messages` are in the session log, `Events`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const TurnReply = Schema.Struct({
  turn: Schema.Int,
  text: Schema.String,
  toolCalls: Schema.Array(Schema.Struct({ call: Content.ToolCallBlock, result: Content.ToolResultBlock })),
  usage: Usage.Usage,
  reason: SessionEvent.TurnEndReason
})

/**
 * @since 0.1.0
 * @category models
 */
export type TurnReply = typeof TurnReply.Type

/**
 * The error classes a `Run` may fail with, as `agent.run` does, plus {@link TurnInterruptedError}.
 * A turn's failure of a class dsh does not know (a middleware's own error) arrives as
 * `TurnDefectError` naming its tag and code.
 *
 * @since 0.1.0
 * @category schemas
 */
export const runErrorClasses = [
  ...TurnResult.classes,
  AgentDisposedError,
  InvalidInputError,
  ...LlmError.classes,
  Middleware.MiddlewareError,
  ModelErrors.NoModelError,
  PromptSectionError,
  ToolErrors.AbortedError,
  ToolErrors.InvalidToolError,
  TurnInterruptedError
] as const

/**
 * @since 0.1.0
 * @category schemas
 */
export const RunError = Schema.Union(runErrorClasses)

/**
 * @since 0.1.0
 * @category models
 */
export type RunError = typeof RunError.Type

/**
 * What `Status` answers: the agent's status, the `seq` its next event will get, and the runner
 * hosting it (`host:port`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const StatusReply = Schema.Struct({
  status: Schema.Literals(["idle", "running", "disposed"]),
  nextSeq: Schema.Int,
  runner: Schema.String
})

/**
 * @since 0.1.0
 * @category models
 */
export type StatusReply = typeof StatusReply.Type

const messageKey = (payload: { readonly messageId: string }) => payload.messageId

/**
 * Queues a message (`agent.send`); acknowledged once it is committed in the log.
 *
 * @since 0.1.0
 * @category rpcs
 */
export const Send = Rpc.make("Send", { payload: MessagePayload, success: Accepted, error: MessageError, primaryKey: messageKey })
  .annotate(ClusterSchema.Persisted, true)

/**
 * Steers the running turn (`agent.steer`; like `Send` when idle); acknowledged once committed.
 *
 * @since 0.1.0
 * @category rpcs
 */
export const Steer = Rpc.make("Steer", { payload: MessagePayload, success: Accepted, error: MessageError, primaryKey: messageKey })
  .annotate(ClusterSchema.Persisted, true)

/**
 * Appends context without starting a turn (`agent.inject`); acknowledged once committed.
 *
 * @since 0.1.0
 * @category rpcs
 */
export const Inject = Rpc.make("Inject", { payload: MessagePayload, success: Accepted, error: MessageError, primaryKey: messageKey })
  .annotate(ClusterSchema.Persisted, true)

/**
 * Aborts the running turn (`agent.abort`); volatile.
 *
 * @since 0.1.0
 * @category rpcs
 */
export const Abort = Rpc.make("Abort", { payload: { reason: Schema.optionalKey(Schema.String) } })

/**
 * The one-call turn (`agent.run`): sends, waits for the turn that answers, returns its result.
 *
 * @since 0.1.0
 * @category rpcs
 */
export const Run = Rpc.make("Run", { payload: MessagePayload, success: TurnReply, error: RunError, primaryKey: messageKey })
  .annotate(ClusterSchema.Persisted, true)

/**
 * The session's events from `from` (a `seq`): the logged ones, then each later one; volatile.
 * Fails with `InvalidInputError` when the runner cannot create the session's agent (see `Run`).
 *
 * @since 0.1.0
 * @category rpcs
 */
export const Events = Rpc.make("Events", {
  payload: { from: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)) },
  success: SessionEvent.SessionEvent,
  error: InvalidInputError,
  stream: true
})

/**
 * The agent's status and where it runs; volatile. Fails with `InvalidInputError` when the
 * runner cannot create the session's agent (see `Run`).
 *
 * @since 0.1.0
 * @category rpcs
 */
export const Status = Rpc.make("Status", { success: StatusReply, error: InvalidInputError })

/**
 * The entity: one agent per session id, `DshAgent`.
 *
 * @since 0.1.0
 * @category entities
 */
export const AgentEntity = Entity.make("DshAgent", [Send, Steer, Inject, Abort, Run, Events, Status])
