/**
 * The failures of the DeepSeek adapter itself. A model call fails with the `LlmError`s of
 * `@dsh/llm` (auth, rate limit, invalid request, server, protocol, transport); what this module
 * adds is the failure of building the adapter's Layer.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import * as Schema from "effect/Schema"

/**
 * The adapter's Layer was built without a required setting (no API key) or with an invalid
 * one (a base URL that is not a URL). The message says how to set it.
 *
 * @since 0.1.0
 * @category errors
 */
export class DeepSeekConfigError extends Schema.TaggedError<DeepSeekConfigError>()("DeepSeekConfigError", {
  ...HarnessError.fields("LLM_CONFIG"),
  /** The setting at fault, e.g. `"apiKey"` or `"baseUrl"`. */
  setting: Schema.String
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [DeepSeekConfigError] as const
