/**
 * The Claude models the adapter serves by default, with what is known about each: context
 * window, output limit and prices in US dollars per million tokens (`ModelInfo` of `@dsh/llm`).
 * `Anthropic.layer` registers them as the adapter's `info`, so `ModelRegistry.info(model)`
 * answers and `ModelInfo.cost` turns a step's usage into money.
 *
 * **Where the numbers come from, and how far to trust them.** They were transcribed on
 * 2026-12-01 from copies of Anthropic's model pages (`platform.claude.com/docs/<lang>/models/
 * <model>/overview`, each page's own "Model ID · Context window · Max output · Input/Output
 * pricing" line and its pricing list) held in the reference corpus this adapter was written
 * against. Those copies were captured at different times during 2026 and could not be checked
 * against the live pages, so treat them as a snapshot, not as a price list: check
 * <https://platform.claude.com/docs/en/about-claude/pricing> before relying on a cost, and
 * override an entry with the `info` option of `Anthropic.layer` (entries are plain data).
 * Particulars:
 *
 * - cache prices are the 5-minute cache write and the cache read (hit) price; a one-hour cache
 *   write costs more (2× input on the pages seen) and `ModelInfo` has one write price only;
 * - `claude-opus-5-5` and `claude-sonnet-5-5`: prices and cache prices from their model pages;
 *   `claude-opus-5-5`'s cache read is 0.05× input, not the usual 0.1×. The id `claude-opus-5-5`
 *   appears in Anthropic's streaming guide; the id `claude-sonnet-5-5` was seen only in
 *   third-party listings and follows the same pattern;
 * - `claude-opus-5`, `claude-sonnet-5`: from their model pages (cache prices included);
 * - `claude-opus-4-6`, `claude-sonnet-4-6`: context, output and base prices from their model
 *   pages (a 1M context: one earlier copy said "200K, 1M in beta"); cache prices at the standard
 *   multipliers (1.25× input to write, 0.1× to read), not seen on a page;
 * - `claude-opus-4-5`, `claude-sonnet-4-5`, `claude-haiku-4-5` (and their dated snapshot ids):
 *   from their model pages and Anthropic's pricing as published in late 2025. Sonnet 4.5's 1M
 *   context (beta, behind a header, at long-context prices) is not reflected: 200K is listed;
 * - left out: models whose API id or prices the pages did not make certain (Claude Fable,
 *   Claude Haiku 5.5, whose pages say "from $0.10"). Serve them with the `models` option and
 *   describe them with `info`.
 *
 * @since 0.1.0
 */
import type { ModelInfo } from "@dsh/llm"

const provider = "anthropic"

const entry = (
  name: string,
  contextWindow: number,
  maxOutputTokens: number,
  prices: readonly [input: number, output: number, cacheWrite: number, cacheRead: number]
): ModelInfo.ModelInfo => ({
  name,
  provider,
  contextWindow,
  maxOutputTokens,
  pricing: {
    inputPerMillion: prices[0],
    outputPerMillion: prices[1],
    cacheWritePerMillion: prices[2],
    cacheReadPerMillion: prices[3],
    currency: "USD"
  }
})

const million = 1_000_000

/**
 * Every model the adapter describes, newest first (the first is the one `Dsh.agent` picks when
 * no model is named).
 *
 * @since 0.1.0
 * @category catalog
 */
export const catalog: ReadonlyArray<ModelInfo.ModelInfo> = [
  entry("claude-opus-5-5", million, 128_000, [4, 20, 5, 0.2]),
  entry("claude-sonnet-5-5", million, 128_000, [2, 10, 2.5, 0.2]),
  entry("claude-opus-5", million, 128_000, [5, 25, 6.25, 0.5]),
  entry("claude-sonnet-5", million, 128_000, [2, 10, 2.5, 0.2]),
  entry("claude-opus-4-6", million, 128_000, [5, 25, 6.25, 0.5]),
  entry("claude-sonnet-4-6", million, 128_000, [3, 15, 3.75, 0.3]),
  entry("claude-opus-4-5", 200_000, 64_000, [5, 25, 6.25, 0.5]),
  entry("claude-opus-4-5-20251101", 200_000, 64_000, [5, 25, 6.25, 0.5]),
  entry("claude-sonnet-4-5", 200_000, 64_000, [3, 15, 3.75, 0.3]),
  entry("claude-sonnet-4-5-20250929", 200_000, 64_000, [3, 15, 3.75, 0.3]),
  entry("claude-haiku-4-5", 200_000, 64_000, [1, 5, 1.25, 0.1]),
  entry("claude-haiku-4-5-20251001", 200_000, 64_000, [1, 5, 1.25, 0.1])
]

/**
 * The names of {@link catalog}, in its order: the models the adapter serves by default.
 *
 * @since 0.1.0
 * @category catalog
 */
export const names: ReadonlyArray<string> = catalog.map((info) => info.name)

/**
 * The catalog's entry for a model, if it has one.
 *
 * @since 0.1.0
 * @category catalog
 */
export const find = (name: string): ModelInfo.ModelInfo | undefined => catalog.find((info) => info.name === name)
