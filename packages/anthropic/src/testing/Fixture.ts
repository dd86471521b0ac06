/**
 * Wire fixtures: recorded-style HTTP responses of Anthropic's streaming Messages endpoint,
 * which {@link FakeServer} plays back over a real socket.
 *
 * A fixture is a status, headers and a list of **network writes**, each sent as its own write
 * (its own chunk of the chunked response), so a fixture decides where the network splits the
 * stream — inside a UTF-8 character, inside a JSON value, between `\r` and `\n`. A write is:
 *
 * | write | sends |
 * |---|---|
 * | `"text"` | the text, as UTF-8 |
 * | `{ "data": <JSON> }` | one SSE event as the API writes it: `event: <data.type>\ndata: <compact JSON>\n\n` (no `event:` line when the data has no string `type`) |
 * | `{ "event": "name", "data": <JSON> }` | one SSE event with that name |
 * | `{ "bytes": [226, 130] }` | raw bytes (half a character, say) |
 * | `{ "stall": true }` | nothing more: the connection stays open until the client leaves |
 * | `{ "disconnect": true }` | drops the connection without ending the response |
 * | `{ "repeat": <write>, "everyMillis": 5 }` | the write forever, until the client leaves |
 *
 * A fixture may say what a conforming adapter makes of it (`expect`): the assembled content,
 * finish reason and usage, or the typed error. The fixtures under `fixtures/` (one JSON file
 * each, listed by {@link names}) cover the event shapes of text, thinking with signatures,
 * redacted thinking, tool use with streamed input, server tools, cache usage, every stop
 * reason, the HTTP and in-stream errors, and the network's misbehaviour;
 * `packages/anthropic/test/fixtures.test.ts` runs all of them.
 *
 * @since 0.1.0
 */
import { Content, FinishReason, Usage } from "@dsh/llm"
import * as Schema from "effect/Schema"
import { readdirSync, readFileSync } from "node:fs"

/**
 * What may be written verbatim, or repeated.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Payload = Schema.Union([
  Schema.String,
  Schema.Struct({ data: Schema.Json }),
  Schema.Struct({ event: Schema.String, data: Schema.Json })
])

/**
 * @since 0.1.0
 * @category models
 */
export type Payload = typeof Payload.Type

/**
 * One network write, or a marker.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Write = Schema.Union([
  Schema.String,
  Schema.Struct({ event: Schema.String, data: Schema.Json }),
  Schema.Struct({ data: Schema.Json }),
  Schema.Struct({ bytes: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 255 }))) }),
  Schema.Struct({ stall: Schema.Literal(true) }),
  Schema.Struct({ disconnect: Schema.Literal(true) }),
  Schema.Struct({ repeat: Payload, everyMillis: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))) })
])

/**
 * @since 0.1.0
 * @category models
 */
export type Write = typeof Write.Type

/**
 * What a conforming adapter makes of a fixture (answered alone, without retries): the
 * assembled answer, or the typed failure.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Expect = Schema.Union([
  Schema.Struct({
    content: Schema.Array(Content.ContentBlock),
    finish: FinishReason.FinishReason,
    usage: Schema.optionalKey(Usage.Usage)
  }),
  Schema.Struct({
    error: Schema.Struct({
      tag: Schema.String,
      code: Schema.String,
      /** A part of the error's message. */
      messageIncludes: Schema.optionalKey(Schema.String),
      retryAfterMillis: Schema.optionalKey(Schema.Int),
      status: Schema.optionalKey(Schema.Int)
    })
  })
])

/**
 * @since 0.1.0
 * @category models
 */
export type Expect = typeof Expect.Type

/**
 * @since 0.1.0
 * @category schemas
 */
export const Fixture = Schema.Struct({
  /** What the fixture exercises. */
  description: Schema.String,
  /** The HTTP status (default 200). */
  status: Schema.optionalKey(Schema.Int),
  /** Response headers (default: `content-type: text/event-stream` for a 2xx, `application/json` otherwise). */
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  writes: Schema.Array(Write),
  expect: Schema.optionalKey(Expect)
})

/**
 * @since 0.1.0
 * @category models
 */
export type Fixture = typeof Fixture.Type

const encoder = new TextEncoder()

const typeOf = (json: Schema.Json): string | undefined => {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined
  const type = (json as { readonly [key: string]: Schema.Json })["type"]
  return typeof type === "string" ? type : undefined
}

