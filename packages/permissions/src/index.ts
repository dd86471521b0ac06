/**
 * dsh permission policy: allow, deny and ask rules over tool calls as an execution middleware, every decision logged
 *
 * @since 0.1.0
 */
export {}
