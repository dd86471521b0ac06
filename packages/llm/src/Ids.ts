/**
 * Branded identifiers for values that cross package boundaries, so a session id cannot be
 * passed where a tool-call id is expected.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * The id of one tool call, assigned by the model (or the adapter) and echoed by its result.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CallId = Schema.String.pipe(Schema.brand("@dsh/CallId"))

/**
 * @since 0.1.0
 * @category models
 */
export type CallId = typeof CallId.Type

/**
 * The id of a session (an agent's whole event log).
 *
 * @since 0.1.0
 * @category schemas
 */
export const SessionId = Schema.String.pipe(Schema.brand("@dsh/SessionId"))

/**
 * @since 0.1.0
 * @category models
 */
export type SessionId = typeof SessionId.Type

/**
 * The id of an agent.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AgentId = Schema.String.pipe(Schema.brand("@dsh/AgentId"))

/**
 * @since 0.1.0
 * @category models
 */
export type AgentId = typeof AgentId.Type

/**
 * Brands a string as a {@link CallId} without validation (every string is a valid id).
 *
 * @since 0.1.0
 * @category constructors
 */
export const callId = (id: string): CallId => id as CallId

/**
 * Brands a string as a {@link SessionId}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const sessionId = (id: string): SessionId => id as SessionId

/**
 * Brands a string as an {@link AgentId}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const agentId = (id: string): AgentId => id as AgentId
