#!/usr/bin/env node
// `npm run build`: the publishable build of every public package (docs/adr/0017): declarations
// and their maps in packages/<name>/dist, emitted by `tsc` from src/ with the package's
// tsconfig.build.json, and the JavaScript of each entry point the package exports bundled by
// rolldown into one file (with a source map), other packages left as imports (ADR 0032): Node
// loads a package in a few modules rather than one per source file, which halves what
// importing dsh's packages costs. Packages build in layer order (scripts/layers.mjs), since each
// resolves the other @dsh packages it imports to their built declarations. Files under src/
// that are not TypeScript (the DeepSeek testing kit's wire fixtures) are copied beside the
// JavaScript that loads them. The workspace itself never reads dist/ (it resolves @dsh/* to
// sources through the @dsh/source condition), so a stale build cannot affect a test.
//
// The `dsh` command is bundled after its package's build (scripts/bundle-command.mjs, ADR 0029):
// packages/dsh/dist/bin, which the package's `bin` points at.
//
// `npm run build -- <name> …` builds only those packages (their dependencies must be built).
import { spawnSync } from "node:child_process"
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { build as bundle } from "rolldown"
import { bundleCommand } from "./bundle-command.mjs"
import { ALL_PACKAGES, UMBRELLA_PACKAGE } from "./layers.mjs"

const root = join(import.meta.dirname, "..")
const tsc = join(root, "node_modules", ".bin", "tsc")

/** The public packages, in layer order: those with a package.json that is not private. */
export const publicPackages = () =>
  ALL_PACKAGES.filter((name) => {
    const manifest = join(root, "packages", name, "package.json")
    return existsSync(manifest) && JSON.parse(readFileSync(manifest, "utf8")).private !== true
  })

const walk = (dir) =>
  readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry)
    return statSync(path).isDirectory() ? walk(path) : [path]
  })

// Declarations keep the sources' relative `.ts` specifiers (tsc rewrites them only in the
// JavaScript); a consumer's tsc without allowImportingTsExtensions must see `.js` ones.
const rewriteDeclarationSpecifiers = (file) => {
  const text = readFileSync(file, "utf8")
  const rewritten = text.replace(/((?:from|import)\s*\(?\s*["'])(\.\.?\/[^"']+)\.ts(["'])/g, "$1$2.js$3")
  if (rewritten !== text) writeFileSync(file, rewritten)
}

const build = async (name) => {
  const dir = join(root, "packages", name)
  rmSync(join(dir, "dist"), { recursive: true, force: true })
  const run = spawnSync(tsc, ["-p", join(dir, "tsconfig.build.json")], { stdio: "inherit", cwd: root })
  if (run.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed for @dsh/${name}`)
  for (const file of walk(join(dir, "dist"))) {
    if (file.endsWith(".d.ts")) rewriteDeclarationSpecifiers(file)
    // tsc's JavaScript, one file per source module, gives way to the bundled entry points
    else if (file.endsWith(".js") || file.endsWith(".js.map")) rmSync(file)
  }
  await bundleEntries(dir)
  for (const file of walk(join(dir, "src"))) {
    if (file.endsWith(".ts")) continue
    const target = join(dir, "dist", relative(join(dir, "src"), file))
    cpSync(file, target, { recursive: true })
    void dirname
  }
  if (name === UMBRELLA_PACKAGE) await bundleCommand()
}

/**
 * The package's entry points (its `exports`' sources, e.g. `src/testing/index.ts`) bundled into
 * dist at the paths its `exports` name (`dist/testing/index.js`); what two entry points share
 * goes into a chunk under dist/chunks. Every import that is not relative (effect, the other
 * @dsh packages, node:) stays an import, so each module still exists once in an application.
 */
const bundleEntries = async (dir) => {
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))
  const input = Object.fromEntries(
    Object.values(manifest.exports ?? {}).map((target) => {
      const source = target["@dsh/source"]
      const name = relative("src", source.replace(/^\.\//, "")).replace(/\.ts$/, "")
      return [name, join(dir, source)]
    })
  )
  if (Object.keys(input).length === 0) return
  await bundle({
    cwd: dir,
    input,
    platform: "node",
    logLevel: "warn",
    external: (id) => !id.startsWith(".") && !id.startsWith("/"),
    // the JSDoc is in the declarations; license comments are kept
    output: {
      dir: join(dir, "dist"),
      format: "esm",
      entryFileNames: "[name].js",
      chunkFileNames: "chunks/[name]-[hash].js",
      sourcemap: true,
      comments: { legal: true, annotation: true, jsdoc: false }
    }
  })
}

if (import.meta.main) {
  const only = process.argv.slice(2)
  const names = only.length === 0 ? publicPackages() : publicPackages().filter((name) => only.includes(name))
  const started = Date.now()
  for (const name of names) {
    await build(name)
    console.log(`built @dsh/${name}`)
  }
  console.log(`${names.length} package(s) built in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}
