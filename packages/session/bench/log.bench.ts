/**
 * The session log and derivation benchmark (`npm run bench session/bench/log`): append
 * throughput with 0, 1 and 10 stream subscribers, the cost of deriving the history per step at
 * 1k, 10k and 100k logged events (it must stay flat: derivation is incremental and the history
 * a structure-sharing `History`), next to what an adapter pays to walk or flatten that history,
 * and the heap retained per logged event. Measures only; nothing here asserts. Run directly by Node with
 * --expose-gc, so the file uses erasable TypeScript only.
 */
import { History, type Message } from "@dsh/llm"
import { Derivation, Session } from "@dsh/session"
import { Effect, Fiber, Stream } from "effect"
import { appendAny, fmt, gc, hasGc, stepDrafts, table } from "./workload.ts"

let sessions = 0
const makeSession = () => Session.make({ id: `bench-${sessions++}` as never, createdAt: 0 })

/** Appends steps until the log holds at least `events` events; returns the next step number. */
const fill = (session: Session.Session, events: number, from = 0) =>
  Effect.gen(function*() {
    let n = from
    while ((yield* session.seq) < events) {
      for (const d of stepDrafts(n)) yield* appendAny(session, d)
      n++
    }
    return n
  })

// ---------------------------------------------------------------------------------------------
// 1. Append throughput with subscribers draining concurrently
// ---------------------------------------------------------------------------------------------

const appendRun = (subscribers: number, appends: number) =>
  Effect.gen(function*() {
    const { close, session } = makeSession()
    const readers = yield* Effect.forEach(
      Array.from({ length: subscribers }),
      () => Effect.forkChild(Stream.runFold(session.stream, () => 0, (count: number) => count + 1))
    )
    yield* Effect.yieldNow
    const start = performance.now()
    for (let i = 0; i < appends; i++) {
      yield* session.append("assistant/chunk", { turn: 1, step: 1, chunk: { type: "text-delta", index: 0, delta: `t${i}` } })
    }
    const appended = performance.now() - start
    close()
    const counts = yield* Fiber.joinAll(readers)
    const drained = performance.now() - start
    return { appended, drained, ok: counts.every((c) => c === appends) }
  })

const appendThroughput = Effect.gen(function*() {
  const appends = 100_000
  yield* appendRun(1, 20_000) // warm-up
  const rows: Array<Array<string>> = []
  for (const subscribers of [0, 1, 10]) {
    // the median of 3 runs by drain time
    const runs: Array<{ appended: number; drained: number; ok: boolean }> = []
    for (let i = 0; i < 3; i++) {
      gc()
      runs.push(yield* appendRun(subscribers, appends))
    }
    const r = runs.sort((a, b) => a.drained - b.drained)[1]!
    rows.push([
      String(subscribers),
      fmt(appends),
      fmt(r.appended, 0),
      fmt(r.drained, 0),
      fmt(appends / (r.drained / 1000)),
      r.ok ? "yes" : "NO"
    ])
  }
  table(
    "Append throughput (assistant/chunk events, each append yielded on its own; readers drain concurrently; median of 3)",
    ["subscribers", "appends", "append ms", "drained ms", "appends/s", "all read all"],
    rows
  )
})

// ---------------------------------------------------------------------------------------------
// 2. Derivation cost per step at 1k, 10k and 100k logged events
// ---------------------------------------------------------------------------------------------

/**
 * Fills a fresh session to `size` events, derives once, then times `session.messages` after each
 * of `steps` further steps (~10.6 events each, so the log stays within size + ~1.1k), in
 * `rounds` fresh sessions. Also times, at that size, what an adapter pays on top (O(history),
 * not part of the derivation): walking the history with `for … of`, and flattening a new
 * version of it with `History.toArray` (memoized per history, so each sample flattens a fresh
 * version).
 */
