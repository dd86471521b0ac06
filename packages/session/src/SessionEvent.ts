/**
 * Session events: the vocabulary of the event-sourced log. Every event is
 * `{ type, seq, time, data }`: `seq` counts from 0 within a session with no gaps, `time` is the
 * Clock's epoch milliseconds at append, and `data` is described by the type's Schema, so a log
 * encodes to JSON and decodes back.
 *
 * The core types are the ones the loop writes, including `agent/status` (an agent's status
 * changes, so the log alone shows which agent owned it and when it was disposed). Other packages add their own with
 * {@link define}: an extension type is namespaced with a colon (`"compaction:summary"`), which
 * keeps it apart from the core types (which use a slash) in the `SessionEvent` union, so
 * narrowing on `type` still works. An extension event decodes even where its definition is
 * unknown (its data is kept as JSON), so a log is never unreadable for lack of a plugin.
 *
 * @since 0.1.0
 */
import { Content, FinishReason, HarnessError, Ids, ModelRequest, StreamChunk, Usage } from "@dsh/llm"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

const Turn = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
const Step = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
const Blocks = Schema.Array(Content.ContentBlock)

/**
 * Why a turn ended.
 *
 * - `completed`: the model answered without asking for tools and nothing asked to continue;
 * - `aborted`: `abort(reason?)` stopped it, or its own work interrupted itself (a middleware
 *   giving `Effect.interrupt`; the reason says so);
 * - `error`: something failed (the code says what);
 * - `disposed`: the agent was disposed mid-turn;
 * - `limit`: a guard stopped it (`name` says which, e.g. `max-steps`);
 * - `interrupted`: the process running it ended mid-turn (a crash); the turn was closed when
 *   its session was resumed (see `Closing`), and `message` says what was left open.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TurnEndReason = Schema.Union([
  Schema.Struct({ kind: Schema.tag("completed") }),
  Schema.Struct({ kind: Schema.tag("aborted"), reason: Schema.optionalKey(Schema.String) }),
  Schema.Struct({ kind: Schema.tag("error"), message: Schema.String, code: Schema.String }),
  Schema.Struct({ kind: Schema.tag("disposed") }),
  Schema.Struct({ kind: Schema.tag("limit"), name: Schema.String, message: Schema.String }),
  Schema.Struct({ kind: Schema.tag("interrupted"), message: Schema.String })
])

/**
 * @since 0.1.0
 * @category models
 */
export type TurnEndReason = typeof TurnEndReason.Type

/**
 * What resuming a session repaired, recorded as a `session/repair` event before the events
 * of the repair itself:
 *
 * - `torn-tail`: the persisted log ended with an unterminated line (a write cut by a crash);
 *   `bytes` were cut off the file at line `line`;
 * - `interrupted-turn`: the log ended inside turn `turn` (the process died mid-turn); the turn
 *   is closed right after this event, `calls` open tool calls answered `TOOL_OUTCOME_UNKNOWN`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Repair = Schema.Union([
  Schema.Struct({ kind: Schema.tag("torn-tail"), line: Schema.Int, bytes: Schema.Int, message: Schema.String }),
  Schema.Struct({
    kind: Schema.tag("interrupted-turn"),
    turn: Turn,
    step: Schema.optionalKey(Step),
    calls: Schema.Int,
    message: Schema.String
  })
])

/**
 * @since 0.1.0
 * @category models
 */
export type Repair = typeof Repair.Type

/**
 * Why a compaction ran: the next request would have passed the share of the context window the
 * agent allows (`auto`), the agent was asked (`manual`), or the provider refused a request as
 * too long (`overflow`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const CompactionReason = Schema.Literals(["auto", "manual", "overflow"])

/**
 * A tool result a prune replaced by a stub: the `tool/result` event's seq, its call, its tool
 * and its size in characters (the original stays in the log).
 *
 * @since 0.1.0
 * @category schemas
 */
export const PrunedResult = Schema.Struct({
  seq: Schema.Int,
  callId: Ids.CallId,
  tool: Schema.String,
  chars: Schema.Int
})

