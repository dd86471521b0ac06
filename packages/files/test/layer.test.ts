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

  it.effect("options the tools cannot work with fail the Layer with INVALID_TOOL, naming each option", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const refused = (options: Record<string, unknown>) =>
        Effect.gen(function*() {
          const exit = yield* Effect.exit(
            Effect.provide(Effect.void, Files.layer({ root, ...options } as Files.Options).pipe(Layer.provideMerge(ToolRegistry.layer)))
          )
          if (!Exit.isFailure(exit)) throw new Error("the Layer was built")
          // a typed failure, not a defect
          const [error, ...rest] = exit.cause.reasons.flatMap((r) => (r._tag === "Fail" ? [r.error] : []))
          expect(rest).toStrictEqual([])
          expect(error).toMatchObject({ _tag: "InvalidToolError", code: "INVALID_TOOL", reason: "options" })
          return error!.message
        })
      // an unknown tool name was a TypeError inside the registry
      expect(yield* refused({ tools: ["read", "grep"] })).toBe(
        "The file tools' options are invalid (1 problem):\n" +
          "- tools[1] is \"grep\", which is not a file tool (read, write, edit, list, glob, search)"
      )
      // bounds that are no integer of at least 1 were replaced by the defaults without a word
      for (const [options, named] of [
        [{ maxReadBytes: 0 }, "maxReadBytes must be an integer of at least 1, got 0"],
        [{ maxEditBytes: -1 }, "maxEditBytes must be an integer of at least 1, got -1"],
        [{ maxSearchFileBytes: Number.NaN }, "maxSearchFileBytes must be an integer of at least 1, got NaN"],
        [{ maxLineLength: 0.5 }, "maxLineLength must be an integer of at least 1, got 0.5"],
        [{ maxWalkEntries: "10" }, "maxWalkEntries must be an integer of at least 1, got \"10\""],
        // a malformed ignore pattern would have ignored nothing; one that is not text was a TypeError
        [{ ignore: ["dist", "[abc"] }, "ignore[1] (\"[abc\"): the \"[\" at character 1 opens a set"],
        [{ ignore: [5] }, "ignore[0] (5): must be a non-empty glob pattern"],
        [{ maxReadByte: 10 }, "maxReadByte is not an option of the file tools (root, tools, ignore, maxReadBytes,"],
        [{ root: undefined }, "root must be the workspace directory's path, got undefined"],
        [{ root: "" }, "root must be the workspace directory's path, got \"\""],
        [{ root: "  " }, "root must be the workspace directory's path, got \"  \""]
      ] as const) {
        expect(yield* refused(options)).toContain(named)
      }
      // every problem at once
      expect(yield* refused({ maxReadBytes: 0, tools: ["nope"] })).toMatch(/\(2 problems\):\n- tools\[0\].*\n- maxReadBytes/)
      // valid bounds build
      yield* Effect.provide(Effect.void, filesLayer(root, { maxReadBytes: 1, maxWalkEntries: 1, ignore: [] }))
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
