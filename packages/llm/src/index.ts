/**
 * The vocabulary of dsh: content blocks, messages, the structure-sharing message history, the
 * stream-chunk protocol and its block assembler, token usage, finish reasons, model requests,
 * branded ids, the `HarnessError` taxonomy, the one around-middleware shape every seam uses, and
 * the Server-Sent Events parser the model adapters decode their streams with.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as AdapterSettings from "./AdapterSettings.ts"
/** @since 0.1.0 */
export * as Assembler from "./Assembler.ts"
export * as ByteDecoder from "./ByteDecoder.ts"
/** @since 0.1.0 */
export * as Content from "./Content.ts"
/** @since 0.1.0 */
export * as ErrorCode from "./ErrorCode.ts"
/** @since 0.1.0 */
export * as FinishReason from "./FinishReason.ts"
/** @since 0.1.0 */
export * as HarnessError from "./HarnessError.ts"
/** @since 0.1.0 */
export * as History from "./History.ts"
/** @since 0.1.0 */
export * as Ids from "./Ids.ts"
/** @since 0.1.0 */
export * as LlmError from "./LlmError.ts"
/** @since 0.1.0 */
export * as Message from "./Message.ts"
/** @since 0.1.0 */
export * as Middleware from "./Middleware.ts"
/** @since 0.1.0 */
export * as ModelInfo from "./ModelInfo.ts"
/** @since 0.1.0 */
export * as ModelRequest from "./ModelRequest.ts"
/** @since 0.1.0 */
export * as ScopedList from "./ScopedList.ts"
/** @since 0.1.0 */
export * as Sse from "./Sse.ts"
/** @since 0.1.0 */
export * as StreamChunk from "./StreamChunk.ts"
/** @since 0.1.0 */
export * as SystemCode from "./SystemCode.ts"
/** @since 0.1.0 */
export * as Usage from "./Usage.ts"
