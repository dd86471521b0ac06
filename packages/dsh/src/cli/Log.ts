/**
 * The command's log: Effect's log lines on stderr, `dsh: <message>`.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Logger from "effect/Logger"

/**
 * Log lines on stderr, `dsh: <message>`, warnings and errors only; with `DSH_DEBUG=1` every
 * level, with causes.
 *
 * @since 0.1.0
 * @category layers
 */
export const logger = (debug: boolean) =>
  Logger.layer([
    Logger.make((options) => {
      if (!debug && options.logLevel !== "Warn" && options.logLevel !== "Error" && options.logLevel !== "Fatal") return
      const parts = Array.isArray(options.message) ? options.message : [options.message]
      const text = parts.map((part) => (typeof part === "string" ? part : String(part))).join(" ")
      const cause = debug && options.cause.reasons.length > 0 ? `\n${Cause.pretty(options.cause)}` : ""
      process.stderr.write(`${text.startsWith("dsh") ? "" : "dsh: "}${text}${cause}\n`)
    })
  ])
