/**
 * The turn benchmark (`npm run bench scenarios`): one agent, N turns on one session, each turn
 * two steps — 20 text deltas then one tool call; then 20 text deltas and a stop — with a trivial
 * tool, at N = 100, 1000 and 3000. Reported per N: the mean time per turn overall, over the
 * first 10% and over the last 10% of the turns (growth with history shows as a ratio above 1),
 * and the process's peak RSS.
 *
 * The same scenario runs through dsh (the loop, with every chunk logged as a session event) and
 * through two peers: pi's agent core (`@mariozechner/pi-agent-core`, its `Agent` with a
 * `streamFn` that streams like pi-ai's providers) and the Vercel AI SDK (`ai`, `streamText`
 * with the SDK's own mock model from `ai/test`, two steps per call, the history carried
 * across calls as the steps' response messages). Each run checks that the model really received
 * the growing history (the first request of turn k holds 4(k-1)+1 messages) and that the tool
 * ran once per turn; a run that fails a check is reported as such.
 *
 * Every (implementation, N) runs three times, each in a fresh child process (`--expose-gc`), so
 * timings and peak RSS do not interfere, and the run with the median mean is reported (the
 * machines are shared; single runs are noisy). Each run starts with a short warm-up on a
 * separate agent. The heap in use after a full GC at the end (history alive) is reported too,
 * to tell retained memory from garbage the GC had not collected yet at the RSS peak. Measures only;
 * nothing here asserts. Run directly by Node (type stripping), so the file is erasable
 * TypeScript with no imports of its own package.
 */
import { spawnSync } from "node:child_process"

const SIZES = [100, 1000, 3000] as const
const IMPLS = ["dsh", "pi-agent-core", "ai-sdk"] as const
type Impl = (typeof IMPLS)[number]
const DELTAS = 20
const WARMUP = 50
const REPEATS = 3

interface Report {
  readonly impl: Impl
  readonly n: number
  readonly meanUs: number
  readonly firstUs: number
  readonly lastUs: number
  readonly peakRssMiB: number
  /** The heap in use after a full GC at the end, the history still alive. */
  readonly retainedMiB: number
  readonly loggedEvents?: number
  readonly problems: ReadonlyArray<string>
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

const dsh: Driver = async (turns, check) => {
  const { Agents, AgentHooks } = await import("@dsh/agent")
  const { AgentLoop } = await import("@dsh/loop")
  const { Model, ModelRegistry } = await import("@dsh/model")
  const { SystemPrompt } = await import("@dsh/prompt")
  const { History } = await import("@dsh/llm")
  const { FlushCheckpoint, SessionStore } = await import("@dsh/session")
  const { Tool, ToolRegistry, Tools } = await import("@dsh/tools")
  const { Effect, Layer, Schema, Stream } = await import("effect")
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

  const Live = AgentLoop.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(
      adapter.pipe(Layer.provideMerge(Model.layer)),
      SessionStore.layer,
      FlushCheckpoint.layer,
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
      for (let i = 0; i < WARMUP; i++) {
        yield* agent.send(`warm-up ${i}`)
        yield* agent.awaitIdle
      }
    }))
    check.lengths.length = 0
    check.toolRuns = 0
    turnOfRequest = 0
    gc()
    const agent = yield* agents.create({ model: "bench" })
    const times: Array<number> = []
    for (let i = 0; i < turns; i++) {
      const start = performance.now()
      yield* agent.send(`turn ${i + 1}`)
      yield* agent.awaitIdle
      times.push(performance.now() - start)
    }
    const events = yield* agent.session.events
    const chunks = events.filter((e) => e.type === "assistant/chunk").length
    const expected = turns * (2 * (DELTAS + 3) + 3)
    if (chunks !== expected) check.problems.push(`${chunks} chunks logged, expected ${expected}`)
    loggedEvents = events.length
    retained = heapAfterGc()
    return times
  })

  return Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(Live)))
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
  for (let i = 0; i < WARMUP; i++) await warm.prompt(`warm-up ${i}`)
  check.lengths.length = 0
  check.toolRuns = 0
  turnOfRequest = 0
  gc()

  const agent = make()
  const times: Array<number> = []
  for (let i = 0; i < turns; i++) {
    const start = performance.now()
    await agent.prompt(`turn ${i + 1}`)
    times.push(performance.now() - start)
  }
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
    }
    if (times !== undefined) retained = heapAfterGc()
  }

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

