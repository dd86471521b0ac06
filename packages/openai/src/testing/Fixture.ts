/**
 * Wire fixtures: recorded-style HTTP responses of an OpenAI-compatible chat completions
 * endpoint, which {@link FakeServer} plays back over a real socket.
 *
 * A fixture is a status, headers and a list of **network writes**, each sent as its own
 * write (its own chunk of the chunked response), so a fixture decides where the network
 * splits the stream — inside a UTF-8 character, inside a JSON value, between `\r` and `\n`.
 * A write is:
 *
 * | write | sends |
 * |---|---|
 * | `"text"` | the text, as UTF-8 |
 * | `{ "data": <JSON> }` | one SSE event: `data: <compact JSON>\n\n` |
 * | `{ "bytes": [226, 130] }` | raw bytes (half a character, say) |
 * | `{ "stall": true }` | nothing more: the connection stays open until the client leaves |
 * | `{ "disconnect": true }` | drops the connection without ending the response |
 * | `{ "repeat": <write>, "everyMillis": 5 }` | the write forever, until the client leaves |
 *
 * A fixture may say what a conforming adapter makes of it (`expect`): the assembled content,
 * finish reason and usage, or the typed error — and, where a profile with a lenient end of
 * stream makes something else of it, that too (`expectLenient`; {@link expectFor} picks). The
 * fixtures under `fixtures/` (one JSON file each, listed by {@link names}) cover the shapes
 * every OpenAI-compatible adapter has to handle, in the formats the servers really use
 * (OpenAI, DeepSeek, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter); the tests of
 * `@dsh/openai` run all of them through every shipped profile, and another adapter can do the
 * same. {@link loader} reads another directory of them (an adapter's own fixtures, with these).
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
export const Payload = Schema.Union([Schema.String, Schema.Struct({ data: Schema.Json })])

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
      retryAfterMillis: Schema.optionalKey(Schema.Int)
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
  expect: Schema.optionalKey(Expect),
  /** What an adapter whose end of stream is lenient makes of it, where that differs from `expect`. */
  expectLenient: Schema.optionalKey(Expect)
})

/**
 * @since 0.1.0
 * @category models
 */
export type Fixture = typeof Fixture.Type

/**
 * What a conforming adapter with these quirks makes of a fixture: `expectLenient` where the
 * end of stream is lenient and the fixture says, else `expect`.
 *
 * @since 0.1.0
 * @category models
 */
export const expectFor = (
  fixture: Fixture,
  quirks: { readonly streamEnd?: "strict" | "lenient" }
): Expect | undefined =>
  quirks.streamEnd === "lenient" && fixture.expectLenient !== undefined ? fixture.expectLenient : fixture.expect

const encoder = new TextEncoder()

/**
 * The text of a payload as written.
 *
 * @since 0.1.0
 * @category encoding
 */
export const payloadText = (payload: Payload): string =>
  typeof payload === "string" ? payload : `data: ${JSON.stringify(payload.data)}\n\n`

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
 * What a decoding pipeline is fed to replay a fixture without a server.
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
 * A `data:` write.
 *
 * @since 0.1.0
 * @category builders
 */
export const data = (json: Schema.Json): Write => ({ data: json })

/**
 * The `data: [DONE]` that ends a stream.
 *
 * @since 0.1.0
 * @category builders
 */
export const done: Write = "data: [DONE]\n\n"

/**
 * A chat completion chunk in DeepSeek's envelope (which is OpenAI's): one choice with `delta`
 * and `finish_reason`, and `usage` when given (the fields around it included; the model is
 * `deepseek-v4-flash` unless given — servers' `model` is never read).
 *
 * @since 0.1.0
 * @category builders
 */
export const chunk = (
  delta: { readonly [key: string]: Schema.Json },
  options: { readonly finish?: string; readonly usage?: Schema.Json; readonly model?: string; readonly id?: string } = {}
): Schema.Json => {
  const value: { [key: string]: Schema.Json } = {
    id: options.id ?? "chatcmpl-fixture",
    object: "chat.completion.chunk",
    created: 1767225600,
    model: options.model ?? "deepseek-v4-flash",
    system_fingerprint: "fp_fixture",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: options.finish ?? null }]
  }
  if (options.usage !== undefined) value["usage"] = options.usage
  return value
}

/**
 * The usage-only chunk that ends a stream with `stream_options.include_usage`.
 *
 * @since 0.1.0
 * @category builders
 */
export const usageChunk = (usage: Schema.Json, options: { readonly model?: string; readonly id?: string } = {}): Schema.Json => ({
  id: options.id ?? "chatcmpl-fixture",
  object: "chat.completion.chunk",
  created: 1767225600,
  model: options.model ?? "deepseek-v4-flash",
  system_fingerprint: "fp_fixture",
  choices: [],
  usage
})

/**
 * OpenAI's usage object: `prompt_tokens` includes the cached tokens, reported in
 * `prompt_tokens_details` (with OpenRouter's `cache_write_tokens` when given).
 *
 * @since 0.1.0
 * @category builders
 */
