/**
 * Execution middleware: the one seam for sandboxing, permissions, hooks and plan mode. It is
 * `@dsh/llm`'s around-middleware over tool calls, `(call, next) => Effect<ToolResultBlock>`,
 * registered with `ToolRegistry.use` (scoped, ordered by `order`, lower runs further outside).
 *
 * A middleware may
 *
 * - wrap `next` (time it, log it, transform its result),
 * - rewrite the call before passing it on, notably its raw `arguments` string, which is
 *   decoded only after the whole chain has run ({@link mapArguments}),
 * - answer without calling `next`: a veto ({@link deny}, {@link denyWhen}) or a cached answer.
 *
 * A middleware that throws, dies or fails is contained like a failing tool: the call is
 * answered with an `isError` result whose code is `MIDDLEWARE` (a `MiddlewareError` naming
 * the middleware), so retry and sandbox layers can tell a broken middleware from a broken
 * tool. So is a middleware that answers with something that is not a tool result, or with a
 * result whose `error.code` is not in the catalog. Whatever the chain answers carries the
 * original call's id.
 *
 * @since 0.1.0
 */
import type { Content, Middleware } from "@dsh/llm"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import { preview } from "./internal/text.ts"
import * as ToolArgs from "./ToolArgs.ts"
import * as ToolResult from "./ToolResult.ts"

/**
 * A middleware around tool execution.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolMiddleware = Middleware.Middleware<Content.ToolCallBlock, Effect.Effect<Content.ToolResultBlock>>

/**
 * The rest of the chain, as a middleware sees it.
 *
 * @since 0.1.0
 * @category models
 */
export type Next = (call: Content.ToolCallBlock) => Effect.Effect<Content.ToolResultBlock>

/**
 * Answers a call with a `TOOL_DENIED` result, for a middleware that vetoes it.
 *
 * @example
 * ```ts
 * import { ToolMiddleware } from "@dsh/tools"
 *
 * const readOnly: ToolMiddleware.ToolMiddleware = {
 *   name: "read-only",
 *   around: (call, next) =>
 *     call.name === "write_file" ? ToolMiddleware.deny(call, "the session is read-only") : next(call)
 * }
 * ```
 *
 * @since 0.1.0
 * @category vetoes
 */
export const deny = (call: Content.ToolCallBlock, reason: string): Effect.Effect<Content.ToolResultBlock> =>
  Effect.succeed(ToolResult.denied(call, reason))

/**
 * A middleware that denies the calls for which `reason` returns a reason, and passes the
 * others on.
 *
 * @since 0.1.0
 * @category vetoes
 */
export const denyWhen = (
  name: string,
  reason: (call: Content.ToolCallBlock) => string | undefined,
  options?: { readonly order?: number | undefined }
): ToolMiddleware => ({
  name,
  ...(options?.order === undefined ? {} : { order: options.order }),
  around: (call, next) => {
    const why = reason(call)
    return why === undefined ? next(call) : deny(call, why)
  }
})

/**
 * A middleware that rewrites the arguments of the calls it sees before they are decoded. `f`
 * receives the parsed arguments (`{}` for an empty string) and returns new ones. Arguments
 * that are not JSON, or nest deeper than `ToolArgs.maxDepth`, are passed on unchanged, so
 * decoding reports them to the model (`INVALID_ARGS`) rather than the rewrite failing on them.
 * A rewrite that returns something `JSON.stringify` cannot write (`undefined`, a cycle) is
 * this middleware's failure (`MIDDLEWARE`).
 *
 * @example
 * ```ts
 * import { ToolMiddleware } from "@dsh/tools"
 *
 * // Run every bash command in the workspace unless the model chose a directory.
 * const defaultCwd = ToolMiddleware.mapArguments("default-cwd", (args, call) =>
 *   call.name === "bash" && typeof args === "object" && args !== null && !Array.isArray(args) && !("cwd" in args)
 *     ? { ...args, cwd: "/workspace" }
 *     : args
 * )
 * ```
 *
 * @since 0.1.0
 * @category rewriting
 */
export const mapArguments = (
  name: string,
  f: (args: Schema.Json, call: Content.ToolCallBlock) => Schema.Json,
  options?: { readonly order?: number | undefined }
): ToolMiddleware => ({
  name,
  ...(options?.order === undefined ? {} : { order: options.order }),
  around: (call, next) => {
    // The decoder's own parse, so what is rewritten is exactly what would decode.
    const parsed = ToolArgs.parse(call.name, call.arguments)
    if (Result.isFailure(parsed)) return next(call)
    const rewritten = f(parsed.success, call)
    const text: unknown = JSON.stringify(rewritten)
    if (typeof text !== "string") {
      return Effect.die(new Error(`mapArguments: the rewrite returned ${preview(rewritten)}, which is not JSON`))
    }
    return next({ ...call, arguments: text })
  }
})
