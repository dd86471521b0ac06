/**
 * The command's one-line renderings that the process tests only see in passing: usage with
 * its cost at the model's registry prices, and compactions.
 */
import { describe, expect, it } from "@effect/vitest"
import { Usage } from "@dsh/llm"
import { Profiles } from "@dsh/openai"
import * as Render from "../src/cli/Render.ts"

const flash = Profiles.deepseek.models!.find((m) => m.name === "deepseek-v4-flash")!.pricing!

describe("Render.usage", () => {
  it("without pricing: tokens only", () => {
    expect(Render.usage(Usage.make({ inputTokens: 1_200, cacheReadTokens: 800, outputTokens: 56 }))).toBe(
      "in 2,000 (cache hit 800) · out 56"
    )
  })

  it("with the model's pricing: the cost, each kind of token at its own price", () => {
    // 1M fresh input at 0.14, 1M cache reads at 0.0028, 1M output at 0.28
    const million = Usage.make({ inputTokens: 1_000_000, cacheReadTokens: 1_000_000, outputTokens: 1_000_000 })
    expect(Render.usage(million, flash)).toBe("in 2,000,000 (cache hit 1,000,000) · out 1,000,000 · $0.4228")
    expect(Render.usage(Usage.make({ inputTokens: 20_000_000, outputTokens: 1_000_000 }), flash)).toMatch(/ · \$3\.08$/)
    expect(Render.usage(Usage.make({ inputTokens: 10, outputTokens: 3 }), flash)).toMatch(/ · <\$0\.0001$/)
    expect(Render.usage(Usage.empty, flash)).toMatch(/ · \$0$/)
  })
})
