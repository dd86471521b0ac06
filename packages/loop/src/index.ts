/**
 * The loop of dsh: the one driver of agents, provided as the implementation of `@dsh/agent`'s
 * `Agents` service. Provide `AgentLoop.layer` at your application's composition root; nothing
 * else imports this package.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as AgentLoop from "./AgentLoop.ts"
/** @since 0.1.0 */
export * as LoopErrors from "./LoopError.ts"
