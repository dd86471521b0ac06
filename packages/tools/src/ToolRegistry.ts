/**
 * The tool registry: the tools a program offers the model, their wire schemas, and the one
 * place tool calls are executed.
 *
 * - **Registration is scoped**: `register` checks the definition (`INVALID_TOOL`), refuses a
 *   taken name (`DUPLICATE_TOOL`) and a registering scope that is closed already
 *   (`INVALID_TOOL`, reason `"scope"`), and adds the tool until the registering scope closes. The
 *   tool's requirements are taken from the registering context, so a tool that needs a service
 *   cannot be registered where that service is missing (it does not compile).
 * - **`schemas`** lists the wire schemas in registration order, for prompt assembly, plain or
 *   strict.
 * - **`execute(call)` never fails and never dies.** It runs the call through the execution
 *   middleware, then looks the tool up, decodes the arguments and runs the body. Whatever goes
 *   wrong becomes an `isError` result with readable text and `error: {tag, code}`:
 *
 * | what happened | code |
 * |---|---|
 * | no tool has the call's name | `UNKNOWN_TOOL` (the text names the registered tools) |
 * | the arguments are not JSON, nest too deeply, or do not decode | `INVALID_ARGS` |
 * | the body failed with a typed error | that error's own code and message |
 * | the body failed with anything else, or a code not in the catalog | `TOOL_FAILED` (its message) |
 * | the body threw or died | `TOOL_FAILED` (the defect's message, no stack trace) |
 * | the body returned neither text nor valid content blocks (custom data nested too deeply) | `TOOL_FAILED` |
 * | the body ran longer than the tool's timeout | `TOOL_TIMEOUT` |
 * | the body was interrupted from inside | `ABORTED` |
 * | a middleware vetoed the call | `TOOL_DENIED` (by convention, see `ToolMiddleware.deny`) |
 * | a middleware threw, died, failed, or answered badly (see below) | `MIDDLEWARE` (naming it) |
 *
 *   Failures are described with `HarnessError.describe` (a plain object's `message`, never
 *   `[object Object]`). A result's `error.code` is always a code of the catalog: a failure
 *   claiming another code is `TOOL_FAILED` (the text names the code it claimed), and a
 *   middleware answering with another code, or with something that is not a tool result,
 *   is `MIDDLEWARE`. The result always carries the call's own id. Each call runs in a scope of its own, so
 *   what a body acquires is released when the call ends, however it ends. Interrupting
 *   `execute` itself (an abort of the step) interrupts the call; the loop answers such calls
 *   with `ToolResult.aborted`.
 * - Every execution runs in a `Tool.execute` span with the attributes `dsh.tool`,
 *   `dsh.tool.call_id` and, for a failed call, `dsh.tool.error_code`.
 *
 * @since 0.1.0
 */
import { Content, ErrorCode, HarnessError, Middleware, type ModelRequest, type ScopedList } from "@dsh/llm"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { beyondDepth } from "./internal/json.ts"
import { describeDefect, isCatalogError, preview, shownName, suggest, truncate } from "./internal/text.ts"
import * as Tool from "./Tool.ts"
import * as ToolArgs from "./ToolArgs.ts"
import {
  AbortedError,
  DuplicateToolError,
  InvalidToolError,
  type RegistrationError,
  ToolFailedError,
  ToolTimeoutError,
  UnknownToolError
} from "./ToolError.ts"
import type { ToolMiddleware } from "./ToolMiddleware.ts"
import * as ToolResult from "./ToolResult.ts"

/**
 * @since 0.1.0
 * @category services
 */
