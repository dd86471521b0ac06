/**
 * The turn benchmark (`npm run bench scenarios`): one agent, N turns on one session, each turn
 * two steps — 20 text deltas then one tool call; then 20 text deltas and a stop — with a trivial
 * tool, at N = 100, 1000 and 3000. Reported per N: the mean and the median (p50) time per turn,
 * the process's CPU time per turn (steadier than wall time on a shared machine, but blind to
 * waiting: JSONL's fsyncs), the mean over the first 10% and over the last 10% of the turns
 * (growth with history shows as a ratio above 1), and the process's peak RSS. Reported per implementation: its setup — the
 * time from before its first import to ready for the first turn (imports, the Layers or the
 * agent built, the agent created), the time from the process's start to that point, the RSS
 * there, and the first (cold) turn.
 *
 * The same scenario runs through dsh (the loop, with every chunk logged as a session event), in
 * three compositions — in memory (`dsh`), with the invariants checker on (`dsh+invariants`,
 * `Invariants.layer` over the store, as `Dsh.layer({ invariants: true })` composes it) and with
 * JSONL persistence (`dsh+jsonl`, `JsonlSessions.layer` in a temporary directory, as
 * `Dsh.layer({ sessions: { directory } })` composes it: every turn's flush writes and fsyncs) —
 * and through two peers: pi's agent core (`@mariozechner/pi-agent-core`, its `Agent` with a
 * `streamFn` that streams like pi-ai's providers) and the Vercel AI SDK (`ai`, `streamText`
 * with the SDK's own mock model from `ai/test`, two steps per call, the history carried
 * across calls as the steps' response messages). Each run checks that the model really received
 * the growing history (the first request of turn k holds 4(k-1)+1 messages) and that the tool
 * ran once per turn; dsh's runs also check that every chunk was logged, the checker's that it
 * found no violation, and JSONL's that the file held every event when the last turn returned
 * (its flush is durable before the turn ends). A run that fails a check is reported as such.
 *
 * Every (implementation, N) runs REPEATS times, each in a fresh child process (`--expose-gc`), so
 * timings and peak RSS do not interfere, and the run with the median mean is reported (the
 * machines are shared; single runs are noisy). The repeats are interleaved — one run of every
 * implementation, then the next round — so a change in the machine's load falls on all of them
 * alike, and the ratios between them are of runs made side by side; the load average is printed
 * with every row. Each run starts with a short warm-up on a
 * separate agent. The heap in use after a full GC at the end (history alive) is reported too,
 * to tell retained memory from garbage the GC had not collected yet at the RSS peak. Measures only;
 * nothing here asserts. Run directly by Node (type stripping), so the file is erasable
 * TypeScript with no imports of its own package. dsh's packages are built first (the build's own
 * script) and the children load them from `dist`, as a user's app would, and as the peers are
 * loaded from their compiled packages.
 */
