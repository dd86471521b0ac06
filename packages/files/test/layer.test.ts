import { Files } from "@dsh/files"
import { Tool, ToolRegistry, Tools } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Schema } from "effect"
import { join } from "node:path"
import { execute, filesLayer, populate, tempDir, textOf } from "./fixtures.ts"

const buildFails = (root: string) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Effect.provide(Effect.void, filesLayer(root)))
    if (!Exit.isFailure(exit)) throw new Error("the Layer was built")
    return exit.cause.reasons.flatMap((r) => (r._tag === "Fail" ? [r.error] : []))
  })

describe("Files.layer", () => {
  it.effect("registers the six tools, with their descriptions and parameters, for its lifetime", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const schemas = yield* ToolRegistry.use((registry) => registry.schemas()).pipe(Effect.provide(filesLayer(root)))
      expect(schemas.map((s) => s.name)).toStrictEqual(["read", "write", "edit", "list", "glob", "search"])
      expect(Files.toolNames).toStrictEqual(["read", "write", "edit", "list", "glob", "search"])
      const read = schemas[0]!
      expect(read.description).toContain("numbered lines")
      expect(read.parameters).toStrictEqual({
        type: "object",
        properties: {
          path: { type: "string", description: "The file to read: relative to the workspace root, or absolute inside it" },
          offset: {
            type: "integer",
            minimum: 1,
            maximum: 1_000_000_000,
            description: "The first line to show, from 1 (default: 1)"
          },
          limit: {
            type: "integer",
            minimum: 1,
            maximum: 1_000_000,
            description: "How many lines to show (default: to the end of the file)"
          }
        },
        required: ["path"],
        additionalProperties: false
      })
      const edit = schemas[2]!
      expect(edit.parameters["required"]).toStrictEqual(["path", "old", "new"])
    }).pipe(Effect.scoped))

  it.effect("registers only the tools asked for: a read-only set", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "a.txt": "x" })
      yield* Effect.gen(function*() {
        expect(yield* ToolRegistry.use((r) => r.names)).toStrictEqual(["read", "list", "glob", "search"])
        expect(textOf(yield* execute("write", { path: "b.txt", content: "x" }))).toContain(`Unknown tool "write"`)
      }).pipe(Effect.provide(filesLayer(root, { tools: Files.readOnlyToolNames })))
    }).pipe(Effect.scoped))

  it.effect("a root that does not exist, or is a file, fails the Layer with FILE_NOT_FOUND or FILE_IO", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "file.txt": "x" })
      const [missing] = yield* buildFails(join(root, "nope"))
      expect(missing).toMatchObject({
        _tag: "FileNotFoundError",
        code: "FILE_NOT_FOUND",
        path: join(root, "nope"),
        message: `The workspace root ${JSON.stringify(join(root, "nope"))} does not exist`
      })
      const [file] = yield* buildFails(join(root, "file.txt"))
      expect(file).toMatchObject({
        _tag: "FileIoError",
        code: "FILE_IO",
        systemCode: "ENOTDIR",
        message: `The workspace root ${JSON.stringify(join(root, "file.txt"))} is not a directory`
      })
    }).pipe(Effect.scoped))

  it.effect("a tool name already taken fails the Layer with DUPLICATE_TOOL", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const mine = Tool.make("read", {
        description: "another read",
        parameters: Schema.Struct({}),
        execute: () => Effect.succeed("mine")
      })
      const exit = yield* Effect.exit(
        Effect.provide(Effect.void, Files.layer({ root }).pipe(Layer.provideMerge(Tools.layer(mine)), Layer.provideMerge(ToolRegistry.layer)))
      )
      expect(Exit.isFailure(exit) && exit.cause.reasons.some((r) => r._tag === "Fail" && r.error.code === "DUPLICATE_TOOL"))
        .toBe(true)
    }).pipe(Effect.scoped))
})
