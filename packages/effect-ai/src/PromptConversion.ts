/**
 * A dsh `ModelRequest` as what effect/ai's `LanguageModel` takes: a `Prompt`, a toolkit of
 * handler-less tools and a tool choice.
 *
 * Messages, block by block:
 *
 * | dsh | effect/ai |
 * |---|---|
 * | `request.system` | a `system` message, first |
 * | `system` message | a `system` message at its position, holding its text blocks' text (other blocks have no place in a system message and are dropped) |
 * | `user`: `text` | `text` part of a `user` message |
 * | `user`: `image` | `file` part (bytes decoded from the block's base64, which every provider accepts) |
 * | `user`: `tool-result` | `tool-result` part of a `tool` message; consecutive results share one, also across dsh messages (dsh derives one message per result); text and results keep their order by splitting the dsh message |
 * | `assistant`: `text` | `text` part |
 * | `assistant`: `reasoning` | `reasoning` part; a signature this bridge wrote becomes the part's provider options again (see `ReasoningMetadata`) |
 * | `assistant`: `tool-call` | `tool-call` part with the raw JSON arguments parsed (`""` is `{}`; arguments that are not JSON are passed as the raw string, so the model still sees what it wrote) |
 * | `assistant`: `image` | `file` part |
 * | `custom` (any role) | whatever the `customBlock` option renders (text or file parts); dropped by default, since a custom kind means nothing to a provider unless its owner says how to show it |
 * | `reasoning`/`tool-call` in a user message, `tool-result` in an assistant message | dropped: dsh never derives them, and no provider accepts them there |
 *
 * A message left without parts is dropped (providers reject empty messages). A tool result is
 * sent with the name of the call it answers (found in the history; `"unknown"` for a result
 * whose call is not there), as `result` its text (`Prompt.toolModelOutputToText` of its
 * content, so a text-only result is sent verbatim) and, when it holds images, its content as
 * `modelOutput` for the providers that send rich tool results.
 *
 * Tools become `Tool.dynamic` tools from their JSON Schema, with no handlers: the dsh loop
 * executes tools, never effect/ai (the bridge calls `streamText` with
 * `disableToolCallResolution: true`). `strict` is passed as `Tool.Strict`, `false` when the
 * schema does not ask for it (some providers otherwise default to strict schemas, which reject
 * optional properties).
 *
 * @since 0.1.0
 */
import { type Content, HarnessError, LlmError, Message, type ModelRequest } from "@dsh/llm"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import { type LanguageModel, Prompt, Tool, Toolkit } from "effect/ai"
import { Base64 } from "effect/encoding"
import * as ReasoningMetadata from "./ReasoningMetadata.ts"

/**
 * The parts a custom block may become.
 *
 * @since 0.1.0
 * @category models
 */
export type CustomPart = Prompt.TextPart | Prompt.FilePart

/**
 * Where a custom block is being sent: in a message of this role, or inside a tool result.
 *
 * @since 0.1.0
 * @category models
 */
export type CustomBlockPlace = "system" | "user" | "assistant" | "tool-result"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * Renders a custom block for the model (e.g. a citation as text). In a system message, which
   * holds text only, only the text parts it returns are kept. Default: the block is dropped.
   */
  readonly customBlock?: (block: Content.CustomBlock, place: CustomBlockPlace) => ReadonlyArray<CustomPart>
}

/**
 * The name the bridge sends for a tool result whose call is not in the history.
 *
 * @since 0.1.0
 * @category constants
 */
export const unknownToolName = "unknown"

/**
 * Parses a tool call's raw JSON arguments for effect/ai, which carries them as a value.
 *
 * @since 0.1.0
 * @category conversions
 */
export const parseArguments = (raw: string): unknown => {
  if (raw.trim() === "") return {}
  try {
    // effect/ai's parser: like JSON.parse, but refuses prototype-polluting shapes
    return Tool.unsafeSecureJsonParse(raw)
  } catch {
    return raw
  }
}

const invalid = (message: string) => new LlmError.LlmInvalidRequestError({ message })

const imagePart = (
  block: Content.ImageBlock,
  where: string
): Result.Result<Prompt.FilePart, LlmError.LlmInvalidRequestError> => {
  const bytes = Base64.decode(block.data)
  return Result.isFailure(bytes)
    ? Result.fail(invalid(`the image in ${where} is not valid base64: ${bytes.failure.message}`))
    : Result.succeed(Prompt.filePart({ mediaType: block.mediaType, data: bytes.success }))
}

