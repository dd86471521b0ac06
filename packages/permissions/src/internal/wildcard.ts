/**
 * Wildcard patterns without regular expressions: a pattern is a list of tokens (a literal
 * character, any one character, any run of characters), matched by the two-pointer wildcard
 * algorithm. A regular expression built from `*a*a*a*b` backtracks exponentially on a long
 * name or word, and names, words and paths come from the model; this is O(pattern × text) at
 * worst and linear in practice.
 */

/** Any one character. */
export const one: unique symbol = Symbol("one")

/** Any run of characters, none included. */
export const star: unique symbol = Symbol("star")

/** A token: a literal character (one UTF-16 unit), {@link one} or {@link star}. */
export type Token = string | typeof one | typeof star

/** A compiled wildcard pattern. */
export type Wildcard = ReadonlyArray<Token>

/** Literal characters as tokens. */
export const literal = (text: string): Array<Token> => text.split("")

/** A name glob: `*` any run of characters, `?` any one, everything else itself. */
export const fromGlob = (pattern: string): Wildcard =>
  pattern.split("").map((c) => (c === "*" ? star : c === "?" ? one : c))

/** Whether `text` matches the whole pattern. */
export const matches = (pattern: Wildcard, text: string): boolean => {
  let p = 0
  let t = 0
  // where the last star was, and how much of the text it has taken: on a mismatch it takes one more
  let starP = -1
  let starT = 0
  while (t < text.length) {
    const token = pattern[p]
    if (token === star) {
      starP = p++
      starT = t
    } else if (token !== undefined && (token === one || token === text[t])) {
      p++
      t++
    } else if (starP >= 0) {
      p = starP + 1
      t = ++starT
    } else {
      return false
    }
  }
  while (pattern[p] === star) p++
  return p === pattern.length
}
