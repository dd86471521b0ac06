// `npm run bench anthropic`: how fast the adapter turns the Messages API's SSE bytes into stream
// chunks.
//
// The input is a synthetic response of realistic shape (`Synthetic.make()`: a signed thinking
// block, a text answer and six tool calls with sizeable input, a few characters per delta,
// every event with its `event:` line as the API writes it, pings now and then, cut into 16 KiB
// network reads at arbitrary byte offsets). The same bytes go through:
//
//   - baseline: a streaming TextDecoder, splitting lines at "\n" and JSON.parse of every
//     `data:` line — the least any SSE client does, with no validation and no output;
//   - Decoder.feed: the adapter's decoding stage called directly (UTF-8, its SSE parser,
//     JSON.parse, the checks of every event, translation into dsh chunks with block assembly),
//     no Effect runtime;
//   - Decoder.decode: the same stage as the adapter runs it, a Stream over the reads;
//   - the same stage on effect/encoding's SSE parser (`Sse.makeParser`) instead of the
//     adapter's own: what the indexOf-based line splitting buys;
//   - per-event stages: decodeText → Sse.decode → takeWhile → map(JSON.parse) as separate
//     stream stages, the shape the adapter does not use (and it stops at parsed JSON);
//   - over HTTP on loopback: the fake server sending the reads, consumed by plain fetch +
//     the baseline, and by the whole adapter (Model.stream through the registry, undici, the
//     idle timeout, decoding).
//
// Each variant runs for a fixed time per round; rounds interleave the variants; the best round
// is reported. It measures; it does not assert.
import { Anthropic, Decoder, Translate } from "@dsh/anthropic"
import { FakeServer, Fixture, Synthetic } from "@dsh/anthropic/testing"
import { Assembler, Message, ModelRequest, type StreamChunk } from "@dsh/llm"
import { Model } from "@dsh/model"
import { Effect, Layer, ManagedRuntime, Redacted, Stream } from "effect"
import { Sse } from "effect/encoding"

const fixture = Synthetic.make()
const reads = Fixture.chunks(fixture)
const bytes = reads.reduce((n, r) => n + r.length, 0)
const mb = bytes / 1e6

// ---------------------------------------------------------------------------------------------
// the variants, each returning a count so nothing is optimized away
// ---------------------------------------------------------------------------------------------

const baselineOver = (input: Iterable<Uint8Array>): number => {
  const text = new TextDecoder()
  let rest = ""
  let events = 0
  for (const read of input) {
    const chunk = rest + text.decode(read, { stream: true })
    let start = 0
    let end = chunk.indexOf("\n", start)
    while (end >= 0) {
      const line = chunk.slice(start, end)
      if (line.startsWith("data: ")) {
        JSON.parse(line.slice(6))
        events++
      }
      start = end + 1
      end = chunk.indexOf("\n", start)
    }
    rest = chunk.slice(start)
  }
  return events
}

const baseline = (): number => baselineOver(reads)

const feed = (): number => {
  const decoder = Decoder.make()
  const out: Array<StreamChunk.StreamChunk> = []
  for (const read of reads) {
    const failure = decoder.feed(read, out)
    if (failure !== undefined) throw failure
  }
  return out.length
}

const stream = (): Promise<number> => Effect.runPromise(Stream.runCount(Decoder.decode(Stream.fromIterable(reads))))

// The decoding stage with effect/encoding's parser in place of the adapter's own.
const effectParser = (): number => {
  const translator = Translate.make()
  const text = new TextDecoder("utf-8", { fatal: true })
  const out: Array<StreamChunk.StreamChunk> = []
  const parser = Sse.makeParser((event) => {
    if (event._tag !== "Event" || translator.finished()) return
    const failure = translator.event(JSON.parse(event.data), out)
    if (failure !== undefined) throw failure
  })
  for (const read of reads) parser.feed(text.decode(read, { stream: true }))
  return out.length
}

// The pipeline of per-event stream stages the adapter does not use: what one synchronous stage
// per network read saves. It stops at parsed JSON (no checks, no translation).
const stages = (): Promise<number> =>
  Effect.runPromise(Stream.runCount(Stream.fromIterable(reads).pipe(
    Stream.decodeText(),
    Stream.pipeThroughChannel(Sse.decode()),
    Stream.takeWhile((event) => event.event !== "message_stop"),
    Stream.map((event) => JSON.parse(event.data) as unknown)
  )))

