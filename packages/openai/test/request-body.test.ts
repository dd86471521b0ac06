/**
 * Serialization with each profile's quirks: where the thinking switch, the effort, the output
 * limit and the usage request go, under which key reasoning is passed back — and, for every
 * profile, the two properties prompt caching depends on: one history always gives the same
 * bytes, and the body of step k+1 starts with the messages of step k byte for byte.
 */
import { Profile, Profiles, RequestBody } from "@dsh/openai"
import { Content, Ids, Message, ModelRequest } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"

const id = Ids.callId

const user = Message.user("fix the failing test")
const answer1 = Message.make("assistant", [
  Content.reasoning("Run the tests first."),
  Content.text("Running them."),
  Content.toolCall(id("call_1"), "bash", `{"command":"npm test"}`)
])
const result1 = Message.make("user", [Content.toolResult({ toolCallId: id("call_1"), content: [Content.text("1 failing")] })])
const answer2 = Message.make("assistant", [Content.reasoning("Read it."), Content.toolCall(id("call_2"), "read", `{"path":"a.ts"}`)])
const result2 = Message.make("user", [
  Content.toolResult({ toolCallId: id("call_2"), content: [Content.text("bad")], isError: true, error: { tag: "ToolFailedError", code: "TOOL_FAILED" } })
])
const answer3 = Message.make("assistant", [Content.reasoning("Done."), Content.text("Fixed.")])

const tools: ReadonlyArray<ModelRequest.ToolSchema> = [
  { name: "bash", description: "Run a command", parameters: { type: "object", properties: { command: { type: "string" } } } }
]
const steps = [[user], [user, answer1, result1], [user, answer1, result1, answer2, result2], [user, answer1, result1, answer2, result2, answer3, Message.user("thanks")]]
  .map((messages) => ModelRequest.make("m", messages, { system: "Be terse.", tools, maxTokens: 256, temperature: 0.1 }))

const quirksOf = (name: Profiles.Name) => Profile.resolve(Profiles.all[name]).quirks
const body = (name: Profiles.Name, settings: Omit<RequestBody.Settings, "quirks"> = { thinking: undefined, reasoningEffort: undefined }) =>
  RequestBody.make(steps[1]!, { ...settings, quirks: quirksOf(name) })