import { spawnSync } from "node:child_process"
import { closeSync, mkdtempSync, openSync, readSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"

// the first thing the module runs (its static imports are Node's own, already loaded): a
// child's setup is measured from here, before the dynamic imports of its implementation
const beforeImports = performance.now()

const SIZES = [100, 1000, 3000] as const
const IMPLS = ["dsh", "dsh+invariants", "dsh+jsonl", "pi-agent-core", "ai-sdk"] as const
type Impl = (typeof IMPLS)[number]
const DELTAS = 20
const WARMUP = 50
const REPEATS = 5

interface Report {
  readonly impl: Impl
  readonly n: number
  readonly meanUs: number
  /** The median turn. */
  readonly p50Us: number
  /**
   * The process's CPU time (user + system, every thread: the GC's too) over the measured turns,
   * per turn: steadier than the wall time on a machine other work shares.
   */
  readonly cpuUs: number
  readonly firstUs: number
  readonly lastUs: number
  readonly peakRssMiB: number
  /** The heap in use after a full GC at the end, the history still alive. */
  readonly retainedMiB: number
  readonly loggedEvents?: number
  readonly setup: Setup
  readonly problems: ReadonlyArray<string>
}

/** Where a run stood when it was ready for its first turn, and what that turn cost. */
interface Setup {
  /** From before the implementation's first import to ready for the first turn. */
  readonly setupMs: number
  /** From the process's start (`performance.timeOrigin`) to ready for the first turn. */
  readonly sinceStartMs: number
  /** RSS when ready for the first turn. */
  readonly readyRssMiB: number
  /** The first turn (the first of the warm-up): cold code, nothing compiled yet. */
  readonly firstTurnMs: number
}

const noSetup: Setup = { setupMs: NaN, sinceStartMs: NaN, readyRssMiB: NaN, firstTurnMs: NaN }
let setup: Setup = noSetup
let readyAt = NaN

/** Marks the run ready for its first turn: everything imported and built, the agent created. */
const ready = (): void => {
  readyAt = performance.now()
  setup = { ...setup, setupMs: readyAt - beforeImports, sinceStartMs: readyAt, readyRssMiB: process.memoryUsage().rss / (1024 * 1024) }
}

let cpuAtStart: NodeJS.CpuUsage | undefined
let cpuUsed = NaN

/** Brackets the measured turns, for their CPU time. */
const measuring = (): void => {
  cpuAtStart = process.cpuUsage()
}
const measured = (): void => {
  const used = process.cpuUsage(cpuAtStart)
  cpuUsed = used.user + used.system
}

/** Records the first turn's time, from the ready mark. */
const firstTurnDone = (): void => {
  if (Number.isNaN(setup.firstTurnMs)) setup = { ...setup, firstTurnMs: performance.now() - readyAt }
}

/** A run's timings: one entry per turn, in ms. */
type Driver = (turns: number, check: Checker) => Promise<Array<number>>

/** Records what the model saw and what the tool did, and says what went wrong. */
class Checker {
  readonly lengths: Array<number> = []
  toolRuns = 0
  readonly problems: Array<string> = []

  request(length: number): void {
    this.lengths.push(length)
  }

  verify(turns: number): void {
    if (this.toolRuns !== turns) this.problems.push(`the tool ran ${this.toolRuns} times in ${turns} turns`)
    if (this.lengths.length !== 2 * turns) {
      this.problems.push(`${this.lengths.length} model requests in ${turns} turns (expected ${2 * turns})`)
    }
    for (let k = 1; k <= turns; k++) {
      const first = this.lengths[2 * (k - 1)]
      const second = this.lengths[2 * (k - 1) + 1]
      if (first !== 4 * (k - 1) + 1 || second !== 4 * (k - 1) + 3) {
        this.problems.push(`turn ${k}: the model saw ${first} then ${second} messages, expected ${4 * (k - 1) + 1} then ${4 * (k - 1) + 3}`)
        break
      }
    }
  }
}

/** The text deltas of a step: fresh strings, as a parsed provider stream would give. */
const deltas = (turn: number, step: number): Array<string> =>
  Array.from({ length: DELTAS }, (_, i) => `${i === 0 ? "" : " "}w${turn}.${step}.${i}`)

// ---------------------------------------------------------------------------------------------
// dsh
// ---------------------------------------------------------------------------------------------

/** dsh's compositions: in memory, with the invariants checker, with JSONL persistence. */
interface Composition {
  readonly invariants: boolean
  readonly jsonl: boolean
}

const dsh = (composition: Composition): Driver => async (turns, check) => {
  const { Agents, AgentHooks } = await import("@dsh/agent")
  const { AgentLoop } = await import("@dsh/loop")
  const { Model, ModelRegistry } = await import("@dsh/model")
  const { SystemPrompt } = await import("@dsh/prompt")
  const { History } = await import("@dsh/llm")
  const { FlushCheckpoint, JsonlSessions, SessionStore } = await import("@dsh/session")
  const { Tool, ToolRegistry, Tools } = await import("@dsh/tools")
  // effect's modules by their own paths, as dsh's packages import them: its barrel loads all
  // of its modules (~150 ms and ~14 MiB more at setup)
  const [Effect, Layer, Schema, Stream] = await Promise.all([
    import("effect/Effect"),
    import("effect/Layer"),
    import("effect/Schema"),
    import("effect/Stream")
  ])
  // only the compositions that use it pay for importing the checker
  const { Invariants } = composition.invariants ? await import("@dsh/invariants") : { Invariants: undefined }
  type Chunk = import("@dsh/llm").StreamChunk.StreamChunk

  let turnOfRequest = 0
  const replyTo = (toolStep: boolean, turn: number): Array<Chunk> => {
    const text = deltas(turn, toolStep ? 1 : 2)
    const chunks: Array<Chunk> = [{ type: "block-start", index: 0, blockType: "text" }]
    for (const delta of text) chunks.push({ type: "text-delta", index: 0, delta })
    chunks.push({ type: "block-end", index: 0, block: { type: "text", text: text.join("") } })
    if (toolStep) {
      const id = `call_${turn}` as never
      const args = `{"n":${turn}}`
      chunks.push({ type: "block-start", index: 1, blockType: "tool-call" })
      chunks.push({ type: "tool-call-delta", index: 1, id, name: "noop", argumentsDelta: args })
      chunks.push({ type: "block-end", index: 1, block: { type: "tool-call", id, name: "noop", arguments: args } })
    }
    chunks.push({ type: "finish", reason: { kind: toolStep ? "tool-calls" : "stop" } })
    return chunks
  }

  const adapter = Layer.effectDiscard(Effect.gen(function*() {
    const registry = yield* ModelRegistry
    yield* registry.register({
      name: "bench",
      models: ["bench"],
      stream: (request) =>
        Stream.suspend(() => {
          check.request(request.messages.length)
          const last = History.last(request.messages)
          const toolStep = last?.content[0]?.type !== "tool-result"
          if (toolStep) turnOfRequest++
          return Stream.fromIterable(replyTo(toolStep, turnOfRequest))
        })
    })
  }))

  const noop = Tool.make("noop", {
    description: "Does nothing",
    parameters: Schema.Struct({ n: Schema.Int }),
    execute: ({ n }) =>
      Effect.sync(() => {
        check.toolRuns++
        return `ok ${n}`
      })
  })

  // the sessions as Dsh.layer composes them: the checker over the in-memory store, JSONL on top
  const inMemory = Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)
  const checked = Invariants === undefined ? inMemory : Layer.provideMerge(Invariants.layer, inMemory)
  const directory = composition.jsonl ? mkdtempSync(join(tmpdir(), "dsh-turns-bench-")) : undefined
  const sessions = directory === undefined ? checked : JsonlSessions.layer({ directory }).pipe(Layer.provideMerge(checked))

  const Live = AgentLoop.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(
      adapter.pipe(Layer.provideMerge(Model.layer)),
      sessions,
      Tools.layer(noop).pipe(Layer.provideMerge(ToolRegistry.layer)),
      SystemPrompt.layer,
      AgentHooks.layer
    )),
    Layer.orDie
  )

  const program = Effect.gen(function*() {
    const agents = yield* Agents
    // warm-up on its own agent and session, disposed before the measured run
    yield* Effect.scoped(Effect.gen(function*() {
      const agent = yield* agents.create({ model: "bench" })
      ready()
      for (let i = 0; i < WARMUP; i++) {
        yield* agent.send(`warm-up ${i}`)
        yield* agent.awaitIdle
        firstTurnDone()
      }
    }))
    check.lengths.length = 0
    check.toolRuns = 0
    turnOfRequest = 0
    gc()
    const agent = yield* agents.create({ model: "bench" })
    const times: Array<number> = []
    measuring()
    for (let i = 0; i < turns; i++) {
      const start = performance.now()
      yield* agent.send(`turn ${i + 1}`)
      yield* agent.awaitIdle
      times.push(performance.now() - start)
    }
    measured()
    const events = yield* agent.session.events
    const chunks = events.filter((e) => e.type === "assistant/chunk").length
    const expected = turns * (2 * (DELTAS + 3) + 3)
    if (chunks !== expected) check.problems.push(`${chunks} chunks logged, expected ${expected}`)
    loggedEvents = events.length
    retained = heapAfterGc()
    if (Invariants !== undefined) {
      // the Layer's type does not show the checker (it is provided on one branch only)
      const checker = yield* Effect.serviceOption(Invariants)
      const violations = checker._tag === "Some" ? yield* checker.value.violations : []
      if (checker._tag === "None") check.problems.push("the checker was not provided")
      if (violations.length > 0) check.problems.push(`${violations.length} invariant violations, the first: ${violations[0]!.message}`)
    }
    // durability: the last turn's flush, after its `turn/end`, returned before the turn did, so
    // the file holds a header and every event up to that `turn/end` (the idle status logged
    // after the flush is the next flush's)
    if (directory !== undefined) {
      const lines = linesIn(join(directory, `${encodeURIComponent(agent.session.id)}.jsonl`))
      const durable = events.findLastIndex((e) => e.type === "turn/end") + 1
      if (lines < durable + 1 || lines > events.length + 1) {
        check.problems.push(`the session file has ${lines} lines after the last turn, expected ${durable + 1} (a header and events up to the last turn/end)`)
      }
    }
    return times
  })

  try {
    return await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(Live)))
  } finally {
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true })
  }
}

