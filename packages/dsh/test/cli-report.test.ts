/**
 * What the command tells a user about an API key: the adapter's advice to a program (`pass
 * apiKey: Redacted.make(key) to X.layer`) is left out, and the hint says where the command
 * reads the key instead.
 */
import { DeepSeekError } from "@dsh/deepseek"
import { LlmError } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import * as Report from "../src/cli/Report.ts"

const advice = "Set the DEEPSEEK_API_KEY environment variable, or pass `apiKey: Redacted.make(key)` to DeepSeek.layer."
const context = { configFile: "/home/you/.config/dsh/config.json" }

describe("Report.of for a key the provider refused or the command cannot use", () => {
  it("LLM_AUTH: the provider's words, then where the command reads the key", () => {
    const report = Report.of(new LlmError.LlmAuthError({ message: `DeepSeek rejected the API key (HTTP 401): bad key. ${advice}` }), context)
    expect(Report.render(report)).toBe(
      "dsh: LLM_AUTH: DeepSeek rejected the API key (HTTP 401): bad key.\n" +
        `  the provider refused the API key: check DEEPSEEK_API_KEY (or "deepseek": { "apiKey" } in ${context.configFile})\n`
    )
  })

  it("LLM_CONFIG of the key setting: the problem, then where the command reads the key", () => {
    const unusable = new DeepSeekError.DeepSeekConfigError({
      setting: "apiKey",
      message: `The DeepSeek API key holds a character an HTTP header cannot carry. ${advice}`
    })
    expect(Report.render(Report.of(unusable, context))).toBe(
      "dsh: LLM_CONFIG: The DeepSeek API key holds a character an HTTP header cannot carry.\n" +
        `  check DEEPSEEK_API_KEY (or "deepseek": { "apiKey" } in ${context.configFile})\n`
    )
    // the command's own missing-key message holds no library advice: it stays whole, with no hint
    const missing = new DeepSeekError.DeepSeekConfigError({ setting: "apiKey", message: "No DeepSeek API key is configured. Set …" })
    expect(Report.of(missing, context)).toMatchObject({ message: "No DeepSeek API key is configured. Set …", hint: undefined, status: 2 })
  })
})
