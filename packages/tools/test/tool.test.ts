import { Tool, ToolArgs, ToolErrors } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option, Result, Schema } from "effect"
import { bash, readFile } from "./fixtures.ts"

const wire = (tool: Tool.Any, strict = false) => Result.getOrThrow(Tool.wireSchema(tool, { strict }))
const refusal = (tool: Tool.Any) => {
  const result = Tool.wireSchema(tool)
  if (Result.isSuccess(result)) throw new Error(`expected ${tool.name} to be refused`)
  return result.failure
}

// The parameters of `bash` as the model sees them, minus `additionalProperties`.
const bashProperties = {
  command: { type: "string", description: "The command line" },
  mode: { type: "string", enum: ["read", "write"], description: "Access mode" },
  timeoutMs: { type: "integer", maximum: 600000, exclusiveMinimum: 0, description: "Timeout in milliseconds" },
  dryRun: { type: "boolean" }
}

const Point = Schema.Struct({ x: Schema.Finite, y: Schema.Finite }).annotate({
  identifier: "Point",
  description: "A point"
})

const draw = Tool.make("draw", {
  description: "Draw a polyline",
  excessKeys: "ignore",
  parameters: Schema.Struct({
    points: Schema.Array(Point).check(Schema.isMinLength(1)),
    color: Schema.optionalKey(Schema.Literal("red")),
    label: Schema.String.check(Schema.isMaxLength(20))
  }),
  execute: () => Effect.succeed("drawn")
})

const now = Tool.make("now", {
  description: "The current time",
  parameters: Schema.Struct({}),
  execute: () => Effect.succeed("noon")
})

const mcpSearch = Tool.fromJsonSchema("mcp__search", {
  description: "Search the web",
  parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
  execute: (args) => Effect.succeed(JSON.stringify(args))
})

describe("Tool.make", () => {
  it("keeps the definition and its defaults", () => {
    expect(bash.name).toBe("bash")
    expect(bash.description).toBe("Run a shell command")
    expect(bash.concurrencySafe).toBe(false)
    expect(bash.timeout).toStrictEqual(Option.none())
    expect(bash.parameters._tag).toBe("Schema")
    expect(bash.parameters._tag === "Schema" && bash.parameters.excessKeys).toBe("reject")
    expect(Tool.isTool(bash)).toBe(true)
    expect(Tool.isTool({ name: "bash" })).toBe(false)
  })

  it("takes the options the loop reads", () => {
    const slow = Tool.make("slow", {
      description: "Slow",
      parameters: Schema.Struct({}),
      concurrencySafe: true,
      timeout: "90 seconds",
      execute: () => Effect.succeed("done")
    })
    expect(slow.concurrencySafe).toBe(true)
    expect(Option.map(slow.timeout, Duration.toMillis)).toStrictEqual(Option.some(90_000))
    expect(readFile.concurrencySafe).toBe(true)
    expect(draw.parameters._tag === "Schema" && draw.parameters.excessKeys).toBe("ignore")
  })
})