/** Counts a file's lines by its newlines, a block at a time (it can be tens of MB). */
const linesIn = (file: string): number => {
  const fd = openSync(file, "r")
  const block = Buffer.allocUnsafe(1 << 16)
  let lines = 0
  try {
    for (let read = readSync(fd, block); read > 0; read = readSync(fd, block)) {
      for (let i = 0; i < read; i++) if (block[i] === 10) lines++
    }
  } finally {
    closeSync(fd)
  }
  return lines
}
let loggedEvents: number | undefined
/** The heap in use after a full GC at the end of the run, the agent and its history still alive. */
let retained = NaN
const heapAfterGc = (): number => {
  gc()
  return process.memoryUsage().heapUsed / (1024 * 1024)
}

// ---------------------------------------------------------------------------------------------
// pi-agent-core
// ---------------------------------------------------------------------------------------------

const pi: Driver = async (turns, check) => {
  const { Agent } = await import("@mariozechner/pi-agent-core")
  const { createAssistantMessageEventStream, Type } = await import("@mariozechner/pi-ai")
  type AssistantMessage = import("@mariozechner/pi-ai").AssistantMessage
  type StreamFn = import("@mariozechner/pi-agent-core").StreamFn
  type AgentTool<P extends import("@mariozechner/pi-ai").TSchema> = import("@mariozechner/pi-agent-core").AgentTool<P>

  const model = {
    id: "bench",
    name: "bench",
    api: "bench",
    provider: "bench",
    baseUrl: "http://localhost",
    reasoning: false,
    input: ["text" as const],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 1_000_000,
    maxTokens: 100_000
  }
  let turnOfRequest = 0

  // streams like pi-ai's providers: one output message mutated in place, events pointing at it
  const streamFn: StreamFn = (m, context) => {
    const stream = createAssistantMessageEventStream()
    check.request(context.messages.length)
    const toolStep = context.messages.at(-1)?.role !== "toolResult"
    if (toolStep) turnOfRequest++
    const turn = turnOfRequest
    void (async () => {
      const output: AssistantMessage = {
        role: "assistant",
        content: [],
        api: m.api,
        provider: m.provider,
        model: m.id,
        usage: {
          input: 0,
          output: 0,
          cacheRead: 0,
          cacheWrite: 0,
          totalTokens: 0,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
        },
        stopReason: toolStep ? "toolUse" : "stop",
        timestamp: Date.now()
      }
      stream.push({ type: "start", partial: output })
      const block = { type: "text" as const, text: "" }
      output.content.push(block)
      stream.push({ type: "text_start", contentIndex: 0, partial: output })
      for (const delta of deltas(turn, toolStep ? 1 : 2)) {
        block.text += delta
        stream.push({ type: "text_delta", contentIndex: 0, delta, partial: output })
      }
      stream.push({ type: "text_end", contentIndex: 0, content: block.text, partial: output })
      if (toolStep) {
        const call = { type: "toolCall" as const, id: `call_${turn}`, name: "noop", arguments: {} as Record<string, unknown> }
        output.content.push(call)
        stream.push({ type: "toolcall_start", contentIndex: 1, partial: output })
        const args = `{"n":${turn}}`
        call.arguments = JSON.parse(args) as Record<string, unknown>
        stream.push({ type: "toolcall_delta", contentIndex: 1, delta: args, partial: output })
        stream.push({ type: "toolcall_end", contentIndex: 1, toolCall: call, partial: output })
      }
      stream.push({ type: "done", reason: toolStep ? "toolUse" : "stop", message: output })
      stream.end()
    })()
    return stream
  }

  const parameters = Type.Object({ n: Type.Number() })
  const noop: AgentTool<typeof parameters> = {
    name: "noop",
    label: "noop",
    description: "Does nothing",
    parameters,
    execute: async (_id, params) => {
      check.toolRuns++
      return { content: [{ type: "text", text: `ok ${params.n}` }], details: {} }
    }
  }

  const make = () => new Agent({ initialState: { systemPrompt: "", model, tools: [noop], messages: [] }, streamFn })

  const warm = make()
  ready()
  for (let i = 0; i < WARMUP; i++) {
    await warm.prompt(`warm-up ${i}`)
    firstTurnDone()
  }
  check.lengths.length = 0
  check.toolRuns = 0
  turnOfRequest = 0
  gc()

  const agent = make()
  const times: Array<number> = []
  measuring()
  for (let i = 0; i < turns; i++) {
    const start = performance.now()
    await agent.prompt(`turn ${i + 1}`)
    times.push(performance.now() - start)
  }
  measured()
  if (agent.state.errorMessage !== undefined) check.problems.push(`agent error: ${agent.state.errorMessage}`)
  retained = heapAfterGc()
  void agent.state.messages.length
  return times
}

