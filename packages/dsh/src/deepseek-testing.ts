/**
 * The DeepSeek adapter's testing kit (`dsh/deepseek/testing`): wire fixtures, a fake
 * OpenAI-compatible server on 127.0.0.1, synthetic streams.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * from "@dsh/deepseek/testing"
