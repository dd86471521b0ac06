/**
 * Serialization: the wire shape of every kind of content, the settings that change it, the
 * cache breakpoints, and the properties prompt caching depends on — one history always gives
 * the same bytes, every earlier message keeps its bytes at the next step, and the body of step
 * k+1 starts with the body of step k once the (moving) breakpoints are set aside.
 */
import { Blocks, RequestBody } from "@dsh/anthropic"
import { Content, Ids, Message, ModelRequest } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"

const id = Ids.callId
const plain: RequestBody.Settings = { maxTokens: 1024, thinking: undefined, effort: undefined, cache: "5m" }
const uncached: RequestBody.Settings = { ...plain, cache: "off" }

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
// holding one tool-result block each; context arrives as a text envelope.
const user = Message.user("fix the failing test")
const step1Answer = Message.make("assistant", [
  Content.reasoning("I should run the tests first.", "SIG-A"),
  Content.text("Running the tests."),
  Content.toolCall(id("toolu_1"), "bash", `{"command": "npm test"}`)
])
const result1 = Message.make("user", [
  Content.toolResult({ toolCallId: id("toolu_1"), content: [Content.text("1 failing: parse.test.ts")] })
])
const step2Answer = Message.make("assistant", [
  Blocks.RedactedThinking.make({ data: "ENCRYPTED==" }),
  Content.reasoning("Read the test and the source.", "SIG-B"),
  Content.toolCall(id("toolu_2"), "read", `{"path":"parse.test.ts"}`),
  Content.toolCall(id("toolu_3"), "read", `{"path": 42}`)
])
const result2 = Message.make("user", [
  Content.toolResult({ toolCallId: id("toolu_2"), content: [Content.text("it('parses ✓', …)"), Content.image("image/png", "iVBORw0KGgo=")] })
])
const result3 = Message.make("user", [
  Content.toolResult({
    toolCallId: id("toolu_3"),
    content: [Content.text("Invalid arguments for read:\nat [\"path\"]: Expected string, got 42")],
    isError: true,
    error: { tag: "ToolArgsError", code: "INVALID_ARGS" }
  })
])
const context = Message.make("user", [Content.text("<context source=\"ide\">\nparse.ts changed on disk\n</context>")])
const step3Answer = Message.make("assistant", [Content.reasoning("", "SIG-C"), Content.text("The test expects a trailing newline. Fixed.")])

const histories = [
  [user],
  [user, step1Answer, result1],
  [user, step1Answer, result1, step2Answer, result2, result3, context],
  [user, step1Answer, result1, step2Answer, result2, result3, context, step3Answer, Message.user("thanks")]
]
const steps: ReadonlyArray<ModelRequest.ModelRequest> = histories.map((messages) =>
  ModelRequest.make("claude-sonnet-5-5", messages, { system: "You are terse.", tools, temperature: 0.2 })
)

const eph = { type: "ephemeral" } as const
const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value))
const withoutMarkers = (body: string) => body.replaceAll(`,"cache_control":{"type":"ephemeral"}`, "")

