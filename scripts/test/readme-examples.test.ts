/**
 * The root README's and every package README's examples (each ```ts block after `<!-- example -->`) run: each is
 * extracted to scratchpad/tmp, type-checked with the project's settings, run on the project's
 * Node, and what it prints must match its `// …` comments on lines that call `console.log`.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const root = join(import.meta.dirname, "..", "..")
const out = join(root, "scratchpad", "tmp", "readme-examples")

const examples = [
  { pkg: "root", readme: join(root, "README.md") },
  ...readdirSync(join(root, "packages")).map((pkg) => ({ pkg, readme: join(root, "packages", pkg, "README.md") }))
]
  .flatMap(({ pkg, readme }) => {
    if (!existsSync(readme)) return [{ pkg, code: undefined }]
    // every example of a README runs; the first one carries the package's name
    const blocks = [...readFileSync(readme, "utf8").matchAll(/<!-- example -->\s*```ts\n([\s\S]*?)```/g)]
    if (blocks.length === 0) return [{ pkg, code: undefined }]
    return blocks.map((block, i) => ({ pkg: i === 0 ? pkg : `${pkg}-${i + 1}`, code: block[1] }))
  })

// console.log outputs are compared without whitespace and quote style, which inspect varies
const normalize = (text: string) => text.replaceAll(/\s+/g, "").replaceAll("'", '"')

const expectedOutput = (code: string) =>
  code.split("\n").flatMap((line) => {
    const match = /console\.log\b.*\/\/ (.*)$/.exec(line)
    return match === null ? [] : [match[1]!]
  })

describe("package README examples", () => {
  mkdirSync(out, { recursive: true })
  for (const { pkg, code } of examples) {
    if (code !== undefined) writeFileSync(join(out, `${pkg}.ts`), code)
  }

  it("every package has a README with an example", () => {
    expect(examples.filter((e) => e.code === undefined).map((e) => e.pkg)).toStrictEqual([])
  })

  it("the examples type-check", () => {
    writeFileSync(
      join(out, "tsconfig.json"),
      JSON.stringify({ extends: "../../../tsconfig.base.json", include: ["*.ts"] })
    )
    const tsc = join(root, "node_modules", ".bin", "tsc")
    expect(() => execFileSync(tsc, ["--noEmit", "-p", join(out, "tsconfig.json")], { encoding: "utf8" })).not.toThrow()
  })

  for (const { pkg, code } of examples) {
    if (code === undefined) continue
    it(`${pkg}: runs and prints what its comments say`, () => {
      const stdout = execFileSync(process.execPath, [join(out, `${pkg}.ts`)], { encoding: "utf8" })
      expect(normalize(stdout)).toBe(normalize(expectedOutput(code).join("")))
    })
  }
})
