/**
 * The Anthropic model adapter for dsh: the Messages API over `effect/http`, streamed as
 * Server-Sent Events and translated into dsh's stream-chunk protocol, with the Claude models it
 * serves described (context windows, prices). The modules it is built from (serialization,
 * decoding, translation, failures, the wire shapes, the content blocks of redacted thinking and
 * server tools) are exported too; the fake server and the wire fixtures its tests use are in
 * `@dsh/anthropic/testing`.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Anthropic from "./Anthropic.ts"
/** @since 0.1.0 */
export * as AnthropicError from "./AnthropicError.ts"
/** @since 0.1.0 */
export * as Blocks from "./Blocks.ts"
/** @since 0.1.0 */
export * as Decoder from "./Decoder.ts"
/** @since 0.1.0 */
export * as Failure from "./Failure.ts"
/** @since 0.1.0 */
export * as Models from "./Models.ts"
/** @since 0.1.0 */
export * as RequestBody from "./RequestBody.ts"
/** @since 0.1.0 */
export * as Translate from "./Translate.ts"
/** @since 0.1.0 */
export * as Wire from "./Wire.ts"
