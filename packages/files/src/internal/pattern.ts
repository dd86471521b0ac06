/**
 * Glob patterns the model writes, checked before they are used. effect's `Glob` matches a
 * malformed pattern literally (an unclosed `[` is a plain `[`), so a typo would answer "no
 * matches" as if the files were not there; the tools refuse it instead, saying what is wrong.
 * The reading of `[…]` sets and `{…}` alternatives follows effect's (`effect/Glob`), so what
 * is refused here is exactly what it would have taken literally.
 */
import * as Schema from "effect/Schema"

// POSIX class names effect's Glob knows inside a set (`[[:digit:]]`).
const posixClasses = new Set([
  "alnum",
  "alpha",
  "blank",
  "cntrl",
  "digit",
  "graph",
  "lower",
  "print",
  "punct",
  "space",
  "upper",
  "word",
  "xdigit"
])

/** Where a `[:name:]` class starting at `open` ends, if it names a known class. */
const posixClassEnd = (chars: ReadonlyArray<string>, open: number): number | undefined => {
  // the names are at most six characters
  for (let i = open + 2; i < chars.length && i <= open + 8; i++) {
    if (chars[i] === ":" && chars[i + 1] === "]") {
      return posixClasses.has(chars.slice(open + 2, i).join("")) ? i + 1 : undefined
    }
  }
  return undefined
}

/**
 * Where the set opened by the `[` at `open` is closed by its `]`, or `undefined` when it is
 * not closed within its path segment. A `]` right after the `[` (or after its `!` / `^`) is a
 * member, not the end, and a `\` makes the next character a member.
 */
const setEnd = (chars: ReadonlyArray<string>, open: number): number | undefined => {
  let i = open + 1
  if (chars[i] === "!" || chars[i] === "^") i++
  for (let first = true; i < chars.length; i++, first = false) {
    if (chars[i] === "/") return undefined
    if (chars[i] === "]" && !first) return i
    if (chars[i] === "[" && chars[i + 1] === ":") {
      const end = posixClassEnd(chars, i)
      if (end !== undefined) {
        i = end
        continue
      }
    }
    if (chars[i] === "\\" && i + 1 < chars.length) i++
    // a range's upper end may be an escaped `]`, which then does not close the set
    if (chars[i + 1] === "-" && i + 2 < chars.length && chars[i + 2] !== "]") {
      if (chars[i + 2] === "/") return undefined
      i += chars[i + 2] === "\\" && i + 3 < chars.length ? 3 : 2
    }
  }
  return undefined
}

/**
 * What is wrong with a glob pattern, or `undefined` when nothing is: a `[` whose set no `]`
 * closes in its path segment, or a `{` whose alternatives no `}` closes. Positions are
 * 1-based characters of the pattern.
 */
export const globProblem = (pattern: string): string | undefined => {
  const chars = Array.from(pattern)
  const braces: Array<number> = []
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i]
    if (char === "\\") {
      i++
    } else if (char === "[") {
      const end = setEnd(chars, i)
      if (end === undefined) {
        return `the "[" at character ${i + 1} opens a set of characters that no "]" closes ` +
          `within its path segment (write \\[ to match a "[" itself)`
      }
      i = end
    } else if (char === "{") {
      braces.push(i)
    } else if (char === "}") {
      braces.pop()
    }
  }
  return braces.length === 0
    ? undefined
    : `the "{" at character ${braces[0]! + 1} opens alternatives that no "}" closes (write \\{ to match a "{" itself)`
}

/**
 * A glob pattern parameter: a malformed one fails decoding (`INVALID_ARGS`), saying what is
 * wrong with it. The description is annotated before the checks: JSON Schema has no
 * counterpart of this check, and the description must still reach the model.
 */
export const globParameter = (description: string) =>
  Schema.String.annotate({ description }).check(
    Schema.isMinCodePoints(1),
    Schema.makeFilter((pattern: string) => {
      const problem = globProblem(pattern)
      return problem === undefined ? undefined : `Expected a valid glob pattern: ${problem}`
    }, { expected: "a valid glob pattern" })
  )
