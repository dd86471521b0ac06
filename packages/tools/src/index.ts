/**
 * Tools for dsh: Schema-typed tools as Effects, the JSON Schema the model sees generated from
 * the same Schema, argument decoding at the model boundary with every violation reported, the
 * tool registry whose `execute` turns every failure into a tool result, and the execution
 * middleware chain around it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Tool from "./Tool.ts"
/** @since 0.1.0 */
export * as ToolArgs from "./ToolArgs.ts"
/** @since 0.1.0 */
export * as ToolContext from "./ToolContext.ts"
/** @since 0.1.0 */
export * as ToolErrors from "./ToolError.ts"
/** @since 0.1.0 */
export * as ToolMiddleware from "./ToolMiddleware.ts"
/** @since 0.1.0 */
export { ToolRegistry } from "./ToolRegistry.ts"
/** @since 0.1.0 */
export * as ToolResult from "./ToolResult.ts"
/** @since 0.1.0 */
export * as Tools from "./Tools.ts"
