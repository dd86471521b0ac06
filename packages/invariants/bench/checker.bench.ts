/**
 * Benchmark: append throughput with the invariants checker off and on.
 *
 * A session receives a realistic event mix (what the loop writes for turns of three streamed
 * steps with tool calls: ~77% assistant/chunk). "Off" is SessionStore.layer with one stream
 * subscriber that only counts events (a stand-in for persistence); "on" adds Invariants.layer,
 * whose watcher fiber checks every event. Each run appends every event, then waits until the
 * subscribers have seen them all and, with the checker on, until the checker has checked them
 * all (`verify`), so the checker's work is inside the measured time wherever the scheduler ran
 * it. Reference rows separate what any extra subscriber costs from what the checks cost. Runs
 * of all modes are interleaved, in an order that alternates from round to round; a mode's
 * slowdown is the median, over the rounds, of its time divided by its reference's time in the
 * same round (with the quartiles), which cancels what the machine was doing in that round.
 *
 * Then the rules alone: `Rules.make().push` over pre-built frozen events, with each `data-frozen`
 * mode (`"sampled"`, the Layer's default: the first 256 events walked, then one in 256; `"deep"`;
 * `"shallow"`; `"off"`), in rotating order.
 *
 * Run: `npm run bench invariants` (Node runs this file directly; it measures, asserts nothing).
 */
import { Invariants, Rules } from "@dsh/invariants"
import { SessionStore } from "@dsh/session"
import { Deferred, Effect, Layer, Option, Stream } from "effect"
import { setTimeout as sleep } from "node:timers/promises"
import { appendDraft, type Draft, loop, toEvents } from "../test/logs.ts"

const TURNS = 3000
const RUNS = 25
const WARMUP = 3
const WARMUP_TURNS = 200

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined)

/** What the loop logs for TURNS turns of three streamed steps (fresh objects: append freezes them). */
const workload = (turns = TURNS): Array<Draft> => {
  const l = loop("agent-bench").idle()
  for (let t = 0; t < turns; t++) {
    l.turn({
      steps: [
        { chunks: 24, calls: ["ok", "ok"], contextInCall: [1] },
        { chunks: 16, calls: ["ok"], steering: t % 5 === 0 ? 1 : 0 },
        { chunks: 40 }
      ],
      errorAfter: t % 50 === 0
    })
  }
  return l.drafts
}

interface Mode {
  readonly label: string
  readonly checker: boolean
  /** Counting subscribers reading one event at a time (as the checker's watcher does). */
  readonly perEvent: number
  /** Counting subscribers reading one chunk (all events appended since their last read) at a time. */
  readonly perChunk: number
  /** The mode it is compared with. */
  readonly vs?: string
}

const modes: ReadonlyArray<Mode> = [
  { label: "checker off: 1 counting subscriber", checker: false, perEvent: 1, perChunk: 0 },
  {
    label: "checker on: 1 counting subscriber + Invariants.layer",
    checker: true,
    perEvent: 1,
    perChunk: 0,
    vs: "checker off: 1 counting subscriber"
  },
  { label: "reference: no subscriber at all", checker: false, perEvent: 0, perChunk: 0 },
  {
    label: "Invariants.layer as the only subscriber",
    checker: true,
    perEvent: 0,
    perChunk: 0,
    vs: "reference: no subscriber at all"
  },
  {
    label: "reference: 2 counting subscribers",
    checker: false,
    perEvent: 2,
    perChunk: 0,
    vs: "checker off: 1 counting subscriber"
  },
  {
    label: "reference: 1 counting subscriber + 1 chunk-wise",
    checker: false,
    perEvent: 1,
    perChunk: 1,
    vs: "checker off: 1 counting subscriber"
  }
]

interface Timing {
  readonly append: number
  readonly total: number
}

const program = (drafts: ReadonlyArray<Draft>, mode: Mode) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const checker = yield* Effect.serviceOption(Invariants)
    const session = yield* store.create()
    const drained = yield* Deferred.make<void>()
    const expected = drafts.length * (mode.perEvent + mode.perChunk)
    let counted = 0
    const count = (k: number) => ((counted += k) === expected ? Deferred.succeed(drained, undefined) : Effect.void)
    for (let i = 0; i < mode.perEvent; i++) yield* Effect.forkScoped(Stream.runForEach(session.stream, () => count(1)))
    for (let i = 0; i < mode.perChunk; i++) {
      yield* Effect.forkScoped(Stream.runForEachArray(session.stream, (chunk) => count(chunk.length)))
    }
    // let the subscribers (and the checker's watcher) start and park
    for (let i = 0; i < 5; i++) yield* Effect.yieldNow
    const start = performance.now()
    for (const d of drafts) yield* appendDraft(session, d)
    const appended = performance.now()
    if (expected > 0) yield* Deferred.await(drained)
    if (Option.isSome(checker)) yield* checker.value.verify
    const end = performance.now()
    return { append: appended - start, total: end - start } satisfies Timing
  }).pipe(Effect.scoped)

const checkerLayer = Invariants.layer.pipe(Layer.provideMerge(SessionStore.layer))

const runIn = (mode: Mode, drafts: ReadonlyArray<Draft>) =>
  Effect.runPromise(program(drafts, mode).pipe(Effect.provide(mode.checker ? checkerLayer : SessionStore.layer)))