/**
 * A compaction recorded in the log (derivation applies it; the events it stands for stay):
 *
 * - `summary`: every message derived from the events up to `through` (a `turn/end`'s seq) is
 *   replaced by `summary`, written by `model`; `from` is the first seq the summary covers;
 * - `prune`: the results of `results` are replaced by short stubs naming the tool, the size and
 *   the seq of the original.
 *
 * `tokensBefore` and `tokensAfter` are the estimated sizes of the next request before and after.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Compaction = Schema.Union([
  Schema.Struct({
    kind: Schema.tag("summary"),
    reason: CompactionReason,
    from: Schema.Int,
    through: Schema.Int,
    summary: Schema.String,
    model: Schema.String,
    /** The summarizer's instruction and budget, so a replay asks what the recording asked. */
    prompt: Schema.optionalKey(Schema.String),
    maxTokens: Schema.optionalKey(Schema.Int),
    /** What the summarizing call cost. */
    usage: Schema.optionalKey(Usage.Usage),
    tokensBefore: Schema.Int,
    tokensAfter: Schema.Int
  }),
  Schema.Struct({
    kind: Schema.tag("prune"),
    reason: CompactionReason,
    results: Schema.Array(PrunedResult),
    tokensBefore: Schema.Int,
    tokensAfter: Schema.Int
  })
])

/**
 * @since 0.1.0
 * @category models
 */
export type Compaction = typeof Compaction.Type

/**
 * What a model request asked for besides its messages (which are derived from the log): the
 * system prompt, the tools and the sampling options. `model/request` events carry it only
 * when it differs from the session's previous request, so a log records every prompt and tool
 * change at the cost of one copy per change; a replay carries it forward.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RequestSettings = Schema.Struct({
  system: Schema.optionalKey(Schema.String),
  tools: Schema.optionalKey(Schema.Array(ModelRequest.ToolSchema)),
  toolChoice: Schema.optionalKey(ModelRequest.ToolChoice),
  temperature: Schema.optionalKey(Schema.Finite),
  maxTokens: Schema.optionalKey(Schema.Int),
  stop: Schema.optionalKey(Schema.Array(Schema.String)),
  providerOptions: Schema.optionalKey(Schema.Record(Schema.String, Schema.Json))
})

/**
 * @since 0.1.0
 * @category models
 */
export type RequestSettings = typeof RequestSettings.Type

/**
 * The settings of a request: everything but its model and messages.
 *
 * @since 0.1.0
 * @category utils
 */
export const settingsOf = (request: ModelRequest.ModelRequest): RequestSettings => {
  const { messages: _messages, model: _model, ...settings } = request
  return settings
}

/**
 * The data Schema of every core event type.
 *
 * @since 0.1.0
 * @category schemas
 */
export const core = {
  "turn/start": Schema.Struct({ turn: Turn, trigger: Schema.String }),
  "turn/end": Schema.Struct({ turn: Turn, reason: TurnEndReason }),
  "step/start": Schema.Struct({ turn: Turn, step: Step }),
  "step/end": Schema.Struct({ turn: Turn, step: Step }),
  "user/message": Schema.Struct({ content: Blocks, source: Schema.String }),
  "context/message": Schema.Struct({ content: Blocks, source: Schema.String }),
  "model/request": Schema.Struct({
    turn: Turn,
    step: Step,
    model: Schema.String,
    settings: Schema.optionalKey(RequestSettings)
  }),
  "assistant/chunk": Schema.Struct({ turn: Turn, step: Step, chunk: StreamChunk.StreamChunk }),
  "assistant/message": Schema.Struct({
    turn: Turn,
    step: Step,
    content: Blocks,
    finishReason: Schema.optionalKey(FinishReason.FinishReason),
    /**
     * The tool calls the loop gave another id, because the model repeated an id within the
     * message or gave none: each new id with the id the model gave (a provider rejects a
     * message whose calls share an id).
     */
    rewrittenCallIds: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
  }),
  "tool/call": Schema.Struct({
    turn: Turn,
    step: Step,
    callId: Ids.CallId,
    name: Schema.String,
    arguments: Schema.String
  }),
  "tool/result": Schema.Struct({
    turn: Turn,
    step: Step,
    callId: Ids.CallId,
    content: Schema.Array(Content.ToolResultContent),
    isError: Schema.Boolean,
    error: Schema.optionalKey(HarnessError.ErrorInfo)
  }),
  "steering/message": Schema.Struct({ turn: Turn, content: Blocks, source: Schema.String }),
  usage: Schema.Struct({ turn: Turn, step: Step, usage: Usage.Usage }),
  "agent/status": Schema.Struct({
    agentId: Ids.AgentId,
    status: Schema.Literals(["idle", "running", "disposed"])
  }),
  error: Schema.Struct({
    turn: Schema.optionalKey(Turn),
    step: Schema.optionalKey(Step),
    message: Schema.String,
    code: Schema.String,
    /** The code the failure reported when it is not a catalog code (e.g. a provider's `upstream_overloaded`). */
    reportedCode: Schema.optionalKey(Schema.String)
  }),
  "session/repair": Repair,
  "compaction/applied": Compaction,
  "compaction/failed": Schema.Struct({
    kind: Schema.Literals(["summary", "prune"]),
    reason: CompactionReason,
    message: Schema.String,
    code: Schema.String,
    /** A summary's range, model, instruction and budget: what the failed summarizing call was asked. */
    from: Schema.optionalKey(Schema.Int),
    through: Schema.optionalKey(Schema.Int),
    model: Schema.optionalKey(Schema.String),
    prompt: Schema.optionalKey(Schema.String),
    maxTokens: Schema.optionalKey(Schema.Int)
  })
} as const

