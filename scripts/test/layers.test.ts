// Proves the layering gate (`npm run deps:check`) really fails on bad dependency directions.
//
// Each case builds a throw-away monorepo under os.tmpdir() shaped like this one:
//   package.json                         (npm workspaces: packages/*)
//   packages/<name>/package.json         (@dsh/<name>, exports "./src/index.ts")
//   packages/<name>/src/index.ts
//   node_modules/@dsh/<name> -> ../../packages/<name>   (what npm's workspace install creates)
// and runs the real gate on it: the dependency-cruiser CLI with this repository's
// .dependency-cruiser.cjs (cwd = the fixture), and scripts/check-layers.mjs --root <fixture>.
// So @dsh/<name> imports are tested in their real form, resolved through the symlinks.

import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { ALL_PACKAGES, APPS_LAYER, LAYERS, LOOP_PACKAGE, layerIndexOf, mayDependOn } from "../layers.mjs"

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const depcruiseBin = join(repoRoot, "node_modules", "dependency-cruiser", "bin", "dependency-cruiser.mjs")
const depcruiseConfig = join(repoRoot, ".dependency-cruiser.cjs")
const checkLayersScript = join(repoRoot, "scripts", "check-layers.mjs")

interface PackageSpec {
  /** Source of packages/<name>/src/index.ts (default: an export without imports). */
  readonly source?: string
  /** Extra package.json fields, e.g. dependencies. */
  readonly manifest?: Readonly<Record<string, unknown>>
  /** false: create the directory and package.json but no sources. */
  readonly sources?: boolean
}

const fixtureRoots: string[] = []

afterAll(() => {
  for (const root of fixtureRoots) rmSync(root, { recursive: true, force: true })
})

function makeFixture(packages: Readonly<Record<string, PackageSpec>>): string {
  const root = mkdtempSync(join(tmpdir(), "dsh-layers-"))
  fixtureRoots.push(root)
  writeFileSync(
    join(root, "package.json"),
    JSON.stringify({ name: "fixture", private: true, type: "module", workspaces: ["packages/*"] }, null, 2)
  )
  mkdirSync(join(root, "node_modules", "@dsh"), { recursive: true })
  for (const [name, spec] of Object.entries(packages)) {
    const dir = join(root, "packages", name)
    mkdirSync(join(dir, "src"), { recursive: true })
    const manifest = { name: `@dsh/${name}`, version: "0.0.0", type: "module", exports: { ".": "./src/index.ts" }, ...spec.manifest }
    writeFileSync(join(dir, "package.json"), JSON.stringify(manifest, null, 2))
    if (spec.sources !== false) {
      writeFileSync(join(dir, "src", "index.ts"), spec.source ?? `export const name = ${JSON.stringify(name)}\n`)
    }
    symlinkSync(join("..", "..", "packages", name), join(root, "node_modules", "@dsh", name), "dir")
  }
  return root
}

interface Violation {
  readonly rule: string
  readonly from: string
  readonly to: string
}

interface CruiseOutcome {
  /** exit code of the CLI with its default ("err") reporter: what `npm run deps:check` sees */
  readonly status: number | null
  readonly output: string
  /** the violations, from a second run with the json reporter */
  readonly violations: readonly Violation[]
}

function runDepcruise(root: string): CruiseOutcome {
  const base = [depcruiseBin, "--config", depcruiseConfig, "--no-progress"]
  const err = spawnSync(process.execPath, [...base, "packages"], { cwd: root, encoding: "utf8" })
  const json = spawnSync(process.execPath, [...base, "--output-type", "json", "packages"], { cwd: root, encoding: "utf8" })
  if (json.status !== 0) throw new Error(`depcruise --output-type json failed:\n${json.stderr}`)
  const result = JSON.parse(json.stdout) as {
    summary: { violations: ReadonlyArray<{ rule: { name: string }; from: string; to: string }> }
  }
  return {
    status: err.status,
    output: `${err.stdout}${err.stderr}`,
    violations: result.summary.violations.map((v) => ({ rule: v.rule.name, from: v.from, to: v.to }))
  }
}

function runCheckLayers(root: string): { readonly status: number | null; readonly output: string } {
  const run = spawnSync(process.execPath, [checkLayersScript, "--root", root], { encoding: "utf8" })
  return { status: run.status, output: `${run.stdout}${run.stderr}` }
}

