/**
 * A tool: a name, a description the model reads, the parameters it takes and an Effect that
 * runs it.
 *
 * {@link make} defines a tool from a `Schema.Struct`: its body receives the decoded arguments
 * (no casts), fails only with harness errors (each carries a catalog code, which the tool
 * result reports), and may require services, which flow into the Layer that registers it. The
 * JSON Schema the model sees is generated from the same Struct ({@link wireSchema}), so what
 * the model is told and what the decoder accepts cannot drift apart as far as JSON Schema can
 * say what the Struct checks; what it cannot say (see {@link make}) the decoder still enforces,
 * reporting each violation with its path.
 *
 * {@link fromJsonSchema} defines a tool from a raw JSON Schema (how MCP tools arrive): its
 * arguments are parsed but not decoded; the tool validates its own input.
 *
 * A definition is a plain value. It is checked (name, parameters) when it is registered.
 *
 * @since 0.1.0
 */
import { AdapterSettings, type Content, HarnessError, type ModelRequest } from "@dsh/llm"
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { isEmptyStruct, pathWithoutJsonForm } from "./internal/json.ts"
import { clip, formatPath } from "./internal/text.ts"
import { InvalidToolError } from "./ToolError.ts"

/**
 * @since 0.1.0
 * @category type ids
 */
export const TypeId: TypeId = "~@dsh/tools/Tool"

/**
 * @since 0.1.0
 * @category type ids
 */
export type TypeId = "~@dsh/tools/Tool"

/**
 * What a tool body returns: plain text, or content blocks (text, images, custom blocks).
 *
 * @since 0.1.0
 * @category models
 */
export type Output = string | ReadonlyArray<Content.ToolResultContent>

/**
 * What decoding does with keys the parameter Schema does not declare: `"reject"` them (an
 * `INVALID_ARGS` result naming them, the first `ToolArgs.maxListedExcessKeys` of an object
 * one by one and the rest counted) or `"ignore"` them (they are dropped before the body
 * runs). The default is `"reject"`; see docs/adr/0009-excess-tool-arguments.md.
 *
 * @since 0.1.0
 * @category models
 */
export type ExcessKeys = "reject" | "ignore"

/**
 * The Schemas a tool's parameters may be: a struct whose decoding needs no services.
 *
 * @since 0.1.0
 * @category models
 */
export type ParametersSchema = Schema.Struct<Schema.Struct.Fields> & { readonly DecodingServices: never }

/**
 * How a tool describes its parameters: a Schema (arguments are decoded through it) or a raw
 * JSON Schema (arguments are passed through as parsed JSON).
 *
 * @since 0.1.0
 * @category models
 */
export type Parameters =
  | { readonly _tag: "Schema"; readonly schema: ParametersSchema; readonly excessKeys: ExcessKeys }
  | { readonly _tag: "JsonSchema"; readonly jsonSchema: Schema.JsonObject }

/**
 * A tool whose body takes `Args`, may fail with `E` and requires `R`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tool<Args, E extends HarnessError.HarnessError = never, R = never> {
  readonly [TypeId]: TypeId
  readonly name: string
  readonly description: string
  readonly parameters: Parameters
  /** May run in parallel with other concurrency-safe calls of the same step (read-only tools). */
  readonly concurrencySafe: boolean
  /** A call running longer is interrupted and answered with `TOOL_TIMEOUT`. */
  readonly timeout: Option.Option<Duration.Duration>
  readonly execute: (args: Args) => Effect.Effect<Output, E, R>
}

/**
 * Any tool, whatever its arguments, errors and requirements. (`any` for the arguments: a tool
 * is contravariant in them, so no other type would admit every tool.)
 *
 * @since 0.1.0
 * @category models
 */
export interface Any extends Tool<any, HarnessError.HarnessError, any> {}

