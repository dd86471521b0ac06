import { Tool, ToolArgs, ToolErrors } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { bash } from "./fixtures.ts"

const decodeBash = ToolArgs.decoder(bash)

const ok = <A>(decode: ToolArgs.Decoder<A>, raw: string): A => {
  const result = decode(raw)
  if (Result.isFailure(result)) throw new Error(`expected ${raw} to decode, got:\n${result.failure.message}`)
  return result.success
}

const error = (decode: ToolArgs.Decoder<unknown>, raw: string): ToolErrors.ToolArgsError => {
  const result = decode(raw)
  if (Result.isSuccess(result)) throw new Error(`expected ${raw} to be refused, got ${JSON.stringify(result.success)}`)
  expect(result.failure).toBeInstanceOf(ToolErrors.ToolArgsError)
  expect(result.failure.code).toBe("INVALID_ARGS")
  expect(result.failure.tool).toBe("bash")
  return result.failure
}

const message = (raw: string) => error(decodeBash, raw).message

describe("ToolArgs: JSON", () => {
  it("a number past JSON's range is shown as the Infinity it parsed to, not as null", () => {
    const e = error(decodeBash, `{"command":"ls","timeoutMs":1e400,"env":[{"name":"A","value":-1e400}]}`)
    expect(e.message).toContain("- at timeoutMs: Expected an integer, got Infinity (a number beyond what a double holds)")
    expect(e.message).toContain("- at env[0].value: Expected string, got -Infinity (a number beyond what a double holds)")
  })

  it("an empty or all-whitespace string means {}", () => {
    const optionalOnly = Tool.make("bash", {
      description: "x",
      parameters: Schema.Struct({ verbose: Schema.optionalKey(Schema.Boolean) }),
      execute: () => Effect.succeed("")
    })
    expect(ok(ToolArgs.decoder(optionalOnly), "")).toStrictEqual({})
    expect(ok(ToolArgs.decoder(optionalOnly), " \n\t ")).toStrictEqual({})
    // {} still has to satisfy the schema
    expect(message("")).toBe(
      [
        `Invalid arguments for tool "bash" (2 problems):`,
        `- at command: Missing key, expected a string`,
        `- at mode: Missing key, expected "read" | "write"`
      ].join("\n")
    )
  })

  it("text that is not JSON at all", () => {
    const e = error(decodeBash, "ls -la")
    expect(e.message).toBe(
      [
        `Invalid arguments for tool "bash": the arguments are not valid JSON: expected a JSON value, found 'l' at line 1, column 1:`,
        `ls -la`,
        `^`
      ].join("\n")
    )
    expect(e.location).toStrictEqual({ offset: 0, line: 1, column: 1 })
    expect(e.violations).toStrictEqual([
      {
        path: [],
        kind: "json-syntax",
        expected: "a JSON value",
        actual: "'l'",
        message: "not valid JSON: expected a JSON value, found 'l' at line 1, column 1"
      }
    ])
  })

  it("a missing comma", () => {
    const e = error(decodeBash, `{"command": "ls" "mode": "read"}`)
    expect(e.message).toBe(
      [
        `Invalid arguments for tool "bash": the arguments are not valid JSON: expected ',' or '}', found '"' at line 1, column 18:`,
        `{"command": "ls" "mode": "read"}`,
        `                 ^`
      ].join("\n")
    )
    expect(e.location).toStrictEqual({ offset: 17, line: 1, column: 18 })
  })

  it("arguments cut short (a stream that stopped at max tokens)", () => {
    expect(message(`{"command": "ls", "mo`)).toBe(
      [
        `Invalid arguments for tool "bash": the arguments are not valid JSON: expected a closing '"' (the string is not terminated), found the end of the input at line 1, column 22:`,
        `{"command": "ls", "mo`,
        `                     ^`
      ].join("\n")
    )
    expect(message(`{"command": "ls",`)).toBe(
      [
        `Invalid arguments for tool "bash": the arguments are not valid JSON: expected a property name in double quotes, found the end of the input at line 1, column 18:`,
        `{"command": "ls",`,
        `                 ^`
      ].join("\n")
    )
  })

  it("a trailing comma, single quotes, a raw line break in a string", () => {
    expect(message(`{"command": "ls", "mode": "read",}`)).toBe(
      [
        `Invalid arguments for tool "bash": the arguments are not valid JSON: expected a property name in double quotes, found '}' at line 1, column 34:`,
        `{"command": "ls", "mode": "read",}`,
        `                                 ^`
      ].join("\n")
    )
    expect(message(`{'command': 'ls'}`)).toBe(
      [
        `Invalid arguments for tool "bash": the arguments are not valid JSON: expected a property name in double quotes or '}', found ''' at line 1, column 2:`,
        `{'command': 'ls'}`,
        ` ^`
      ].join("\n")
    )
    expect(message(`{"command": "echo a\nb", "mode": "read"}`)).toBe(
      [
        `Invalid arguments for tool "bash": the arguments are not valid JSON: expected an escaped character (control characters and line breaks inside a string must be written as escapes such as \\n), found a line break at line 1, column 20:`,
        `{"command": "echo a`,
        `                   ^`
      ].join("\n")
    )
  })

  it("bad escapes, numbers and literals", () => {
    const first = (raw: string) => error(decodeBash, raw).violations[0]!.message
    expect(first(`{"command": "a\\qb"}`)).toBe(
      `not valid JSON: expected a valid escape sequence (one of \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX), found '\\' at line 1, column 15`
    )
    expect(first(`{"command": "\\u12G4"}`)).toBe(
      `not valid JSON: expected a valid escape sequence (\\u must be followed by 4 hex digits), found '\\' at line 1, column 14`
    )
    expect(first(`{"timeoutMs": 01}`)).toBe(`not valid JSON: expected ',' or '}', found '1' at line 1, column 16`)
    expect(first(`{"timeoutMs": 1.}`)).toBe(
      `not valid JSON: expected a digit after the decimal point, found '}' at line 1, column 17`
    )
    expect(first(`{"timeoutMs": 1e}`)).toBe(`not valid JSON: expected a digit in the exponent, found '}' at line 1, column 17`)
    expect(first(`{"timeoutMs": -}`)).toBe(`not valid JSON: expected a digit, found '}' at line 1, column 16`)
    expect(first(`{"dryRun": tru}`)).toBe(`not valid JSON: expected the literal true, found '}' at line 1, column 15`)
    expect(first(`{"dryRun": True}`)).toBe(`not valid JSON: expected a JSON value, found 'T' at line 1, column 12`)
    expect(first(`[1, 2`)).toBe(`not valid JSON: expected ',' or ']', found the end of the input at line 1, column 6`)
    expect(first(`[1,]`)).toBe(`not valid JSON: expected a JSON value, found ']' at line 1, column 4`)
    expect(first(`{"a" 1}`)).toBe(`not valid JSON: expected ':' after the property name, found '1' at line 1, column 6`)
    expect(first(`{} {}`)).toBe(
      `not valid JSON: expected the end of the input (there is text after the JSON value), found '{' at line 1, column 4`
    )
    expect(first("\u0001")).toBe(`not valid JSON: expected a JSON value, found the control character U+0001 at line 1, column 1`)
  })

  it("reports the line and column in multi-line arguments, and excerpts only that line", () => {
    const raw = `{\n  "command": "ls",\n\t"mode": "read"\n  "dryRun": true\n}`
    const e = error(decodeBash, raw)
    expect(e.location).toStrictEqual({ offset: raw.indexOf(`"dryRun"`), line: 4, column: 3 })
    expect(e.message).toBe(
      [
        `Invalid arguments for tool "bash": the arguments are not valid JSON: expected ',' or '}', found '"' at line 4, column 3:`,
        `  "dryRun": true`,
        `  ^`
      ].join("\n")
    )
  })

  it("windows a long line around the error", () => {
    const raw = `{"command": "${"x".repeat(200)}" "mode": "read", "env": [${`{"name": "A", "value": "B"}, `.repeat(20)}]}`
    const e = error(decodeBash, raw)
    const offset = raw.indexOf(`"mode"`)
    expect(e.location).toStrictEqual({ offset, line: 1, column: offset + 1 })
    // 40 characters before the error, 30 after, and a caret under it
    expect(e.message.split("\n").slice(1)).toStrictEqual([
      `…${"x".repeat(38)}" "mode": "read", "env": [{"name…`,
      `${" ".repeat(41)}^`
    ])
  })
})

