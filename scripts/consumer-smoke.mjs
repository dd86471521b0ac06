#!/usr/bin/env node
// `npm run smoke:consumer`: proves dsh works for a user outside this workspace (docs/adr/0017).
// It builds every public package, packs each into a tarball, and installs the tarballs into a
// fresh app in the system's temporary directory with `effect` from the registry, then
//
//   1. checks that no tarball holds tests, benchmarks, sources or anything but its build,
//      README, LICENSE and package.json;
//   2. runs the README's Quick start (the first `<!-- example -->` block) with plain `node` on
//      this Node, and compares what it prints with its `// …` comments; runs the DeepSeek
//      variant (`<!-- deepseek-example -->`) without a key and checks it fails with LLM_CONFIG;
//      runs the packed `dsh` command (`--help`; `run` without a key: exit 2, LLM_CONFIG);
//   3. type-checks a consumer file that uses the main public API with plain `tsc` — strict,
//      skipLibCheck off, no allowImportingTsExtensions — once with module/moduleResolution
//      NodeNext and once with moduleResolution bundler.
//
// The app installs `typescript` and `@types/node` too (what a TypeScript consumer has). Any
// failure exits non-zero. The temporary app is removed unless DSH_SMOKE_KEEP=1.
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { publicPackages } from "./build.mjs"

const root = join(import.meta.dirname, "..")
const manifest = (dir) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))
const rootManifest = manifest(root)
const versionOf = (name) => rootManifest.devDependencies[name]

const step = (title) => console.log(`\n::: smoke: ${title}`)
const fail = (message) => {
  console.error(`✘ consumer smoke test: ${message}`)
  process.exit(1)
}

const run = (command, args, options = {}) => {
  const result = spawnSync(command, args, { encoding: "utf8", ...options })
  if (result.status !== 0) {
    fail(`${command} ${args.join(" ")} exited ${result.status}\n${result.stdout ?? ""}${result.stderr ?? ""}`)
  }
  return result.stdout
}

// ---------------------------------------------------------------------------------------------

/** What a tarball may hold: its manifest, README, LICENSE and the build. */
const allowed = (path) =>
  path === "package/package.json" || path === "package/README.md" || path === "package/LICENSE" ||
  (path.startsWith("package/dist/") && !/\.test\.|\/test\/|\/bench\//.test(path))

const checkTarball = (tarball) => {
  const entries = run("tar", ["-tzf", tarball]).split("\n").filter((line) => line.length > 0 && !line.endsWith("/"))
  const unexpected = entries.filter((entry) => !allowed(entry))
  if (unexpected.length > 0) fail(`${tarball} holds files it must not ship:\n  ${unexpected.join("\n  ")}`)
  for (const needed of ["package/README.md", "package/LICENSE", "package/dist/index.js", "package/dist/index.d.ts"]) {
    if (!entries.includes(needed)) fail(`${tarball} lacks ${needed}`)
  }
  return entries.length
}

const examples = () => {
  const readme = readFileSync(join(root, "README.md"), "utf8")
  const block = (marker) => new RegExp(`<!-- ${marker} -->\\s*\`\`\`ts\\n([\\s\\S]*?)\`\`\``).exec(readme)?.[1]
  const quick = block("example")
  const deepseek = block("deepseek-example")
  if (quick === undefined || deepseek === undefined) fail("README.md lacks its <!-- example --> or <!-- deepseek-example --> block")
  return { quick, deepseek }
}

// console.log outputs are compared without whitespace and quote style, which inspect varies
const normalize = (text) => text.replaceAll(/\s+/g, "").replaceAll("'", "\"")
const expectedOutput = (code) =>
  code.split("\n").flatMap((line) => {
    const match = /console\.log\b.*\/\/ (.*)$/.exec(line)
    return match === null ? [] : [match[1]]
  }).join("")

/** A consumer file using the main public API, for the type checks. */
const consumerSource = `import {
  Agents, Content, DeepSeek, Dsh, HarnessError, History, JsonlSessions, ScriptedModel, type SessionErrors,
  Testing, Tool, ToolMiddleware, TurnResult, type Agent
} from "dsh"
import { Fixture } from "dsh/deepseek/testing"
import { Effect, Layer, Schema } from "effect"

const add = Tool.make("add", {
  description: "Adds two integers",
  parameters: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  execute: ({ a, b }) => Effect.succeed(String(a + b))
})

const Live = Dsh.layer({
  model: DeepSeek.layer({ thinking: true }),
  tools: [add],
  sessions: { directory: ".dsh/sessions" },
  toolMiddleware: [ToolMiddleware.denyWhen("no-writes", (call) => (call.name === "write" ? "read-only" : undefined))]
})

export const ask = (
  question: string
): Effect.Effect<number, Agent.RunError | SessionErrors.SessionExistsError | SessionErrors.SessionLockedError, Agents> =>
  Effect.scoped(Effect.gen(function*() {
    const agent = yield* (yield* Agents).create({ model: "deepseek-v4-flash" })
    const result: TurnResult.TurnResult<{ readonly sum: number }> = yield* agent.run(question, {
      output: Schema.Struct({ sum: Schema.Int })
    })
    const text: string = result.text
    const history: History.History = result.messages
    void text
    void history
    return result.output.sum
  }))

export const program = ask("2 + 3?").pipe(
  Effect.catchTag("TurnAbortedError", (e) => Effect.succeed(e.turn)),
  Effect.catchTag("LlmRateLimitError", (e) => Effect.succeed(e.retryAfterMillis ?? 0)),
  Effect.catch((e) => Effect.succeed(HarnessError.describe(e).length)),
  Effect.provide(Live)
)

export const tested = Effect.gen(function*() {
  const agent = yield* Dsh.agent()
  return yield* agent.run([Content.text("hi")])
}).pipe(Effect.scoped, Effect.provide(Dsh.layer({ model: ScriptedModel.layer({ script: [ScriptedModel.reply.text("hello")] }) })))

export const testLayer: Layer.Layer<Testing.Services> = Testing.layer({ script: [] })
export const fixtures: ReadonlyArray<string> = Fixture.names()
export const resume = (id: string) => JsonlSessions.JsonlSessions.use((jsonl) => jsonl.resume(id))
`

const tsconfig = (moduleResolution) => ({
  compilerOptions: {
    target: "ES2023",
    module: moduleResolution === "bundler" ? "ESNext" : "NodeNext",
    moduleResolution,
    // effect's declarations use Web Crypto and structured-clone types
    lib: ["ES2023", "DOM"],
    types: ["node"],
    strict: true,
    skipLibCheck: false,
    noEmit: true
  },
  files: ["consumer.ts", "main.ts"]
})

// ---------------------------------------------------------------------------------------------

const started = Date.now()
const app = mkdtempSync(join(tmpdir(), "dsh-consumer-"))
const tarballs = join(app, "tarballs")
mkdirSync(tarballs)
const { deepseek, quick } = examples()

step("build")
run(process.execPath, [join(root, "scripts", "build.mjs")], { stdio: "inherit", cwd: root })

step("pack")
const names = publicPackages()
// name → tarball file, from npm's own report
const packed = new Map(names.map((name) => {
  const [report] = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", tarballs, "--workspace", `packages/${name}`], { cwd: root }))
  return [report.name, report.filename]
}))
if (readdirSync(tarballs).filter((file) => file.endsWith(".tgz")).length !== names.length) {
  fail(`packed ${packed.size} tarballs for ${names.length} public packages`)
}
for (const tarball of packed.values()) {
  console.log(`  ${tarball}: ${checkTarball(join(tarballs, tarball))} files, nothing but the build, README and LICENSE`)
}

step(`install into ${app}`)
writeFileSync(join(app, "package.json"), JSON.stringify({
  name: "dsh-consumer",
  private: true,
  type: "module",
  dependencies: {
    effect: versionOf("effect"),
    ...Object.fromEntries([...packed].map(([name, file]) => [name, `file:tarballs/${file}`]))
  },
  devDependencies: { typescript: versionOf("typescript"), "@types/node": versionOf("@types/node") }
}, null, 2))
run("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"], { cwd: app, stdio: "inherit" })

