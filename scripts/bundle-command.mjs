// The `dsh` command's bundle (docs/adr/0029-bundled-command.md): packages/dsh/src/bin.ts and
// everything it loads — the @dsh packages from their sources, effect, @effect/platform-node —
// bundled by rolldown into one entry file and the chunks its dynamic imports split off (a
// command's handler, an adapter, MCP), in packages/dsh/dist/bin. Node then loads a few dozen
// files instead of ~1,600 modules, each one resolved, read and linked on every start; the
// library's build (tsc, dist/*.js beside it) is untouched and is what `import "dsh"` loads.
//
// Kept outside the bundle: Node's built-in modules, and `undici`, which
// @effect/platform-node's NodeHttpClient loads only for its undici client (dsh uses the
// node:http one) and which re-exports CommonJS by `export *`, something a bundle cannot
// preserve; left external it stays correct if anything ever loads it.
//
// Used by scripts/build.mjs (`npm run build`) and by the command's bundle test, which bundles
// into a temporary directory.
import { rmSync } from "node:fs"
import { join } from "node:path"
import { build } from "rolldown"

const root = join(import.meta.dirname, "..")

/** Where `npm run build` writes the bundle: the package's `bin` points at its entry. */
export const defaultOutDir = join(root, "packages", "dsh", "dist", "bin")

/** The entry file's name in the output directory. */
export const entryName = "dsh.mjs"

/**
 * Bundles the command into `outDir` (emptied first); returns the entry file's path.
 * @param {string} [outDir]
 * @returns {Promise<string>}
 */
export const bundleCommand = async (outDir = defaultOutDir) => {
  rmSync(outDir, { recursive: true, force: true })
  await build({
    input: { dsh: join(root, "packages", "dsh", "src", "bin.ts") },
    cwd: root,
    platform: "node",
    logLevel: "warn",
    // the @dsh packages from their sources, as in the workspace (ADR 0017)
    resolve: { conditionNames: ["@dsh/source", "import", "node", "default"] },
    external: [/^node:/, "undici"],
    output: {
      dir: outDir,
      format: "esm",
      entryFileNames: "[name].mjs",
      chunkFileNames: "chunks/[name]-[hash].mjs",
      // the sources' JSDoc is not needed to run; license comments are kept
      comments: { legal: true, annotation: true, jsdoc: false }
    }
  })
  return join(outDir, entryName)
}

if (import.meta.main) {
  const started = Date.now()
  const entry = await bundleCommand(process.argv[2] ?? defaultOutDir)
  console.log(`bundled the dsh command into ${entry} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}
