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
  readonly fault: string
  readonly codes: ReadonlyArray<string>
  readonly file: string
  readonly test: string
}

const rows: ReadonlyArray<Row> = (() => {
  const table = doc.slice(doc.indexOf("<!-- faults:begin -->"), doc.indexOf("<!-- faults:end -->"))
  return table.split("\n").filter((line) => line.startsWith("| ") && !line.startsWith("| fault ")).map((line) => {
    // cells are split on pipes that are not escaped
    const cells = line.slice(2, -2).split(/(?<!\\) \| /)
    expect(cells, line).toHaveLength(5)
    const [fault, , , code, proof] = cells as [string, string, string, string, string]
    const proved = /^`([^`]+)` › "([^"]+)"$/.exec(proof)
    expect(proved, `the proof of "${fault}" reads \`file\` › "test name"`).not.toBeNull()
    const codes = code === "—" ? [] : [...code.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]!)
    return { fault, codes, file: proved![1]!, test: proved![2]! }
  })
})()

describe("docs/faults.md", () => {
  it("has a row for every fault of the hardening issue and more", () => {
    expect(rows.length).toBeGreaterThanOrEqual(30)
  })

  for (const row of rows) {
    it(`${row.fault}: the named test exists and the codes are catalog codes`, () => {
      const file = join(root, row.file)
      expect(existsSync(file), row.file).toBe(true)
      expect(readFileSync(file, "utf8").includes(row.test), `"${row.test}" in ${row.file}`).toBe(true)
      for (const code of row.codes) expect(ErrorCode.isErrorCode(code), code).toBe(true)
    })
  }
})
