// `npm run bench deepseek`: how fast the adapter turns SSE bytes into stream chunks.
//
// The input is a synthetic response of realistic shape (`Synthetic.make()`: reasoning, a text
// answer and six tool calls with sizeable arguments, a few characters per delta, each chunk in
// DeepSeek's full JSON envelope, cut into 16 KiB network reads at arbitrary byte offsets). The
// same bytes go through:
//
//   - baseline: a streaming TextDecoder, splitting lines at "\n" and JSON.parse of every
//     `data:` line — the least any SSE client does, with no validation and no output;
//   - Decoder.feed: the adapter's decoding stage called directly (UTF-8, the effect/encoding
//     SSE parser, JSON.parse, Schema validation of every chunk, translation into dsh chunks
//     with block assembly), no Effect runtime;
//   - Decoder.decode: the same stage as the adapter runs it, a Stream over the reads;
//   - per-event stages: decodeText → Sse.decode → takeWhile → mapEffect(Schema) as separate
//     stream stages, the shape the adapter does not use (it stops at wire chunks);
//   - over HTTP on loopback: the fake server sending the reads, consumed by plain fetch +
//     the baseline, and by the whole adapter (Model.stream through the registry, undici, the
//     idle timeout, decoding).
//
// Each variant runs for a fixed time per round; rounds interleave the variants; the best round
// is reported. It measures; it does not assert.
import { Decoder, DeepSeek, Wire } from "@dsh/deepseek"
import { FakeServer, Fixture, Synthetic } from "@dsh/deepseek/testing"
import { Assembler, Message, ModelRequest, type StreamChunk } from "@dsh/llm"
import { Model } from "@dsh/model"
import { Effect, Layer, ManagedRuntime, Redacted, Schema, Stream } from "effect"
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
      if (line.startsWith("data: ") && line !== "data: [DONE]") {
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

// The pipeline of per-event stream stages the adapter does not use (effect4-notes §7): what
// one synchronous stage per network read saves. It stops at decoded wire chunks (no translation).
const decodeChunk = Schema.decodeUnknownEffect(Schema.fromJsonString(Wire.ChatChunk))
const stages = (): Promise<number> =>
  Effect.runPromise(Stream.runCount(Stream.fromIterable(reads).pipe(
    Stream.decodeText(),
    Stream.pipeThroughChannel(Sse.decode()),
    Stream.takeWhile((event) => event.data !== "[DONE]"),
    Stream.mapEffect((event) => decodeChunk(event.data))
  )))

// Sanity, not an assertion of speed: the decoder rebuilds exactly the synthetic answer.
{
  const decoder = Decoder.make()
  const out: Array<StreamChunk.StreamChunk> = []
  for (const read of reads) decoder.feed(read, out)
  const assembled = Assembler.assemble(out)
  if (JSON.stringify(assembled.message.content) !== JSON.stringify("content" in fixture.expect! && fixture.expect.content)) {
    throw new Error("the decoder did not rebuild the synthetic answer")
  }
}

const server = await FakeServer.start(fixture)
const runtime = ManagedRuntime.make(
  DeepSeek.layer({ apiKey: Redacted.make("sk-bench"), baseUrl: server.url, retry: { times: 0 } }).pipe(
    Layer.provideMerge(Model.layer)
  )
)
const request = ModelRequest.make("deepseek-v4-flash", [Message.user("go")])

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
  const response = await fetch(`${server.url}/chat/completions`, { method: "POST", body: JSON.stringify(request) })
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
  { name: "per-event stages: Sse.decode + mapEffect", run: stages, best: Infinity, count: 0 },
  { name: "HTTP loopback: fetch + baseline", run: httpBaseline, best: Infinity, count: 0 },
  { name: "HTTP loopback: whole adapter", run: httpAdapter, best: Infinity, count: 0 }
]

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

const events = variants[0]!.best === Infinity ? 0 : variants[0]!.count
console.log(
  `input: ${mb.toFixed(2)} MB of SSE, ${events} events in ${reads.length} reads of 16 KiB; ` +
    `${fixture.description}; output: ${variants[1]!.count} dsh chunks`
)
console.log(`best of ${rounds} rounds of ${roundMillis} ms each\n`)
const base = variants[0]!.best
const httpBase = variants[4]!.best
const rows = variants.map((v, i) => [
  v.name,
  (mb / (v.best / 1000)).toFixed(1),
  v.best.toFixed(2),
  i < 4 ? (v.best / base).toFixed(2) + "×" : (v.best / httpBase).toFixed(2) + "× (of HTTP baseline)"
])
const header = ["variant", "MB/s", "ms/run", "time vs baseline"]
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
console.log(line(header))
console.log(widths.map((w) => "-".repeat(w)).join("  "))
for (const row of rows) console.log(line(row))
