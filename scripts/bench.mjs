#!/usr/bin/env node
// `npm run bench [filter]`: runs every packages/*/bench/*.bench.ts with this Node (which strips
// types), one process each so their timings and memory do not interfere, and prints what they
// report. Benchmarks measure; they do not assert (speed and memory targets are read here, never
// enforced by timed tests). A filter keeps the files whose path contains it.
import { spawnSync } from "node:child_process"
import { existsSync, readdirSync } from "node:fs"
import { join, relative } from "node:path"

const root = join(import.meta.dirname, "..")
const filter = process.argv[2] ?? ""
const files = readdirSync(join(root, "packages"))
  .flatMap((pkg) => {
    const dir = join(root, "packages", pkg, "bench")
    return existsSync(dir)
      ? readdirSync(dir).filter((f) => f.endsWith(".bench.ts")).map((f) => join(dir, f))
      : []
  })
  .filter((file) => relative(root, file).includes(filter))
  .sort()

if (files.length === 0) {
  console.error(`no benchmark matches "${filter}"`)
  process.exit(1)
}
console.log(`node ${process.version}, ${files.length} benchmark file(s)`)
let failed = 0
for (const file of files) {
  console.log(`\n=== ${relative(root, file)}`)
  // @dsh/* resolve to their sources (ADR 0017), also in the processes a benchmark spawns
  const env = { ...process.env, NODE_OPTIONS: [process.env.NODE_OPTIONS, "--conditions=@dsh/source"].filter(Boolean).join(" ") }
  const run = spawnSync(process.execPath, ["--expose-gc", file], { stdio: "inherit", cwd: root, env })
  if (run.status !== 0) failed++
}
process.exit(failed === 0 ? 0 : 1)