export class ToolRegistry extends Context.Service<ToolRegistry, {
  /**
   * Registers a tool until the current scope closes. Fails with `InvalidToolError` for a bad
   * name or non-object parameters, or when the current scope is closed already (reason
   * `"scope"`), and with `DuplicateToolError` for a taken name. The tool's
   * requirements `R` are captured here and provided to every call of it, except `Scope`:
   * each call runs in a scope of its own, closed when the call ends.
   */
  readonly register: <A, E extends HarnessError.HarnessError, R>(
    tool: Tool.Tool<A, E, R>
  ) => Effect.Effect<void, RegistrationError, Scope.Scope | R>
  /** The wire schemas of the registered tools, in registration order. */
  readonly schemas: (options?: Tool.WireSchemaOptions) => Effect.Effect<ReadonlyArray<ModelRequest.ToolSchema>>
  /** The registered tool of a name. */
  readonly lookup: (name: string) => Effect.Effect<Option.Option<Tool.Any>>
  /** The registered names, in registration order. */
  readonly names: Effect.Effect<ReadonlyArray<string>>
  /** Executes a call. Never fails, never dies; see the module documentation. */
  readonly execute: (call: Content.ToolCallBlock) => Effect.Effect<Content.ToolResultBlock>
  /**
   * Registers an execution middleware until the current scope closes. Fails with
   * `ScopeClosedError`, registering nothing, when the current scope is closed already.
   */
  readonly use: (middleware: ToolMiddleware) => Effect.Effect<void, ScopedList.ScopeClosedError, Scope.Scope>
  /** The registered execution middleware, outermost first. */
  readonly middleware: Effect.Effect<ReadonlyArray<ToolMiddleware>>
}>()("@dsh/tools/ToolRegistry") {
  /**
   * An empty registry.
   *
   * @since 0.1.0
   */
  static readonly layer: Layer.Layer<ToolRegistry> = Layer.effect(ToolRegistry, Effect.sync(() => makeUnsafe()))

  /**
   * Makes an empty registry outside of a Layer (a benchmark, a one-off script).
   *
   * @since 0.1.0
   */
  static readonly make: Effect.Effect<ToolRegistry["Service"]> = Effect.sync(() => makeUnsafe())
}

interface Entry {
  readonly tool: Tool.Any
  readonly schema: ModelRequest.ToolSchema
  readonly strictSchema: ModelRequest.ToolSchema
  readonly decode: ToolArgs.Decoder<unknown>
  /** The registering context: it holds the services the tool requires (whatever they are). */
  readonly context: Context.Context<any>
}

