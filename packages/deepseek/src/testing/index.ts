/**
 * Test kit for DeepSeek and other OpenAI-compatible adapters: `@dsh/openai/testing`'s fake
 * server and synthetic responses, re-exported, and its wire fixtures together with DeepSeek's
 * own (thinking mode's `reasoning_content`, `insufficient_system_resource`).
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export { FakeServer, Synthetic } from "@dsh/openai/testing"
/** @since 0.1.0 */
export * as Fixture from "./Fixture.ts"