/**
 * The services a tool (or a union of tools) requires.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Requirements<T> = T extends Tool<any, any, infer R> ? R : never

/**
 * The errors a tool (or a union of tools) may fail with.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Errors<T> = T extends Tool<any, infer E, any> ? E : never

/**
 * The decoded arguments of a tool.
 *
 * @since 0.1.0
 * @category type-level
 */
export type Args<T> = T extends Tool<infer A, any, any> ? A : never

/**
 * Options shared by both kinds of tool.
 *
 * @since 0.1.0
 * @category models
 */
export interface CommonOptions {
  /** What the tool does, for the model. */
  readonly description: string
  /** Whether calls may run in parallel with other concurrency-safe calls. Defaults to `false`. */
  readonly concurrencySafe?: boolean | undefined
  /**
   * How long a call may run before it is interrupted and answered `TOOL_TIMEOUT`. The body's
   * finalizers are waited for, as long again as the timeout (at most 5 s); a body that still
   * runs then is left to finish on its own, its result dropped. No timeout by default.
   */
  readonly timeout?: Duration.Input | undefined
}

/**
 * Defines a tool whose arguments decode through a `Schema.Struct`.
 *
 * `execute` receives the decoded arguments. Its failures must be harness errors (classes made
 * with `HarnessError.fields(code)`), so every failure reaches the model with a code; its
 * requirements `R` must be provided where the tool is registered.
 *
 * Choose Schemas whose JSON Schema says exactly what they accept:
 *
 * - numbers: `Schema.Finite` or `Schema.Int`, not `Schema.Number`, whose JSON form also admits
 *   the strings `"NaN"`, `"Infinity"` and `"-Infinity"` and loses its checks;
 * - string lengths: `Schema.isMinCodePoints`/`Schema.isMaxCodePoints` (or `NonEmptyString`).
 *   `isMinLength`/`isMaxLength` count UTF-16 code units, JSON Schema counts code points, so
 *   Effect publishes `isMinLength(n)` as `minLength: ⌈n/2⌉`;
 * - no nested `Schema.Struct({})`: Effect reads it as TypeScript's `{}`, any value but null
 *   (only the top-level empty struct, a tool without arguments, is made an empty object);
 * - patterns: a RegExp with the `u` flag (`Schema.isPattern(/^[a-z]+$/u)`). JSON Schema
 *   patterns are Unicode patterns, so Effect publishes only those: without the flag the model
 *   is told any string (a `Schema.Record`'s key pattern too), and learns the pattern only
 *   when a call fails it.
 *
 * What JSON Schema cannot say is left out of the wire schema and enforced by the decoder alone:
 * a `Schema.makeFilter` (on a field or on the whole struct) and what a transformation checks
 * (`FiniteFromString`'s finiteness, a valid `Date` or `URL`). Give such a check a `message` or
 * an `expected` annotation: that is what the model reads when a call fails it (one without
 * either is "Expected a value that passes the parameters' check").
 *
 * @example
 * ```ts
 * import { Tool } from "@dsh/tools"
 * import { Effect, Schema } from "effect"
 *
 * const add = Tool.make("add", {
 *   description: "Adds two integers",
 *   parameters: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
 *   execute: ({ a, b }) => Effect.succeed(String(a + b))
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <S extends ParametersSchema, E extends HarnessError.HarnessError = never, R = never>(
  name: string,
  options: CommonOptions & {
    /** The arguments, as a struct. Field descriptions (`.annotate({ description })`) reach the model. */
    readonly parameters: S
    /** Excess keys: rejected (the default) or ignored. */
    readonly excessKeys?: ExcessKeys | undefined
    readonly execute: (args: S["Type"]) => Effect.Effect<Output, E, R>
  }
): Tool<S["Type"], E, R> =>
  withTimeout({
    [TypeId]: TypeId,
    name,
    description: options.description,
    parameters: { _tag: "Schema", schema: options.parameters, excessKeys: options.excessKeys ?? "reject" },
    concurrencySafe: options.concurrencySafe ?? false,
    execute: options.execute
  }, options.timeout)

