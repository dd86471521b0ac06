/**
 * The seed RFC's validator ↔ type agreement, as properties over generated parameter Schemas:
 *
 * 1. every value generated from a tool's parameter Schema, sent as the JSON the model would
 *    write, decodes (back to the same value);
 * 2. an independent validator (Ajv, draft 2020-12) given the generated wire schema accepts
 *    those values too;
 * 3. on mutated arguments (a required key removed, a type swapped, a literal changed, a bound
 *    crossed, an unknown key added) Ajv and the decoder agree, and both reject the mutations
 *    that are invalid by construction.
 *
 * Shapes are drawn from a generator of parameter Schemas: strings with length bounds, integers
 * and finite numbers with (inclusive or exclusive) bounds, booleans, literal sets, arrays,
 * nested structs, optional keys, two levels deep. Runs and seeds are fixed so CI is
 * deterministic and the whole suite stays fast.
 */
import { Tool, ToolArgs } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js"
import { Arbitrary, Effect, Exit, Result, Schema, SchemaParser } from "effect"

// ---------------------------------------------------------------------------------------------
// Shapes of parameter Schemas, themselves described by Schemas so Arbitrary generates them.

const Bound = Schema.Literals(["none", "min", "max", "both"])
const small = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))

const StringShape = Schema.Struct({ kind: Schema.tag("string"), bound: Bound, min: small(0, 4), span: small(0, 6) })
const IntShape = Schema.Struct({ kind: Schema.tag("int"), bound: Bound, min: small(-50, 50), span: small(0, 40) })
const NumberShape = Schema.Struct({
  kind: Schema.tag("number"),
  bound: Bound,
  exclusive: Schema.Boolean,
  min: small(-500, 500),
  span: small(1, 300)
})
const BooleanShape = Schema.Struct({ kind: Schema.tag("boolean") })
const LiteralsShape = Schema.Struct({
  kind: Schema.tag("literals"),
  values: Schema.Array(Schema.Literals(["read", "write", "exec", "a b", "ü", "0"])).check(
    Schema.isMinLength(1),
    Schema.isMaxLength(4)
  )
})
const Leaf = Schema.Union([StringShape, IntShape, NumberShape, BooleanShape, LiteralsShape])
const Name = Schema.Literals(["a", "b", "c", "path", "with space", "x-y", "_u", "0"])
const fieldsOf = <S extends Schema.Top>(field: S, max: number) =>
  Schema.Array(Schema.Struct({ name: Name, optional: Schema.Boolean, field })).check(Schema.isMaxLength(max))
const arrayOf = <S extends Schema.Top>(item: S) =>
  Schema.Struct({ kind: Schema.tag("array"), item, maxItems: Schema.optionalKey(small(0, 4)) })
// Nested structs have at least one field: Effect reads `Schema.Struct({})` as TypeScript's `{}`
// (any value but null), so a nested empty struct accepts strings and arrays, in the decoder and
// in its JSON Schema alike (only a top-level empty struct is made an empty object).
const structOf = <S extends Schema.Top>(field: S) =>
  Schema.Struct({ kind: Schema.tag("struct"), fields: fieldsOf(field, 3).check(Schema.isMinLength(1)) })

const Level1 = Schema.Union([Leaf, arrayOf(Leaf), structOf(Leaf)])
const Level2 = Schema.Union([Leaf, arrayOf(Level1), structOf(Level1)])
const Shape = fieldsOf(Level2, 5)

type Field = typeof Level2.Type | typeof Level1.Type
type Shape = typeof Shape.Type

// Later fields of the same name are dropped: a struct has each key once.
const unique = <F extends { readonly name: string }>(fields: ReadonlyArray<F>): ReadonlyArray<F> =>
  fields.filter((f, i) => fields.findIndex((g) => g.name === f.name) === i)

type Codec = Schema.Codec<unknown, unknown, never, never>

