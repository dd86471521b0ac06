import { PromptConversion, ReasoningMetadata } from "@dsh/effect-ai"
import { Content, History, Ids, Message, type ModelRequest } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import { Prompt, Tool } from "effect/ai"

const encode = Schema.encodeSync(Prompt.Prompt)

/**
 * A prompt as plain JSON, without the empty `options` every part and message carries (the
 * encoding writes a message holding one text part as a string).
 */
const plain = (prompt: Prompt.Prompt): unknown =>
  JSON.parse(JSON.stringify(encode(prompt), (key, value) =>
    key === "options" && typeof value === "object" && value !== null && Object.keys(value).length === 0
      ? undefined
      : value)).content

/** Converts a system prompt and messages (made a History, as in a request). */
const convert = (
  request: { readonly system?: string; readonly messages: Iterable<Message.Message> },
  options?: PromptConversion.Options
): unknown => {
  const result = PromptConversion.toPrompt({ ...request, messages: History.fromIterable(request.messages) }, options)
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return plain(result.success)
}

const PNG = "iVBORw0KGgo=" // 8 bytes
const png = (data = PNG) => Content.image("image/png", data)
const file = (data = PNG) => ({ type: "file", mediaType: "image/png", data: { _tag: "Uint8Array", base64: data } })
const callId = Ids.callId
const Citation = Content.defineCustom("citation", Schema.Struct({ url: Schema.String }))
const renderCitations: PromptConversion.Options = {
  customBlock: (block, place) => {
    const data = Citation.decode(block)
    return data === undefined ? [] : [Prompt.textPart({ text: `[${place}: ${data.url}]` })]
  }
}

