/**
 * The command's composition: `Dsh.layer` from the settings — the provider's adapter (DeepSeek's,
 * an OpenAI-compatible server's with its profile, or Anthropic's), the session store (a JSONL
 * directory or memory), the tools, the invariants with `--dev` — and the agent the commands
 * talk to (`Dsh.agent`). The command is a user of the library like any other: nothing
 * here reaches below the public API.
 *
 * @since 0.1.0
 */
import type { Agent } from "@dsh/agent"
import type { AnthropicError } from "@dsh/anthropic"
import { DeepSeek, type DeepSeekError } from "@dsh/deepseek"
import { Invariants } from "@dsh/invariants"
import { type ModelErrors, ModelRegistry } from "@dsh/model"
import { OpenAiCompat, type OpenAiError, Profile } from "@dsh/openai"
import type { PermissionPrompt } from "@dsh/permissions"
import { JsonlSessions, type Session, type SessionErrors } from "@dsh/session"
import { type ToolErrors } from "@dsh/tools"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Dsh from "../Dsh.ts"
import * as Capabilities from "./Capabilities.ts"
import type * as Config from "./Config.ts"
import type { ConfigInvalidError } from "./ConfigInvalidError.ts"

/**
 * The model names the DeepSeek adapter serves: the chosen one first, then DeepSeek's own.
 *
 * @since 0.1.0
 * @category utils
 */
export const models = (model: string): ReadonlyArray<string> => [...new Set([model, ...DeepSeek.defaultModels])]

/**
 * What the model Layer fails to build with: the adapter's `LLM_CONFIG`, or a name taken twice.
 *
 * @since 0.1.0
 * @category models
 */
export type ModelBuildError =
  | DeepSeekError.DeepSeekConfigError
  | OpenAiError.OpenAiConfigError
  | AnthropicError.AnthropicConfigError
  | ModelErrors.ModelConflictError
  | ModelErrors.AdapterConfigError

// The adapters read their key and base URL from the environment when they are not given; the
// command gives them what it resolved (flag, variable, config file), so they read nothing more.
const noEnvironment = ConfigProvider.layer(ConfigProvider.fromEnv({ env: {} }))

/**
 * The provider's adapter Layer for the settings: DeepSeek's (`DeepSeek.layer`), an
 * OpenAI-compatible server's with its profile (`OpenAiCompat.layer`), or Anthropic's
 * (`Anthropic.layer`), serving the chosen model and the provider's own, with the key
 * ({@link Config.apiKey}: none for a server that takes none), the base URL, the thinking
 * switch, the effort and the retries of the settings.
 *
 * @since 0.1.0
 * @category layers
 */
export const model = (
  settings: Config.Settings,
  apiKey: Redacted.Redacted<string> | undefined
): Layer.Layer<never, ModelBuildError, ModelRegistry> => {
  const { provider } = settings
  const key = apiKey === undefined ? {} : { apiKey }
  const retry = settings.retries === undefined ? {} : { retry: { times: settings.retries } }
  const served = (defaults: ReadonlyArray<string>) => [...new Set([settings.model, ...defaults])]
  if (provider.wire._tag === "Anthropic") {
    // loaded only for Anthropic, like Config's knowledge of it
    return Layer.unwrap(Effect.map(Effect.promise(() => import("@dsh/anthropic")), ({ Anthropic, Models }) =>
      Anthropic.layer({
        ...key,
        baseUrl: settings.baseUrl,
        models: served(Models.names),
        ...(settings.thinking === undefined ? {} : { thinking: settings.thinking ? "adaptive" as const : "disabled" as const }),
        ...(settings.reasoningEffort === undefined ? {} : { effort: settings.reasoningEffort }),
        ...retry
      }).pipe(Layer.provide(noEnvironment))))
  }
  const reasoning = {
    ...(settings.thinking === undefined ? {} : { thinking: settings.thinking }),
    ...(settings.reasoningEffort === undefined ? {} : { reasoningEffort: settings.reasoningEffort })
  }
  if (provider.name === DeepSeek.name && !provider.custom) {
    return DeepSeek.layer({
      ...key,
      baseUrl: settings.baseUrl,
      models: models(settings.model),
      // checked against the profile's efforts (high, max) when the settings were resolved
      ...reasoning as { readonly thinking?: boolean; readonly reasoningEffort?: DeepSeek.ReasoningEffort },
      ...retry
    }).pipe(Layer.provide(noEnvironment))
  }
  return OpenAiCompat.layer({
    profile: provider.wire.profile,
    ...key,
    baseUrl: settings.baseUrl,
    models: served(Profile.resolve(provider.wire.profile).defaultModels),
    ...reasoning,
    ...retry
  }).pipe(Layer.provide(noEnvironment))
}