describe("ToolArgs: decoding", () => {
  it("decodes valid arguments to the Schema's type", () => {
    expect(ok(decodeBash, `{"command": "ls", "mode": "read"}`)).toStrictEqual({ command: "ls", mode: "read" })
    expect(
      ok(decodeBash, `{"command": "ls", "mode": "write", "timeoutMs": 10, "env": [{"name": "A", "value": "1"}]}`)
    ).toStrictEqual({ command: "ls", mode: "write", timeoutMs: 10, env: [{ name: "A", value: "1" }] })
  })

  it("a Schema.Number given no number is told a number is wanted, not the three words its JSON form also takes", () => {
    const counted = Tool.make("count", {
      description: "Counts",
      parameters: Schema.Struct({ n: Schema.Number, more: Schema.Array(Schema.Number) }),
      execute: () => Effect.succeed("")
    })
    const refused = ToolArgs.decoder(counted)(`{"n": "three", "more": [1, true]}`)
    expect(Result.isFailure(refused)).toBe(true)
    const e = (refused as Result.Failure<unknown, ToolErrors.ToolArgsError>).failure
    expect(e.message).toBe(
      [`Invalid arguments for tool "count" (2 problems):`, `- at n: Expected a number, got "three"`, `- at more[1]: Expected a number, got true`].join("\n")
    )
    expect(e.violations.map((v) => v.expected)).toStrictEqual(["a number", "a number"])
  })

  it("lists every violation with its path, what was expected and what was received", () => {
    const e = error(
      decodeBash,
      JSON.stringify({
        mode: "exec",
        timeoutMs: -1.5,
        dryRun: "yes",
        env: [{ name: "A", value: "1" }, { name: "B", value: 2 }, { value: "3" }, "C=4"],
        dry_run: true,
        extra: { nested: true }
      })
    )
    expect(e.message).toBe(
      [
        `Invalid arguments for tool "bash" (10 problems):`,
        `- at dry_run: Unexpected key, did you mean "dryRun"? (allowed keys: command, mode, timeoutMs, dryRun, env)`,
        `- at extra: Unexpected key (allowed keys: command, mode, timeoutMs, dryRun, env)`,
        `- at command: Missing key, expected a string`,
        `- at mode: Expected "read" | "write", got "exec"`,
        `- at timeoutMs: Expected an integer, got -1.5`,
        `- at timeoutMs: Expected a value greater than 0, got -1.5`,
        `- at dryRun: Expected boolean, got "yes"`,
        `- at env[1].value: Expected string, got 2`,
        `- at env[2].name: Missing key, expected a string`,
        `- at env[3]: Expected object, got "C=4"`
      ].join("\n")
    )
    expect(e.violations.map((v) => v.path)).toStrictEqual([
      ["dry_run"],
      ["extra"],
      ["command"],
      ["mode"],
      ["timeoutMs"],
      ["timeoutMs"],
      ["dryRun"],
      ["env", 1, "value"],
      ["env", 2, "name"],
      ["env", 3]
    ])
    expect(e.location).toBeUndefined()
  })

  it("reports unexpected keys inside nested objects with that object's keys", () => {
    expect(message(`{"command": "ls", "mode": "read", "env": [{"name": "A", "value": "1", "valeu": "2"}]}`)).toBe(
      [
        `Invalid arguments for tool "bash" (1 problem):`,
        `- at env[0].valeu: Unexpected key, did you mean "value"? (allowed keys: name, value)`
      ].join("\n")
    )
  })

  it("arguments that are not an object", () => {
    expect(message(`"ls"`)).toBe(`Invalid arguments for tool "bash" (1 problem):\n- Expected object, got "ls"`)
    expect(message(`[1, 2]`)).toBe(`Invalid arguments for tool "bash" (1 problem):\n- Expected object, got [1,2]`)
    expect(message(`null`)).toBe(`Invalid arguments for tool "bash" (1 problem):\n- Expected object, got null`)
  })

  it("keys that are not identifiers are quoted in paths", () => {
    const odd = Tool.make("bash", {
      description: "x",
      parameters: Schema.Struct({ "the key": Schema.Struct({ "0": Schema.Int }) }),
      execute: () => Effect.succeed("")
    })
    expect(error(ToolArgs.decoder(odd), `{"the key": {"0": "x"}}`).message).toBe(
      `Invalid arguments for tool "bash" (1 problem):\n- at ["the key"]["0"]: Expected number, got "x"`
    )
  })

  it("received values are previewed, never echoed whole", () => {
    const huge = "y".repeat(5000)
    expect(message(JSON.stringify({ command: "ls", mode: huge }))).toBe(
      [
        `Invalid arguments for tool "bash" (1 problem):`,
        `- at mode: Expected "read" | "write", got "${"y".repeat(60)}…" (5000 characters)`
      ].join("\n")
    )
    const big = { files: Array.from({ length: 100 }, (_, i) => `file-${i}.ts`) }
    expect(message(JSON.stringify({ command: big, mode: "read" }))).toBe(
      [
        `Invalid arguments for tool "bash" (1 problem):`,
        `- at command: Expected string, got ${JSON.stringify(big).slice(0, 60)}… (${JSON.stringify(big).length} characters of JSON)`
      ].join("\n")
    )
    // a cut never splits a surrogate pair
    const emoji = `${"a".repeat(59)}😀${"b".repeat(10)}`
    expect(message(JSON.stringify({ command: "ls", mode: emoji }))).toContain(`got "${"a".repeat(59)}…" (71 characters)`)
  })

  it("lists at most 25 violations and counts the rest; the error keeps them all", () => {
    const many = Tool.make("bash", {
      description: "x",
      parameters: Schema.Struct({ values: Schema.Array(Schema.Int) }),
      execute: () => Effect.succeed("")
    })
    const e = error(ToolArgs.decoder(many), JSON.stringify({ values: Array.from({ length: 40 }, (_, i) => `v${i}`) }))
    const lines = e.message.split("\n")
    expect(lines[0]).toBe(`Invalid arguments for tool "bash" (40 problems):`)
    expect(lines.slice(1, 3)).toStrictEqual([`- at values[0]: Expected number, got "v0"`, `- at values[1]: Expected number, got "v1"`])
    expect(lines[25]).toBe(`- at values[24]: Expected number, got "v24"`)
    expect(lines.slice(26)).toStrictEqual([`- … and 15 more problems`])
    expect(e.violations).toHaveLength(40)
  })

  it("an optional (nullable) key accepts null, as its JSON Schema says", () => {
    const nullable = Tool.make("bash", {
      description: "x",
      parameters: Schema.Struct({ cwd: Schema.optional(Schema.String) }),
      execute: () => Effect.succeed("")
    })
    expect(ok(ToolArgs.decoder(nullable), `{"cwd": null}`)).toStrictEqual({ cwd: undefined })
    expect(ok(ToolArgs.decoder(nullable), `{}`)).toStrictEqual({})
  })
})

