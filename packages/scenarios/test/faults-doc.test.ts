/**
 * docs/faults.md is kept true by the tests: every row names a test (or the describe block of
 * tests) that injects its fault, in a file that exists, and ends in catalog codes only.
 */
import { ErrorCode } from "@dsh/llm"
import { describe, expect, it } from "@effect/vitest"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"

const root = join(import.meta.dirname, "..", "..", "..")
const doc = readFileSync(join(root, "docs", "faults.md"), "utf8")

interface Row {
  readonly line: string
  readonly fault: string
  readonly codes: ReadonlyArray<string>
  readonly file: string | undefined
  readonly test: string | undefined
}

const rowOf = (line: string): Row => {
  // cells are split on pipes that are not escaped
  const cells = line.slice(2, -2).split(/(?<!\\) \| /)
  const [fault = "", , , code = "", proof = ""] = cells
  const proved = /^`([^`]+)` › "([^"]+)"$/.exec(proof)
  const codes = code === "—" ? [] : [...code.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]!)
  return { line, fault, codes, file: cells.length === 5 ? proved?.[1] : undefined, test: proved?.[2] }
}

const table = doc.slice(doc.indexOf("<!-- faults:begin -->"), doc.indexOf("<!-- faults:end -->"))
const rows = table.split("\n").filter((line) => line.startsWith("| ") && !line.startsWith("| fault ")).map(rowOf)

describe("docs/faults.md", () => {
  it("has a row for every fault of the hardening issue and more", () => {
    expect(rows.length).toBeGreaterThanOrEqual(30)
  })

  for (const row of rows) {
    it(`${row.fault}: the named test exists and the codes are catalog codes`, () => {
      expect(row.file, `five cells, the last one \`file\` › "test name": ${row.line}`).toBeDefined()
      expect(row.test).toBeDefined()
      const file = join(root, row.file!)
      expect(existsSync(file), row.file).toBe(true)
      expect(readFileSync(file, "utf8").includes(row.test!), `"${row.test}" in ${row.file}`).toBe(true)
      for (const code of row.codes) expect(ErrorCode.isErrorCode(code), code).toBe(true)
    })
  }
})
