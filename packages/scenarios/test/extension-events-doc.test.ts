/**
 * docs/event-contract.md's table of extension events is kept true: it lists exactly the
 * session events the capabilities define (bash, files, MCP, permissions), each with its data
 * fields (optional ones marked `?`), so the doc cannot drift from the definitions.
 */
import { BashEvents } from "@dsh/bash"
import { Files } from "@dsh/files"
import { McpEvents } from "@dsh/mcp"
import { PermissionEvent } from "@dsh/permissions"
import type { SessionEvent } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { SchemaAST } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"

const doc = readFileSync(join(import.meta.dirname, "..", "..", "..", "docs", "event-contract.md"), "utf8")

const definitions: ReadonlyArray<SessionEvent.Definition<any, any>> = [
  ...BashEvents.definitions,
  Files.Changed,
  McpEvents.Restarted,
  PermissionEvent.Decision
]

/** A definition's data fields as the doc writes them: `name`, or `name?` when optional. */
const fieldsOf = (definition: SessionEvent.Definition<any, any>): Array<string> => {
  const fields = (definition.data as unknown as { readonly fields: Record<string, { readonly ast: SchemaAST.AST }> })
    .fields
  return Object.entries(fields).map(([name, schema]) => (SchemaAST.isOptional(schema.ast) ? `${name}?` : name))
}

/** The rows of the table: `| \`type\` | \`{a, b: …, c?}\` | … |`. */
const rows = doc.split("\n").flatMap((line) => {
  const match = /^\| `([a-z]+:[a-z-]+)` \| `\{(.*)\}` \| .+ \|$/.exec(line)
  if (match === null) return []
  // a field is its name, with `?` if optional, and maybe `: the values it takes`
  const fields = match[2]!.split(", ").map((field) => field.split(":")[0]!.trim())
  return [{ type: match[1]!, fields }]
})

describe("docs/event-contract.md: extension events", () => {
  it("lists the capabilities' session events, each with its data fields", () => {
    expect(rows).toStrictEqual(definitions.map((d) => ({ type: d.type, fields: fieldsOf(d) })))
  })
})