// ---------------------------------------------------------------------------------------------
// Vercel AI SDK
// ---------------------------------------------------------------------------------------------

const aiSdk: Driver = async (turns, check) => {
  const { jsonSchema, stepCountIs, streamText, tool } = await import("ai")
  const { MockLanguageModelV4 } = await import("ai/test")
  type ModelMessage = import("ai").ModelMessage
  type Part = import("@ai-sdk/provider").LanguageModelV4StreamPart

  let turnOfRequest = 0
  const usage = {
    inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 20, text: 20, reasoning: 0 }
  }
  const model = new MockLanguageModelV4({
    doStream: async (options) => {
      // the mock records every call's options; keeping them would hold every prompt ever sent
      model.doStreamCalls.length = 0
      check.request(options.prompt.length)
      const toolStep = options.prompt.at(-1)?.role !== "tool"
      if (toolStep) turnOfRequest++
      const turn = turnOfRequest
      const parts: Array<Part> = [{ type: "stream-start", warnings: [] }, { type: "text-start", id: "t" }]
      for (const delta of deltas(turn, toolStep ? 1 : 2)) parts.push({ type: "text-delta", id: "t", delta })
      parts.push({ type: "text-end", id: "t" })
      if (toolStep) {
        const id = `call_${turn}`
        const input = `{"n":${turn}}`
        parts.push({ type: "tool-input-start", id, toolName: "noop" })
        parts.push({ type: "tool-input-delta", id, delta: input })
        parts.push({ type: "tool-input-end", id })
        parts.push({ type: "tool-call", toolCallId: id, toolName: "noop", input })
      }
      parts.push({ type: "finish", usage, finishReason: { unified: toolStep ? "tool-calls" : "stop", raw: undefined } })
      return {
        stream: new ReadableStream<Part>({
          start(controller) {
            for (const part of parts) controller.enqueue(part)
            controller.close()
          }
        })
      }
    }
  })

  const tools = {
    noop: tool({
      description: "Does nothing",
      inputSchema: jsonSchema<{ n: number }>({
        type: "object",
        properties: { n: { type: "number" } },
        required: ["n"],
        additionalProperties: false
      }),
      execute: async ({ n }: { n: number }) => {
        check.toolRuns++
        return `ok ${n}`
      }
    })
  }

  const runTurns = async (count: number, label: string, times?: Array<number>) => {
    const history: Array<ModelMessage> = []
    if (times !== undefined) measuring()
    for (let i = 0; i < count; i++) {
      const start = performance.now()
      history.push({ role: "user", content: `${label} ${i + 1}` })
      const result = streamText({ model, messages: history, tools, stopWhen: stepCountIs(2) })
      for await (const part of result.fullStream) {
        if (part.type === "error") check.problems.push(`stream error: ${String(part.error)}`)
      }
      // v7's response.messages hold the last step's messages: the turn's are all its steps'
      for (const step of await result.steps) history.push(...step.response.messages)
      times?.push(performance.now() - start)
      firstTurnDone()
    }
    if (times !== undefined) {
      measured()
      retained = heapAfterGc()
    }
  }

  ready()
  await runTurns(WARMUP, "warm-up")
  check.lengths.length = 0
  check.toolRuns = 0
  turnOfRequest = 0
  gc()
  const times: Array<number> = []
  await runTurns(turns, "turn", times)
  return times
}

