/**
 * The agent layer of dsh: the `Agent` handle and `Agents` factory service (implemented by
 * `@dsh/loop`), and the agent seams.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Agent from "./Agent.ts"
/** @since 0.1.0 */
export { AgentDisposedError, Agents, InvalidInputError } from "./Agent.ts"
/** @since 0.1.0 */
export * as Hooks from "./AgentHooks.ts"
/** @since 0.1.0 */
export { AgentHooks } from "./AgentHooks.ts"
/** @since 0.1.0 */
export * as TurnResult from "./TurnResult.ts"
/** @since 0.1.0 */
export { InvalidOutputError, TurnAbortedError, TurnDefectError, TurnLimitError } from "./TurnResult.ts"
