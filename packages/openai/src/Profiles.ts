/**
 * The shipped server profiles: `openai`, `deepseek`, `ollama`, `vllm`, `llamacpp`, `lmstudio`,
 * `openrouter`. Each is plain data (a `Profile.Profile`); what each says about its server's
 * wire was established from the servers' documentation and their issue trackers, and where a
 * behaviour could not be established that is said next to the setting. A quirk that turns out
 * wrong for your version of a server is corrected without code: spread the profile and
 * override it (`{ ...Profiles.vllm, quirks: { ...Profiles.vllm.quirks, reasoningField: "reasoning_content" } }`).
 *
 * Prices are snapshots in US dollars per million tokens, as the providers listed them (dates
 * below); they change, and a profile carries one price per model where providers have tiers
 * (long-prompt surcharges, peak hours, batch discounts). Local servers list no models: what
 * they serve is whatever is loaded, so their models are named in the options, with their
 * context window when it is to be known (`models: [{ name: "qwen3:8b", contextWindow: 40960 }]`).
 *
 * @since 0.1.0
 */
import type { Profile } from "./Profile.ts"

/**
 * OpenAI's chat completions API.
 *
 * - Reasoning: OpenAI's reasoning models do not stream their reasoning text on this API, so
 *   no field matters; none is passed back.
 * - Usage: cache hits in `prompt_tokens_details.cached_tokens`, usage only with
 *   `stream_options.include_usage` (in a last chunk with `choices: []`).
 * - `reasoning_effort` is top-level; which values a model takes depends on the model
 *   (`minimal` for the GPT-5 family, `none` and `xhigh` for later ones): the server refuses
 *   the others with a 400, which is reported as such.
 * - Output limit as `max_completion_tokens` (reasoning models refuse `max_tokens`).
 * - Strict end of stream: OpenAI always ends with `finish_reason` and `[DONE]`.
 * - Models and prices: the GPT-5.4/5.5 family as OpenAI's pricing page listed it in 2026
 *   (rates for prompts under 270K tokens; OpenAI charges more beyond). The 1M context window
 *   is as listed; the output limits were not established and are left out.
 *
 * @since 0.1.0
 * @category profiles
 */
export const openai: Profile = {
  name: "openai",
  displayName: "OpenAI",
  baseUrl: "https://api.openai.com/v1",
  baseUrlEnv: "OPENAI_BASE_URL",
  apiKeyEnv: "OPENAI_API_KEY",
  apiKeyRequired: true,
  models: [
    { name: "gpt-5.5", contextWindow: 1_000_000, pricing: { inputPerMillion: 5, cacheReadPerMillion: 0.5, outputPerMillion: 30 } },
    { name: "gpt-5.4", contextWindow: 1_000_000, pricing: { inputPerMillion: 2.5, cacheReadPerMillion: 0.25, outputPerMillion: 15 } },
    {
      name: "gpt-5.4-mini",
      contextWindow: 1_000_000,
      pricing: { inputPerMillion: 0.75, cacheReadPerMillion: 0.075, outputPerMillion: 4.5 }
    },
    {
      name: "gpt-5.4-nano",
      contextWindow: 1_000_000,
      pricing: { inputPerMillion: 0.2, cacheReadPerMillion: 0.02, outputPerMillion: 1.25 }
    }
  ],
  quirks: {
    reasoningField: "reasoning_content",
    reasoningPassback: "none",
    cacheHits: "prompt_tokens_details",
    includeUsage: true,
    thinking: "none",
    reasoningEffort: "reasoning_effort",
    reasoningEfforts: ["none", "minimal", "low", "medium", "high", "xhigh"],
    maxTokensField: "max_completion_tokens",
    streamEnd: "strict"
  }
}

/**
 * DeepSeek's chat completions API (what `DeepSeek.layer` runs on).
 *
 * - Reasoning under `reasoning_content`; thinking mode requires it back on assistant messages
 *   that called tools (`reasoning_content`).
 * - Usage: `prompt_cache_hit_tokens` + `prompt_cache_miss_tokens` (= `prompt_tokens`).
 * - Thinking switched by `"thinking": {"type": …}`, effort `high` or `max` as `reasoning_effort`.
 * - Strict end of stream: DeepSeek always ends with `finish_reason` and `[DONE]`.
 * - Models and prices: `deepseek-v4-flash` and `deepseek-v4-pro` as api-docs.deepseek.com
 *   listed them in 2026 (1M context, 384K output); DeepSeek bills twice these in its peak hours.
 *
 * @since 0.1.0
 * @category profiles
 */
