/**
 * Checks of a model adapter's settings that a config file can get past the types: a duration
 * that is no duration, a timeout of zero, a retry count that is no count, a retry schedule that
 * is no `Schedule`, a header name or value Node cannot send. Each check gives the
 * value or the problem in words naming the setting; the adapter raises its own config error
 * (`LLM_CONFIG`) with them when its Layer is built. The same `duration` check reads a tool's
 * `timeout` and an agent's `abortGrace`, which raise their own codes.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"

/**
 * A duration setting: `positive` (a timeout: zero would fail every request at once) or
 * `non-negative`. `Infinity` is a duration (off).
 *
 * @since 0.1.0
 * @category checks
 */
export const duration = (
  name: string,
  input: Duration.Input,
  sign: "positive" | "non-negative"
): Result.Result<Duration.Duration, string> => {
  const duration = Option.filter(Duration.fromInput(input), () => !Number.isNaN(input))
  if (Option.isNone(duration)) {
    return Result.fail(`${name} must be a duration ("30 seconds", a number of milliseconds), got ${quoted(input)}`)
  }
  const millis = Duration.toMillis(duration.value)
  return (sign === "positive" ? millis > 0 : millis >= 0)
    ? Result.succeed(duration.value)
    : Result.fail(`${name} must be ${sign === "positive" ? "longer than zero" : "zero or more"}, got ${Duration.format(duration.value)}`)
}

/**
 * A retry count: a finite number, 0 or more (0 turns retries off), rounded down.
 *
 * @since 0.1.0
 * @category checks
 */
export const retryCount = (name: string, times: unknown): Result.Result<number, string> =>
  typeof times === "number" && Number.isFinite(times) && times >= 0
    ? Result.succeed(Math.floor(times))
    : Result.fail(`${name} must be a whole number of retries, 0 or more, got ${quoted(times)}`)

/**
 * A retry schedule setting: a `Schedule`, or the adapter's default when absent. Code past the
 * types (a config object, a plain function) is refused when the Layer is built, where it would
 * otherwise make the Layer die when the adapter is made.
 *
 * @since 0.1.0
 * @category checks
 */
export const schedule = <S extends Schedule.Schedule<any, any, any, any>>(
  name: string,
  given: S | undefined,
  fallback: S
): Result.Result<S, string> =>
  given === undefined
    ? Result.succeed(fallback)
    : Schedule.isSchedule(given)
    ? Result.succeed(given)
    : Result.fail(`${name} must be a Schedule, got ${shown(given)}`)

// JSON would show NaN and the infinities as null
const quoted = (value: unknown): string => (typeof value === "number" ? String(value) : JSON.stringify(value) ?? String(value))

/**
 * Whether a text may be sent as an HTTP header's name (an RFC 9110 token). Node's client throws
 * when a request is built with any other, so an adapter checks its headers when its Layer is
 * built instead of letting every request die.
 *
 * @since 0.1.0
 * @category checks
 */
export const isHeaderName = (name: string): boolean => /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)

/**
 * Whether a text may be sent as an HTTP header's value: no line break or other control
 * character (a tab excepted) and nothing beyond Latin-1, which Node's client refuses by throwing
 * when a request is built (a key read from a file with its newline, say).
 *
 * @since 0.1.0
 * @category checks
 */
export const isHeaderValue = (value: string): boolean => /^[\t\x20-\x7e\x80-\xff]*$/.test(value)

/**
 * A setting's value as a config error quotes it: briefly, and what it is rather than all of it
 * (`null`, `nothing` for undefined, `an array`, a string cut at 80 characters, `a value of type
 * object`).
 *
 * @since 0.1.0
 * @category formatting
 */
export const shown = (value: unknown): string => {
  if (value === null) return "null"
  if (value === undefined) return "nothing"
  if (Array.isArray(value)) return "an array"
  if (typeof value === "string") return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)
  return typeof value === "number" || typeof value === "boolean" ? String(value) : `a value of type ${typeof value}`
}

/**
 * Why an options object holds keys its reader does not know, or `undefined` when it holds
 * none: a misspelt `timout` would otherwise be dropped without a word and its default kept.
 * `what` names the object in the message (`"the options object"`, `"jobEvents"`).
 *
 * @since 0.1.0
 * @category formatting
 */
export const unknownKeys = (what: string, value: object, known: ReadonlyArray<string>): string | undefined => {
  const unknown = Object.keys(value).filter((key) => !known.includes(key))
  if (unknown.length === 0) return undefined
  const names = unknown.map((key) => JSON.stringify(key)).join(", ")
  return `${what} has ${names}, which ${unknown.length === 1 ? "is no option" : "are no options"} (known: ${known.join(", ")})`
}

/**
 * A URL as messages and logs show it: its credentials (`user:password@`) replaced by
 * `REDACTED`, its query by `?REDACTED` (where tokens hide), its fragment dropped. Text that
 * is no URL is shown as it is.
 *
 * @since 0.1.0
 * @category rendering
 */
