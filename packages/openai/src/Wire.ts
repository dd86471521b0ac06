/**
 * The OpenAI-compatible chat completions wire: the JSON `POST /chat/completions` takes and
 * streams back, as OpenAI, DeepSeek, Ollama, vLLM, llama.cpp's server, LM Studio and
 * OpenRouter speak it.
 *
 * The request types are plain interfaces: the adapter builds request bodies itself, in a fixed
 * key order, so that one history always serializes to the same bytes (see `RequestBody`).
 * What comes back is untrusted input, so the stream chunk and the error body are Schemas. They
 * accept what the servers send besides OpenAI's own fields: DeepSeek's cache counts, reasoning
 * under `reasoning_content` (DeepSeek, llama.cpp, older vLLM) or `reasoning` (Ollama, vLLM
 * ≥ 0.11, OpenRouter, LM Studio), `null` for absent values, a choice without its `index`, an
 * error object in place of a chunk (vLLM's `{"object": "error", …}`).
 *
 * The decoder does not run the Schema on every event: {@link readChunk} checks the same
 * structure by hand (a Schema decode per event was a third of the decoder's time), and the
 * tests hold the two to the same answers.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

// ---------------------------------------------------------------------------------------------
// requests
// ---------------------------------------------------------------------------------------------

/**
 * A tool call as the assistant message of a request carries it.
 *
 * @since 0.1.0
 * @category request
 */
export interface ToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

/**
 * A message of a request. An assistant message carries its reasoning back under
 * `reasoning_content` or `reasoning`, whichever the server reads (a profile's
 * `reasoningPassback`).
 *
 * @since 0.1.0
 * @category request
 */
export type Message =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string }
  | {
    readonly role: "assistant"
    readonly content: string
    readonly reasoning_content?: string
    readonly reasoning?: string
    readonly tool_calls?: ReadonlyArray<ToolCall>
  }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string }

/**
 * A tool the model may call.
 *
 * @since 0.1.0
 * @category request
 */
export interface Tool {
  readonly type: "function"
  readonly function: {
    readonly name: string
    readonly description: string
    readonly parameters: unknown
    readonly strict?: boolean
  }
}

/**
 * How the model may use tools.
 *
 * @since 0.1.0
 * @category request
 */
export type ToolChoice =
  | "auto"
  | "none"
  | "required"
  | { readonly type: "function"; readonly function: { readonly name: string } }

/**
 * The body of `POST /chat/completions`. Only the fields a profile asks for are present:
 * `thinking` (DeepSeek), `chat_template_kwargs` (vLLM, llama.cpp), `reasoning` (OpenRouter),
 * `reasoning_effort`, `max_tokens` or `max_completion_tokens` (OpenAI), `stream_options`.
 *
 * @since 0.1.0
 * @category request
 */
export interface ChatRequest {
  readonly model: string
  readonly messages: ReadonlyArray<Message>
  readonly tools?: ReadonlyArray<Tool>
  readonly tool_choice?: ToolChoice
  readonly thinking?: { readonly type: "enabled" | "disabled" }
  readonly chat_template_kwargs?: { readonly enable_thinking: boolean }
  readonly reasoning?: { readonly enabled?: boolean; readonly effort?: string }
  readonly reasoning_effort?: string
  readonly temperature?: number
  readonly max_tokens?: number
  readonly max_completion_tokens?: number
  readonly stop?: ReadonlyArray<string>
  readonly stream: true
  readonly stream_options?: { readonly include_usage: true }
}

// ---------------------------------------------------------------------------------------------
// responses
// ---------------------------------------------------------------------------------------------

// Servers write `null` for absent values as often as they leave keys out.
const optional = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * A fragment of a tool call inside a delta. `index` says which call it continues (some servers
 * leave it out, or give every call the same one); the id and name usually arrive once, the
 * arguments in fragments.
 *
 * @since 0.1.0
 * @category response
 */
export const ToolCallDelta = Schema.Struct({
  index: optional(Count),
  id: optional(Schema.String),
  type: optional(Schema.String),
  function: optional(Schema.Struct({
    name: optional(Schema.String),
    arguments: optional(Schema.String)
  }))
})