/**
 * The SSE text of one event: an `event:` line (the given name, else the data's `type`), then
 * the data as compact JSON, then a blank line.
 *
 * @since 0.1.0
 * @category encoding
 */
export const eventText = (data: Schema.Json, name?: string): string => {
  const event = name ?? typeOf(data)
  return `${event === undefined ? "" : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`
}

/**
 * The text of a payload as written.
 *
 * @since 0.1.0
 * @category encoding
 */
export const payloadText = (payload: Payload): string =>
  typeof payload === "string" ? payload : eventText(payload.data, "event" in payload ? payload.event : undefined)

/**
 * The bytes a write sends; `undefined` for the markers (`stall`, `disconnect`, `repeat`).
 *
 * @since 0.1.0
 * @category encoding
 */
export const writeBytes = (write: Write): Uint8Array | undefined => {
  if (typeof write === "string") return encoder.encode(write)
  if ("data" in write) return encoder.encode(payloadText(write))
  if ("bytes" in write) return Uint8Array.from(write.bytes)
  return undefined
}

/**
 * The network writes of a fixture as bytes, markers left out (a `repeat` is written once).
 * What a decoder is fed to replay a fixture without a server.
 *
 * @since 0.1.0
 * @category encoding
 */
export const chunks = (fixture: Fixture): Array<Uint8Array> => {
  const out: Array<Uint8Array> = []
  for (const write of fixture.writes) {
    const bytes = typeof write === "object" && "repeat" in write ? encoder.encode(payloadText(write.repeat)) : writeBytes(write)
    if (bytes !== undefined) out.push(bytes)
  }
  return out
}

/**
 * All the bytes of a fixture's body, concatenated.
 *
 * @since 0.1.0
 * @category encoding
 */
export const body = (fixture: Fixture): Uint8Array => {
  const parts = chunks(fixture)
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const part of parts) {
    all.set(part, at)
    at += part.length
  }
  return all
}

// ---------------------------------------------------------------------------------------------
// builders
// ---------------------------------------------------------------------------------------------

/**
 * An event write (named by its data's `type`).
 *
 * @since 0.1.0
 * @category builders
 */
export const data = (json: Schema.Json): Write => ({ data: json })

/**
 * Anthropic's usage object. `input` excludes the cached input (`cacheRead`, `cacheWrite`).
 *
 * @since 0.1.0
 * @category builders
 */
export const usage = (counts: {
  readonly input?: number
  readonly output?: number
  readonly cacheRead?: number
  readonly cacheWrite?: number
}): Schema.Json => ({
  input_tokens: counts.input ?? 0,
  cache_creation_input_tokens: counts.cacheWrite ?? 0,
  cache_read_input_tokens: counts.cacheRead ?? 0,
  output_tokens: counts.output ?? 0
})

/**
 * `message_start`, with the envelope the API sends (id, model, empty content, usage).
 *
 * @since 0.1.0
 * @category builders
 */
export const messageStart = (
  options: { readonly model?: string; readonly id?: string; readonly usage?: Schema.Json } = {}
): Schema.Json => ({
  type: "message_start",
  message: {
    id: options.id ?? "msg_fixture",
    type: "message",
    role: "assistant",
    model: options.model ?? "claude-sonnet-5-5",
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: options.usage ?? usage({ input: 10, output: 1 })
  }
})

/**
 * `content_block_start`.
 *
 * @since 0.1.0
 * @category builders
 */
export const blockStart = (index: number, block: Schema.Json): Schema.Json => ({
  type: "content_block_start",
  index,
  content_block: block
})

/**
 * `content_block_delta` carrying a delta object.
 *
 * @since 0.1.0
 * @category builders
 */
export const blockDelta = (index: number, delta: Schema.Json): Schema.Json => ({ type: "content_block_delta", index, delta })

/**
 * A `text_delta`.
 *
 * @since 0.1.0
 * @category builders
 */
export const textDelta = (index: number, text: string): Schema.Json => blockDelta(index, { type: "text_delta", text })

/**
 * A `thinking_delta`.
 *
 * @since 0.1.0
 * @category builders
 */
export const thinkingDelta = (index: number, thinking: string): Schema.Json =>
  blockDelta(index, { type: "thinking_delta", thinking })