// After the forced GC, a short run in the same mode and a pause for V8's background compiler:
// once the previous run's events are collected, V8 recompiles the per-event code of the run
// that follows (seen with --trace-opt: the checker's `push`, ~15 ms of compiling, in every run),
// which is a cost of forcing GCs between runs, not of appending. Runs measure warm code, as a
// long-running process has.
const runOnce = async (mode: Mode): Promise<Timing> => {
  const drafts = workload()
  const warmUp = workload(WARMUP_TURNS)
  gc()
  await runIn(mode, warmUp)
  await sleep(25)
  return runIn(mode, drafts)
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  console.log(line(header))
  console.log(widths.map((w) => "-".repeat(w)).join("  "))
  for (const r of rows) console.log(line(r))
}

// ---------------------------------------------------------------------------------------------
// Append throughput

const sample = workload()
const n = sample.length
const mix = new Map<string, number>()
for (const d of sample) mix.set(d.type, (mix.get(d.type) ?? 0) + 1)
console.log(
  `workload: ${fmt(n)} events per run (${TURNS} turns); ` +
    [...mix].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([t, c]) => `${t} ${fmt((c / n) * 100)}%`).join(", ") +
    ", …"
)
console.log(`runs: ${WARMUP} warm-up + ${RUNS} measured rounds, every mode once per round, order alternating\n`)

for (let i = 0; i < WARMUP; i++) for (const mode of modes) await runOnce(mode)
const timings = new Map<string, Array<Timing>>(modes.map((mode) => [mode.label, []]))
for (let i = 0; i < RUNS; i++) {
  for (const mode of i % 2 === 0 ? modes : [...modes].reverse()) timings.get(mode.label)!.push(await runOnce(mode))
}

const quantile = (xs: ReadonlyArray<number>, q: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * q)]!
/** A mode's time over its reference's, round by round: the median and quartiles of the ratios. */
const slowdown = (mode: Mode) => {
  const ts = timings.get(mode.label)!
  const base = timings.get(mode.vs!)!
  const ratios = ts.map((t, i) => t.total / base[i]!.total)
  return { median: quantile(ratios, 0.5), q1: quantile(ratios, 0.25), q3: quantile(ratios, 0.75) }
}
const ratioPct = (r: number) => `${r >= 1 ? "+" : ""}${fmt((r - 1) * 100, 1)}%`

table(
  ["append throughput, 1 session", "append loop ms", "until drained ms", "events/s", "slowdown (median)", "quartiles"],
  modes.map((mode) => {
    const ts = timings.get(mode.label)!
    const total = median(ts.map((t) => t.total))
    const s = mode.vs === undefined ? undefined : slowdown(mode)
    return [
      `${modes.indexOf(mode) + 1}. ${mode.label}`,
      fmt(median(ts.map((t) => t.append)), 1),
      fmt(total, 1),
      fmt(n / (total / 1000)),
      s === undefined ? "" : `${ratioPct(s.median)} vs ${modes.findIndex((m) => m.label === mode.vs) + 1}`,
      s === undefined ? "" : `${ratioPct(s.q1)} … ${ratioPct(s.q3)}`
    ]
  })
)
const target = slowdown(modes[1]!)
console.log(
  `\nchecker on vs off, with one subscriber: ${ratioPct(target.median)} (median of ${RUNS} rounds' ratios, ` +
    `until drained and verified; quartiles ${ratioPct(target.q1)} … ${ratioPct(target.q3)}); target: at most +10%`
)

// ---------------------------------------------------------------------------------------------
// The rules alone, on pre-built frozen events

const frozen = toEvents(workload())
const pushAll = (frozenMode: (typeof frozenModes)[number]) => {
  const checker = Rules.make({ frozen: frozenMode })
  const start = performance.now()
  for (const e of frozen) checker.push(e)
  return performance.now() - start
}
const frozenModes = ["sampled", "deep", "shallow", "off"] as const
for (let i = 0; i < 3; i++) for (const mode of frozenModes) pushAll(mode)
const pushes: Record<(typeof frozenModes)[number], Array<number>> = { sampled: [], deep: [], shallow: [], off: [] }
// no forced GC here: checking allocates next to nothing, and the pass right after a forced GC
// ran up to 3x slower whichever mode it was
for (let i = 0; i < RUNS; i++) {
  for (let k = 0; k < frozenModes.length; k++) {
    const mode = frozenModes[(i + k) % frozenModes.length]!
    pushes[mode].push(pushAll(mode))
  }
}
const perEvent = (ms: number) => (ms * 1e6) / frozen.length
const appendNs = perEvent(median(timings.get(modes[0]!.label)!.map((t) => t.total)))
const share = (ms: number) => `${fmt((perEvent(ms) / appendNs) * 100, 1)}%`
console.log("")
table(["Rules.make().push over frozen events", "ms / run", "ns / event", "of an append (1)"], frozenModes.map((mode) => {
  const ms = median(pushes[mode])
  return [`frozen: "${mode}"${mode === "sampled" ? " (the Layer's default)" : ""}`, fmt(ms, 1), fmt(perEvent(ms)), share(ms)]
}))
console.log(`\n(1 = an append with one counting subscriber, until drained: ${fmt(appendNs)} ns per event)`)
