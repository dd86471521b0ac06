import { Assembler, Content, FinishReason, Ids, LlmError, Message, ModelRequest, StreamChunk, Usage } from "@dsh/llm"
import { ChunkContract, layerAdapter, Model, ModelErrors, ScriptedModel } from "@dsh/model"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, Option, Stream } from "effect"
import { conflict, drain, lastUserText, request, scripted } from "./util.ts"

const { reply } = ScriptedModel

/** The chunks a scripted reply emits, in order (only for replies made of `Emit` steps). */
const chunksOf = (steps: ReadonlyArray<ScriptedModel.Step>): Array<StreamChunk.StreamChunk> =>
  steps.flatMap((step) => (step._tag === "Emit" ? [step.chunk] : []))

/** Streams one request through `Model` with `steps` as the only scripted reply. */
const run = (steps: ReadonlyArray<ScriptedModel.Step>) =>
  Effect.gen(function*() {
    return yield* drain((yield* Model).stream(request("go")))
  }).pipe(Effect.provide(scripted({ script: [steps] })))

const collect = (steps: ReadonlyArray<ScriptedModel.Step>) =>
  Effect.gen(function*() {
    return yield* Stream.runCollect((yield* Model).stream(request("go")))
  }).pipe(Effect.provide(scripted({ script: [steps] })))

const call = (id: string) => Ids.callId(id)
const usage = Usage.make({ inputTokens: 100, outputTokens: 20, reasoningTokens: 7 })
const rateLimited = new LlmError.LlmRateLimitError({ message: "slow down", retryAfterMillis: 1000 })

describe("ScriptedModel.reply builders", () => {
  it.effect("chunks emits the given chunks as they are, malformed or not", () =>
    Effect.gen(function*() {
      const malformed = [
        StreamChunk.textDelta(3, "no start"),
        StreamChunk.finish(FinishReason.stop),
        StreamChunk.usage(Usage.empty),
        StreamChunk.finish(FinishReason.length)
      ]
      expect(yield* collect(reply.chunks(malformed))).toStrictEqual(malformed)
      expect(ChunkContract.check(malformed).length).toBeGreaterThan(0)
      expect(yield* collect(reply.chunks([]))).toStrictEqual([])
    }))

  it.effect("blocks emits the well-formed chunk sequence of its blocks", () =>
    Effect.gen(function*() {
      const content: ReadonlyArray<Content.ContentBlock> = [
        Content.reasoning("hmm", "sig-1"),
        Content.text("hello world"),
        Content.image("image/png", "iVBORw0KGgo="),
        Content.toolCall(call("c9"), "read", `{"path":"/etc/hosts"}`)
      ]
      const options = { usage, finish: FinishReason.length, fragment: Assembler.pieces(3) }
      const chunks = yield* collect(reply.blocks(content, options))
      expect(chunks).toStrictEqual(Assembler.toChunks(content, options))
      expect(ChunkContract.check(chunks)).toStrictEqual([])
      const assembled = Assembler.assemble(chunks)
      expect(assembled.message.content).toStrictEqual(content)
      expect(assembled.usage).toStrictEqual(usage)
      expect(assembled.finishReason).toStrictEqual(FinishReason.length)
    }))

  it.effect("text emits one text block and finishes with stop", () =>
    Effect.gen(function*() {
      expect(yield* collect(reply.text("hello"))).toStrictEqual([
        { type: "block-start", index: 0, blockType: "text" },
        { type: "text-delta", index: 0, delta: "hello" },
        { type: "block-end", index: 0, block: { type: "text", text: "hello" } },
        { type: "finish", reason: { kind: "stop" } }
      ])
    }))

  it.effect("reasoningThenText emits a reasoning block then a text block", () =>
    Effect.gen(function*() {
      expect(yield* collect(reply.reasoningThenText("think", "answer"))).toStrictEqual([
        { type: "block-start", index: 0, blockType: "reasoning" },
        { type: "reasoning-delta", index: 0, delta: "think" },
        { type: "block-end", index: 0, block: { type: "reasoning", text: "think" } },
        { type: "block-start", index: 1, blockType: "text" },
        { type: "text-delta", index: 1, delta: "answer" },
        { type: "block-end", index: 1, block: { type: "text", text: "answer" } },
        { type: "finish", reason: { kind: "stop" } }
      ])
    }))

  it.effect("toolCalls: object arguments are serialized, strings sent raw, ids default to call_<i>", () =>
    Effect.gen(function*() {
      const chunks = yield* collect(reply.toolCalls([
        { name: "bash", arguments: { command: "ls -la", timeoutMs: 5 } },
        { name: "read", arguments: `{ "path" : "a.txt" }` },
        { name: "odd", arguments: "not json at all", id: "mine" },
        { name: "none", arguments: {} }
      ]))
      expect(chunks).toStrictEqual([
        { type: "block-start", index: 0, blockType: "tool-call" },
        {
          type: "tool-call-delta",
          index: 0,
          id: "call_1",
          name: "bash",
          argumentsDelta: `{"command":"ls -la","timeoutMs":5}`
        },
        {
          type: "block-end",
          index: 0,
          block: { type: "tool-call", id: "call_1", name: "bash", arguments: `{"command":"ls -la","timeoutMs":5}` }
        },
        { type: "block-start", index: 1, blockType: "tool-call" },
        { type: "tool-call-delta", index: 1, id: "call_2", name: "read", argumentsDelta: `{ "path" : "a.txt" }` },
        {
          type: "block-end",
          index: 1,
          block: { type: "tool-call", id: "call_2", name: "read", arguments: `{ "path" : "a.txt" }` }
        },
        { type: "block-start", index: 2, blockType: "tool-call" },
        { type: "tool-call-delta", index: 2, id: "mine", name: "odd", argumentsDelta: "not json at all" },
        {
          type: "block-end",
          index: 2,
          block: { type: "tool-call", id: "mine", name: "odd", arguments: "not json at all" }
        },
        { type: "block-start", index: 3, blockType: "tool-call" },
        { type: "tool-call-delta", index: 3, id: "call_4", name: "none", argumentsDelta: "{}" },
        { type: "block-end", index: 3, block: { type: "tool-call", id: "call_4", name: "none", arguments: "{}" } },
        { type: "finish", reason: { kind: "tool-calls" } }
      ])
    }))

  it.effect("toolCalls: undefined arguments are a call without arguments (\"\"); what JSON cannot write is refused when scripted", () =>
    Effect.gen(function*() {
      const chunks = yield* collect(reply.toolCalls([{ name: "now", arguments: undefined }]))
      expect(ChunkContract.check(chunks)).toStrictEqual([])
      expect(Assembler.assemble(chunks).message.content).toStrictEqual([Content.toolCall(call("call_1"), "now", "")])
      expect(() => reply.toolCalls([{ name: "ok", arguments: {} }, { name: "fn", arguments: () => 1 }])).toThrow(
          new TypeError(`ScriptedModel.reply.toolCalls: the arguments of call 2 ("fn") are a function, not JSON`)
        )
      expect(() => reply.toolCalls([{ name: "big", arguments: { n: 1n } }])).toThrow(
        /^ScriptedModel\.reply\.toolCalls: the arguments of call 1 \("big"\) are not JSON: TypeError/
      )
    }))

  it.effect("toolCalls with text puts the text first; call ids still count calls only", () =>
    Effect.gen(function*() {
      const chunks = yield* collect(reply.toolCalls(
        [{ name: "a", arguments: { x: 1 } }, { name: "b", arguments: "[]" }],
        { text: "Let me look." }
      ))
      expect(ChunkContract.check(chunks)).toStrictEqual([])
      const assembled = Assembler.assemble(chunks)
      expect(assembled.message.content).toStrictEqual([
        Content.text("Let me look."),
        Content.toolCall(call("call_1"), "a", `{"x":1}`),
        Content.toolCall(call("call_2"), "b", "[]")
      ])
      expect(assembled.finishReason).toStrictEqual(FinishReason.toolCalls)
    }))

  it.effect("fragment: Assembler.pieces(n) streams the arguments (and text) in fragments", () =>
    Effect.gen(function*() {
      const args = { command: "grep -rn 'needle' src/", timeoutMs: 30000 }
      const chunks = yield* collect(reply.toolCalls(
        [{ name: "bash", arguments: args }, { name: "read", arguments: `{"path":"README.md"}`, id: "r" }],
        { text: "searching now", fragment: Assembler.pieces(4) }
      ))
      expect(ChunkContract.check(chunks)).toStrictEqual([])

      const textDeltas = chunks.filter((c) => c.type === "text-delta")
      expect(textDeltas.map((d) => d.delta)).toStrictEqual(["sear", "chin", "g no", "w"])

      const deltas = chunks.filter((c) => c.type === "tool-call-delta")
      const first = deltas.filter((d) => d.index === 1)
      expect(first.length).toBe(Math.ceil(JSON.stringify(args).length / 4))
      expect(first.every((d) => d.id === "call_1" && d.argumentsDelta.length <= 4)).toBe(true)
      expect(first.map((d) => d.argumentsDelta).join("")).toBe(JSON.stringify(args))
      // the name travels in the first fragment only
      expect(first.map((d) => d.name)).toStrictEqual([
        "bash",
        ...Array.from({ length: first.length - 1 }, () => undefined)
      ])
      expect(first.slice(1).some((d) => "name" in d)).toBe(false)

      const second = deltas.filter((d) => d.index === 2)
      expect(second.every((d) => d.id === "r")).toBe(true)
      expect(second.map((d) => d.argumentsDelta).join("")).toBe(`{"path":"README.md"}`)

      expect(Assembler.assemble(chunks).message.content).toStrictEqual([
        Content.text("searching now"),
        Content.toolCall(call("call_1"), "bash", JSON.stringify(args)),
        Content.toolCall(call("r"), "read", `{"path":"README.md"}`)
      ])
    }))

  it.effect("usage is sent just before finish", () =>
    Effect.gen(function*() {
      const chunks = yield* collect(reply.text("counted", { usage }))
      expect(chunks.at(-2)).toStrictEqual({ type: "usage", usage })
      expect(chunks.at(-1)?.type).toBe("finish")
      expect(chunks.filter((c) => c.type === "usage")).toHaveLength(1)
      // without it, there is none
      const bare = yield* collect(reply.text("uncounted"))
      expect(bare.some((c) => c.type === "usage")).toBe(false)
    }))

  const finishes: ReadonlyArray<FinishReason.FinishReason> = [
    FinishReason.stop,
    FinishReason.length,
    FinishReason.toolCalls,
    FinishReason.contentFilter,
    FinishReason.error("LLM_SERVER", "the provider gave up"),
    FinishReason.aborted("cancelled by the user"),
    FinishReason.other("pause_turn")
  ]
  for (const finish of finishes) {
    it.effect(`finish of kind ${finish.kind} ends the reply`, () =>
      Effect.gen(function*() {
        const model = yield* Model
        const chunks = yield* Stream.runCollect(model.stream(request("go")))
        expect(chunks.at(-1)).toStrictEqual({ type: "finish", reason: finish })
        expect(chunks.filter((c) => c.type === "finish")).toHaveLength(1)
        const assembled = yield* model.generate(request("go"))
        expect(assembled.finishReason).toStrictEqual(finish)
        expect(Message.textOf(assembled.message)).toBe("again")
      }).pipe(Effect.provide(scripted({
        script: [
          reply.text("once", { finish }),
          reply.toolCalls([{ name: "t", arguments: {} }], { text: "again", finish })
        ]
      }))))
  }

  it.effect("the default finish is tool-calls with calls and stop without", () =>
    Effect.gen(function*() {
      expect((yield* collect(reply.toolCalls([{ name: "t", arguments: {} }]))).at(-1)).toStrictEqual(
        StreamChunk.finish(FinishReason.toolCalls)
      )
      expect((yield* collect(reply.reasoningThenText("r", "t"))).at(-1)).toStrictEqual(
        StreamChunk.finish(FinishReason.stop)
      )
      expect((yield* collect(reply.blocks([]))).at(-1)).toStrictEqual(StreamChunk.finish(FinishReason.stop))
    }))
})