describe("Tool.wireSchema", () => {
  it("generates the parameters from the Schema: plain, inlined, descriptions kept, optional keys not required", () => {
    expect(wire(bash)).toStrictEqual({
      name: "bash",
      description: "Run a shell command",
      parameters: {
        type: "object",
        properties: {
          ...bashProperties,
          env: {
            type: "array",
            items: {
              type: "object",
              properties: { name: { type: "string" }, value: { type: "string" } },
              required: ["name", "value"],
              additionalProperties: false
            }
          }
        },
        required: ["command", "mode"],
        // bash rejects excess keys (the default), and its schema says so
        additionalProperties: false,
        description: "Arguments of bash"
      }
    })
  })

  it("the strict variant of a rejecting tool whose every key is required differs only by the strict flag", () => {
    const move = Tool.make("move", {
      description: "Move to a point",
      parameters: Schema.Struct({ to: Point, speed: Schema.Literals(["slow", "fast"]) }),
      execute: () => Effect.succeed("moved")
    })
    expect(wire(move, true)).toStrictEqual({ ...wire(move), strict: true })
  })

  it("a tool with an optional key, a record or rest keys is sent closed but not strict: strict mode wants every property required", () => {
    // bash has optional keys
    expect(wire(bash, true)).toStrictEqual(wire(bash))
    const tagged = Tool.make("tag", {
      description: "Tag",
      parameters: Schema.Struct({ labels: Schema.Record(Schema.String, Schema.String) }),
      execute: () => Effect.succeed("tagged")
    })
    expect(wire(tagged, true).strict).toBeUndefined()
  })

  it("a tool that ignores excess keys says so, and its strict variant closes every object (not strict: it has an optional key)", () => {
    expect(wire(draw)).toStrictEqual({
      name: "draw",
      description: "Draw a polyline",
      parameters: {
        type: "object",
        properties: {
          points: {
            type: "array",
            // the identified Point is inlined, not a $ref
            items: {
              type: "object",
              properties: { x: { type: "number" }, y: { type: "number" } },
              required: ["x", "y"],
              additionalProperties: true,
              description: "A point"
            },
            minItems: 1
          },
          color: { type: "string", enum: ["red"] },
          label: { type: "string", maxLength: 20 }
        },
        required: ["points", "label"],
        additionalProperties: true
      }
    })
    expect(wire(draw, true)).toStrictEqual({
      name: "draw",
      description: "Draw a polyline",
      parameters: {
        type: "object",
        properties: {
          points: {
            type: "array",
            items: {
              type: "object",
              properties: { x: { type: "number" }, y: { type: "number" } },
              required: ["x", "y"],
              additionalProperties: false,
              description: "A point"
            },
            minItems: 1
          },
          color: { type: "string", enum: ["red"] },
          label: { type: "string", maxLength: 20 }
        },
        required: ["points", "label"],
        additionalProperties: false
      }
    })
  })

  it("a tool without parameters is an object without properties (not Effect's `{}`)", () => {
    expect(wire(now)).toStrictEqual({
      name: "now",
      description: "The current time",
      parameters: { type: "object", properties: {}, additionalProperties: false }
    })
    const lenient = Tool.make("now", {
      description: "The current time",
      parameters: Schema.Struct({}).annotate({ description: "Nothing" }),
      excessKeys: "ignore",
      execute: () => Effect.succeed("noon")
    })
    expect(wire(lenient).parameters).toStrictEqual({
      type: "object",
      properties: {},
      additionalProperties: true,
      description: "Nothing"
    })
    expect(wire(lenient, true).parameters).toStrictEqual({
      type: "object",
      properties: {},
      additionalProperties: false,
      description: "Nothing"
    })
  })

  interface Tree {
    readonly name: string
    readonly children: ReadonlyArray<Tree>
  }
  const Tree: Schema.Codec<Tree> = Schema.Struct({
    name: Schema.String,
    children: Schema.Array(Schema.suspend((): Schema.Codec<Tree> => Tree))
  })
  // a tree node's JSON Schema, referring to itself
  const node = {
    type: "object",
    properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#/$defs/Objects_" } } },
    required: ["name", "children"],
    additionalProperties: false
  }

  it("a recursive Schema keeps its definitions", () => {
    const tree = Tool.make("tree", {
      description: "Walk a tree",
      parameters: Schema.Struct({ root: Tree }),
      execute: () => Effect.succeed("walked")
    })
    expect(wire(tree).parameters).toStrictEqual({
      type: "object",
      properties: { root: { $ref: "#/$defs/Objects_" } },
      required: ["root"],
      additionalProperties: false,
      $defs: { Objects_: node }
    })
  })

  it("a recursive Schema at the root is its object, with its definitions beside it", () => {
    const tree = Tool.make("tree", {
      description: "Walk a tree",
      parameters: Tree as unknown as Tool.ParametersSchema,
      execute: () => Effect.succeed("walked")
    })
    expect(wire(tree).parameters).toStrictEqual({ ...node, $defs: { Objects_: node } })
  })

  it("what Effect publishes loosely (why the cookbook recommends code points and Finite)", () => {
    const lengths = Tool.make("lengths", {
      description: "x",
      parameters: Schema.Struct({
        exact: Schema.String.check(Schema.isMinCodePoints(4), Schema.isMaxCodePoints(8)),
        utf16: Schema.String.check(Schema.isMinLength(4), Schema.isMaxLength(8)),
        nonEmpty: Schema.NonEmptyString,
        number: Schema.Number.check(Schema.isGreaterThan(0))
      }),
      execute: () => Effect.succeed("")
    })
    expect(wire(lengths).parameters["properties"]).toStrictEqual({
      exact: { type: "string", minLength: 4, maxLength: 8 },
      // 4 UTF-16 code units may be 2 code points, which is what JSON Schema counts
      utf16: { type: "string", minLength: 2, maxLength: 8 },
      nonEmpty: { type: "string", minLength: 1 },
      // the JSON form of Number admits non-finite values as strings, and loses its checks
      number: { anyOf: [{ type: "number" }, { type: "string", enum: ["Infinity", "-Infinity", "NaN"] }] }
    })
  })

  it("a raw JSON Schema tool is passed through and never strict", () => {
    const expected = {
      name: "mcp__search",
      description: "Search the web",
      parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] }
    }
    expect(wire(mcpSearch)).toStrictEqual(expected)
    expect(wire(mcpSearch, true)).toStrictEqual(expected)
  })

  it.each(["", "read file", "bash!", "a".repeat(65), "tool.name", "ünïcode"])("refuses the name %j", (name) => {
    const error = refusal(Tool.make(name, { description: "x", parameters: Schema.Struct({}), execute: () => Effect.succeed("") }))
    expect(error).toBeInstanceOf(ToolErrors.InvalidToolError)
    expect(error.code).toBe("INVALID_TOOL")
    expect(error.reason).toBe("name")
    expect(error.message).toBe(
      `Tool name ${JSON.stringify(name)} is invalid: a tool name must be 1 to 64 characters, ` +
        "each a letter, a digit, '_' or '-' (providers reject any other name)"
    )
  })

  it("a hostile name (an MCP server's) is cut in the message", () => {
    const name = "x".repeat(1_000_000)
    const error = refusal(Tool.make(name, { description: "x", parameters: Schema.Struct({}), execute: () => Effect.succeed("") }))
    expect(error.tool).toBe(name)
    expect(error.message).toBe(
      `Tool name "${"x".repeat(119)}…" is invalid: a tool name must be 1 to 64 characters, ` +
        "each a letter, a digit, '_' or '-' (providers reject any other name)"
    )
  })

  it.each(["a", "A-b_9", "a".repeat(64)])("accepts the name %j", (name) => {
    expect(Result.isSuccess(Tool.validateName(name))).toBe(true)
  })

  it("refuses raw parameters that are not an object schema", () => {
    const stringly = Tool.fromJsonSchema("stringly", {
      description: "x",
      parameters: { type: "string" },
      execute: () => Effect.succeed("")
    })
    const error = refusal(stringly)
    expect(error.code).toBe("INVALID_TOOL")
    expect(error.reason).toBe("parameters")
    expect(error.message).toBe(
      `Tool "stringly" has invalid parameters: the parameters must be a JSON Schema of type "object", got type "string"`
    )
    const untyped = Tool.fromJsonSchema("untyped", {
      description: "x",
      parameters: { properties: {} },
      execute: () => Effect.succeed("")
    })
    expect(refusal(untyped).message).toBe(
      `Tool "untyped" has invalid parameters: the parameters must be a JSON Schema of type "object", got a schema without a type`
    )
  })

  it("a timeout that is no duration above zero: make stays total, wireSchema refuses it (INVALID_TOOL, reason timeout)", () => {
    for (const timeout of ["nope", -5, 0, Number.NaN]) {
      const tool = Tool.make("slow", {
        description: "x",
        parameters: Schema.Struct({}),
        timeout: timeout as never,
        execute: () => Effect.succeed("")
      })
      const error = refusal(tool)
      expect(error.reason).toBe("timeout")
      expect(error.message).toBe(
        `Tool "slow" has an invalid timeout: expected a duration above zero ("30 seconds", milliseconds), got ${
          typeof timeout === "string" ? timeout : String(timeout)
        }`
      )
    }
    const fine = Tool.make("slow", { description: "x", parameters: Schema.Struct({}), timeout: "5 seconds", execute: () => Effect.succeed("") })
    expect(Option.map(fine.timeout, Duration.toMillis)).toStrictEqual(Option.some(5000))
  })

  it("refuses parameters that are not a struct at all (a cast that lies)", () => {
    const lying = Tool.make("lying", {
      description: "x",
      parameters: Schema.String as unknown as Tool.ParametersSchema,
      execute: () => Effect.succeed("")
    })
    expect(refusal(lying).message).toBe(
      `Tool "lying" has invalid parameters: the parameters must be a JSON Schema of type "object", got type "string"`
    )
  })
})

