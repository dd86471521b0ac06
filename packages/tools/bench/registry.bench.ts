// `npm run bench registry`: what the model boundary costs per tool call.
//
// A 6-field parameter Schema (string with length bounds, bounded ints, a literal set, a
// boolean, an array of strings, an optional key), the same calls through
//
//   - the registry: ToolRegistry.execute = a pass-through middleware + lookup + JSON.parse +
//     Schema decode (all issues) + a trivial body + the Tool.execute span, all as one Effect;
//   - the decoder alone: ToolArgs.decoder (JSON.parse + depth check + Schema decode: Effect's
//     JIT-compiled decode and the excess-key walk for a valid call, the full decode reporting
//     every violation for an invalid one), synchronous;
//   - Ajv: JSON.parse + the compiled validator of the same wire schema (draft 2020-12,
//     allErrors), which checks but does not decode, build results, run middleware or trace;
//
// on valid arguments and on arguments with two violations each. Every variant runs for a fixed
// time per round, rounds interleave the variants. Reported: the best round's rate, the ratio
// of the best rates, and the median over rounds of the ratio within each round (a round's
// variants run back to back, so the machine's other load moves both sides of that ratio
// alike). It measures; it does not assert. Most of the registry's cost over the decoder is
// Effect's runtime running the call (the per-call scope, the context merge, the span, the
// middleware's containment), not the decoding.
import { Content, Ids } from "@dsh/llm"
import { Tool, ToolArgs, ToolRegistry } from "@dsh/tools"
import { Ajv2020 } from "ajv/dist/2020.js"
import { Effect, Result, Schema, Scope } from "effect"

const Params = Schema.Struct({
  path: Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(200)),
  line: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 }))),
  mode: Schema.Literals(["read", "write", "append"]),
  recursive: Schema.Boolean,
  tags: Schema.Array(Schema.String).check(Schema.isMaxLength(8))
})

const tool = Tool.make("edit_file", {
  description: "Edit a file",
  parameters: Params,
  execute: (args) => Effect.succeed(args.path)
})

const modes = ["read", "write", "append"] as const
const valid = Array.from({ length: 1000 }, (_, i) =>
  JSON.stringify({
    path: `src/module-${i}/file-${i % 37}.ts`,
    line: 1 + (i % 500),
    ...(i % 3 === 0 ? { limit: 1 + (i % 1000) } : {}),
    mode: modes[i % 3],
    recursive: i % 2 === 0,
    tags: Array.from({ length: i % 5 }, (_, k) => `tag${k}`)
  }))
const invalid = Array.from({ length: 1000 }, (_, i) =>
  JSON.stringify({
    path: `src/module-${i}/file.ts`,
    line: 0, // below the minimum
    mode: "exec", // not in the literal set
    recursive: i % 2 === 0,
    tags: []
  }))

const decode = ToolArgs.decoder(tool)
const ajv = new Ajv2020({ allErrors: true })
const validate = ajv.compile(Result.getOrThrow(Tool.wireSchema(tool)).parameters)

// Sanity, not an assertion of speed: both sides agree on the inputs.
for (const raw of valid) {
  if (!Result.isSuccess(decode(raw)) || !validate(JSON.parse(raw))) throw new Error(`valid input refused: ${raw}`)
}
for (const raw of invalid) {
  const decoded = decode(raw)
  if (Result.isSuccess(decoded) || validate(JSON.parse(raw))) throw new Error(`invalid input accepted: ${raw}`)
  // The fast path must not cost the report: both violations, each with its path.
  const paths = decoded.failure.violations.map((v) => v.path.join("."))
  if (paths.join(" ") !== "line mode") throw new Error(`expected violations at line and mode, got ${paths.join(", ")}`)
}

const registry = await Effect.runPromise(
  Effect.gen(function*() {
    const registry = yield* ToolRegistry.make
    // Never closed: the registrations live as long as the benchmark.
    const scope = yield* Scope.make()
    yield* registry.register(tool).pipe(Scope.provide(scope))
    yield* registry.use({ name: "pass-through", around: (call, next) => next(call) }).pipe(Scope.provide(scope))
    return registry
  })
)

