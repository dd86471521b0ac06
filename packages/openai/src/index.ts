/**
 * The OpenAI-compatible model wire of dsh: one adapter for any server that speaks OpenAI's chat
 * completions (OpenAI, DeepSeek, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, other
 * gateways) over `effect/http` and SSE, the servers' differences as data (`Profile`,
 * `Profiles`), and the modules it is built from — deterministic serialization, decoding, delta
 * translation, failure mapping — for adapters built on it. The fake server and the wire
 * fixtures its tests use are in `@dsh/openai/testing`.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Decoder from "./Decoder.ts"
/** @since 0.1.0 */
export * as Failure from "./Failure.ts"
/** @since 0.1.0 */
export * as OpenAiCompat from "./OpenAiCompat.ts"
/** @since 0.1.0 */
export * as OpenAiError from "./OpenAiError.ts"
/** @since 0.1.0 */
export * as Profile from "./Profile.ts"
/** @since 0.1.0 */
export * as Profiles from "./Profiles.ts"
/** @since 0.1.0 */
export * as RequestBody from "./RequestBody.ts"
/** @since 0.1.0 */
export * as Translate from "./Translate.ts"
/** @since 0.1.0 */
export * as Wire from "./Wire.ts"
