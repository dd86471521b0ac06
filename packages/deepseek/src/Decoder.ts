/**
 * Decoding DeepSeek's stream: `@dsh/openai`'s decoder with the `deepseek` profile's quirks
 * (reasoning under `reasoning_content`, cache hits from `prompt_cache_hit_tokens`, a strict end
 * of stream: `[DONE]` after a `finish_reason`, or `LLM_PROTOCOL`) and `"DeepSeek"` naming the
 * server in its messages. See `@dsh/openai`'s `Decoder` for what it does.
 *
 * @since 0.1.0
 */
import type { LlmError, StreamChunk } from "@dsh/llm"
import { Decoder, Profile, Profiles } from "@dsh/openai"
import type * as Stream from "effect/Stream"

/**
 * A decoder for one response. Not shared between fibers.
 *
 * @since 0.1.0
 * @category models
 */
export type Decoder = Decoder.Decoder

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export type Options = Decoder.Options

const quirks = Profile.resolveQuirks(Profiles.deepseek.quirks)

const withDefaults = (options: Options): Options => ({ provider: "DeepSeek", quirks, ...options })

/**
 * Creates a decoder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Decoder => Decoder.make(withDefaults(options))

/**
 * Decodes a byte stream into chunks. The output ends at `[DONE]` (the input is not pulled
 * further, so its resources are released); an input that ends without it fails with
 * `LlmProtocolError`. The input's own failures pass through.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = <E, R>(
  bytes: Stream.Stream<Uint8Array, E, R>,
  options: Options = {}
): Stream.Stream<StreamChunk.StreamChunk, E | LlmError.LlmError, R> => Decoder.decode(bytes, withDefaults(options))
