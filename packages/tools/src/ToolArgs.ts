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
 * - at command: Missing key, expected a string
 * ```
 *
 * - An empty (or all-whitespace) string means `{}`: providers send it for calls without
 *   arguments.
 * - Arguments that are no string at all (past the types) are a `json-syntax` violation too.
 * - Text that is not JSON fails with where parsing stopped (line, column) and an excerpt of
 *   that line with a caret under the spot.
 * - Objects and arrays nested deeper than {@link maxDepth} levels fail with one `too-deep`
 *   violation naming where the limit was crossed, before any decoding: parsing and decoding
 *   are total and bounded whatever the model writes.
 * - Decoding collects every issue (`errors: "all"`), each with its path, what was expected and
 *   a bounded preview of what was received; a missing key says what belongs there (the type,
 *   the literal set, the shape of an object). Excess keys are rejected or ignored as the tool
 *   says; a rejected key names the keys that are allowed and the one probably meant. In each
 *   object the first {@link maxListedExcessKeys} unexpected keys are violations of their own,
 *   the rest one violation at the object that counts them and names the first few.
 * - Each violation is also data (`ToolErrors.Violation`): `path`, `kind`, `expected`,
 *   `actual` (absent when nothing was received) and `message`.
 * - Decoding goes through `Schema.toCodecJson` of the parameters, the same codec the wire
 *   schema describes, so what the model is told and what is accepted agree wherever JSON
 *   Schema can say it (see `Tool.make` for what it cannot, which the decoder enforces alone).
 * - A valid call costs about what Ajv's compiled validator does: it is decoded by Effect's
 *   JIT-compiled decoder of that codec, and only a call that fails it goes through the full
 *   decode that collects every violation (see `internal/fast.ts`). Both accept the same
 *   arguments and produce the same value.
 * - Tools defined from a raw JSON Schema are parsed, not decoded (the depth limit applies).
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaParser from "effect/SchemaParser"
import { expectedAt, expectedOf, maxExpectedLength } from "./internal/expected.ts"
import { fastDecoder, noValue } from "./internal/fast.ts"
import { beyondDepth, describeAt, excerptAt, isEmptyStruct, locateSyntaxError, positionOf } from "./internal/json.ts"
import { clip, formatPath, plural, preview, suggest } from "./internal/text.ts"
import type * as Tool from "./Tool.ts"
import { ToolArgsError, type Violation, type ViolationKind } from "./ToolError.ts"

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
 * `violations` field keeps them all; only excess keys are summarized there too, see
 * {@link maxListedExcessKeys}).
 *
 * @since 0.1.0
 * @category formatting
 */
export const maxListedViolations = 25

/**
 * How many unexpected keys of one object are reported one by one; the rest of that object's
 * unexpected keys are one violation at the object, counting them and naming the first few.
 *
 * Why a limit: a model can write 400,000 invented keys in a few megabytes, and describing each
 * (its preview, the key it probably meant) took seconds and built an error of 400,000
 * violations, all for a message that lists 25. Why 10: it leaves the message room for the
 * object's other violations, which Effect reports after its excess keys.
 *
 * @since 0.1.0
 * @category formatting
 */
export const maxListedExcessKeys = 10

/**
 * How deeply objects and arrays may nest in a tool call's arguments (the arguments object
 * itself is level 1). Deeper arguments are `INVALID_ARGS` with one `too-deep` violation.
 *
 * Why a limit: `JSON.parse` is iterative and takes any depth, but what comes after recurses
 * once per level or more — Effect's decoder (a recursive parameter Schema overflows Node's
 * default stack at about 1,500 levels of JSON when called from the top of the stack, at fewer
 * from inside a fiber), `JSON.stringify` (about 5,000 levels), and whatever a raw JSON-Schema tool
 * does with its input. A model can write 100,000 levels in 200 KB. Why 256: real tool
 * arguments nest a handful of levels, and 256 leaves the decoder several times the stack it
 * needs at that depth.
 *
 * @since 0.1.0
 * @category decoding
 */
export const maxDepth = 256

const depthExpectation = `at most ${maxDepth} levels of nested objects and arrays`

/**
 * Parses raw arguments as JSON. An empty or all-whitespace string is `{}`. Text that is not
 * JSON, and JSON nesting deeper than {@link maxDepth}, are `ToolArgsError`s.
 *
 * @since 0.1.0
 * @category decoding
 */
export const parse = (tool: string, raw: string): Result.Result<Schema.Json, ToolArgsError> => {
  if (typeof raw !== "string") return Result.fail(notText(tool, raw))
  if (raw.trim().length === 0) return Result.succeed({})
  let value: Schema.Json
  try {
    value = JSON.parse(raw) as Schema.Json
  } catch (error) {
    return Result.fail(syntaxError(tool, raw, error))
  }
  const deep = beyondDepth(value, maxDepth)
  if (deep === undefined) return Result.succeed(value)
  return Result.fail(
    fromViolations(tool, [
      violation(deep.path, "too-deep", depthExpectation, `Nested too deeply, expected ${depthExpectation}`, preview(deep.value))
    ])
  )
}

// Arguments that are no string at all (past the types: a middleware that put the parsed object
// back, an adapter written in JavaScript) are not JSON text either: the arguments' fault, said
// so, rather than a TypeError blamed on the tool.
const notText = (tool: string, raw: unknown): ToolArgsError => {
  const actual = preview(raw)
  const message = `not a JSON text (a string) but ${actual}`
  return withoutStack(() =>
    new ToolArgsError({
      tool,
      message: `Invalid arguments for tool "${tool}": the arguments are ${message}`,
      violations: [violation([], "json-syntax", "a JSON text", message, actual)]
    })
  )
}

const violation = (
  path: ReadonlyArray<string | number>,
  kind: ViolationKind,
  expected: string,
  message: string,
  actual?: string
): Violation => (actual === undefined ? { path, kind, expected, message } : { path, kind, expected, actual, message })

// An argument error is the model's mistake, answered as data: its stack trace would always
// point into this module, nobody reads it, and capturing one costs more than the rest of
// building the error (V8 walks the stack in the `Error` constructor). So none is captured.
const withoutStack = <A>(make: () => A): A => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return make()
  } finally {
    Error.stackTraceLimit = limit
  }
}

const syntaxError = (tool: string, raw: string, error: unknown): ToolArgsError => {
  const problem = locateSyntaxError(raw)
  if (problem === undefined) {
    // The engine rejected what the scanner accepts (it should not happen): use its words.
    const message = `not valid JSON: ${HarnessError.describe(error)}`
    return withoutStack(() =>
      new ToolArgsError({
        tool,
        message: `Invalid arguments for tool "${tool}": the arguments are ${message}`,
        violations: [violation([], "json-syntax", "valid JSON", message, preview(raw))]
      })
    )
  }
  const { column, line } = positionOf(raw, problem.offset)
  const found = describeAt(raw, problem.offset)
  const message = `not valid JSON: expected ${problem.expected}, found ${found} at line ${line}, column ${column}`
  return withoutStack(() =>
    new ToolArgsError({
      tool,
      message: `Invalid arguments for tool "${tool}": the arguments are ${message}:\n${
        excerptAt(raw, problem.offset, { before: 40, after: 30 })
      }`,
      // At the end of the input nothing was found: no `actual`.
      violations: [
        violation([], "json-syntax", problem.expected, message, problem.offset < raw.length ? found : undefined)
      ],
      location: { offset: problem.offset, line, column }
    })
  )
}

/**
 * The decoder of a tool's arguments: parse, then decode through the parameter Schema (or,
 * for a raw JSON Schema tool, parse only).
 *
 * Build it once per tool and reuse it: building compiles the Schema's parser (and enables
 * Effect's JIT compiler for the parameters' codec).
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
  const codec = Schema.toCodecJson(parameters.schema)
  // Valid arguments take the fast path; the full decode runs only to report why the fast
  // path had no value (see internal/fast.ts), so it may be as thorough as it likes.
  const options: SchemaAST.ParseOptions = {
    errors: "all",
    onExcessProperty: parameters.excessKeys === "reject" ? "error" : "ignore"
  }
  const fast = fastDecoder(codec, parameters.excessKeys)
  const decode = SchemaParser.decodeUnknownExit(codec, options)
  // The Schema is erased in `Tool.Parameters`; `make` ties its Type to `A`.
  return ((raw) => {
    const parsed = parse(name, raw)
    if (Result.isFailure(parsed)) return Result.fail(parsed.failure)
    const input = parsed.success
    const value = fast(input)
    if (value !== noValue) return Result.succeed(value)
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
    const actual = preview(input)
    return Result.fail(fromViolations(tool, [violation([], "type", "an object", `Expected object, got ${actual}`, actual)]))
  }
  const object = input as Schema.JsonObject
  const keys = Object.keys(object)
  if (keys.length === 0 || excessKeys === "ignore") return Result.succeed({})
  const listed = keys.slice(0, maxListedExcessKeys).map((key) =>
    violation([key], "unexpected-key", "no keys", "Unexpected key (this tool takes no arguments)", preview(object[key]))
  )
  const count = keys.length - maxListedExcessKeys
  const first = keys.slice(maxListedExcessKeys, maxListedExcessKeys + namedOmitted)
  const summary = count <= 0 ? [] : [excessSummary([], { count, first }, noArgumentsExcess)]
  return Result.fail(fromViolations(tool, [...listed, ...summary]))
}

/**
 * The `ToolArgsError` listing violations. Like every argument error it carries no stack
 * trace: it is an answer to the model, not a defect of the program.
 *
 * @since 0.1.0
 * @category formatting
 */
export const fromViolations = (tool: string, violations: ReadonlyArray<Violation>): ToolArgsError =>
  withoutStack(() => new ToolArgsError({ tool, message: format(tool, violations), violations }))


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
const standard = SchemaIssue.makeFormatterStandardSchemaV1({ checkHook: (issue) => checkMessage(issue) })

// What a check that failed wants, when it does not say: the parameters' own check.
const unnamedCheck = "a value that passes the parameters' check"

// A check without a `message` or an `expected` annotation is `<filter>` to Effect ("Expected
// <filter>, got …"), which tells the model nothing it can act on: it is named for what it is.
const checkMessage = (issue: SchemaIssue.Filter): string | undefined => {
  const own = SchemaIssue.defaultCheckHook(issue)
  if (own !== undefined || issue.issue._tag !== "InvalidValue") return own
  const expected = issue.issue.annotations?.["expected"]
  return typeof expected === "string" || checkExpectation(issue.filter) !== undefined ? undefined : `Expected ${unnamedCheck}`
}

type Path = ReadonlyArray<string | number>

// `Schema.Number` in JSON is a number or one of three words for what JSON cannot write; for a
// string the words alone are named (`Expected "Infinity" | "-Infinity" | "NaN"`), which sends a
// model that wrote "forty two" looking for a word: it is told a number is wanted.
const nonFinite = /(?:a )?(?:number \| )?"Infinity" \| "-Infinity" \| "NaN"/g
const numberWords = (text: string): string => text.replace(nonFinite, "a number")

// `parent` is the object or array being decoded where the issue arose: a missing key's issue
// carries no Schema, its parent's says what belongs there.
const collect = (root: SchemaIssue.Issue, input: unknown): Array<Violation> => {
  const out: Array<Violation> = []
  const walk = (issue: SchemaIssue.Issue, path: Path, parent: SchemaAST.AST | undefined): void => {
    switch (issue._tag) {
      case "Pointer":
        return walk(issue.issue, [...path, ...issue.path.map(segment)], parent)
      case "Composite":
        return walkObject(issue, path)
      case "Encoding":
        return walk(issue.issue, path, parent)
      case "AnyOf":
        if (issue.issues.length > 0) {
          for (const inner of issue.issues) walk(inner, path, parent)
          return
        }
        break
      case "MissingKey":
        out.push(missingKey(issue, path, parent))
        return
      case "UnexpectedKey":
        out.push(unexpectedKey(issue, path, input))
        return
    }
    const facts = leafFacts(issue)
    const kind = facts.kind
    const expected = numberWords(facts.expected)
    for (const found of standard(issue).issues) {
      const at = [...path, ...(found.path ?? []).map((p) => segment(typeof p === "object" ? p.key : p))]
      const received = valueAt(input, at)
      const message = numberWords(found.message)
      if (!received.found) {
        out.push(violation(at, kind, expected, message))
        continue
      }
      const actual = preview(received.value)
      out.push(violation(at, kind, expected, `${message}, got ${actual}`, actual))
    }
  }
  // An object's unexpected keys past the first few are counted, not described one by one
  // (see `maxListedExcessKeys`); their summary goes where the first of them would have.
  const walkObject = (issue: SchemaIssue.Composite, path: Path): void => {
    let seen = 0
    let summaryAt = 0
    const omitted = { count: 0, first: [] as Array<string | number> }
    for (const inner of issue.issues) {
      const key = excessKeyOf(inner)
      if (key !== undefined && seen++ >= maxListedExcessKeys) {
        if (omitted.count++ === 0) summaryAt = out.length
        if (omitted.first.length < namedOmitted) omitted.first.push(key)
        continue
      }
      walk(inner, path, issue.ast)
    }
    if (omitted.count === 0) return
    out.splice(summaryAt, 0, excessSummary(path, omitted, excessOf(issue.ast)))
  }
  walk(root, [], undefined)
  return out
}

// The key of an object's issue that is an unexpected key (Effect points at it by its key).
const excessKeyOf = (issue: SchemaIssue.Issue): string | number | undefined =>
  issue._tag === "Pointer" && issue.issue._tag === "UnexpectedKey" && issue.path.length === 1
    ? segment(issue.path[0]!)
    : undefined

const allowedKeys = (ast: SchemaAST.AST): ReadonlyArray<string> =>
  SchemaAST.isObjects(ast) ? ast.propertySignatures.map((p) => String(p.name)) : []

const excessExpectation = (allowed: ReadonlyArray<string>): string =>
  allowed.length === 0 ? "no keys" : clip(`one of the keys ${allowed.join(", ")}`, maxExpectedLength)

const excessHint = (allowed: ReadonlyArray<string>): string =>
  allowed.length === 0 ? "this object takes no keys" : `allowed keys: ${allowed.join(", ")}`

/** What a container holding more than it declares takes instead, in the words of its kind. */
interface Excess {
  readonly expected: string
  readonly hint: string
  /** What its extras are: an object's are keys, a tuple's elements. */
  readonly noun: "key" | "element"
}

const noArgumentsExcess: Excess = { expected: "no keys", hint: "this tool takes no arguments", noun: "key" }

// Effect reports a tuple's extra elements as unexpected keys of the array, whatever the
// excess-key policy (and the wire schema closes tuples too): they are described as elements.
const excessOf = (ast: SchemaAST.AST): Excess => {
  if (SchemaAST.isArrays(ast)) {
    const most = plural(ast.elements.length, "element")
    return { expected: `at most ${most}`, hint: `this array takes at most ${most}`, noun: "element" }
  }
  const allowed = allowedKeys(ast)
  const keys = recordKeys(ast)
  if (keys !== undefined) {
    const named = allowed.length === 0 ? "" : ` or one of ${allowed.join(", ")}`
    return { expected: clip(`a key that is ${keys}${named}`, maxExpectedLength), hint: `its keys must be ${keys}${named}`, noun: "key" }
  }
  return { expected: excessExpectation(allowed), hint: excessHint(allowed), noun: "key" }
}

// What a record's keys must be, in the words of their checks ("a string matching the RegExp
// ^[a-z]+$"): a key it refuses is not a key it takes none of.
const recordKeys = (ast: SchemaAST.AST): string | undefined => {
  if (!SchemaAST.isObjects(ast) || ast.indexSignatures.length === 0) return undefined
  return ast.indexSignatures.map((signature) => {
    const checks = signature.parameter.checks ?? []
    const said = checks.map((check) => check.annotations?.["expected"]).filter((expected) => typeof expected === "string")
    return said.length > 0 ? said.join(" and ") : signature.parameter._tag === "String" ? "a string" : "a key of its record"
  }).join(", or ")
}

// Enough names for the model to recognise what it did (numbered keys, a pasted object).
const namedOmitted = 3

// The one violation standing for an object's unexpected keys past `maxListedExcessKeys`: at
// the object, counting them, `actual` naming the first few (each cut like any key in a path).
const excessSummary = (
  path: Path,
  omitted: { readonly count: number; readonly first: ReadonlyArray<string | number> },
  excess: Excess
): Violation => {
  const names = omitted.first.map((key) => typeof key === "number" ? `[${key}]` : JSON.stringify(clip(key, 40))).join(", ")
  const actual = omitted.count > omitted.first.length ? `${names}, …` : names
  const message = `${plural(omitted.count, `more unexpected ${excess.noun}`)} beside those listed: ${actual} (${excess.hint})`
  return violation(path, "unexpected-key", excess.expected, message, actual)
}

const segment = (key: PropertyKey): string | number => (typeof key === "number" ? key : String(key))

const missingKey = (issue: SchemaIssue.MissingKey, path: Path, parent: SchemaAST.AST | undefined): Violation => {
  const key = path.at(-1)
  const expected = parent === undefined || key === undefined ? undefined : expectedAt(parent, key)
  // A key's own `messageMissingKey` is what its author chose to say: keep it as it is.
  const own = issue.annotations?.messageMissingKey
  const message = typeof own === "string"
    ? own
    : expected === undefined
    ? SchemaIssue.defaultLeafHook(issue)
    : `Missing key, expected ${expected}`
  return violation(path, "missing-key", expected ?? "a value", message)
}

const unexpectedKey = (issue: SchemaIssue.UnexpectedKey, path: Path, input: unknown): Violation => {
  const received = valueAt(input, path)
  const actual = received.found ? preview(received.value) : undefined
  const excess = excessOf(issue.ast)
  if (excess.noun === "element") return violation(path, "unexpected-key", excess.expected, `Unexpected element (${excess.hint})`, actual)
  const allowed = allowedKeys(issue.ast)
  const key = path.at(-1)
  const meant = typeof key === "string" && allowed.length > 0 ? suggest(key, allowed) : undefined
  const message = meant === undefined ? `Unexpected key (${excess.hint})` : `Unexpected key, did you mean "${meant}"? (${excess.hint})`
  return violation(path, "unexpected-key", excess.expected, message, actual)
}

// The kind of a leaf issue and what its Schema wanted: a type's description, a check's own
// `expected` annotation.
const leafFacts = (issue: SchemaIssue.Issue): { readonly kind: ViolationKind; readonly expected: string } => {
  switch (issue._tag) {
    case "InvalidType":
    case "AnyOf":
    case "OneOf":
      return { kind: "type", expected: expectedOf(issue.ast) }
    case "Filter":
      return { kind: "check", expected: checkExpectation(issue.filter) ?? unnamedCheck }
    case "InvalidValue": {
      const expected = issue.annotations?.["expected"]
      return { kind: "check", expected: typeof expected === "string" ? expected : "a valid value" }
    }
    default:
      // Forbidden: a check that needs effects, which parameter Schemas cannot have.
      return { kind: "check", expected: "a value the parameters accept" }
  }
}

const checkExpectation = (check: SchemaAST.Check<any>): string | undefined => {
  const own = check.annotations?.expected
  if (typeof own === "string") return own
  if (check._tag === "Filter") return undefined
  const members = check.checks.flatMap((member) => checkExpectation(member) ?? [])
  return members.length === 0 ? undefined : members.join(" and ")
}

const valueAt = (input: unknown, path: Path): { readonly found: boolean; readonly value?: unknown } => {
  let current = input
  for (const key of path) {
    if (typeof current !== "object" || current === null || !Object.hasOwn(current, key)) return { found: false }
    current = (current as Record<string | number, unknown>)[key]
  }
  return { found: true, value: current }
}