const makeUnsafe = (): ToolRegistry["Service"] => {
  // A Map keeps insertion order: schemas are listed in registration order.
  const tools = new Map<string, Entry>()
  const chain = Middleware.make<Content.ToolCallBlock, Effect.Effect<Content.ToolResultBlock>>({
    suspend: Effect.suspend,
    seam: "tool execution"
  })
  // `chain.current()` holds the containing wrappers; callers get back what they registered.
  const originals = new WeakMap<ToolMiddleware, ToolMiddleware>()

  const register = <A, E extends HarnessError.HarnessError, R>(
    tool: Tool.Tool<A, E, R>
  ): Effect.Effect<void, RegistrationError, Scope.Scope | R> =>
    Effect.gen(function*() {
      const schema = yield* Effect.fromResult(Tool.wireSchema(tool))
      const strictSchema = yield* Effect.fromResult(Tool.wireSchema(tool, { strict: true }))
      const context = yield* Effect.context<R>()
      const scope = yield* Scope.Scope
      const entry: Entry = {
        tool,
        schema,
        strictSchema,
        decode: ToolArgs.decoder(tool),
        context
      }
      yield* Effect.acquireRelease(
        Effect.suspend((): Effect.Effect<void, RegistrationError> => {
          // A closed scope runs the release at once: the call would succeed and register
          // nothing. Checked here, next to the insertion, where no other fiber runs between.
          if (scope.state._tag === "Closed") return Effect.fail(scopeClosed(tool.name))
          if (tools.has(tool.name)) {
            return Effect.fail(
              new DuplicateToolError({
                tool: tool.name,
                message: `Tool "${tool.name}" is already registered; tool names must be unique`
              })
            )
          }
          tools.set(tool.name, entry)
          return Effect.void
        }),
        () =>
          Effect.sync(() => {
            // Only our own entry: the name may have been freed and taken again meanwhile.
            if (tools.get(tool.name) === entry) tools.delete(tool.name)
          })
      )
    })

  const terminal = (call: Content.ToolCallBlock): Effect.Effect<Content.ToolResultBlock> => {
    // Nothing here should throw; if something does, it must not escape as a defect of `next`,
    // which the innermost middleware's containment would blame on that middleware.
    try {
      const entry = tools.get(call.name)
      if (entry === undefined) return Effect.succeed(ToolResult.failure(call, unknownTool(call.name, [...tools.keys()])))
      const decoded = entry.decode(call.arguments)
      if (Result.isFailure(decoded)) return Effect.succeed(ToolResult.failure(call, decoded.failure))
      return run(entry, call, decoded.success)
    } catch (defect) {
      return Effect.succeed(ToolResult.failure(call, bodyFailure(call.name, Cause.die(defect))))
    }
  }

  const use = (middleware: ToolMiddleware) => {
    const contained = contain(middleware)
    originals.set(contained, middleware)
    return chain.register(contained)
  }

  const execute = (call: Content.ToolCallBlock): Effect.Effect<Content.ToolResultBlock> => {
    const malformed = callProblem(call)
    if (malformed !== undefined) return Effect.succeed(malformedCall(call, malformed))
    const settle = (result: Content.ToolResultBlock): Effect.Effect<Content.ToolResultBlock> => {
      const answered = result.toolCallId === call.id ? result : { ...result, toolCallId: call.id }
      return answered.error === undefined
        ? Effect.succeed(answered)
        : Effect.as(Effect.annotateCurrentSpan("dsh.tool.error_code", answered.error.code), answered)
    }
    // One continuation for both outcomes (a catch and then a map would be two per call).
    return Effect.matchCauseEffect(chain.apply(call, terminal), {
      // The last line of defence: everything inside is contained already, so this only turns
      // a bug of ours into an answer instead of a dead agent.
      onFailure: (cause) => settle(ToolResult.failure(call, bodyFailure(call.name, cause))),
      onSuccess: settle
    }).pipe(
      Effect.withSpan(
        "Tool.execute",
        { attributes: { "dsh.tool": shownName(call.name), "dsh.tool.call_id": call.id } },
        // The call site would always be this line: not worth an Error per call.
        { captureStackTrace: false }
      )
    )
  }

  return ToolRegistry.of({
    register,
    schemas: (options) =>
      Effect.sync(() => Array.from(tools.values(), (e) => (options?.strict === true ? e.strictSchema : e.schema))),
    lookup: (name) => Effect.sync(() => Option.map(Option.fromUndefinedOr(tools.get(name)), (e) => e.tool)),
    names: Effect.sync(() => [...tools.keys()]),
    execute,
    use,
    middleware: Effect.sync(() => chain.current().map((m) => originals.get(m) ?? m))
  })
}

/** What makes a value no tool call a registry can run (past the types: JavaScript, a cast), or `undefined`. */
const callProblem = (call: unknown): string | undefined => {
  if (!Predicate.isObject(call) || Array.isArray(call)) return `it must be a tool-call block, got ${HarnessError.describe(call)}`
  if (typeof call["id"] !== "string") return `its id must be text, got ${HarnessError.describe(call["id"])}`
  if (typeof call["name"] !== "string") return `its name must be text, got ${HarnessError.describe(call["name"])}`
  if (typeof call["arguments"] !== "string") {
    return `its arguments must be JSON text, got ${HarnessError.describe(call["arguments"])}`
  }
  return undefined
}

/** The answer to a call that is no tool call: `TOOL_FAILED`, under the call's id when it has one. */
const malformedCall = (call: unknown, problem: string): Content.ToolResultBlock => {
  const id = Predicate.hasProperty(call, "id") && typeof call.id === "string" ? call.id : ""
  const name = Predicate.hasProperty(call, "name") && typeof call.name === "string" ? call.name : "(unnamed)"
  return ToolResult.failure(
    { type: "tool-call", id: id as Content.ToolCallBlock["id"], name, arguments: "" },
    new ToolFailedError({ tool: name, message: `The call was not run: ${problem}` })
  )
}