/**
 * What the command's Layer fails to build with.
 *
 * @since 0.1.0
 * @category models
 */
export type BuildError =
  | ModelBuildError
  | ToolErrors.RegistrationError
  | SessionErrors.PersistenceError
  | ConfigInvalidError

/**
 * The whole graph for the settings over a model Layer: `Dsh.layer` with the sessions the
 * settings name (`JsonlSessions` is there when they name a directory: check with
 * {@link jsonlSessions} where they may not), the invariants with `--dev`, and the capabilities
 * `--tools` and `--mcp` ask for, the permission policy asking `prompt` (nobody without one).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <ROut, E>(
  settings: Config.Settings,
  modelLayer: Layer.Layer<ROut, E, ModelRegistry>,
  prompt?: Layer.Layer<PermissionPrompt.PermissionPrompt>
) => {
  const sessions: Dsh.SessionsOption = settings.sessions
  return Capabilities.layer(settings, prompt).pipe(Layer.provideMerge(Dsh.layer({ model: modelLayer, sessions, invariants: settings.dev })))
}

/**
 * The JSONL store, when the sessions are kept in a directory.
 *
 * @since 0.1.0
 * @category services
 */
export const jsonlSessions = Effect.serviceOption(JsonlSessions.JsonlSessions)

/**
 * Where an agent's session comes from.
 *
 * @since 0.1.0
 * @category models
 */
export type Source = { readonly id: string } | { readonly resume: Session.Session }

/**
 * The command's agent: on the settings' model, with their prompt and step limit, on a fresh
 * session or a resumed one (a replay gives it the recorded agent's id).
 *
 * @since 0.1.0
 * @category constructors
 */
export const agent = (settings: Config.Settings, source: Source, options: { readonly id?: string } = {}) =>
  Dsh.agent({
    ...options,
    model: settings.model,
    prompt: settings.prompt,
    session: source,
    ...(settings.maxSteps === undefined ? {} : { maxSteps: settings.maxSteps })
  })

/**
 * The pricing of the settings' model, when its registry entry has one (usage is then shown
 * with its cost).
 *
 * @since 0.1.0
 * @category services
 */
export const pricing = (settings: Config.Settings) =>
  Effect.map(
    ModelRegistry.use((registry) => registry.info(settings.model)),
    (info) => Option.getOrUndefined(Option.flatMapNullishOr(info, (entry) => entry.pricing))
  )

/**
 * With `--dev`: fails with the first violation of the event contract found so far (the checker
 * catches up with every event first); without it, nothing.
 *
 * @since 0.1.0
 * @category invariants
 */
export const verify = Effect.flatMap(Effect.serviceOption(Invariants), (invariants) =>
  Option.match(invariants, {
    onNone: () => Effect.void,
    onSome: (checker) => Effect.andThen(checker.checked(Effect.void), checker.verify)
  }))

/**
 * A fresh session id: the UTC time it was made, then four random hex digits, so ids sort by
 * age (`20261201-234405-a1b2`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const sessionId = (now: Date = new Date()): string => {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15)
  const random = Array.from(crypto.getRandomValues(new Uint8Array(2)), (b) => b.toString(16).padStart(2, "0")).join("")
  return `${stamp}-${random}`
}

/**
 * The agent handle's type, for the commands.
 *
 * @since 0.1.0
 * @category models
 */
export type AgentHandle = Agent.Agent