// ---------------------------------------------------------------------------------------------
// child: one implementation at one N
// ---------------------------------------------------------------------------------------------

const gc = (): void => {
  const collect = (globalThis as { gc?: () => void }).gc
  if (collect !== undefined) {
    collect()
    collect()
  }
}

const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)

const median = (xs: ReadonlyArray<number>): number => {
  const sorted = xs.slice().sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length === 0 ? NaN : sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const drivers: Record<Impl, Driver> = {
  "dsh": dsh({ invariants: false, jsonl: false }),
  "dsh+invariants": dsh({ invariants: true, jsonl: false }),
  "dsh+jsonl": dsh({ invariants: false, jsonl: true }),
  "pi-agent-core": pi,
  "ai-sdk": aiSdk
}

const child = async (impl: Impl, n: number): Promise<void> => {
  const check = new Checker()
  const drive = drivers[impl]
  let times: Array<number> = []
  try {
    times = await drive(n, check)
    check.verify(n)
  } catch (error) {
    check.problems.push(`failed: ${error instanceof Error ? error.message : String(error)}`)
  }
  const tenth = Math.max(1, Math.floor(n / 10))
  const report: Report = {
    impl,
    n,
    meanUs: mean(times) * 1000,
    p50Us: median(times) * 1000,
    cpuUs: cpuUsed / n,
    firstUs: mean(times.slice(0, tenth)) * 1000,
    lastUs: mean(times.slice(-tenth)) * 1000,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
    retainedMiB: retained,
    ...(loggedEvents !== undefined ? { loggedEvents } : {}),
    setup,
    problems: check.problems
  }
  console.log(JSON.stringify(report))
}

// ---------------------------------------------------------------------------------------------
// parent: every (implementation, N) in its own process, then the tables
// ---------------------------------------------------------------------------------------------

const fmt = (x: number, digits = 0) =>
  Number.isFinite(x) ? x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "—"

const table = (title: string, head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): void => {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ")
  console.log(`\n${title}`)
  console.log(line(head))
  console.log(widths.map((w) => "-".repeat(w)).join("  "))
  for (const row of rows) console.log(line(row))
}

const loads = () => loadavg().map((l) => l.toFixed(2)).join(" ")

/** The reports of one N: every run of every implementation, in rounds. */
type Rounds = Record<Impl, Array<Report>>

/** The ratio of two implementations' runs made in the same round, over the rounds: median and range. */
interface Ratio {
  readonly median: number
  readonly min: number
  readonly max: number
}

const paired = (rounds: Rounds, a: Impl, b: Impl, metric: (r: Report) => number): Ratio => {
  const ratios = rounds[a].map((r, i) => metric(r) / metric(rounds[b][i]!)).filter(Number.isFinite)
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) }
}