/**
 * Converts a request's system prompt and messages to an effect/ai `Prompt`. Fails with
 * `LlmInvalidRequestError` when a block cannot be sent (an image whose data is not base64).
 *
 * @since 0.1.0
 * @category conversions
 */
export const toPrompt = (
  request: Pick<ModelRequest.ModelRequest, "system" | "messages">,
  options: Options = {}
): Result.Result<Prompt.Prompt, LlmError.LlmInvalidRequestError> => {
  const custom = (block: Content.CustomBlock, place: CustomBlockPlace): ReadonlyArray<CustomPart> =>
    options.customBlock === undefined ? [] : rendered(options.customBlock, block, place)
  try {
    return convert(request, custom)
  } catch (error) {
    if (error instanceof CustomBlockRefused) return Result.fail(invalid(error.message))
    throw error
  }
}

// the application's function, called deep inside the conversion: what it did wrong leaves by a
// throw of this class, caught where the conversion returns its Result
class CustomBlockRefused extends Error {}

/** What `customBlock` rendered, checked: text or file parts (a string or a throw would reach the provider, or crash it). */
const rendered = (
  customBlock: NonNullable<Options["customBlock"]>,
  block: Content.CustomBlock,
  place: CustomBlockPlace
): ReadonlyArray<CustomPart> => {
  let parts: unknown
  try {
    parts = customBlock(block, place)
  } catch (error) {
    throw new CustomBlockRefused(`the customBlock option threw for a custom block of kind "${block.kind}": ${HarnessError.describe(error)}`)
  }
  const isCustomPart = (part: unknown): boolean =>
    typeof part === "object" && part !== null &&
    (((part as { type?: unknown }).type === "text" && typeof (part as { text?: unknown }).text === "string") || (part as { type?: unknown }).type === "file")
  if (!Array.isArray(parts) || !parts.every(isCustomPart)) {
    throw new CustomBlockRefused(
      `the customBlock option must return a list of text or file parts (Prompt.textPart, Prompt.filePart) for a custom block of kind "${block.kind}", got ${HarnessError.describe(parts)}`
    )
  }
  return parts as ReadonlyArray<CustomPart>
}

const convert = (
  request: Pick<ModelRequest.ModelRequest, "system" | "messages">,
  custom: (block: Content.CustomBlock, place: CustomBlockPlace) => ReadonlyArray<CustomPart>
): Result.Result<Prompt.Prompt, LlmError.LlmInvalidRequestError> => {
  const messages: Array<Prompt.Message> = []
  const toolNames = new Map<string, string>()
  if (request.system !== undefined && request.system !== "") {
    messages.push(Prompt.systemMessage({ content: request.system }))
  }

  let index = 0
  for (const message of request.messages) {
    const m = index++
    const where = (b: number) => `block ${b} of message ${m}`
    switch (message.role) {
      case "system": {
        let text = Message.textOf(message)
        for (const block of message.content) {
          if (block.type !== "custom") continue
          for (const part of custom(block, "system")) if (part.type === "text") text += part.text
        }
        if (text !== "") messages.push(Prompt.systemMessage({ content: text }))
        break
      }
      case "user": {
        // a dsh user message may hold text and tool results; effect/ai puts results in tool
        // messages, so the message is split where the kind changes, keeping the order
        let userParts: Array<Prompt.UserMessagePart> = []
        let toolParts: Array<Prompt.ToolMessagePart> = []
        const flushUser = () => {
          if (userParts.length > 0) messages.push(Prompt.userMessage({ content: userParts }))
          userParts = []
        }
        const flushTool = () => {
          if (toolParts.length === 0) return
          // dsh derives one user message per tool result; the results of one step belong
          // together (some providers require all of them in one message), so consecutive tool
          // messages are merged
          const last = messages.at(-1)
          if (last !== undefined && last.role === "tool") {
            messages[messages.length - 1] = Prompt.toolMessage({ content: [...last.content, ...toolParts] })
          } else {
            messages.push(Prompt.toolMessage({ content: toolParts }))
          }
          toolParts = []
        }
        for (const [b, block] of message.content.entries()) {
          switch (block.type) {
            case "text":
              flushTool()
              userParts.push(Prompt.textPart({ text: block.text }))
              break
            case "image": {
              flushTool()
              const part = imagePart(block, where(b))
              if (Result.isFailure(part)) return Result.fail(part.failure)
              userParts.push(part.success)
              break
            }
            case "custom":
              flushTool()
              userParts.push(...custom(block, "user"))
              break
            case "tool-result": {
              flushUser()
              const result = toolResultPart(block, toolNames.get(block.toolCallId) ?? unknownToolName, where(b), custom)
              if (Result.isFailure(result)) return Result.fail(result.failure)
              toolParts.push(result.success)
              break
            }
            case "reasoning":
            case "tool-call":
              break
          }
        }
        flushUser()
        flushTool()
        break
      }
      case "assistant": {
        const parts: Array<Prompt.AssistantMessagePart> = []
        for (const [b, block] of message.content.entries()) {
          switch (block.type) {
            case "text":
              parts.push(Prompt.textPart({ text: block.text }))
              break
            case "reasoning": {
              const restored = ReasoningMetadata.fromSignature(block.signature)
              parts.push(
                Prompt.reasoningPart(restored === undefined ? { text: block.text } : { text: block.text, options: restored })
              )
              break
            }
            case "tool-call":
              toolNames.set(block.id, block.name)
              parts.push(Prompt.toolCallPart({
                id: block.id,
                name: block.name,
                params: parseArguments(block.arguments),
                providerExecuted: false
              }))
              break
            case "image": {
              const part = imagePart(block, where(b))
              if (Result.isFailure(part)) return Result.fail(part.failure)
              parts.push(part.success)
              break
            }
            case "custom":
              parts.push(...custom(block, "assistant"))
              break
            case "tool-result":
              break
          }
        }
        if (parts.length > 0) messages.push(Prompt.assistantMessage({ content: parts }))
        break
      }
    }
  }
  return Result.succeed(Prompt.fromMessages(messages))
}

