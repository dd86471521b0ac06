// The layering of the @dsh/* packages: the ONE source of truth.
//
// Consumed by:
//   - .dependency-cruiser.cjs      (generates the `forbidden` import rules; loads this file with
//                                   a synchronous require() of an ES module, Node >= 22.12)
//   - scripts/check-layers.mjs     (checks packages/*/package.json @dsh/* dependencies and that
//                                   every directory under packages/ is listed here)
//   - scripts/test/layers.test.ts  (proves the checks fail on bad fixtures)
//
// Keep this file free of top-level await and of imports: it is require()d from CommonJS.
//
// Rules (see docs/adr/0004-dependency-direction-check.md):
//   1. A package may import (and declare a dependency on) only packages in STRICTLY LOWER
//      layers. Packages of the same layer are siblings and may not import one another.
//   2. Nobody imports the loop package (LOOP_PACKAGE), EXCEPT packages of the apps layer
//      (APPS_LAYER). The loop is the one concrete driver of agents; everything else programs
//      against the agent layer. The apps (the `dsh` CLI, examples) are the composition root
//      that picks the concrete driver, so they, and only they, may import it.
//   3. Every directory under packages/ must be listed here: a new package fails the check
//      until it is given a layer.
//
// Package names are directory names under packages/; the published name is `@dsh/<name>`.

/** @typedef {{ readonly name: string, readonly packages: readonly string[] }} Layer */

/** Ordered lowest first: index = layer number. @type {readonly Layer[]} */
export const LAYERS = Object.freeze([
  { name: "vocabulary + errors", packages: ["llm"] },
  { name: "model seam", packages: ["model"] },
  { name: "session", packages: ["session"] },
  { name: "session stores", packages: ["sql-sessions"] },
  { name: "system prompt", packages: ["prompt"] },
  { name: "tools", packages: ["tools"] },
  { name: "agent", packages: ["agent"] },
  { name: "loop", packages: ["loop"] },
  { name: "capabilities", packages: ["bash", "mcp", "files", "permissions"] },
  { name: "model wires", packages: ["openai"] },
  { name: "model adapters", packages: ["deepseek", "anthropic", "effect-ai"] },
  { name: "invariants", packages: ["invariants"] },
  { name: "testing", packages: ["testing"] },
  { name: "apps", packages: ["cli", "cluster", "dsh", "examples", "scenarios"] }
].map((layer) => Object.freeze({ name: layer.name, packages: Object.freeze([...layer.packages]) })))

/** The loop package: only packages of APPS_LAYER may import it. */
export const LOOP_PACKAGE = "loop"

/** The composition-root layer: the only one allowed to import LOOP_PACKAGE. */
export const APPS_LAYER = "apps"

/** npm scope of the workspace packages. */
export const SCOPE = "@dsh"

/**
 * The umbrella package (docs/adr/0018-umbrella-and-one-call-composition.md): the one package a
 * user installs, re-exporting the others. It is named without the scope (`dsh`), the only
 * package that is; it is in the apps layer, since its composition picks the loop.
 */
export const UMBRELLA_PACKAGE = "dsh"

/**
 * The npm name of the package in packages/<dir>.
 * @param {string} dir
 * @returns {string}
 */
export function packageNameOf(dir) {
  return dir === UMBRELLA_PACKAGE ? UMBRELLA_PACKAGE : `${SCOPE}/${dir}`
}

/** All package names, in layer order. @type {readonly string[]} */
export const ALL_PACKAGES = Object.freeze(LAYERS.flatMap((layer) => layer.packages))

/**
 * Layer index of a package, or -1 when the package is not in the table.
 * @param {string} pkg
 * @returns {number}
 */
export function layerIndexOf(pkg) {
  return LAYERS.findIndex((layer) => layer.packages.includes(pkg))
}

/**
 * Whether package `from` may depend on package `to` (both directory names).
 * A package may always depend on itself.
 * @param {string} from
 * @param {string} to
 * @returns {boolean}
 */
export function mayDependOn(from, to) {
  if (from === to) return true
  const fromLayer = layerIndexOf(from)
  const toLayer = layerIndexOf(to)
  if (fromLayer < 0 || toLayer < 0) return false
  if (to === LOOP_PACKAGE && LAYERS[fromLayer]?.name !== APPS_LAYER) return false
  return toLayer < fromLayer
}

/**
 * Packages `from` must NOT depend on (excluding itself), per the rules above.
 * @param {string} from
 * @returns {string[]}
 */
export function forbiddenTargetsOf(from) {
  return ALL_PACKAGES.filter((to) => to !== from && !mayDependOn(from, to))
}

/**
 * Sanity check of the table itself; throws on a malformed table.
 * @returns {void}
 */
export function assertWellFormed() {
  const seen = new Set()
  for (const layer of LAYERS) {
    for (const pkg of layer.packages) {
      if (!/^[a-z][a-z0-9-]*$/.test(pkg)) throw new Error(`layers.mjs: bad package name "${pkg}"`)
      if (seen.has(pkg)) throw new Error(`layers.mjs: package "${pkg}" listed twice`)
      seen.add(pkg)
    }
  }
  if (!seen.has(LOOP_PACKAGE)) throw new Error(`layers.mjs: loop package "${LOOP_PACKAGE}" not in the table`)
  if (!LAYERS.some((layer) => layer.name === APPS_LAYER)) {
    throw new Error(`layers.mjs: apps layer "${APPS_LAYER}" not in the table`)
  }
}

assertWellFormed()
