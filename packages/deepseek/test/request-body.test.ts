/**
 * Serialization: the wire shape of every kind of content, the settings that change it, and
 * the two properties prompt caching depends on — one history always gives the same bytes, and
 * the body of step k+1 starts with the messages of step k byte for byte.
 */
import { RequestBody } from "@dsh/deepseek"
import { Fixture } from "@dsh/deepseek/testing"
import { Content, Ids, Message, ModelRequest } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { apiKey, secret, streamWith } from "./util.ts"

const id = Ids.callId
const plain: RequestBody.Settings = { thinking: undefined, reasoningEffort: undefined }
const thinkingOn: RequestBody.Settings = { thinking: true, reasoningEffort: "max" }
const thinkingOff: RequestBody.Settings = { thinking: false, reasoningEffort: "max" }

const tools: ReadonlyArray<ModelRequest.ToolSchema> = [
  {
    name: "bash",
    description: "Run a shell command",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] }
  },
  {
    name: "read",
    description: "Read a file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"], additionalProperties: false },
    strict: true
  }
]

// A session's history as derivation builds it, step by step: tool results are user messages
// holding one tool-result block; context arrives as a text envelope.
const user = Message.user("fix the failing test")
const step1Answer = Message.make("assistant", [
  Content.reasoning("I should run the tests first."),
  Content.text("Running the tests."),
  Content.toolCall(id("call_1"), "bash", `{"command":"npm test"}`)
])
const result1 = Message.make("user", [
  Content.toolResult({ toolCallId: id("call_1"), content: [Content.text("1 failing: parse.test.ts")] })
])
const step2Answer = Message.make("assistant", [
  Content.reasoning("Read the test and the source."),
  Content.toolCall(id("call_2"), "read", `{"path":"parse.test.ts"}`),
  Content.toolCall(id("call_3"), "read", `{"path": 42}`)
])
const result2 = Message.make("user", [
  Content.toolResult({ toolCallId: id("call_2"), content: [Content.text("it('parses ✓', …)")] })
])
const result3 = Message.make("user", [
  Content.toolResult({
    toolCallId: id("call_3"),
    content: [Content.text("Invalid arguments for read:\nat [\"path\"]: Expected string, got 42")],
    isError: true,
    error: { tag: "ToolArgsError", code: "INVALID_ARGS" }
  })
])
const context = Message.make("user", [Content.text("<context source=\"ide\">\nparse.ts changed on disk\n</context>")])
const step3Answer = Message.make("assistant", [Content.text("The test expects a trailing newline. Fixed.")])

const steps: ReadonlyArray<ModelRequest.ModelRequest> = [
  [user],
  [user, step1Answer, result1],
  [user, step1Answer, result1, step2Answer, result2, result3, context],
  [user, step1Answer, result1, step2Answer, result2, result3, context, step3Answer, Message.user("thanks")]
].map((messages) => ModelRequest.make("deepseek-v4-flash", messages, { system: "You are terse.", tools, temperature: 0.2 }))