/**
 * The core event types.
 *
 * @since 0.1.0
 * @category models
 */
export type CoreType = keyof typeof core

/**
 * All core event types, in the order of the design brief.
 *
 * @since 0.1.0
 * @category models
 */
export const coreTypes = Object.keys(core) as ReadonlyArray<CoreType>

/**
 * The data of a core event type.
 *
 * @since 0.1.0
 * @category models
 */
export type DataOf<T extends CoreType> = (typeof core)[T]["Type"]

/**
 * An extension event type: `namespace:name`.
 *
 * @since 0.1.0
 * @category models
 */
export type ExtensionType = `${string}:${string}`

/**
 * A core event.
 *
 * @since 0.1.0
 * @category models
 */
export type CoreEvent<T extends CoreType = CoreType> = {
  readonly [K in T]: { readonly type: K; readonly seq: number; readonly time: number; readonly data: DataOf<K> }
}[T]

/**
 * An event of an extension type; its data is typed by its {@link Definition}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ExtensionEvent<Type extends ExtensionType = ExtensionType, Data = unknown> {
  readonly type: Type
  readonly seq: number
  readonly time: number
  readonly data: Data
}

/**
 * Any event of a session log.
 *
 * @since 0.1.0
 * @category models
 */
export type SessionEvent = CoreEvent | ExtensionEvent

const envelope = {
  seq: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  time: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
}

const coreEventSchemas = coreTypes.map((type) =>
  Schema.Struct({ type: Schema.Literal(type), ...envelope, data: core[type] as Schema.Codec<unknown, unknown> })
)
const coreEventSchemaOf = new Map<string, Schema.Codec<unknown, unknown>>(
  coreTypes.map((type, i) => [type, coreEventSchemas[i] as Schema.Codec<unknown, unknown>])
)

const extensionTypePattern = /^[^/:\s]+:\S+$/

const extensionTypeSchema = Schema.String.check(Schema.isPattern(extensionTypePattern))

const extensionEventSchema = Schema.Struct({ type: extensionTypeSchema, ...envelope, data: Schema.Json })

/**
 * The Schema of any event. A core event's data is checked by its type's Schema; an extension
 * event's data is kept as JSON (its definition's `decode` interprets it).
 *
 * @since 0.1.0
 * @category schemas
 */
export const SessionEvent: Schema.Codec<SessionEvent, unknown> = Schema.Union([
  ...coreEventSchemas,
  extensionEventSchema
]) as unknown as Schema.Codec<SessionEvent, unknown>

interface Conformance {
  readonly is: (event: unknown) => boolean
  readonly check: (event: unknown) => Result.Result<unknown, Schema.SchemaError>
}

// checked on the Type side: a seed holds events as a session does, not as a file encodes them
const conformanceOf = (schema: Schema.Codec<unknown, unknown>): Conformance => ({
  is: Schema.is(schema),
  check: Schema.decodeUnknownResult(Schema.toType(schema))
})

const coreConformance = new Map<string, Conformance>(
  coreTypes.map((type) => [type, conformanceOf(coreEventSchemaOf.get(type)!)])
)