export const shownUrl = (url: string): string => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return url
  }
  if (parsed.username === "" && parsed.password === "" && parsed.search === "" && parsed.hash === "") return url
  if (parsed.username !== "" || parsed.password !== "") {
    parsed.username = "REDACTED"
    parsed.password = ""
  }
  if (parsed.search !== "") parsed.search = "?REDACTED"
  parsed.hash = ""
  return parsed.href
}

/**
 * The most of an error response's body {@link readErrorBody} reads: enough for any provider's
 * JSON error, far below what a proxy's endless or huge page would take.
 *
 * @since 0.1.0
 * @category reading
 */
export const maxErrorBodyBytes = 65_536

/**
 * The text of an error response's body (a non-2xx status), read as far as it goes within
 * bounds: at most `maxBytes` (the rest is not read), each read waiting at most `idle` (a body
 * that stalls ends there), decoded as UTF-8 with bad bytes as U+FFFD. What was read before a
 * failure or a stall is kept; it never fails. A whole-body read would hold a 600 MB page in
 * memory and die past V8's longest string, and one deadline over the whole read would cut a
 * slow but live body short.
 *
 * @since 0.1.0
 * @category reading
 */
export const readErrorBody = (
  body: Stream.Stream<Uint8Array, unknown>,
  idle: Duration.Duration,
  maxBytes: number = maxErrorBodyBytes
): Effect.Effect<string> =>
  Effect.suspend(() => {
    const parts: Array<Uint8Array> = []
    let total = 0
    const timed = Duration.isFinite(idle) ? Stream.timeoutOrElse(body, { duration: idle, orElse: () => Stream.empty }) : body
    return Stream.runForEachWhile(timed, (bytes) =>
      Effect.sync(() => {
        const kept = bytes.length > maxBytes - total ? bytes.subarray(0, maxBytes - total) : bytes
        parts.push(kept)
        total += kept.length
        return total < maxBytes
      })).pipe(
        Effect.ignore,
        Effect.map(() => {
          const all = new Uint8Array(total)
          let at = 0
          for (const part of parts) {
            all.set(part, at)
            at += part.length
          }
          return new TextDecoder().decode(all)
        })
      )
  })

/** How much of an HTML page is looked at: its title or first words are what a reader needs. */
const htmlHead = 64 * 1024

const entities: Readonly<Record<string, string>> = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: " ", "#39": "'" }

const looksLikeHtml = (body: string): boolean => /^\s*<(!doctype\s+html|html|head|body|title|h1|center)\b/i.test(body)

// The text between tags, by one forward scan: a regular expression over markup a server made
// up can take quadratic time (`<<<<…` with no `>`), and this must stay linear in the page.
const withoutTags = (html: string): string => {
  const parts: Array<string> = []
  let at = 0
  while (at < html.length) {
    const open = html.indexOf("<", at)
    if (open < 0) {
      parts.push(html.slice(at))
      break
    }
    parts.push(html.slice(at, open), " ")
    const close = html.indexOf(">", open)
    if (close < 0) break
    at = close + 1
  }
  return parts.join("").replaceAll(/&(#39|[a-z]{2,6});/gi, (all, name: string) => entities[name.toLowerCase()] ?? all)
    .replaceAll(/\s+/g, " ").trim()
}

/**
 * What an error body that is an HTML page says, in words for an error message: its title,
 * else its text, cut to 200 characters, and that a proxy or a wrong base URL is in the way;
 * `undefined` for a body that is no HTML page. Linear in the page, whatever its markup.
 *
 * @example
 * ```ts
 * import { AdapterSettings } from "@dsh/llm"
 *
 * AdapterSettings.htmlPage("<html><head><title>502 Bad Gateway</title></head></html>")
 * // 'an HTML page saying "502 Bad Gateway" (not the API\'s JSON: is a proxy or the wrong base URL in the way?)'
 * ```
 *
 * @since 0.1.0
 * @category formatting
 */
export const htmlPage = (body: string): string | undefined => {
  if (!looksLikeHtml(body)) return undefined
  const head = body.slice(0, htmlHead)
  const lower = head.toLowerCase()
  const start = lower.indexOf("<title")
  const open = start < 0 ? -1 : lower.indexOf(">", start)
  const end = open < 0 ? -1 : lower.indexOf("</title", open)
  const title = end < 0 ? "" : withoutTags(head.slice(open + 1, end))
  const said = title === "" ? withoutTags(head) : title
  const cut = said.length <= 200 ? said : `${said.slice(0, 200)}… (${said.length - 200} more characters)`
  return `an HTML page${cut === "" ? "" : ` saying ${JSON.stringify(cut)}`} (not the API's JSON: is a proxy or the wrong base URL in the way?)`
}
