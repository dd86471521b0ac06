/**
 * Token usage. The counts are disjoint: `inputTokens` excludes cached input, which is
 * reported as `cacheReadTokens` (served from the provider's prompt cache) and
 * `cacheWriteTokens` (written to it). `reasoningTokens`, when the provider reports it, is a
 * part of `outputTokens`.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * @since 0.1.0
 * @category schemas
 */
export const Usage = Schema.Struct({
  inputTokens: Count,
  outputTokens: Count,
  cacheReadTokens: Count,
  cacheWriteTokens: Count,
  reasoningTokens: Schema.optionalKey(Count)
}).annotate({ identifier: "Usage" })

/**
 * @since 0.1.0
 * @category models
 */
export interface Usage extends Schema.Schema.Type<typeof Usage> {}

/**
 * No tokens.
 *
 * @since 0.1.0
 * @category constructors
 */
export const empty: Usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 }

/**
 * Builds a usage record; omitted counts are zero.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (counts: Partial<Usage>): Usage => ({ ...empty, ...counts })

/**
 * Sums two usage records. `reasoningTokens` is present when either side has it.
 *
 * @since 0.1.0
 * @category combinators
 */
export const add = (self: Usage, that: Usage): Usage => {
  const sum: Usage = {
    inputTokens: self.inputTokens + that.inputTokens,
    outputTokens: self.outputTokens + that.outputTokens,
    cacheReadTokens: self.cacheReadTokens + that.cacheReadTokens,
    cacheWriteTokens: self.cacheWriteTokens + that.cacheWriteTokens
  }
  return self.reasoningTokens === undefined && that.reasoningTokens === undefined
    ? sum
    : { ...sum, reasoningTokens: (self.reasoningTokens ?? 0) + (that.reasoningTokens ?? 0) }
}

/**
 * All input tokens, cached or not.
 *
 * @since 0.1.0
 * @category getters
 */
export const totalInput = (usage: Usage): number =>
  usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens
