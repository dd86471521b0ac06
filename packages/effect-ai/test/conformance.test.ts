/**
 * The model conformance kit against the bridge over a `LanguageModel.make` model whose
 * `streamText` emits realistic part sequences (shaped like effect/ai's providers: ids per
 * block, tool parameters streamed then parsed, a finish part with usage).
 */
import { Content, FinishReason, HarnessError, History, Ids, Message, ModelRequest, Usage } from "@dsh/llm"
import * as Conformance from "@dsh/model/Conformance"
import { Effect, Stream } from "effect"
import { AiError, type Response } from "effect/ai"
import { bridged, fake, finish, lastUserText, MODEL, usage } from "./util.ts"

/** `undefined` when `actual` deep-equals `expected`, else a description of the difference. */
const same = (what: string, actual: unknown, expected: unknown): string | undefined =>
  JSON.stringify(actual) === JSON.stringify(expected)
    ? undefined
    : `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`

const failedWith = (o: Conformance.Outcome, tag: string, code: string) =>
  same("failure", o.failure && HarnessError.info(o.failure), { tag, code })

const text = (id: string, ...deltas: ReadonlyArray<string>): Array<Response.StreamPartEncoded> => [
  { type: "text-start", id },
  ...deltas.map((delta): Response.StreamPartEncoded => ({ type: "text-delta", id, delta })),
  { type: "text-end", id }
]

const meta: Response.StreamPartEncoded = { type: "response-metadata", id: "resp_1", modelId: "fake", timestamp: "2026-01-01T00:00:00Z" }
const bash: ModelRequest.ToolSchema = {
  name: "bash",
  description: "Run a shell command",
  parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] }
}
const read: ModelRequest.ToolSchema = {
  name: "read",
  description: "Read a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
}
const id = Ids.callId
const aiError = (reason: AiError.AiErrorReason) => AiError.make({ module: "FakeProvider", method: "streamText", reason })

interface Scenario {
  readonly name: string
  readonly answer: (prompt: { readonly roles: ReadonlyArray<string> }) =>
    | ReadonlyArray<Response.StreamPartEncoded>
    | Stream.Stream<Response.StreamPartEncoded, AiError.AiError>
  readonly request?: Partial<ModelRequest.ModelRequest>
  readonly expect: (outcome: Conformance.Outcome) => string | undefined
}

const finishes: ReadonlyArray<readonly [Response.FinishReason, FinishReason.FinishReason]> = [
  ["length", FinishReason.length],
  ["content-filter", FinishReason.contentFilter],
  ["error", FinishReason.error("LLM_SERVER", "the provider ended the response with an error")],
  ["pause", FinishReason.other("pause")],
  ["other", FinishReason.other("other")],
  ["unknown", FinishReason.other("unknown")]
]

