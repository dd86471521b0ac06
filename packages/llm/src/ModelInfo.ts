/**
 * What is known about a model beyond its name: its context window, its output limit and its
 * prices — so a harness can tell how full the next request is, and turn usage into cost.
 * Adapters list the models they serve with their info (see `@dsh/model`'s `Adapter.info`);
 * entries are plain data, so a user adds or corrects one without code.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { Usage } from "./Usage.ts"

const PerMillion = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * Prices per million tokens, in `currency` (US dollars unless said otherwise). Cached input
 * read and cache writes have their own prices where the provider charges them differently;
 * omitted, they cost what input costs.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Pricing = Schema.Struct({
  inputPerMillion: PerMillion,
  outputPerMillion: PerMillion,
  cacheReadPerMillion: Schema.optionalKey(PerMillion),
  cacheWritePerMillion: Schema.optionalKey(PerMillion),
  currency: Schema.optionalKey(Schema.String)
})

/**
 * @since 0.1.0
 * @category models
 */
export interface Pricing extends Schema.Schema.Type<typeof Pricing> {}

/**
 * A model's entry: its name as requests use it, the provider serving it, its context window
 * and output limit in tokens, and its prices.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ModelInfo = Schema.Struct({
  name: Schema.String,
  provider: Schema.String,
  contextWindow: Schema.Int.check(Schema.isGreaterThan(0)),
  maxOutputTokens: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0))),
  pricing: Schema.optionalKey(Pricing)
})

/**
 * @since 0.1.0
 * @category models
 */
export interface ModelInfo extends Schema.Schema.Type<typeof ModelInfo> {}

/**
 * What `usage` cost at `pricing`, in its currency: disjoint counts, each at its own price
 * (reasoning tokens are part of the output and priced with it).
 *
 * @example
 * ```ts
 * import { ModelInfo, Usage } from "@dsh/llm"
 *
 * const pricing = { inputPerMillion: 0.27, outputPerMillion: 1.1, cacheReadPerMillion: 0.07 }
 * ModelInfo.cost(Usage.make({ inputTokens: 1_000_000, cacheReadTokens: 1_000_000 }), pricing) // 0.34
 * ```
 *
 * @since 0.1.0
 * @category utils
 */
export const cost = (usage: Usage, pricing: Pricing): number =>
  (usage.inputTokens * pricing.inputPerMillion +
    usage.outputTokens * pricing.outputPerMillion +
    usage.cacheReadTokens * (pricing.cacheReadPerMillion ?? pricing.inputPerMillion) +
    usage.cacheWriteTokens * (pricing.cacheWritePerMillion ?? pricing.inputPerMillion)) / 1_000_000
