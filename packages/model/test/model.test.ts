import {
  Assembler,
  Content,
  FinishReason,
  Ids,
  LlmError,
  Message,
  Middleware,
  type ModelRequest,
  StreamChunk,
  Usage
} from "@dsh/llm"
import { ChunkContract, layerAdapter, Model, type ModelMiddleware, ModelRegistry, ScriptedModel } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option, Stream, Tracer } from "effect"
import { drain, lastUserText, request, scripted } from "./util.ts"

const { reply } = ScriptedModel

const blocks: ReadonlyArray<Content.ContentBlock> = [
  Content.reasoning("let me think"),
  Content.text("I will list the files"),
  Content.toolCall(Ids.callId("call_ls"), "bash", `{"command":"ls"}`)
]
const usage = Usage.make({ inputTokens: 12, outputTokens: 34, cacheReadTokens: 5 })
/** A well-formed answer cut short before its finish. */
const cut = Assembler.toChunks([Content.text("half an ans")]).slice(0, -1)

/** Appends `tag` to every text the stream carries (deltas and the block-end text agree). */
const tagText = (tag: string) => (chunk: StreamChunk.StreamChunk): StreamChunk.StreamChunk => {
  if (chunk.type === "text-delta") return { ...chunk, delta: chunk.delta + tag }
  if (chunk.type === "block-end" && chunk.block.type === "text") {
    return { ...chunk, block: { ...chunk.block, text: chunk.block.text + tag } }
  }
  return chunk
}

const upper = (chunk: StreamChunk.StreamChunk): StreamChunk.StreamChunk => {
  if (chunk.type === "text-delta") return { ...chunk, delta: chunk.delta.toUpperCase() }
  if (chunk.type === "block-end" && chunk.block.type === "text") {
    return { ...chunk, block: { ...chunk.block, text: chunk.block.text.toUpperCase() } }
  }
  return chunk
}

const textOf = (assembled: Assembler.Assembled) => Message.textOf(assembled.message)

