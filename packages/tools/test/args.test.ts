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
        `- at command: Missing key`,
        `- at mode: Missing key`
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
      { path: [], message: "not valid JSON: expected a JSON value, found 'l' at line 1, column 1" }
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
        `- at command: Missing key`,
        `- at mode: Expected "read" | "write", got "exec"`,
        `- at timeoutMs: Expected an integer, got -1.5`,
        `- at timeoutMs: Expected a value greater than 0, got -1.5`,
        `- at dryRun: Expected boolean, got "yes"`,
        `- at env[1].value: Expected string, got 2`,
        `- at env[2].name: Missing key`,
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