const callsOf = (inputs: ReadonlyArray<string>) =>
  inputs.map((raw, i) => Content.toolCall(Ids.callId(`call-${i}`), "edit_file", raw))

// Results are folded into a sink so the JIT cannot drop work whose result is unused.
let sink = 0
const viaRegistry = (inputs: ReadonlyArray<string>) => {
  const calls = callsOf(inputs)
  const program = Effect.forEach(calls, (call) => Effect.map(registry.execute(call), (r) => void (sink += r.content.length)), {
    discard: true
  })
  return () => Effect.runPromise(program)
}
const viaDecoder = (inputs: ReadonlyArray<string>) => () => {
  for (const raw of inputs) sink += Result.isSuccess(decode(raw)) ? 1 : 0
}
const viaAjv = (inputs: ReadonlyArray<string>) => () => {
  for (const raw of inputs) sink += validate(JSON.parse(raw)) ? 1 : 0
}
const viaParse = (inputs: ReadonlyArray<string>) => () => {
  for (const raw of inputs) sink += JSON.parse(raw) === null ? 0 : 1
}

interface Variant {
  readonly inputs: string
  readonly path: string
  readonly batch: () => unknown
  best: number
  /** calls/s of each round */
  readonly rates: Array<number>
}

const variants: Array<Variant> = []
for (const [label, inputs] of [["valid", valid], ["2 violations", invalid]] as const) {
  variants.push(
    { inputs: label, path: "registry.execute (middleware + decode + body + span)", batch: viaRegistry(inputs), best: 0, rates: [] },
    { inputs: label, path: "ToolArgs.decoder (JSON.parse + Schema decode)", batch: viaDecoder(inputs), best: 0, rates: [] },
    { inputs: label, path: "Ajv (JSON.parse + compiled validate)", batch: viaAjv(inputs), best: 0, rates: [] },
    { inputs: label, path: "JSON.parse alone (the floor)", batch: viaParse(inputs), best: 0, rates: [] }
  )
}

const batchSize = valid.length
const roundMillis = 500
const rounds = 7

for (const variant of variants) for (let i = 0; i < 5; i++) await variant.batch() // warm up the JIT
// Rounds interleave the variants, so drift (GC, CPU frequency) spreads over all of them; the
// best round of each is reported.
for (let r = 0; r < rounds; r++) {
  for (const variant of variants) {
    globalThis.gc?.()
    let calls = 0
    const start = performance.now()
    let elapsed = 0
    while (elapsed < roundMillis) {
      await variant.batch()
      calls += batchSize
      elapsed = performance.now() - start
    }
    const rate = (calls / elapsed) * 1000
    variant.rates.push(rate)
    variant.best = Math.max(variant.best, rate)
  }
}

const format = (n: number) => Math.round(n).toLocaleString("en-US")
const median = (xs: ReadonlyArray<number>) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
type Row = [string, string, string, string, string]
const rows = variants.map((v): Row => {
  const ajv = variants.find((w) => w.inputs === v.inputs && w.path.startsWith("Ajv"))!
  const perRound = v.rates.map((rate, r) => ajv.rates[r]! / rate)
  return [v.inputs, v.path, format(v.best), `${(ajv.best / v.best).toFixed(1)}x`, `${median(perRound).toFixed(1)}x`]
})

const header: Row = ["arguments", "path", "calls/s", "Ajv's rate / this", "median per round"]
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
const line = (cells: ReadonlyArray<string>) =>
  cells.map((c, i) => (i >= 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ")
console.log(`6-field schema, ${batchSize} distinct inputs per batch, best of ${rounds} interleaved rounds of ${roundMillis} ms`)
console.log(line(header))
console.log(widths.map((w) => "-".repeat(w)).join("  "))
for (const row of rows) console.log(line(row))
const registryValid = variants[0]!.best
console.log(
  `\none call through the registry costs ${(1e6 / registryValid).toFixed(1)} µs on valid arguments ` +
    `(sink ${sink > 0 ? "ok" : "empty"})`
)
