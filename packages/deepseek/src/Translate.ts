/**
 * Translating DeepSeek's deltas: `@dsh/openai`'s translator with the `deepseek` profile's
 * quirks (reasoning under `reasoning_content`, cache hits from `prompt_cache_hit_tokens`, a
 * strict end of stream) and `"DeepSeek"` naming the server. See `@dsh/openai`'s `Translate`
 * for the rules.
 *
 * @since 0.1.0
 */
import type { FinishReason, Usage } from "@dsh/llm"
import { Profile, Profiles, Translate, type Wire } from "@dsh/openai"

/**
 * A translator for one response. Not shared between fibers.
 *
 * @since 0.1.0
 * @category models
 */
export type Translator = Translate.Translator

const quirks = Profile.resolveQuirks(Profiles.deepseek.quirks)

/**
 * Maps a provider's finish reason (`insufficient_system_resource`, DeepSeek's own, is an
 * `other` named by it).
 *
 * @since 0.1.0
 * @category mapping
 */
export const finishReason: (raw: string) => FinishReason.FinishReason = Translate.finishReason

/**
 * Maps DeepSeek's token counts to dsh's disjoint usage (`prompt_cache_hit_tokens` first, else
 * `prompt_tokens_details.cached_tokens`).
 *
 * @since 0.1.0
 * @category mapping
 */
export const usage = (u: Wire.Usage): Usage.Usage => Translate.usage(u, quirks.cacheHits)

/**
 * A name piece joined to the name so far.
 *
 * @since 0.1.0
 * @category mapping
 */
export const joinName: (name: string, piece: string) => string = Translate.joinName

/**
 * Creates a translator. `provider` names the server in error messages.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (provider = "DeepSeek"): Translator => Translate.make({ provider, quirks })