export const openAiUsage = (counts: {
  readonly prompt: number
  readonly cached?: number
  readonly cacheWrite?: number
  readonly completion: number
  readonly reasoning?: number
}): Schema.Json => {
  const details: { [key: string]: Schema.Json } = { cached_tokens: counts.cached ?? 0 }
  if (counts.cacheWrite !== undefined) details["cache_write_tokens"] = counts.cacheWrite
  const value: { [key: string]: Schema.Json } = {
    prompt_tokens: counts.prompt,
    completion_tokens: counts.completion,
    total_tokens: counts.prompt + counts.completion,
    prompt_tokens_details: details
  }
  if (counts.reasoning !== undefined) value["completion_tokens_details"] = { reasoning_tokens: counts.reasoning }
  return value
}

/**
 * DeepSeek's usage object: `prompt_tokens` = cache hits + misses.
 *
 * @since 0.1.0
 * @category builders
 */
export const usage = (counts: {
  readonly hit: number
  readonly miss: number
  readonly completion: number
  readonly reasoning?: number
}): Schema.Json => {
  const value: { [key: string]: Schema.Json } = {
    prompt_tokens: counts.hit + counts.miss,
    completion_tokens: counts.completion,
    total_tokens: counts.hit + counts.miss + counts.completion,
    prompt_tokens_details: { cached_tokens: counts.hit },
    prompt_cache_hit_tokens: counts.hit,
    prompt_cache_miss_tokens: counts.miss
  }
  if (counts.reasoning !== undefined) value["completion_tokens_details"] = { reasoning_tokens: counts.reasoning }
  return value
}

/**
 * An error response: a status and a JSON error body (`{"error": {"message", "type", "code"}}`).
 *
 * @since 0.1.0
 * @category builders
 */
export const errorResponse = (
  status: number,
  message: string,
  options: { readonly headers?: Record<string, string>; readonly type?: string; readonly description?: string } = {}
): Fixture => ({
  description: options.description ?? `HTTP ${status}`,
  status,
  headers: { "content-type": "application/json", ...options.headers },
  writes: [JSON.stringify({ error: { message, type: options.type ?? "invalid_request_error", param: null, code: null } })]
})

/**
 * A streamed answer whose text arrives in the given pieces, with usage and `[DONE]`.
 *
 * @since 0.1.0
 * @category builders
 */
export const text = (pieces: ReadonlyArray<string>, options: { readonly description?: string } = {}): Fixture => ({
  description: options.description ?? `the text ${JSON.stringify(pieces.join(""))}`,
  writes: [
    data(chunk({ role: "assistant", content: "" })),
    ...pieces.map((piece) => data(chunk({ content: piece }))),
    data(chunk({ content: "" }, { finish: "stop" })),
    data(usageChunk(usage({ hit: 0, miss: 10, completion: pieces.length }))),
    done
  ],
  expect: {
    content: [Content.text(pieces.join(""))],
    finish: { kind: "stop", raw: "stop" },
    usage: Usage.make({ inputTokens: 10, outputTokens: pieces.length })
  }
})

// ---------------------------------------------------------------------------------------------
// the fixture files
// ---------------------------------------------------------------------------------------------

const decodeFixture = Schema.decodeUnknownSync(Fixture)

/**
 * Reads fixture files from directories.
 *
 * @since 0.1.0
 * @category models
 */
export interface Loader {
  /** The names of the fixture files (without `.json`), sorted, each once. */
  readonly names: () => ReadonlyArray<string>
  /**
   * Reads and validates a fixture file (from the first directory that has it). Throws (with the
   * file's name) when it is missing or malformed: fixtures are test data, and a broken one
   * should stop the test that uses it.
   */
  readonly load: (name: string) => Fixture
}

/**
 * A loader over directories of fixture files (`new URL("./fixtures/", import.meta.url)`); a
 * name in an earlier directory hides the same name in a later one.
 *
 * @since 0.1.0
 * @category files
 */
export const loader = (...directories: ReadonlyArray<URL>): Loader => {
  const inDirectory = (directory: URL) =>
    readdirSync(directory).filter((file) => file.endsWith(".json")).map((file) => file.slice(0, -5))
  const names = () => [...new Set(directories.flatMap(inDirectory))].sort()
  const load = (name: string): Fixture => {
    let text: string | undefined
    let failure: unknown
    for (const directory of directories) {
      try {
        text = readFileSync(new URL(`${name}.json`, directory), "utf8")
        break
      } catch (error) {
        failure = error
      }
    }
    if (text === undefined) throw new Error(`no fixture "${name}" (known: ${names().join(", ")})`, { cause: failure })
    try {
      return decodeFixture(JSON.parse(text))
    } catch (error) {
      throw new Error(`fixture "${name}" is malformed: ${(error as Error).message}`, { cause: error })
    }
  }
  return { names, load }
}

/**
 * The directory of this package's fixture files.
 *
 * @since 0.1.0
 * @category files
 */
export const directory: URL = new URL("./fixtures/", import.meta.url)

const files = loader(directory)

/**
 * The names of the fixture files (without `.json`), sorted.
 *
 * @since 0.1.0
 * @category files
 */
export const names = (): ReadonlyArray<string> => files.names()

/**
 * Reads and validates a fixture file. Throws (with the file's name) when it is missing or
 * malformed: fixtures are test data, and a broken one should stop the test that uses it.
 *
 * @since 0.1.0
 * @category files
 */
export const load = (name: string): Fixture => files.load(name)
