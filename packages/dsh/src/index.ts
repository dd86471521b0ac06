/**
 * dsh: an Effect-native agent harness, in one package. Every public module of the @dsh
 * packages is re-exported here — the vocabulary (`Content`, `Message`, `HarnessError`, …), the
 * model seam (`Model`, `ScriptedModel`), sessions (`SessionStore`, `JsonlSessions`), tools
 * (`Tool`, `ToolRegistry`), agents (`Agents`, `Agent`, `TurnResult`), the loop (`AgentLoop`),
 * the model adapters (`OpenAiCompat` with its `Profiles`, `DeepSeek`, `Anthropic`), the
 * `effect/ai` bridge (`EffectAiBridge`), the capabilities (`BashTools`, `Files`, `Mcp`,
 * `Permissions`, `Policy`), the invariants and the testing kit (`Testing`, `Replay`) — and
 * `Dsh`, the one-call composition.
 *
 * Subpaths: `dsh/deepseek` and `dsh/deepseek/testing` (the adapter's internals, wire fixtures
 * and fake server), `dsh/effect-ai` (the bridge's internals).
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * from "@dsh/agent"
/** @since 0.1.0 */
export { Anthropic, AnthropicError } from "@dsh/anthropic"
/** @since 0.1.0 */
export * from "@dsh/bash"
/** @since 0.1.0 */
export { DeepSeek, DeepSeekError } from "@dsh/deepseek"
/** @since 0.1.0 */
export { EffectAiBridge } from "@dsh/effect-ai"
/** @since 0.1.0 */
export * from "@dsh/files"
/** @since 0.1.0 */
export * from "@dsh/invariants"
/** @since 0.1.0 */
export * from "@dsh/llm"
/** @since 0.1.0 */
export * from "@dsh/loop"
/** @since 0.1.0 */
export * from "@dsh/mcp"
/** @since 0.1.0 */
export * from "@dsh/model"
/** @since 0.1.0 */
export { OpenAiCompat, OpenAiError, Profile, Profiles } from "@dsh/openai"
/** @since 0.1.0 */
export * from "@dsh/permissions"
/** @since 0.1.0 */
export * from "@dsh/prompt"
/** @since 0.1.0 */
export * from "@dsh/session"
/** @since 0.1.0 */
export * from "@dsh/testing"
/** @since 0.1.0 */
export * from "@dsh/tools"
/** @since 0.1.0 */
export * as Dsh from "./Dsh.ts"
/** @since 0.1.0 */
export { ConfigInvalidError } from "./cli/ConfigInvalidError.ts"