/**
 * Defines a tool from a raw JSON Schema (an MCP tool, say). Its arguments are parsed from JSON
 * and passed through undecoded: the tool validates its own input. It is never listed as
 * strict, since nothing here enforces its schema.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromJsonSchema = <E extends HarnessError.HarnessError = never, R = never>(
  name: string,
  options: CommonOptions & {
    /** A JSON Schema of type `"object"`. */
    readonly parameters: Schema.JsonObject
    readonly execute: (args: Schema.Json) => Effect.Effect<Output, E, R>
  }
): Tool<Schema.Json, E, R> =>
  withTimeout({
    [TypeId]: TypeId,
    name,
    description: options.description,
    parameters: { _tag: "JsonSchema", jsonSchema: options.parameters },
    concurrencySafe: options.concurrencySafe ?? false,
    execute: options.execute
  }, options.timeout)

// Tools whose timeout was no duration above zero, with what it was: `make` stays total (it
// runs outside any Effect), and registration refuses the tool with INVALID_TOOL.
const refusedTimeouts = new WeakMap<object, unknown>()

const withTimeout = <T extends Omit<Any, "timeout">>(tool: T, input: Duration.Input | undefined): T & Pick<Any, "timeout"> => {
  if (input === undefined) return { ...tool, timeout: Option.none() }
  const timeout = AdapterSettings.duration("timeout", input, "positive")
  if (Result.isSuccess(timeout)) return { ...tool, timeout: Option.some(timeout.success) }
  const made = { ...tool, timeout: Option.none<Duration.Duration>() }
  refusedTimeouts.set(made, input)
  return made
}

/**
 * Whether a value is a tool.
 *
 * @since 0.1.0
 * @category guards
 */
export const isTool = (u: unknown): u is Any => Predicate.hasProperty(u, TypeId)

/**
 * The names providers accept for tools.
 *
 * @since 0.1.0
 * @category validation
 */
export const namePattern = /^[a-zA-Z0-9_-]{1,64}$/

/**
 * Checks a tool's name against {@link namePattern}.
 *
 * @since 0.1.0
 * @category validation
 */
export const validateName = (name: string): Result.Result<string, InvalidToolError> =>
  namePattern.test(name) ? Result.succeed(name) : Result.fail(
    new InvalidToolError({
      tool: name,
      reason: "name",
      // Names come from outside too (an MCP server): cut, not echoed whole.
      message: `Tool name ${JSON.stringify(clip(name, 120))} is invalid: a tool name must be 1 to 64 characters, ` +
        "each a letter, a digit, '_' or '-' (providers reject any other name)"
    })
  )

/**
 * What is wrong with a definition's fields, past the types (JavaScript, a cast): each one a
 * registration would otherwise die on, or send to a provider that refuses it.
 */
const definitionProblem = (tool: unknown): string | undefined => {
  if (!isTool(tool)) return `it is not a tool made with Tool.make or Tool.fromJsonSchema, got ${HarnessError.describe(tool)}`
  if (typeof tool.name !== "string") return `its name must be text, got ${HarnessError.describe(tool.name)}`
  if (typeof tool.description !== "string") return `its description must be text, got ${HarnessError.describe(tool.description)}`
  if (typeof tool.execute !== "function") return `its execute must be a function, got ${HarnessError.describe(tool.execute)}`
  if (typeof tool.concurrencySafe !== "boolean") {
    return `its concurrencySafe must be true or false, got ${HarnessError.describe(tool.concurrencySafe)}`
  }
  const parameters: unknown = tool.parameters
  if (!Predicate.isObject(parameters)) return `its parameters are missing`
  if (parameters["_tag"] === "Schema") {
    if (!Schema.isSchema(parameters["schema"])) return `its parameters must be a Schema.Struct, got ${HarnessError.describe(parameters["schema"])}`
    if (parameters["excessKeys"] !== "reject" && parameters["excessKeys"] !== "ignore") {
      return `its excessKeys must be "reject" or "ignore", got ${HarnessError.describe(parameters["excessKeys"])}`
    }
  } else if (parameters["_tag"] === "JsonSchema") {
    if (!Predicate.isObject(parameters["jsonSchema"]) || Array.isArray(parameters["jsonSchema"])) {
      return `its parameters must be a JSON Schema object, got ${HarnessError.describe(parameters["jsonSchema"])}`
    }
  } else {
    return `its parameters are neither a Schema nor a JSON Schema`
  }
  return undefined
}