const fmtRatio = (r: Ratio) => `${fmt(r.median, 2)}× (${fmt(r.min, 2)}–${fmt(r.max, 2)})`

/** The packages dsh's children import (with their @dsh dependencies), built before the rounds. */
const DSH_PACKAGES = ["llm", "model", "prompt", "session", "tools", "agent", "loop", "invariants"]

/**
 * Builds dsh's packages with the build's own script, so the children load what a user installs
 * (JavaScript from `dist`), as the peers are loaded from their compiled packages — and never a
 * stale build. `npm run bench` resolves @dsh/* to the TypeScript sources (ADR 0017), which
 * would charge dsh's setup with type stripping; the children run without that condition.
 */
const buildDsh = (): void => {
  const root = new URL("../../..", import.meta.url).pathname
  const started = performance.now()
  const run = spawnSync(process.execPath, [join(root, "scripts", "build.mjs"), ...DSH_PACKAGES], {
    cwd: root,
    encoding: "utf8",
    env: childEnv
  })
  if (run.status !== 0) throw new Error(`building dsh's packages failed: ${(run.stderr || run.stdout).trim()}`)
  console.log(`dsh's packages built from the current sources in ${((performance.now() - started) / 1000).toFixed(1)} s; the children load them from dist`)
}

/** The children's environment: without `--conditions=@dsh/source`, so @dsh/* resolve to the build. */
const childEnv: Record<string, string> = Object.fromEntries(
  Object.entries({
    ...process.env,
    NODE_OPTIONS: (process.env.NODE_OPTIONS ?? "").split(/\s+/).filter((o) => o !== "" && o !== "--conditions=@dsh/source").join(" ")
  }).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== "")
)

const once = (file: string, impl: Impl, n: number): Report => {
  const run = spawnSync(process.execPath, ["--expose-gc", file, "child", impl, String(n)], {
    encoding: "utf8",
    env: childEnv,
    maxBuffer: 64 * 1024 * 1024
  })
  const line = run.stdout.split("\n").find((l) => l.startsWith("{"))
  if (run.status === 0 && line !== undefined) return JSON.parse(line) as Report
  const why = `exit ${run.status}: ${(run.stderr || run.stdout).trim().split("\n").slice(-3).join(" | ")}`
  return { impl, n, meanUs: NaN, p50Us: NaN, cpuUs: NaN, firstUs: NaN, lastUs: NaN, peakRssMiB: NaN, retainedMiB: NaN, setup: noSetup, problems: [why] }
}