const fieldSchema = (field: Field): Codec => {
  const lower = field.kind === "string" || field.kind === "int" || field.kind === "number"
    ? field.bound === "min" || field.bound === "both"
    : false
  const upper = field.kind === "string" || field.kind === "int" || field.kind === "number"
    ? field.bound === "max" || field.bound === "both"
    : false
  switch (field.kind) {
    case "string": {
      // Code points, as JSON Schema counts them. `isMinLength`/`isMaxLength` count UTF-16 code
      // units, and Effect publishes them loosely (see the wire schema tests): the decoder would
      // then reject strings the schema allows, which is what this property would catch.
      const checks = [
        ...(lower ? [Schema.isMinCodePoints(field.min)] : []),
        ...(upper ? [Schema.isMaxCodePoints(field.min + field.span)] : [])
      ]
      return checks.length === 0 ? Schema.String : Schema.String.check(...(checks as [typeof checks[0]]))
    }
    case "int": {
      const checks = [
        ...(lower ? [Schema.isGreaterThanOrEqualTo(field.min)] : []),
        ...(upper ? [Schema.isLessThanOrEqualTo(field.min + field.span)] : [])
      ]
      return checks.length === 0 ? Schema.Int : Schema.Int.check(...(checks as [typeof checks[0]]))
    }
    case "number": {
      const low = field.exclusive ? Schema.isGreaterThan(field.min) : Schema.isGreaterThanOrEqualTo(field.min)
      const high = field.exclusive
        ? Schema.isLessThan(field.min + field.span)
        : Schema.isLessThanOrEqualTo(field.min + field.span)
      const checks = [...(lower ? [low] : []), ...(upper ? [high] : [])]
      return checks.length === 0 ? Schema.Finite : Schema.Finite.check(...(checks as [typeof checks[0]]))
    }
    case "boolean":
      return Schema.Boolean
    case "literals":
      return Schema.Literals([...new Set(field.values)])
    case "array": {
      const items = Schema.Array(fieldSchema(field.item))
      return field.maxItems === undefined ? items : items.check(Schema.isMaxLength(field.maxItems))
    }
    case "struct":
      return structSchema(field.fields)
  }
}

const structSchema = (fields: ReadonlyArray<{ name: string; optional: boolean; field: Field }>) =>
  Schema.Struct(
    Object.fromEntries(
      unique(fields).map((f): [string, Codec | Schema.optionalKey<Codec>] => [
        f.name,
        f.optional ? Schema.optionalKey(fieldSchema(f.field)) : fieldSchema(f.field)
      ])
    )
  )

// ---------------------------------------------------------------------------------------------
// A tool per shape (and per excess-key policy), with its decoder and Ajv's validators.

interface Compiled {
  readonly schema: Schema.Codec<unknown, Schema.Json>
  readonly decode: ToolArgs.Decoder<unknown>
  /** Effect's decode under the decoder's full options (all errors, the excess-key policy). */
  readonly reference: (input: unknown) => Exit.Exit<unknown, unknown>
  readonly ajv: ValidateFunction
  readonly ajvStrict: ValidateFunction
}

// One Ajv for all, with the specification's semantics (string lengths in code points).
const ajv = new Ajv2020({ strict: true, allErrors: true })
const compiled = new Map<string, Compiled>()

const compile = (shape: Shape, excessKeys: Tool.ExcessKeys): Compiled => {
  const key = `${excessKeys} ${JSON.stringify(shape)}`
  const hit = compiled.get(key)
  if (hit !== undefined) return hit
  const parameters = structSchema(shape)
  const tool = Tool.make("generated", {
    description: "A generated tool",
    parameters,
    excessKeys,
    execute: () => Effect.succeed("")
  })
  const reference = SchemaParser.decodeUnknownExit(Schema.toCodecJson(parameters), {
    errors: "all",
    onExcessProperty: excessKeys === "reject" ? "error" : "ignore"
  })
  const entry: Compiled = {
    schema: Schema.toCodecJson(parameters) as unknown as Schema.Codec<unknown, Schema.Json>,
    decode: ToolArgs.decoder(tool),
    reference: (input) => reference(input),
    ajv: ajv.compile(Result.getOrThrow(Tool.wireSchema(tool)).parameters),
    ajvStrict: ajv.compile(Result.getOrThrow(Tool.wireSchema(tool, { strict: true })).parameters)
  }
  compiled.set(key, entry)
  return entry
}

