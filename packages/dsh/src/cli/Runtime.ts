/**
 * The command's composition: `Dsh.layer` from the settings — the DeepSeek adapter, the session
 * store (a JSONL directory or memory), the tools, the invariants with `--dev` — and the agent the
 * commands talk to (`Dsh.agent`). The command is a user of the library like any other: nothing
 * here reaches below the public API.
 *
 * @since 0.1.0
 */
import type { Agent } from "@dsh/agent"
import { DeepSeek } from "@dsh/deepseek"
import { Invariants } from "@dsh/invariants"
import { type ModelErrors, ModelRegistry } from "@dsh/model"
import type { PermissionPrompt } from "@dsh/permissions"
import { JsonlSessions, type Session, type SessionErrors } from "@dsh/session"
import { type ToolErrors } from "@dsh/tools"
import { Effect, Layer, Option, type Redacted } from "effect"
import type { DeepSeekError } from "@dsh/deepseek"
import * as Dsh from "../Dsh.ts"
import * as Capabilities from "./Capabilities.ts"
import type * as Config from "./Config.ts"
import type { ConfigInvalidError } from "./ConfigInvalidError.ts"

/**
 * The model names the adapter serves: the chosen one first, then DeepSeek's own.
 *
 * @since 0.1.0
 * @category utils
 */
export const models = (model: string): ReadonlyArray<string> => [...new Set([model, ...DeepSeek.defaultModels])]

/**
 * The DeepSeek adapter's Layer for the settings.
 *
 * @since 0.1.0
 * @category layers
 */
export const model = (settings: Config.Settings, apiKey: Redacted.Redacted<string>) =>
  DeepSeek.layer({
    apiKey,
    baseUrl: settings.baseUrl,
    models: models(settings.model),
    ...(settings.thinking === undefined ? {} : { thinking: settings.thinking }),
    ...(settings.reasoningEffort === undefined ? {} : { reasoningEffort: settings.reasoningEffort }),
    ...(settings.retries === undefined ? {} : { retry: { times: settings.retries } })
  })

/**
 * What the command's Layer fails to build with.
 *
 * @since 0.1.0
 * @category models
 */
export type BuildError =
  | DeepSeekError.DeepSeekConfigError
  | ModelErrors.ModelConflictError
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