describe("Model.stream / Model.generate", () => {
  it.effect("stream emits the adapter's chunks as they are", () =>
    Effect.gen(function*() {
      const chunks = yield* Stream.runCollect((yield* Model).stream(request("hi")))
      expect(chunks).toStrictEqual(Assembler.toChunks(blocks, { usage }))
    }).pipe(Effect.provide(scripted({ script: [reply.blocks(blocks, { usage })] }))))

  it.effect("a value that is no stream chunk cuts the response there with LLM_PROTOCOL; what came before is delivered", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const good = Assembler.toChunks([Content.text("hi")]).slice(0, 2)
      for (const [bad, why] of [
        [null, "it is null, not an object"],
        [{ type: "text-delta", index: 0 }, "its delta is no string"],
        [{ type: "text-delta", index: -1, delta: "x" }, "its index is no integer ≥ 0"],
        [{ type: "finish", reason: { kind: "wat" } }, "its reason is no finish reason"],
        [{ type: "bogus" }, `its type is "bogus", no chunk type`]
      ] as const) {
        const { chunks, exit } = yield* drain(model.stream(request(JSON.stringify(bad))))
        expect(chunks).toStrictEqual(good)
        const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        expect(error).toBeInstanceOf(LlmError.LlmProtocolError)
        expect((error as LlmError.LlmProtocolError).message).toBe(
          `the response of model "scripted" was cut at its chunk 2, which is no stream chunk: ${why}`
        )
      }
      // runStream: the batch up to the bad value, then the failure
      const delivered: Array<StreamChunk.StreamChunk> = []
      const failed = yield* Effect.flip(model.runStream(request("again"), (chunks) => Effect.sync(() => void delivered.push(...chunks))))
      expect(delivered).toStrictEqual(good)
      expect(failed.code).toBe("LLM_PROTOCOL")
      expect(failed.message).toContain("its chunk 2, which is no stream chunk: it is undefined, not an object")
    }).pipe(Effect.provide(scripted({
      script: [null, { type: "text-delta", index: 0 }, { type: "text-delta", index: -1, delta: "x" }, { type: "finish", reason: { kind: "wat" } }, { type: "bogus" }, undefined]
        .map((bad) => reply.chunks([...Assembler.toChunks([Content.text("hi")]).slice(0, 2), bad as unknown as StreamChunk.StreamChunk]))
    }))))

  it.effect("generate returns the assembled message, usage and finish reason", () =>
    Effect.gen(function*() {
      const assembled = yield* (yield* Model).generate(request("hi"))
      expect(assembled.message).toStrictEqual({ role: "assistant", content: blocks })
      expect(assembled.usage).toStrictEqual(usage)
      expect(assembled.finishReason).toStrictEqual({ kind: "tool-calls" })
      expect(assembled.anomalies).toStrictEqual([])
    }).pipe(Effect.provide(scripted({ script: [reply.blocks(blocks, { usage })] }))))

  it.effect("generate fails with LlmProtocolError when the stream ends without finish", () =>
    Effect.gen(function*() {
      const model = yield* Model
      // the stream itself does not fail: it just ends
      expect(yield* Stream.runCollect(model.stream(request("hi")))).toStrictEqual(cut)
      const error = yield* Effect.flip(model.generate(request("hi")))
      expect(error).toBeInstanceOf(LlmError.LlmProtocolError)
      expect(error.code).toBe("LLM_PROTOCOL")
      expect(error.message).toContain(`"scripted"`)
      expect(error.message).toContain("without a finish chunk")
    }).pipe(Effect.provide(scripted({ script: [reply.chunks(cut), reply.chunks(cut)] }))))

  it.effect("a finish of kind error (or aborted) is returned, not thrown", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const failed = yield* model.generate(request("hi"))
      expect(failed.finishReason).toStrictEqual({ kind: "error", code: "LLM_SERVER", message: "overloaded" })
      expect(textOf(failed)).toBe("partial")
      const aborted = yield* model.generate(request("hi"))
      expect(aborted.finishReason).toStrictEqual({ kind: "aborted", reason: "user" })
    }).pipe(Effect.provide(scripted({
      script: [
        reply.text("partial", { finish: FinishReason.error("LLM_SERVER", "overloaded") }),
        reply.text("", { finish: FinishReason.aborted("user") })
      ]
    }))))

  it.effect("typed failures propagate with their tags, through stream and generate", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const retryAfter = yield* model.generate(request("hi")).pipe(
        Effect.as(-1),
        Effect.catchTag("LlmRateLimitError", (e) => Effect.succeed(e.retryAfterMillis ?? 0))
      )
      expect(retryAfter).toBe(250)

      const { chunks, exit } = yield* drain(model.stream(request("hi")))
      expect(chunks).toStrictEqual(Assembler.toChunks([Content.text("so far")]).slice(0, 2))
      expect(Exit.isFailure(exit)).toBe(true)
      if (!Exit.isFailure(exit)) return
      const error = Cause.findErrorOption(exit.cause)
      expect(Option.isSome(error) && error.value._tag).toBe("LlmAuthError")
      expect(Option.isSome(error) && error.value.code).toBe("LLM_AUTH")
      expect(Cause.hasDies(exit.cause)).toBe(false)
    }).pipe(Effect.provide(scripted({
      script: [
        reply.fail(new LlmError.LlmRateLimitError({ message: "slow down", retryAfterMillis: 250 })),
        reply.failAt(reply.text("so far"), 2, new LlmError.LlmAuthError({ message: "bad key", status: 401 }))
      ]
    }))))
})

