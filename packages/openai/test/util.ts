/**
 * Helpers shared by the OpenAI-compatible adapter's tests.
 */
import { OpenAiCompat, Profile, Profiles } from "@dsh/openai"
import { FakeServer, Fixture } from "@dsh/openai/testing"
import { Assembler, HarnessError, History, Message, type ModelRequest, type StreamChunk } from "@dsh/llm"
import { Model } from "@dsh/model"
import { Cause, Clock, Duration, Effect, Exit, Layer, Option, Redacted, Stream } from "effect"

/** A key distinctive enough to be searched for in every error. */
export const secret = "sk-test-4c3b2a19-NEVER-LEAK"
export const apiKey = Redacted.make(secret)

/** The model each shipped profile's tests ask for. */
export const modelOf = (name: Profiles.Name): string => {
  const listed = Profile.resolve(Profiles.all[name]).defaultModels[0]
  return listed ?? `${name}-test-model`
}

/** A request whose last user message names a fixture (how dispatching servers pick one). */
export const request = (model: string, text: string, options: Partial<ModelRequest.ModelRequest> = {}): ModelRequest.ModelRequest => ({
  model,
  messages: History.make(Message.user(text)),
  ...options
})

/** The text of the last user message of a recorded request body. */
export const lastUserText = (json: unknown): string => {
  const messages = (json as { messages?: ReadonlyArray<{ role: string; content: string }> }).messages ?? []
  return messages.filter((m) => m.role === "user").at(-1)?.content ?? ""
}

/** Answers each request with the fixture its last user message names. */
export const byName: FakeServer.Respond = (recorded) => Fixture.load(lastUserText(recorded.json))

/** Options pointing a shipped profile at a server, with a key and retries off unless given. */
export const optionsFor = (name: Profiles.Name, url: string, options: OpenAiCompat.Options = {}): OpenAiCompat.Options => ({
  profile: name,
  apiKey,
  baseUrl: url,
  model: modelOf(name),
  retry: { times: 0 },
  ...options
})

/** `Model` with the adapter of a shipped profile pointed at a server. */
export const modelLayer = (name: Profiles.Name, url: string, options: OpenAiCompat.Options = {}) =>
  OpenAiCompat.layer(optionsFor(name, url, options)).pipe(Layer.provideMerge(Model.layer))

export interface Outcome {
  readonly chunks: ReadonlyArray<StreamChunk.StreamChunk>
  readonly assembled: Assembler.Assembled
  readonly failure: HarnessError.HarnessError | undefined
  readonly exit: Exit.Exit<void, unknown>
}

/** Runs a stream to its end, keeping what it emitted and how it ended. */
export const run = <E>(stream: Stream.Stream<StreamChunk.StreamChunk, E>): Effect.Effect<Outcome> =>
  Effect.suspend(() => {
    const chunks: Array<StreamChunk.StreamChunk> = []
    return Stream.runForEach(stream, (chunk) => Effect.sync(() => void chunks.push(chunk))).pipe(
      Effect.exit,
      Effect.map((exit) => {
        const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : Option.none()
        const failure = Option.isSome(error) && HarnessError.isHarnessError(error.value) ? error.value : undefined
        return { chunks, assembled: Assembler.assemble(chunks), failure, exit }
      })
    )
  })

/** Streams one request through `Model` with the adapter of a profile pointed at a fresh server. */
export const streamWith = (
  name: Profiles.Name,
  respond: FakeServer.Respond,
  req: ModelRequest.ModelRequest,
  options: OpenAiCompat.Options = {}
): Effect.Effect<{ readonly outcome: Outcome; readonly server: FakeServer.FakeServer }> =>
  Effect.gen(function*() {
    const server = yield* FakeServer.make(respond)
    const outcome = yield* Model.use((model) => run(model.stream(req))).pipe(
      Effect.provide(modelLayer(name, server.url, options)),
      Effect.orDie
    )
    return { outcome, server }
  }).pipe(Effect.scoped)

/** `undefined` when the outcome is what the fixture expects, else what differs. */
export const mismatch = (outcome: Pick<Outcome, "assembled" | "failure">, expect: Fixture.Expect): string | undefined => {
  const same = (what: string, actual: unknown, expected: unknown) =>
    JSON.stringify(actual) === JSON.stringify(expected)
      ? undefined
      : `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`
  if ("error" in expect) {
    const failure = outcome.failure
    if (failure === undefined) return `expected a ${expect.error.tag}, but the stream ended with ${outcome.assembled.finishReason?.kind}`
    const wanted = expect.error
    return same("failure", { tag: failure._tag, code: failure.code }, { tag: wanted.tag, code: wanted.code }) ??
      (wanted.messageIncludes === undefined || failure.message.includes(wanted.messageIncludes)
        ? undefined
        : `the message ${JSON.stringify(failure.message)} lacks ${JSON.stringify(wanted.messageIncludes)}`) ??
      (wanted.retryAfterMillis === undefined
        ? undefined
        : same("retryAfterMillis", (failure as { retryAfterMillis?: number }).retryAfterMillis, wanted.retryAfterMillis))
  }
  if (outcome.failure !== undefined) return `expected an answer, got ${outcome.failure._tag}: ${outcome.failure.message}`
  return same("content", outcome.assembled.message.content, expect.content) ??
    same("finish", outcome.assembled.finishReason, expect.finish) ??
    same("usage", outcome.assembled.usage, expect.usage)
}

/** The quirks of a shipped profile, resolved. */
export const quirksOf = (name: Profiles.Name): Profile.ResolvedQuirks => Profile.resolve(Profiles.all[name]).quirks

/**
 * A clock whose `sleep` returns at once and records the duration asked for: retry delays are
 * observed exactly, without waiting for them. Only for tests without an idle timeout (whose
 * timer would fire at once too).
 */
export const recordingClock = (): { readonly clock: Clock.Clock; readonly sleeps: Array<number> } => {
  const sleeps: Array<number> = []
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: () => Date.now(),
    currentTimeMillis: Effect.sync(() => Date.now()),
    currentTimeNanosUnsafe: () => BigInt(Date.now()) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => BigInt(Date.now()) * 1_000_000n),
    monotonicTimeNanosUnsafe: () => process.hrtime.bigint(),
    monotonicTimeNanos: Effect.sync(() => process.hrtime.bigint()),
    sleep: (duration) =>
      Effect.sync(() => {
        sleeps.push(Duration.toMillis(duration))
      })
  }
  return { clock, sleeps }
}
