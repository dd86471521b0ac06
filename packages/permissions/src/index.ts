/**
 * dsh permission policy: allow, deny and ask rules over tool calls as an execution
 * middleware, every decision logged in the call's session.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as PermissionErrors from "./PermissionError.ts"
/** @since 0.1.0 */
export * as PermissionEvent from "./PermissionEvent.ts"
/** @since 0.1.0 */
export * as PermissionPrompt from "./PermissionPrompt.ts"
/** @since 0.1.0 */
export * as Permissions from "./Permissions.ts"
/** @since 0.1.0 */
export * as Policy from "./Policy.ts"