/** Every implementation REPEATS times at one N, interleaved: round r runs each of them once. */
const runRounds = (file: string, n: number): Rounds => {
  const rounds = Object.fromEntries(IMPLS.map((impl) => [impl, [] as Array<Report>])) as Rounds
  for (let r = 0; r < REPEATS; r++) {
    for (const impl of IMPLS) rounds[impl].push(once(file, impl, n))
  }
  return rounds
}

/** A run's reported figure: the run with the median mean, or the first that failed a check. */
const representative = (runs: ReadonlyArray<Report>): Report => {
  const failed = runs.find((r) => r.problems.length > 0)
  const sorted = runs.slice().sort((a, b) => a.meanUs - b.meanUs)
  return failed ?? sorted[Math.floor(sorted.length / 2)]!
}

const parent = (): void => {
  const file = new URL(import.meta.url).pathname
  const reports: Array<Report> = []
  const byN = new Map<number, Rounds>()
  console.log(`turns: ${SIZES.join(", ")}; each turn 2 steps (${DELTAS} text deltas + 1 tool call; ${DELTAS} text deltas + stop)`)
  console.log(`each (implementation, N) runs ${REPEATS} times, each in a fresh process, interleaved in rounds; the run with the median mean is kept`)
  buildDsh()
  console.log(`load average (1, 5, 15 min) before: ${loads()}`)
  for (const n of SIZES) {
    const rounds = runRounds(file, n)
    byN.set(n, rounds)
    for (const impl of IMPLS) {
      const runs = rounds[impl]
      const report = representative(runs)
      reports.push(report)
      const failed = runs.find((r) => r.problems.length > 0)
      console.log(
        `  ${impl.padEnd(14)} N=${String(n).padStart(4)}: ${runs.map((r) => fmt(r.meanUs)).join(" / ")} µs/turn, ` +
          `p50 ${fmt(report.p50Us)}, CPU ${fmt(report.cpuUs)}, peak RSS ${fmt(report.peakRssMiB)} MiB` +
          (failed === undefined ? ", checks passed" : `, CHECK FAILED: ${failed.problems.join("; ")}`)
      )
    }
    console.log(`  load average after N=${n}: ${loads()}`)
  }
  const get = (impl: Impl, n: number) => reports.find((r) => r.impl === impl && r.n === n)
  const rounds = (n: number) => byN.get(n)!

  const perTurn = (title: string, metric: (r: Report) => number) =>
    table(
      title,
      ["N", ...IMPLS, "dsh / pi", "dsh / ai-sdk", "+invariants / dsh", "+jsonl / dsh"],
      SIZES.map((n) => [
        String(n),
        ...IMPLS.map((impl) => fmt(get(impl, n) === undefined ? NaN : metric(get(impl, n)!))),
        ...([["dsh", "pi-agent-core"], ["dsh", "ai-sdk"], ["dsh+invariants", "dsh"], ["dsh+jsonl", "dsh"]] as const)
          .map(([a, b]) => `${fmt(paired(rounds(n), a, b, metric).median, 2)}×`)
      ])
    )
  perTurn("Mean time per turn (µs), whole run; ratios: median over the rounds of runs made side by side", (r) => r.meanUs)
  perTurn("Median (p50) time per turn (µs); ratios as above", (r) => r.p50Us)
  perTurn("CPU time per turn (µs: the process's user + system over the measured turns, GC threads included); ratios as above", (r) => r.cpuUs)
  table(
    "Growth with history: mean µs/turn over the first and the last 10% of turns",
    ["impl", "N", "first 10%", "last 10%", "last/first", "peak RSS (MiB)", "heap after GC (MiB)"],
    IMPLS.flatMap((impl) =>
      SIZES.map((n) => {
        const r = get(impl, n)
        return [
          impl,
          String(n),
          fmt(r?.firstUs ?? NaN),
          fmt(r?.lastUs ?? NaN),
          `${fmt((r?.lastUs ?? NaN) / (r?.firstUs ?? NaN), 2)}×`,
          fmt(r?.peakRssMiB ?? NaN),
          fmt(r?.retainedMiB ?? NaN)
        ]
      })
    )
  )

  // setup does not depend on N: every run of an implementation is a sample of it
  const setupOf = (impl: Impl, metric: (s: Setup) => number) =>
    median(SIZES.flatMap((n) => rounds(n)[impl].map((r) => metric(r.setup))).filter(Number.isFinite))
  const setupMetrics = [
    ["setup (ms)", (s: Setup) => s.setupMs],
    ["since process start (ms)", (s: Setup) => s.sinceStartMs],
    ["RSS at ready (MiB)", (s: Setup) => s.readyRssMiB],
    ["first turn (ms)", (s: Setup) => s.firstTurnMs]
  ] as const
  table(
    `Setup, to ready for the first turn (median of ${SIZES.length * REPEATS} runs each): from before the first import, from the process's start, RSS there, then the cold first turn`,
    ["impl", ...setupMetrics.map(([h]) => h), "setup / pi", "RSS / pi"],
    IMPLS.map((impl) => [
      impl,
      ...setupMetrics.map(([, m]) => fmt(setupOf(impl, m), 1)),
      `${fmt(setupOf(impl, (s) => s.setupMs) / setupOf("pi-agent-core", (s) => s.setupMs), 2)}×`,
      `${fmt(setupOf(impl, (s) => s.readyRssMiB) / setupOf("pi-agent-core", (s) => s.readyRssMiB), 2)}×`
    ])
  )

  const big = SIZES[SIZES.length - 1]!
  const d = get("dsh", big)
  const verdict = (ok: boolean) => (ok ? "met" : "MISSED")
  console.log(`\nTargets (#19; ratios: median over the rounds, range in parentheses)`)
  for (const [label, metric] of [["mean", (r: Report) => r.meanUs], ["p50", (r: Report) => r.p50Us], ["CPU", (r: Report) => r.cpuUs]] as const) {
    for (const n of SIZES) {
      const ratio = paired(rounds(n), "dsh", "pi-agent-core", metric)
      console.log(
        `  ${label} per turn ≤ pi-agent-core's at N=${n}: ${fmt(metric(get("dsh", n)!))} vs ${fmt(metric(get("pi-agent-core", n)!))} µs, ` +
          `${fmtRatio(ratio)} — ${verdict(ratio.median <= 1)}`
      )
    }
  }
  for (const [variant, bound] of [["dsh+invariants", 1.1], ["dsh+jsonl", 1.3]] as const) {
    for (const n of SIZES) {
      const mean = paired(rounds(n), variant, "dsh", (r) => r.meanUs)
      const p50 = paired(rounds(n), variant, "dsh", (r) => r.p50Us)
      const cpu = paired(rounds(n), variant, "dsh", (r) => r.cpuUs)
      console.log(
        `  ${variant} ≤ ${bound}× dsh per turn at N=${n}: mean ${fmtRatio(mean)}, p50 ${fmtRatio(p50)}, CPU ${fmtRatio(cpu)} — ${verdict(mean.median <= bound)}`
      )
    }
  }
  const ratio = (d?.lastUs ?? NaN) / (d?.firstUs ?? NaN)
  console.log(`  last 10% ≤ 1.3× first 10% at N=${big}: ${fmt(ratio, 2)}× — ${verdict(ratio <= 1.3)}`)
  for (const impl of ["dsh", "dsh+invariants", "dsh+jsonl"] as const) {
    const rss = get(impl, big)?.peakRssMiB ?? NaN
    console.log(`  peak RSS < 150 MiB at N=${big} (${impl}): ${fmt(rss)} MiB — ${verdict(rss < 150)}`)
  }
  const rssReady = setupOf("dsh", (s) => s.readyRssMiB) / setupOf("pi-agent-core", (s) => s.readyRssMiB)
  console.log(`  RSS after setup ≤ 1.2× pi's: ${fmt(rssReady, 2)}× — ${verdict(rssReady <= 1.2)}`)
  const setupRatio = setupOf("dsh", (s) => s.setupMs) / setupOf("pi-agent-core", (s) => s.setupMs)
  console.log(`  import + setup to the first turn ≤ 1.2× pi's: ${fmt(setupRatio, 2)}× — ${verdict(setupRatio <= 1.2)}`)
  if (d?.loggedEvents !== undefined) console.log(`  session events logged at N=${big}: ${fmt(d.loggedEvents)} (every chunk is one)`)
  const failed = reports.filter((r) => r.problems.length > 0)
  if (failed.length > 0) {
    console.log(`\nChecks failed:`)
    for (const r of failed) console.log(`  ${r.impl} N=${r.n}: ${r.problems.join("; ")}`)
  }
  console.log(`\nload average (1, 5, 15 min) after: ${loads()}`)
}

const [mode, impl, n] = process.argv.slice(2)
if (mode === "child") await child(impl as Impl, Number(n))
else parent()
