// The `dsh` command's bundle (docs/adr/0029-bundled-command.md): packages/dsh/src/command.ts
// and everything it loads — the @dsh packages from their sources, effect, @effect/platform-node
// — bundled by rolldown into one CommonJS script, `dsh-command.cjs`, in which what the sources
// import dynamically (a command's handler, an adapter, MCP) stays lazily initialized; and
// beside it the launcher the package's `bin` points at, `dsh.cjs` (packages/dsh/src/launcher.ts),
// which runs the script with a V8 code cache made after an earlier run. Node then reads two
// files instead of resolving, reading and linking ~800 modules on every start; the library's
// build (tsc, dist/*.js beside it) is untouched and is what `import "dsh"` loads.
//
// Kept outside the bundle: Node's built-in modules, and `undici`, which
// @effect/platform-node's NodeHttpClient loads only for its undici client (dsh uses the
// node:http one) and which re-exports CommonJS by `export *`, something a bundle cannot
// preserve; left external it stays correct if anything ever loads it.
//
// Used by scripts/build.mjs (`npm run build`), by the command's bundle test and by the startup
// benchmark, which bundle into temporary directories.
import { rmSync } from "node:fs"
import { join } from "node:path"
import { build } from "rolldown"

const root = join(import.meta.dirname, "..")

/** Where `npm run build` writes the bundle: the package's `bin` points at its entry. */
export const defaultOutDir = join(root, "packages", "dsh", "dist", "bin")

/** The entry file's name in the output directory. */
export const entryName = "dsh.cjs"

/**
 * Bundles the command into `outDir` (emptied first); returns the entry file's path.
 * @param {string} [outDir]
 * @returns {Promise<string>}
 */
export const bundleCommand = async (outDir = defaultOutDir) => {
  rmSync(outDir, { recursive: true, force: true })
  const common = {
    cwd: root,
    platform: "node",
    logLevel: "warn",
    // the @dsh packages from their sources, as in the workspace (ADR 0017)
    resolve: { conditionNames: ["@dsh/source", "import", "node", "default"] },
    external: [/^node:/, "undici"],
    // effect's ConfigProvider reads Vite's `import.meta.env`, which Node has not
    transform: { define: { "import.meta.env": "undefined" } }
  }
  // the sources' JSDoc is not needed to run; license comments are kept
  const comments = { legal: true, annotation: true, jsdoc: false }
  const dsh = join(root, "packages", "dsh", "src")
  await build({
    ...common,
    input: { "dsh-command": join(dsh, "command.ts") },
    output: { dir: outDir, format: "cjs", entryFileNames: "[name].cjs", codeSplitting: false, comments }
  })
  await build({
    ...common,
    input: { dsh: join(dsh, "launcher.ts") },
    output: { dir: outDir, format: "cjs", entryFileNames: "[name].cjs", comments }
  })
  return join(outDir, entryName)
}

if (import.meta.main) {
  const started = Date.now()
  const entry = await bundleCommand(process.argv[2] ?? defaultOutDir)
  console.log(`bundled the dsh command into ${entry} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}
