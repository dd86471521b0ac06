/**
 * The `effect/ai` bridge's modules (`dsh/effect-ai`).
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * from "@dsh/effect-ai"