const scopeClosed = (tool: string): InvalidToolError =>
  new InvalidToolError({
    tool,
    reason: "scope",
    message: `Tool "${tool}" cannot be registered: the registering scope is closed, so it would be unregistered at once ` +
      "(register it in a scope that is still open)"
  })

const run = (entry: Entry, call: Content.ToolCallBlock, args: unknown): Effect.Effect<Content.ToolResultBlock> => {
  const name = entry.tool.name
  // Suspended: a body that throws before returning its Effect is a defect like any other.
  // The caller's context wins over the registering one, so its clock, tracer and current span
  // apply; the registering context supplies the services the tool requires.
  // Each call gets its own Scope: what a body acquires is released when the call ends, also
  // on a timeout or an interruption, never at the end of the registration.
  const body: Effect.Effect<Tool.Output, unknown> = Effect.scoped(Effect.suspend(() => effectOf(name, entry.tool.execute(args)))).pipe(
    Effect.updateContext((context: Context.Context<never>) => Context.merge(entry.context, context))
  )
  const onFailure = (cause: Cause.Cause<unknown>) => ToolResult.failure(call, bodyFailure(name, cause))
  const timeout = entry.tool.timeout
  if (Option.isNone(timeout)) {
    return Effect.matchCause(body, { onSuccess: (output) => answer(call, output), onFailure })
  }
  return Effect.matchCause(withTimeout(body, timeout.value), {
    onSuccess: (outcome) =>
      outcome._tag === "Done"
        ? answer(call, outcome.output)
        : ToolResult.failure(
          call,
          new ToolTimeoutError({
            tool: name,
            timeoutMillis: Duration.toMillis(timeout.value),
            message: outcome._tag === "Stopped"
              ? `Tool "${name}" timed out after ${Duration.format(timeout.value)} and was stopped`
              : `Tool "${name}" timed out after ${Duration.format(timeout.value)} and did not stop within ${
                Duration.format(outcome.grace)
              } of being interrupted; it was left to finish on its own, and its result will be dropped`
          })
        ),
    onFailure
  })
}

type Timed =
  | { readonly _tag: "Done"; readonly output: Tool.Output }
  | { readonly _tag: "Stopped" }
  | { readonly _tag: "Detached"; readonly grace: Duration.Duration }

/**
 * How long a timed-out body may take to stop once interrupted (its finalizers: a process
 * group killed, a connection closed) before the call answers without it: as long again as the
 * timeout, at most 5 seconds.
 */
const stopGrace = (timeout: Duration.Duration): Duration.Duration => Duration.min(timeout, Duration.seconds(5))

/**
 * The body, raced against its timeout. A body that ends in time is `Done`; one that outlives
 * the timeout is interrupted and given {@link stopGrace} to stop (`Stopped`); one that still
 * runs then (an uninterruptible region, a finalizer that hangs) is left running detached
 * (`Detached`), so that a timeout always answers the call. Interrupting the call (an abort)
 * interrupts the body and waits for it, as without a timeout.
 */
const withTimeout = (body: Effect.Effect<Tool.Output, unknown>, timeout: Duration.Duration): Effect.Effect<Timed, unknown> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkDetach(body), (fiber) =>
      restore(Effect.timeoutOption(Fiber.await(fiber), timeout)).pipe(
        Effect.onInterrupt(() => Fiber.interrupt(fiber)),
        Effect.flatMap((exit): Effect.Effect<Timed, unknown> => {
          if (Option.isSome(exit)) return Effect.map(exit.value, (output) => ({ _tag: "Done", output }))
          const grace = stopGrace(timeout)
          return Effect.map(
            restore(Effect.timeoutOption(Fiber.interrupt(fiber), grace)),
            (stopped): Timed => Option.isSome(stopped) ? { _tag: "Stopped" } : { _tag: "Detached", grace }
          )
        })
      ))
  )

