/**
 * What a model is asked: the model name, the system prompt, the message history, the tools
 * it may call and sampling options. Everything is JSON-encodable so requests can be recorded
 * and replayed.
 *
 * The messages are a {@link History.History}, which shares structure between the requests of
 * successive steps; it encodes (and `JSON.stringify`s) to the array of messages.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as History from "./History.ts"
import type { Message } from "./Message.ts"

/**
 * A tool as the model sees it: its name, description and the JSON Schema of its arguments
 * (an object schema, as providers' function calling expects). `strict` asks providers that
 * support it to enforce the schema while sampling.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolSchema = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  parameters: Schema.Record(Schema.String, Schema.Json),
  strict: Schema.optionalKey(Schema.Boolean)
}).annotate({ identifier: "ToolSchema" })

/**
 * @since 0.1.0
 * @category models
 */
export interface ToolSchema extends Schema.Schema.Type<typeof ToolSchema> {}

/**
 * How the model may use tools: decide itself, never, at least one, or one named tool.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolChoice = Schema.Union([
  Schema.Literals(["auto", "none", "required"]),
  Schema.Struct({ tool: Schema.String })
])

/**
 * @since 0.1.0
 * @category models
 */
export type ToolChoice = typeof ToolChoice.Type

/**
 * A request to a model. `providerOptions` carries adapter-specific settings keyed by the
 * adapter's name (e.g. `{ deepseek: { thinking: "enabled" } }`); adapters ignore the keys of
 * others.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ModelRequest = Schema.Struct({
  model: Schema.String,
  system: Schema.optionalKey(Schema.String),
  messages: History.History,
  tools: Schema.optionalKey(Schema.Array(ToolSchema)),
  toolChoice: Schema.optionalKey(ToolChoice),
  temperature: Schema.optionalKey(Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))),
  maxTokens: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0))),
  stop: Schema.optionalKey(Schema.Array(Schema.String)),
  providerOptions: Schema.optionalKey(Schema.Record(Schema.String, Schema.Json))
}).annotate({ identifier: "ModelRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export interface ModelRequest extends Schema.Schema.Type<typeof ModelRequest> {}

/**
 * Builds a request from a model name and messages plus any options. A {@link History.History}
 * is used as it is; other iterables (arrays) are converted.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  model: string,
  messages: Iterable<Message> | History.History,
  options: Omit<ModelRequest, "model" | "messages"> = {}
): ModelRequest => ({ ...options, model, messages: History.fromIterable(messages) })