const toolResultPart = (
  block: Content.ToolResultBlock,
  name: string,
  where: string,
  custom: (block: Content.CustomBlock, place: CustomBlockPlace) => ReadonlyArray<CustomPart>
): Result.Result<Prompt.ToolResultPart, LlmError.LlmInvalidRequestError> => {
  const output: Array<Prompt.ToolModelOutputPart> = []
  for (const item of block.content) {
    switch (item.type) {
      case "text":
        output.push(Prompt.textPart({ text: item.text }))
        break
      case "image": {
        const part = imagePart(item, `the tool result in ${where}`)
        if (Result.isFailure(part)) return Result.fail(part.failure)
        output.push(part.success)
        break
      }
      case "custom":
        output.push(...custom(item, "tool-result"))
        break
    }
  }
  const rich = output.some((part) => part.type === "file")
  return Result.succeed(Prompt.toolResultPart({
    id: block.toolCallId,
    name,
    isFailure: block.isError,
    result: Prompt.toolModelOutputToText(output),
    ...(rich ? { modelOutput: output } : {}),
    providerExecuted: false
  }))
}

/**
 * The effect/ai tool a dsh tool schema becomes: parameters described by JSON Schema (so they
 * are `unknown` to effect/ai and need no services), no handler.
 *
 * @since 0.1.0
 * @category models
 */
export type BridgeTool = Tool.Tool<string, {
  readonly parameters: typeof Schema.Unknown
  readonly success: typeof Schema.Unknown
  readonly failure: typeof Schema.Never
  readonly failureMode: "error"
}>

/**
 * A tool schema as an effect/ai tool without a handler.
 *
 * @since 0.1.0
 * @category conversions
 */
export const toTool = (schema: ModelRequest.ToolSchema): BridgeTool =>
  Tool.dynamic(schema.name, { description: schema.description, parameters: schema.parameters })
    .annotate(Tool.Strict, schema.strict ?? false)

/**
 * The tools of a request as an effect/ai toolkit. It has no handlers, so it must be used with
 * `disableToolCallResolution: true` (with resolution on, effect/ai would try to run a called
 * tool and die looking for its handler).
 *
 * @since 0.1.0
 * @category conversions
 */
export const toToolkit = (tools: ReadonlyArray<ModelRequest.ToolSchema>): Toolkit.Toolkit<Record<string, BridgeTool>> =>
  Toolkit.make(...tools.map(toTool))

/**
 * A dsh tool choice as effect/ai's (the two vocabularies coincide).
 *
 * @since 0.1.0
 * @category conversions
 */
export const toToolChoice = (choice: ModelRequest.ToolChoice): LanguageModel.ToolChoice<string> =>
  typeof choice === "string" ? choice : { tool: choice.tool }