const validateDefinition = (tool: unknown): Result.Result<void, InvalidToolError> => {
  const problem = definitionProblem(tool)
  if (problem === undefined) return Result.void
  const name = Predicate.hasProperty(tool, "name") && typeof tool.name === "string" ? tool.name : "(unnamed)"
  return Result.fail(
    new InvalidToolError({ tool: name, reason: "definition", message: `Tool ${JSON.stringify(clip(name, 120))} was refused: ${problem}` })
  )
}

const validateTimeout = (tool: Any): Result.Result<void, InvalidToolError> =>
  refusedTimeouts.has(tool)
    ? Result.fail(
      new InvalidToolError({
        tool: tool.name,
        reason: "timeout",
        message: `Tool "${tool.name}" has an invalid timeout: expected a duration above zero ("30 seconds", milliseconds), got ${
          HarnessError.describe(refusedTimeouts.get(tool))
        }`
      })
    )
    : Result.void

/**
 * Options for {@link wireSchema}.
 *
 * @since 0.1.0
 * @category models
 */
export interface WireSchemaOptions {
  /**
   * The strict variant: `additionalProperties: false` on every object and `strict: true`, for
   * providers that enforce the schema while sampling. Raw JSON Schema tools are never strict,
   * nor are tools whose parameters have an optional key, a record or rest keys (strict mode
   * wants every property required): those are sent closed where they can be, without `strict`.
   */
  readonly strict?: boolean | undefined
}

/**
 * The tool as the model sees it: name, description and the JSON Schema of its arguments,
 * generated from the parameter Schema (a plain draft 2020-12 object without `$schema`,
 * everything inlined, descriptions kept, optional keys not required, literal sets as `enum`).
 *
 * The non-strict variant says what decoding accepts: `additionalProperties` is `false` on
 * every object when the tool rejects excess keys and `true` when it ignores them.
 *
 * Fails with `InvalidToolError` when the name is not one providers accept or the parameters
 * are not an object schema, or hold a declared type with no JSON form (`Schema.declare` without a
 * `toCodecJson` annotation), which no arguments could decode into. A recursive Schema at the root
 * is its own object with its `$defs` beside it.
 *
 * @since 0.1.0
 * @category wire schema
 */
export const wireSchema = (
  tool: Any,
  options?: WireSchemaOptions
): Result.Result<ModelRequest.ToolSchema, InvalidToolError> =>
  Result.flatMap(Result.flatMap(Result.flatMap(validateDefinition(tool), () => validateName(tool.name)), () => validateTimeout(tool)), () => {
    const strict = options?.strict === true && tool.parameters._tag === "Schema"
    return Result.map(
      parametersJsonSchema(tool, strict),
      (parameters): ModelRequest.ToolSchema =>
        strict && strictable(parameters)
          ? { name: tool.name, description: tool.description, parameters, strict: true }
          : { name: tool.name, description: tool.description, parameters }
    )
  })

/**
 * Whether a parameters schema can be enforced strictly (OpenAI's rule for `strict: true`):
 * every object closed, with each of its properties required. An optional key, a record or
 * rest keys cannot be said so; such a tool is sent closed where it can be, without `strict`.
 */
