/**
 * The compaction benchmark (`npm run bench compaction`): one agent, 10,000 turns on one session
 * with compaction on (an 8,000-token window compacted past 80%, two turns kept verbatim,
 * results over 500 characters pruned), each turn two steps — a tool call whose result is about
 * 800 characters, then a 200-character answer — against a scripted adapter that also answers
 * the summarizing calls. The target (#18): every request within the window, and the
 * per-step cost flat however long the session grows.
 *
 * Reported per tenth of the turns: the mean time per turn, the median time to read the
 * derived history (`agent.session.messages`, what a step reads), the largest request sent (its
 * messages and settings, in the loop's estimate: characters over four) and the history's
 * length; then the compactions logged, the events logged, requests over the window (must be
 * 0) and the process's peak RSS. Measures only; nothing here asserts. Run directly by Node
 * (type stripping), so the file is erasable TypeScript.
 */
const TURNS = 10_000
const WINDOW = 8_000
const RESULT_CHARS = 800
const ANSWER_CHARS = 200

const main = async (): Promise<void> => {
  const { Agents, AgentHooks } = await import("@dsh/agent")
  const { AgentLoop } = await import("@dsh/loop")
  const { Model, ModelRegistry } = await import("@dsh/model")
  const { SystemPrompt } = await import("@dsh/prompt")
  const { History } = await import("@dsh/llm")
  const { Compaction, FlushCheckpoint, SessionEvent, SessionStore } = await import("@dsh/session")
  const { Tool, ToolRegistry, Tools } = await import("@dsh/tools")
  const { Effect, Layer, Schema, Stream } = await import("effect")
  type Chunk = import("@dsh/llm").StreamChunk.StreamChunk
  type Request = import("@dsh/llm").ModelRequest.ModelRequest

  const requestSizes: Array<number> = []
  let summaries = 0

  const textReply = (text: string, pieces: number): Array<Chunk> => {
    const size = Math.ceil(text.length / pieces)
    const chunks: Array<Chunk> = [{ type: "block-start", index: 0, blockType: "text" }]
    for (let at = 0; at < text.length; at += size) chunks.push({ type: "text-delta", index: 0, delta: text.slice(at, at + size) })
    chunks.push({ type: "block-end", index: 0, block: { type: "text", text } })
    chunks.push({ type: "finish", reason: { kind: "stop" } })
    return chunks
  }

  const toolReply = (turn: number): Array<Chunk> => {
    const id = `call_${turn}` as never
    const args = `{"n":${turn}}`
    return [
      { type: "block-start", index: 0, blockType: "tool-call" },
      { type: "tool-call-delta", index: 0, id, name: "fetch", argumentsDelta: args },
      { type: "block-end", index: 0, block: { type: "tool-call", id, name: "fetch", arguments: args } },
      { type: "finish", reason: { kind: "tool-calls" } }
    ]
  }

  const sizeOf = (request: Request) =>
    Compaction.tokensOf(Compaction.charsOfHistory(request.messages) + JSON.stringify(SessionEvent.settingsOf(request)).length)

  let turn = 0
  const adapter = Layer.effectDiscard(Effect.gen(function*() {
    const registry = yield* ModelRegistry
    yield* registry.register({
      name: "bench",
      models: ["bench"],
      stream: (request) =>
        Stream.suspend(() => {
          if (request.system === Compaction.defaultPrompt) {
            summaries++
            return Stream.fromIterable(textReply(`Summary ${summaries}: the user asked for records and got them. ${"s".repeat(300)}`, 10))
          }
          requestSizes.push(sizeOf(request))
          const last = History.last(request.messages)
          if (last?.content[0]?.type !== "tool-result") return Stream.fromIterable(toolReply(turn))
          return Stream.fromIterable(textReply(`Answer ${turn}: ${"a".repeat(ANSWER_CHARS)}`, 20))
        })
    })
  }))

  const fetch = Tool.make("fetch", {
    description: "Fetches a record",
    parameters: Schema.Struct({ n: Schema.Int }),
    execute: ({ n }) => Effect.succeed(`record ${n}: ${"r".repeat(RESULT_CHARS)}`)
  })

  const Live = AgentLoop.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(
      adapter.pipe(Layer.provideMerge(Model.layer)),
      SessionStore.layer,
      FlushCheckpoint.layer,
      Tools.layer(fetch).pipe(Layer.provideMerge(ToolRegistry.layer)),
      SystemPrompt.layer,
      AgentHooks.layer
    )),
    Layer.orDie
  )

  interface Tenth {
    turnUs: number
    historyUs: number
    maxRequest: number
    historyLength: number
  }

  const program = Effect.gen(function*() {
    const agents = yield* Agents
    const agent = yield* agents.create({
      model: "bench",
      compaction: { contextWindow: WINDOW, threshold: 0.8, keepTurns: 2, prune: { minChars: 500 } }
    })
    const tenth = TURNS / 10
    const tenths: Array<Tenth> = []
    let turnTimes: Array<number> = []
    let historyTimes: Array<number> = []
    let historyLength = 0
    for (let i = 0; i < TURNS; i++) {
      turn = i + 1
      const start = performance.now()
      yield* agent.send(`Please fetch record ${turn} and tell me what it says. ${"q".repeat(150)}`)
      yield* agent.awaitIdle
      turnTimes.push(performance.now() - start)
      const read = performance.now()
      const history = yield* agent.session.messages
      historyTimes.push(performance.now() - read)
      historyLength = history.length
      if ((i + 1) % tenth === 0) {
        const sizes = requestSizes.slice(2 * (i + 1 - tenth), 2 * (i + 1))
        tenths.push({
          turnUs: mean(turnTimes) * 1000,
          historyUs: median(historyTimes) * 1000,
          maxRequest: Math.max(...sizes),
          historyLength
        })
        turnTimes = []
        historyTimes = []
      }
    }
    const events = yield* agent.session.events
    const applied = events.filter((e) => e.type === "compaction/applied")
    return {
      tenths,
      events: events.length,
      prunes: applied.filter((e) => e.type === "compaction/applied" && e.data.kind === "prune").length,
      summaries: applied.filter((e) => e.type === "compaction/applied" && e.data.kind === "summary").length,
      failed: events.filter((e) => e.type === "compaction/failed").length,
      requests: requestSizes.length,
      over: requestSizes.filter((size) => size > WINDOW).length,
      largest: Math.max(...requestSizes)
    }
  })

  const result = await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(Live)))
  console.log(`${TURNS} turns, window ${WINDOW} tokens (compacted past 80%), 2 turns kept, results over 500 characters pruned`)
  console.log("\ntenth  µs/turn  µs to read history (median)  largest request (tokens)  history (messages)")
  result.tenths.forEach((t, i) =>
    console.log(
      `${String(i + 1).padStart(5)}  ${t.turnUs.toFixed(0).padStart(7)}  ${t.historyUs.toFixed(2).padStart(28)}  ${String(t.maxRequest).padStart(25)}  ${String(t.historyLength).padStart(18)}`
    )
  )
  const first = result.tenths[0]!
  const last = result.tenths.at(-1)!
  console.log(`\nlast tenth / first tenth: ${(last.turnUs / first.turnUs).toFixed(2)}× per turn, ${(last.historyUs / first.historyUs).toFixed(2)}× per history read`)
  console.log(`requests ${result.requests}, largest ${result.largest} tokens, over the window: ${result.over}`)
  console.log(`compactions: ${result.summaries} summaries, ${result.prunes} prunes, ${result.failed} failed; ${result.events} events logged`)
  console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`)
}

const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)
const median = (xs: ReadonlyArray<number>) => {
  const sorted = xs.slice().sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? NaN
}

await main()