/**
 * @since 0.1.0
 * @category response
 */
export type ToolCallDelta = typeof ToolCallDelta.Type

/**
 * What one chunk adds to a choice. Reasoning text arrives as `reasoning_content` (DeepSeek,
 * llama.cpp, vLLM before 0.11) or `reasoning` (Ollama, vLLM, OpenRouter, LM Studio); `reasoning`
 * is read only when it is a string, because the name is generic enough for a gateway to put
 * something else there, and an answer must not fail over a field it does not need.
 *
 * @since 0.1.0
 * @category response
 */
export const Delta = Schema.Struct({
  role: optional(Schema.String),
  content: optional(Schema.String),
  reasoning_content: optional(Schema.String),
  reasoning: optional(Schema.Unknown),
  tool_calls: optional(Schema.Array(ToolCallDelta))
})

/**
 * @since 0.1.0
 * @category response
 */
export type Delta = typeof Delta.Type

/**
 * One choice of a chunk. A choice without `index` counts as choice 0 when it comes first (some
 * gateways leave it out: the adapter only ever asks for one choice).
 *
 * @since 0.1.0
 * @category response
 */
export const Choice = Schema.Struct({
  index: optional(Count),
  delta: optional(Delta),
  finish_reason: optional(Schema.String)
})

/**
 * @since 0.1.0
 * @category response
 */
export type Choice = typeof Choice.Type

/**
 * Token counts. DeepSeek reports its prompt cache as `prompt_cache_hit_tokens` +
 * `prompt_cache_miss_tokens` (= `prompt_tokens`); OpenAI and the others report hits as
 * `prompt_tokens_details.cached_tokens`, and OpenRouter cache writes as
 * `prompt_tokens_details.cache_write_tokens`, both included in `prompt_tokens`. Every count may
 * be missing (some proxies and local servers leave out `prompt_tokens` or `completion_tokens`):
 * a missing count is read as 0, never as a broken stream.
 *
 * @since 0.1.0
 * @category response
 */
export const Usage = Schema.Struct({
  prompt_tokens: optional(Count),
  completion_tokens: optional(Count),
  total_tokens: optional(Count),
  prompt_cache_hit_tokens: optional(Count),
  prompt_cache_miss_tokens: optional(Count),
  prompt_tokens_details: optional(Schema.Struct({
    cached_tokens: optional(Count),
    cache_write_tokens: optional(Count)
  })),
  completion_tokens_details: optional(Schema.Struct({ reasoning_tokens: optional(Count) }))
})

/**
 * @since 0.1.0
 * @category response
 */
export type Usage = typeof Usage.Type

/**
 * An error a server reports instead of an answer, in a body or inside the stream.
 *
 * @since 0.1.0
 * @category response
 */
export const ErrorDetail = Schema.Struct({
  message: Schema.String,
  type: optional(Schema.String),
  code: optional(Schema.Union([Schema.String, Schema.Number]))
})

/**
 * One `data:` payload of the stream. The final chunk of a response may carry only `usage`
 * (with `choices: []`); a server that fails mid-stream may send `{ "error": … }`, or (vLLM)
 * an error object itself, `{ "object": "error", "message": … }`. The error is left unchecked:
 * servers send an `ErrorDetail`, a bare string, a message that is not a string, and each of
 * them still means the server failed (`Failure.fromStreamError` reads whatever it is), where
 * refusing it as a malformed chunk would hide what the server said.
 *
 * @since 0.1.0
 * @category response
 */
export const ChatChunk = Schema.Struct({
  id: optional(Schema.String),
  object: optional(Schema.String),
  choices: optional(Schema.Array(Choice)),
  usage: optional(Usage),
  error: optional(Schema.Unknown)
})

/**
 * @since 0.1.0
 * @category response
 */
export type ChatChunk = typeof ChatChunk.Type

/**
 * The JSON body of an error response (`{ "error": { "message": … } }`).
 *
 * @since 0.1.0
 * @category response
 */
