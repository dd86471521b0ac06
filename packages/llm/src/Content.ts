/**
 * Content blocks: the parts a message is made of.
 *
 * Built-in block types are `text`, `reasoning`, `tool-call`, `tool-result` and `image`. A
 * package that needs another kind of content defines it with {@link defineCustom}: a
 * `custom` block carries a `kind` and JSON `data` validated by the kind's own Schema, so it
 * encodes, decodes, persists and passes through every layer untouched without this package
 * knowing about it.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { ErrorInfo } from "./HarnessError.ts"
import { CallId } from "./Ids.ts"

/**
 * Plain text.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TextBlock = Schema.Struct({
  type: Schema.tag("text"),
  text: Schema.String
}).annotate({ identifier: "TextBlock" })

/**
 * @since 0.1.0
 * @category models
 */
export interface TextBlock extends Schema.Schema.Type<typeof TextBlock> {}

/**
 * The model's reasoning ("thinking"). `signature` carries a provider's opaque token when the
 * provider requires the reasoning to be sent back verbatim.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ReasoningBlock = Schema.Struct({
  type: Schema.tag("reasoning"),
  text: Schema.String,
  signature: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "ReasoningBlock" })

/**
 * @since 0.1.0
 * @category models
 */
export interface ReasoningBlock extends Schema.Schema.Type<typeof ReasoningBlock> {}

/**
 * A tool call requested by the model. `arguments` stays the raw JSON string the model wrote,
 * end to end: only the tool registry parses it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolCallBlock = Schema.Struct({
  type: Schema.tag("tool-call"),
  id: CallId,
  name: Schema.String,
  arguments: Schema.String
}).annotate({ identifier: "ToolCallBlock" })

/**
 * @since 0.1.0
 * @category models
 */
export interface ToolCallBlock extends Schema.Schema.Type<typeof ToolCallBlock> {}

/**
 * An image, inline as base64 data.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ImageBlock = Schema.Struct({
  type: Schema.tag("image"),
  mediaType: Schema.String,
  data: Schema.String
}).annotate({ identifier: "ImageBlock" })

/**
 * @since 0.1.0
 * @category models
 */
export interface ImageBlock extends Schema.Schema.Type<typeof ImageBlock> {}

/**
 * A block of an extension kind (see {@link defineCustom}).
 *
 * @since 0.1.0
 * @category schemas
 */
export const CustomBlock = Schema.Struct({
  type: Schema.tag("custom"),
  kind: Schema.String,
  data: Schema.Json
}).annotate({ identifier: "CustomBlock" })

/**
 * @since 0.1.0
 * @category models
 */
export interface CustomBlock extends Schema.Schema.Type<typeof CustomBlock> {}

/**
 * What a tool result may contain.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolResultContent = Schema.Union([TextBlock, ImageBlock, CustomBlock])

/**
 * @since 0.1.0
 * @category models
 */
export type ToolResultContent = typeof ToolResultContent.Type

/**
 * The result of a tool call. `isError` tells the model the call failed; `error` carries the
 * failure's `{tag, code}` for code that wants to tell failures apart.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolResultBlock = Schema.Struct({
  type: Schema.tag("tool-result"),
  toolCallId: CallId,
  content: Schema.Array(ToolResultContent),
  isError: Schema.Boolean,
  error: Schema.optionalKey(ErrorInfo)
}).annotate({ identifier: "ToolResultBlock" })

/**
 * @since 0.1.0
 * @category models
 */
export interface ToolResultBlock extends Schema.Schema.Type<typeof ToolResultBlock> {}

/**
 * Any content block.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContentBlock = Schema.Union([
  TextBlock,
  ReasoningBlock,
  ToolCallBlock,
  ToolResultBlock,
  ImageBlock,
  CustomBlock
]).annotate({ identifier: "ContentBlock" })

/**
 * @since 0.1.0
 * @category models
 */
export type ContentBlock = typeof ContentBlock.Type

/**
 * The `type` of a content block.
 *
 * @since 0.1.0
 * @category models
 */