describe("Tool.wireSchema: what JSON Schema cannot say, as Tool.make documents", () => {
  const tool = (parameters: Tool.ParametersSchema) =>
    Tool.make("t", { description: "", parameters, execute: () => Effect.succeed("") })

  it("a pattern is published only for a RegExp with the u flag; without it the decoder alone enforces it, at its path", () => {
    expect(wire(tool(Schema.Struct({ id: Schema.String.check(Schema.isPattern(/^[a-z]+$/u)) }))).parameters["properties"])
      .toStrictEqual({ id: { type: "string", pattern: "^[a-z]+$" } })
    const loose = tool(Schema.Struct({ id: Schema.String.check(Schema.isPattern(/^[a-z]+$/)) }))
    expect(wire(loose).parameters["properties"]).toStrictEqual({ id: { type: "string" } })
    const refused = ToolArgs.decoder(loose)(`{"id":"ABC"}`)
    expect(Result.isFailure(refused) && refused.failure.violations.map((v) => [v.path, v.kind])).toStrictEqual([[["id"], "check"]])
  })

  it("a custom check and what a transformation checks are left out of the wire schema", () => {
    const parameters = Schema.Struct({
      even: Schema.Int.check(Schema.makeFilter((n) => n % 2 === 0, { message: "must be even" })),
      count: Schema.FiniteFromString
    })
    expect(wire(tool(parameters)).parameters["properties"]).toStrictEqual({
      even: { type: "integer", minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
      count: { type: "string" }
    })
    const refused = ToolArgs.decoder(tool(parameters))(`{"even":3,"count":"many"}`)
    expect(Result.isFailure(refused) && refused.failure.violations.map((v) => [v.path, v.message])).toStrictEqual([
      [["even"], "must be even, got 3"],
      [["count"], `Expected a finite number, got "many"`]
    ])
  })
})

describe("Tool.wireSchema when the JSON Schema cannot be generated", () => {
  const declared = Schema.declare((u): u is Map<string, number> => u instanceof Map)

  it.each([
    ["a declared field", Schema.Struct({ lookup: declared }), "lookup"],
    ["one inside an array of structs", Schema.Struct({ rows: Schema.Array(Schema.Struct({ at: Schema.instanceOf(URLSearchParams) })) }), "rows.at"],
    ["one inside an Option", Schema.Struct({ maybe: Schema.Option(declared) }), "maybe"],
    ["one as a record's values", Schema.Struct({ byName: Schema.Record(Schema.String, declared) }), "byName"]
  ])("refuses %s with no JSON form, naming where it is", (_, parameters, path) => {
    const tool = Tool.make("opaque", { description: "x", parameters, execute: () => Effect.succeed("") })
    const error = refusal(tool)
    expect(error).toBeInstanceOf(ToolErrors.InvalidToolError)
    expect(error.reason).toBe("parameters")
    expect(error.message).toBe(
      `Tool "opaque" has invalid parameters: the value at ${path} is a declared type with no JSON form (no toCodecJson annotation), so no arguments a model sends could decode into it; use a Schema that decodes from JSON`
    )
  })

  it("accepts declared types that have a JSON form: Date, Option, ReadonlyMap, URL, BigInt, classes, Unknown", () => {
    class Point extends Schema.Class<Point>("Point")({ x: Schema.Number, at: Schema.Date }) {}
    const tool = Tool.make("typed", {
      description: "x",
      parameters: Schema.Struct({
        at: Schema.Date,
        maybe: Schema.Option(Schema.Number),
        counts: Schema.ReadonlyMap(Schema.String, Schema.Number),
        url: Schema.URL,
        big: Schema.BigInt,
        point: Point,
        anything: Schema.Unknown
      }),
      execute: () => Effect.succeed("")
    })
    expect(Result.isSuccess(Tool.wireSchema(tool))).toBe(true)
  })

  it("says why in the thrown value's own words, never [object Object]", () => {
    const opaque = Tool.make("opaque", {
      description: "x",
      parameters: Schema.Struct({
        a: Schema.String.check(
          Schema.makeFilter(() => true, {
            toJsonSchema: () => {
              throw { message: "this check has no JSON Schema" }
            }
          })
        )
      }),
      execute: () => Effect.succeed("")
    })
    const error = refusal(opaque)
    expect(error).toBeInstanceOf(ToolErrors.InvalidToolError)
    expect(error.message).toBe(`Tool "opaque" has invalid parameters: its JSON Schema cannot be generated: this check has no JSON Schema`)
  })
})