describe("RequestBody", () => {
  it("serializes a tool-calling history to the Messages wire shape, breakpoints included", () => {
    expect(roundTrip(RequestBody.make(steps[2]!, plain))).toStrictEqual({
      model: "claude-sonnet-5-5",
      max_tokens: 1024,
      system: [{ type: "text", text: "You are terse.", cache_control: eph }],
      tools: [
        { name: "bash", description: "Run a shell command", input_schema: tools[0]!.parameters },
        { name: "read", description: "Read a file", input_schema: tools[1]!.parameters, cache_control: eph }
      ],
      temperature: 0.2,
      stream: true,
      messages: [
        { role: "user", content: [{ type: "text", text: "fix the failing test" }] },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "I should run the tests first.", signature: "SIG-A" },
            { type: "text", text: "Running the tests." },
            { type: "tool_use", id: "toolu_1", name: "bash", input: { command: "npm test" } }
          ]
        },
        // the end of the previous step's request: read back from the cache
        {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: [{ type: "text", text: "1 failing: parse.test.ts" }],
            cache_control: eph
          }]
        },
        {
          role: "assistant",
          content: [
            { type: "redacted_thinking", data: "ENCRYPTED==" },
            { type: "thinking", thinking: "Read the test and the source.", signature: "SIG-B" },
            { type: "tool_use", id: "toolu_2", name: "read", input: { path: "parse.test.ts" } },
            { type: "tool_use", id: "toolu_3", name: "read", input: { path: 42 } }
          ]
        },
        {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: "toolu_2",
            content: [
              { type: "text", text: "it('parses ✓', …)" },
              { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }
            ]
          }]
        },
        {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: "toolu_3",
            content: [{ type: "text", text: "Invalid arguments for read:\nat [\"path\"]: Expected string, got 42" }],
            is_error: true
          }]
        },
        // the last message, which the next step extends: written to the cache
        {
          role: "user",
          content: [{ type: "text", text: "<context source=\"ide\">\nparse.ts changed on disk\n</context>", cache_control: eph }]
        }
      ]
    })
  })

  it("an image of a type the API cannot read is sent as a note, in a message or a tool result; the readable ones as images", () => {
    const messages = [
      Message.make("user", [Content.text("look"), Content.image("image/svg+xml", "PHN2Zz4="), Content.image("image/JPEG", "AA==")]),
      Message.make("assistant", [Content.toolCall(id("t1"), "shot", "{}")]),
      Message.make("user", [Content.toolResult({ toolCallId: id("t1"), content: [Content.image("image/bmp", "Qk0=")] })])
    ]
    const body = roundTrip(RequestBody.make(ModelRequest.make("m", messages), uncached)) as {
      readonly messages: ReadonlyArray<{ readonly content: ReadonlyArray<Record<string, unknown>> }>
    }
    const note = (type: string) => ({ type: "text", text: `[image (${type}) omitted: Anthropic reads JPEG, PNG, GIF and WebP images only]` })
    expect(body.messages[0]!.content).toStrictEqual([
      { type: "text", text: "look" },
      note("image/svg+xml"),
      { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "AA==" } }
    ])
    expect(body.messages[2]!.content).toStrictEqual([{ type: "tool_result", tool_use_id: "t1", content: [note("image/bmp")] }])
  })

  it("writes each tool call's argument text verbatim as its input; otherwise the bytes are JSON.stringify of make", () => {
    const body = RequestBody.encode(steps[2]!, plain)
    expect(body).toContain(`"input":{"command": "npm test"}`)
    expect(body).toContain(`"input":{"path": 42}`)
    expect(JSON.parse(body)).toStrictEqual(roundTrip(RequestBody.make(steps[2]!, plain)))
    const canonical = ModelRequest.make("m", [Message.make("assistant", [Content.toolCall(id("t"), "f", `{"a":1}`)]), Message.user("ok")])
    expect(RequestBody.encode(canonical, plain)).toBe(JSON.stringify(RequestBody.make(canonical, plain)))
  })

  it("keeps argument text the API could not take as an object readable: {} for none, wrapped otherwise", () => {
    expect(RequestBody.toolInput("")).toStrictEqual({ value: {}, text: "{}" })
    expect(RequestBody.toolInput("  \n")).toStrictEqual({ value: {}, text: "{}" })
    expect(RequestBody.toolInput(`{"n": 12345678901234567890}`).text).toBe(`{"n": 12345678901234567890}`)
    expect(RequestBody.toolInput(`{"path": "a`)).toStrictEqual({
      value: { invalid_arguments: `{"path": "a` },
      text: `{"invalid_arguments":"{\\"path\\": \\"a"}`
    })
    expect(RequestBody.toolInput(`[1, 2]`).value).toStrictEqual({ invalid_arguments: "[1, 2]" })
    expect(RequestBody.toolInput(`null`).value).toStrictEqual({ invalid_arguments: "null" })
  })

  it("the same history gives the same bytes, however its objects were built", () => {
    for (const step of steps) {
      const rebuilt = ModelRequest.make(
        step.model,
        Schema.decodeUnknownSync(Schema.Array(Message.Message))(roundTrip([...step.messages])),
        { system: step.system!, tools: roundTrip(step.tools) as ReadonlyArray<ModelRequest.ToolSchema>, temperature: 0.2 }
      )
      expect(RequestBody.encode(rebuilt, plain)).toBe(RequestBody.encode(step, plain))
      expect(RequestBody.encode(step, plain)).toBe(RequestBody.encode(step, plain))
    }
  })

  it("step k+1's body starts with step k's, once the moving breakpoints are set aside", () => {
    for (let k = 0; k + 1 < steps.length; k++) {
      const before = withoutMarkers(RequestBody.encode(steps[k]!, plain))
      const after = withoutMarkers(RequestBody.encode(steps[k + 1]!, plain))
      expect(after.startsWith(before.slice(0, -2))).toBe(true)
      // and without any breakpoint the bytes are a prefix as they are
      expect(RequestBody.encode(steps[k + 1]!, uncached).startsWith(RequestBody.encode(steps[k]!, uncached).slice(0, -2))).toBe(true)
    }
  })

  it("marks at most four blocks: the last tool, the system prompt, the previous step's end, the last message", () => {
    for (const step of steps) {
      const body = RequestBody.encode(step, plain)
      expect(body.split(`"cache_control"`).length - 1).toBeLessThanOrEqual(4)
    }
    const anchors = (k: number) =>
      RequestBody.make(steps[k]!, plain).messages.flatMap((m, i) => m.content.some((b) => "cache_control" in b) ? [i] : [])
    expect(anchors(0)).toStrictEqual([0])
    expect(anchors(1)).toStrictEqual([0, 2])
    expect(anchors(2)).toStrictEqual([2, 6])
    expect(anchors(3)).toStrictEqual([6, 8])
  })

  it("never marks thinking: a message is marked on its last block that can carry a breakpoint, else an earlier message is", () => {
    const messages = [
      Message.user("go"),
      Message.make("assistant", [Content.text("Sure."), Content.reasoning("hm", "SIG")])
    ]
    const body = RequestBody.make(ModelRequest.make("m", messages), plain)
    expect(roundTrip(body.messages)).toStrictEqual([
      { role: "user", content: [{ type: "text", text: "go", cache_control: eph }] },
      { role: "assistant", content: [{ type: "text", text: "Sure.", cache_control: eph }, { type: "thinking", thinking: "hm", signature: "SIG" }] }
    ])
    const onlyThinking = RequestBody.make(ModelRequest.make("m", [Message.user("go"), Message.make("assistant", [Content.reasoning("hm", "SIG")])]), plain)
    expect(roundTrip(onlyThinking.messages)).toStrictEqual([
      { role: "user", content: [{ type: "text", text: "go", cache_control: eph }] },
      { role: "assistant", content: [{ type: "thinking", thinking: "hm", signature: "SIG" }] }
    ])
  })

  it("one-hour breakpoints carry their ttl; with the cache off nothing is marked", () => {
    const hour = RequestBody.encode(steps[1]!, { ...plain, cache: "1h" })
    expect(hour.split(`"cache_control":{"type":"ephemeral","ttl":"1h"}`).length - 1).toBe(4)
    expect(RequestBody.encode(steps[3]!, uncached)).not.toContain("cache_control")
  })

  it("leaves out what has no wire form, and what the API refuses", () => {
    const Citation = Content.defineCustom("citation", Schema.Struct({ url: Schema.String }))
    const body = RequestBody.make(
      ModelRequest.make("m", [
        Message.make("system", [Content.text("Mid-conversation instructions.")]),
        Message.make("user", [
          Content.text(""),
          Content.text("see"),
          Citation.make({ url: "https://x.test/?a=1&b=<2>" }),
          Content.toolResult({ toolCallId: id("t1"), content: [] }),
          Content.toolCall(id("t9"), "f", "{}"),
          Blocks.RedactedThinking.make({ data: "X" })
        ]),
        // another provider's reasoning has no signature: the API would refuse it
        Message.make("assistant", [Content.reasoning("unsigned thoughts"), Content.text(""), Content.image("image/png", "AA==")]),
        Message.make("assistant", [
          Blocks.ServerBlock.make({ block: { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "q" } } }),
          Content.toolResult({ toolCallId: id("t2"), content: [Content.text("misplaced")] })
        ])
      ]),
      uncached
    )
    expect(roundTrip(body.messages)).toStrictEqual([
      { role: "user", content: [{ type: "text", text: "Mid-conversation instructions." }] },
      {
        role: "user",
        content: [
          // results first, as the API requires
          { type: "tool_result", tool_use_id: "t1" },
          { type: "text", text: "see" },
          { type: "text", text: `<custom kind="citation">{"url":"https://x.test/?a=1&b=<2>"}</custom>` }
        ]
      },
      { role: "assistant", content: [{ type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "q" } }] }
    ])
  })

  it("maps tool choice, thinking, effort, stop sequences and the request's max_tokens", () => {
    const base = (options: Omit<ModelRequest.ModelRequest, "model" | "messages">) =>
      roundTrip(RequestBody.make(ModelRequest.make("m", [Message.user("x")], options), {
        ...uncached,
        thinking: { type: "enabled", budget_tokens: 2048 },
        effort: "medium"
      })) as Record<string, unknown>
    expect(base({ toolChoice: "auto" })["tool_choice"]).toStrictEqual({ type: "auto" })
    expect(base({ toolChoice: "none" })["tool_choice"]).toStrictEqual({ type: "none" })
    expect(base({ toolChoice: "required" })["tool_choice"]).toStrictEqual({ type: "any" })
    expect(base({ toolChoice: { tool: "bash" } })["tool_choice"]).toStrictEqual({ type: "tool", name: "bash" })
    const full = base({ stop: ["###"], maxTokens: 77, system: "" })
    expect(Object.keys(full)).toStrictEqual(["model", "max_tokens", "thinking", "output_config", "stop_sequences", "stream", "messages"])
    expect(full).toMatchObject({
      max_tokens: 77,
      thinking: { type: "enabled", budget_tokens: 2048 },
      output_config: { effort: "medium" },
      stop_sequences: ["###"]
    })
  })

  it("cache anchors: the last message, and the message before the last assistant message", () => {
    const u = (text: string) => ({ role: "user" as const, content: [{ type: "text" as const, text }] })
    const a = { role: "assistant" as const, content: [{ type: "text" as const, text: "a" }] }
    const thinkingOnly = { role: "assistant" as const, content: [{ type: "thinking" as const, thinking: "t", signature: "s" }] }
    expect(RequestBody.cacheAnchors([])).toStrictEqual([])
    expect(RequestBody.cacheAnchors([u("1")])).toStrictEqual([0])
    expect(RequestBody.cacheAnchors([u("1"), a])).toStrictEqual([0, 1])
    expect(RequestBody.cacheAnchors([u("1"), a, u("2"), u("3")])).toStrictEqual([0, 3])
    expect(RequestBody.cacheAnchors([u("1"), thinkingOnly])).toStrictEqual([0])
    expect(RequestBody.cacheAnchors([a, u("2")])).toStrictEqual([1])
  })
})