describe("ToolArgs: excess keys", () => {
  const make = (excessKeys: Tool.ExcessKeys) =>
    Tool.make("bash", {
      description: "x",
      excessKeys,
      parameters: Schema.Struct({ command: Schema.String, dryRun: Schema.optionalKey(Schema.Boolean) }),
      execute: () => Effect.succeed("")
    })

  it("rejected by default: a misspelt key is reported with the key it probably meant", () => {
    expect(error(ToolArgs.decoder(make("reject")), `{"command": "rm -rf build", "dry_run": true}`).message).toBe(
      [
        `Invalid arguments for tool "bash" (1 problem):`,
        `- at dry_run: Unexpected key, did you mean "dryRun"? (allowed keys: command, dryRun)`
      ].join("\n")
    )
  })

  it("ignored when the tool says so: the key is dropped before the body sees the arguments", () => {
    // This is the hazard the default avoids: the body runs as if `dryRun` were absent.
    expect(ok(ToolArgs.decoder(make("ignore")), `{"command": "rm -rf build", "dry_run": true}`)).toStrictEqual({
      command: "rm -rf build"
    })
  })

  it("a key a record refuses is reported with what its keys must be, not as an object taking no keys", () => {
    const tag = ToolArgs.decoder(Tool.make("bash", {
      description: "x",
      parameters: Schema.Struct({ labels: Schema.Record(Schema.String.check(Schema.isPattern(/^[a-z]+$/u)), Schema.String) }),
      execute: () => Effect.succeed("")
    }))
    expect(error(tag, `{"labels": {"ok": "v", "Bad Key": "v"}}`).message).toBe(
      [
        `Invalid arguments for tool "bash" (1 problem):`,
        `- at labels["Bad Key"]: Unexpected key (its keys must be a string matching the RegExp ^[a-z]+$)`
      ].join("\n")
    )
    expect(ok(tag, `{"labels": {"ok": "v"}}`)).toStrictEqual({ labels: { ok: "v" } })
  })

  it("a tool without parameters takes an object, with no keys unless it ignores them", () => {
    const none = (excessKeys: Tool.ExcessKeys) =>
      ToolArgs.decoder(
        Tool.make("bash", { description: "x", excessKeys, parameters: Schema.Struct({}), execute: () => Effect.succeed("") })
      )
    expect(ok(none("reject"), "")).toStrictEqual({})
    expect(ok(none("reject"), "{}")).toStrictEqual({})
    expect(error(none("reject"), `{"a": 1, "b": 2}`).message).toBe(
      [
        `Invalid arguments for tool "bash" (2 problems):`,
        `- at a: Unexpected key (this tool takes no arguments)`,
        `- at b: Unexpected key (this tool takes no arguments)`
      ].join("\n")
    )
    expect(error(none("reject"), `[]`).message).toBe(`Invalid arguments for tool "bash" (1 problem):\n- Expected object, got []`)
    expect(error(none("ignore"), `"x"`).message).toBe(`Invalid arguments for tool "bash" (1 problem):\n- Expected object, got "x"`)
    expect(ok(none("ignore"), `{"a": 1}`)).toStrictEqual({})
  })

  it("many unexpected keys: the first of each object are listed, the rest counted at it", () => {
    const keys = (n: number, prefix: string) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i]))
    const nested = Tool.make("bash", {
      description: "x",
      parameters: Schema.Struct({ command: Schema.String, env: Schema.Struct({ name: Schema.String }) }),
      execute: () => Effect.succeed("")
    })
    // 100,000 invented keys beside a misspelt one, a wrong type and a nested object with more.
    const raw = JSON.stringify({ comand: "ls", ...keys(100_000, "k"), command: 5, env: { name: "A", ...keys(12, "e") } })
    const e = error(ToolArgs.decoder(nested), raw)
    const allowed = "allowed keys: command, env"
    expect(e.message.split("\n")).toStrictEqual([
      `Invalid arguments for tool "bash" (23 problems):`,
      `- at comand: Unexpected key, did you mean "command"? (${allowed})`,
      ...Array.from({ length: 9 }, (_, i) => `- at k${i}: Unexpected key (${allowed})`),
      `- 99991 more unexpected keys beside those listed: "k9", "k10", "k11", … (${allowed})`,
      `- at command: Expected string, got 5`,
      ...Array.from({ length: 10 }, (_, i) => `- at env.e${i}: Unexpected key (allowed keys: name)`),
      `- at env: 2 more unexpected keys beside those listed: "e10", "e11" (allowed keys: name)`
    ])
    // The same as data: the summary sits at the object, its `actual` names what it counts.
    expect(e.violations).toHaveLength(23)
    expect(e.violations[10]).toStrictEqual({
      path: [],
      kind: "unexpected-key",
      expected: "one of the keys command, env",
      actual: `"k9", "k10", "k11", …`,
      message: `99991 more unexpected keys beside those listed: "k9", "k10", "k11", … (${allowed})`
    })
    expect(e.violations[22]?.path).toStrictEqual(["env"])

    const none = ToolArgs.decoder(
      Tool.make("bash", { description: "x", parameters: Schema.Struct({}), execute: () => Effect.succeed("") })
    )
    const empty = error(none, JSON.stringify(keys(400_000, "k")))
    expect(empty.violations.map((v) => v.path)).toStrictEqual([...Array.from({ length: 10 }, (_, i) => [`k${i}`]), []])
    expect(empty.violations.at(-1)?.message).toBe(
      `399990 more unexpected keys beside those listed: "k10", "k11", "k12", … (this tool takes no arguments)`
    )
  })
})

