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
import * as Schema from "effect/Schema"

/**
 * What kind of problem a violation is, for code that reacts to one without parsing its text:
 *
 * - `"json-syntax"`: the arguments are not JSON (the error's `location` says where parsing
 *   stopped);
 * - `"too-deep"`: objects and arrays are nested deeper than `ToolArgs.maxDepth`; nothing
 *   deeper was looked at;
 * - `"missing-key"`: a required key is absent;
 * - `"unexpected-key"`: a key the parameters do not declare (the tool rejects excess keys),
 *   or, at an object, how many more of its keys are (past `ToolArgs.maxListedExcessKeys`);
 *   also an element past the end of a tuple (`Schema.Tuple` takes no extra elements under
 *   either excess-key policy, and its wire schema says so), described as an element;
 * - `"type"`: a value of the wrong type, or matching no member of a union or literal set;
 * - `"check"`: a value of the right type that fails a refinement (a bound, a length, a
 *   pattern, a custom check).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ViolationKind = Schema.Literals(["json-syntax", "too-deep", "missing-key", "unexpected-key", "type", "check"])

/**
 * @since 0.1.0
 * @category models
 */
export type ViolationKind = typeof ViolationKind.Type

/**
 * One problem with a tool call's arguments, as data and in words:
 *
 * - `path`: where, as object keys and array indices (empty for the arguments as a whole);
 * - `kind`: what kind of problem ({@link ViolationKind});
 * - `expected`: a short rendering of what was wanted there, e.g. `a string`,
 *   `"read" | "write"`, `an object { name: string, value: string }`, `a value greater than 0`
 *   (bounded: big shapes are cut with `…`);
 * - `actual`: a bounded preview of what was received there, absent exactly when nothing was
 *   (a missing key, the end of the input);
 * - `message`: the problem in words the model can act on, as listed in the error's message.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Violation = Schema.Struct({
  path: Schema.Array(Schema.Union([Schema.String, Schema.Number])),
  kind: ViolationKind,
  expected: Schema.String,
  actual: Schema.optionalKey(Schema.String),
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
 * A tool call's arguments are not JSON (`location` says where parsing stopped), are nested
 * deeper than `ToolArgs.maxDepth`, or do not decode through the tool's parameter Schema.
 * `violations` lists every problem as data (path, kind, what was expected, what was
 * received), but for an object's unexpected keys past `ToolArgs.maxListedExcessKeys`, which
 * are one `unexpected-key` violation at the object counting them (a model can invent
 * hundreds of thousands); the message is written for the model and lists the same
 * violations in words:
 *
 * ```text
 * Invalid arguments for tool "deploy" (2 problems):
 * - at replicas: Missing key, expected a number
 * - at mode: Expected "read" | "write", got "exec"
 * ```
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
 * (`^[a-zA-Z0-9_-]{1,64}$`), or its parameters are not an object schema or hold a type JSON
 * cannot carry. `reason` says which: `"name"`, `"parameters"`, `"timeout"`, `"definition"`
 * for a value that is no tool or a definition with a field of the wrong kind (past the types:
 * a description that is no text, an `excessKeys` that is neither `"reject"` nor `"ignore"`, an
 * `execute` that is no function), `"scope"` when the registering scope was closed already (the
 * tool would have been unregistered at once), or `"options"` when a capability's options
 * cannot make its tools (`Files.layer`'s, say).
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
