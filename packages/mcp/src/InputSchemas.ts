/**
 * The JSON Schemas MCP servers send for their tools' inputs, checked before a tool is
 * registered. A schema goes into every model request (the tool list), into the session log
 * (`model/request` settings) and through `JSON.stringify` on the way to the provider, so a
 * server could break all three with one tool: a schema nested 100,000 levels deep overflows
 * the stack of every recursive walk, and a megabyte of schema costs its tokens on every step.
 *
 * {@link check} walks the schema iteratively (nothing it does recurses) and refuses one that
 * nests deeper than `maxDepth` objects and arrays or whose JSON is longer than `maxBytes`; the
 * refused tool is not registered and the reason is logged. What it returns is a fresh plain
 * copy without the root's `$schema` (dsh's wire schemas carry none).
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"

/**
 * The bounds of an input schema.
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits {
  /** How deep objects and arrays may nest (the root object is level 1). */
  readonly maxDepth: number
  /** How long the schema's JSON may be, in UTF-8 bytes. */
  readonly maxBytes: number
}

/**
 * The default bounds: 64 levels (32 levels of nested schemas, each `properties` adding one)
 * and 64 KiB, far beyond what the reference servers send (the largest of theirs is under
 * 1 KiB) and small enough for every request to carry.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultLimits: Limits = { maxDepth: 64, maxBytes: 64 * 1024 }

const encoder = new TextEncoder()

/**
 * How deep a JSON value nests, walked iteratively and given up past `limit` (then `limit + 1`).
 *
 * @since 0.1.0
 * @category checks
 */
export const depthOf = (value: unknown, limit: number): number => {
  let deepest = 0
  const stack: Array<readonly [unknown, number]> = [[value, 1]]
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!
    if (!Predicate.isObjectOrArray(current)) continue
    if (depth > limit) return limit + 1
    if (depth > deepest) deepest = depth
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (Predicate.isObjectOrArray(child)) stack.push([child, depth + 1])
    }
  }
  return deepest
}

/**
 * Checks a tool's input schema against the limits: the schema to register, or why the tool is
 * refused.
 *
 * @since 0.1.0
 * @category checks
 */
export const check = (schema: unknown, limits: Limits = defaultLimits): Result.Result<Schema.JsonObject, string> => {
  if (!Predicate.isObject(schema) || schema["type"] !== "object") {
    return Result.fail('its input schema is not a JSON Schema of type "object"')
  }
  if (depthOf(schema, limits.maxDepth) > limits.maxDepth) {
    return Result.fail(`its input schema nests deeper than ${limits.maxDepth} levels`)
  }
  let json: string
  try {
    json = JSON.stringify(schema)
  } catch (cause) {
    // Values decoded from JSON always serialize; anything else is not a schema.
    return Result.fail(`its input schema is not JSON: ${cause instanceof Error ? cause.message : String(cause)}`)
  }
  const bytes = encoder.encode(json).length
  if (bytes > limits.maxBytes) {
    return Result.fail(`its input schema is ${bytes} bytes of JSON, more than the limit of ${limits.maxBytes}`)
  }
  // A fresh copy of plain JSON values (no class instances, nothing shared with the client).
  const { $schema: _, ...copy } = JSON.parse(json) as Schema.JsonObject
  return Result.succeed(copy)
}