export const ErrorBody = Schema.Struct({ error: ErrorDetail })

// ---------------------------------------------------------------------------------------------
// the decoder's check
// ---------------------------------------------------------------------------------------------

// A JSON object (what `Schema.Struct` accepts: not null, not an array).
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const isCount = (value: unknown): boolean =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0

const show = (value: unknown): string => {
  if (value === undefined) return "nothing"
  if (value === null) return "null"
  if (Array.isArray(value)) return "an array"
  if (typeof value === "string") return value.length <= 40 ? JSON.stringify(value) : "a string"
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value).slice(0, 40)}`
}

// Each check returns what is wrong, or undefined; the path to it is filled in on the way back
// up, so that a chunk that is right (nearly all of them) costs no allocation at all. Absent and
// null pass wherever the Schema says `optional` (an own property holding `undefined` cannot
// come out of JSON.parse).
interface Wrong {
  readonly path: Array<string | number>
  readonly expected: string
  readonly value: unknown
}

type Check = (value: unknown) => Wrong | undefined

const wrong = (expected: string, value: unknown): Wrong => ({ path: [], expected, value })

const string: Check = (value) => typeof value === "string" ? undefined : wrong("a string", value)
const count: Check = (value) => isCount(value) ? undefined : wrong("a non-negative integer", value)

const struct = (shape: ReadonlyArray<readonly [string, Check]>): Check => {
  const keys = shape.map(([key]) => key)
  const checks = shape.map(([, check]) => check)
  return (value) => {
    if (!isRecord(value)) return wrong("an object", value)
    for (let i = 0; i < keys.length; i++) {
      const field = value[keys[i]!]
      if (field === undefined || field === null) continue
      const failure = checks[i]!(field)
      if (failure !== undefined) {
        failure.path.unshift(keys[i]!)
        return failure
      }
    }
    return undefined
  }
}

const array = (item: Check): Check => (value) => {
  if (!Array.isArray(value)) return wrong("an array", value)
  for (let i = 0; i < value.length; i++) {
    const failure = item(value[i])
    if (failure !== undefined) {
      failure.path.unshift(i)
      return failure
    }
  }
  return undefined
}

const toolCallDelta = struct([
  ["index", count],
  ["id", string],
  ["type", string],
  ["function", struct([["name", string], ["arguments", string]])]
])

const delta = struct([
  ["role", string],
  ["content", string],
  ["reasoning_content", string],
  ["tool_calls", array(toolCallDelta)]
])

const choice = struct([["index", count], ["delta", delta], ["finish_reason", string]])

const usage = struct([
  ["prompt_tokens", count],
  ["completion_tokens", count],
  ["total_tokens", count],
  ["prompt_cache_hit_tokens", count],
  ["prompt_cache_miss_tokens", count],
  ["prompt_tokens_details", struct([["cached_tokens", count], ["cache_write_tokens", count]])],
  ["completion_tokens_details", struct([["reasoning_tokens", count]])]
])

const chunk = struct([["id", string], ["object", string], ["choices", array(choice)], ["usage", usage]])

const describeWrong = (failure: Wrong): string =>
  `at the chunk${failure.path.map((key) => `[${JSON.stringify(key)}]`).join("")}: expected ${failure.expected}, got ${show(failure.value)}`

/**
 * Checks a parsed `data:` payload against {@link ChatChunk} without the Schema machinery:
 * the payload itself when it is a chunk (unknown keys are left in place, and nothing reads
 * them), else a description of the first thing wrong and where. It accepts exactly what the
 * Schema accepts. It walks only the chunk's own shape (five levels at most) and never descends
 * into values nobody reads, so a payload nested arbitrarily deep costs nothing beyond its parse.
 *
 * @since 0.1.0
 * @category response
 */
export const readChunk = (json: unknown): { readonly chunk: ChatChunk } | { readonly wrong: string } => {
  const failure = chunk(json)
  return failure === undefined ? { chunk: json as ChatChunk } : { wrong: describeWrong(failure) }
}