describe("model middleware", () => {
  const tagging = (name: string, calls: Array<string>, order?: number): ModelMiddleware => ({
    name,
    ...(order === undefined ? {} : { order }),
    around: (req, next) => {
      calls.push(name)
      return next(req).pipe(Stream.map(tagText(`[${name}]`)))
    }
  })

  it.effect("runs in explicit order: lower order is outer, equal orders in registration order", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const calls: Array<string> = []
      yield* model.use(tagging("late", calls, 10))
      yield* model.use(tagging("early", calls, -5))
      yield* model.use(tagging("zero-a", calls))
      yield* model.use(tagging("zero-b", calls, 0))
      expect((yield* model.middleware).map((m) => m.name)).toStrictEqual(["early", "zero-a", "zero-b", "late"])

      const assembled = yield* model.generate(request("hi"))
      // the outermost sees the request first and the output last
      expect(calls).toStrictEqual(["early", "zero-a", "zero-b", "late"])
      expect(textOf(assembled)).toBe("hi[late][zero-b][zero-a][early]")
      expect(assembled.anomalies).toStrictEqual([])
    }).pipe(Effect.scoped, Effect.provide(scripted({ script: [reply.text("hi")] }))))

  it.effect("a middleware may rewrite the request, e.g. route to another adapter", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const script = yield* ScriptedModel.ScriptedModel
      // without the middleware nobody serves the alias
      expect((yield* Effect.flip(model.generate(request("hi", "fast")))).code).toBe("NO_MODEL")

      yield* model.use({
        name: "alias",
        around: (req, next) =>
          req.model === "fast"
            ? next({ ...req, model: "other", system: "be brief" })
            : next(req)
      })
      const routed = yield* model.generate(request("hi", "fast"))
      expect(textOf(routed)).toBe("other answers: hi")

      // requests it does not rewrite reach the scripted adapter unchanged
      const direct = yield* model.generate(request("hello"))
      expect(textOf(direct)).toBe("scripted")
      expect(yield* script.requests).toStrictEqual([request("hello")])
    }).pipe(
      Effect.scoped,
      Effect.provide(
        layerAdapter(Effect.succeed({
          name: "other",
          models: ["other"],
          stream: (req: ModelRequest.ModelRequest) =>
            req.system === "be brief"
              ? Stream.fromIterable(Assembler.toChunks([Content.text(`other answers: ${lastUserText(req)}`)]))
              : Stream.fail(new LlmError.LlmInvalidRequestError({ message: "the rewrite lost the system prompt" }))
        })).pipe(Layer.provideMerge(scripted({ script: [reply.text("scripted")] })))
      )
    ))

  it.effect("a middleware may transform the stream", () =>
    Effect.gen(function*() {
      const model = yield* Model
      yield* model.use({ name: "shout", around: (req, next) => next(req).pipe(Stream.map(upper)) })
      const chunks = yield* Stream.runCollect(model.stream(request("hi")))
      expect(ChunkContract.check(chunks)).toStrictEqual([])
      const assembled = Assembler.assemble(chunks)
      expect(assembled.message.content).toStrictEqual([Content.reasoning("quiet thoughts"), Content.text("HELLO THERE")])
    }).pipe(Effect.scoped, Effect.provide(scripted({ script: [reply.reasoningThenText("quiet thoughts", "hello there")] }))))

  it.effect("a middleware may answer without calling next (a cache)", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const script = yield* ScriptedModel.ScriptedModel
      const cache = new Map<string, ReadonlyArray<StreamChunk.StreamChunk>>()
      yield* model.use({
        name: "cache",
        around: (req, next) => {
          const key = `${req.model}:${lastUserText(req)}`
          const hit = cache.get(key)
          if (hit !== undefined) return Stream.fromIterable(hit)
          const seen: Array<StreamChunk.StreamChunk> = []
          return next(req).pipe(
            Stream.tap((chunk) => Effect.sync(() => void seen.push(chunk))),
            Stream.onEnd(Effect.sync(() => void cache.set(key, seen)))
          )
        }
      })
      expect(textOf(yield* model.generate(request("q")))).toBe("fresh")
      expect(textOf(yield* model.generate(request("q")))).toBe("fresh")
      expect(textOf(yield* model.generate(request("q")))).toBe("fresh")
      // only the first reached the adapter
      expect(yield* script.requests).toStrictEqual([request("q")])
      expect(yield* script.remaining).toBe(0)
      // a miss does reach it (and the script, answering once, is exhausted)
      const miss = yield* Effect.exit(model.generate(request("other question")))
      expect(Exit.isFailure(miss) && Cause.hasDies(miss.cause)).toBe(true)
      expect(yield* script.requests).toHaveLength(2)
    }).pipe(Effect.scoped, Effect.provide(scripted({ script: [reply.text("fresh")] }))))

  it.effect("closing the scope that registered a middleware removes it", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const calls: Array<string> = []
      const inside = yield* Effect.scoped(Effect.gen(function*() {
        yield* model.use(tagging("scoped", calls))
        expect((yield* model.middleware).map((m) => m.name)).toStrictEqual(["scoped"])
        return textOf(yield* model.generate(request("hi")))
      }))
      expect(inside).toBe("one[scoped]")
      expect(yield* model.middleware).toStrictEqual([])
      const outside = textOf(yield* model.generate(request("hi")))
      expect(outside).toBe("two")
      expect(calls).toStrictEqual(["scoped"])
    }).pipe(Effect.provide(scripted({ script: [reply.text("one"), reply.text("two")] }))))

  it.effect("a throwing middleware surfaces as a defect carrying MiddlewareError", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const script = yield* ScriptedModel.ScriptedModel
      const calls: Array<string> = []
      const boom = new Error("kaboom")
      yield* model.use(tagging("fine", calls, 0))
      yield* model.use({
        name: "broken",
        order: 1,
        around: () => {
          throw boom
        }
      })
      const exit = yield* Effect.exit(model.generate(request("hi")))
      expect(Exit.isFailure(exit)).toBe(true)
      if (!Exit.isFailure(exit)) return
      // not a typed failure: the seam's error channel belongs to the seam
      expect(Option.isNone(Cause.findErrorOption(exit.cause))).toBe(true)
      const defect = Cause.findDefect(exit.cause)
      expect(defect._tag).toBe("Success")
      if (defect._tag !== "Success") return
      const error = defect.success
      expect(error).toBeInstanceOf(Middleware.MiddlewareError)
      if (!(error instanceof Middleware.MiddlewareError)) return
      expect(error.code).toBe("MIDDLEWARE")
      expect(error.middleware).toBe("broken")
      expect(error.message).toContain("broken")
      expect(error.message).toContain("kaboom")
      expect(error.cause).toBe(boom)
      // the outer one ran, the adapter was never reached
      expect(calls).toStrictEqual(["fine"])
      expect(yield* script.requests).toStrictEqual([])
      expect(yield* script.remaining).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(scripted({ script: [reply.text("never sent")] }))))
})