export const deepseek: Profile = {
  name: "deepseek",
  displayName: "DeepSeek",
  baseUrl: "https://api.deepseek.com",
  baseUrlEnv: "DEEPSEEK_BASE_URL",
  apiKeyEnv: "DEEPSEEK_API_KEY",
  apiKeyRequired: true,
  models: [
    {
      name: "deepseek-v4-flash",
      contextWindow: 1_048_576,
      maxOutputTokens: 393_216,
      pricing: { inputPerMillion: 0.14, cacheReadPerMillion: 0.0028, outputPerMillion: 0.28 }
    },
    {
      name: "deepseek-v4-pro",
      contextWindow: 1_048_576,
      maxOutputTokens: 393_216,
      pricing: { inputPerMillion: 0.435, cacheReadPerMillion: 0.003625, outputPerMillion: 0.87 }
    }
  ],
  quirks: {
    reasoningField: "reasoning_content",
    reasoningPassback: "reasoning_content",
    cacheHits: "prompt_cache_hit_tokens",
    includeUsage: true,
    thinking: "thinking-type",
    reasoningEffort: "reasoning_effort",
    reasoningEfforts: ["high", "max"],
    maxTokensField: "max_tokens",
    streamEnd: "strict"
  }
}

/**
 * Ollama's OpenAI-compatible endpoint (`/v1`), local by default; `OLLAMA_API_KEY` for
 * ollama.com's cloud (`baseUrl: "https://ollama.com/v1"`), not needed locally.
 *
 * - Reasoning streams as `delta.reasoning` (never `reasoning_content`, per the reports against
 *   several clients). Whether the endpoint reads reasoning back on assistant messages was not
 *   established, so none is sent.
 * - Thinking: the only switch the OpenAI-compatible endpoint honours is `reasoning_effort`
 *   (`high`, `medium`, `low`; `none` turns thinking off); `think` and
 *   `chat_template_kwargs` are ignored there. Thinking models think by default.
 * - Usage with `stream_options.include_usage` (Ollama ≥ 0.5.2); no cache counts are reported.
 * - Tool calls arrive whole, and parallel ones have been seen sharing index 0 (the translator
 *   tells them apart by id). Lenient end of stream.
 *
 * @since 0.1.0
 * @category profiles
 */
export const ollama: Profile = {
  name: "ollama",
  displayName: "Ollama",
  baseUrl: "http://localhost:11434/v1",
  apiKeyEnv: "OLLAMA_API_KEY",
  apiKeyRequired: false,
  quirks: {
    reasoningField: "reasoning",
    reasoningPassback: "none",
    cacheHits: "prompt_tokens_details",
    includeUsage: true,
    thinking: "reasoning-effort-none",
    reasoningEffort: "reasoning_effort",
    reasoningEfforts: ["high", "medium", "low"],
    maxTokensField: "max_tokens",
    streamEnd: "lenient"
  }
}

/**
 * vLLM's OpenAI-compatible server (`vllm serve`, port 8000), with `--api-key` optional
 * (`VLLM_API_KEY`, the variable `vllm serve` itself reads).
 *
 * - Reasoning (with a `--reasoning-parser`) streams as `reasoning` since vLLM renamed
 *   `reasoning_content` (0.11; the old name was removed in 2026); older versions send
 *   `reasoning_content`, which is read when `reasoning` is absent. vLLM ≥ 0.16 reads reasoning
 *   back from `message.reasoning` and drops `reasoning_content`, so it is passed back as
 *   `reasoning` (interleaved thinking with tool calls).
 * - Thinking switched through the chat template (`chat_template_kwargs.enable_thinking`: the
 *   Qwen3-style templates; a template without the variable ignores it); `reasoning_effort`
 *   passed as it is (gpt-oss reads it).
 * - Cache hits in `prompt_tokens_details.cached_tokens`, reported only when the server runs
 *   with `--enable-prompt-tokens-details`. Errors as `{"error": {…}}` or, in older versions,
 *   `{"object": "error", "message", "type", "code"}`. Lenient end of stream.
 *
 * @since 0.1.0
 * @category profiles
 */
export const vllm: Profile = {
  name: "vllm",
  displayName: "vLLM",
  baseUrl: "http://localhost:8000/v1",
  apiKeyEnv: "VLLM_API_KEY",
  apiKeyRequired: false,
  quirks: {
    reasoningField: "reasoning",
    reasoningPassback: "reasoning",
    cacheHits: "prompt_tokens_details",
    includeUsage: true,
    thinking: "chat-template-kwargs",
    reasoningEffort: "reasoning_effort",
    maxTokensField: "max_tokens",
    streamEnd: "lenient"
  }
}

/**
 * llama.cpp's `llama-server` (port 8080), with `--api-key` optional (`LLAMA_API_KEY`, the
 * variable `llama-server` reads for it).
 *
 * - Reasoning as `reasoning_content` with `--reasoning-format deepseek` (the default; with
 *   `none` it stays inline in the text as `<think>…</think>`, which is kept as text). Passed
 *   back as `reasoning_content`: assumed from its DeepSeek-compatible format, not established.
 * - Thinking switched through the chat template (`chat_template_kwargs.enable_thinking`);
 *   whether it takes `reasoning_effort` was not established, so setting one is refused.
 * - Errors as `{"error": {"code", "message", "type"}}`, e.g. `exceed_context_size_error`
 *   (400) for a prompt beyond the loaded context. Lenient end of stream.
 *
 * @since 0.1.0
 * @category profiles
 */