// A body written past the types (JavaScript, a cast) may return a value, not an Effect: the
// fiber would die on it and take the turn with it, so it is the tool failing instead.
const effectOf = (name: string, returned: unknown): Effect.Effect<Tool.Output, unknown> =>
  Effect.isEffect(returned)
    ? returned as Effect.Effect<Tool.Output, unknown>
    : Effect.fail(new ToolFailedError({
      tool: name,
      message: `Tool "${name}" failed: its execute returned ${returnedWhat(returned)}, not an Effect (${
        isThenable(returned) ? "wrap a Promise in Effect.tryPromise, or write execute with Effect.gen" : "wrap a value in Effect.succeed"
      })`
    }))

// An `async` execute returns a Promise, which `describe` renders as the empty object it looks like.
const isThenable = (u: unknown): boolean => {
  try {
    return Predicate.hasProperty(u, "then") && typeof u.then === "function"
  } catch {
    return false
  }
}

const returnedWhat = (returned: unknown): string => (isThenable(returned) ? "a Promise" : HarnessError.describe(returned))

// decoded on the Type side: a block comes back with its declared keys only, so a key of its own
// (a BigInt, a cycle) cannot reach the log, where `JSON.stringify` of the history would throw
const decodeBlocks = Schema.decodeUnknownResult(Schema.Array(Schema.toType(Content.ToolResultContent)))

// Types rule out anything but text or content blocks, but raw tools wrap code we do not own
// (an MCP server), and a malformed block would reach the session log and the provider: the
// output as it can be sent on, or why it cannot.
const sendable = (output: unknown): Result.Result<Tool.Output, string> => {
  if (typeof output === "string") return Result.succeed(output)
  const decoded = Array.isArray(output) ? decodeBlocks(output) : undefined
  if (decoded === undefined || Result.isFailure(decoded)) return Result.fail("it returned neither text nor content blocks")
  // `Schema.Json` takes any depth, but a request carrying the result is serialized with
  // `JSON.stringify`, which overflows past a few thousand levels: bounded like the arguments.
  const deep = decoded.success.some((block: Content.ToolResultContent) =>
    block.type === "custom" && beyondDepth(block.data, ToolArgs.maxDepth) !== undefined
  )
  return deep ? Result.fail(`it returned a custom block whose data nests deeper than ${ToolArgs.maxDepth} levels`) : Result.succeed(decoded.success)
}

const answer = (call: Content.ToolCallBlock, output: Tool.Output): Content.ToolResultBlock => {
  const checked = sendable(output)
  return Result.isSuccess(checked)
    ? ToolResult.success(call, checked.success)
    : ToolResult.failure(call, new ToolFailedError({ tool: call.name, message: `Tool "${call.name}" failed: ${checked.failure}` }))
}

// Total (every read of the failure is guarded): it runs in the last line of defence too, where
// a throw would kill `execute`.
const bodyFailure = (tool: string, cause: Cause.Cause<unknown>): HarnessError.HarnessError => {
  const failure = cause.reasons.find(Cause.isFailReason)
  if (failure !== undefined) {
    // Only a catalog code may reach the result: code matches on `error.code`.
    return isCatalogError(failure.error) ? failure.error : toolFailed(tool, failure.error)
  }
  const die = cause.reasons.find(Cause.isDieReason)
  if (die !== undefined) return toolFailed(tool, die.defect)
  return new AbortedError({ tool, message: `Tool "${shownName(tool)}" was interrupted before it finished` })
}

const toolFailed = (tool: string, defect: unknown): ToolFailedError =>
  new ToolFailedError({ tool, message: `Tool "${shownName(tool)}" failed: ${describeDefect(defect)}`, cause: defect })

const unknownTool = (tool: string, available: ReadonlyArray<string>): UnknownToolError => {
  const meant = suggest(tool, available)
  const shown = shownName(tool)
  const message = available.length === 0
    ? `Unknown tool "${shown}": no tools are available`
    : `Unknown tool "${shown}"${meant === undefined ? "." : `, did you mean "${meant}"?`} Available tools: ${
      available.join(", ")
    }`
  return new UnknownToolError({ tool, available, message })
}

