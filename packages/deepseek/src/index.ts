/**
 * The DeepSeek model adapter for dsh: DeepSeek's chat completions API over `effect/http`,
 * streamed as Server-Sent Events and translated into dsh's stream-chunk protocol. The modules
 * it is built from (serialization, decoding, translation, failures) are exported too, for
 * adapters of other OpenAI-compatible APIs; the fake server and the wire fixtures its tests use
 * are in `@dsh/deepseek/testing`.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as DeepSeek from "./DeepSeek.ts"
/** @since 0.1.0 */
export * as DeepSeekError from "./DeepSeekError.ts"
/** @since 0.1.0 */
export * as Decoder from "./Decoder.ts"
/** @since 0.1.0 */
export * as Failure from "./Failure.ts"
/** @since 0.1.0 */
export * as RequestBody from "./RequestBody.ts"
/** @since 0.1.0 */
export * as Translate from "./Translate.ts"
/** @since 0.1.0 */
export * as Wire from "./Wire.ts"