const strictable = (node: unknown): boolean => {
  if (Array.isArray(node)) return node.every(strictable)
  if (!Predicate.isObject(node)) return true
  const isObjectSchema = node["type"] === "object" || Predicate.isObject(node["properties"])
  if (isObjectSchema) {
    if (node["additionalProperties"] !== false || "patternProperties" in node) return false
    const properties = Predicate.isObject(node["properties"]) ? Object.keys(node["properties"]) : []
    const required = Array.isArray(node["required"]) ? node["required"] : []
    if (properties.some((key) => !required.includes(key))) return false
  }
  return Object.entries(node).every(([key, value]) => key === "enum" || key === "const" || key === "required" || strictable(value))
}

const parametersJsonSchema = (tool: Any, strict: boolean): Result.Result<Schema.JsonObject, InvalidToolError> => {
  const parameters = tool.parameters
  let json: Schema.JsonObject
  if (parameters._tag === "JsonSchema") {
    json = parameters.jsonSchema
  } else {
    const unrepresentable = pathWithoutJsonForm(parameters.schema.ast)
    if (unrepresentable !== undefined) {
      const where = unrepresentable.length === 0
        ? "they are"
        : `the value at ${formatPath(unrepresentable.map((key) => typeof key === "symbol" ? String(key) : key))} is`
      return Result.fail(invalidParameters(
        tool.name,
        `${where} a declared type with no JSON form (no toCodecJson annotation), so no arguments a model sends could decode into it; use a Schema that decodes from JSON`
      ))
    }
    try {
      const document = Schema.toJsonSchemaDocument(parameters.schema, {
        // Inline identified schemas too: a provider reads one self-contained object.
        referencePolicy: () => undefined,
        onExcessProperty: strict || parameters.excessKeys === "reject" ? "error" : "ignore"
      })
      // The document is built from JSON values only; its type is just wider than that.
      let schema = document.schema as Schema.JsonObject
      if (isEmptyStruct(parameters.schema.ast)) {
        const { not: _, ...annotations } = schema
        schema = {
          type: "object",
          properties: {},
          additionalProperties: !(strict || parameters.excessKeys === "reject"),
          ...annotations
        }
      }
      // A recursive root is only a reference to its definition; providers want the object itself.
      schema = rootDefinition(schema, document.definitions) ?? schema
      // Recursive schemas cannot be inlined and keep their definitions.
      json = Object.keys(document.definitions).length > 0
        ? { ...schema, $defs: document.definitions as Schema.JsonObject }
        : schema
    } catch (cause) {
      return Result.fail(invalidParameters(tool.name, `its JSON Schema cannot be generated: ${HarnessError.describe(cause)}`, cause))
    }
  }
  // Raw schemas come from outside (an MCP server): check their shape rather than trust it.
  if (!Predicate.isObject(json) || json["type"] !== "object") {
    const type = Predicate.isObject(json) ? json["type"] : undefined
    return Result.fail(invalidParameters(
      tool.name,
      `the parameters must be a JSON Schema of type "object", got ${
        type === undefined ? "a schema without a type" : `type ${JSON.stringify(type)}`
      }`
    ))
  }
  return Result.succeed(json)
}

const rootDefinition = (
  schema: Schema.JsonObject,
  definitions: Readonly<Record<string, unknown>>
): Schema.JsonObject | undefined => {
  const reference = schema["$ref"]
  if (typeof reference !== "string" || !reference.startsWith("#/$defs/") || Object.keys(schema).length !== 1) {
    return undefined
  }
  const definition = definitions[reference.slice("#/$defs/".length)]
  return Predicate.isObject(definition) ? definition as Schema.JsonObject : undefined
}

const invalidParameters = (tool: string, why: string, cause?: unknown) =>
  new InvalidToolError({
    tool,
    reason: "parameters",
    message: `Tool "${tool}" has invalid parameters: ${why}`,
    ...(cause === undefined ? {} : { cause })
  })
