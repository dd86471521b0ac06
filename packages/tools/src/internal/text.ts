/**
 * Model-facing wording shared by the modules: bounded previews of values, descriptions of
 * defects, "did you mean" suggestions and argument paths. Everything here is total and
 * bounded: it describes what a model wrote or a tool failed with, either of which may be
 * hostile (megabyte keys, values nested past the stack, cycles, codes outside the catalog).
 *
 * @internal
 */
import { ErrorCode, HarnessError } from "@dsh/llm"

const previewLimit = 60

/**
 * A short JSON rendering of a value, cut when long. Model-written arguments can be megabytes
 * (a whole file passed as a string); echoing them back in an error would waste the context
 * window and can leak what the caller would rather not repeat.
 *
 * @internal
 */
export const preview = (value: unknown): string => {
  if (typeof value === "string") {
    if (value.length <= previewLimit) return JSON.stringify(value)
    const cut = JSON.stringify(cutCodePoints(value, previewLimit))
    return `${cut.slice(0, -1)}…" (${value.length} characters)`
  }
  const json = stringified(value)
  // Not writable as JSON: parsed arguments get here only when nested past JSON.stringify's
  // stack. `describe` renders them a few levels deep (an object with a `message` key as that
  // message, which is the model's own text either way).
  if (json === undefined) return clip(HarnessError.describe(value), previewLimit)
  return json.length <= previewLimit ? json : `${cutCodePoints(json, previewLimit)}… (${json.length} characters of JSON)`
}

// A number past JSON's range (1e400) parses as Infinity, which JSON.stringify writes as null:
// shown as what it became, so the model is not told it sent null.
const unbounded = (_: string, value: unknown): unknown =>
  typeof value === "number" && !Number.isFinite(value) ? `\u0000${value}\u0000` : value

const stringified = (value: unknown): string | undefined => {
  try {
    if (typeof value === "number" && !Number.isFinite(value)) return `${value} (a number beyond what a double holds)`
    const json = JSON.stringify(value, unbounded)
    return json?.includes("\\u0000") === true ? json.replace(/"\\u0000(-?Infinity|NaN)\\u0000"/g, "$1") : json
  } catch {
    return undefined
  }
}

// Never split a surrogate pair: a lone surrogate is not valid UTF-8 on the wire.
const cutCodePoints = (text: string, max: number): string => {
  let end = max
  const code = text.charCodeAt(end - 1)
  if (code >= 0xd800 && code <= 0xdbff) end--
  return text.slice(0, end)
}

/**
 * A defect or failure in words, without its stack (`HarnessError.describe`: an `Error`'s
 * message, a thrown string, a plain object's `message`, a bounded rendering of anything
 * else). A value shaped like a harness error whose code is not in the catalog says so, so the
 * code it claimed is not lost when its result is given a catalog code instead.
 *
 * @internal
 */
export const describeDefect = (defect: unknown): string => {
  const text = HarnessError.describe(defect)
  const code = foreignCode(defect)
  return code === undefined ? text : `${text} (code ${truncate(code, previewLimit)} is not a dsh error code)`
}

// The code of a value shaped like a harness error whose code is not in the catalog: such a
// value must not pass for a harness error, or its code would reach code that matches on the
// catalog's codes.
const foreignCode = (u: unknown): string | undefined => {
  try {
    return HarnessError.isHarnessError(u) && !ErrorCode.isErrorCode(u.code) ? u.code : undefined
  } catch {
    // a Proxy whose traps throw
    return undefined
  }
}

/**
 * Whether a value is a harness error whose code is in the catalog: one a tool result may
 * carry as it is.
 *
 * @internal
 */
export const isCatalogError = (u: unknown): u is HarnessError.HarnessError => {
  try {
    return HarnessError.isHarnessError(u) && ErrorCode.isErrorCode(u.code)
  } catch {
    return false
  }
}

/**
 * Truncates a text to a bound, saying how long it was.
 *
 * @internal
 */