describe("failures, defects and hangs", () => {
  const failureOf = <E>(exit: Exit.Exit<void, E>) =>
    Exit.isFailure(exit) ? Option.getOrUndefined(Cause.findErrorOption(exit.cause)) : undefined

  it.effect("fail fails the stream with the typed error, after the steps before it", () =>
    Effect.gen(function*() {
      const alone = yield* run(reply.fail(rateLimited))
      expect(alone.chunks).toStrictEqual([])
      expect(failureOf(alone.exit)).toBe(rateLimited)

      const before = reply.text("partial answer").slice(0, 2)
      const after = yield* run(reply.fail(rateLimited, before))
      expect(after.chunks).toStrictEqual(chunksOf(before))
      expect(failureOf(after.exit)).toBe(rateLimited)
    }))

  const steps = reply.reasoningThenText("thinking", "answer", { usage })
  for (const position of [0, 1, 3, 5, steps.length]) {
    it.effect(`failAt ${position} keeps the first ${position} steps, then fails`, () =>
      Effect.gen(function*() {
        const error = new LlmError.LlmServerError({ message: `gave up at ${position}`, status: 503 })
        const { chunks, exit } = yield* run(reply.failAt(steps, position, error))
        expect(chunks).toStrictEqual(chunksOf(steps).slice(0, position))
        expect(failureOf(exit)).toBe(error)
        expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(false)
      }))
  }

  it.effect("failAt works inside generate too: the typed error, not a protocol error", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip((yield* Model).generate(request("go")))
      expect(error).toBe(rateLimited)
    }).pipe(Effect.provide(scripted({ script: [reply.failAt(reply.text("abc"), 2, rateLimited)] }))))

  for (const position of [0, 2]) {
    it.effect(`dieAt ${position} keeps the first ${position} steps, then dies with the defect`, () =>
      Effect.gen(function*() {
        const defect = new Error("adapter bug")
        const { chunks, exit } = yield* run(reply.dieAt(reply.text("abc"), position, defect))
        expect(chunks).toStrictEqual(chunksOf(reply.text("abc")).slice(0, position))
        expect(Exit.isFailure(exit)).toBe(true)
        if (!Exit.isFailure(exit)) return
        expect(Cause.hasFails(exit.cause)).toBe(false)
        const found = Cause.findDefect(exit.cause)
        expect(found._tag === "Success" && found.success).toBe(defect)
      }))
  }

  for (const position of [1, 3]) {
    it.effect(`hangAt ${position} emits ${position} chunks, then waits until the consumer interrupts`, () =>
      Effect.gen(function*() {
        const model = yield* Model
        const seen: Array<StreamChunk.StreamChunk> = []
        const reached = yield* Deferred.make<void>()
        const fiber = yield* Stream.runForEach(model.stream(request("go")), (chunk) =>
          Effect.suspend(() => {
            seen.push(chunk)
            return seen.length === position ? Deferred.succeed(reached, undefined) : Effect.void
          })).pipe(Effect.forkChild)
        yield* Deferred.await(reached)
        // still running, however long it is given: the reply does not end by itself
        for (let i = 0; i < 20; i++) yield* Effect.yieldNow
        expect(fiber.pollUnsafe()).toBeUndefined()
        yield* Fiber.interrupt(fiber)
        const exit = yield* Fiber.await(fiber)
        expect(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
        // interrupted by the consumer (this fiber), not by itself
        if (Exit.isFailure(exit)) expect([...Cause.interruptors(exit.cause)]).toStrictEqual([yield* Effect.fiberId])
        expect(seen).toStrictEqual(chunksOf(reply.text("abcdef", { fragment: Assembler.pieces(2) })).slice(0, position))
      }).pipe(Effect.provide(scripted({
        script: [reply.hangAt(reply.text("abcdef", { fragment: Assembler.pieces(2) }), position)]
      }))))
  }
})

