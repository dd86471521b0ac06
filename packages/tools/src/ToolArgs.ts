/**
 * Decoding a tool call's arguments at the model boundary. The model writes its arguments as a
 * JSON string; before a tool body runs they are parsed and decoded through the tool's
 * parameter Schema, and every failure becomes one `ToolArgsError` (`INVALID_ARGS`) whose
 * message the model can act on in a single retry:
 *
 * ```text
 * Invalid arguments for tool "bash" (3 problems):
 * - at mode: Expected "read" | "write", got "exec"
 * - at timeoutMs: Expected a value greater than 0, got -5
 * - at command: Missing key
 * ```
 *
 * - An empty (or all-whitespace) string means `{}`: providers send it for calls without
 *   arguments.
 * - Text that is not JSON fails with where parsing stopped (line, column) and an excerpt of
 *   that line with a caret under the spot.
 * - Decoding collects every issue (`errors: "all"`), each with its path, what was expected and
 *   a bounded preview of what was received. Excess keys are rejected or ignored as the tool
 *   says; a rejected key names the keys that are allowed and the one probably meant.
 * - Decoding goes through `Schema.toCodecJson` of the parameters, the same codec the wire
 *   schema describes, so what the model is told and what is accepted agree.
 * - Tools defined from a raw JSON Schema are parsed, not decoded.
 *
 * @since 0.1.0
 */
import { Cause, Exit, Option, Result, Schema, SchemaAST, SchemaIssue, SchemaParser } from "effect"
import { describeAt, excerptAt, isEmptyStruct, locateSyntaxError, positionOf } from "./internal/json.ts"
import { formatPath, plural, preview, suggest } from "./internal/text.ts"
import type * as Tool from "./Tool.ts"
import { ToolArgsError, type Violation } from "./ToolError.ts"

/**
 * Raw arguments in, decoded arguments or a `ToolArgsError` out. It throws only when the
 * parameter Schema itself is broken (a check that throws): that is a defect of the tool, and
 * the registry reports it as `TOOL_FAILED`.
 *
 * @since 0.1.0
 * @category models
 */
export type Decoder<A> = (raw: string) => Result.Result<A, ToolArgsError>

/**
 * How many violations a message lists before it summarizes the rest (the error's
 * `violations` field keeps them all).
 *
 * @since 0.1.0
 * @category formatting
 */
export const maxListedViolations = 25

/**
 * Parses raw arguments as JSON. An empty or all-whitespace string is `{}`.
 *
 * @since 0.1.0
 * @category decoding
 */
export const parse = (tool: string, raw: string): Result.Result<Schema.Json, ToolArgsError> => {
  if (raw.trim().length === 0) return Result.succeed({})
  try {
    return Result.succeed(JSON.parse(raw) as Schema.Json)
  } catch (error) {
    return Result.fail(syntaxError(tool, raw, error))
  }
}

const syntaxError = (tool: string, raw: string, error: unknown): ToolArgsError => {
  const problem = locateSyntaxError(raw)
  if (problem === undefined) {
    // The engine rejected what the scanner accepts (it should not happen): use its words.
    const message = `not valid JSON: ${error instanceof Error ? error.message : String(error)}`
    return new ToolArgsError({
      tool,
      message: `Invalid arguments for tool "${tool}": the arguments are ${message}`,
      violations: [{ path: [], message }]
    })
  }
  const { column, line } = positionOf(raw, problem.offset)
  const message = `not valid JSON: expected ${problem.expected}, found ${
    describeAt(raw, problem.offset)
  } at line ${line}, column ${column}`
  return new ToolArgsError({
    tool,
    message: `Invalid arguments for tool "${tool}": the arguments are ${message}:\n${
      excerptAt(raw, problem.offset, { before: 40, after: 30 })
    }`,
    violations: [{ path: [], message }],
    location: { offset: problem.offset, line, column }
  })
}

/**
 * The decoder of a tool's arguments: parse, then decode through the parameter Schema (or,
 * for a raw JSON Schema tool, parse only).
 *
 * Build it once per tool and reuse it: building compiles the Schema's parser.
 *
 * @example
 * ```ts
 * import { Tool, ToolArgs } from "@dsh/tools"
 * import { Effect, Result, Schema } from "effect"
 *
 * const add = Tool.make("add", {
 *   description: "Adds two integers",
 *   parameters: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
 *   execute: ({ a, b }) => Effect.succeed(String(a + b))
 * })
 * const decode = ToolArgs.decoder(add)
 * Result.isSuccess(decode(`{"a": 1, "b": 2}`)) // true
 * ```
 *
 * @since 0.1.0
 * @category decoding
 */
