/**
 * The failures of the OpenAI-compatible adapter itself. A model call fails with the
 * `LlmError`s of `@dsh/llm` (auth, rate limit, invalid request, server, protocol, transport);
 * what this module adds is the failure of building the adapter's Layer.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import * as Schema from "effect/Schema"

/**
 * The adapter's Layer was built without a required setting (no API key for a server that
 * needs one, no model to serve) or with an invalid one (a base URL that is not a URL, a profile
 * that does not decode, a thinking switch or an effort the profile's server does not have).
 * The message says how to set it.
 *
 * @since 0.1.0
 * @category errors
 */
export class OpenAiConfigError extends Schema.TaggedError<OpenAiConfigError>()("OpenAiConfigError", {
  ...HarnessError.fields("LLM_CONFIG"),
  /** The setting at fault, e.g. `"apiKey"`, `"baseUrl"`, `"profile"`, `"models"`. */
  setting: Schema.String
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [OpenAiConfigError] as const