const cases = Arbitrary.flatMap(
  Arbitrary.schema(Shape),
  (shape) =>
    Arbitrary.all({
      shape: Arbitrary.Constant(shape),
      value: Arbitrary.schema(structSchema(shape)),
      pick: Arbitrary.schema(small(0, 10_000))
    })
)

const options = { runs: 250, size: 6, seed: 20261130 }

const passes = <A, E>(result: Arbitrary.CheckResult<A, E>) => {
  expect(Arbitrary.formatCheckFailure(result)).toBeUndefined()
  expect(result._tag).toBe("Passed")
}

const rawOf = (c: Compiled, value: unknown): string => JSON.stringify(Schema.encodeSync(c.schema)(value))

// ---------------------------------------------------------------------------------------------
// Mutations, each invalid by construction unless noted.

type Json = Schema.Json
type Path = ReadonlyArray<string | number>
interface Mutation {
  readonly kind: "remove-required" | "swap-type" | "change-literal" | "cross-bound" | "unknown-key"
  readonly path: Path
  readonly apply: (value: Json) => Json
}

const setAt = (root: Json, path: Path, f: (value: Json | undefined) => Json | undefined): Json => {
  if (path.length === 0) return f(root) ?? null
  const [head, ...rest] = path
  if (Array.isArray(root)) {
    const copy = [...root]
    copy[head as number] = setAt(root[head as number] as Json, rest, f)
    return copy
  }
  const object = root as { readonly [k: string]: Json }
  if (rest.length === 0) {
    const next = f(object[head as string])
    const { [head as string]: _, ...others } = object
    return next === undefined ? others : { ...object, [head as string]: next }
  }
  return { ...object, [head as string]: setAt(object[head as string] as Json, rest, f) }
}

// A string of `n` code points, every other one astral (two UTF-16 code units), so that a length
// counted in the wrong unit shows.
const codePoints = (n: number): string => Array.from({ length: n }, (_, i) => (i % 2 === 0 ? "s" : "😀")).join("")

// A value of another JSON type than the field's.
const wrongType = (field: Field): Json => {
  switch (field.kind) {
    case "string":
    case "literals":
      return 7
    case "int":
    case "number":
      return "7"
    case "boolean":
      return "true"
    case "array":
      return { length: 0 }
    case "struct":
      return []
  }
}

