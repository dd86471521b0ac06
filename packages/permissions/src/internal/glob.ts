/**
 * Globs over tool names and over paths.
 *
 * A name glob: `*` is any run of characters, `?` one character. A path glob works on `/`
 * separated segments: `*` is any run of characters within a segment, `?` one character, `**`
 * (a whole segment) any number of segments, none included; `\` escapes the next character.
 * Character classes and braces are refused when a pattern is compiled (a list of patterns
 * says the same thing without a second syntax).
 */
import { posix } from "node:path"
import * as Wildcard from "./wildcard.ts"

/** A compiled name glob. */
export const nameGlob = (pattern: string): Wildcard.Wildcard => Wildcard.fromGlob(pattern)

/** Where `**` stands in a compiled path glob. */
const globstar: unique symbol = Symbol("globstar")

/** A compiled path glob: an absolute path's segments, each a pattern or `**`. */
export type PathGlob = ReadonlyArray<Wildcard.Wildcard | typeof globstar>

/** What is wrong with a path pattern, or `undefined` when nothing is. */
export const pathProblem = (pattern: string): string | undefined => {
  if (pattern.length === 0) return "is empty"
  if (pattern.includes("\0")) return "holds a NUL character"
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c === "\\") i++
    else if ("[]{}".includes(c)) {
      return `holds "${c}": character classes and braces are not supported (give a list of patterns, or escape it with \\)`
    }
  }
  for (const segment of pattern.split("/")) {
    if (segment.includes("**") && segment !== "**") return `holds "${segment}": ** must be a whole path segment (a/**/b)`
  }
  return undefined
}

const segmentPattern = (segment: string): Wildcard.Wildcard => {
  const tokens: Array<Wildcard.Token> = []
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i]!
    if (c === "\\" && i + 1 < segment.length) tokens.push(segment[++i]!)
    else tokens.push(c === "*" ? Wildcard.star : c === "?" ? Wildcard.one : c)
  }
  return tokens
}

/** The absolute, normalized form of a path as the file tools resolve it: against `root`. */
export const resolvePath = (root: string, path: string): string => posix.resolve(root, path)

/**
 * Compiles a path glob (checked with {@link pathProblem}); a relative one is taken from
 * `root`, and `.` and `..` segments are folded, as they are in the paths it is matched with.
 */
export const pathGlob = (root: string, pattern: string): PathGlob => {
  const absolute = posix.normalize(pattern.startsWith("/") ? pattern : `${root}/${pattern}`)
  const trimmed = absolute.length > 1 && absolute.endsWith("/") ? absolute.slice(0, -1) : absolute
  return trimmed.split("/").map((segment) => (segment === "**" ? globstar : segmentPattern(segment)))
}

/** Whether an absolute, normalized path matches a compiled glob. */
export const matchesPath = (glob: PathGlob, path: string): boolean => {
  const segments = path.split("/")
  // the wildcard algorithm with `**` as the star: on a mismatch, the last `**` takes one more
  // segment; linear in practice, O(segments × pattern) at worst, never recursive
  let p = 0
  let s = 0
  let starP = -1
  let starS = -1
  while (s < segments.length) {
    const part = glob[p]
    if (part === globstar) {
      starP = p
      starS = s
      p++
    } else if (part !== undefined && Wildcard.matches(part, segments[s]!)) {
      p++
      s++
    } else if (starP >= 0) {
      p = starP + 1
      s = ++starS
    } else {
      return false
    }
  }
  while (glob[p] === globstar) p++
  return p === glob.length
}

/** A path escaped so that, as a glob, it matches exactly itself. */
export const escapePath = (path: string): string => path.replace(/[\\*?[\]{}]/g, "\\$&")