const scenarios: ReadonlyArray<Scenario> = [
  {
    name: "plain text with usage",
    answer: () => [meta, ...text("t", "Hello, ", "world"), finish("stop", usage.encoded)],
    expect: (o) =>
      same("content", o.assembled.message.content, [Content.text("Hello, world")]) ??
        same("finish", o.assembled.finishReason, FinishReason.stop) ??
        same("usage", o.assembled.usage, usage.mapped)
  },
  {
    name: "reasoning then text",
    answer: () => [
      { type: "reasoning-start", id: "r", metadata: { fake: { signature: "s1" } } },
      { type: "reasoning-delta", id: "r", delta: "The user " },
      { type: "reasoning-delta", id: "r", delta: "greets me." },
      { type: "reasoning-end", id: "r" },
      ...text("t", "Hi", "!"),
      finish("stop", usage.encoded)
    ],
    expect: (o) =>
      same("content", o.assembled.message.content, [
        Content.reasoning("The user greets me.", "effect-ai:{\"fake\":{\"signature\":\"s1\"}}"),
        Content.text("Hi!")
      ])
  },
  {
    name: "text and two tool calls streamed, interleaved (OpenAI-compatible shape)",
    request: { tools: [bash, read], toolChoice: "required" },
    answer: () => [
      meta,
      { type: "text-start", id: "m" },
      { type: "text-delta", id: "m", delta: "Let me check." },
      { type: "tool-params-start", id: "call_1", name: "bash" },
      { type: "tool-params-delta", id: "call_1", delta: "{\"comm" },
      { type: "tool-params-start", id: "call_2", name: "read" },
      { type: "tool-params-delta", id: "call_2", delta: "{\"path\":\"/etc/hosts\"}" },
      { type: "tool-params-delta", id: "call_1", delta: "and\":\"ls -la\"}" },
      { type: "text-end", id: "m" },
      { type: "tool-params-end", id: "call_1" },
      { type: "tool-call", id: "call_1", name: "bash", params: { command: "ls -la" } },
      { type: "tool-params-end", id: "call_2" },
      { type: "tool-call", id: "call_2", name: "read", params: { path: "/etc/hosts" } },
      finish("tool-calls", usage.encoded)
    ],
    expect: (o) =>
      same("content", o.assembled.message.content, [
        Content.text("Let me check."),
        Content.toolCall(id("call_1"), "bash", "{\"command\":\"ls -la\"}"),
        Content.toolCall(id("call_2"), "read", "{\"path\":\"/etc/hosts\"}")
      ]) ?? same("finish", o.assembled.finishReason, FinishReason.toolCalls)
  },
  {
    name: "tool calls not streamed (parameters only in the tool-call part)",
    request: { tools: [bash] },
    answer: () => [
      { type: "tool-call", id: "c1", name: "bash", params: { command: "pwd" } },
      { type: "tool-call", id: "c2", name: "bash", params: { command: "date" } },
      finish("tool-calls")
    ],
    expect: (o) =>
      same("content", o.assembled.message.content, [
        Content.toolCall(id("c1"), "bash", "{\"command\":\"pwd\"}"),
        Content.toolCall(id("c2"), "bash", "{\"command\":\"date\"}")
      ])
  },
  {
    name: "a call to a tool that was not offered reaches the loop",
    request: { tools: [bash] },
    answer: () => [{ type: "tool-call", id: "c1", name: "rm_rf", params: { path: "/" } }, finish("tool-calls")],
    expect: (o) => same("content", o.assembled.message.content, [Content.toolCall(id("c1"), "rm_rf", "{\"path\":\"/\"}")])
  },
  {
    name: "an empty answer",
    answer: () => [finish("stop")],
    expect: (o) =>
      same("content", o.assembled.message.content, []) ?? same("finish", o.assembled.finishReason, FinishReason.stop)
  },
  {
    name: "an image in the answer",
    answer: () => [...text("t", "Here:"), { type: "file", mediaType: "image/png", data: "iVBORw0KGgo=" }, finish("stop")],
    expect: (o) =>
      same("content", o.assembled.message.content, [Content.text("Here:"), Content.image("image/png", "iVBORw0KGgo=")])
  },
  ...finishes.map(([reason, expected]): Scenario => ({
    name: `finish: ${reason}`,
    answer: () => [...text("t", `ends with ${reason}`), finish(reason, { inputTokens: { total: 3 }, outputTokens: { total: 4 } })],
    expect: (o) =>
      same("finish", o.assembled.finishReason, expected) ??
        same("usage", o.assembled.usage, Usage.make({ inputTokens: 3, outputTokens: 4 })) ??
        same("failure", o.failure, undefined)
  })),
  {
    name: "a history with tool calls and results is sent as effect/ai messages",
    request: {
      system: "You are terse.",
      messages: History.make(
        Message.user("a history with tool calls and results is sent as effect/ai messages"),
        Message.make("assistant", [Content.toolCall(id("c1"), "bash", "{\"command\":\"ls\"}")]),
        Message.make("user", [Content.toolResult({ toolCallId: id("c1"), content: [Content.text("a.txt")] })])
      )
    },
    // the fake answers with the roles it received
    answer: ({ roles }) => [...text("t", roles.join(",")), finish("stop")],
    expect: (o) => same("content", o.assembled.message.content, [Content.text("system,user,assistant,tool")])
  },
  {
    name: "rate limited mid-stream",
    answer: () =>
      Stream.fromIterable([meta, { type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "a long" }] as const)
        .pipe(Stream.concat(Stream.fail(aiError(new AiError.RateLimitError({}))))),
    expect: (o) => failedWith(o, "LlmRateLimitError", "LLM_RATE_LIMIT") ?? same("chunks before the failure", o.chunks.length, 2)
  },
  {
    name: "an error part mid-stream",
    answer: () => [...text("t", "partial"), { type: "error", error: { message: "overloaded" } }, finish("stop")],
    expect: (o) => failedWith(o, "LlmServerError", "LLM_SERVER") ?? same("chunks before the failure", o.chunks.length, 3)
  },
  {
    name: "refused before streaming",
    answer: () => Stream.fail(aiError(new AiError.AuthenticationError({ kind: "InvalidKey" }))),
    expect: (o) => failedWith(o, "LlmAuthError", "LLM_AUTH") ?? same("chunks", o.chunks.length, 0)
  },
  {
    name: "a stream that ends without finish",
    answer: () => text("t", "cut"),
    expect: (o) => failedWith(o, "LlmProtocolError", "LLM_PROTOCOL")
  },
  {
    name: "a request that cannot be converted never reaches the model",
    request: {
      messages: History.make(
        Message.user("a request that cannot be converted never reaches the model"),
        Message.make("user", [Content.image("image/png", "%%%")])
      )
    },
    answer: () => Stream.die("the model was called"),
    expect: (o) => failedWith(o, "LlmInvalidRequestError", "LLM_INVALID_REQUEST")
  }
]

const ENDLESS = "count forever"
let released = false

const byName = new Map(scenarios.map((s) => [s.name, s.answer]))
const model = fake((options) => {
  const name = lastUserText(options)
  if (name === ENDLESS) {
    released = false
    return Stream.fromIterable<Response.StreamPartEncoded>([{ type: "text-start", id: "t" }]).pipe(
      Stream.concat(Stream.iterate(1, (n) => n + 1).pipe(
        Stream.map((n): Response.StreamPartEncoded => ({ type: "text-delta", id: "t", delta: `${n} ` }))
      )),
      Stream.ensuring(Effect.sync(() => {
        released = true
      }))
    )
  }
  const answer = byName.get(name)
  return answer === undefined
    ? Stream.fail(aiError(new AiError.InvalidUserInputError({ description: `no scenario "${name}"` })))
    : answer({ roles: options.prompt.content.map((m) => m.role) })
})

Conformance.suite({
  name: "effect/ai bridge over LanguageModel.make",
  layer: bridged(model),
  cases: scenarios.map((s): Conformance.Case => ({
    name: s.name,
    request: { ...ModelRequest.make(MODEL, [Message.user(s.name)]), ...s.request },
    expect: s.expect
  })),
  endless: ModelRequest.make(MODEL, [Message.user(ENDLESS)]),
  afterInterrupt: Effect.suspend(() =>
    released ? Effect.void : Effect.fail("the effect/ai model's stream was not released after the interruption")
  )
})
