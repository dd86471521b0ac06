/**
 * Type-level guarantees, checked by `tsc` (tests are type-checked): each `@ts-expect-error`
 * line must be an error, or the type check fails.
 */
import type { Content } from "@dsh/llm"
import { Tool, ToolErrors, ToolRegistry, Tools } from "@dsh/tools"
import { describe, expectTypeOf, it } from "@effect/vitest"
import { Context, Data, Effect, Layer, type Scope, Schema } from "effect"
import { bash, type FileMissing, Files, readFile } from "./fixtures.ts"

class Clock extends Context.Service<Clock, { readonly now: Effect.Effect<string> }>()("test/Clock") {}

const now = Tool.make("now", {
  description: "The time",
  parameters: Schema.Struct({ zone: Schema.optionalKey(Schema.String) }),
  execute: ({ zone }) => Clock.use((clock) => Effect.map(clock.now, (t) => `${t} ${zone ?? "UTC"}`))
})

describe("types", () => {
  it("the body receives the decoded arguments", () => {
    Tool.make("bash", {
      description: "x",
      parameters: Schema.Struct({ command: Schema.String }),
      execute: (args) => {
        expectTypeOf(args).toEqualTypeOf<{ readonly command: string }>()
        // @ts-expect-error: no such argument
        void args.cmd
        return Effect.succeed(args.command)
      }
    })
    expectTypeOf<Tool.Args<typeof bash>>().toEqualTypeOf<{
      readonly command: string
      readonly mode: "read" | "write"
      readonly timeoutMs?: number
      readonly dryRun?: boolean
      readonly env?: ReadonlyArray<{ readonly name: string; readonly value: string }>
    }>()
  })

  it("errors and requirements are inferred from the body", () => {
    expectTypeOf(readFile).toEqualTypeOf<Tool.Tool<{ readonly path: string }, FileMissing, Files>>()
    expectTypeOf(now).toEqualTypeOf<Tool.Tool<{ readonly zone?: string }, never, Clock>>()
    expectTypeOf<Tool.Requirements<typeof readFile | typeof now | typeof bash>>().toEqualTypeOf<Files | Clock>()
    expectTypeOf<Tool.Errors<typeof readFile | typeof now>>().toEqualTypeOf<FileMissing>()
  })

  it("a body may fail only with harness errors (they carry a code)", () => {
    class NoCode extends Data.TaggedError("NoCode")<{ readonly message: string }> {}
    Tool.make("bad", {
      description: "x",
      parameters: Schema.Struct({}),
      // @ts-expect-error: a string is not a harness error
      execute: () => Effect.fail("nope")
    })
    Tool.make("bad", {
      description: "x",
      parameters: Schema.Struct({}),
      // @ts-expect-error: a tagged error without a code is not a harness error
      execute: () => Effect.fail(new NoCode({ message: "nope" }))
    })
    const ok = Tool.make("ok", {
      description: "x",
      parameters: Schema.Struct({}),
      execute: () => Effect.fail(new ToolErrors.ToolDeniedError({ tool: "ok", reason: "no", message: "no" }))
    })
    expectTypeOf<Tool.Errors<typeof ok>>().toEqualTypeOf<ToolErrors.ToolDeniedError>()
  })

  it("parameters must be a struct, and a body returns text or content blocks", () => {
    expectTypeOf<Tool.ParametersSchema>().toExtend<Schema.Struct<Schema.Struct.Fields>>()
    expectTypeOf<Tool.Output>().toEqualTypeOf<string | ReadonlyArray<Content.ToolResultContent>>()
    Tool.make("bad", {
      description: "x",
      // @ts-expect-error: a string schema is not an object of arguments
      parameters: Schema.String,
      execute: () => Effect.succeed("")
    })
    Tool.make("bad", {
      description: "x",
      parameters: Schema.Struct({}),
      // @ts-expect-error: a body returns text or content blocks
      execute: () => Effect.succeed(42)
    })
  })

  it("a raw JSON Schema tool receives JSON", () => {
    const raw = Tool.fromJsonSchema("raw", {
      description: "x",
      parameters: { type: "object" },
      execute: (args) => {
        expectTypeOf(args).toEqualTypeOf<Schema.Json>()
        return Effect.succeed("")
      }
    })
    expectTypeOf(raw).toEqualTypeOf<Tool.Tool<Schema.Json, never, never>>()
  })

  it("a tool's requirements flow into the registration and the Layer", () => {
    const registering = Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.register(readFile)
    })
    expectTypeOf(registering).toEqualTypeOf<
      Effect.Effect<void, ToolErrors.InvalidToolError | ToolErrors.DuplicateToolError, ToolRegistry | Scope.Scope | Files>
    >()
    const layer = Tools.layer(readFile, now, bash)
    expectTypeOf(layer).toEqualTypeOf<Layer.Layer<never, ToolErrors.RegistrationError, ToolRegistry | Files | Clock>>()
  })

  it("a tool may use Scope without the registering Layer requiring it (each call has its own)", () => {
    const scoped = Tool.make("scoped", {
      description: "x",
      parameters: Schema.Struct({}),
      execute: () => Effect.as(Effect.addFinalizer(() => Effect.void), "done")
    })
    expectTypeOf<Tool.Requirements<typeof scoped>>().toEqualTypeOf<Scope.Scope>()
    expectTypeOf(Tools.layer(scoped, readFile)).toEqualTypeOf<
      Layer.Layer<never, ToolErrors.RegistrationError, ToolRegistry | Files>
    >()
  })

  it("registering a tool where its service is missing does not compile", () => {
    const program = ToolRegistry.use((registry) => registry.execute({} as Content.ToolCallBlock))

    const withFiles = program.pipe(
      Effect.provide(Tools.layer(readFile).pipe(Layer.provideMerge(ToolRegistry.layer), Layer.provide(Files.layer({}))))
    )
    const runnable: Effect.Effect<Content.ToolResultBlock, ToolErrors.RegistrationError> = withFiles
    expectTypeOf(runnable).toEqualTypeOf<Effect.Effect<Content.ToolResultBlock, ToolErrors.RegistrationError>>()

    const withoutFiles = program.pipe(Effect.provide(Tools.layer(readFile).pipe(Layer.provideMerge(ToolRegistry.layer))))
    // @ts-expect-error: Files is still required, so the program cannot run
    const notRunnable: Effect.Effect<Content.ToolResultBlock, ToolErrors.RegistrationError> = withoutFiles
    expectTypeOf(withoutFiles).toEqualTypeOf<Effect.Effect<Content.ToolResultBlock, ToolErrors.RegistrationError, Files>>()
    void notRunnable
  })

  it("execute never fails and needs nothing", () => {
    expectTypeOf<ToolRegistry["Service"]["execute"]>().toEqualTypeOf<
      (call: Content.ToolCallBlock) => Effect.Effect<Content.ToolResultBlock>
    >()
  })
})