const rulesOf = (outcome: CruiseOutcome): string[] => [...new Set(outcome.violations.map((v) => v.rule))].sort()

describe("the layer table (scripts/layers.mjs)", () => {
  it("follows the design's order, lowest first", () => {
    expect(LAYERS.map((layer) => layer.name)).toEqual([
      "vocabulary + errors",
      "model seam",
      "session",
      "session stores",
      "system prompt",
      "tools",
      "agent",
      "loop",
      "capabilities",
      "model wires",
      "model adapters",
      "invariants",
      "testing",
      "apps"
    ])
    expect(LAYERS.map((layer) => layer.packages)).toEqual([
      ["llm"],
      ["model"],
      ["session"],
      ["sql-sessions"],
      ["prompt"],
      ["tools"],
      ["agent"],
      ["loop"],
      ["bash", "mcp", "files", "permissions"],
      ["openai"],
      ["deepseek", "anthropic", "effect-ai"],
      ["invariants"],
      ["testing"],
      ["cli", "cluster", "dsh", "examples", "scenarios"]
    ])
    expect(new Set(ALL_PACKAGES).size).toBe(ALL_PACKAGES.length)
    expect(LOOP_PACKAGE).toBe("loop")
    expect(APPS_LAYER).toBe("apps")
  })

  it("allows only strictly lower layers, and the loop only to apps", () => {
    const apps = LAYERS.find((layer) => layer.name === APPS_LAYER)?.packages ?? []
    for (const from of ALL_PACKAGES) {
      for (const to of ALL_PACKAGES) {
        if (from === to) continue
        const expected = to === LOOP_PACKAGE ? apps.includes(from) : layerIndexOf(to) < layerIndexOf(from)
        expect(mayDependOn(from, to), `${from} -> ${to}`).toBe(expected)
      }
    }
    expect(mayDependOn("bash", "mcp")).toBe(false)
    expect(mayDependOn("testing", "loop")).toBe(false)
    expect(mayDependOn("cli", "loop")).toBe(true)
    expect(mayDependOn("examples", "loop")).toBe(true)
    expect(mayDependOn("nope", "llm")).toBe(false)
  })

  it("is the table the dependency-cruiser config is generated from", () => {
    const require = createRequire(import.meta.url)
    const config = require(depcruiseConfig) as {
      forbidden: ReadonlyArray<{ name: string }>
      options: { parser: string; tsPreCompilationDeps: boolean }
    }
    const names = config.forbidden.map((rule) => rule.name)
    // one layer rule per package (even the apps: cli and examples are siblings)
    const expected = ALL_PACKAGES.map((pkg) => `layer-${pkg}`)
    expect(names.filter((name) => name.startsWith("layer-")).sort()).toEqual(expected.sort())
    expect(names).toEqual(
      expect.arrayContaining([
        "no-loop-outside-apps",
        "unknown-package",
        "no-cross-package-relative",
        "no-circular",
        "not-to-unresolvable"
      ])
    )
    expect(config.options.parser).toBe("swc")
    expect(config.options.tsPreCompilationDeps).toBe(true)
  })
})

