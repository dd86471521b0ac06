/**
 * Where a JSON text stops being JSON. `JSON.parse` reports this in engine-specific words (and
 * V8 often without a position), so when it fails we scan the text ourselves: a model reading
 * "expected ',' or '}' at line 3, column 14" can repair its arguments; "Unexpected token" it
 * often cannot. The scanner runs only after `JSON.parse` has failed, so the common path pays
 * nothing for it. It is iterative, so deeply nested input cannot overflow the stack.
 *
 * @internal
 */
import * as SchemaAST from "effect/SchemaAST"

/** @internal */
export interface SyntaxProblem {
  /** 0-based offset (UTF-16 code units) where the text stops being JSON. */
  readonly offset: number
  /** What would have been valid there, e.g. `expected ',' or '}'`. */
  readonly expected: string
}

// Plain constants, not an enum: sources must stay erasable TypeScript, which Node runs as is.
const State = {
  Value: 0,
  ValueOrEndArray: 1,
  Key: 2,
  KeyOrEndObject: 3,
  Colon: 4,
  AfterValue: 5
} as const
type State = typeof State[keyof typeof State]

const isWhitespace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d
const isDigit = (c: number) => c >= 0x30 && c <= 0x39
const isHex = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)

/**
 * The first syntax problem of `text`, or `undefined` when `text` is one well-formed JSON value
 * surrounded by optional whitespace.
 *
 * @internal
 */
export const locateSyntaxError = (text: string): SyntaxProblem | undefined => {
  const n = text.length
  const stack: Array<"object" | "array"> = []
  let i = 0
  let state: State = State.Value

  // Each scanner returns the offset just after the token, or a problem.
  const scanString = (): number | SyntaxProblem => {
    let j = i + 1
    while (j < n) {
      const c = text.charCodeAt(j)
      if (c === 0x22) return j + 1
      if (c === 0x5c) {
        const e = text.charCodeAt(j + 1)
        if (e === 0x75) {
          for (let k = 2; k < 6; k++) {
            if (!isHex(text.charCodeAt(j + k))) {
              return { offset: j, expected: "a valid escape sequence (\\u must be followed by 4 hex digits)" }
            }
          }
          j += 6
          continue
        }
        // " \ / b f n r t
        if (![0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74].includes(e)) {
          return { offset: j, expected: "a valid escape sequence (one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)" }
        }
        j += 2
        continue
      }
      if (c < 0x20) return { offset: j, expected: "an escaped character (control characters and line breaks inside a string must be written as escapes such as \\n)" }
      j++
    }
    return { offset: n, expected: "a closing '\"' (the string is not terminated)" }
  }

  const scanNumber = (): number | SyntaxProblem => {
    let j = i
    if (text.charCodeAt(j) === 0x2d) j++
    if (text.charCodeAt(j) === 0x30) {
      j++
    } else if (isDigit(text.charCodeAt(j))) {
      while (isDigit(text.charCodeAt(j))) j++
    } else {
      return { offset: j, expected: "a digit" }
    }
    if (text.charCodeAt(j) === 0x2e) {
      j++
      if (!isDigit(text.charCodeAt(j))) return { offset: j, expected: "a digit after the decimal point" }
      while (isDigit(text.charCodeAt(j))) j++
    }
    const e = text.charCodeAt(j)
    if (e === 0x65 || e === 0x45) {
      j++
      const sign = text.charCodeAt(j)
      if (sign === 0x2b || sign === 0x2d) j++
      if (!isDigit(text.charCodeAt(j))) return { offset: j, expected: "a digit in the exponent" }
      while (isDigit(text.charCodeAt(j))) j++
    }
    return j
  }

  const scanLiteral = (literal: string): number | SyntaxProblem => {
    for (let k = 0; k < literal.length; k++) {
      if (text[i + k] !== literal[k]) return { offset: i + k, expected: `the literal ${literal}` }
    }
    return i + literal.length
  }

  const closeContainer = () => {
    stack.pop()
    state = State.AfterValue
  }

  const afterValueExpectation = (): string => {
    const top = stack.at(-1)
    return top === "object" ? "',' or '}'" : top === "array" ? "',' or ']'" : "the end of the input"
  }

  while (true) {
    while (i < n && isWhitespace(text.charCodeAt(i))) i++
    const c = i < n ? text.charCodeAt(i) : -1

    switch (state) {
      case State.Value:
      case State.ValueOrEndArray: {
        if (state === State.ValueOrEndArray && c === 0x5d) {
          i++
          closeContainer()
          continue
        }
        let scanned: number | SyntaxProblem
        if (c === 0x7b) {
          stack.push("object")
          i++
          state = State.KeyOrEndObject
          continue
        } else if (c === 0x5b) {
          stack.push("array")
          i++
          state = State.ValueOrEndArray
          continue
        } else if (c === 0x22) {
          scanned = scanString()
        } else if (c === 0x2d || isDigit(c)) {
          scanned = scanNumber()
        } else if (c === 0x74) {
          scanned = scanLiteral("true")
        } else if (c === 0x66) {
          scanned = scanLiteral("false")
        } else if (c === 0x6e) {
          scanned = scanLiteral("null")
        } else {
          return {
            offset: i,
            expected: state === State.ValueOrEndArray ? "a JSON value or ']'" : "a JSON value"
          }
        }
        if (typeof scanned !== "number") return scanned
        i = scanned
        state = State.AfterValue
        continue
      }
      case State.Key:
      case State.KeyOrEndObject: {
        if (state === State.KeyOrEndObject && c === 0x7d) {
          i++
          closeContainer()
          continue
        }
        if (c !== 0x22) {
          return {
            offset: i,
            expected: state === State.KeyOrEndObject
              ? "a property name in double quotes or '}'"
              : "a property name in double quotes"
          }
        }
        const scanned = scanString()
        if (typeof scanned !== "number") return scanned
        i = scanned
        state = State.Colon
        continue
      }
      case State.Colon: {
        if (c !== 0x3a) return { offset: i, expected: "':' after the property name" }
        i++
        state = State.Value
        continue
      }
      case State.AfterValue: {
        const top = stack.at(-1)
        if (top === undefined) {
          return c === -1 ? undefined : { offset: i, expected: "the end of the input (there is text after the JSON value)" }
        }
        if (c === 0x2c) {
          i++
          state = top === "object" ? State.Key : State.Value
          continue
        }
        if ((top === "object" && c === 0x7d) || (top === "array" && c === 0x5d)) {
          i++
          closeContainer()
          continue
        }
        return { offset: i, expected: afterValueExpectation() }
      }
    }
  }
}

