// vitest globalSetup: says which Node the tests run on, and refuses one that is too old
// (the minimum is package.json "engines.node"; see scripts/node-check.mjs).

import { nodeVersionProblem } from "./node-check.mjs"

export default function setup(): void {
  console.log(`dsh tests on node ${process.version} (${process.execPath})`)
  const problem = nodeVersionProblem()
  if (problem !== undefined) throw new Error(problem)
}
