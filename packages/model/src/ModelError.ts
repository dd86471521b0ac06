/**
 * Failures of the model seam itself (as opposed to a provider's failures, which are
 * `LlmError`s).
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import * as Schema from "effect/Schema"

/**
 * No registered adapter serves the requested model.
 *
 * @since 0.1.0
 * @category errors
 */
export class NoModelError extends Schema.TaggedError<NoModelError>()("NoModelError", {
  ...HarnessError.fields("NO_MODEL"),
  model: Schema.String,
  registered: Schema.Array(Schema.String)
}) {}

/**
 * An adapter claimed a model name another registered adapter already serves.
 *
 * @since 0.1.0
 * @category errors
 */
export class ModelConflictError extends Schema.TaggedError<ModelConflictError>()("ModelConflictError", {
  ...HarnessError.fields("MODEL_CONFLICT"),
  model: Schema.String,
  adapter: Schema.String,
  registeredBy: Schema.String
}) {}

/**
 * The scripted model was asked for more responses than it was scripted with.
 *
 * @since 0.1.0
 * @category errors
 */
export class ScriptExhaustedError extends Schema.TaggedError<ScriptExhaustedError>()("ScriptExhaustedError", {
  ...HarnessError.fields("SCRIPT_EXHAUSTED"),
  requestNumber: Schema.Int
}) {}

/**
 * A model adapter was made with a setting out of its range: registered with no name, `models`
 * that is no list of names, a `stream` that is no function (`ModelRegistry.register`), or a
 * scripted or replay model given options past their types. Nothing is registered.
 *
 * @since 0.1.0
 * @category errors
 */
export class AdapterConfigError extends Schema.TaggedError<AdapterConfigError>()("AdapterConfigError", {
  ...HarnessError.fields("LLM_CONFIG"),
  /** The setting at fault, e.g. `"models"`, `"script"`. */
  setting: Schema.String
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [NoModelError, ModelConflictError, ScriptExhaustedError, AdapterConfigError] as const
