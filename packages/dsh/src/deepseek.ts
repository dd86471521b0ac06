/**
 * The DeepSeek adapter's modules (`dsh/deepseek`): the adapter, its errors, and the wire
 * machinery (decoder, translation, request body) for those who build on it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * from "@dsh/deepseek"