/** @internal */
export interface Position {
  readonly line: number
  readonly column: number
}

/**
 * The 1-based line and column of an offset.
 *
 * @internal
 */
export const positionOf = (text: string, offset: number): Position => {
  let line = 1
  let lineStart = 0
  for (let k = text.indexOf("\n"); k !== -1 && k < offset; k = text.indexOf("\n", k + 1)) {
    line++
    lineStart = k + 1
  }
  return { line, column: offset - lineStart + 1 }
}

/**
 * What sits at an offset, for "…, found X" messages.
 *
 * @internal
 */
export const describeAt = (text: string, offset: number): string => {
  if (offset >= text.length) return "the end of the input"
  const c = text[offset]!
  if (c === "\n" || c === "\r") return "a line break"
  if (c === "\t") return "a tab"
  const code = c.charCodeAt(0)
  if (code < 0x20) return `the control character U+${code.toString(16).toUpperCase().padStart(4, "0")}`
  return `'${c}'`
}

/**
 * The line holding `offset`, cut to a window around it, with a caret line under the offset.
 * Tabs become spaces so the caret stays aligned.
 *
 * @internal
 */
export const excerptAt = (text: string, offset: number, options: { before: number; after: number }): string => {
  const lineStart = text.lastIndexOf("\n", offset - 1) + 1
  let lineEnd = text.indexOf("\n", offset)
  if (lineEnd === -1) lineEnd = text.length
  const line = text.slice(lineStart, lineEnd).replaceAll(/[\t\r]/g, " ")
  const column = offset - lineStart
  const start = Math.max(0, column - options.before)
  const end = Math.min(line.length, column + options.after)
  const prefix = start > 0 ? "…" : ""
  const suffix = end < line.length ? "…" : ""
  return `${prefix}${line.slice(start, end)}${suffix}\n${" ".repeat(prefix.length + column - start)}^`
}