describe("request → effect/ai Prompt", () => {
  it("a customBlock that throws, or renders no list of text or file parts, is LLM_INVALID_REQUEST naming the block's kind", () => {
    const refusal = (customBlock: NonNullable<PromptConversion.Options["customBlock"]>) => {
      const result = PromptConversion.toPrompt({ messages: History.fromIterable([Message.make("user", [Citation.make({ url: "u" })])]) }, { customBlock })
      return Result.isFailure(result) ? result.failure : undefined
    }
    const threw = refusal(() => {
      throw new Error("no renderer")
    })
    expect(threw?.code).toBe("LLM_INVALID_REQUEST")
    expect(threw?.message).toBe(`the customBlock option threw for a custom block of kind "citation": no renderer`)
    for (const parts of [undefined, "text", [Prompt.toolCallPart({ id: "x", name: "n", params: {}, providerExecuted: false })]]) {
      const wrong = refusal(() => parts as never)
      expect(wrong?.code).toBe("LLM_INVALID_REQUEST")
      expect(wrong?.message).toContain(`the customBlock option must return a list of text or file parts (Prompt.textPart, Prompt.filePart) for a custom block of kind "citation"`)
    }
  })

  it("system prompt first, then system messages at their position (text only)", () => {
    expect(convert({
      system: "You are terse.",
      messages: [
        Message.user("hi"),
        Message.make("system", [Content.text("Mind "), png(), Content.text("the budget."), Citation.make({ url: "u" })])
      ]
    }, renderCitations)).toStrictEqual([
      { role: "system", content: "You are terse." },
      { role: "user", content: "hi" },
      { role: "system", content: "Mind the budget.[system: u]" }
    ])
  })

  it("no system message for an absent or empty system prompt", () => {
    expect(convert({ system: "", messages: [Message.user("hi")] })).toStrictEqual([{ role: "user", content: "hi" }])
  })

  it("user text and images (as bytes); custom blocks dropped unless rendered", () => {
    const messages = [Message.make("user", [Content.text("what is this?"), png(), Citation.make({ url: "https://x" })])]
    expect(convert({ messages })).toStrictEqual([
      { role: "user", content: [{ type: "text", text: "what is this?" }, file()] }
    ])
    expect(convert({ messages }, renderCitations)).toStrictEqual([
      { role: "user", content: [{ type: "text", text: "what is this?" }, file(), { type: "text", text: "[user: https://x]" }] }
    ])
  })

  it("assistant text, reasoning, tool calls with parsed arguments, images; custom dropped", () => {
    expect(convert({
      messages: [
        Message.make("assistant", [
          Content.reasoning("Let me think."),
          Content.text("Running it."),
          Content.toolCall(callId("c1"), "bash", "{\"command\": \"ls\", \"n\": 1.5}"),
          Content.toolCall(callId("c2"), "now", ""),
          Content.toolCall(callId("c3"), "broken", "{\"command\": \"ls"),
          png(),
          Citation.make({ url: "u" })
        ])
      ]
    })).toStrictEqual([
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "Let me think." },
          { type: "text", text: "Running it." },
          { type: "tool-call", id: "c1", name: "bash", params: { command: "ls", n: 1.5 }, providerExecuted: false },
          { type: "tool-call", id: "c2", name: "now", params: {}, providerExecuted: false },
          // not JSON: sent as the raw text, so the model sees what it wrote
          { type: "tool-call", id: "c3", name: "broken", params: "{\"command\": \"ls", providerExecuted: false },
          file()
        ]
      }
    ])
  })

  it("a reasoning signature written by the bridge becomes the part's provider options again; others are ignored", () => {
    const ours = ReasoningMetadata.toSignature({ anthropic: { signature: "sig-1" } })!
    expect(convert({
      messages: [Message.make("assistant", [Content.reasoning("a", ours), Content.reasoning("b", "opaque-deepseek-token")])]
    })).toStrictEqual([
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "a", options: { anthropic: { signature: "sig-1" } } },
          { type: "reasoning", text: "b" }
        ]
      }
    ])
  })

  it("tool results become tool messages, splitting a user message where the kind changes, named after their calls", () => {
    expect(convert({
      messages: [
        Message.make("assistant", [
          Content.toolCall(callId("c1"), "bash", "{}"),
          Content.toolCall(callId("c2"), "read", "{}")
        ]),
        Message.make("user", [
          Content.text("before"),
          Content.toolResult({ toolCallId: callId("c1"), content: [Content.text("file.txt")] }),
          Content.toolResult({
            toolCallId: callId("c2"),
            content: [Content.text("ENOENT")],
            isError: true,
            error: { tag: "ToolFailedError", code: "TOOL_FAILED" }
          }),
          Content.text("after"),
          Content.toolResult({ toolCallId: callId("gone"), content: [] })
        ])
      ]
    })).toStrictEqual([
      {
        role: "assistant",
        content: [
          { type: "tool-call", id: "c1", name: "bash", params: {}, providerExecuted: false },
          { type: "tool-call", id: "c2", name: "read", params: {}, providerExecuted: false }
        ]
      },
      { role: "user", content: "before" },
      {
        role: "tool",
        content: [
          { type: "tool-result", id: "c1", name: "bash", isFailure: false, result: "file.txt", providerExecuted: false },
          { type: "tool-result", id: "c2", name: "read", isFailure: true, result: "ENOENT", providerExecuted: false }
        ]
      },
      { role: "user", content: "after" },
      {
        role: "tool",
        content: [
          { type: "tool-result", id: "gone", name: PromptConversion.unknownToolName, isFailure: false, result: "", providerExecuted: false }
        ]
      }
    ])
  })

  it("consecutive tool results share one tool message, also across the one-result messages dsh derives", () => {
    const result = (id: string) => Message.make("user", [Content.toolResult({ toolCallId: callId(id), content: [Content.text(id)] })])
    expect(convert({
      messages: [
        Message.make("assistant", [Content.toolCall(callId("a"), "bash", "{}"), Content.toolCall(callId("b"), "bash", "{}")]),
        result("a"),
        result("b"),
        Message.user("next"),
        result("c")
      ]
    })).toStrictEqual([
      {
        role: "assistant",
        content: [
          { type: "tool-call", id: "a", name: "bash", params: {}, providerExecuted: false },
          { type: "tool-call", id: "b", name: "bash", params: {}, providerExecuted: false }
        ]
      },
      {
        role: "tool",
        content: [
          { type: "tool-result", id: "a", name: "bash", isFailure: false, result: "a", providerExecuted: false },
          { type: "tool-result", id: "b", name: "bash", isFailure: false, result: "b", providerExecuted: false }
        ]
      },
      { role: "user", content: "next" },
      {
        role: "tool",
        content: [
          { type: "tool-result", id: "c", name: PromptConversion.unknownToolName, isFailure: false, result: "c", providerExecuted: false }
        ]
      }
    ])
  })

  it("a tool result holding images: its text as `result`, its whole content as `modelOutput`", () => {
    expect(convert({
      messages: [
        Message.make("user", [
          Content.toolResult({
            toolCallId: callId("c1"),
            content: [Content.text("screenshot:"), png(), Citation.make({ url: "u" })]
          })
        ])
      ]
    }, renderCitations)).toStrictEqual([
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            id: "c1",
            name: PromptConversion.unknownToolName,
            isFailure: false,
            result: "screenshot:\n[image/png omitted]\n[tool-result: u]",
            modelOutput: [
              { type: "text", text: "screenshot:" },
              file(),
              { type: "text", text: "[tool-result: u]" }
            ],
            providerExecuted: false
          }
        ]
      }
    ])
  })

  it("blocks with no place in their message are dropped, and so are messages left empty", () => {
    expect(convert({
      messages: [
        Message.make("user", [Content.reasoning("users do not reason here"), Content.toolCall(callId("x"), "bash", "{}")]),
        Message.make("assistant", [Content.toolResult({ toolCallId: callId("x"), content: [Content.text("?")] })]),
        Message.make("system", [png()]),
        Message.make("user", [Citation.make({ url: "dropped without a renderer" })]),
        Message.user("kept")
      ]
    })).toStrictEqual([{ role: "user", content: "kept" }])
  })

  it("an image that is not base64 fails with LlmInvalidRequestError naming where it is", () => {
    const result = PromptConversion.toPrompt({
      messages: History.make(Message.user("a"), Message.make("user", [png("not base64!")]))
    })
    const failure = Result.isFailure(result) ? result.failure : undefined
    expect(failure?._tag).toBe("LlmInvalidRequestError")
    expect(failure?.message).toMatch(/^the image in block 0 of message 1 is not valid base64/)
  })

  it("parses arguments leniently", () => {
    expect(PromptConversion.parseArguments("  ")).toStrictEqual({})
    expect(PromptConversion.parseArguments("[1]")).toStrictEqual([1])
    expect(PromptConversion.parseArguments("{\"__proto__\": {\"x\": 1}}")).toBe("{\"__proto__\": {\"x\": 1}}")
  })
})

describe("tools", () => {
  const bash: ModelRequest.ToolSchema = {
    name: "bash",
    description: "Run a command",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] }
  }

  it("become handler-less dynamic tools carrying their JSON Schema; strict only when asked for", () => {
    const toolkit = PromptConversion.toToolkit([bash, { ...bash, name: "strict_bash", strict: true }])
    const tools = Object.values(toolkit.tools)
    expect(tools.map((t) => [t.name, Tool.getDescription(t), Tool.getJsonSchema(t), Tool.getStrictMode(t)])).toStrictEqual([
      ["bash", "Run a command", bash.parameters, false],
      ["strict_bash", "Run a command", bash.parameters, true]
    ])
    expect(tools.every(Tool.isDynamic)).toBe(true)
  })

  it("tool choices map one to one", () => {
    expect((["auto", "none", "required", { tool: "bash" }] as const).map(PromptConversion.toToolChoice)).toStrictEqual([
      "auto",
      "none",
      "required",
      { tool: "bash" }
    ])
  })
})