export type BlockType = ContentBlock["type"]

/**
 * @since 0.1.0
 * @category constructors
 */
export const text = (text: string): TextBlock => ({ type: "text", text })

/**
 * @since 0.1.0
 * @category constructors
 */
export const reasoning = (text: string, signature?: string): ReasoningBlock =>
  signature === undefined ? { type: "reasoning", text } : { type: "reasoning", text, signature }

/**
 * @since 0.1.0
 * @category constructors
 */
export const toolCall = (id: CallId, name: string, args: string): ToolCallBlock => ({
  type: "tool-call",
  id,
  name,
  arguments: args
})

/**
 * A tool call's argument text as a JSON object, for the wires that take only objects back in
 * the history (Anthropic's `input`; vLLM and other OpenAI-compatible servers parse the string):
 * `value` and `text` are the arguments themselves when they are a JSON object (the model's
 * bytes kept, number precision included), `{}` for empty text, else
 * `{"invalid_arguments": "<text>"}` — a call cut off by the token limit would otherwise fail
 * every later request of its session.
 *
 * @since 0.1.0
 * @category serialization
 */
export const argumentsObject = (args: string): { readonly value: unknown; readonly text: string } => {
  if (args.trim() === "") return { value: {}, text: "{}" }
  let value: unknown
  try {
    value = JSON.parse(args)
  } catch {
    value = undefined
  }
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return { value, text: args }
  const wrapped = { invalid_arguments: args }
  return { value: wrapped, text: JSON.stringify(wrapped) }
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const image = (mediaType: string, data: string): ImageBlock => ({ type: "image", mediaType, data })

/**
 * @since 0.1.0
 * @category constructors
 */
export const toolResult = (options: {
  readonly toolCallId: CallId
  readonly content: ReadonlyArray<ToolResultContent>
  readonly isError?: boolean
  readonly error?: ErrorInfo
}): ToolResultBlock => {
  const block: ToolResultBlock = {
    type: "tool-result",
    toolCallId: options.toolCallId,
    content: options.content,
    isError: options.isError ?? false
  }
  return options.error === undefined ? block : { ...block, error: options.error }
}

/**
 * A custom block kind: its constructor, guard and decoder, all checked against `data`.
 *
 * @since 0.1.0
 * @category models
 */
export interface CustomKind<Kind extends string, A> {
  readonly kind: Kind
  /** Builds a block, encoding `data` to JSON through the kind's Schema. */
  readonly make: (data: A) => CustomBlock
  /** Whether a block is of this kind (it does not validate the data). */
  readonly is: (block: ContentBlock) => block is CustomBlock & { readonly kind: Kind }
  /** Decodes the data of a block of this kind; `undefined` for other blocks or invalid data. */
  readonly decode: (block: ContentBlock) => A | undefined
}

/**
 * Defines a custom block kind whose data is described by a Schema.
 *
 * @example
 * ```ts
 * import { Content } from "@dsh/llm"
 * import { Schema } from "effect"
 *
 * const Citation = Content.defineCustom("citation", Schema.Struct({ url: Schema.String }))
 * const block = Citation.make({ url: "https://effect.website" })
 * Citation.decode(block) // { url: "https://effect.website" }
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const defineCustom = <const Kind extends string, S extends Schema.Codec<any, Schema.Json>>(
  kind: Kind,
  data: S
): CustomKind<Kind, S["Type"]> => {
  const encode = Schema.encodeSync(data as Schema.Codec<S["Type"], Schema.Json>)
  const decode = Schema.decodeUnknownOption(data as Schema.Codec<S["Type"], Schema.Json>)
  const is = (block: ContentBlock): block is CustomBlock & { readonly kind: Kind } =>
    block.type === "custom" && block.kind === kind
  return {
    kind,
    make: (value) => ({ type: "custom", kind, data: encode(value) }),
    is,
    decode: (block) => {
      if (!is(block)) return undefined
      const decoded = decode(block.data)
      return decoded._tag === "Some" ? decoded.value : undefined
    }
  }
}
