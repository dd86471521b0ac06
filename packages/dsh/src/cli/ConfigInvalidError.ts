/**
 * The failure of the `dsh` command's configuration.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import * as Schema from "effect/Schema"

/**
 * The `dsh` command's configuration is invalid: a value of its config file, a flag, an
 * argument or an environment variable. The message names the field, where the value came from
 * and what was expected.
 *
 * @example
 * ```ts
 * import { ConfigInvalidError } from "dsh"
 *
 * const error = new ConfigInvalidError({
 *   message: "--sessions: expected a directory or \"memory\", got an empty string",
 *   field: "sessions",
 *   source: "--sessions"
 * })
 * error.code // "CONFIG_INVALID"
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class ConfigInvalidError extends Schema.TaggedError<ConfigInvalidError>()("ConfigInvalidError", {
  ...HarnessError.fields("CONFIG_INVALID"),
  /** The field at fault: `deepseek.baseUrl`, `sessions`, `tools`, … */
  field: Schema.String,
  /** Where the value came from: a flag (`--base-url`), a variable (`DEEPSEEK_BASE_URL`) or a config file's path. */
  source: Schema.String
}) {}
