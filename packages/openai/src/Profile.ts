/**
 * A server profile: everything that tells one OpenAI-compatible server from another, as plain
 * data with a Schema — its name, base URL, where its key comes from, extra headers, the models
 * it serves with their context windows and prices, and which quirks of the wire apply. A
 * profile is how a new server is added without code: write one (or decode one from JSON) and
 * give it to `OpenAiCompat.layer({ profile })`. The shipped ones are in `Profiles`.
 *
 * Every quirk has a default, chosen for a server nobody has described (see {@link defaults}):
 * reasoning read from `reasoning_content` (or `reasoning`), nothing passed back, cache hits
 * from `prompt_tokens_details.cached_tokens`, `stream_options.include_usage` sent, no thinking
 * switch, `reasoning_effort` sent as it is, `max_tokens`, and a lenient end of stream.
 *
 * @example
 * ```ts
 * import { Profile } from "@dsh/openai"
 * import { Schema } from "effect"
 *
 * // e.g. read from a config file
 * const profile = Schema.decodeUnknownSync(Profile.Profile)(JSON.parse(`{
 *   "name": "together", "displayName": "Together AI",
 *   "baseUrl": "https://api.together.xyz/v1", "apiKeyEnv": "TOGETHER_API_KEY",
 *   "quirks": { "reasoningField": "reasoning" }
 * }`))
 * ```
 *
 * @since 0.1.0
 */
import { ModelInfo } from "@dsh/llm"
import * as Schema from "effect/Schema"

/**
 * Where reasoning text arrives in a delta.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ReasoningField = Schema.Literals(["reasoning_content", "reasoning"])

/**
 * Where reasoning goes on an assistant message with tool calls, or `none` (not sent back).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ReasoningPassback = Schema.Literals(["reasoning_content", "reasoning", "none"])

/**
 * Where cache hits are counted: DeepSeek's `prompt_cache_hit_tokens`, or OpenAI's
 * `prompt_tokens_details.cached_tokens`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CacheHits = Schema.Literals(["prompt_cache_hit_tokens", "prompt_tokens_details"])

/**
 * How thinking is turned on or off, if the server has a switch:
 *
 * | value | sent |
 * |---|---|
 * | `thinking-type` | `"thinking": {"type": "enabled" \| "disabled"}` (DeepSeek) |
 * | `chat-template-kwargs` | `"chat_template_kwargs": {"enable_thinking": true \| false}` (vLLM, llama.cpp; Qwen3-style chat templates) |
 * | `reasoning-object` | `"reasoning": {"enabled": true \| false}` (OpenRouter) |
 * | `reasoning-effort-none` | off: `"reasoning_effort": "none"`; on: nothing (the model thinks by default) (Ollama) |
 * | `none` | no switch: setting `thinking` is a configuration error |
 *
 * @since 0.1.0
 * @category schemas
 */
export const Thinking = Schema.Literals(["thinking-type", "chat-template-kwargs", "reasoning-object", "reasoning-effort-none", "none"])

/**
 * How a reasoning effort is sent: `"reasoning_effort": "<effort>"`, inside OpenRouter's
 * `"reasoning": {"effort": "<effort>"}`, or not at all (`none`: setting one is a configuration
 * error).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ReasoningEffort = Schema.Literals(["reasoning_effort", "reasoning-object", "none"])

/**
 * Which key carries the output limit: `max_tokens`, or `max_completion_tokens` (OpenAI, whose
 * reasoning models refuse `max_tokens`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const MaxTokensField = Schema.Literals(["max_tokens", "max_completion_tokens"])

/**
 * How the end of a stream is judged. `strict`: only `data: [DONE]` after a `finish_reason` ends
 * an answer; anything else is `LLM_PROTOCOL` (for servers that always send both, where anything
 * else means a proxy cut the stream). `lenient`: a body that ends cleanly after a
 * `finish_reason` is complete without `[DONE]`, and a `[DONE]` without any `finish_reason` ends
 * the answer as `tool-calls` (when it called tools) or `stop` (gateways that drop the last
 * chunk). A body that ends with neither is cut short in both modes.
 *
 * @since 0.1.0
 * @category schemas
 */
export const StreamEnd = Schema.Literals(["strict", "lenient"])

/**
 * The quirks of a server's wire, each optional (see {@link defaults}).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Quirks = Schema.Struct({
  /** Read first; the other field is read only when a delta lacks this one (servers in transition send both, the same text). */
  reasoningField: Schema.optionalKey(ReasoningField),
  /** Sent only on assistant messages that called tools, as thinking models want. */
  reasoningPassback: Schema.optionalKey(ReasoningPassback),
  /** Read first; the other spelling is read when this one is absent. */
  cacheHits: Schema.optionalKey(CacheHits),
  /** Whether `stream_options: {"include_usage": true}` is sent (some servers refuse it, OpenRouter ignores it). */
  includeUsage: Schema.optionalKey(Schema.Boolean),
  thinking: Schema.optionalKey(Thinking),
  reasoningEffort: Schema.optionalKey(ReasoningEffort),
  /** The efforts the server accepts; any string when absent. */
  reasoningEfforts: Schema.optionalKey(Schema.Array(Schema.String)),
  maxTokensField: Schema.optionalKey(MaxTokensField),
  streamEnd: Schema.optionalKey(StreamEnd)
})

/**
 * @since 0.1.0
 * @category models
 */
export interface Quirks extends Schema.Schema.Type<typeof Quirks> {}