describe("the ScriptedModel handle", () => {
  it.effect("function replies receive the request and its number (from 1, counting every request)", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const answer = (text: string, name = "m1") =>
        Effect.map(model.generate(request(text, name)), (a) => Message.textOf(a.message))
      expect(yield* answer("first")).toBe("fixed")
      expect(yield* answer("second", "m2")).toBe("#2 m2 second")
      expect(yield* answer("third")).toBe("#3 m1 third")
    }).pipe(Effect.provide(scripted({
      models: ["m1", "m2"],
      script: [
        reply.text("fixed"),
        (req, n) => reply.text(`#${n} ${req.model} ${lastUserText(req)}`),
        (req, n) => reply.text(`#${n} ${req.model} ${lastUserText(req)}`)
      ]
    }))))

  it.effect("requests records every request in order, whatever its answer", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const script = yield* ScriptedModel.ScriptedModel
      expect(yield* script.requests).toStrictEqual([])
      const first = { ...request("one"), system: "you are terse", temperature: 0.2 }
      const second = request("two")
      const third = ModelRequest.make("scripted", [Message.user("a"), Message.assistant("b"), Message.user("three")])
      yield* model.generate(first)
      yield* Effect.exit(model.generate(second))
      yield* Stream.runDrain(model.stream(third))
      expect(yield* script.requests).toStrictEqual([first, second, third])
    }).pipe(Effect.provide(scripted({ script: [reply.text("1"), reply.fail(rateLimited), reply.text("3")] }))))

  it.effect("remaining counts the replies left; a stream consumes one only when it runs", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const script = yield* ScriptedModel.ScriptedModel
      expect(yield* script.remaining).toBe(3)
      const lazy = model.stream(request("later"))
      expect(yield* script.remaining).toBe(3)
      yield* Stream.runDrain(lazy)
      expect(yield* script.remaining).toBe(2)
      yield* model.generate(request("x"))
      expect(yield* script.remaining).toBe(1)
      expect((yield* script.requests).map(lastUserText)).toStrictEqual(["later", "x"])
    }).pipe(Effect.provide(scripted({ script: [reply.text("1"), reply.text("2"), reply.text("3")] }))))

  it.effect("append adds replies at the end of the script, in order", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const script = yield* ScriptedModel.ScriptedModel
      expect(yield* script.remaining).toBe(1)
      yield* script.append(reply.text("second"), (_, n) => reply.text(`third is #${n}`))
      yield* script.append()
      expect(yield* script.remaining).toBe(3)
      const answers: Array<string> = []
      for (let i = 0; i < 3; i++) answers.push(Message.textOf((yield* model.generate(request("q"))).message))
      expect(answers).toStrictEqual(["first", "second", "third is #3"])
      expect(yield* script.remaining).toBe(0)
    }).pipe(Effect.provide(scripted({ script: [reply.text("first")] }))))

  it.effect("a request beyond the script dies with ScriptExhaustedError", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const script = yield* ScriptedModel.ScriptedModel
      yield* model.generate(request("one"))
      const exit = yield* Effect.exit(model.generate(request("two")))
      expect(Exit.isFailure(exit)).toBe(true)
      if (!Exit.isFailure(exit)) return
      expect(Cause.hasFails(exit.cause)).toBe(false)
      const found = Cause.findDefect(exit.cause)
      expect(found._tag).toBe("Success")
      if (found._tag !== "Success") return
      const defect = found.success
      expect(defect).toBeInstanceOf(ModelErrors.ScriptExhaustedError)
      if (!(defect instanceof ModelErrors.ScriptExhaustedError)) return
      expect(defect.code).toBe("SCRIPT_EXHAUSTED")
      expect(defect.requestNumber).toBe(2)
      expect(defect.message).toContain("request 2")
      expect(defect.message).toContain("scripted for 1")
      // the request was still recorded, and appending lets the test go on
      expect((yield* script.requests).map(lastUserText)).toStrictEqual(["one", "two"])
      yield* script.append(reply.text("three"))
      expect(Message.textOf((yield* model.generate(request("three"))).message)).toBe("three")
    }).pipe(Effect.provide(scripted({ script: [reply.text("one")] }))))

  it.effect("an empty script dies on the first request", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Stream.runDrain((yield* Model).stream(request("x"))))
      const found = Exit.isFailure(exit) ? Cause.findDefect(exit.cause) : undefined
      expect(found?._tag === "Success" && found.success instanceof ModelErrors.ScriptExhaustedError).toBe(true)
    }).pipe(Effect.provide(scripted({ script: [] }))))

  it.effect("models sets the names served (instead of \"scripted\")", () =>
    Effect.gen(function*() {
      const model = yield* Model
      expect(Message.textOf((yield* model.generate(request("x", "alpha"))).message)).toBe("a")
      expect(Message.textOf((yield* model.generate(request("x", "beta"))).message)).toBe("b")
      const error = yield* Effect.flip(model.generate(request("x", "scripted")))
      expect(error._tag).toBe("NoModelError")
      if (error._tag === "NoModelError") expect(error.registered).toStrictEqual(["alpha", "beta"])
    }).pipe(Effect.provide(scripted({ models: ["beta", "alpha"], script: [reply.text("a"), reply.text("b")] }))))

  it.effect("name names the adapter in registry conflicts", () =>
    Effect.gen(function*() {
      const named = ScriptedModel.layer({ name: "second", models: ["shared"], script: [] }).pipe(
        Layer.provideMerge(scripted({ name: "first", models: ["shared", "own"], script: [] }))
      )
      const error = conflict(yield* Effect.flip(Effect.provide(Effect.void, named)))
      expect(error.adapter).toBe("second")
      expect(error.registeredBy).toBe("first")
      expect(error.model).toBe("shared")

      // and the default name is "scripted"
      const defaults = ScriptedModel.layer({ script: [] }).pipe(
        Layer.provideMerge(
          layerAdapter(Effect.succeed({ name: "pre", models: ["scripted"], stream: () => Stream.empty })).pipe(
            Layer.provideMerge(Model.layer)
          )
        )
      )
      const clash = conflict(yield* Effect.flip(Effect.provide(Effect.void, defaults)))
      expect(clash.adapter).toBe("scripted")
      expect(clash.registeredBy).toBe("pre")
    }))
})

