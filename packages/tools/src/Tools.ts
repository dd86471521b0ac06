/**
 * Layers that register tools and execution middleware into the `ToolRegistry` for their own
 * lifetime. This is how a program, a capability package or a test offers tools:
 *
 * ```ts
 * const program = myAgent.pipe(
 *   Effect.provide(Tools.layer(readFile, search).pipe(Layer.provideMerge(ToolRegistry.layer)))
 * )
 * ```
 *
 * The Layer requires what its tools require (but `Scope`: each call has its own): registering
 * a tool that needs a service where that service is not provided is a compile error, not a
 * failure at the first call.
 *
 * @since 0.1.0
 */
import { ScopedList } from "@dsh/llm"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type * as Tool from "./Tool.ts"
import type { RegistrationError } from "./ToolError.ts"
import type { ToolMiddleware } from "./ToolMiddleware.ts"
import { ToolRegistry } from "./ToolRegistry.ts"

/**
 * A Layer registering tools, in order, for its lifetime. It fails (and registers none of
 * them) when one is invalid or its name is taken.
 *
 * @example
 * ```ts
 * import { Tool, ToolRegistry, Tools } from "@dsh/tools"
 * import { Effect, Layer, Schema } from "effect"
 *
 * const echo = Tool.make("echo", {
 *   description: "Echoes its text",
 *   parameters: Schema.Struct({ text: Schema.String }),
 *   execute: ({ text }) => Effect.succeed(text)
 * })
 * const ToolsLive = Tools.layer(echo).pipe(Layer.provideMerge(ToolRegistry.layer))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <const Tools extends ReadonlyArray<Tool.Any>>(
  ...tools: Tools
): Layer.Layer<never, RegistrationError, ToolRegistry | Exclude<Tool.Requirements<Tools[number]>, Scope.Scope>> =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      for (const tool of tools) yield* registry.register(tool)
    })
  )

/**
 * A Layer registering execution middleware for its lifetime.
 *
 * @since 0.1.0
 * @category layers
 */
export const middleware = (
  ...middleware: ReadonlyArray<ToolMiddleware>
): Layer.Layer<never, never, ToolRegistry> =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      for (const m of middleware) yield* ScopedList.inOpenScope(registry.use(m))
    })
  )