/**
 * A `signature_delta`.
 *
 * @since 0.1.0
 * @category builders
 */
export const signatureDelta = (index: number, signature: string): Schema.Json =>
  blockDelta(index, { type: "signature_delta", signature })

/**
 * An `input_json_delta`.
 *
 * @since 0.1.0
 * @category builders
 */
export const inputJsonDelta = (index: number, partialJson: string): Schema.Json =>
  blockDelta(index, { type: "input_json_delta", partial_json: partialJson })

/**
 * `content_block_stop`.
 *
 * @since 0.1.0
 * @category builders
 */
export const blockStop = (index: number): Schema.Json => ({ type: "content_block_stop", index })

/**
 * `message_delta` with a stop reason and the final usage.
 *
 * @since 0.1.0
 * @category builders
 */
export const messageDelta = (stopReason: string | null, finalUsage: Schema.Json = { output_tokens: 1 }): Schema.Json => ({
  type: "message_delta",
  delta: { stop_reason: stopReason, stop_sequence: null },
  usage: finalUsage
})

/**
 * `message_stop`.
 *
 * @since 0.1.0
 * @category builders
 */
export const messageStop: Schema.Json = { type: "message_stop" }

/**
 * `ping`.
 *
 * @since 0.1.0
 * @category builders
 */
export const ping: Schema.Json = { type: "ping" }

/**
 * An `error` event as the API sends it mid-stream.
 *
 * @since 0.1.0
 * @category builders
 */
export const errorEvent = (type: string, message: string): Schema.Json => ({ type: "error", error: { type, message } })

/**
 * An error response: a status and Anthropic's JSON error body
 * (`{"type": "error", "error": {"type", "message"}, "request_id"}`).
 *
 * @since 0.1.0
 * @category builders
 */
export const errorResponse = (
  status: number,
  type: string,
  message: string,
  options: { readonly headers?: Record<string, string>; readonly description?: string } = {}
): Fixture => ({
  description: options.description ?? `HTTP ${status} ${type}`,
  status,
  headers: { "content-type": "application/json", "request-id": "req_fixture", ...options.headers },
  writes: [JSON.stringify({ type: "error", error: { type, message }, request_id: "req_fixture" })]
})

/**
 * A streamed text answer whose text arrives in the given pieces.
 *
 * @since 0.1.0
 * @category builders
 */
export const text = (pieces: ReadonlyArray<string>, options: { readonly description?: string } = {}): Fixture => ({
  description: options.description ?? `the text ${JSON.stringify(pieces.join(""))}`,
  writes: [
    data(messageStart({ usage: usage({ input: 10, output: 1 }) })),
    data(blockStart(0, { type: "text", text: "" })),
    ...pieces.map((piece) => data(textDelta(0, piece))),
    data(blockStop(0)),
    data(messageDelta("end_turn", { output_tokens: pieces.length })),
    data(messageStop)
  ],
  expect: {
    content: [Content.text(pieces.join(""))],
    finish: { kind: "stop", raw: "end_turn" },
    usage: Usage.make({ inputTokens: 10, outputTokens: pieces.length })
  }
})

// ---------------------------------------------------------------------------------------------
// the fixture files
// ---------------------------------------------------------------------------------------------

const directory = new URL("./fixtures/", import.meta.url)

const decodeFixture = Schema.decodeUnknownSync(Fixture)

/**
 * The names of the fixture files (without `.json`), sorted.
 *
 * @since 0.1.0
 * @category files
 */
export const names = (): ReadonlyArray<string> =>
  readdirSync(directory).filter((file) => file.endsWith(".json")).map((file) => file.slice(0, -5)).sort()

/**
 * Reads and validates a fixture file. Throws (with the file's name) when it is missing or
 * malformed: fixtures are test data, and a broken one should stop the test that uses it.
 *
 * @since 0.1.0
 * @category files
 */
export const load = (name: string): Fixture => {
  const file = new URL(`${name}.json`, directory)
  let text: string
  try {
    text = readFileSync(file, "utf8")
  } catch (error) {
    throw new Error(`no fixture "${name}" (known: ${names().join(", ")})`, { cause: error })
  }
  try {
    return decodeFixture(JSON.parse(text))
  } catch (error) {
    throw new Error(`fixture "${name}" is malformed: ${(error as Error).message}`, { cause: error })
  }
}