describe("options past the types", () => {
  const built = (options: unknown) =>
    Effect.flip(Layer.build(ScriptedModel.layer(options as ScriptedModel.Options).pipe(Layer.provide(Model.layer))))

  it.effect("fail the Layer with AdapterConfigError (LLM_CONFIG) naming the setting, before a request is asked", () =>
    Effect.gen(function*() {
      for (const [options, setting, words] of [
        [undefined, "options", "its options must be { script, models?, name? }"],
        [{}, "script", "script must be a list of replies"],
        [{ script: "hi" }, "script", `script must be a list of replies, got "hi"`],
        [{ script: [null] }, "script", "script reply 0 must be a list of steps or a function giving one, got null"],
        [{ script: [reply.text("a"), [{ _tag: "Emmit" }]] }, "script", `script reply 1, step 0 must be a step (Emit, Fail, Die or Hang; see ScriptedModel.reply), got _tag "Emmit"`],
        [{ script: [[{ _tag: "Fail" }]] }, "script", "script reply 0, step 0 is a Fail with no error"],
        [{ script: [], scirpt: [] }, "options", `the options object has "scirpt", which is no option`],
        [{ script: [], name: "" }, "name", "name must be a non-empty string"],
        [{ script: [], models: "scripted" }, "models", `models must be a list of model names, got "scripted"`]
      ] as const) {
        const error = yield* built(options)
        expect(error).toBeInstanceOf(ModelErrors.AdapterConfigError)
        expect(error).toMatchObject({ code: "LLM_CONFIG", setting })
        expect(error.message).toContain(words)
      }
    }).pipe(Effect.scoped))

  it.effect("a computed reply that is no list of steps, or an appended one, dies with AdapterConfigError naming it", () =>
    Effect.gen(function*() {
      const model = yield* Model
      const { exit } = yield* drain(model.stream(request("hi")))
      const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      expect(defect).toBeInstanceOf(ModelErrors.AdapterConfigError)
      expect((defect as ModelErrors.AdapterConfigError).message).toBe(
        "the scripted model cannot answer: the reply computed for request 1 must be a list of steps or a function giving one, got \"oops\""
      )
      const script = yield* ScriptedModel.ScriptedModel
      const appended = yield* Effect.exit(script.append(reply.text("fine"), 42 as never))
      expect(Exit.isFailure(appended) ? Cause.squash(appended.cause) : undefined).toMatchObject({
        code: "LLM_CONFIG",
        message: "the scripted model cannot take the replies: appended reply 1 must be a list of steps or a function giving one, got 42"
      })
      // nothing of a refused append is taken
      expect(yield* script.remaining).toBe(0)
    }).pipe(Effect.provide(scripted({ script: [() => "oops" as never] }))))
})