/**
 * The quirks with every default filled in.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResolvedQuirks {
  readonly reasoningField: typeof ReasoningField.Type
  readonly reasoningPassback: typeof ReasoningPassback.Type
  readonly cacheHits: typeof CacheHits.Type
  readonly includeUsage: boolean
  readonly thinking: typeof Thinking.Type
  readonly reasoningEffort: typeof ReasoningEffort.Type
  readonly reasoningEfforts: ReadonlyArray<string> | undefined
  readonly maxTokensField: typeof MaxTokensField.Type
  readonly streamEnd: typeof StreamEnd.Type
}

/**
 * The quirks of a server nobody has described: what most OpenAI-compatible servers do, read
 * tolerantly.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: ResolvedQuirks = {
  reasoningField: "reasoning_content",
  reasoningPassback: "none",
  cacheHits: "prompt_tokens_details",
  includeUsage: true,
  thinking: "none",
  reasoningEffort: "reasoning_effort",
  reasoningEfforts: undefined,
  maxTokensField: "max_tokens",
  streamEnd: "lenient"
}

/**
 * Fills in the defaults.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resolveQuirks = (quirks: Quirks | ResolvedQuirks | undefined): ResolvedQuirks =>
  quirks === undefined ? defaults : {
    reasoningField: quirks.reasoningField ?? defaults.reasoningField,
    reasoningPassback: quirks.reasoningPassback ?? defaults.reasoningPassback,
    cacheHits: quirks.cacheHits ?? defaults.cacheHits,
    includeUsage: quirks.includeUsage ?? defaults.includeUsage,
    thinking: quirks.thinking ?? defaults.thinking,
    reasoningEffort: quirks.reasoningEffort ?? defaults.reasoningEffort,
    reasoningEfforts: quirks.reasoningEfforts ?? defaults.reasoningEfforts,
    maxTokensField: quirks.maxTokensField ?? defaults.maxTokensField,
    streamEnd: quirks.streamEnd ?? defaults.streamEnd
  }

/**
 * A model a profile serves: its name as requests use it, and what is known about it — the
 * `ModelInfo` of `@dsh/llm` without its provider, which is the profile's name.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Model = ModelInfo.ModelInfo.mapFields(({ provider: _, ...fields }) => fields)

/**
 * @since 0.1.0
 * @category models
 */
export interface Model extends Schema.Schema.Type<typeof Model> {}

const Name = Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9._-]*$/i))

/**
 * A server profile.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Profile = Schema.Struct({
  /** The adapter's name in the registry and the key of its `providerOptions`, e.g. `"ollama"`. */
  name: Name,
  /** How messages name the server, e.g. `"Ollama"`; the name when absent. */
  displayName: Schema.optionalKey(Schema.String),
  /** The API's base URL, e.g. `http://localhost:11434/v1`; requests go to `<baseUrl><path>`. */
  baseUrl: Schema.String,
  /** The environment variable that may override the base URL. */
  baseUrlEnv: Schema.optionalKey(Schema.String),
  /** The path of the chat completions endpoint (default `/chat/completions`). */
  path: Schema.optionalKey(Schema.String),
  /** The environment variable holding the key. */
  apiKeyEnv: Schema.optionalKey(Schema.String),
  /**
   * Whether a key is needed (default: when `apiKeyEnv` is set). Without one, nothing is sent in
   * `Authorization` (local servers); with one, building the Layer without a key fails.
   */
  apiKeyRequired: Schema.optionalKey(Schema.Boolean),
  /** Headers sent with every request (e.g. OpenRouter's `HTTP-Referer` and `X-Title`). */
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  /** The models it serves, with their context windows and prices. */
  models: Schema.optionalKey(Schema.Array(Model)),
  /** The names registered when the options name none (default: every model listed). */
  defaultModels: Schema.optionalKey(Schema.Array(Schema.String)),
  quirks: Schema.optionalKey(Quirks)
}).annotate({ identifier: "Profile" })

/**
 * @since 0.1.0
 * @category models
 */
export interface Profile extends Schema.Schema.Type<typeof Profile> {}

/**
 * A profile with every default filled in.
 *
 * @since 0.1.0
 * @category models
 */
export interface Resolved {
  readonly name: string
  readonly displayName: string
  readonly baseUrl: string
  readonly baseUrlEnv: string | undefined
  readonly path: string
  readonly apiKeyEnv: string | undefined
  readonly apiKeyRequired: boolean
  readonly headers: Readonly<Record<string, string>>
  readonly models: ReadonlyArray<Model>
  readonly defaultModels: ReadonlyArray<string>
  readonly quirks: ResolvedQuirks
}

/**
 * Fills in the defaults of a (decoded) profile.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resolve = (profile: Profile): Resolved => {
  const models = profile.models ?? []
  const path = profile.path ?? "/chat/completions"
  return {
    name: profile.name,
    displayName: profile.displayName ?? profile.name,
    baseUrl: profile.baseUrl,
    baseUrlEnv: profile.baseUrlEnv,
    path: path.startsWith("/") ? path : `/${path}`,
    apiKeyEnv: profile.apiKeyEnv,
    apiKeyRequired: profile.apiKeyRequired ?? profile.apiKeyEnv !== undefined,
    headers: profile.headers ?? {},
    models,
    defaultModels: profile.defaultModels ?? models.map((model) => model.name),
    quirks: resolveQuirks(profile.quirks)
  }
}

/**
 * What the registry learns about a model of a profile: its entry, with the profile's name as
 * the provider.
 *
 * @since 0.1.0
 * @category constructors
 */
export const info = (provider: string, model: Model): ModelInfo.ModelInfo => ({ ...model, provider })

/**
 * Decodes a profile from any value (parsed JSON, a config file's section), reporting every
 * violation.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeUnknown = Schema.decodeUnknownEffect(Profile)