// Valid calls decode through a lenient JIT-compiled decode plus a walk for excess keys
// (internal/fast.ts); these are the Schemas where that shortcut could go wrong.
describe("ToolArgs: the fast path keeps the excess-key policy", () => {
  const tool = <S extends Tool.ParametersSchema>(parameters: S, excessKeys: Tool.ExcessKeys = "reject") =>
    ToolArgs.decoder(Tool.make("bash", { description: "x", excessKeys, parameters, execute: () => Effect.succeed("") }))
  const paths = (e: ToolErrors.ToolArgsError) => e.violations.map((v) => [v.kind, v.path])

  it("finds an excess key in a struct inside an array, and drops it when ignored", () => {
    const parameters = Schema.Struct({ env: Schema.Array(Schema.Struct({ name: Schema.String })) })
    const raw = `{"env": [{"name": "A"}, {"name": "B", "value": "1"}]}`
    expect(paths(error(tool(parameters), raw))).toStrictEqual([["unexpected-key", ["env", 1, "value"]]])
    expect(ok(tool(parameters, "ignore"), raw)).toStrictEqual({ env: [{ name: "A" }, { name: "B" }] })
  })

  it("a union of structs picks the member the strict decode picks", () => {
    // Leniently the first member takes {a, b} (dropping b); strictly it refuses b and the second
    // member takes it whole.
    const parameters = Schema.Struct({
      x: Schema.Union([Schema.Struct({ a: Schema.String }), Schema.Struct({ a: Schema.String, b: Schema.Int })])
    })
    expect(ok(tool(parameters), `{"x": {"a": "1", "b": 2}}`)).toStrictEqual({ x: { a: "1", b: 2 } })
    expect(ok(tool(parameters, "ignore"), `{"x": {"a": "1", "b": 2}}`)).toStrictEqual({ x: { a: "1" } })
    expect(error(tool(parameters), `{"x": {"a": "1", "c": 2}}`).violations.length).toBeGreaterThan(0)
  })

  it("finds an excess key deep in a recursive Schema", () => {
    interface Tree {
      readonly name: string
      readonly children: ReadonlyArray<Tree>
    }
    const Tree = Schema.Struct({
      name: Schema.String,
      children: Schema.Array(Schema.suspend((): Schema.Codec<Tree> => Tree))
    })
    const parameters = Schema.Struct({ tree: Tree })
    const raw = `{"tree": {"name": "a", "children": [{"name": "b", "children": [{"name": "c", "children": [], "x": 1}]}]}}`
    expect(paths(error(tool(parameters), raw))).toStrictEqual([[
      "unexpected-key",
      ["tree", "children", 0, "children", 0, "x"]
    ]])
    expect(ok(tool(parameters), raw.replace(`, "x": 1`, ""))).toStrictEqual({
      tree: { name: "a", children: [{ name: "b", children: [{ name: "c", children: [] }] }] }
    })
  })

  it("records and transformed fields keep the policy too", () => {
    const parameters = Schema.Struct({
      env: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
      // `Schema.Number` has a JSON encoding (it also takes "NaN"): a transformation
      ratio: Schema.optionalKey(Schema.Number)
    })
    expect(ok(tool(parameters), `{"env": {"A": "1", "B": "2"}, "ratio": 0.5}`)).toStrictEqual({
      env: { A: "1", B: "2" },
      ratio: 0.5
    })
    expect(paths(error(tool(parameters), `{"ratio": 0.5, "extra": true}`))).toStrictEqual([["unexpected-key", ["extra"]]])
    expect(ok(tool(parameters, "ignore"), `{"ratio": 0.5, "extra": true}`)).toStrictEqual({ ratio: 0.5 })
  })
})

