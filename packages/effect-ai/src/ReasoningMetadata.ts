/**
 * Round-trips an effect/ai reasoning part's provider metadata through a dsh reasoning block's
 * `signature`.
 *
 * Providers that require reasoning to be sent back verbatim (a signature, encrypted reasoning)
 * put what they need in the reasoning part's `metadata`, keyed by provider, and read it back
 * from the prompt part's `options` — that is how effect/ai's own `Prompt.fromResponseParts`
 * replays a response. A dsh reasoning block has exactly one place for such an opaque token,
 * `signature`, so the bridge stores the metadata there as tagged JSON and restores it as the
 * part's `options` when the block is sent back. Signatures written by other adapters lack the
 * tag and are left alone (not sent to effect/ai providers, which would not understand them).
 *
 * Text and tool-call metadata are not kept: dsh blocks have no place for them and providers
 * do not need them to accept a history.
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import type * as Schema from "effect/Schema"
import type { Prompt, Response } from "effect/ai"

/**
 * The tag that marks a signature written by this bridge.
 *
 * @since 0.1.0
 * @category constants
 */
export const prefix = "effect-ai:"

/**
 * Merges metadata the way effect/ai does across a part's start, deltas and end: per provider
 * key, objects are merged shallowly and other values replaced.
 *
 * @since 0.1.0
 * @category utils
 */
export const merge = (
  left: Response.ProviderMetadata,
  right: Response.ProviderMetadata
): Response.ProviderMetadata => {
  const keys = Object.keys(right)
  if (keys.length === 0) return left
  const result: Record<string, Response.ProviderMetadata[string]> = { ...left }
  for (const key of keys) {
    const previous = result[key]
    const next = right[key]!
    result[key] = Predicate.isObject(previous) && Predicate.isObject(next) && !Array.isArray(previous) &&
        !Array.isArray(next)
      ? { ...(previous as Record<string, Schema.Json>), ...(next as Record<string, Schema.Json>) }
      : next
  }
  return result
}

/**
 * The signature for a reasoning part's merged metadata; `undefined` when there is none.
 *
 * @since 0.1.0
 * @category conversions
 */
export const toSignature = (metadata: Response.ProviderMetadata): string | undefined =>
  Object.keys(metadata).length === 0 ? undefined : prefix + JSON.stringify(metadata)

/**
 * The prompt part options a signature restores; `undefined` for a signature this bridge did
 * not write (or that is damaged).
 *
 * @since 0.1.0
 * @category conversions
 */
export const fromSignature = (signature: string | undefined): Prompt.ProviderOptions | undefined => {
  if (signature === undefined || !signature.startsWith(prefix)) return undefined
  try {
    const parsed: unknown = JSON.parse(signature.slice(prefix.length))
    return Predicate.isObject(parsed) && !Array.isArray(parsed) ? parsed as Prompt.ProviderOptions : undefined
  } catch {
    return undefined
  }
}