// Each middleware is contained on its own. The `next` it receives is the contained rest of the
// chain, which never fails or dies and answers only with tool results carrying catalog codes,
// so whatever is wrong with a middleware's output is its own doing and is blamed on it by name.
// past the types a registration may be no middleware (`null`): named as what it is, it fails
// each call it wraps with MIDDLEWARE rather than throw at registration with no code
const contain = (middleware: ToolMiddleware): ToolMiddleware => {
  const name = Middleware.nameOf(middleware)
  const order: unknown = typeof middleware === "object" && middleware !== null ? middleware.order : undefined
  return {
    name,
    ...(typeof order === "number" ? { order } : {}),
    around: (call, next) =>
      Effect.suspend(() => {
        const answer: unknown = middleware.around(call, next)
        // an Effect's own combinators would die on anything else, past every catch
        return Effect.isEffect(answer)
          ? answer as Effect.Effect<Content.ToolResultBlock>
          : Effect.succeed(ToolResult.failure(call, misanswered(name, call, `something that is not an Effect: ${preview(answer)}`)))
      }).pipe(
        Effect.map((result) => checkedAnswer(name, call, result)),
        Effect.catchCause((cause) => Effect.succeed(ToolResult.failure(call, middlewareFailure(name, call, cause))))
      )
  }
}

// The shape, not every block: `Schema.is` would cost each middleware about as much as parsing
// the arguments, and the blocks a middleware passes on from `next` are checked already.
const isResult = (u: unknown): u is Content.ToolResultBlock =>
  Predicate.isObject(u) && u["type"] === "tool-result" && typeof u["toolCallId"] === "string" &&
  Array.isArray(u["content"]) && typeof u["isError"] === "boolean" &&
  (u["error"] === undefined ||
    (Predicate.isObject(u["error"]) && typeof u["error"]["tag"] === "string" && typeof u["error"]["code"] === "string"))

// What a middleware answers with goes on to the middleware outside it and to the loop, which
// read it as a tool result and match on its code.
const checkedAnswer = (
  middleware: string,
  call: Content.ToolCallBlock,
  result: Content.ToolResultBlock
): Content.ToolResultBlock => {
  if (!isResult(result)) {
    return ToolResult.failure(
      call,
      misanswered(middleware, call, `something that is not a tool result: ${preview(result)}`)
    )
  }
  if (result.error === undefined || ErrorCode.isErrorCode(result.error.code)) return result
  return ToolResult.failure(
    call,
    misanswered(
      middleware,
      call,
      `the code ${truncate(result.error.code, 60)}, which is not a dsh error code: ${truncate(ToolResult.textOf(result), 500)}`
    )
  )
}

const misanswered = (middleware: string, call: Content.ToolCallBlock, what: string): Middleware.MiddlewareError =>
  new Middleware.MiddlewareError({
    middleware,
    message: `Middleware "${middleware}" answered a call to tool "${shownName(call.name)}" with ${what}`
  })

const middlewareFailure = (
  middleware: string,
  call: Content.ToolCallBlock,
  cause: Cause.Cause<unknown>
): HarnessError.HarnessError => {
  if (Cause.hasInterruptsOnly(cause)) {
    return new AbortedError({
      tool: call.name,
      message: `Tool "${shownName(call.name)}" was interrupted by middleware "${middleware}" before it finished`
    })
  }
  const reason = cause.reasons.find((r) => Cause.isFailReason(r) || Cause.isDieReason(r))
  const defect = reason === undefined ? undefined : Cause.isFailReason(reason) ? reason.error : reason.defect
  return new Middleware.MiddlewareError({
    middleware,
    message: `Middleware "${middleware}" failed while handling a call to tool "${
      shownName(call.name)
    }": ${describeDefect(defect)}`,
    cause: defect
  })
}
