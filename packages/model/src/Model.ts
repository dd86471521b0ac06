/**
 * The model seam: the service everything above calls to talk to a model. `stream` routes a
 * request through the registered middleware to the adapter serving its model; `generate`
 * runs the same stream through the block assembler.
 *
 * @since 0.1.0
 */
import { Assembler, LlmError, Middleware, type ModelRequest, type ScopedList, StreamChunk } from "@dsh/llm"
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

/** Where the first value that is no stream chunk sits in a batch, and why, or `undefined`. */
const firstMalformed = (chunks: ReadonlyArray<unknown>): { readonly at: number; readonly why: string } | undefined => {
  for (let at = 0; at < chunks.length; at++) {
    const why = StreamChunk.problem(chunks[at])
    if (why !== undefined) return { at, why }
  }
  return undefined
}

// an adapter's or a middleware's bug: logged or assembled, it would break the turn's closing
// the cause says where and why in data (the conformance kit reports it as `chunk-shape`)
const malformed = (request: ModelRequest.ModelRequest, position: number, why: string) =>
  new LlmError.LlmProtocolError({
    message: `the response of model "${request.model}" was cut at its chunk ${position}, which is no stream chunk: ${why}`,
    cause: { _tag: "MalformedChunk", position, problem: why }
  })

/** Hands `f` each batch up to the first value that is no stream chunk, then fails with `LLM_PROTOCOL`. */
const checkedBatches = <E, R>(
  request: ModelRequest.ModelRequest,
  f: (chunks: ReadonlyArray<StreamChunk.StreamChunk>) => Effect.Effect<void, E, R>
) => {
  let seen = 0
  return (chunks: ReadonlyArray<StreamChunk.StreamChunk>): Effect.Effect<void, E | LlmError.LlmProtocolError, R> => {
    const bad = firstMalformed(chunks)
    const before = seen
    seen += chunks.length
    if (bad === undefined) return f(chunks)
    const failure = Effect.fail(malformed(request, before + bad.at, bad.why))
    return bad.at === 0 ? failure : Effect.andThen(f(chunks.slice(0, bad.at)), failure)
  }
}

/** The stream up to the first value that is no stream chunk, then a failure with `LLM_PROTOCOL`. */
const checkedStream = (request: ModelRequest.ModelRequest, stream: ChunkStream): ChunkStream =>
  Stream.transformPull(stream, (pull) =>
    Effect.sync(() => {
      let seen = 0
      let failure: LlmError.LlmProtocolError | undefined
      return Effect.flatMap(Effect.suspend(() => (failure === undefined ? pull : Effect.fail(failure))), (chunks) => {
        const bad = firstMalformed(chunks)
        const before = seen
        seen += chunks.length
        if (bad === undefined) return Effect.succeed(chunks)
        failure = malformed(request, before + bad.at, bad.why)
        return bad.at === 0 ? Effect.fail(failure) : Effect.succeed(chunks.slice(0, bad.at) as unknown as typeof chunks)
      })
    }))

/**
 * @since 0.1.0
 * @category services
 */
export class Model extends Context.Service<Model, {
  /**
   * Streams the model's answer to a request. A value that is no stream chunk (an adapter's or
   * a middleware's bug: see `StreamChunk.problem`) ends the stream there with `LLM_PROTOCOL`.
   */
  readonly stream: (request: ModelRequest.ModelRequest) => ChunkStream
  /**
   * Streams the model's answer and hands each batch of chunks to `f` as it arrives: what
   * `Stream.runForEachArray(stream(request), f)` does, through the same middleware and in the
   * same `Model.stream` span, opened as an Effect's span (a stream's costs ~25 µs more per
   * call). `f` runs inside the span. The agent loop consumes every model call this way. As
   * with `stream`, `f` never sees a value that is no stream chunk: the batch is cut before it
   * and the call fails with `LLM_PROTOCOL`.
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
        checkedStream(request, chain.apply(request, terminal)).pipe(
          Stream.withSpan("Model.stream", { attributes: { "dsh.model": request.model }, captureStackTrace: false })
        )

      const runStream = <E, R>(
        request: ModelRequest.ModelRequest,
        f: (chunks: ReadonlyArray<StreamChunk.StreamChunk>) => Effect.Effect<void, E, R>
      ): Effect.Effect<void, ModelError | E, R> =>
        // With no middleware the adapter's stream is run as it is: wrapping it for the chain
        // (`Stream.unwrap`, `Stream.suspend`) costs a dozen Effect operations per request. A
        // throwing `adapter.stream` is a defect either way.
        Effect.suspend(() => {
          const checked = checkedBatches(request, f)
          return chain.current().length === 0
            ? Effect.flatMap(registry.resolve(request.model), (adapter) => Stream.runForEachArray(adapter.stream(request), checked))
            : Stream.runForEachArray(chain.apply(request, terminal), checked)
        }).pipe(
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
