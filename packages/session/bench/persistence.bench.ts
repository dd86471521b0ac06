/**
 * The JSONL persistence benchmark (`npm run bench session/bench/persistence`): write throughput
 * through append + flush (the flush fsyncs, so small batches measure the disk's fsync latency),
 * and the time to load and resume a session of 1M events. Measures only; nothing here asserts.
 * Run directly by Node with --expose-gc, so the file uses erasable TypeScript only.
 */
import { FlushCheckpoint, JsonlSessions, SessionStore } from "@dsh/session"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { Effect, Layer } from "effect"
import { statSync } from "node:fs"
import { mkdtemp, open, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { appendAny, type Draft, fmt, gc, stepDrafts, table } from "./workload.ts"

const mb = (bytes: number) => bytes / (1024 * 1024)

/** An endless supply of drafts, step after step. */
const drafts = () => {
  let step = 0
  let queue: Array<Draft> = []
  return (): Draft => {
    if (queue.length === 0) queue = stepDrafts(step++)
    return queue.shift()!
  }
}

const Live = (directory: string) =>
  JsonlSessions.layer({ directory }).pipe(Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)))

// ---------------------------------------------------------------------------------------------
// 1. Write throughput: append `events` events, flushing after every `batch` of them
// ---------------------------------------------------------------------------------------------

const writeRun = (directory: string, id: string, events: number, batch: number) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const checkpoint = yield* FlushCheckpoint
    const session = yield* store.create({ id })
    const next = drafts()
    let flushMs = 0
    let flushes = 0
    gc()
    const start = performance.now()
    for (let done = 0; done < events;) {
      const count = Math.min(batch, events - done)
      for (let i = 0; i < count; i++) yield* appendAny(session, next())
      done += count
      const t = performance.now()
      yield* checkpoint.flush(session)
      flushMs += performance.now() - t
      flushes++
    }
    const ms = performance.now() - start
    const bytes = statSync(join(directory, JsonlSessions.fileName(id))).size
    return { ms, flushMs, flushes, bytes }
  }).pipe(Effect.scoped)

const writeThroughput = (directory: string) =>
  Effect.gen(function*() {
    yield* writeRun(directory, "warm-up", 20_000, 1_000)
    const runs: ReadonlyArray<{ readonly label: string; readonly events: number; readonly batch: number }> = [
      { label: "10 events per flush", events: 10_000, batch: 10 },
      { label: "100 events per flush", events: 100_000, batch: 100 },
      { label: "1,000 events per flush", events: 200_000, batch: 1_000 },
      { label: "one flush of 200k events", events: 200_000, batch: 200_000 }
    ]
    const rows: Array<Array<string>> = []
    for (const run of runs) {
      const r = yield* writeRun(directory, `write-${run.batch}`, run.events, run.batch)
      rows.push([
        run.label,
        fmt(run.events),
        fmt(r.flushes),
        fmt(r.ms),
        fmt((r.flushMs / r.ms) * 100),
        fmt(r.flushMs / r.flushes, 2),
        fmt(run.events / (r.ms / 1000)),
        fmt(mb(r.bytes) / (r.ms / 1000), 1),
        fmt(r.bytes / run.events)
      ])
    }
    table(
      "JSONL write throughput (append + flush; every flush writes and fsyncs before it returns)",
      ["run", "events", "flushes", "total ms", "% in flush", "ms/flush", "events/s", "MB/s", "bytes/event"],
      rows
    )
  }).pipe(Effect.provide(Live(directory)))

// ---------------------------------------------------------------------------------------------
// 2. Resuming a 1M-event session
// ---------------------------------------------------------------------------------------------

/** Writes a session file of `events` events straight from the line encoders (no session). */
const writeFile = async (file: string, id: string, events: number) => {
  const handle = await open(file, "wx")
  const next = drafts()
  let text = JsonlSessions.headerLine(id, 0)
  for (let seq = 0; seq < events; seq++) {
    const d = next()
    text += JsonlSessions.eventLine({ type: d.type, seq, time: 1_700_000_000_000 + seq, data: d.data } as never)
    if (text.length > 8 * 1024 * 1024) {
      await handle.write(text)
      text = ""
    }
  }
  await handle.write(text)
  await handle.sync()
  await handle.close()
}

const resumeBench = (directory: string) =>
  Effect.gen(function*() {
    const events = 1_000_000
    const id = "million"
    const file = join(directory, JsonlSessions.fileName(id))
    let t = performance.now()
    yield* Effect.promise(() => writeFile(file, id, events))
    const encodeMs = performance.now() - t
    const bytes = statSync(file).size

    gc()
    t = performance.now()
    const loaded = yield* JsonlSessions.load(directory, id).pipe(
      Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer))
    )
    const loadMs = performance.now() - t
    const loadedEvents = loaded.events.length

    gc()
    const heapBefore = process.memoryUsage().heapUsed
    const resumed = yield* Effect.gen(function*() {
      const jsonl = yield* JsonlSessions.JsonlSessions
      const start = performance.now()
      const { session } = yield* jsonl.resume(id)
      const resumeMs = performance.now() - start
      const seq = yield* session.seq
      yield* session.append("user/message", { content: [{ type: "text", text: "after resume" }], source: "user" })
      const f = performance.now()
      yield* (yield* FlushCheckpoint).flush(session)
      const firstFlushMs = performance.now() - f
      gc()
      const heapAfter = process.memoryUsage().heapUsed
      return { resumeMs, seq, firstFlushMs, heapAfter }
    }).pipe(Effect.scoped, Effect.provide(Live(directory)))

    table(
      `Resuming a session of 1M events (${fmt(mb(bytes), 0)} MB of JSONL)`,
      ["phase", "events", "ms", "events/s", "MB/s"],
      [
        ["encode + write the file (no session)", fmt(events), fmt(encodeMs), fmt(events / (encodeMs / 1000)), fmt(mb(bytes) / (encodeMs / 1000), 1)],
        ["load (read + decode every line)", fmt(loadedEvents), fmt(loadMs), fmt(loadedEvents / (loadMs / 1000)), fmt(mb(bytes) / (loadMs / 1000), 1)],
        ["resume (load + seed the store)", fmt(resumed.seq), fmt(resumed.resumeMs), fmt(resumed.seq / (resumed.resumeMs / 1000)), fmt(mb(bytes) / (resumed.resumeMs / 1000), 1)]
      ]
    )
    console.log(
      `first flush after resume (one event appended to the ${fmt(mb(bytes), 0)} MB file): ${fmt(resumed.firstFlushMs, 2)} ms; ` +
        `heap held by the resumed session: ~${fmt(mb(resumed.heapAfter - heapBefore), 0)} MB ` +
        `(~${fmt((resumed.heapAfter - heapBefore) / events)} bytes/event)`
    )
  })

// ---------------------------------------------------------------------------------------------

const directory = await mkdtemp(join(tmpdir(), "dsh-bench-persistence-"))
try {
  console.log(`session files in ${directory} (fsync cost depends on that file system)`)
  await Effect.runPromise(writeThroughput(directory))
  await Effect.runPromise(resumeBench(directory))
} finally {
  await rm(directory, { recursive: true, force: true })
}
