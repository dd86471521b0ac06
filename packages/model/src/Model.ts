/**
 * The model seam: the service everything above calls to talk to a model. `stream` routes a
 * request through the registered middleware to the adapter serving its model; `generate`
 * runs the same stream through the block assembler.
 *
 * @since 0.1.0
 */
import { Assembler, LlmError, Middleware, type ModelRequest, type ScopedList, type StreamChunk } from "@dsh/llm"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { NoModelError } from "./ModelError.ts"
import { ModelRegistry } from "./ModelRegistry.ts"

/**
 * What a model call can fail with: the provider's failures and an unknown model.
 *
 * @since 0.1.0
 * @category models
 */
export type ModelError = LlmError.LlmError | NoModelError

/**
 * The output of a model call.
 *
 * @since 0.1.0
 * @category models
 */
export type ChunkStream = Stream.Stream<StreamChunk.StreamChunk, ModelError>

/**
 * A middleware around model calls: it may rewrite the request, transform or replace the
 * chunk stream, or answer without calling `next`.
 *
 * @since 0.1.0
 * @category models
 */
export type ModelMiddleware = Middleware.Middleware<ModelRequest.ModelRequest, ChunkStream>

/**
 * @since 0.1.0
 * @category services
 */
export class Model extends Context.Service<Model, {
  /** Streams the model's answer to a request. */
  readonly stream: (request: ModelRequest.ModelRequest) => ChunkStream
  /**
   * Streams the model's answer and hands each batch of chunks to `f` as it arrives: what
   * `Stream.runForEachArray(stream(request), f)` does, through the same middleware and in the
   * same `Model.stream` span, opened as an Effect's span (a stream's costs ~25 µs more per
   * call). `f` runs inside the span. The agent loop consumes every model call this way.
   */
  readonly runStream: <E, R>(
    request: ModelRequest.ModelRequest,
    f: (chunks: ReadonlyArray<StreamChunk.StreamChunk>) => Effect.Effect<void, E, R>
  ) => Effect.Effect<void, ModelError | E, R>
  /**
   * Streams and assembles the answer. A stream that ended without `finish` fails with
   * `LlmProtocolError`; a `finish` of kind `error`/`aborted` is returned as it is.
   */
  readonly generate: (request: ModelRequest.ModelRequest) => Effect.Effect<Assembler.Assembled, ModelError>
  /**
   * Registers a middleware around model calls until the current scope closes. Fails with
   * `ScopeClosedError`, registering nothing, when the current scope is closed already.
   */
  readonly use: (middleware: ModelMiddleware) => Effect.Effect<void, ScopedList.ScopeClosedError, Scope.Scope>
  /** The middleware registered now, outermost first. */
  readonly middleware: Effect.Effect<ReadonlyArray<ModelMiddleware>>
}>()("@dsh/model/Model") {
  /**
   * The model service, routing through a {@link ModelRegistry} it requires.
   *
   * @since 0.1.0
   */
  static readonly layerNoDeps: Layer.Layer<Model, never, ModelRegistry> = Layer.effect(
    Model,
    Effect.gen(function*() {
      const registry = yield* ModelRegistry
      const chain = Middleware.makeStream<ModelRequest.ModelRequest, StreamChunk.StreamChunk, ModelError>({
        seam: "model"
      })

      const terminal = (request: ModelRequest.ModelRequest): ChunkStream =>
        Stream.unwrap(Effect.map(registry.resolve(request.model), (adapter) => adapter.stream(request)))

      // No stack trace on the span: capturing one cost ~6 µs per request (a third of opening a
      // model stream), and the call site is the agent loop, whose step span says where it is.
      const stream = (request: ModelRequest.ModelRequest): ChunkStream =>
        chain.apply(request, terminal).pipe(
          Stream.withSpan("Model.stream", { attributes: { "dsh.model": request.model }, captureStackTrace: false })
        )

      const runStream = <E, R>(
        request: ModelRequest.ModelRequest,
        f: (chunks: ReadonlyArray<StreamChunk.StreamChunk>) => Effect.Effect<void, E, R>
      ): Effect.Effect<void, ModelError | E, R> =>
        // With no middleware the adapter's stream is run as it is: wrapping it for the chain
        // (`Stream.unwrap`, `Stream.suspend`) costs a dozen Effect operations per request. A
        // throwing `adapter.stream` is a defect either way.
        (chain.current().length === 0
          ? Effect.flatMap(registry.resolve(request.model), (adapter) => Stream.runForEachArray(adapter.stream(request), f))
          : Stream.runForEachArray(chain.apply(request, terminal), f)).pipe(
            Effect.withSpan("Model.stream", { attributes: { "dsh.model": request.model } }, { captureStackTrace: false })
          )

      const generate = (request: ModelRequest.ModelRequest) =>
        Assembler.collect(stream(request)).pipe(
          Effect.flatMap((assembled) =>
            assembled.finishReason === undefined
              ? Effect.fail(
                new LlmError.LlmProtocolError({
                  message: `the response of model "${request.model}" ended without a finish chunk`
                })
              )
              : Effect.succeed(assembled)
          )
        )

      return Model.of({
        stream,
        runStream,
        generate,
        use: chain.register,
        middleware: Effect.sync(chain.current)
      })
    })
  )

  /**
   * The model service with its own empty registry; adapter Layers provided on top of it
   * register into that registry.
   *
   * @example
   * ```ts
   * import { Model, ScriptedModel } from "@dsh/model"
   * import { Layer } from "effect"
   *
   * const ModelLive = ScriptedModel.layer({ script: [ScriptedModel.reply.text("hello")] }).pipe(
   *   Layer.provideMerge(Model.layer)
   * )
   * ```
   *
   * @since 0.1.0
   */
  static readonly layer: Layer.Layer<Model | ModelRegistry> = Model.layerNoDeps.pipe(
    Layer.provideMerge(ModelRegistry.layer)
  )
}
