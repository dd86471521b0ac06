/**
 * `Dsh.layer` and `Dsh.agent` given options of other shapes than their types say (from
 * JavaScript or a config file): each is refused with a typed error naming it — a tools entry
 * that is no tool `INVALID_TOOL`, sessions that name no store `PERSISTENCE`, the rest
 * `INVALID_INPUT` — before anything is built; never a defect.
 */
import { Dsh, type HarnessError, ScriptedModel, Tool } from "dsh"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"

const model = ScriptedModel.layer({ script: [ScriptedModel.reply.text("ok")] })
const echo = Tool.make("echo", {
  description: "Echoes",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: ({ text }) => Effect.succeed(text)
})

// the options as JavaScript would give them: the Layer is typed for what it fails with here
const buildWith = (options: Record<string, unknown> | null) => {
  const live = Dsh.layer((options === null ? null : { model, ...options }) as never) as unknown as Layer.Layer<never, HarnessError.HarnessError>
  return Effect.flip(Effect.scoped(Layer.build(live)))
}

describe("Dsh.layer options past the types", () => {
  it.effect("a tools entry that is no tool, or tools that are no list: INVALID_TOOL naming it", () =>
    Effect.gen(function*() {
      for (const [tools, where] of [[[echo, null], "tools[1]"], [[{}], "tools[0]"], ["echo", "tools"]] as const) {
        const failed = yield* buildWith({ tools })
        expect(failed).toMatchObject({ _tag: "InvalidToolError", code: "INVALID_TOOL", tool: where })
      }
    }))

  it.effect("sessions that name no store: PERSISTENCE", () =>
    Effect.gen(function*() {
      for (const sessions of ["disk", 42, {}]) {
        const failed = yield* buildWith({ sessions })
        expect(failed).toMatchObject({ _tag: "PersistenceError", code: "PERSISTENCE" })
        expect(failed.message).toContain(`sessions must be "memory", { directory } or a Layer`)
      }
    }))

  it.effect("a prompt, hooks, tool middleware or model of another shape: one INVALID_INPUT naming each", () =>
    Effect.gen(function*() {
      const failed = yield* buildWith({
        prompt: "Be brief.",
        hooks: { request: [{}], requests: [] },
        toolMiddleware: {}
      })
      expect(failed).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
      expect(failed.message).toContain(`prompt must be a list, got "Be brief." (the agent's own prompt is Dsh.agent({ prompt }))`)
      expect(failed.message).toContain("hooks.request[0] must be a middleware { name, around }")
      expect(failed.message).toContain("hooks.requests is not an agent seam")
      expect(failed.message).toContain("toolMiddleware must be a list")
      // a section is { name, content }: one without content would fail every turn's assembly
      const noContent = yield* buildWith({ prompt: [{ name: "rules" }, { name: "date", content: 5 }] })
      expect(noContent.message).toContain(`prompt[0] must be a section { name, content }, got {"name":"rules"}`)
      expect(noContent.message).toContain(`prompt[1] must be a section { name, content }, got {"name":"date","content":5}`)
      const yes = yield* buildWith({ invariants: "yes" })
      expect(yes.message).toContain(`invariants must be true or false, got "yes"`)
      const noModel = yield* buildWith({ model: "deepseek" })
      expect(noModel.message).toContain(`model must be an adapter Layer`)
      // a misspelt key would be dropped, its default kept: `session` leaves the sessions in memory
      const misspelt = yield* buildWith({ session: { directory: "sessions" }, tool: [echo] })
      expect(misspelt).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
      expect(misspelt.message).toContain(
        `the options object has "session", "tool", which are no options (known: model, tools, sessions, prompt, hooks, toolMiddleware, invariants)`
      )
      const noOptions = yield* buildWith(null)
      expect(noOptions).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
    }))

  it.effect("options of the documented shapes still build", () =>
    Effect.gen(function*() {
      const agent = yield* Dsh.agent()
      expect((yield* agent.run("hi")).text).toBe("ok")
    }).pipe(
      Effect.scoped,
      Effect.provide(Dsh.layer({
        model,
        tools: [echo],
        sessions: "memory",
        prompt: [{ name: "rules", content: "Be brief." }, { name: "today", content: Effect.succeed("It is Friday.") }],
        hooks: { listeners: [{ name: "quiet", around: (input, next) => next(input) }] },
        toolMiddleware: [{ name: "pass", around: (call, next) => next(call) }]
      }))
    ))
})

describe("Dsh.agent options past the types", () => {
  it.effect("options that are no object: INVALID_INPUT, not a defect", () =>
    Effect.gen(function*() {
      for (const options of [null, "scripted", []]) {
        const failed = yield* Effect.flip(Dsh.agent(options as never))
        expect(failed).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
        expect(failed.message).toContain("its options must be an object")
      }
    }).pipe(Effect.scoped, Effect.provide(Dsh.layer({ model }))))

  it.effect("a key that is no option, or providerOptions that are no object: INVALID_INPUT naming it, no agent", () =>
    Effect.gen(function*() {
      const misspelt = yield* Effect.flip(Dsh.agent({ maxStep: 1, tools: [echo] } as never))
      expect(misspelt).toMatchObject({ _tag: "InvalidInputError", code: "INVALID_INPUT" })
      expect(misspelt.message).toContain(`the options object has "maxStep", "tools", which are no options (known: model, id, prompt, session,`)
      const session = yield* Effect.flip(Dsh.agent({ session: { id: "s", seeds: [] } } as never))
      expect(session.message).toContain(`session has "seeds", which is no option (known: id, seed, fork, through, resume)`)
      for (const providerOptions of ["x", [], { openai: 10n }]) {
        const refused = yield* Effect.flip(Dsh.agent({ providerOptions } as never))
        expect(refused.message).toContain("providerOptions must be an object of JSON values by provider name")
      }
      const agent = yield* Dsh.agent({ providerOptions: { openai: { seed: 1 } }, session: { id: "kept" } })
      expect((yield* agent.run("hi")).text).toBe("ok")
    }).pipe(Effect.scoped, Effect.provide(Dsh.layer({ model }))))
})