const mutations = (shape: Shape, value: Json, excessKeys: Tool.ExcessKeys): Array<Mutation> => {
  const out: Array<Mutation> = []
  const visitStruct = (fields: ReadonlyArray<{ name: string; optional: boolean; field: Field }>, json: Json, path: Path) => {
    const object = json as { readonly [k: string]: Json }
    const names = unique(fields).map((f) => f.name)
    if (excessKeys === "reject") {
      const extra = ["zz", "a", "b", "c", "path"].find((n) => !names.includes(n))!
      out.push({ kind: "unknown-key", path: [...path, extra], apply: (v) => setAt(v, [...path, extra], () => "extra") })
    }
    for (const f of unique(fields)) {
      const at = [...path, f.name]
      if (!Object.hasOwn(object, f.name)) continue
      if (!f.optional) out.push({ kind: "remove-required", path: at, apply: (v) => setAt(v, at, () => undefined) })
      visit(f.field, object[f.name]!, at)
    }
  }
  const visit = (field: Field, json: Json, path: Path): void => {
    out.push({ kind: "swap-type", path, apply: (v) => setAt(v, path, () => wrongType(field)) })
    switch (field.kind) {
      case "literals": {
        const outside = ["nope", "READ", " read"].find((l) => !field.values.includes(l as never))!
        out.push({ kind: "change-literal", path, apply: (v) => setAt(v, path, () => outside) })
        return
      }
      case "string":
        if (field.bound === "max" || field.bound === "both") {
          const tooLong = codePoints(field.min + field.span + 1)
          out.push({ kind: "cross-bound", path, apply: (v) => setAt(v, path, () => tooLong) })
        }
        if ((field.bound === "min" || field.bound === "both") && field.min > 0) {
          out.push({ kind: "cross-bound", path, apply: (v) => setAt(v, path, () => codePoints(field.min - 1)) })
        }
        return
      case "int":
      case "number": {
        const exclusive = field.kind === "number" && field.exclusive
        if (field.bound === "max" || field.bound === "both") {
          const above = field.min + field.span + (exclusive ? 0 : 1)
          out.push({ kind: "cross-bound", path, apply: (v) => setAt(v, path, () => above) })
        }
        if (field.bound === "min" || field.bound === "both") {
          const below = field.min - (exclusive ? 0 : 1)
          out.push({ kind: "cross-bound", path, apply: (v) => setAt(v, path, () => below) })
        }
        if (field.kind === "int") out.push({ kind: "cross-bound", path, apply: (v) => setAt(v, path, () => 0.5) })
        return
      }
      case "array": {
        const items = json as ReadonlyArray<Json>
        if (field.maxItems !== undefined) {
          const filler = items[0] ?? null
          // too many items (invalid even when the filler is, which only makes it more so)
          const tooMany = Array.from({ length: field.maxItems + 1 }, () => filler)
          if (items.length > 0) out.push({ kind: "cross-bound", path, apply: (v) => setAt(v, path, () => tooMany) })
        }
        items.forEach((item, i) => visit(field.item, item, [...path, i]))
        return
      }
      case "struct":
        return visitStruct(field.fields, json, path)
      case "boolean":
        return
    }
  }
  visitStruct(shape, value, [])
  return out
}