describe("ToolArgs: raw JSON Schema tools", () => {
  const raw = Tool.fromJsonSchema("bash", {
    description: "x",
    parameters: { type: "object", properties: { q: { type: "string" } } },
    execute: () => Effect.succeed("")
  })
  const decode = ToolArgs.decoder(raw)

  it("pass the parsed JSON through undecoded", () => {
    expect(ok(decode, `{"q": 1, "anything": [true]}`)).toStrictEqual({ q: 1, anything: [true] })
    expect(ok(decode, `"just a string"`)).toBe("just a string")
    expect(ok(decode, "")).toStrictEqual({})
  })

  it("still refuse text that is not JSON", () => {
    expect(error(decode, `{"q": }`).message).toBe(
      [
        `Invalid arguments for tool "bash": the arguments are not valid JSON: expected a JSON value, found '}' at line 1, column 7:`,
        `{"q": }`,
        `      ^`
      ].join("\n")
    )
  })
})

describe("ToolArgs: what was expected where a key is missing", () => {
  const deploy = Tool.make("bash", {
    description: "x",
    parameters: Schema.Struct({
      replicas: Schema.Finite,
      mode: Schema.Literals(["read", "write"]),
      target: Schema.Struct({ name: Schema.String, region: Schema.optionalKey(Schema.String) }),
      tags: Schema.Array(Schema.String),
      pair: Schema.Tuple([Schema.String, Schema.Int]),
      labels: Schema.Record(Schema.String, Schema.String),
      note: Schema.NullOr(Schema.String),
      when: Schema.Date,
      env: Schema.Array(Schema.Struct({ name: Schema.String, value: Schema.Union([Schema.String, Schema.Boolean]) })),
      cwd: Schema.optional(Schema.String)
    }),
    execute: () => Effect.succeed("")
  })

  it("names the type, the members of a literal set, the shape of an object", () => {
    expect(error(ToolArgs.decoder(deploy), `{"env": [{}]}`).message).toBe(
      [
        `Invalid arguments for tool "bash" (10 problems):`,
        `- at replicas: Missing key, expected a number`,
        `- at mode: Missing key, expected "read" | "write"`,
        `- at target: Missing key, expected an object { name: string, region?: string }`,
        `- at tags: Missing key, expected an array of string`,
        `- at pair: Missing key, expected an array [string, number]`,
        `- at labels: Missing key, expected an object { [key: string]: string }`,
        `- at note: Missing key, expected a string | null`,
        `- at when: Missing key, expected a string`,
        `- at env[0].name: Missing key, expected a string`,
        `- at env[0].value: Missing key, expected a string | a boolean`
      ].join("\n")
    )
  })

  it("keeps a big shape short", () => {
    const wide = Tool.make("bash", {
      description: "x",
      parameters: Schema.Struct({
        spec: Schema.Struct(
          Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`field_${i}`, Schema.Struct({ inner: Schema.Struct({ deep: Schema.String }) })]))
        )
      }),
      execute: () => Effect.succeed("")
    })
    const [violation] = error(ToolArgs.decoder(wide), `{}`).violations
    expect(violation?.expected).toMatch(/^an object \{ field_0: \{ inner: \{…\} \}, field_1: /)
    expect(violation?.expected.length).toBeLessThanOrEqual(160)
  })

  it("a recursive shape is cut, not followed forever", () => {
    interface Tree {
      readonly label: string
      readonly children: ReadonlyArray<Tree>
    }
    const Tree: Schema.Codec<Tree> = Schema.Struct({
      label: Schema.String,
      children: Schema.Array(Schema.suspend(() => Tree))
    })
    const tree = Tool.make("bash", { description: "x", parameters: Schema.Struct({ root: Tree }), execute: () => Effect.succeed("") })
    expect(error(ToolArgs.decoder(tree), `{}`).message).toBe(
      `Invalid arguments for tool "bash" (1 problem):\n- at root: Missing key, expected an object { label: string, children: { label: string, children: {…}[] }[] }`
    )
  })

  it("a key's own message is kept as it is", () => {
    const custom = Tool.make("bash", {
      description: "x",
      parameters: Schema.Struct({
        path: Schema.String.annotateKey({ messageMissingKey: "Say which file, as an absolute path" })
      }),
      execute: () => Effect.succeed("")
    })
    expect(error(ToolArgs.decoder(custom), `{}`).message).toBe(
      `Invalid arguments for tool "bash" (1 problem):\n- at path: Say which file, as an absolute path`
    )
  })
})

