#!/usr/bin/env node
// Checks the package manifests against the layer table in scripts/layers.mjs
// (the import graph itself is checked by dependency-cruiser, see .dependency-cruiser.cjs):
//
//   - every directory under packages/ is listed in the table (a new package must be given a layer)
//     and holds a package.json named @dsh/<directory name>;
//   - no package declares @effect/schema (the Effect 3 package; Schema comes from "effect");
//   - every @dsh/* entry of dependencies / devDependencies / peerDependencies /
//     optionalDependencies names a known package of a strictly lower layer, and only apps
//     packages may depend on the loop package.
//
// Usage: node scripts/check-layers.mjs [--root <repo root>]   (default: this repository)
// Exit code 0 when clean, 1 when any problem is found.

import { existsSync, readFileSync, readdirSync } from "node:fs"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { APPS_LAYER, LAYERS, LOOP_PACKAGE, SCOPE, layerIndexOf, mayDependOn, packageNameOf } from "./layers.mjs"

const DEPENDENCY_FIELDS = ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"]

/** @param {number} index */
const describeLayer = (index) => `layer ${index} "${LAYERS[index]?.name ?? "?"}"`

/**
 * Returns the list of problems found in <root>/packages (empty when clean).
 * @param {string} root
 * @returns {{ problems: string[], packages: number, dependencies: number }}
 */
export function checkLayers(root) {
  /** @type {string[]} */
  const problems = []
  let dependencies = 0
  const packagesDir = join(root, "packages")
  if (!existsSync(packagesDir)) return { problems: [`no packages/ directory under ${root}`], packages: 0, dependencies }

  const dirs = readdirSync(packagesDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith("."))
    .map((entry) => entry.name)
    .sort()

  for (const dir of dirs) {
    const where = `packages/${dir}`
    const fromLayer = layerIndexOf(dir)
    if (fromLayer < 0) {
      problems.push(`unknown-package: ${where} is not in the layer table; add it to a layer in scripts/layers.mjs`)
    }
    const manifestPath = join(packagesDir, dir, "package.json")
    if (!existsSync(manifestPath)) {
      problems.push(`missing-manifest: ${where} has no package.json`)
      continue
    }
    /** @type {Record<string, unknown>} */
    let manifest
    try {
      manifest = JSON.parse(readFileSync(manifestPath, "utf8"))
    } catch (error) {
      problems.push(`bad-manifest: ${where}/package.json does not parse: ${error instanceof Error ? error.message : String(error)}`)
      continue
    }
    if (manifest.name !== packageNameOf(dir)) {
      problems.push(`package-name: ${where}/package.json is named ${JSON.stringify(manifest.name)}, expected "${packageNameOf(dir)}"`)
    }
    if (fromLayer < 0) continue

    for (const field of DEPENDENCY_FIELDS) {
      const deps = manifest[field]
      if (deps === undefined) continue
      if (deps === null || typeof deps !== "object" || Array.isArray(deps)) {
        problems.push(`bad-manifest: ${where}/package.json "${field}" is not an object`)
        continue
      }
      for (const name of Object.keys(deps)) {
        if (name === "@effect/schema") {
          problems.push(`no-effect-schema: ${where}/package.json ${field} "@effect/schema": use Schema from "effect" (docs/adr/0001-effect-4-and-node-22.md)`)
        }
        if (!name.startsWith(`${SCOPE}/`)) continue
        dependencies++
        const to = name.slice(SCOPE.length + 1)
        const toLayer = layerIndexOf(to)
        const subject = `${where}/package.json ${field} "${name}"`
        if (to === dir) {
          problems.push(`self-dependency: ${subject}: a package does not depend on itself`)
        } else if (toLayer < 0) {
          problems.push(`unknown-package: ${subject}: "${to}" is not in the layer table (scripts/layers.mjs)`)
        } else if (!mayDependOn(dir, to)) {
          if (to === LOOP_PACKAGE) {
            problems.push(
              `no-loop-outside-apps: ${subject}: only the ${APPS_LAYER} layer (the composition root) may depend on ${SCOPE}/${LOOP_PACKAGE}`
            )
          } else {
            problems.push(
              `layer-${dir}: ${subject}: ${SCOPE}/${dir} is in ${describeLayer(fromLayer)}, ${name} is in ${describeLayer(toLayer)}; ` +
                `a package may depend only on strictly lower layers`
            )
          }
        }
      }
    }
  }
  return { problems, packages: dirs.length, dependencies }
}

const isMain = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)
if (isMain) {
  const args = process.argv.slice(2)
  const rootFlag = args.indexOf("--root")
  const root =
    rootFlag >= 0 && args[rootFlag + 1] !== undefined
      ? resolve(args[rootFlag + 1])
      : resolve(fileURLToPath(new URL("..", import.meta.url)))
  const { problems, packages, dependencies } = checkLayers(root)
  if (problems.length > 0) {
    console.error(`✘ layer check (package.json): ${problems.length} problem(s) in ${join(root, "packages")}`)
    for (const problem of problems) console.error(`  ${problem}`)
    console.error("  The layer table is scripts/layers.mjs; see docs/adr/0004-dependency-direction-check.md.")
    process.exit(1)
  }
  console.log(`✔ layer check (package.json): ${packages} packages, ${dependencies} ${SCOPE}/* dependencies, all downward`)
}