const derivationAt = (size: number, rounds: number, steps: number) =>
  Effect.gen(function*() {
    const samples: Array<number> = []
    let first = 0
    let scratch = 0
    let walk = 0
    let flatten = 0
    let messages = 0
    let eventsPerStep = 0
    for (let round = 0; round < rounds; round++) {
      gc()
      const { session } = makeSession()
      let n = yield* fill(session, size)
      let t = performance.now()
      yield* session.messages
      first += performance.now() - t
      const all = yield* session.events
      t = performance.now()
      Derivation.derive(all)
      scratch += performance.now() - t
      for (let s = 0; s < steps; s++) {
        const drafts = stepDrafts(n++)
        eventsPerStep += drafts.length
        for (const d of drafts) yield* appendAny(session, d)
        t = performance.now()
        yield* session.messages
        samples.push((performance.now() - t) * 1000)
      }
      const history = yield* session.messages
      messages += history.length
      const extra: Message.Message = { role: "user", content: [] }
      const walks: Array<number> = []
      const flattens: Array<number> = []
      let sink = 0
      for (let i = 0; i < 101; i++) {
        t = performance.now()
        for (const m of history) sink += m.content.length
        walks.push((performance.now() - t) * 1000)
        const version = History.append(history, extra)
        t = performance.now()
        sink += History.toArray(version).length
        flattens.push((performance.now() - t) * 1000)
      }
      if (sink < 0) console.log(sink)
      walk += walks.sort((a, b) => a - b)[50] ?? 0
      flatten += flattens.sort((a, b) => a - b)[50] ?? 0
    }
    samples.sort((a, b) => a - b)
    return {
      size,
      mean: samples.reduce((a, b) => a + b, 0) / samples.length,
      median: samples[Math.floor(samples.length / 2)] ?? 0,
      p90: samples[Math.floor(samples.length * 0.9)] ?? 0,
      max: samples[samples.length - 1] ?? 0,
      eventsPerStep: eventsPerStep / (rounds * steps),
      first: first / rounds,
      scratch: scratch / rounds,
      walk: walk / rounds,
      flatten: flatten / rounds,
      messages: messages / rounds
    }
  })

const derivationCost = Effect.gen(function*() {
  yield* derivationAt(1_000, 2, 100) // warm-up
  const rows: Array<Array<string>> = []
  for (const size of [1_000, 10_000, 100_000]) {
    gc()
    const r = yield* derivationAt(size, 3, 100)
    rows.push([
      fmt(r.size),
      fmt(r.messages),
      fmt(r.eventsPerStep, 1),
      fmt(r.mean, 1),
      fmt(r.median, 1),
      fmt(r.p90, 1),
      fmt(r.max, 0),
      fmt(r.walk, 1),
      fmt(r.flatten, 1),
      fmt(r.first, 2),
      fmt(r.scratch, 2)
    ])
  }
  table(
    "Derivation per step: session.messages after appending one step's events (3 sessions x 100 steps per size);\n" +
      "adapter columns: walking / flattening that history once, median of 101 (O(history), paid by adapters, not derivation)",
    [
      "log events",
      "messages",
      "events/step",
      "µs/step mean",
      "median",
      "p90",
      "max",
      "adapter walk µs",
      "adapter toArray µs",
      "first derive ms",
      "from scratch ms"
    ],
    rows
  )
})

// ---------------------------------------------------------------------------------------------
// 3. Retained memory per event
// ---------------------------------------------------------------------------------------------

const retainedMemory = Effect.gen(function*() {
  const events = 100_000
  const keep: Array<unknown> = []
  gc()
  const before = process.memoryUsage().heapUsed
  const { session } = makeSession()
  yield* fill(session, events)
  keep.push(session)
  gc()
  const logged = process.memoryUsage().heapUsed
  const count = yield* session.seq
  const messages = yield* session.messages
  keep.push(messages)
  gc()
  const derived = process.memoryUsage().heapUsed
  const json = (yield* session.events).reduce((bytes, e) => bytes + JSON.stringify(e).length, 0)
  table(
    `Retained heap (${fmt(count)} events of the step mix above; ${hasGc ? "after gc" : "NO --expose-gc: rough"})`,
    ["what", "bytes/event", "total MB"],
    [
      ["event log", fmt((logged - before) / count), fmt((logged - before) / 2 ** 20, 1)],
      ["+ derived history", fmt((derived - logged) / count), fmt((derived - logged) / 2 ** 20, 1)],
      ["(JSON size, for scale)", fmt(json / count), fmt(json / 2 ** 20, 1)]
    ]
  )
  return keep.length
})

const program = Effect.gen(function*() {
  const start = performance.now()
  yield* appendThroughput
  yield* derivationCost
  yield* retainedMemory
  console.log(`\n(total ${fmt((performance.now() - start) / 1000, 1)} s)`)
})

await Effect.runPromise(program)
