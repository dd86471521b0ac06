/**
 * The fast path of argument decoding. Most calls are valid, and for them the decoder needs
 * only the decoded value, not a report. Effect's Schema interpreter pays for reporting on
 * every call: under `errors: "all"` or an explicit `onExcessProperty` it decodes each object
 * through a generator of Effects, and even its option-free path builds an Exit per field. So a
 * call is first decoded through Effect's JIT-compiled decoder of the same codec
 * (`SchemaJITCompiler`: code generated once per Schema), under the default options, with which
 * it runs as straight-line code. Only when that fails does the full decode run, to report
 * every violation.
 *
 * The lenient decode goes through `decodeUnknownExit`, not `decodeUnknownSync`: on a failure
 * the synchronous adapter decodes again in detail and throws an `Error` (a stack trace, the
 * dearest part of a failing call), all of it thrown away since the full decode reports anew.
 *
 * The default options ignore excess keys. A tool that rejects them gets the lenient decode and
 * then a walk of its input looking for keys its Schema does not declare, derived once from the
 * Schema. For the Schemas the walk can be derived from (no transformations, no index
 * signatures, no unions of objects: see {@link excessFinder}), a lenient success without an
 * undeclared key is exactly a strict success, with the same value. For other Schemas the
 * compiled decode runs with `onExcessProperty: "error"` instead, which is slower (Effect
 * checks those keys with a Set built per object) but still no worse than the full decode.
 *
 * @internal
 */
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as SchemaParser from "effect/SchemaParser"
import * as SchemaJITCompiler from "effect/schema/SchemaJITCompiler"
import type { ExcessKeys } from "../Tool.ts"

/**
 * What the fast path answers when it has no decoded value: the input does not decode, and
 * the full decode has to say why.
 *
 * @internal
 */
export const noValue: unique symbol = Symbol("@dsh/tools/ToolArgs/noValue")

/** @internal */
export type FastDecode = (input: unknown) => unknown

/**
 * The fast decoder of a codec: the decoded value of a valid input, {@link noValue} otherwise
 * (also when a check threw: the full decode meets it again and reports it as it always did).
 *
 * @internal
 */
export const fastDecoder = (codec: Schema.Top, excessKeys: ExcessKeys): FastDecode => {
  // Generates on first use; where code generation is blocked, Effect keeps interpreting.
  SchemaJITCompiler.enable(codec.ast)
  const finder = excessKeys === "reject" ? excessFinder(codec.ast) : nothingToFind
  const decode = SchemaParser.decodeUnknownExit(
    codec as Schema.Codec<unknown, unknown>,
    finder === undefined ? { onExcessProperty: "error" } : undefined
  )
  return (input) => {
    const exit = decode(input)
    if (Exit.isFailure(exit)) return noValue
    return finder !== undefined && finder !== nothingToFind && finder(input) ? noValue : exit.value
  }
}

/**
 * Whether a value that decoded leniently holds a key its Schema does not declare.
 *
 * @internal
 */
export type ExcessFinder = (input: unknown) => boolean

// A Schema below which no object can have excess keys (a string, a literal set, `Unknown`).
const nothingToFind: ExcessFinder = () => false

/**
 * The excess-key walk of a Schema, or `undefined` when it cannot be derived from the Schema
 * alone:
 *
 * - a transformation (a node with an encoding) decodes from another shape;
 * - an index signature covers keys by pattern;
 * - a union with objects inside would pick another member under the strict options (a member
 *   rejected for an excess key lets the next one try), so its choice cannot be replayed;
 * - a nested empty struct accepts non-objects, whose keys are its own business;
 * - a declaration (a class, a `Date`) decodes through its own code.
 *
 * Run only after a lenient decode succeeded: the input has the Schema's shape.
 *
 * @internal
 */
export const excessFinder = (ast: SchemaAST.AST): ExcessFinder | undefined => finderOf(ast, new Map())

// Recursive Schemas meet themselves again: a Suspend seen before resolves to the finder being
// built for it.
type Building = Map<SchemaAST.AST, { current: ExcessFinder | undefined }>

const finderOf = (ast: SchemaAST.AST, building: Building): ExcessFinder | undefined => {
  if (ast.encoding !== undefined) return undefined
  switch (ast._tag) {
    case "Objects":
      return objectFinder(ast, building)
    case "Arrays":
      return arrayFinder(ast, building)
    case "Union":
      return ast.types.every((member) => finderOf(member, building) === nothingToFind) ? nothingToFind : undefined
    case "Suspend":
      return suspendFinder(ast, building)
    case "Declaration":
      return undefined
    default:
      // Primitives, literals, templates, `Unknown`/`Any`: no keys are checked below them.
      return nothingToFind
  }
}

const objectFinder = (ast: SchemaAST.Objects, building: Building): ExcessFinder | undefined => {
  if (ast.indexSignatures.length > 0 || ast.propertySignatures.length === 0) return undefined
  const declared = new Set<PropertyKey>()
  const children: Array<{ readonly name: string; readonly find: ExcessFinder }> = []
  for (const property of ast.propertySignatures) {
    if (typeof property.name === "symbol") return undefined
    const name = String(property.name)
    declared.add(name)
    const find = finderOf(property.type, building)
    if (find === undefined) return undefined
    if (find !== nothingToFind) children.push({ name, find })
  }
  return (input) => {
    const record = input as Record<string, unknown>
    // `for…in` also lists inherited enumerable keys: on a polluted prototype this answers
    // "excess" and the full decode, which looks at own keys only, has the last word.
    for (const key in record) if (!declared.has(key)) return true
    for (let i = 0; i < children.length; i++) {
      const child = children[i]!
      if (Object.hasOwn(record, child.name) && child.find(record[child.name])) return true
    }
    return false
  }
}

const arrayFinder = (ast: SchemaAST.Arrays, building: Building): ExcessFinder | undefined => {
  if (ast.rest.length > 1) return undefined
  const elements: Array<ExcessFinder> = []
  for (const element of ast.elements) {
    const find = finderOf(element, building)
    if (find === undefined) return undefined
    elements.push(find)
  }
  const rest = ast.rest.length === 0 ? nothingToFind : finderOf(ast.rest[0]!, building)
  if (rest === undefined) return undefined
  if (rest === nothingToFind && elements.every((find) => find === nothingToFind)) return nothingToFind
  return (input) => {
    const array = input as ReadonlyArray<unknown>
    for (let i = 0; i < array.length; i++) {
      if ((i < elements.length ? elements[i]! : rest)(array[i])) return true
    }
    return false
  }
}

const suspendFinder = (ast: SchemaAST.Suspend, building: Building): ExcessFinder | undefined => {
  const seen = building.get(ast)
  if (seen !== undefined) return (input) => seen.current!(input)
  const cell: { current: ExcessFinder | undefined } = { current: undefined }
  building.set(ast, cell)
  cell.current = finderOf(ast.thunk(), building)
  return cell.current
}

