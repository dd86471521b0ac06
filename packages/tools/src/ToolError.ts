/**
 * The typed failures of tools: what the registry raises (an unknown tool, invalid arguments, a
 * defect, a timeout, an interruption), what execution middleware raises (a denial) and what
 * registration raises (an invalid or duplicate tool). Each carries a stable code from the
 * catalog in `@dsh/llm`; a tool result built from one carries its `{tag, code}`.
 *
 * A tool body's own failures are not defined here: a tool fails with any harness error (a
 * `Schema.TaggedError` made with `HarnessError.fields(code)`), and its result carries that
 * error's code.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import { Schema } from "effect"

/**
 * One problem with a tool call's arguments: where (a path of object keys and array indices,
 * empty for the arguments as a whole) and what, in words the model can act on.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Violation = Schema.Struct({
  path: Schema.Array(Schema.Union([Schema.String, Schema.Number])),
  message: Schema.String
})

/**
 * @since 0.1.0
 * @category models
 */
export interface Violation extends Schema.Schema.Type<typeof Violation> {}

/**
 * Where in the raw arguments JSON parsing stopped: a 0-based offset and the 1-based line and
 * column it falls on.
 *
 * @since 0.1.0
 * @category schemas
 */
export const JsonLocation = Schema.Struct({
  offset: Schema.Int,
  line: Schema.Int,
  column: Schema.Int
})

/**
 * @since 0.1.0
 * @category models
 */
export interface JsonLocation extends Schema.Schema.Type<typeof JsonLocation> {}

/**
 * A tool call's arguments are not JSON (`location` says where parsing stopped), or do not
 * decode through the tool's parameter Schema (`violations` lists every problem). The message
 * is written for the model: it lists every violation with its path, what was expected and
 * what was received.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolArgsError extends Schema.TaggedError<ToolArgsError>()("ToolArgsError", {
  ...HarnessError.fields("INVALID_ARGS"),
  tool: Schema.String,
  violations: Schema.Array(Violation),
  location: Schema.optionalKey(JsonLocation)
}) {}

/**
 * The model called a tool that is not registered. `available` lists the tools that are.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnknownToolError extends Schema.TaggedError<UnknownToolError>()("UnknownToolError", {
  ...HarnessError.fields("UNKNOWN_TOOL"),
  tool: Schema.String,
  available: Schema.Array(Schema.String)
}) {}

/**
 * A tool's body died: it threw, or hit a defect. `cause` keeps the defect; the message carries
 * only its description, never a stack trace.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolFailedError extends Schema.TaggedError<ToolFailedError>()("ToolFailedError", {
  ...HarnessError.fields("TOOL_FAILED"),
  tool: Schema.String
}) {}

/**
 * Execution middleware refused to run a call (a permission, a sandbox, plan mode).
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolDeniedError extends Schema.TaggedError<ToolDeniedError>()("ToolDeniedError", {
  ...HarnessError.fields("TOOL_DENIED"),
  tool: Schema.String,
  reason: Schema.String
}) {}

/**
 * A tool call ran longer than its tool's timeout and was interrupted.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolTimeoutError extends Schema.TaggedError<ToolTimeoutError>()("ToolTimeoutError", {
  ...HarnessError.fields("TOOL_TIMEOUT"),
  tool: Schema.String,
  timeoutMillis: Schema.Number
}) {}

/**
 * Work was interrupted before it finished: a tool body that was interrupted, or a call the
 * loop never ran or never finished (an abort, a disposal).
 *
 * @since 0.1.0
 * @category errors
 */
export class AbortedError extends Schema.TaggedError<AbortedError>()("AbortedError", {
  ...HarnessError.fields("ABORTED"),
  tool: Schema.optionalKey(Schema.String),
  reason: Schema.optionalKey(Schema.String)
}) {}

/**
 * A tool definition was refused at registration: its name is not one providers accept
 * (`^[a-zA-Z0-9_-]{1,64}$`), or its parameters are not an object schema.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidToolError extends Schema.TaggedError<InvalidToolError>()("InvalidToolError", {
  ...HarnessError.fields("INVALID_TOOL"),
  tool: Schema.String,
  reason: Schema.String
}) {}

/**
 * A tool was registered under a name that is already registered.
 *
 * @since 0.1.0
 * @category errors
 */
export class DuplicateToolError extends Schema.TaggedError<DuplicateToolError>()("DuplicateToolError", {
  ...HarnessError.fields("DUPLICATE_TOOL"),
  tool: Schema.String
}) {}

/**
 * What registering a tool can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type RegistrationError = InvalidToolError | DuplicateToolError

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [
  ToolArgsError,
  UnknownToolError,
  ToolFailedError,
  ToolDeniedError,
  ToolTimeoutError,
  AbortedError,
  InvalidToolError,
  DuplicateToolError
] as const