describe("dependency-cruiser with .dependency-cruiser.cjs", () => {
  it("(a) passes model importing llm", () => {
    const root = makeFixture({
      llm: {},
      model: { source: 'import { name } from "@dsh/llm"\nexport const model = name\n' }
    })
    const outcome = runDepcruise(root)
    expect(outcome.violations).toEqual([])
    expect(outcome.status, outcome.output).toBe(0)
    expect(outcome.output).toContain("no dependency violations found (2 modules, 1 dependencies cruised)")
  })

  it("(b) fails llm importing model (a higher layer), naming the rule", () => {
    const root = makeFixture({
      llm: { source: 'import { name } from "@dsh/model"\nexport const llm = name\n' },
      model: {}
    })
    const outcome = runDepcruise(root)
    expect(outcome.violations).toEqual([
      { rule: "layer-llm", from: "packages/llm/src/index.ts", to: "packages/model/src/index.ts" }
    ])
    expect(outcome.status).not.toBe(0)
    expect(outcome.output).toContain("error layer-llm: packages/llm/src/index.ts → packages/model/src/index.ts")
  })

  it("(b') counts a type-only import (tsPreCompilationDeps with the swc parser)", () => {
    const root = makeFixture({
      llm: { source: 'import type { Name } from "@dsh/model"\nexport const llm: Name = "llm"\n' },
      model: { source: "export type Name = string\n" }
    })
    const outcome = runDepcruise(root)
    expect(rulesOf(outcome)).toEqual(["layer-llm"])
    expect(outcome.status).not.toBe(0)
  })

  it("(c) fails tools importing loop", () => {
    const root = makeFixture({
      tools: { source: 'export * from "@dsh/loop"\n' },
      loop: {}
    })
    const outcome = runDepcruise(root)
    expect(outcome.violations).toEqual([
      { rule: "no-loop-outside-apps", from: "packages/tools/src/index.ts", to: "packages/loop/src/index.ts" }
    ])
    expect(outcome.status).not.toBe(0)
  })

  it("(c') fails a package above the loop (testing) importing loop", () => {
    const root = makeFixture({
      testing: { source: 'import "@dsh/loop"\n' },
      loop: {}
    })
    const outcome = runDepcruise(root)
    expect(rulesOf(outcome)).toEqual(["no-loop-outside-apps"])
    expect(outcome.status).not.toBe(0)
  })

  it("(d) fails bash importing mcp (same layer)", () => {
    const root = makeFixture({
      bash: { source: 'import { name } from "@dsh/mcp"\nexport const bash = name\n' },
      mcp: {}
    })
    const outcome = runDepcruise(root)
    expect(outcome.violations).toEqual([
      { rule: "layer-bash", from: "packages/bash/src/index.ts", to: "packages/mcp/src/index.ts" }
    ])
    expect(outcome.status).not.toBe(0)
  })

  it("(d') fails cli importing examples (same layer, apps)", () => {
    const root = makeFixture({ cli: { source: 'import "@dsh/examples"\n' }, examples: {} })
    const outcome = runDepcruise(root)
    expect(rulesOf(outcome)).toEqual(["layer-cli"])
    expect(outcome.status).not.toBe(0)
  })

  it("(e) passes cli (apps) importing loop, and examples importing loop and lower layers", () => {
    const root = makeFixture({
      llm: {},
      agent: { source: 'export * from "@dsh/llm"\n' },
      loop: { source: 'export * from "@dsh/agent"\n' },
      bash: { source: 'export * from "@dsh/agent"\n' },
      cli: { source: 'import "@dsh/loop"\nimport "@dsh/bash"\n' },
      examples: { source: 'import "@dsh/loop"\nimport "@dsh/llm"\n' }
    })
    const outcome = runDepcruise(root)
    expect(outcome.violations).toEqual([])
    expect(outcome.status, outcome.output).toBe(0)
  })

  it("(f) fails on a directory of packages/ that is not in the layer table", () => {
    const root = makeFixture({
      llm: {},
      // an orphan module (no imports, not imported)
      widgets: {},
      // a module with a dependency
      gadgets: { source: 'import "@dsh/llm"\n' }
    })
    const outcome = runDepcruise(root)
    expect(rulesOf(outcome)).toEqual(["unknown-package"])
    expect(outcome.violations.map((v) => v.from).sort()).toEqual([
      "packages/gadgets/src/index.ts",
      "packages/widgets/src/index.ts"
    ])
    expect(outcome.status).not.toBe(0)

    const check = runCheckLayers(root)
    expect(check.status, check.output).toBe(1)
    expect(check.output).toContain("unknown-package: packages/gadgets is not in the layer table")
    expect(check.output).toContain("unknown-package: packages/widgets is not in the layer table")
  })

  it("(f') check-layers fails on an unknown package without any source", () => {
    const root = makeFixture({ llm: {}, empty: { sources: false } })
    const check = runCheckLayers(root)
    expect(check.status, check.output).toBe(1)
    expect(check.output).toContain("unknown-package: packages/empty")
  })

  it("fails a relative import into another package, without masking the layer rule", () => {
    const root = makeFixture({
      llm: { source: 'export * from "../../model/src/index.ts"\n' },
      model: {},
      tools: { source: 'export * from "../../llm/src/index.ts"\n' }
    })
    const outcome = runDepcruise(root)
    const byFrom = (from: string): string[] =>
      outcome.violations.filter((v) => v.from === from).map((v) => v.rule).sort()
    // downward but relative: only the relative-import rule
    expect(byFrom("packages/tools/src/index.ts")).toEqual(["no-cross-package-relative"])
    // upward and relative: both rules
    expect(byFrom("packages/llm/src/index.ts")).toEqual(["layer-llm", "no-cross-package-relative"])
    expect(outcome.status).not.toBe(0)
  })

  it("fails an import of @effect/schema (Effect 3)", () => {
    const root = makeFixture({ llm: { source: 'import { Schema } from "@effect/schema"\nexport const S = Schema\n' } })
    const schemaDir = join(root, "node_modules", "@effect", "schema")
    mkdirSync(schemaDir, { recursive: true })
    writeFileSync(
      join(schemaDir, "package.json"),
      JSON.stringify({ name: "@effect/schema", version: "0.75.0", type: "module", exports: { ".": "./index.js" } })
    )
    writeFileSync(join(schemaDir, "index.js"), "export const Schema = {}\n")
    const outcome = runDepcruise(root)
    expect(rulesOf(outcome)).toEqual(["no-effect-schema"])
    expect(outcome.status).not.toBe(0)
  })

  it("fails cycles and unresolvable imports", () => {
    const root = makeFixture({
      llm: {
        source: 'import "./a.ts"\nimport "@dsh/not-a-package"\nimport "./missing.ts"\n'
      }
    })
    writeFileSync(join(root, "packages", "llm", "src", "a.ts"), 'import "./b.ts"\n')
    writeFileSync(join(root, "packages", "llm", "src", "b.ts"), 'import "./a.ts"\n')
    const outcome = runDepcruise(root)
    expect(rulesOf(outcome)).toEqual(["no-circular", "not-to-unresolvable"])
    expect(outcome.violations.filter((v) => v.rule === "not-to-unresolvable").map((v) => v.to).sort()).toEqual([
      "./missing.ts",
      "@dsh/not-a-package"
    ])
    expect(outcome.status).not.toBe(0)
  })
})

