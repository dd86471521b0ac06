/**
 * Helpers shared by the model tests.
 */
import { History, Message, ModelRequest, type StreamChunk } from "@dsh/llm"
import { type Adapter, layerAdapter, Model, ModelErrors, ScriptedModel } from "@dsh/model"
import { expect } from "@effect/vitest"
import { Effect, Exit, Layer, Stream } from "effect"

/** A request holding one user message. */
export const request = (text: string, model = "scripted"): ModelRequest.ModelRequest =>
  ModelRequest.make(model, [Message.user(text)])

/** The text of the last user message of a request. */
export const lastUserText = (req: ModelRequest.ModelRequest): string => {
  const last = History.toArray(req.messages).findLast((m) => m.role === "user")
  return last === undefined ? "" : Message.textOf(last)
}

/** `Model` (and its registry) with a scripted adapter registered. */
export const scripted = (options: ScriptedModel.Options) =>
  ScriptedModel.layer(options).pipe(Layer.provideMerge(Model.layer))

/** `Model` (and its registry) with one hand-written adapter registered. */
export const withAdapter = (adapter: Adapter) =>
  layerAdapter(Effect.succeed(adapter)).pipe(Layer.provideMerge(Model.layer))

/** Runs a stream to its end, keeping what it emitted before it ended (successfully or not). */
export const drain = <E>(
  stream: Stream.Stream<StreamChunk.StreamChunk, E>
): Effect.Effect<{ readonly chunks: ReadonlyArray<StreamChunk.StreamChunk>; readonly exit: Exit.Exit<void, E> }> =>
  Effect.suspend(() => {
    const chunks: Array<StreamChunk.StreamChunk> = []
    return Stream.runForEach(stream, (chunk) => Effect.sync(() => void chunks.push(chunk))).pipe(
      Effect.exit,
      Effect.map((exit) => ({ chunks, exit }))
    )
  })

/** The error, checked to be a `ModelConflictError` (a registration's failure is a union). */
export const conflict = (error: unknown): ModelErrors.ModelConflictError => {
  expect(error).toBeInstanceOf(ModelErrors.ModelConflictError)
  return error as ModelErrors.ModelConflictError
}