const child = async (impl: Impl, n: number): Promise<void> => {
  const check = new Checker()
  const drive = impl === "dsh" ? dsh : impl === "pi-agent-core" ? pi : aiSdk
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
    firstUs: mean(times.slice(0, tenth)) * 1000,
    lastUs: mean(times.slice(-tenth)) * 1000,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
    retainedMiB: retained,
    ...(impl === "dsh" && loggedEvents !== undefined ? { loggedEvents } : {}),
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

const parent = (): void => {
  const file = new URL(import.meta.url).pathname
  const reports: Array<Report> = []
  console.log(`turns: ${SIZES.join(", ")}; each turn 2 steps (${DELTAS} text deltas + 1 tool call; ${DELTAS} text deltas + stop)`)
  console.log(`each (implementation, N) runs ${REPEATS} times, each in a fresh process; the run with the median mean is kept`)
  const once = (impl: Impl, n: number): Report => {
    const run = spawnSync(process.execPath, ["--expose-gc", file, "child", impl, String(n)], {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024
    })
    const line = run.stdout.split("\n").find((l) => l.startsWith("{"))
    if (run.status === 0 && line !== undefined) return JSON.parse(line) as Report
    const why = `exit ${run.status}: ${(run.stderr || run.stdout).trim().split("\n").slice(-3).join(" | ")}`
    return { impl, n, meanUs: NaN, firstUs: NaN, lastUs: NaN, peakRssMiB: NaN, retainedMiB: NaN, problems: [why] }
  }
  for (const n of SIZES) {
    for (const impl of IMPLS) {
      const runs = Array.from({ length: REPEATS }, () => once(impl, n))
      const failed = runs.find((r) => r.problems.length > 0)
      const sorted = runs.slice().sort((a, b) => a.meanUs - b.meanUs)
      const report = failed ?? sorted[Math.floor(sorted.length / 2)]!
      reports.push(report)
      console.log(
        `  ${impl.padEnd(13)} N=${String(n).padStart(4)}: ${runs.map((r) => fmt(r.meanUs)).join(" / ")} µs/turn, ` +
          `peak RSS ${fmt(report.peakRssMiB)} MiB` +
          (failed === undefined ? ", checks passed" : `, CHECK FAILED: ${failed.problems.join("; ")}`)
      )
    }
  }
  const get = (impl: Impl, n: number) => reports.find((r) => r.impl === impl && r.n === n)

  table(
    "Mean time per turn (µs), whole run",
    ["N", ...IMPLS, "dsh / pi", "dsh / ai-sdk"],
    SIZES.map((n) => {
      const [d, p, a] = IMPLS.map((impl) => get(impl, n)?.meanUs ?? NaN)
      return [String(n), fmt(d!), fmt(p!), fmt(a!), `${fmt(d! / p!, 2)}×`, `${fmt(d! / a!, 2)}×`]
    })
  )
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

  const big = SIZES[SIZES.length - 1]!
  const d = get("dsh", big)
  const verdict = (ok: boolean) => (ok ? "met" : "MISSED")
  console.log(`\nTargets (dsh)`)
  for (const n of SIZES) {
    const [dn, pn] = [get("dsh", n)?.meanUs ?? NaN, get("pi-agent-core", n)?.meanUs ?? NaN]
    console.log(`  mean per turn ≤ pi-agent-core's at N=${n}: ${fmt(dn)} vs ${fmt(pn)} µs (${fmt(dn / pn, 2)}×) — ${verdict(dn <= pn)}`)
  }
  const ratio = (d?.lastUs ?? NaN) / (d?.firstUs ?? NaN)
  console.log(`  last 10% ≤ 1.3× first 10% at N=${big}: ${fmt(ratio, 2)}× — ${verdict(ratio <= 1.3)}`)
  console.log(`  peak RSS < 150 MiB at N=${big}: ${fmt(d?.peakRssMiB ?? NaN)} MiB — ${verdict((d?.peakRssMiB ?? Infinity) < 150)}`)
  if (d?.loggedEvents !== undefined) console.log(`  session events logged at N=${big}: ${fmt(d.loggedEvents)} (every chunk is one)`)
  const failed = reports.filter((r) => r.problems.length > 0)
  if (failed.length > 0) {
    console.log(`\nChecks failed:`)
    for (const r of failed) console.log(`  ${r.impl} N=${r.n}: ${r.problems.join("; ")}`)
  }
}

const [mode, impl, n] = process.argv.slice(2)
if (mode === "child") await child(impl as Impl, Number(n))
else parent()