describe("properties of generated parameter Schemas", () => {
  it.effect("every value generated from the Schema decodes, back to itself", () =>
    Effect.gen(function*() {
      const result = yield* Arbitrary.checkEffect(cases, ({ shape, value }) => {
        const c = compile(shape, "reject")
        const raw = rawOf(c, value)
        const decoded = c.decode(raw)
        if (Result.isFailure(decoded)) throw new Error(`${raw} was refused:\n${decoded.failure.message}`)
        return rawOf(c, decoded.success) === raw
      }, options)
      passes(result)
    }))

  it.effect("Ajv, given the wire schema (plain and strict), accepts every generated value", () =>
    Effect.gen(function*() {
      const result = yield* Arbitrary.checkEffect(cases, ({ shape, value }) => {
        for (const policy of ["reject", "ignore"] as const) {
          const c = compile(shape, policy)
          const json = JSON.parse(rawOf(c, value))
          if (!c.ajv(json) || !c.ajvStrict(json)) {
            throw new Error(`Ajv refused ${JSON.stringify(json)}: ${JSON.stringify(c.ajv.errors ?? c.ajvStrict.errors)}`)
          }
        }
        return true
      }, { ...options, seed: options.seed + 1 })
      passes(result)
    }))

  it.effect("on mutated arguments Ajv and the decoder agree, and both reject what is invalid", () =>
    Effect.gen(function*() {
      const seen = new Map<Mutation["kind"], number>()
      const result = yield* Arbitrary.checkEffect(cases, ({ pick, shape, value }) => {
        for (const policy of ["reject", "ignore"] as const) {
          const c = compile(shape, policy)
          const json = JSON.parse(rawOf(c, value)) as Json
          const candidates = mutations(shape, json, policy)
          if (candidates.length === 0) continue
          // A few mutations per case, chosen by the generated `pick`, so shrinking can vary them.
          for (let k = 0; k < 3; k++) {
            const mutation = candidates[(pick + k * 7919) % candidates.length]!
            const mutant = mutation.apply(json)
            const decoderAccepts = Result.isSuccess(c.decode(JSON.stringify(mutant)))
            const ajvAccepts = c.ajv(mutant)
            if (decoderAccepts !== ajvAccepts) {
              throw new Error(
                `${mutation.kind} at ${JSON.stringify(mutation.path)} of ${JSON.stringify(shape)}: decoder ${decoderAccepts}, Ajv ${ajvAccepts}, on ${
                  JSON.stringify(mutant)
                }`
              )
            }
            if (decoderAccepts) throw new Error(`${mutation.kind} at ${JSON.stringify(mutation.path)} was accepted: ${JSON.stringify(mutant)}`)
            seen.set(mutation.kind, (seen.get(mutation.kind) ?? 0) + 1)
          }
        }
        return true
      }, { ...options, seed: options.seed + 2 })
      passes(result)
      // Not vacuous: every kind of mutation was exercised.
      expect([...seen.keys()].sort()).toStrictEqual(["change-literal", "cross-bound", "remove-required", "swap-type", "unknown-key"])
      expect(Math.min(...seen.values())).toBeGreaterThan(10)
    }))

  it.effect("the decoder's fast path agrees with Effect's full decode: same verdict, same value, same key order", () =>
    Effect.gen(function*() {
      // Unknown keys at every level, besides the mutations: the fast path decodes leniently and
      // looks for excess keys on its own.
      const withExtra = (json: Json, depth: number): Json => {
        if (Array.isArray(json)) return json.map((item) => withExtra(item, depth + 1))
        if (typeof json !== "object" || json === null) return json
        const entries = Object.entries(json).map(([k, v]): [string, Json] => [k, withExtra(v, depth + 1)])
        return Object.fromEntries(depth % 2 === 0 ? [...entries, ["zz_extra", depth]] : entries)
      }
      let successes = 0
      let failures = 0
      const result = yield* Arbitrary.checkEffect(cases, ({ pick, shape, value }) => {
        // A tool without parameters is the decoder's own rule (an object, no keys), not Effect's.
        if (unique(shape).length === 0) return true
        for (const policy of ["reject", "ignore"] as const) {
          const c = compile(shape, policy)
          const json = JSON.parse(rawOf(c, value)) as Json
          const candidates = mutations(shape, json, policy)
          const inputs = [json, withExtra(json, 0), ...(candidates.length === 0 ? [] : [candidates[pick % candidates.length]!.apply(json)])]
          for (const input of inputs) {
            const raw = JSON.stringify(input)
            const decoded = c.decode(raw)
            const reference = c.reference(JSON.parse(raw))
            if (Result.isSuccess(decoded) !== Exit.isSuccess(reference)) {
              throw new Error(`${policy}: decoder ${Result.isSuccess(decoded)}, Effect ${Exit.isSuccess(reference)} on ${raw}`)
            }
            if (Result.isSuccess(decoded) && Exit.isSuccess(reference)) {
              successes++
              expect(decoded.success).toStrictEqual(reference.value)
              // `toStrictEqual` ignores key order; the serialized form does not.
              expect(JSON.stringify(decoded.success)).toBe(JSON.stringify(reference.value))
            } else {
              failures++
            }
          }
        }
        return true
      }, { ...options, seed: options.seed + 4 })
      passes(result)
      expect(Math.min(successes, failures)).toBeGreaterThan(100)
    }))

  it.effect("under the ignore policy, an unknown key is accepted by both and dropped by the decoder", () =>
    Effect.gen(function*() {
      const result = yield* Arbitrary.checkEffect(cases, ({ shape, value }) => {
        const c = compile(shape, "ignore")
        const json = JSON.parse(rawOf(c, value)) as { readonly [k: string]: Json }
        const extra = "zz_unknown"
        const mutant = { ...json, [extra]: [1, "two"] }
        const decoded = c.decode(JSON.stringify(mutant))
        if (Result.isFailure(decoded) || !c.ajv(mutant)) return false
        return !Object.hasOwn(decoded.success as object, extra) && !c.ajvStrict(mutant)
      }, { ...options, runs: 100, seed: options.seed + 3 })
      passes(result)
    }))
})
