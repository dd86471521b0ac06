/**
 * Input schemas from servers are checked before registration: bounded depth and size, walked
 * without recursion, copied as plain JSON without `$schema`.
 */
import { InputSchemas } from "@dsh/mcp"
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"

// Built in a loop: a recursive builder would itself overflow at this depth.
const nested = (depth: number, key: "properties" | "items") => {
  let schema: Record<string, unknown> = { type: "string" }
  for (let i = 0; i < depth; i++) {
    schema = key === "items" ? { type: "array", items: [schema] } : { type: "object", properties: { a: schema } }
  }
  return schema
}

describe("InputSchemas.check", () => {
  it("returns a plain copy without the root's $schema", () => {
    const schema = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { path: { type: "string" } },
      required: ["path"]
    }
    const checked = Result.getOrThrow(InputSchemas.check(schema))
    expect(checked).toStrictEqual({ type: "object", properties: { path: { type: "string" } }, required: ["path"] })
    expect(checked["properties"]).not.toBe(schema.properties)
  })

  it("refuses a schema nested 100,000 levels deep without overflowing the stack", () => {
    expect(InputSchemas.check(nested(100_000, "properties"))).toStrictEqual(
      Result.fail("its input schema nests deeper than 64 levels")
    )
    // arrays count as levels too
    expect(InputSchemas.check({ type: "object", properties: { x: nested(100_000, "items") } })).toStrictEqual(
      Result.fail("its input schema nests deeper than 64 levels")
    )
  })

  it("accepts a schema at the depth limit and refuses one level more", () => {
    // each nesting adds two levels (the schema and its properties); the root is level 1
    expect(InputSchemas.depthOf(nested(31, "properties"), 1000)).toBe(63)
    expect(Result.isSuccess(InputSchemas.check(nested(31, "properties")))).toBe(true)
    expect(Result.isSuccess(InputSchemas.check(nested(32, "properties"), { maxDepth: 64, maxBytes: 65536 }))).toBe(false)
  })

  it("refuses a schema larger than the limit, in UTF-8 bytes", () => {
    const schema = { type: "object", description: "é".repeat(40_000) }
    expect(InputSchemas.check(schema)).toStrictEqual(
      Result.fail("its input schema is 80034 bytes of JSON, more than the limit of 65536")
    )
    expect(Result.isSuccess(InputSchemas.check(schema, { maxDepth: 64, maxBytes: 100_000 }))).toBe(true)
  })

  it("refuses what is not an object schema", () => {
    for (const schema of [null, [], "object", { type: "string" }, { properties: {} }]) {
      expect(InputSchemas.check(schema)).toStrictEqual(Result.fail('its input schema is not a JSON Schema of type "object"'))
    }
  })
})
