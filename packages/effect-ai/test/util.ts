/**
 * Helpers shared by the bridge tests: a fake effect/ai model built with `LanguageModel.make`
 * that answers with encoded parts (what a provider's `streamText` hook returns) and records
 * what effect/ai handed it.
 */
import { EffectAiBridge } from "@dsh/effect-ai"
import { Message, ModelRequest, type StreamChunk, Usage } from "@dsh/llm"
import { Model } from "@dsh/model"
import { Cause, Effect, Exit, Layer, Option, Stream } from "effect"
import { type AiError, LanguageModel, type Response } from "effect/ai"

/** What the fake model answers a request with: parts, or a whole stream (to fail or hang). */
export type Answer =
  | ReadonlyArray<Response.StreamPartEncoded>
  | Stream.Stream<Response.StreamPartEncoded, AiError.AiError>

/** A fake effect/ai model and the provider options of every call it received. */
export interface Fake {
  readonly model: Effect.Effect<LanguageModel.LanguageModel>
  readonly calls: Array<LanguageModel.ProviderOptions>
}

export const fake = (answer: (options: LanguageModel.ProviderOptions) => Answer): Fake => {
  const calls: Array<LanguageModel.ProviderOptions> = []
  const model = LanguageModel.make({
    generateText: () => Effect.succeed([]),
    streamText: (options) =>
      Stream.suspend(() => {
        calls.push(options)
        const a = answer(options)
        return Stream.isStream(a) ? a : Stream.fromIterable(a)
      })
  })
  return { model, calls }
}

/** The text of the last user message effect/ai received. */
export const lastUserText = (options: LanguageModel.ProviderOptions): string => {
  const last = options.prompt.content.filter((m) => m.role === "user").at(-1)
  if (last === undefined || last.role !== "user") return ""
  return last.content.map((p) => (p.type === "text" ? p.text : "")).join("")
}

export const MODEL = "fake-model"

/** `Model` with the bridge over a fake model registered as {@link MODEL}. */
export const bridged = (f: Fake, options: Partial<EffectAiBridge.Options> = {}) =>
  EffectAiBridge.layerWith(f.model, { models: [MODEL], ...options }).pipe(Layer.provideMerge(Model.layer))

export const request = (text: string, options: Omit<ModelRequest.ModelRequest, "model" | "messages"> = {}) =>
  ModelRequest.make(MODEL, [Message.user(text)], options)

/** Runs the bridge over parts and returns what it emitted and how it ended. */
export const run = (
  answer: Answer,
  req: ModelRequest.ModelRequest = request("hi"),
  options: Partial<EffectAiBridge.Options> = {}
) => {
  const f = fake(() => answer)
  return Effect.gen(function*() {
    const model = yield* Model
    const chunks: Array<StreamChunk.StreamChunk> = []
    const exit = yield* Stream.runForEach(model.stream(req), (c) => Effect.sync(() => void chunks.push(c))).pipe(
      Effect.exit
    )
    return { chunks, exit, calls: f.calls }
  }).pipe(Effect.provide(bridged(f, options)))
}

/** The chunks of a run that succeeded; fails the test otherwise. */
export const chunksOf = (answer: Answer, req?: ModelRequest.ModelRequest, options?: Partial<EffectAiBridge.Options>) =>
  Effect.flatMap(run(answer, req, options), ({ chunks, exit }) =>
    Exit.isSuccess(exit) ? Effect.succeed(chunks) : Effect.die(new Error(`stream failed: ${String(exit.cause)}`)))

/** The failure of a run that failed; fails the test otherwise. */
export const failureOf = (answer: Answer, req?: ModelRequest.ModelRequest) =>
  Effect.flatMap(run(answer, req), ({ chunks, exit }) =>
    Exit.isFailure(exit) && Option.isSome(Cause.findErrorOption(exit.cause))
      ? Effect.succeed({ error: Option.getOrThrow(Cause.findErrorOption(exit.cause)), chunks })
      : Effect.die(new Error(`stream did not fail with a typed error: ${String(exit)}`)))

/** An encoded finish part. */
export const finish = (
  reason: Response.FinishReason,
  usage: typeof Response.Usage.Encoded = { inputTokens: {}, outputTokens: {} }
): Response.FinishPartEncoded => ({ type: "finish", reason, usage })

/** Usage as the fake reports it in most cases, and what the bridge makes of it. */
export const usage = {
  encoded: { inputTokens: { uncached: 40, total: 140, cacheRead: 100 }, outputTokens: { total: 12, text: 9, reasoning: 3 } },
  mapped: Usage.make({ inputTokens: 40, outputTokens: 12, cacheReadTokens: 100, reasoningTokens: 3 })
} as const
