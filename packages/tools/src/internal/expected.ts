/**
 * What a parameter Schema wants at a spot, in a few words: `a string`, `"read" | "write"`,
 * `an object { name: string, value?: string }`. A violation's `expected`, and what a missing
 * key's message names, since "Missing key" alone does not tell the model what to write.
 *
 * The rendering is bounded however big or recursive the Schema is: shapes are shown two
 * objects deep, with at most a few members each, and the whole is cut at
 * {@link maxExpectedLength} characters.
 *
 * @internal
 */
import * as SchemaAST from "effect/SchemaAST"
import * as SchemaIssue from "effect/SchemaIssue"
import { clip } from "./text.ts"

/** @internal */
export const maxExpectedLength = 160

// Deeper objects render as `{…}`: the model needs the outline, the wire schema has the rest.
const maxObjectDepth = 2
// Any deeper nesting (arrays of arrays, a Schema that recurses through arrays) renders as `…`.
const maxNesting = 6
const maxMembers = 8

/** How deep a rendering is: in objects, and in containers of any kind. */
interface Depth {
  readonly objects: number
  readonly nesting: number
}

const top: Depth = { objects: 0, nesting: 0 }

// Arrays and unions count as nesting: a Schema may recurse through either without an object.
const inMember = (depth: Depth): Depth => ({ objects: depth.objects, nesting: depth.nesting + 1 })
const inObject = (depth: Depth): Depth => ({ objects: depth.objects + 1, nesting: depth.nesting + 1 })

// ASTs are immutable, and every failing call of a tool renders the same few of them again.
const rendered = new WeakMap<SchemaAST.AST, string>()

/**
 * What `ast` wants, with an article: `a string`, `an array of string`, `an object { … }`.
 *
 * @internal
 */
export const expectedOf = (ast: SchemaAST.AST): string => {
  let expected = rendered.get(ast)
  if (expected === undefined) {
    expected = clip(phrase(ast, top), maxExpectedLength)
    rendered.set(ast, expected)
  }
  return expected
}

/**
 * What the object or array `parent` wants at `key`, or `undefined` when it declares nothing
 * there.
 *
 * @internal
 */
export const expectedAt = (parent: SchemaAST.AST, key: string | number): string | undefined => {
  const member = memberAt(resolved(parent), key)
  return member === undefined ? undefined : expectedOf(member)
}

const memberAt = (ast: SchemaAST.AST, key: string | number): SchemaAST.AST | undefined => {
  if (SchemaAST.isObjects(ast)) return ast.propertySignatures.find((p) => String(p.name) === String(key))?.type
  if (SchemaAST.isArrays(ast) && typeof key === "number") return ast.elements[key] ?? ast.rest[0]
  return undefined
}

const resolved = (ast: SchemaAST.AST): SchemaAST.AST => (SchemaAST.isSuspend(ast) ? ast.thunk() : ast)

// Types without a JSON form of their own (a Date, a bigint) are written as their encoding.
const written = (ast: SchemaAST.AST): SchemaAST.AST =>
  (SchemaAST.isDeclaration(ast) || SchemaAST.isBigInt(ast) || SchemaAST.isSymbol(ast)) && ast.encoding !== undefined
    ? SchemaAST.toEncoded(ast)
    : ast

const phrase = (input: SchemaAST.AST, depth: Depth): string => {
  if (depth.nesting > maxNesting) return "…"
  const ast = written(resolved(input))
  switch (ast._tag) {
    case "String":
    case "TemplateLiteral":
      return "a string"
    case "Number":
      return "a number"
    case "Boolean":
      return "a boolean"
    case "Arrays":
      return ast.elements.length === 0 && ast.rest.length === 1
        ? `an array of ${grouped(ast.rest[0]!, inMember(depth))}`
        : `an array ${shape(ast, depth)}`
    case "Objects":
      return ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0
        ? "an object"
        : `an object ${shape(ast, depth)}`
    case "Union":
      return members(ast.types.map((member) => phrase(member, inMember(depth))))
    default:
      return shape(ast, depth)
  }
}

// The TypeScript-like form used inside shapes: `string`, `{ a: number }`, `string[]`.
const shape = (input: SchemaAST.AST, depth: Depth): string => {
  if (depth.nesting > maxNesting) return "…"
  const ast = written(resolved(input))
  switch (ast._tag) {
    case "String":
    case "TemplateLiteral":
      return "string"
    case "Number":
      return "number"
    case "Boolean":
      return "boolean"
    case "Null":
      return "null"
    case "Literal":
      return typeof ast.literal === "bigint" ? `${ast.literal}n` : JSON.stringify(ast.literal)
    case "Enum":
      return members(ast.enums.map(([, value]) => JSON.stringify(value)))
    case "Union":
      return members(ast.types.map((member) => shape(member, inMember(depth))))
    case "Unknown":
    case "Any":
      return "any"
    case "Arrays":
      return arrayShape(ast, depth)
    case "Objects":
      return objectShape(ast, depth)
    default:
      return effectExpected(ast)
  }
}

const arrayShape = (ast: SchemaAST.Arrays, depth: Depth): string => {
  const inner = inMember(depth)
  if (ast.elements.length === 0 && ast.rest.length === 1) return `${grouped(ast.rest[0]!, inner)}[]`
  const items = [
    ...ast.elements.map((element) => shape(element, inner)),
    ...ast.rest.map((item) => `...${grouped(item, inner)}[]`)
  ]
  return `[${listed(items).join(", ")}]`
}

const objectShape = (ast: SchemaAST.Objects, depth: Depth): string => {
  if (depth.objects >= maxObjectDepth) return "{…}"
  const inner = inObject(depth)
  const entries = [
    ...ast.propertySignatures.map((p) =>
      `${keyOf(p.name)}${SchemaAST.isOptional(p.type) ? "?" : ""}: ${shape(p.type, inner)}`
    ),
    ...ast.indexSignatures.map((index) => `[key: ${shape(index.parameter, inner)}]: ${shape(index.type, inner)}`)
  ]
  return entries.length === 0 ? "{}" : `{ ${listed(entries).join(", ")} }`
}

// `("a" | "b")[]`, not `"a" | "b"[]`.
const grouped = (ast: SchemaAST.AST, depth: Depth): string => {
  const text = shape(ast, depth)
  return SchemaAST.isUnion(resolved(ast)) || SchemaAST.isEnum(resolved(ast)) ? `(${text})` : text
}

const members = (texts: ReadonlyArray<string>): string => listed([...new Set(texts)]).join(" | ")

const listed = (items: ReadonlyArray<string>): Array<string> =>
  items.length <= maxMembers ? [...items] : [...items.slice(0, maxMembers), "…"]

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/

const keyOf = (name: PropertyKey): string => {
  const key = String(name)
  return identifier.test(key) ? key : JSON.stringify(key)
}

// Effect's own word for what it expects (`JSON value`, `symbol`): the formatter renders an
// issue without input as exactly `Expected <that>`.
const effectExpected = (ast: SchemaAST.AST): string => {
  const message = SchemaIssue.defaultLeafHook(new SchemaIssue.InvalidType(ast))
  return message.startsWith("Expected ") ? message.slice("Expected ".length) : message
}