describe("RequestBody", () => {
  it("serializes a tool-calling history to DeepSeek's wire shape", () => {
    expect(RequestBody.make(steps[2]!, plain)).toStrictEqual({
      model: "deepseek-v4-flash",
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "fix the failing test" },
        {
          role: "assistant",
          content: "Running the tests.",
          reasoning_content: "I should run the tests first.",
          tool_calls: [{ id: "call_1", type: "function", function: { name: "bash", arguments: `{"command":"npm test"}` } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "1 failing: parse.test.ts" },
        {
          role: "assistant",
          content: "",
          reasoning_content: "Read the test and the source.",
          tool_calls: [
            { id: "call_2", type: "function", function: { name: "read", arguments: `{"path":"parse.test.ts"}` } },
            { id: "call_3", type: "function", function: { name: "read", arguments: `{"path": 42}` } }
          ]
        },
        { role: "tool", tool_call_id: "call_2", content: "it('parses ✓', …)" },
        {
          role: "tool",
          tool_call_id: "call_3",
          content: "Error (INVALID_ARGS): Invalid arguments for read:\nat [\"path\"]: Expected string, got 42"
        },
        { role: "user", content: "<context source=\"ide\">\nparse.ts changed on disk\n</context>" }
      ],
      tools: [
        { type: "function", function: { name: "bash", description: "Run a shell command", parameters: tools[0]!.parameters } },
        {
          type: "function",
          function: { name: "read", description: "Read a file", parameters: tools[1]!.parameters, strict: true }
        }
      ],
      temperature: 0.2,
      stream: true,
      stream_options: { include_usage: true }
    })
  })

  it("writes the keys in wire order", () => {
    const body = RequestBody.encode(
      ModelRequest.make("deepseek-v4-pro", [user], {
        stop: ["\n\n"],
        maxTokens: 100,
        temperature: 0,
        toolChoice: { tool: "bash" },
        tools,
        system: "s"
      }),
      thinkingOn
    )
    expect(Object.keys(JSON.parse(body))).toStrictEqual([
      "model",
      "messages",
      "tools",
      "tool_choice",
      "thinking",
      "reasoning_effort",
      "temperature",
      "max_tokens",
      "stop",
      "stream",
      "stream_options"
    ])
    expect(body.startsWith(`{"model":"deepseek-v4-pro","messages":[{"role":"system","content":"s"},`)).toBe(true)
  })

  it("the same history always gives the same bytes, however its objects were built", () => {
    for (const step of steps) {
      const once = RequestBody.encode(step, plain)
      expect(RequestBody.encode(step, plain)).toBe(once)
      // through the session log's JSON and back (Schema decoding rebuilds every object)
      const codec = Schema.toCodecJson(ModelRequest.ModelRequest)
      const decoded = Schema.decodeUnknownSync(codec)(JSON.parse(JSON.stringify(Schema.encodeSync(codec)(step))))
      expect(RequestBody.encode(decoded, plain)).toBe(once)
      // messages and blocks whose keys were written in another order (tool parameters are
      // the tool's own JSON, passed through as they are)
      const blockTypes = new Set(["text", "reasoning", "tool-call", "tool-result", "image", "custom"])
      const shuffled = JSON.parse(JSON.stringify(step), (_key, value) =>
        value !== null && typeof value === "object" && !Array.isArray(value) &&
          ("role" in value || blockTypes.has(value.type))
          ? Object.fromEntries(Object.entries(value).reverse())
          : value)
      expect(RequestBody.encode(shuffled, plain)).toBe(once)
    }
  })

  it("the body of step k+1 starts with step k's messages byte for byte", () => {
    for (const settings of [plain, thinkingOn, thinkingOff]) {
      for (let k = 0; k + 1 < steps.length; k++) {
        const current = RequestBody.encode(steps[k]!, settings)
        const next = RequestBody.encode(steps[k + 1]!, settings)
        // everything up to the end of step k's last message
        const messages = JSON.stringify(RequestBody.messages(steps[k]!, settings))
        const prefix = `{"model":"deepseek-v4-flash","messages":${messages.slice(0, -1)}`
        expect(current.startsWith(prefix)).toBe(true)
        expect(next.startsWith(prefix)).toBe(true)
        expect(next.charAt(prefix.length)).toBe(",")
      }
    }
  })

  it("passes reasoning back on tool-calling messages only, as thinking mode requires", () => {
    const noReasoning = Message.make("assistant", [Content.toolCall(id("c"), "bash", "{}")])
    const textOnly = Message.make("assistant", [Content.reasoning("hmm"), Content.text("hello")])
    const wire = (m: Message.Message, settings: RequestBody.Settings) => RequestBody.message(m, settings)[0]
    // with tool calls: always in thinking mode, the default (empty if none), never with thinking off
    expect(wire(step1Answer, plain)).toHaveProperty("reasoning_content", "I should run the tests first.")
    // thinking unset is DeepSeek's default, thinking on: the empty reasoning goes back too
    expect(wire(noReasoning, plain)).toHaveProperty("reasoning_content", "")
    expect(wire(noReasoning, thinkingOn)).toHaveProperty("reasoning_content", "")
    expect(wire(step1Answer, thinkingOff)).not.toHaveProperty("reasoning_content")
    // without tool calls: DeepSeek ignores earlier turns' reasoning
    expect(wire(textOnly, thinkingOn)).toStrictEqual({ role: "assistant", content: "hello" })
  })

  it("renders images, custom blocks and failed results deliberately", () => {
    const Citation = Content.defineCustom("citation", Schema.Struct({ url: Schema.String }))
    const mixed = Message.make("user", [
      Content.text("<steering source=\"user\">"),
      Content.image("image/png", "iVBORw0KGgo="),
      Citation.make({ url: "https://example.com/a\"b" }),
      Content.text("</steering>")
    ])
    expect(RequestBody.message(mixed, plain)).toStrictEqual([{
      role: "user",
      content: "<steering source=\"user\">\n[image (image/png) omitted: this model reads text only]\n" +
        "<custom kind=\"citation\">{\"url\":\"https://example.com/a\\\"b\"}</custom>\n</steering>"
    }])
    const failed = Message.make("user", [
      Content.toolResult({ toolCallId: id("x"), content: [Content.text("boom")], isError: true })
    ])
    expect(RequestBody.message(failed, plain)).toStrictEqual([{ role: "tool", tool_call_id: "x", content: "Error: boom" }])
  })

  it("keeps the order of a user message mixing tool results and text", () => {
    const m = Message.make("user", [
      Content.toolResult({ toolCallId: id("a"), content: [Content.text("A")] }),
      Content.text("between"),
      Content.toolResult({ toolCallId: id("b"), content: [] })
    ])
    expect(RequestBody.message(m, plain)).toStrictEqual([
      { role: "tool", tool_call_id: "a", content: "A" },
      { role: "user", content: "between" },
      { role: "tool", tool_call_id: "b", content: "" }
    ])
    expect(RequestBody.message(Message.make("system", [Content.text("a"), Content.text("b")]), plain)).toStrictEqual([
      { role: "system", content: "a\nb" }
    ])
  })

  it("maps the sampling options, tool choice and thinking settings", () => {
    const base = ModelRequest.make("deepseek-v4-flash", [user])
    const body = (options: Omit<ModelRequest.ModelRequest, "model" | "messages">, settings = plain) =>
      RequestBody.make({ ...base, ...options }, settings)
    expect(body({ toolChoice: "required" }).tool_choice).toBe("required")
    expect(body({ toolChoice: { tool: "bash" } }).tool_choice).toStrictEqual({ type: "function", function: { name: "bash" } })
    expect(body({ maxTokens: 512, stop: ["END"], temperature: 1.3 })).toMatchObject({
      max_tokens: 512,
      stop: ["END"],
      temperature: 1.3
    })
    expect(body({}, thinkingOn)).toMatchObject({ thinking: { type: "enabled" }, reasoning_effort: "max" })
    expect(body({}, thinkingOff).thinking).toStrictEqual({ type: "disabled" })
    expect(body({}, thinkingOff)).not.toHaveProperty("reasoning_effort")
    expect(body({}, plain)).not.toHaveProperty("thinking")
    expect(body({ tools: [], stop: [] })).not.toHaveProperty("tools")
    expect(body({})).toMatchObject({ stream: true, stream_options: { include_usage: true } })
  })

  it.live("the server receives exactly these bytes, with the bearer key and SSE accept header", () =>
    Effect.gen(function*() {
      const request = { ...steps[2]!, providerOptions: { deepseek: { thinking: true, reasoningEffort: "high" } } }
      const { outcome, server } = yield* streamWith(Fixture.load("text"), request, { thinking: false })
      expect(outcome.failure).toBeUndefined()
      const [seen] = server.requests()
      expect(seen?.method).toBe("POST")
      expect(seen?.path).toBe("/chat/completions")
      expect(seen?.headers["authorization"]).toBe(`Bearer ${secret}`)
      expect(seen?.headers["content-type"]).toBe("application/json")
      expect(seen?.headers["accept"]).toBe("text/event-stream")
      // the request's providerOptions override the Layer's thinking: false
      expect(seen?.body).toBe(RequestBody.encode(request, { thinking: true, reasoningEffort: "high" }))
      expect(apiKey).toBeDefined()
    }))
})
