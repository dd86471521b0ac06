/**
 * Model-facing wording shared by the modules: bounded previews of values, descriptions of
 * defects, "did you mean" suggestions and argument paths.
 *
 * @internal
 */

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
  let json: string | undefined
  try {
    json = JSON.stringify(value)
  } catch {
    json = undefined
  }
  if (json === undefined) return String(value)
  return json.length <= previewLimit ? json : `${cutCodePoints(json, previewLimit)}… (${json.length} characters of JSON)`
}

// Never split a surrogate pair: a lone surrogate is not valid UTF-8 on the wire.
const cutCodePoints = (text: string, max: number): string => {
  let end = max
  const code = text.charCodeAt(end - 1)
  if (code >= 0xd800 && code <= 0xdbff) end--
  return text.slice(0, end)
}

const defectLimit = 2000

/**
 * A defect in words, without its stack: `TypeError: x is not a function`, the text of a
 * thrown string, or a preview of anything else.
 *
 * @internal
 */
export const describeDefect = (defect: unknown): string => {
  let text: string
  if (defect instanceof Error) {
    const message = defect.message.length > 0 ? defect.message : "(no message)"
    text = defect.name === "Error" || defect.name === "" ? message : `${defect.name}: ${message}`
  } else if (typeof defect === "string") {
    text = defect
  } else {
    text = preview(defect)
  }
  return text.length <= defectLimit ? text : `${cutCodePoints(text, defectLimit)}… (${text.length} characters)`
}

/**
 * Truncates a text to a bound, saying how long it was.
 *
 * @internal
 */
export const truncate = (text: string, max: number): string =>
  text.length <= max ? text : `${cutCodePoints(text, max)}… (${text.length} characters)`

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
 *
 * @internal
 */
export const suggest = (name: string, candidates: ReadonlyArray<string>): string | undefined => {
  const wanted = normalize(name)
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of candidates) {
    if (candidate === name) continue
    const d = distance(wanted, normalize(candidate))
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  const allowed = Math.max(1, Math.floor(wanted.length / 3))
  return bestDistance <= allowed ? best : undefined
}

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/**
 * A path as a model would write it: `env[1].value`, `["odd key"]`.
 *
 * @internal
 */
export const formatPath = (path: ReadonlyArray<string | number>): string => {
  let out = ""
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`
    else if (identifier.test(segment)) out += out.length === 0 ? segment : `.${segment}`
    else out += `[${JSON.stringify(segment)}]`
  }
  return out
}

/**
 * `1 problem`, `2 problems`.
 *
 * @internal
 */
export const plural = (count: number, word: string): string => `${count} ${word}${count === 1 ? "" : "s"}`