describe("RequestBody with each profile", () => {
  it("puts the thinking switch and the effort where each server reads them", () => {
    const on = { thinking: true, reasoningEffort: "high" } as const
    const off = { thinking: false, reasoningEffort: "high" } as const
    const pick = (b: object) =>
      Object.fromEntries(Object.entries(b).filter(([key]) => ["thinking", "chat_template_kwargs", "reasoning", "reasoning_effort"].includes(key)))
    expect(pick(body("deepseek", on))).toStrictEqual({ thinking: { type: "enabled" }, reasoning_effort: "high" })
    expect(pick(body("deepseek", off))).toStrictEqual({ thinking: { type: "disabled" } })
    expect(pick(body("vllm", on))).toStrictEqual({ chat_template_kwargs: { enable_thinking: true }, reasoning_effort: "high" })
    expect(pick(body("llamacpp", off))).toStrictEqual({ chat_template_kwargs: { enable_thinking: false } })
    expect(pick(body("openrouter", on))).toStrictEqual({ reasoning: { enabled: true, effort: "high" } })
    expect(pick(body("openrouter", off))).toStrictEqual({ reasoning: { enabled: false } })
    expect(pick(body("openrouter", { thinking: undefined, reasoningEffort: "low" }))).toStrictEqual({ reasoning: { effort: "low" } })
    expect(pick(body("ollama", off))).toStrictEqual({ reasoning_effort: "none" })
    expect(pick(body("ollama", on))).toStrictEqual({ reasoning_effort: "high" })
    expect(pick(body("openai", { thinking: undefined, reasoningEffort: "minimal" }))).toStrictEqual({ reasoning_effort: "minimal" })
    for (const name of Profiles.names) expect(pick(body(name)), name).toStrictEqual({})
  })

  it("sends the output limit and the usage request as each server wants them", () => {
    expect(body("openai")).toMatchObject({ max_completion_tokens: 256, stream: true, stream_options: { include_usage: true } })
    expect(body("openai")).not.toHaveProperty("max_tokens")
    expect(body("openrouter")).toMatchObject({ max_tokens: 256, stream: true })
    expect(body("openrouter")).not.toHaveProperty("stream_options")
    for (const name of ["deepseek", "ollama", "vllm", "llamacpp", "lmstudio"] as const) {
      expect(body(name), name).toMatchObject({ max_tokens: 256, stream_options: { include_usage: true } })
    }
  })

  it("passes reasoning back on tool-calling messages under the key each server reads, or not at all", () => {
    const assistant = (name: Profiles.Name, thinking?: boolean) =>
      RequestBody.message(answer1, { thinking, reasoningEffort: undefined, quirks: quirksOf(name) })[0]
    expect(assistant("deepseek")).toHaveProperty("reasoning_content", "Run the tests first.")
    expect(assistant("llamacpp")).toHaveProperty("reasoning_content", "Run the tests first.")
    expect(assistant("vllm")).toHaveProperty("reasoning", "Run the tests first.")
    expect(assistant("vllm")).not.toHaveProperty("reasoning_content")
    expect(assistant("vllm", false)).not.toHaveProperty("reasoning")
    for (const name of ["openai", "ollama", "lmstudio", "openrouter"] as const) {
      expect(Object.keys(assistant(name, true)!), name).toStrictEqual(["role", "content", "tool_calls"])
    }
    // never on a message without tool calls
    expect(RequestBody.message(answer3, { thinking: true, reasoningEffort: undefined, quirks: quirksOf("vllm") })).toStrictEqual([
      { role: "assistant", content: "Fixed." }
    ])
  })

  for (const name of Profiles.names) {
    it(`${name}: the same history gives the same bytes, and step k+1 starts with step k's messages`, () => {
      for (const thinking of [undefined, true, false]) {
        const settings: RequestBody.Settings = { thinking, reasoningEffort: undefined, quirks: quirksOf(name) }
        const codec = Schema.toCodecJson(ModelRequest.ModelRequest)
        for (let k = 0; k < steps.length; k++) {
          const once = RequestBody.encode(steps[k]!, settings)
          const decoded = Schema.decodeUnknownSync(codec)(JSON.parse(JSON.stringify(Schema.encodeSync(codec)(steps[k]!))))
          expect(RequestBody.encode(decoded, settings)).toBe(once)
          if (k + 1 === steps.length) continue
          const prefix = `{"model":"m","messages":${JSON.stringify(RequestBody.messages(steps[k]!, settings)).slice(0, -1)}`
          const next = RequestBody.encode(steps[k + 1]!, settings)
          expect(once.startsWith(prefix)).toBe(true)
          expect(next.startsWith(prefix)).toBe(true)
          expect(next.charAt(prefix.length)).toBe(",")
        }
      }
    })
  }
})

describe("RequestBody: tool-call arguments", () => {
  it("are sent as written when they are a JSON object; none as {}; text that is no object wrapped, so no server refuses the history", () => {
    const quirks = quirksOf("vllm")
    const argumentsOf = (args: string) => {
      const wire = RequestBody.message(Message.make("assistant", [Content.toolCall(id("c"), "run", args)]), {
        thinking: undefined,
        reasoningEffort: undefined,
        quirks
      })[0] as { readonly tool_calls: ReadonlyArray<{ readonly function: { readonly arguments: string } }> }
      return wire.tool_calls[0]!.function.arguments
    }
    // the model's bytes, number precision included
    expect(argumentsOf(`{"x": 1.00000000000000001}`)).toBe(`{"x": 1.00000000000000001}`)
    expect(argumentsOf("")).toBe("{}")
    // cut off by the token limit
    expect(argumentsOf(`{"x":7`)).toBe(JSON.stringify({ invalid_arguments: `{"x":7` }))
    expect(argumentsOf("[1, 2]")).toBe(JSON.stringify({ invalid_arguments: "[1, 2]" }))
  })
})