describe("Model.stream tracing", () => {
  const recording = () => {
    const spans: Array<Tracer.NativeSpan> = []
    const tracer = Tracer.make({
      span(options) {
        const span = new Tracer.NativeSpan(options)
        spans.push(span)
        return span
      }
    })
    return { spans, tracer }
  }

  it.effect("Model.stream runs in a span named Model.stream with the model as dsh.model", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const { spans, tracer } = recording()
      yield* model.generate(request("hi", "traced")).pipe(Effect.withTracer(tracer))
      const streamSpans = spans.filter((s) => s.name === "Model.stream")
      expect(streamSpans).toHaveLength(1)
      const span = streamSpans[0]!
      expect(span.attributes.get("dsh.model")).toBe("traced")
      expect(span.status._tag).toBe("Ended")
      if (span.status._tag === "Ended") expect(Exit.isSuccess(span.status.exit)).toBe(true)

      // a failed call ends its span with the failure
      yield* Effect.exit(model.generate(request("hi", "unknown")).pipe(Effect.withTracer(tracer)))
      const failed = spans.filter((s) => s.name === "Model.stream" && s.attributes.get("dsh.model") === "unknown")
      expect(failed).toHaveLength(1)
      const status = failed[0]!.status
      expect(status._tag === "Ended" && Exit.isFailure(status.exit)).toBe(true)
    }).pipe(Effect.provide(scripted({ script: [reply.text("hi")], models: ["traced"] }))))

  it.effect("runStream hands over the middleware's chunks, batch by batch, inside one Model.stream span", () =>
    Effect.gen(function*() {
      const model = yield* Model
      yield* model.use({ name: "shout", around: (req, next) => next(req).pipe(Stream.map(upper)) })
      const { spans, tracer } = recording()
      const seen: Array<StreamChunk.StreamChunk> = []
      const parents: Array<string | undefined> = []
      yield* model.runStream(request("hi", "traced"), (chunks) =>
        Effect.map(Effect.currentSpan, (span) => {
          seen.push(...chunks)
          parents.push(span.name)
        })).pipe(Effect.withTracer(tracer))
      // the same chunks as the stream gives, the middleware applied
      expect(Assembler.assemble(seen).message.content).toStrictEqual([Content.text("HELLO THERE")])
      expect(ChunkContract.check(seen)).toStrictEqual([])
      const streamSpans = spans.filter((s) => s.name === "Model.stream")
      expect(streamSpans).toHaveLength(1)
      expect(streamSpans[0]!.attributes.get("dsh.model")).toBe("traced")
      expect(parents.length).toBeGreaterThan(0)
      expect(parents.every((name) => name === "Model.stream")).toBe(true)

      // a failed call fails with the model's error and ends its span with it
      const exit = yield* Effect.exit(model.runStream(request("hi", "unknown"), () => Effect.void).pipe(Effect.withTracer(tracer)))
      expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toMatchObject({ _tag: "NoModelError" })
      const failed = spans.filter((s) => s.name === "Model.stream" && s.attributes.get("dsh.model") === "unknown")
      expect(failed).toHaveLength(1)
      expect(failed[0]!.status._tag === "Ended" && Exit.isFailure(failed[0]!.status.exit)).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(scripted({ script: [reply.text("hello there")], models: ["traced"] }))))

  it.effect("each call gets its own span", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const registry = yield* ModelRegistry
      const { spans, tracer } = recording()
      yield* Stream.runDrain(model.stream(request("1"))).pipe(Effect.withTracer(tracer))
      yield* Stream.runDrain(model.stream(request("2"))).pipe(Effect.withTracer(tracer))
      expect(spans.filter((s) => s.name === "Model.stream")).toHaveLength(2)
      expect(yield* registry.models).toStrictEqual(["scripted"])
    }).pipe(Effect.provide(scripted({ script: [reply.text("a"), reply.text("b")] }))))
})
