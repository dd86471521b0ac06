import { Rules } from "@dsh/invariants"
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { join } from "node:path"

const doc = readFileSync(join(import.meta.dirname, "..", "..", "..", "docs", "event-contract.md"), "utf8")

describe("docs/event-contract.md", () => {
  it("lists exactly the rules of Rules.ts, in order, with their descriptions", () => {
    const rows = doc.split("\n").flatMap((line) => {
      const match = /^\| `([a-z-]+)` \| (.*) \|$/.exec(line)
      return match === null ? [] : [{ rule: match[1]!, text: match[2]!.replaceAll("\\|", "|") }]
    })
    expect(rows).toStrictEqual(Rules.names.map((rule) => ({ rule, text: Rules.rules[rule] })))
  })
})