interface Frame {
  readonly value: object
  readonly level: number
  readonly parent: Frame | undefined
  readonly key: string | number
}

const pathOf = (frame: Frame): Array<string | number> => {
  const path: Array<string | number> = []
  for (let at: Frame | undefined = frame; at?.parent !== undefined; at = at.parent) path.push(at.key)
  return path.reverse()
}

/**
 * Where a parsed JSON value first nests objects and arrays deeper than `max` levels (the
 * value itself is level 1): the path to the first container beyond the limit, in document
 * order, with the container found there; `undefined` when the value stays within the limit.
 * It walks with a stack of its own, so no depth of input can overflow the call stack, and it
 * looks no deeper than the limit.
 *
 * @internal
 */
export const beyondDepth = (
  value: unknown,
  max: number
): { readonly path: ReadonlyArray<string | number>; readonly value: object } | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const stack: Array<Frame> = [{ value, level: 1, parent: undefined, key: "" }]
  while (stack.length > 0) {
    const frame = stack.pop()!
    if (frame.level > max) return { path: pathOf(frame), value: frame.value }
    const push = (child: unknown, key: string | number) => {
      if (typeof child === "object" && child !== null) stack.push({ value: child, level: frame.level + 1, parent: frame, key })
    }
    // Pushed last to first, so the first child is looked at first.
    if (Array.isArray(frame.value)) {
      for (let i = frame.value.length - 1; i >= 0; i--) push(frame.value[i], i)
    } else {
      const keys = Object.keys(frame.value)
      const object = frame.value as Record<string, unknown>
      for (let i = keys.length - 1; i >= 0; i--) push(object[keys[i]!], keys[i]!)
    }
  }
  return undefined
}

/**
 * Whether a parameter Schema is a struct without fields. Effect reads `Schema.Struct({})` as
 * TypeScript's `{}` (any value but null and undefined) and describes it as
 * `{"not": {"type": "null"}}`; for a tool it means "no arguments", which providers expect as an
 * object schema without properties, and which must decode only objects.
 *
 * @internal
 */
export const isEmptyStruct = (ast: SchemaAST.AST): boolean =>
  SchemaAST.isObjects(ast) && ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0

/**
 * The path to the first value of a Schema that JSON cannot carry: a declared type
 * (`Schema.declare`, `Schema.instanceOf`) with no `toCodecJson` or `toCodec` annotation and no
 * encoding of its own. `Schema.toCodecJson` accepts such a type as any JSON value, so the
 * model's arguments would never decode into it; a tool is refused for it up front instead.
 * `undefined` when every value has a JSON form.
 *
 * @internal
 */
export const pathWithoutJsonForm = (ast: SchemaAST.AST): ReadonlyArray<PropertyKey> | undefined =>
  firstWithoutJsonForm(SchemaAST.toEncoded(ast), [], new Set())

const firstWithoutJsonForm = (
  ast: SchemaAST.AST,
  path: ReadonlyArray<PropertyKey>,
  seen: Set<SchemaAST.AST>
): ReadonlyArray<PropertyKey> | undefined => {
  if (seen.has(ast)) return undefined
  seen.add(ast)
  const within = (children: Iterable<readonly [PropertyKey | undefined, SchemaAST.AST]>) => {
    for (const [key, child] of children) {
      const found = firstWithoutJsonForm(child, key === undefined ? path : [...path, key], seen)
      if (found !== undefined) return found
    }
    return undefined
  }
  switch (ast._tag) {
    case "Declaration": {
      const annotations = ast.annotations
      if (annotations?.toCodecJson === undefined && annotations?.toCodec === undefined) return path
      return within(ast.typeParameters.map((parameter) => [undefined, SchemaAST.toEncoded(parameter)] as const))
    }
    case "Objects":
      return within([
        ...ast.propertySignatures.map((property) => [property.name, property.type] as const),
        ...ast.indexSignatures.map((index) => [undefined, index.type] as const)
      ])
    case "Arrays":
      return within([
        ...ast.elements.map((element, index) => [index, element] as const),
        ...ast.rest.map((element) => [undefined, element] as const)
      ])
    case "Union":
      return within(ast.types.map((member) => [undefined, member] as const))
    case "Suspend":
      return within([[undefined, ast.thunk()]])
    default:
      return undefined
  }
}
