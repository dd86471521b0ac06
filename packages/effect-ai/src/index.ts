/**
 * dsh's bridge to effect/ai: any effect/ai `LanguageModel` — every provider Effect supports —
 * as a dsh model adapter, with the request, response, usage and error conversions it is made
 * of.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as EffectAiBridge from "./EffectAiBridge.ts"
/** @since 0.1.0 */
export * as ErrorMapping from "./ErrorMapping.ts"
/** @since 0.1.0 */
export * as PartTranslation from "./PartTranslation.ts"
/** @since 0.1.0 */
export * as PromptConversion from "./PromptConversion.ts"
/** @since 0.1.0 */
export * as ReasoningMetadata from "./ReasoningMetadata.ts"