export const truncate = (text: string, max: number): string =>
  text.length <= max ? text : `${cutCodePoints(text, max)}… (${text.length} characters)`

/**
 * A call's tool name as messages show it. The model writes the name, and a call is answered
 * (unknown, denied, aborted, blamed on a middleware) before anything checks it, so a name
 * longer than any valid one (64 characters) is cut rather than echoed.
 *
 * @internal
 */
export const shownName = (name: string): string => clip(name, 64)

/**
 * Cuts a text to at most `max` characters, the last of them `…`.
 *
 * @internal
 */
export const clip = (text: string, max: number): string =>
  text.length <= max ? text : `${cutCodePoints(text, max - 1)}…`

// Keys and names that differ only by case or by `_`/`-` separators (`dry_run`, `dryRun`,
// `DRY-RUN`) are the same word to a model.
const normalize = (s: string) => s.toLowerCase().replaceAll(/[_-]/g, "")

const distance = (a: string, b: string): number => {
  // Optimal string alignment distance: insertions, deletions, substitutions, transpositions.
  const rows = a.length + 1
  const cols = b.length + 1
  const d: Array<number> = Array.from({ length: rows * cols }, () => 0)
  for (let i = 0; i < rows; i++) d[i * cols] = i
  for (let j = 0; j < cols; j++) d[j] = j
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(d[(i - 1) * cols + j]! + 1, d[i * cols + j - 1]! + 1, d[(i - 1) * cols + j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, d[(i - 2) * cols + j - 2]! + 1)
      }
      d[i * cols + j] = best
    }
  }
  return d[rows * cols - 1]!
}

/**
 * The candidate a misspelt name most likely meant, if one is close enough: equal after
 * normalizing case and separators, or within an edit distance of a third of its length.
 * Candidates whose length alone puts them out of reach are skipped, so a megabyte-long key
 * costs a length comparison, not a megabyte-sized table.
 *
 * @internal
 */
export const suggest = (name: string, candidates: ReadonlyArray<string>): string | undefined => {
  const wanted = normalize(name)
  const allowed = Math.max(1, Math.floor(wanted.length / 3))
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of candidates) {
    if (candidate === name) continue
    const normalized = normalize(candidate)
    // The edit distance is at least the difference in length.
    if (Math.abs(normalized.length - wanted.length) > allowed) continue
    const d = distance(wanted, normalized)
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return bestDistance <= allowed ? best : undefined
}

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/

const maxKeyLength = 40
const maxPathLength = 120

const formatSegment = (segment: string | number, first: boolean): string => {
  if (typeof segment === "number") return `[${segment}]`
  if (segment.length > maxKeyLength) return `[${JSON.stringify(`${cutCodePoints(segment, maxKeyLength)}…`)}]`
  if (identifier.test(segment)) return first ? segment : `.${segment}`
  return `[${JSON.stringify(segment)}]`
}

/**
 * A path as a model would write it: `env[1].value`, `["odd key"]`. Bounded: a key longer
 * than 40 characters is cut, and a path longer than 120 characters keeps its start and its
 * end around a `…` (a path 256 levels deep, a model that invents megabyte keys).
 *
 * @internal
 */
export const formatPath = (path: ReadonlyArray<string | number>): string => {
  const segments = path.map((segment, i) => formatSegment(segment, i === 0))
  const whole = segments.join("")
  if (whole.length <= maxPathLength) return whole
  const half = maxPathLength / 2
  let head = ""
  let i = 0
  while (i < segments.length && head.length + segments[i]!.length <= half) head += segments[i++]
  let tail = ""
  let j = segments.length
  while (j > i && tail.length + segments[j - 1]!.length <= half) tail = segments[--j] + tail
  return `${head}…${tail}`
}

/**
 * `1 problem`, `2 problems`.
 *
 * @internal
 */
export const plural = (count: number, word: string): string => `${count} ${word}${count === 1 ? "" : "s"}`