export const llamacpp: Profile = {
  name: "llamacpp",
  displayName: "llama.cpp",
  baseUrl: "http://localhost:8080/v1",
  apiKeyEnv: "LLAMA_API_KEY",
  apiKeyRequired: false,
  quirks: {
    reasoningField: "reasoning_content",
    reasoningPassback: "reasoning_content",
    cacheHits: "prompt_tokens_details",
    includeUsage: true,
    thinking: "chat-template-kwargs",
    reasoningEffort: "none",
    maxTokensField: "max_tokens",
    streamEnd: "lenient"
  }
}

/**
 * LM Studio's local server (port 1234), no key.
 *
 * - Reasoning: LM Studio streamed `reasoning_content` (0.3.9) and later `reasoning`; the latter
 *   is read first, the former when it is absent. Nothing is passed back (not established).
 * - No thinking switch on this endpoint was established; `reasoning_effort` is passed as it is
 *   (assumed, for gpt-oss).
 * - Errors as `{"error": {"message", "type", "param"}}` (e.g. "No models loaded", a 400 or 404)
 *   or `{"error": "…"}`. Lenient end of stream.
 *
 * @since 0.1.0
 * @category profiles
 */
export const lmstudio: Profile = {
  name: "lmstudio",
  displayName: "LM Studio",
  baseUrl: "http://localhost:1234/v1",
  apiKeyRequired: false,
  quirks: {
    reasoningField: "reasoning",
    reasoningPassback: "none",
    cacheHits: "prompt_tokens_details",
    includeUsage: true,
    thinking: "none",
    reasoningEffort: "reasoning_effort",
    maxTokensField: "max_tokens",
    streamEnd: "lenient"
  }
}

/**
 * OpenRouter, a gateway to many providers' models (`provider/model` names such as
 * `deepseek/deepseek-v4-flash`, named in the options: its catalogue and prices change too often
 * to ship).
 *
 * - Reasoning streams as `delta.reasoning` (with `reasoning_details`, not read). Nothing is
 *   passed back: OpenRouter wants `reasoning_details` (with the upstream's signatures) to
 *   preserve reasoning, which plain text cannot stand in for.
 * - Thinking and effort in one object, `"reasoning": {"enabled", "effort"}`.
 * - Usage is always in the last chunk (`stream_options` is deprecated there and not sent);
 *   cache hits and writes in `prompt_tokens_details` (`cached_tokens`, `cache_write_tokens`).
 * - `: OPENROUTER PROCESSING` comments keep the stream alive; errors as
 *   `{"error": {"code", "message", "metadata": {"provider_name", "raw"}}}`, with HTTP 402 for
 *   an account out of credit; an error after the answer began arrives as a data event with
 *   `finish_reason: "error"`. Lenient end of stream (upstreams vary).
 * - Attribution headers (`HTTP-Referer`, `X-Title`) are optional: add them with `headers`.
 *
 * @since 0.1.0
 * @category profiles
 */
export const openrouter: Profile = {
  name: "openrouter",
  displayName: "OpenRouter",
  baseUrl: "https://openrouter.ai/api/v1",
  apiKeyEnv: "OPENROUTER_API_KEY",
  apiKeyRequired: true,
  quirks: {
    reasoningField: "reasoning",
    reasoningPassback: "none",
    cacheHits: "prompt_tokens_details",
    includeUsage: false,
    thinking: "reasoning-object",
    reasoningEffort: "reasoning-object",
    reasoningEfforts: ["none", "minimal", "low", "medium", "high", "xhigh"],
    maxTokensField: "max_tokens",
    streamEnd: "lenient"
  }
}

/**
 * Every shipped profile, by name.
 *
 * @since 0.1.0
 * @category profiles
 */
export const all: Readonly<Record<"openai" | "deepseek" | "ollama" | "vllm" | "llamacpp" | "lmstudio" | "openrouter", Profile>> = {
  openai,
  deepseek,
  ollama,
  vllm,
  llamacpp,
  lmstudio,
  openrouter
}

/**
 * The name of a shipped profile.
 *
 * @since 0.1.0
 * @category models
 */
export type Name = keyof typeof all

/**
 * The names of the shipped profiles.
 *
 * @since 0.1.0
 * @category profiles
 */
export const names: ReadonlyArray<Name> = Object.keys(all) as Array<Name>

/**
 * A shipped profile by name, if there is one.
 *
 * @since 0.1.0
 * @category profiles
 */
export const get = (name: string): Profile | undefined =>
  Object.hasOwn(all, name) ? all[name as Name] : undefined