export const decoder = <A>(tool: Tool.Tool<A, any, any>): Decoder<A> => {
  const parameters = tool.parameters
  if (parameters._tag === "JsonSchema") {
    // Raw tools take whatever JSON the model wrote: they validate their own input.
    return ((raw) => parse(tool.name, raw)) as Decoder<A>
  }
  const name = tool.name
  if (isEmptyStruct(parameters.schema.ast)) return noArguments(name, parameters.excessKeys) as Decoder<A>
  const decode = SchemaParser.decodeUnknownExit(Schema.toCodecJson(parameters.schema), {
    errors: "all",
    onExcessProperty: parameters.excessKeys === "reject" ? "error" : "ignore"
  })
  // The Schema is erased in `Tool.Parameters`; `make` ties its Type to `A`.
  return ((raw) => {
    const parsed = parse(name, raw)
    if (Result.isFailure(parsed)) return Result.fail(parsed.failure)
    const input = parsed.success
    const exit = decode(input)
    if (Exit.isSuccess(exit)) return Result.succeed(exit.value)
    const issue = Cause.findErrorOption(exit.cause)
    // Rethrow the Schema's own defect rather than the adapter's wrapper around it.
    if (Option.isNone(issue)) throw Cause.squash(exit.cause)
    return Result.fail(fromIssue(name, issue.value, input))
  }) as Decoder<A>
}

// `Schema.Struct({})` decodes any value but null and undefined; a tool without parameters
// takes an object, and with "reject" an empty one.
const noArguments = (tool: string, excessKeys: Tool.ExcessKeys): Decoder<Record<string, never>> => (raw) => {
  const parsed = parse(tool, raw)
  if (Result.isFailure(parsed)) return Result.fail(parsed.failure)
  const input = parsed.success
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return Result.fail(fromViolations(tool, [{ path: [], message: `Expected object, got ${preview(input)}` }]))
  }
  const keys = Object.keys(input)
  if (keys.length === 0 || excessKeys === "ignore") return Result.succeed({})
  return Result.fail(
    fromViolations(tool, keys.map((key) => ({ path: [key], message: "Unexpected key (this tool takes no arguments)" })))
  )
}

/**
 * The `ToolArgsError` listing violations.
 *
 * @since 0.1.0
 * @category formatting
 */
export const fromViolations = (tool: string, violations: ReadonlyArray<Violation>): ToolArgsError =>
  new ToolArgsError({ tool, message: format(tool, violations), violations })

/**
 * The `ToolArgsError` for a decoding issue on `input`: every violation, with its path, what
 * was expected and (when there is one) a preview of what was received.
 *
 * @since 0.1.0
 * @category formatting
 */
export const fromIssue = (tool: string, issue: SchemaIssue.Issue, input: unknown): ToolArgsError => {
  return fromViolations(tool, collect(issue, input))
}

/**
 * The model-facing message listing violations (at most {@link maxListedViolations}).
 *
 * @since 0.1.0
 * @category formatting
 */
export const format = (tool: string, violations: ReadonlyArray<Violation>): string => {
  const lines = violations.slice(0, maxListedViolations).map((v) =>
    v.path.length === 0 ? `- ${v.message}` : `- at ${formatPath(v.path)}: ${v.message}`
  )
  if (violations.length > maxListedViolations) {
    lines.push(`- … and ${plural(violations.length - maxListedViolations, "more problem")}`)
  }
  return `Invalid arguments for tool "${tool}" (${plural(violations.length, "problem")}):\n${lines.join("\n")}`
}

// Messages without the received value: we add our own bounded preview instead of
// `reportInput`, which would echo inputs of any size.
const standard = SchemaIssue.makeFormatterStandardSchemaV1()

type Path = ReadonlyArray<string | number>

const collect = (root: SchemaIssue.Issue, input: unknown): Array<Violation> => {
  const out: Array<Violation> = []
  const walk = (issue: SchemaIssue.Issue, path: Path): void => {
    switch (issue._tag) {
      case "Pointer":
        return walk(issue.issue, [...path, ...issue.path.map(segment)])
      case "Composite":
        for (const inner of issue.issues) walk(inner, path)
        return
      case "Encoding":
        return walk(issue.issue, path)
      case "AnyOf":
        if (issue.issues.length > 0) {
          for (const inner of issue.issues) walk(inner, path)
          return
        }
        break
      case "MissingKey":
        out.push({ path, message: SchemaIssue.defaultLeafHook(issue) })
        return
      case "UnexpectedKey":
        out.push({ path, message: unexpectedKey(issue, path) })
        return
    }
    for (const found of standard(issue).issues) {
      const at = [...path, ...(found.path ?? []).map((p) => segment(typeof p === "object" ? p.key : p))]
      const received = valueAt(input, at)
      out.push({ path: at, message: received.found ? `${found.message}, got ${preview(received.value)}` : found.message })
    }
  }
  walk(root, [])
  return out
}

const segment = (key: PropertyKey): string | number => (typeof key === "number" ? key : String(key))

const unexpectedKey = (issue: SchemaIssue.UnexpectedKey, path: Path): string => {
  const allowed = SchemaAST.isObjects(issue.ast) ? issue.ast.propertySignatures.map((p) => String(p.name)) : []
  if (allowed.length === 0) return "Unexpected key (this object takes no keys)"
  const key = path.at(-1)
  const meant = typeof key === "string" ? suggest(key, allowed) : undefined
  const list = `allowed keys: ${allowed.join(", ")}`
  return meant === undefined ? `Unexpected key (${list})` : `Unexpected key, did you mean "${meant}"? (${list})`
}

const valueAt = (input: unknown, path: Path): { readonly found: boolean; readonly value?: unknown } => {
  let current = input
  for (const key of path) {
    if (typeof current !== "object" || current === null || !Object.hasOwn(current, key)) return { found: false }
    current = (current as Record<string | number, unknown>)[key]
  }
  return { found: true, value: current }
}