describe("scripts/check-layers.mjs (package.json dependencies)", () => {
  it("passes downward dependencies, and apps depending on loop", () => {
    const root = makeFixture({
      llm: {},
      model: { manifest: { dependencies: { "@dsh/llm": "*" } } },
      loop: { manifest: { dependencies: { "@dsh/model": "*" } } },
      cli: { manifest: { dependencies: { "@dsh/loop": "*", "@dsh/llm": "*", effect: "4.1.0" } } }
    })
    const check = runCheckLayers(root)
    expect(check.status, check.output).toBe(0)
    expect(check.output).toContain("4 packages, 4 @dsh/* dependencies, all downward")
  })

  it("(g) fails a dependency on a higher layer", () => {
    const root = makeFixture({
      llm: { manifest: { dependencies: { "@dsh/model": "*" } } },
      model: {}
    })
    const check = runCheckLayers(root)
    expect(check.status, check.output).toBe(1)
    expect(check.output).toContain('layer-llm: packages/llm/package.json dependencies "@dsh/model"')
  })

  it("(g) fails devDependencies / peerDependencies on the same layer or on loop", () => {
    const root = makeFixture({
      bash: { manifest: { devDependencies: { "@dsh/mcp": "*" } } },
      mcp: {},
      tools: { manifest: { peerDependencies: { "@dsh/loop": "*" } } },
      loop: {}
    })
    const check = runCheckLayers(root)
    expect(check.status, check.output).toBe(1)
    expect(check.output).toContain('layer-bash: packages/bash/package.json devDependencies "@dsh/mcp"')
    expect(check.output).toContain('no-loop-outside-apps: packages/tools/package.json peerDependencies "@dsh/loop"')
  })

  it("fails a dependency on @effect/schema", () => {
    const root = makeFixture({ llm: { manifest: { dependencies: { "@effect/schema": "^0.75.0", effect: "4.1.0" } } } })
    const check = runCheckLayers(root)
    expect(check.status, check.output).toBe(1)
    expect(check.output).toContain('no-effect-schema: packages/llm/package.json dependencies "@effect/schema"')
  })

  it("fails a dependency on a package missing from the table, and a misnamed package", () => {
    const root = makeFixture({
      llm: { manifest: { name: "@dsh/vocabulary" } },
      model: { manifest: { dependencies: { "@dsh/nope": "*" } } }
    })
    const check = runCheckLayers(root)
    expect(check.status, check.output).toBe(1)
    expect(check.output).toContain('unknown-package: packages/model/package.json dependencies "@dsh/nope"')
    expect(check.output).toContain('package-name: packages/llm/package.json is named "@dsh/vocabulary"')
  })
})
