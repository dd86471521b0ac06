/**
 * Typed final output (`agent.run(input, { output })`): the answer's Schema reaches the model as
 * a `final_answer` tool, and the answer is decoded exactly like tool arguments — the same
 * parsing, the same violations with their paths, the same `INVALID_ARGS` result the model
 * corrects itself from — under the same budget (`maxInvalidArgs` consecutive failures). An
 * answer given as JSON text instead of a call is accepted too; text that does not decode is
 * answered with a steering message listing the violations.
 *
 * @internal
 */
import type { Content, ModelRequest } from "@dsh/llm"
import { Tool, ToolArgs, type ToolErrors, ToolResult } from "@dsh/tools"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"

/** The name of the answer tool (shadows a registered tool of that name during an output run). */
export const toolName = "final_answer"

/** A turn's pending answer. */
export interface Output {
  readonly schema: ModelRequest.ToolSchema
  readonly decode: ToolArgs.Decoder<unknown>
  /** Whether the Schema is wrapped as `{ answer }` (it is not a struct). */
  readonly wrapped: boolean
  /** The decoded answer, once given. */
  value: Option.Option<unknown>
  /** What was wrong with the last answer that did not decode. */
  lastProblem: string | undefined
}

// A struct (or a Schema.Class of one) is the tool's parameters as it is; anything else is
// wrapped as { answer }.
const isStruct = (schema: Schema.Top): schema is Tool.ParametersSchema =>
  "fields" in schema && SchemaAST.isObjects(SchemaAST.toEncoded(schema.ast))

/** The answer tool and decoder of an output Schema; `INVALID_TOOL` when it has no JSON Schema. */
export const make = (schema: Schema.Codec<unknown, any>): Result.Result<Output, ToolErrors.InvalidToolError> => {
  const wrapped = !isStruct(schema)
  const parameters = (wrapped ? Schema.Struct({ answer: schema }) : schema) as Tool.ParametersSchema
  const tool = Tool.make(toolName, {
    description: wrapped
      ? "Give your final answer by calling this tool once, with the answer as `answer`. Call it when you are done; it ends your turn."
      : "Give your final answer by calling this tool once, with the answer as its arguments. Call it when you are done; it ends your turn.",
    parameters,
    execute: () => Effect.succeed("")
  })
  return Result.map(Tool.wireSchema(tool), (wire) => ({
    schema: wire,
    decode: ToolArgs.decoder(tool),
    wrapped,
    value: Option.none(),
    lastProblem: undefined
  }))
}

const unwrap = (output: Output, args: unknown): unknown =>
  output.wrapped ? (args as { readonly answer: unknown }).answer : args

/** Takes an answer given as a `final_answer` call: the result that answers the call. */
export const acceptCall = (output: Output, call: Content.ToolCallBlock): Content.ToolResultBlock => {
  // the tool is to be called once: a second answer in the same response is not taken over the first
  if (Option.isSome(output.value)) {
    return ToolResult.success(call, "Not used: your answer was already received from an earlier final_answer call.")
  }
  const decoded = output.decode(call.arguments)
  if (Result.isFailure(decoded)) {
    output.lastProblem = decoded.failure.message
    return ToolResult.failure(call, decoded.failure)
  }
  output.value = Option.some(unwrap(output, decoded.success))
  return ToolResult.success(call, "Answer received.")
}

/**
 * Takes an answer given as text: accepted when the text (or a fenced JSON block in it) decodes,
 * or — for a Schema that is not a struct — when the text itself decodes as a string (so plain
 * prose answers `Schema.String`); otherwise the steering text that asks for it again, with what
 * was wrong.
 */
export const acceptText = (
  output: Output,
  content: ReadonlyArray<Content.ContentBlock>,
  cutShort = false
): string | undefined => {
  const text = content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("")
  const candidate = jsonIn(text)
  if (candidate === undefined) return refuseText(output, "your last message gave no answer in the required form", cutShort)
  const asJson = output.decode(argumentsFor(output, candidate))
  if (Result.isSuccess(asJson)) return acceptValue(output, asJson.success)
  if (!output.wrapped) return refuseText(output, asJson.failure.message, cutShort)
  const asString = output.decode(argumentsFor(output, JSON.stringify(text.trim())))
  if (Result.isSuccess(asString)) return acceptValue(output, asString.success)
  // Text that is JSON meant JSON: its violations say more than those of the text as a string.
  return refuseText(output, (isJson(candidate) ? asJson : asString).failure.message, cutShort)
}

const acceptValue = (output: Output, args: unknown): undefined => {
  output.value = Option.some(unwrap(output, args))
  return undefined
}

const refuseText = (output: Output, problem: string, cutShort: boolean): string => {
  output.lastProblem = problem
  // an answer cut off by the token limit would be cut off again: the model is told why it broke
  const cut = cutShort
    ? " Your last message was cut off: it reached the output token limit (finish reason length). Give a shorter answer."
    : ""
  return `Give your final answer by calling the \`${toolName}\` tool.${cut} ${problem}`
}

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

// the text as the arguments the tool would take (wrapped Schemas take { answer })
const argumentsFor = (output: Output, json: string): string => (output.wrapped ? `{"answer":${json}}` : json)

const fence = /```(?:json)?\s*\n([\s\S]*?)```/

/** The JSON a text answer holds: a fenced block's content, or the whole trimmed text. */
const jsonIn = (text: string): string | undefined => {
  const trimmed = text.trim()
  if (trimmed === "") return undefined
  return fence.exec(trimmed)?.[1]?.trim() ?? trimmed
}