const extensionConformance = conformanceOf(extensionEventSchema as unknown as Schema.Codec<unknown, unknown>)

/**
 * Why a value is not a session event, or `undefined` when it is one: the first violations
 * the member of {@link SessionEvent} for its type finds, each with its path. A store checks
 * every event of a seed log with it.
 *
 * @since 0.1.0
 * @category guards
 */
export const problem = (event: unknown): string | undefined => {
  const type = typeof event === "object" && event !== null ? (event as { readonly type?: unknown }).type : undefined
  const conformance = typeof type !== "string"
    ? undefined
    : coreConformance.get(type) ?? (extensionTypePattern.test(type) ? extensionConformance : undefined)
  if (conformance === undefined) {
    return `its type is ${typeof type === "string" ? JSON.stringify(type) : HarnessError.describe(type)}: neither a core type nor an extension type (namespace:name)`
  }
  if (conformance.is(event)) return undefined
  const checked = conformance.check(event)
  return Result.isFailure(checked) ? checked.failure.message : undefined
}

const decodedLogs = new WeakSet<ReadonlyArray<SessionEvent>>()

/**
 * Marks a log every event of which was decoded through {@link SessionEvent} (what a
 * persistence layer's `load` returns), so that a store seeded with it does not check each
 * event again. The array is frozen: what was checked cannot change.
 *
 * @since 0.1.0
 * @category constructors
 */
export const decodedLog = (events: Array<SessionEvent>): ReadonlyArray<SessionEvent> => {
  Object.freeze(events)
  decodedLogs.add(events)
  return events
}

/**
 * Whether a log was marked by {@link decodedLog}.
 *
 * @since 0.1.0
 * @category guards
 */
export const isDecodedLog = (events: ReadonlyArray<SessionEvent>): boolean => decodedLogs.has(events)

/**
 * The Schema of the events of one core type: the member of {@link SessionEvent} that checks
 * them. Encoding an event of a known type through it gives what encoding it through
 * {@link SessionEvent} gives, without matching the event against every member first.
 *
 * @since 0.1.0
 * @category schemas
 */
export const eventSchema = <T extends CoreType>(type: T): Schema.Codec<CoreEvent<T>, unknown> =>
  coreEventSchemaOf.get(type) as unknown as Schema.Codec<CoreEvent<T>, unknown>

/**
 * An extension event type with its data Schema.
 *
 * @since 0.1.0
 * @category models
 */
export interface Definition<Type extends ExtensionType, A> {
  readonly type: Type
  readonly data: Schema.Codec<A, Schema.Json>
  /** Whether an event is of this type. */
  readonly is: (event: SessionEvent) => event is ExtensionEvent<Type>
  /** The typed data of an event of this type; `undefined` for other events or invalid data. */
  readonly decode: (event: SessionEvent) => A | undefined
}

/**
 * Defines an extension event type. Append its events with `session.append(definition, data)`.
 *
 * @example
 * ```ts
 * import { SessionEvent } from "@dsh/session"
 * import { Schema } from "effect"
 *
 * const Summary = SessionEvent.define("compaction:summary", Schema.Struct({
 *   upToSeq: Schema.Int,
 *   text: Schema.String
 * }))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const define = <const Type extends ExtensionType, S extends Schema.Codec<any, Schema.Json>>(
  type: Type,
  data: S
): Definition<Type, S["Type"]> => {
  if (!extensionTypePattern.test(type)) {
    throw new TypeError(`extension event type "${type}" must be namespace:name (e.g. "compaction:summary")`)
  }
  const codec = data as unknown as Schema.Codec<S["Type"], Schema.Json>
  const decode = Schema.decodeUnknownOption(codec)
  const is = (event: SessionEvent): event is ExtensionEvent<Type> => event.type === type
  return {
    type,
    data: codec,
    is,
    decode: (event) => {
      if (!is(event)) return undefined
      const decoded = decode(event.data)
      return decoded._tag === "Some" ? decoded.value : undefined
    }
  }
}

/**
 * Whether an event is a core event of the given type (narrows its data).
 *
 * @since 0.1.0
 * @category guards
 */
export const isType = <T extends CoreType>(type: T) => (event: SessionEvent): event is Extract<SessionEvent, { readonly type: T }> =>
  event.type === type