describe("ToolArgs: structured violations", () => {
  it("every violation carries its kind, what was expected and what was received", () => {
    const e = error(
      decodeBash,
      JSON.stringify({
        mode: "exec",
        timeoutMs: -1.5,
        dryRun: "yes",
        env: [{ name: "A", value: "1" }, { name: "B", value: 2 }, { value: "3" }, "C=4"],
        dry_run: true,
        extra: { nested: true }
      })
    )
    const allowed = "one of the keys command, mode, timeoutMs, dryRun, env"
    expect(e.violations.map(({ message: _, ...rest }) => rest)).toStrictEqual([
      { path: ["dry_run"], kind: "unexpected-key", expected: allowed, actual: "true" },
      { path: ["extra"], kind: "unexpected-key", expected: allowed, actual: `{"nested":true}` },
      { path: ["command"], kind: "missing-key", expected: "a string" },
      { path: ["mode"], kind: "type", expected: `"read" | "write"`, actual: `"exec"` },
      { path: ["timeoutMs"], kind: "check", expected: "an integer", actual: "-1.5" },
      { path: ["timeoutMs"], kind: "check", expected: "a value greater than 0", actual: "-1.5" },
      { path: ["dryRun"], kind: "type", expected: "a boolean", actual: `"yes"` },
      { path: ["env", 1, "value"], kind: "type", expected: "a string", actual: "2" },
      { path: ["env", 2, "name"], kind: "missing-key", expected: "a string" },
      { path: ["env", 3], kind: "type", expected: "an object { name: string, value: string }", actual: `"C=4"` }
    ])
    // `actual` is absent, not undefined, where nothing was received
    expect(Object.hasOwn(e.violations[2]!, "actual")).toBe(false)
  })

  it("JSON syntax errors: what would have been valid and what was found, if anything", () => {
    expect(error(decodeBash, "ls -la").violations).toStrictEqual([
      {
        path: [],
        kind: "json-syntax",
        expected: "a JSON value",
        actual: "'l'",
        message: "not valid JSON: expected a JSON value, found 'l' at line 1, column 1"
      }
    ])
    expect(error(decodeBash, `{"command": "ls",`).violations).toStrictEqual([
      {
        path: [],
        kind: "json-syntax",
        expected: "a property name in double quotes",
        message: "not valid JSON: expected a property name in double quotes, found the end of the input at line 1, column 18"
      }
    ])
  })

  it("a tool without parameters", () => {
    const none = ToolArgs.decoder(
      Tool.make("bash", { description: "x", parameters: Schema.Struct({}), execute: () => Effect.succeed("") })
    )
    expect(error(none, `[]`).violations).toStrictEqual([
      { path: [], kind: "type", expected: "an object", actual: "[]", message: "Expected object, got []" }
    ])
    expect(error(none, `{"a": 1}`).violations).toStrictEqual([
      {
        path: ["a"],
        kind: "unexpected-key",
        expected: "no keys",
        actual: "1",
        message: "Unexpected key (this tool takes no arguments)"
      }
    ])
  })

  it("an argument error is data for the model: it carries no stack trace", () => {
    for (const raw of [`{"command": 1}`, `{"command": `]) {
      const e = error(decodeBash, raw)
      expect(e.stack?.includes("\n    at ")).toBe(false)
    }
    // and the limit the decoder lowered for it is back
    expect(new Error("x").stack).toContain("\n    at ")
  })

  it("the Violation schema accepts every violation the decoder builds", () => {
    const e = error(decodeBash, JSON.stringify({ mode: "exec", extra: 1 }))
    for (const v of e.violations) expect(Schema.is(ToolErrors.Violation)(v)).toBe(true)
    expect(ToolErrors.ViolationKind.literals).toStrictEqual(["json-syntax", "too-deep", "missing-key", "unexpected-key", "type", "check"])
  })

  it("a hostile key is cut in the message, and its suggestion costs nothing", () => {
    const key = "x".repeat(1_000_000)
    const started = Date.now()
    const e = error(decodeBash, JSON.stringify({ command: "ls", mode: "read", [key]: 1 }))
    expect(Date.now() - started).toBeLessThan(500)
    expect(e.message.length).toBeLessThan(400)
    expect(e.message).toBe(
      [
        `Invalid arguments for tool "bash" (1 problem):`,
        `- at ["${"x".repeat(40)}…"]: Unexpected key (allowed keys: command, mode, timeoutMs, dryRun, env)`
      ].join("\n")
    )
    // the structured path keeps the key whole
    expect(e.violations[0]?.path).toStrictEqual([key])
  })
})