// Sanity, not an assertion of speed: each decoding variant rebuilds exactly the synthetic answer.
{
  const expected = JSON.stringify("content" in fixture.expect! && fixture.expect.content)
  const decoder = Decoder.make()
  const out: Array<StreamChunk.StreamChunk> = []
  for (const read of reads) decoder.feed(read, out)
  if (JSON.stringify(Assembler.assemble(out).message.content) !== expected) {
    throw new Error("the decoder did not rebuild the synthetic answer")
  }
  if (effectParser() !== out.length) throw new Error("the decoder on effect/encoding's parser gave other chunks")
}

const server = await FakeServer.start(fixture)
const runtime = ManagedRuntime.make(
  Anthropic.layer({ apiKey: Redacted.make("sk-ant-bench"), baseUrl: server.url, retry: { times: 0 } }).pipe(
    Layer.provideMerge(Model.layer)
  )
)
const request = ModelRequest.make("claude-sonnet-5-5", [Message.user("go")])

const httpAdapter = (): Promise<number> =>
  runtime.runPromise(Model.use((model) => Stream.runCount(model.stream(request))))

async function* bodyOf(response: Response): AsyncGenerator<Uint8Array> {
  const reader = response.body!.getReader()
  while (true) {
    const { done, value } = await reader.read()
    if (done) return
    yield value
  }
}

const httpBaseline = async (): Promise<number> => {
  const response = await fetch(`${server.url}/v1/messages`, { method: "POST", body: JSON.stringify(request) })
  const collected: Array<Uint8Array> = []
  for await (const read of bodyOf(response)) collected.push(read)
  return baselineOver(collected)
}

// ---------------------------------------------------------------------------------------------
// timing
// ---------------------------------------------------------------------------------------------

interface Variant {
  readonly name: string
  readonly run: () => number | Promise<number>
  best: number
  count: number
}

const variants: Array<Variant> = [
  { name: "baseline: split lines + JSON.parse", run: baseline, best: Infinity, count: 0 },
  { name: "adapter: Decoder.feed (no Effect)", run: feed, best: Infinity, count: 0 },
  { name: "adapter: Decoder.decode (Stream)", run: stream, best: Infinity, count: 0 },
  { name: "the same on effect/encoding's Sse.makeParser", run: effectParser, best: Infinity, count: 0 },
  { name: "per-event stages: Sse.decode + JSON.parse", run: stages, best: Infinity, count: 0 },
  { name: "HTTP loopback: fetch + baseline", run: httpBaseline, best: Infinity, count: 0 },
  { name: "HTTP loopback: whole adapter", run: httpAdapter, best: Infinity, count: 0 }
]
const offline = 5

const roundMillis = 1500
const rounds = 4
const gc = (globalThis as { gc?: () => void }).gc

for (const variant of variants) variant.count = await variant.run() // warm-up
for (let round = 0; round < rounds; round++) {
  for (const variant of variants) {
    gc?.()
    let runs = 0
    const start = performance.now()
    let elapsed = 0
    while (elapsed < roundMillis) {
      await variant.run()
      runs++
      elapsed = performance.now() - start
    }
    variant.best = Math.min(variant.best, elapsed / runs)
  }
}

await runtime.dispose()
await server.close()

console.log(
  `input: ${mb.toFixed(2)} MB of SSE, ${variants[0]!.count} events in ${reads.length} reads of 16 KiB; ` +
    `${fixture.description}; output: ${variants[1]!.count} dsh chunks`
)
console.log(`best of ${rounds} rounds of ${roundMillis} ms each\n`)
const base = variants[0]!.best
const httpBase = variants[offline]!.best
const rows = variants.map((v, i) => [
  v.name,
  (mb / (v.best / 1000)).toFixed(1),
  v.best.toFixed(2),
  i < offline ? `${(base / v.best).toFixed(2)}×` : `${(httpBase / v.best).toFixed(2)}× (of HTTP baseline)`
])
const header = ["variant", "MB/s", "ms/run", "speed vs baseline"]
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
console.log(line(header))
console.log(widths.map((w) => "-".repeat(w)).join("  "))
for (const row of rows) console.log(line(row))
