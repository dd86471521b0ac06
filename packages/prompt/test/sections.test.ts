/**
 * Sections from outside the types (a config, a plugin, JavaScript): a section that is no
 * `{ name, content }` is that section's `PromptSectionError` at assembly, like content that is
 * neither a string nor an Effect, never a defect of the assembly or of `addSection`.
 */
import { type Section, SystemPrompt } from "@dsh/prompt"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"

const context = { agentId: "a", sessionId: "s", turn: 1, step: 1 }

const assembleWith = (section: unknown) =>
  Effect.gen(function*() {
    const prompt = yield* SystemPrompt
    // the scope is open: a refusal would be this test's bug
    yield* Effect.orDie(prompt.addSection({ name: "rules", content: "Be brief." }))
    yield* Effect.orDie(prompt.addSection(section as Section))
    return yield* prompt.assemble({ tools: [], context })
  }).pipe(Effect.scoped, Effect.provide(SystemPrompt.layer))

describe("SystemPrompt sections past the types", () => {
  it.effect("a section that is no object, or has no name, is PROMPT_SECTION saying so", () =>
    Effect.gen(function*() {
      for (const [section, said] of [
        [null, "it is null, not a section { name, content }"],
        ["Be nice.", `it is "Be nice.", not a section { name, content }`],
        [{ content: "x" }, "its name is undefined, not a string"],
        [{ name: 7, content: "x", order: "first" }, "its name is 7, not a string"]
      ] as const) {
        const failed = yield* Effect.flip(assembleWith(section))
        expect(failed).toMatchObject({ _tag: "PromptSectionError", code: "PROMPT_SECTION" })
        expect(failed.message).toContain(said)
        expect(typeof failed.section).toBe("string")
      }
    }))

  it.effect("a section whose content getter throws is PROMPT_SECTION naming it, not a defect", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.flip(assembleWith({
        name: "lazy",
        get content(): string {
          throw new Error("not loaded")
        }
      }))
      expect(failed).toMatchObject({ _tag: "PromptSectionError", code: "PROMPT_SECTION", section: "lazy" })
      expect(failed.message).toBe(`prompt section "lazy" failed: reading its content threw: not loaded`)
    }))

  it.effect("a section with an order that is no number keeps registration order; the rest assembles", () =>
    Effect.gen(function*() {
      const assembly = yield* assembleWith({ name: "late", content: "Then this.", order: Number.NaN })
      expect(assembly.system).toBe("Be brief.\n\nThen this.")
    }))
})