describe("ToolArgs: nesting depth", () => {
  const nested = (open: string, close: string, levels: number, inner = "") => open.repeat(levels) + inner + close.repeat(levels)
  const store = Tool.make("bash", {
    description: "x",
    parameters: Schema.Struct({ data: Schema.Json }),
    execute: () => Effect.succeed("")
  })
  const decodeStore = ToolArgs.decoder(store)
  const raw = ToolArgs.decoder(
    Tool.fromJsonSchema("bash", { description: "x", parameters: { type: "object" }, execute: () => Effect.succeed("") })
  )

  it("JSON.parse itself takes 100,000 levels (V8's parser is iterative)", () => {
    expect(() => JSON.parse(nested("[", "]", 100_000))).not.toThrow()
    expect(() => JSON.parse(nested(`{"a":`, "}", 100_000, "1"))).not.toThrow()
  })

  it("256 levels decode; one more is a single too-deep violation naming where", () => {
    expect(ToolArgs.maxDepth).toBe(256)
    // the arguments object is level 1, `data` level 2, …
    const fits = `{"data": ${nested("[", "]", ToolArgs.maxDepth - 1)}}`
    expect(ok(decodeStore, fits)).toStrictEqual(JSON.parse(fits))
    expect(Result.isSuccess(raw(fits))).toBe(true)

    const deeper = `{"data": ${nested("[", "]", ToolArgs.maxDepth)}}`
    for (const decode of [decodeStore, raw]) {
      const e = error(decode, deeper)
      expect(e.violations).toStrictEqual([
        {
          path: ["data", ...Array.from({ length: ToolArgs.maxDepth - 1 }, () => 0)],
          kind: "too-deep",
          expected: "at most 256 levels of nested objects and arrays",
          actual: "[]",
          message: "Nested too deeply, expected at most 256 levels of nested objects and arrays"
        }
      ])
      expect(e.message).toBe(
        [
          `Invalid arguments for tool "bash" (1 problem):`,
          `- at data${"[0]".repeat(18)}…${"[0]".repeat(20)}: Nested too deeply, expected at most 256 levels of nested objects and arrays`
        ].join("\n")
      )
    }
  })

  it("100,000 levels of [ or {\"a\": are INVALID_ARGS, not a stack overflow", () => {
    for (const decode of [decodeBash, decodeStore, raw]) {
      const arrays = error(decode, nested("[", "]", 100_000))
      expect(arrays.violations.map((v) => [v.kind, v.path.length])).toStrictEqual([["too-deep", 256]])
      const objects = error(decode, nested(`{"a":`, "}", 100_000, "1"))
      expect(objects.violations.map((v) => [v.kind, v.path.length])).toStrictEqual([["too-deep", 256]])
      expect(objects.message).toBe(
        [
          `Invalid arguments for tool "bash" (1 problem):`,
          `- at a${".a".repeat(29)}…${".a".repeat(30)}: Nested too deeply, expected at most 256 levels of nested objects and arrays`
        ].join("\n")
      )
      expect(objects.violations[0]?.actual).toMatch(/^\{"a":\{"a":/)
    }
  })

  it("a recursive parameter Schema decodes at the limit without overflowing", () => {
    interface Tree {
      readonly children: ReadonlyArray<Tree>
    }
    const Tree: Schema.Codec<Tree> = Schema.Struct({ children: Schema.Array(Schema.suspend(() => Tree)) })
    const decode = ToolArgs.decoder(
      Tool.make("bash", { description: "x", parameters: Schema.Struct({ root: Tree }), execute: () => Effect.succeed("") })
    )
    // Each level of the tree is an object and an array: with the arguments object, 127 levels
    // are 255 levels of JSON, 128 are 257.
    let tree = `{"children": []}`
    for (let i = 1; i < 127; i++) tree = `{"children": [${tree}]}`
    expect(Result.isSuccess(decode(`{"root": ${tree}}`))).toBe(true)
    expect(error(decode, `{"root": {"children": [${tree}]}}`).violations[0]?.kind).toBe("too-deep")
  })
})

describe("ToolArgs: tuples, unnamed checks and arguments that are no text", () => {
  const refused = (tool: Tool.Any, raw: string): ToolErrors.ToolArgsError => {
    const result = ToolArgs.decoder(tool)(raw)
    if (Result.isSuccess(result)) throw new Error(`expected ${raw} to be refused, got ${JSON.stringify(result.success)}`)
    return result.failure
  }
  const make = (parameters: Tool.ParametersSchema, excessKeys?: Tool.ExcessKeys) =>
    Tool.make("t", { description: "", parameters, ...(excessKeys === undefined ? {} : { excessKeys }), execute: () => Effect.succeed("") })

  it("an element past the end of a tuple is an unexpected element, under either policy, not a key of an object", () => {
    for (const policy of ["reject", "ignore"] as const) {
      const tool = make(Schema.Struct({ at: Schema.Tuple([Schema.String, Schema.optionalKey(Schema.Int)]) }), policy)
      const e = refused(tool, `{"at":["a",1,2]}`)
      expect(e.violations).toStrictEqual([{
        path: ["at", 2],
        kind: "unexpected-key",
        expected: "at most 2 elements",
        actual: "2",
        message: "Unexpected element (this array takes at most 2 elements)"
      }])
      // past the listed ones, they are counted at the array, by index
      const many = refused(tool, JSON.stringify({ at: ["a", 1, ...Array.from({ length: 100 }, (_, i) => i)] }))
      expect(many.violations).toHaveLength(11)
      expect(many.violations[10]).toStrictEqual({
        path: ["at"],
        kind: "unexpected-key",
        expected: "at most 2 elements",
        actual: "[12], [13], [14], …",
        message: "90 more unexpected elements beside those listed: [12], [13], [14], … (this array takes at most 2 elements)"
      })
    }
  })

  it("a check that names nothing is the parameters' check to the model, not Effect's <filter>", () => {
    const tool = make(Schema.Struct({ low: Schema.Int, high: Schema.Int }).check(Schema.makeFilter((o) => o.low < o.high)))
    expect(refused(tool, `{"low":2,"high":1}`).violations).toStrictEqual([{
      path: [],
      kind: "check",
      expected: "a value that passes the parameters' check",
      actual: `{"low":2,"high":1}`,
      message: `Expected a value that passes the parameters' check, got {"low":2,"high":1}`
    }])
    // a check's own words are kept
    const named = make(Schema.Struct({ n: Schema.Int.check(Schema.makeFilter((n) => n % 2 === 0, { message: "must be even" })) }))
    expect(refused(named, `{"n":3}`).violations[0]?.message).toBe("must be even, got 3")
    const expected = make(Schema.Struct({ n: Schema.Int.check(Schema.makeFilter((n) => n % 2 === 0, { expected: "an even number" })) }))
    expect(refused(expected, `{"n":3}`).violations[0]?.message).toBe("Expected an even number, got 3")
  })

  it("arguments that are no string (past the types) are INVALID_ARGS, not a TypeError", () => {
    const tool = make(Schema.Struct({ a: Schema.Int }))
    for (const [raw, actual] of [[undefined, "undefined"], [{ a: 1 }, `{"a":1}`], [null, "null"]] as const) {
      const e = refused(tool, raw as unknown as string)
      expect(e.code).toBe("INVALID_ARGS")
      expect(e.violations).toStrictEqual([{
        path: [],
        kind: "json-syntax",
        expected: "a JSON text",
        actual,
        message: `not a JSON text (a string) but ${actual}`
      }])
      expect(Result.isFailure(ToolArgs.parse("t", raw as unknown as string))).toBe(true)
    }
  })
})