step("the README's Quick start with plain node")
writeFileSync(join(app, "main.ts"), quick)
const printed = run(process.execPath, [join(app, "main.ts")], { cwd: app })
if (normalize(printed) !== normalize(expectedOutput(quick))) {
  fail(`the Quick start printed\n${printed}\nand its comments say\n${expectedOutput(quick)}`)
}
console.log(`  printed: ${printed.trim()}`)

step("the README's DeepSeek variant without a key")
writeFileSync(join(app, "deepseek.ts"), `${deepseek}
import { Effect, Layer } from "effect"
const exit = await Effect.runPromiseExit(Layer.build(Live).pipe(Effect.scoped))
console.log(exit._tag === "Failure" ? JSON.stringify(exit.cause) : "built")
`)
const withoutKey = { ...process.env }
delete withoutKey.DEEPSEEK_API_KEY
const deepseekOut = run(process.execPath, [join(app, "deepseek.ts")], { cwd: app, env: withoutKey })
if (!deepseekOut.includes("LLM_CONFIG")) fail(`the DeepSeek variant without a key printed\n${deepseekOut}\ninstead of an LLM_CONFIG failure`)
console.log("  fails to build with LLM_CONFIG, as the README says")

step("the packed dsh command")
const bin = join(app, "node_modules", ".bin", "dsh")
// the bin's `#!/usr/bin/env node` finds this Node first (a host's own node may be older)
const path = `${dirname(process.execPath)}:${process.env.PATH ?? ""}`
const help = run(bin, ["--help"], { cwd: app, env: { ...process.env, PATH: path } })
if (!help.includes("run") || !help.includes("chat")) fail(`dsh --help printed\n${help}`)
const home = mkdtempSync(join(tmpdir(), "dsh-consumer-home-"))
const noKey = spawnSync(bin, ["run", "hi", "--tools", "none", "--sessions", "memory"], {
  cwd: app,
  encoding: "utf8",
  env: { PATH: path, HOME: home, XDG_CONFIG_HOME: join(home, ".config") }
})
if (noKey.status !== 2 || !noKey.stderr.includes("LLM_CONFIG")) {
  fail(`dsh run without a key exited ${noKey.status} printing\n${noKey.stderr}\ninstead of exit 2 with LLM_CONFIG`)
}
console.log(`  dsh --help works; dsh run without a key: exit 2, ${noKey.stderr.trim().split("\n")[0]}`)
rmSync(home, { recursive: true, force: true })

step("plain tsc on a consumer file")
writeFileSync(join(app, "consumer.ts"), consumerSource)
const tsc = join(app, "node_modules", ".bin", "tsc")
for (const resolution of ["NodeNext", "bundler"]) {
  const config = join(app, `tsconfig.${resolution}.json`)
  writeFileSync(config, JSON.stringify(tsconfig(resolution), null, 2))
  run(tsc, ["-p", config], { cwd: app })
  console.log(`  moduleResolution ${resolution}: no errors`)
}

if (process.env.DSH_SMOKE_KEEP !== "1") rmSync(app, { recursive: true, force: true })
console.log(`\n✔ consumer smoke test passed in ${((Date.now() - started) / 1000).toFixed(0)} s`)
