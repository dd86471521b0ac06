/**
 * The system prompt of dsh: ordered sections and tool schemas assembled once per step, with
 * around-middleware over the assembly.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Prompt from "./SystemPrompt.ts"
/** @since 0.1.0 */
export { PromptSectionError, SystemPrompt } from "./SystemPrompt.ts"
/** @since 0.1.0 */
export type { Assembly, AssemblyContext, AssemblyInput, AssemblyMiddleware, Section } from "./SystemPrompt.ts"
