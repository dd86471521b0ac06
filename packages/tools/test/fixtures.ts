/**
 * Tools and helpers shared by the tools tests.
 */
import { Content, HarnessError, Ids } from "@dsh/llm"
import { Tool, ToolRegistry, Tools } from "@dsh/tools"
import { Context, Effect, Layer, Schema } from "effect"

/** A tool call with a fixed id unless one is given. */
export const call = (name: string, args: string | object, id = "call-1"): Content.ToolCallBlock =>
  Content.toolCall(Ids.callId(id), name, typeof args === "string" ? args : JSON.stringify(args))

/** A representative tool: descriptions, bounds, a literal set, optional keys, nested arrays. */
export const bash = Tool.make("bash", {
  description: "Run a shell command",
  parameters: Schema.Struct({
    command: Schema.String.annotate({ description: "The command line" }),
    mode: Schema.Literals(["read", "write"]).annotate({ description: "Access mode" }),
    timeoutMs: Schema.optionalKey(
      Schema.Int.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(600_000)).annotate({
        description: "Timeout in milliseconds"
      })
    ),
    dryRun: Schema.optionalKey(Schema.Boolean),
    env: Schema.optionalKey(Schema.Array(Schema.Struct({ name: Schema.String, value: Schema.String })))
  }).annotate({ description: "Arguments of bash" }),
  execute: ({ command, mode }) => Effect.succeed(`${mode}: ${command}`)
})

/** A failure a tool body raises, with a catalog code of its own choosing. */
export class FileMissing extends Schema.TaggedError<FileMissing>()("FileMissing", {
  ...HarnessError.fields("TOOL_FAILED"),
  path: Schema.String
}) {}

/** A service a tool needs. */
export class Files extends Context.Service<Files, {
  readonly read: (path: string) => Effect.Effect<string, FileMissing>
}>()("test/Files") {
  static readonly layer = (files: Record<string, string>) =>
    Layer.succeed(Files, {
      read: (path) =>
        Object.hasOwn(files, path)
          ? Effect.succeed(files[path]!)
          : Effect.fail(new FileMissing({ path, message: `No such file: ${path}` }))
    })
}

/** A tool that requires `Files` and fails with `FileMissing`. */
export const readFile = Tool.make("read_file", {
  description: "Read a text file",
  parameters: Schema.Struct({ path: Schema.String.check(Schema.isMinLength(1)) }),
  concurrencySafe: true,
  execute: ({ path }) => Files.use((files) => files.read(path))
})

/** The registry with some tools registered (and the registry itself provided). */
export const registryWith = <const T extends ReadonlyArray<Tool.Any>>(...tools: T) =>
  Tools.layer(...tools).pipe(Layer.provideMerge(ToolRegistry.layer))
