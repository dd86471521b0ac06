/**
 * A model stream that delivers its chunks in batches (a provider's decoder emits every chunk
 * of a network read at once): the loop logs a batch in one burst when no listener is
 * registered, chunk by chunk when one is. Either way every chunk is its own event, in order,
 * before the assembled message, and a listener sees each of them.
 */
import { AgentHooks } from "@dsh/agent"
import type { StreamChunk } from "@dsh/llm"
import { ModelRegistry } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { create, type Event, ofType, run, TestLayer } from "./helpers.ts"

const words = Array.from({ length: 12 }, (_, i) => `${i === 0 ? "" : " "}w${i}`)

const answer: ReadonlyArray<StreamChunk.StreamChunk> = [
  { type: "block-start", index: 0, blockType: "text" },
  ...words.map((delta): StreamChunk.StreamChunk => ({ type: "text-delta", index: 0, delta })),
  { type: "block-end", index: 0, block: { type: "text", text: words.join("") } },
  { type: "finish", reason: { kind: "stop" } }
]

/** An adapter answering every request with `answer`, split into batches of `size` chunks. */
const batched = (size: number) =>
  Effect.gen(function*() {
    const registry = yield* ModelRegistry
    yield* registry.register({
      name: "batched",
      models: ["batched"],
      stream: () => Stream.fromIterable(answer).pipe(Stream.rechunk(size))
    })
  })

const loggedChunks = (events: ReadonlyArray<Event>) => ofType(events, "assistant/chunk").map((e) => e.data.chunk)

describe("chunks delivered in batches", () => {
  for (const size of [1, 5, 64]) {
    it.effect(`batches of ${size}, no listener: every chunk logged in order, the message assembled`, () =>
      Effect.gen(function*() {
        yield* batched(size)
        const agent = yield* create({ model: "batched" })
        yield* run(agent, "hi")
        yield* run(agent, "again")
        const events = yield* agent.session.events
        expect(loggedChunks(events)).toStrictEqual([...answer, ...answer])
        const messages = ofType(events, "assistant/message")
        expect(messages.map((m) => m.data.content)).toStrictEqual([
          [{ type: "text", text: words.join("") }],
          [{ type: "text", text: words.join("") }]
        ])
        // each step's chunks, then its message
        const order = events.flatMap((e) => (e.type === "assistant/chunk" ? ["chunk"] : e.type === "assistant/message" ? ["message"] : []))
        const step = [...answer.map(() => "chunk"), "message"]
        expect(order).toStrictEqual([...step, ...step])
      }).pipe(Effect.scoped, Effect.provide(TestLayer())))

    it.effect(`batches of ${size}, a listener: it sees every chunk, each after it is logged`, () =>
      Effect.gen(function*() {
        yield* batched(size)
        const hooks = yield* AgentHooks
        const seen: Array<StreamChunk.StreamChunk> = []
        const agent = yield* create({ model: "batched" })
        yield* hooks.listeners.register({
          name: "ui",
          around: (input, next) =>
            Effect.andThen(
              Effect.gen(function*() {
                if (input.event.type !== "assistant/chunk") return
                // the event is in the log when its listener runs
                const logged = yield* agent.session.events
                expect(logged[input.event.seq]).toBe(input.event)
                seen.push((input.event.data as { readonly chunk: StreamChunk.StreamChunk }).chunk)
              }),
              next(input)
            )
        })
        yield* run(agent, "hi")
        expect(seen).toStrictEqual([...answer])
        expect(loggedChunks(yield* agent.session.events)).toStrictEqual([...answer])
      }).pipe(Effect.scoped, Effect.provide(TestLayer())))
  }
})
