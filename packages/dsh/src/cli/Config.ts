/**
 * The `dsh` command's configuration: where each setting comes from and what it must be.
 *
 * Every setting is taken from the first of these that has it: a flag, then an environment
 * variable, then the config file (JSON, validated by {@link File}), then a default.
 *
 * | setting | flag | environment | config file | default |
 * |---|---|---|---|---|
 * | config file | `--config <file>` | `DSH_CONFIG` | | `$XDG_CONFIG_HOME/dsh/config.json` (`~/.config/dsh/config.json`) |
 * | provider | `--provider <name>` | `DSH_PROVIDER` | `provider` (a name, or a profile) | `deepseek` |
 * | model | `--model <name>` | `DSH_MODEL` | `providers.<name>.model`, then `model` | the provider's first model (`deepseek-v4-flash`); none for a server that lists none: `CONFIG_INVALID` |
 * | base URL | `--base-url <url>` | the provider's (`DEEPSEEK_BASE_URL`, `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) | `providers.<name>.baseUrl` (`deepseek.baseUrl`) | the provider's (`https://api.deepseek.com`) |
 * | API key | | the provider's (`DEEPSEEK_API_KEY`, `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …) | `providers.<name>.apiKey` (`deepseek.apiKey`) | none: `LLM_CONFIG` when the provider needs one |
 * | sessions | `--sessions <dir>\|memory` | `DSH_SESSIONS` | `sessions` | `$XDG_DATA_HOME/dsh/sessions` (`~/.local/share/dsh/sessions`) |
 * | tools | `--tools none\|coding` | | `tools` | `coding` |
 * | MCP servers | `--mcp <file>` | | `mcp` | none |
 * | max steps | `--max-steps <n>` | | `maxSteps` | 50 |
 * | reasoning | `--hide-reasoning` | | `reasoning` (`show`\|`hide`) | `show` |
 * | permission rules | `--yes` (answers every question yes) | | `permissions` (`Policy.Config`: rules before the default ones, and the `default`) | `Policy.askBeforeChanges` |
 *
 * The providers are the shipped profiles of `@dsh/openai` (`deepseek`, `openai`, `ollama`,
 * `vllm`, `llamacpp`, `lmstudio`, `openrouter`), `anthropic` (`@dsh/anthropic`), and the
 * OpenAI-compatible profiles the config file writes (`profiles`, or `provider` as an object),
 * decoded with `Profile.Profile`. A config file named by `--config` or `DSH_CONFIG` must exist;
 * the default one may not; its relative paths (`sessions`, `mcp`) are taken from its own
 * directory. A value that is not what its setting expects is a {@link ConfigInvalidError}
 * naming the field, where the value came from and what was expected.
 *
 * @since 0.1.0
 */
import type { AnthropicError } from "@dsh/anthropic"
import { DeepSeekError } from "@dsh/deepseek"
import { OpenAiError, Profile, Profiles } from "@dsh/openai"
import { type PermissionErrors, Policy } from "@dsh/permissions"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import type * as PlatformError from "effect/PlatformError"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { homedir, userInfo } from "node:os"
import { dirname, isAbsolute, join, resolve as resolvePath } from "node:path"
import { ConfigInvalidError } from "./ConfigInvalidError.ts"

/**
 * The environment the command reads (a snapshot of `process.env`).
 *
 * @since 0.1.0
 * @category models
 */
export type Environment = Readonly<Record<string, string | undefined>>

/**
 * Which tools the agent gets: none, or the coding set (bash and the file tools under the
 * permission policy).
 *
 * @since 0.1.0
 * @category models
 */
export type ToolSet = "none" | "coding"

/**
 * The tool sets, as flag choices.
 *
 * @since 0.1.0
 * @category constants
 */
export const toolSets: readonly ["none", "coding"] = ["none", "coding"]

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * A provider's section of the config file (`providers.<name>`, or `deepseek`): its key, base
 * URL and model, and how it is asked to think.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ProviderSection = Schema.Struct({
  apiKey: Schema.optionalKey(Schema.NonEmptyString),
  baseUrl: Schema.optionalKey(Schema.NonEmptyString),
  /** The model on this provider (a flag or `DSH_MODEL` wins; it wins over the file's `model`). */
  model: Schema.optionalKey(Schema.NonEmptyString),
  /** Thinking on or off (Anthropic: `adaptive` or `disabled`), where the provider has a switch. */
  thinking: Schema.optionalKey(Schema.Boolean),
  /** The reasoning effort (Anthropic: `output_config.effort`), among those the provider takes. */
  reasoningEffort: Schema.optionalKey(Schema.NonEmptyString),
  /** How often a request that failed before its answer began is sent again (2 by default). */
  retries: Schema.optionalKey(NonNegativeInt)
})

/**
 * @since 0.1.0
 * @category models
 */
export type ProviderSection = typeof ProviderSection.Type

/**
 * The config file: a JSON object; every key optional, no other key allowed (a misspelt key is
 * an error, not a setting silently ignored).
 *
 * @example
 * ```json
 * {
 *   "provider": "openai",
 *   "sessions": "~/notes/dsh-sessions",
 *   "providers": { "openai": { "apiKey": "sk-…", "model": "gpt-5.4-mini" } },
 *   "deepseek": { "apiKey": "sk-…", "thinking": true }
 * }
 * ```
 *
 * @since 0.1.0
 * @category schemas
 */
export const File = Schema.Struct({
  /** The provider: a name (a shipped profile's, `anthropic`, or one of `profiles`), or a profile written here. */
  provider: Schema.optionalKey(Schema.Union([Schema.NonEmptyString, Profile.Profile])),
  /** OpenAI-compatible servers of the user's, each a `Profile.Profile`, chosen by name. */
  profiles: Schema.optionalKey(Schema.Array(Profile.Profile)),
  /** Each provider's settings, by the provider's name. */
  providers: Schema.optionalKey(Schema.Record(Schema.String, ProviderSection)),
  /** The model every agent runs on (a provider's `model` wins for that provider). */
  model: Schema.optionalKey(Schema.NonEmptyString),
  /** Where sessions are kept: a directory (`~` is the home directory, relative to this file's directory), or `"memory"`. */
  sessions: Schema.optionalKey(Schema.NonEmptyString),
  tools: Schema.optionalKey(Schema.Literals(toolSets)),
  /** An MCP servers file (relative to this file's directory). */
  mcp: Schema.optionalKey(Schema.NonEmptyString),
  /** The most steps a turn may take. */
  maxSteps: Schema.optionalKey(PositiveInt),
  /** Whether `dsh chat` shows the model's reasoning. */
  reasoning: Schema.optionalKey(Schema.Literals(["show", "hide"])),
  /** The agent's prompt, in place of the built-in one. */
  prompt: Schema.optionalKey(Schema.String),
  /**
   * Permission rules (`Policy.Config` of `@dsh/permissions`): checked before the built-in ones
   * (`Policy.askBeforeChanges`), the first that matches deciding; `default` in place of theirs.
   * Paths are relative to the working directory.
   */
  permissions: Schema.optionalKey(Schema.Struct({
    rules: Schema.optionalKey(Policy.Config.fields.rules),
    default: Policy.Config.fields.default
  })),
  /** DeepSeek's section, as `providers.deepseek` (give one of the two). */
  deepseek: Schema.optionalKey(Schema.Struct({
    ...ProviderSection.fields,
    reasoningEffort: Schema.optionalKey(Schema.Literals(["high", "max"]))
  }))
})

/**
 * @since 0.1.0
 * @category models
 */
export type File = typeof File.Type

/**
 * What the command line said about the configuration (absent: not given).
 *
 * @since 0.1.0
 * @category models
 */
export interface Flags {
  readonly config?: string | undefined
  readonly provider?: string | undefined
  readonly model?: string | undefined
  readonly baseUrl?: string | undefined
  readonly sessions?: string | undefined
  readonly tools?: ToolSet | undefined
  readonly mcp?: string | undefined
  readonly maxSteps?: number | undefined
  readonly hideReasoning?: boolean | undefined
  readonly yes?: boolean | undefined
  readonly dev?: boolean | undefined
}

/**
 * Where sessions live.
 *
 * @since 0.1.0
 * @category models
 */
export type Sessions = "memory" | { readonly directory: string }

/**
 * A provider the command can talk to: its wire, and where its key, base URL and model come
 * from.
 *
 * @since 0.1.0
 * @category models
 */
export interface Provider {
  /** The name `--provider` takes: `deepseek`, `openai`, `anthropic`, a profile's name, … */
  readonly name: string
  /** How messages name it: `DeepSeek`, `OpenAI`, `Anthropic`, `Ollama`, … */
  readonly displayName: string
  /** OpenAI's chat completions with this profile (`@dsh/openai`), or Anthropic's Messages API (`@dsh/anthropic`). */
  readonly wire: { readonly _tag: "OpenAiCompat"; readonly profile: Profile.Profile } | { readonly _tag: "Anthropic" }
  /** Whether the profile is one the config file wrote (not a shipped one). */
  readonly custom: boolean
  /** The variable holding the key, when it has one. */
  readonly apiKeyEnv: string | undefined
  /** Whether a key is needed (a local server needs none). */
  readonly apiKeyRequired: boolean
  /** The variable that may set the base URL, when it has one. */
  readonly baseUrlEnv: string | undefined
  readonly defaultBaseUrl: string
  /** The models it lists, the default first; none for a server that lists none (name one with `--model`). */
  readonly models: ReadonlyArray<string>
  /** The config file's section with its settings: `deepseek`, or `providers.<name>`. */
  readonly section: string
}

/**
 * The resolved configuration.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  /** The config file read, if one was. */
  readonly configFile: string
  readonly configFound: boolean
  /** The provider the agents run on. */
  readonly provider: Provider
  /** The model; `""` when nothing names one and the provider lists none ({@link apiKey} refuses it). */
  readonly model: string
  /** Without a trailing slash. */
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string> | undefined
  readonly thinking: boolean | undefined
  readonly reasoningEffort: string | undefined
  readonly retries: number | undefined
  readonly sessions: Sessions
  readonly tools: ToolSet
  /** The MCP servers file, if one is named. */
  readonly mcp: string | undefined
  /** Where {@link Settings.mcp} came from: `--mcp`, or the config file's `mcp` field. */
  readonly mcpSource: string | undefined
  readonly maxSteps: number | undefined
  readonly showReasoning: boolean
  /** The permission policy: the config file's rules, then the built-in ones. */
  readonly permissions: Policy.Config
  /** Approve every tool call the permission policy would ask about. */
  readonly yes: boolean
  /** Check the event contract on the live session. */
  readonly dev: boolean
  readonly prompt: string
}

/**
 * The provider when nothing names one.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultProvider = "deepseek"

/**
 * The model when nothing names one, on the default provider.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultModel = "deepseek-v4-flash"

/**
 * The providers every installation has: the shipped OpenAI-compatible profiles, then Anthropic.
 *
 * @since 0.1.0
 * @category constants
 */
export const shippedProviders: ReadonlyArray<string> = [...Profiles.names, "anthropic"]

/**
 * The agent's prompt when the config file has none.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultPrompt = "You are dsh, an assistant working in the user's terminal. Answer concisely. " +
  "When you have tools, use them to look things up rather than guessing, and say what you did."

/**
 * The home directory: `HOME`, else (unset or empty, as `HOME= dsh …` leaves it) the account's
 * own, never `""` (which would put the defaults under the working directory).
 *
 * @since 0.1.0
 * @category paths
 */
export const homeDirectory = (env: Environment): string => {
  const named = nonEmpty(env["HOME"])
  if (named !== undefined) return named
  try {
    return userInfo().homedir || homedir()
  } catch {
    return homedir()
  }
}

const home = homeDirectory

/**
 * An XDG base directory variable's value, when it is one: an absolute path (the XDG spec has
 * a relative one ignored, as unset).
 */
const xdgDirectory = (env: Environment, name: string): string | undefined => {
  const value = nonEmpty(env[name])
  return value !== undefined && isAbsolute(value) ? value : undefined
}

/**
 * The config file when neither `--config` nor `DSH_CONFIG` names one.
 *
 * @since 0.1.0
 * @category paths
 */
export const defaultConfigFile = (env: Environment): string =>
  join(xdgDirectory(env, "XDG_CONFIG_HOME") ?? join(home(env), ".config"), "dsh", "config.json")

/**
 * The sessions directory when nothing names one.
 *
 * @since 0.1.0
 * @category paths
 */
export const defaultSessionsDirectory = (env: Environment): string =>
  join(xdgDirectory(env, "XDG_DATA_HOME") ?? join(home(env), ".local", "share"), "dsh", "sessions")

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : value

// An empty environment variable is as good as unset (a shell's `X= dsh`); an empty flag is a
// mistake to name, not a silent fall-back to the next source.
const flagNames = {
  config: { flag: "--config", expected: "a config file" },
  provider: { flag: "--provider", expected: "a provider's name" },
  model: { flag: "--model", expected: "a model's name" },
  baseUrl: { flag: "--base-url", expected: "a URL" },
  mcp: { flag: "--mcp", expected: "an MCP config file" }
} as const

const checkNotEmpty = (flags: Flags, keys: ReadonlyArray<keyof typeof flagNames>): Result.Result<void, ConfigInvalidError> => {
  for (const key of keys) {
    const value = flags[key]
    if (value !== undefined && value.trim() === "") {
      const { expected, flag } = flagNames[key]
      return Result.fail(
        new ConfigInvalidError({ message: `${flag}: expected ${expected}, got an empty string`, field: key, source: flag })
      )
    }
  }
  return Result.void
}

/**
 * A path as the user wrote it: `~` is the home directory; a relative path is from `from` (the
 * config file's directory for the file's paths), else from the working directory.
 */
const expand = (path: string, env: Environment, from?: string): string =>
  path === "~"
    ? home(env)
    : path.startsWith("~/")
    ? join(home(env), path.slice(2))
    : isAbsolute(path)
    ? path
    : from === undefined
    ? resolvePath(path)
    : resolvePath(from, path)

/**
 * A path with its `~/` expanded and nothing else changed (a relative one stays relative, as
 * the user wrote it, for the messages that name it).
 */
const expandHome = (path: string, env: Environment): string => path === "~" || path.startsWith("~/") ? expand(path, env) : path

// ---------------------------------------------------------------------------------------------
// the config file

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

const fieldOf = (path: ReadonlyArray<PropertyKey> | undefined): string =>
  path === undefined || path.length === 0 ? "(the file)" : path.map(String).join(".")

/**
 * Decodes a config file's text; `source` names it in the error.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeFile = (text: string, source: string): Result.Result<File, ConfigInvalidError> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Result.fail(
      new ConfigInvalidError({ message: `${source} is not JSON: ${(error as Error).message}`, field: "(the file)", source })
    )
  }
  const decoded = Schema.decodeUnknownResult(File)(json, { errors: "all", onExcessProperty: "error" })
  if (Result.isSuccess(decoded)) return Result.succeed(decoded.success)
  const issues = formatter(decoded.failure.issue).issues
  const lines = issues.map((issue) => `${fieldOf(issue.path as ReadonlyArray<PropertyKey> | undefined)}: ${issue.message}`)
  const field = fieldOf(issues[0]?.path as ReadonlyArray<PropertyKey> | undefined)
  return Result.fail(
    new ConfigInvalidError({
      message: `${source} is invalid: ${lines.join("; ")} (the fields are in docs/cli.md, Configuration)`,
      field,
      source
    })
  )
}

/**
 * Reads the config file: the one `--config` or `DSH_CONFIG` names (which must exist), else the
 * default one if it exists.
 *
 * @since 0.1.0
 * @category decoding
 */
export const readFile = (
  flags: Flags,
  env: Environment
): Effect.Effect<{ readonly path: string; readonly found: boolean; readonly file: File }, ConfigInvalidError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    yield* Effect.fromResult(checkNotEmpty(flags, ["config"]))
    const named = nonEmpty(flags.config) === undefined
      ? nonEmpty(env["DSH_CONFIG"]) === undefined ? undefined : { path: env["DSH_CONFIG"]!, source: "DSH_CONFIG" }
      : { path: flags.config!, source: "--config" }
    const path = named === undefined ? defaultConfigFile(env) : expand(named.path, env)
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(path).pipe(Effect.result)
    if (Result.isFailure(text)) {
      const why = unreadable(text.failure)
      // the default file may be absent; one that is there must be read (a directory, a file
      // dsh may not read, is a mistake to name, not a config silently left out)
      if (named === undefined && why.absent) return { path, found: false, file: {} }
      const source = named?.source ?? "the default config file"
      return yield* new ConfigInvalidError({
        message: `${named === undefined ? "" : `${named.source}: `}the config file ${path} cannot be read: ${why.reason}`,
        field: "config",
        source
      })
    }
    const file = yield* Effect.fromResult(decodeFile(text.success, path))
    return { path, found: true, file }
  })

/**
 * Why a config file could not be read, and whether that means it is not there (no such file,
 * or a path through something that is not a directory).
 */
const unreadable = (error: PlatformError.PlatformError): { readonly absent: boolean; readonly reason: string } => {
  const code = error.reason._tag === "BadArgument" ? undefined : (error.reason.cause as { readonly code?: unknown } | undefined)?.code
  switch (code) {
    case "ENOENT":
      return { absent: true, reason: "it does not exist" }
    case "ENOTDIR":
      return { absent: true, reason: "it does not exist (a directory on its path is a file)" }
    case "EISDIR":
      return { absent: false, reason: "it is a directory, not a file" }
    case "EACCES":
    case "EPERM":
      return { absent: false, reason: "permission denied" }
    default:
      return { absent: error.reason._tag === "NotFound", reason: error.message }
  }
}

// ---------------------------------------------------------------------------------------------
// the provider

// `@dsh/anthropic` is loaded only when the provider is Anthropic: the other providers' commands
// do not pay for it at startup
const anthropicAdapter = Effect.promise(() => import("@dsh/anthropic"))

const anthropicProvider: Effect.Effect<Provider> = Effect.map(anthropicAdapter, ({ Anthropic, Models }) => ({
  name: "anthropic",
  displayName: "Anthropic",
  wire: { _tag: "Anthropic" },
  custom: false,
  apiKeyEnv: "ANTHROPIC_API_KEY",
  apiKeyRequired: true,
  baseUrlEnv: "ANTHROPIC_BASE_URL",
  defaultBaseUrl: Anthropic.defaultBaseUrl,
  models: Models.names,
  section: "providers.anthropic"
}))

const openAiProvider = (profile: Profile.Profile, custom: boolean, section: string): Provider => {
  const resolved = Profile.resolve(profile)
  return {
    name: resolved.name,
    displayName: resolved.displayName,
    wire: { _tag: "OpenAiCompat", profile },
    custom,
    apiKeyEnv: resolved.apiKeyEnv,
    apiKeyRequired: resolved.apiKeyRequired,
    baseUrlEnv: resolved.baseUrlEnv,
    defaultBaseUrl: resolved.baseUrl,
    models: resolved.defaultModels.length > 0 ? resolved.defaultModels : resolved.models.map((model) => model.name),
    section
  }
}

const has = (record: Readonly<Record<string, unknown>> | undefined, key: string): boolean =>
  record !== undefined && Object.hasOwn(record, key)

/** The profiles the config file writes (`profiles`, and `provider` as an object), each name once. */
const ownProfiles = (file: File, path: string): Result.Result<ReadonlyArray<Profile.Profile>, ConfigInvalidError> => {
  const written = [
    ...(file.profiles ?? []).map((profile, i) => ({ profile, field: `profiles.${i}` })),
    ...(typeof file.provider === "object" ? [{ profile: file.provider, field: "provider" }] : [])
  ]
  const seen = new Map<string, string>()
  for (const { field, profile } of written) {
    const invalid = (message: string) =>
      Result.fail(new ConfigInvalidError({ message: `${path} (${field}.name): ${message}`, field: `${field}.name`, source: path }))
    if (profile.name === "anthropic") {
      return invalid(`"anthropic" is the Anthropic adapter, not an OpenAI-compatible server: give the profile another name`)
    }
    const earlier = seen.get(profile.name)
    if (earlier !== undefined) {
      return invalid(`the profile ${JSON.stringify(profile.name)} is written twice (${earlier} and ${field}): give each its own name`)
    }
    seen.set(profile.name, field)
  }
  return Result.succeed(written.map((entry) => entry.profile))
}

const namesOf = (own: ReadonlyArray<Profile.Profile>): ReadonlyArray<string> =>
  [...new Set([...shippedProviders, ...own.map((p) => p.name)])]

const listed = (own: ReadonlyArray<Profile.Profile>): string => {
  const mine = own.map((p) => p.name).filter((name) => !shippedProviders.includes(name))
  return `the providers: ${shippedProviders.join(", ")}` +
    (mine.length === 0 ? "" : `; and the config file's profiles: ${mine.join(", ")}`)
}

/** The config file's field of a provider's settings: `deepseek` (as before), or `providers.<name>`. */
const sectionField = (file: File, name: string): string =>
  name === "deepseek" && !has(file.providers, "deepseek") ? "deepseek" : `providers.${name}`

const sectionOf = (file: File, name: string): ProviderSection | undefined =>
  name === "deepseek" && !has(file.providers, "deepseek")
    ? file.deepseek
    : has(file.providers, name)
    ? file.providers![name]
    : undefined

const lookup = (name: string, own: ReadonlyArray<Profile.Profile>, file: File): Effect.Effect<Provider | undefined> => {
  // the config file's profiles may replace a shipped one (never Anthropic: see ownProfiles)
  const mine = own.find((profile) => profile.name === name)
  if (mine !== undefined) return Effect.succeed(openAiProvider(mine, true, sectionField(file, name)))
  if (name === "anthropic") return anthropicProvider
  const shipped = Profiles.get(name)
  return Effect.succeed(shipped === undefined ? undefined : openAiProvider(shipped, false, sectionField(file, name)))
}

/** The thinking switch and the effort, checked against what the provider's profile can send. */
const checkReasoning = (
  provider: Provider,
  section: ProviderSection | undefined,
  inFile: (field: string) => string
): Result.Result<void, ConfigInvalidError> => {
  if (section === undefined || provider.wire._tag !== "OpenAiCompat") return Result.void
  const quirks = Profile.resolveQuirks(provider.wire.profile.quirks)
  const invalid = (name: string, message: string) => {
    const field = `${provider.section}.${name}`
    return Result.fail(new ConfigInvalidError({ message: `${inFile(field)}: ${message}`, field, source: inFile(field) }))
  }
  if (section.thinking !== undefined && quirks.thinking === "none") {
    return invalid(
      "thinking",
      `${provider.displayName} has no thinking switch (the ${provider.name} profile's quirks.thinking is "none"): leave thinking out`
    )
  }
  const effort = section.reasoningEffort
  if (effort === undefined) return Result.void
  if (quirks.reasoningEffort === "none") {
    return invalid(
      "reasoningEffort",
      `${provider.displayName} takes no reasoning effort (the ${provider.name} profile's quirks.reasoningEffort is "none"): ` +
        "leave reasoningEffort out"
    )
  }
  const allowed = quirks.reasoningEfforts
  return allowed === undefined || allowed.includes(effort)
    ? Result.void
    : invalid("reasoningEffort", `expected one of ${allowed.map((e) => JSON.stringify(e)).join(", ")}, got ${JSON.stringify(effort)}`)
}

// ---------------------------------------------------------------------------------------------
// resolution

interface Sourced<A> {
  readonly value: A
  readonly source: string
  /** The directory a relative path is taken from (the config file's, for its values). */
  readonly from?: string
}

const first = <A>(...candidates: ReadonlyArray<Sourced<A | undefined>>): Sourced<A> | undefined => {
  for (const candidate of candidates) if (candidate.value !== undefined) return candidate as Sourced<A>
  return undefined
}

const checkBaseUrl = (candidate: Sourced<string>, provider: Provider): Result.Result<string, ConfigInvalidError> => {
  const trimmed = candidate.value.trim().replace(/\/+$/, "")
  let url: URL | undefined
  try {
    url = new URL(trimmed)
  } catch {
    url = undefined
  }
  return url !== undefined && (url.protocol === "http:" || url.protocol === "https:")
    ? Result.succeed(trimmed)
    : Result.fail(
      new ConfigInvalidError({
        message: `${candidate.source}: expected an http(s) URL such as ${
          provider.custom ? "https://api.example.com/v1" : provider.defaultBaseUrl
        }, got ${JSON.stringify(candidate.value)}`,
        field: `${provider.section}.baseUrl`,
        source: candidate.source
      })
    )
}

const checkMaxSteps = (value: number | undefined): Result.Result<number | undefined, ConfigInvalidError> =>
  value === undefined || (Number.isSafeInteger(value) && value >= 1)
    ? Result.succeed(value)
    : Result.fail(
      new ConfigInvalidError({
        message: `--max-steps: expected a whole number of steps, at least 1, got ${value}`,
        field: "maxSteps",
        source: "--max-steps"
      })
    )

const resolveSessions = (candidate: Sourced<string>, env: Environment): Result.Result<Sessions, ConfigInvalidError> => {
  const value = candidate.value.trim()
  if (value === "") {
    return Result.fail(
      new ConfigInvalidError({
        message: `${candidate.source}: expected a directory or "memory", got an empty string`,
        field: "sessions",
        source: candidate.source
      })
    )
  }
  return Result.succeed(value === "memory" ? "memory" : { directory: expand(value, env, candidate.from) })
}

/**
 * The settings from the flags, the environment and the config file (see the module's table).
 *
 * @since 0.1.0
 * @category constructors
 */
export const resolve = (
  flags: Flags,
  env: Environment,
  config: { readonly path: string; readonly found: boolean; readonly file: File }
): Effect.Effect<Settings, ConfigInvalidError> =>
  Effect.gen(function*() {
    yield* Effect.fromResult(checkNotEmpty(flags, ["provider", "model", "baseUrl", "mcp"]))
    const file = config.file
    const inFile = (field: string) => `${config.path} (${field})`
    // the config file's relative paths are its own directory's
    const here = dirname(config.path)
    const own = yield* Effect.fromResult(ownProfiles(file, config.path))
    const names = namesOf(own)
    for (const key of Object.keys(file.providers ?? {})) {
      if (!names.includes(key)) {
        return yield* new ConfigInvalidError({
          message: `${inFile(`providers.${key}`)}: there is no provider named ${JSON.stringify(key)} (${listed(own)})`,
          field: `providers.${key}`,
          source: config.path
        })
      }
    }
    if (file.deepseek !== undefined && has(file.providers, "deepseek")) {
      return yield* new ConfigInvalidError({
        message: `${config.path} has both "deepseek" and "providers.deepseek": give DeepSeek's settings in one of them`,
        field: "deepseek",
        source: config.path
      })
    }
    const chosen = first<string>(
      { value: nonEmpty(flags.provider)?.trim(), source: "--provider" },
      { value: nonEmpty(env["DSH_PROVIDER"])?.trim(), source: "DSH_PROVIDER" },
      { value: typeof file.provider === "object" ? file.provider.name : file.provider, source: inFile("provider") }
    ) ?? { value: defaultProvider, source: "the default" }
    const provider = yield* lookup(chosen.value, own, file)
    if (provider === undefined) {
      return yield* new ConfigInvalidError({
        message: `${chosen.source}: there is no provider named ${JSON.stringify(chosen.value)} (${listed(own)})`,
        field: "provider",
        source: chosen.source
      })
    }
    const section = sectionOf(file, provider.name)
    yield* Effect.fromResult(checkReasoning(provider, section, inFile))
    const baseUrl = first<string>(
      { value: nonEmpty(flags.baseUrl), source: "--base-url" },
      { value: provider.baseUrlEnv === undefined ? undefined : nonEmpty(env[provider.baseUrlEnv]), source: provider.baseUrlEnv ?? "" },
      { value: section?.baseUrl, source: inFile(`${provider.section}.baseUrl`) }
    ) ?? {
      value: provider.defaultBaseUrl,
      source: provider.custom ? `the ${provider.name} profile's baseUrl (${config.path})` : `the ${provider.name} profile's baseUrl`
    }
    const sessions = first<string>(
      { value: flags.sessions, source: "--sessions" },
      { value: nonEmpty(env["DSH_SESSIONS"]), source: "DSH_SESSIONS" },
      { value: file.sessions, source: inFile("sessions"), from: here }
    )
    const apiKey = (provider.apiKeyEnv === undefined ? undefined : nonEmpty(env[provider.apiKeyEnv])) ?? section?.apiKey
    const mcp = flags.mcp !== undefined
      ? { path: expandHome(flags.mcp, env), source: "--mcp" }
      : file.mcp === undefined
      ? undefined
      : { path: expand(file.mcp, env, here), source: inFile("mcp") }
    return {
      configFile: config.path,
      configFound: config.found,
      provider,
      model: nonEmpty(flags.model)?.trim() ?? nonEmpty(env["DSH_MODEL"])?.trim() ?? section?.model ?? file.model ?? provider.models[0] ?? "",
      baseUrl: yield* Effect.fromResult(checkBaseUrl(baseUrl, provider)),
      apiKey: apiKey === undefined ? undefined : Redacted.make(apiKey),
      thinking: section?.thinking,
      reasoningEffort: section?.reasoningEffort,
      retries: section?.retries,
      sessions: sessions === undefined
        ? { directory: defaultSessionsDirectory(env) }
        : yield* Effect.fromResult(resolveSessions(sessions, env)),
      tools: flags.tools ?? file.tools ?? "coding",
      mcp: mcp?.path,
      mcpSource: mcp?.source,
      maxSteps: (yield* Effect.fromResult(checkMaxSteps(flags.maxSteps))) ?? file.maxSteps,
      showReasoning: flags.hideReasoning === true ? false : file.reasoning !== "hide",
      permissions: yield* Effect.fromResult(permissionsOf(file, config.path)),
      yes: flags.yes === true,
      dev: flags.dev === true,
      prompt: file.prompt ?? defaultPrompt
    }
  })

/**
 * The permission policy of a config file: its rules before the built-in ones
 * (`Policy.askBeforeChanges`), its `default` in place of theirs; checked as the policy will
 * be (a rule's index is its index in the file's `rules`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const permissionsOf = (file: File, configFile: string): Result.Result<Policy.Config, ConfigInvalidError> => {
  const own = file.permissions
  const config: Policy.Config = {
    rules: [...(own?.rules ?? []), ...Policy.askBeforeChanges.rules],
    default: own?.default ?? Policy.askBeforeChanges.default ?? "ask"
  }
  const fieldOf = (problem: typeof PermissionErrors.Problem.Type) =>
    ["permissions", ...(problem.rule === undefined ? [] : [`rules.${problem.rule}`]), ...(problem.field === undefined ? [] : [problem.field])].join(".")
  return Result.match(Policy.makeResult(config), {
    onSuccess: () => Result.succeed(config),
    onFailure: (error) =>
      Result.fail(
        new ConfigInvalidError({
          message: `${configFile} is invalid: ${error.problems.map((p) => `${fieldOf(p)}: ${p.message}`).join("; ")}`,
          field: error.problems[0] === undefined ? "permissions" : fieldOf(error.problems[0]),
          source: configFile
        })
      )
  })
}

/**
 * Reads the config file and resolves the settings.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load = (flags: Flags, env: Environment): Effect.Effect<Settings, ConfigInvalidError, FileSystem.FileSystem> =>
  Effect.flatMap(readFile(flags, env), (config) => resolve(flags, env, config))

/**
 * The `LLM_CONFIG` failure of a missing key, as the provider's adapter names it.
 *
 * @since 0.1.0
 * @category models
 */
export type MissingKeyError = DeepSeekError.DeepSeekConfigError | OpenAiError.OpenAiConfigError | AnthropicError.AnthropicConfigError

/**
 * How the config file holds a provider's setting, for messages: `"deepseek": { "apiKey": … }`.
 *
 * @since 0.1.0
 * @category utils
 */
export const fileField = (provider: Pick<Provider, "name" | "section">, field: string, value?: string): string => {
  const inner = `"${field}"${value === undefined ? "" : `: ${value}`}`
  return provider.section === "deepseek" ? `"deepseek": { ${inner} }` : `"providers": { ${JSON.stringify(provider.name)}: { ${inner} } }`
}

const keyExample = (provider: Provider): string =>
  provider.name === "anthropic" ? "sk-ant-…" : provider.name === "openrouter" ? "sk-or-…" : provider.custom ? "…" : "sk-…"

const missingKey = (settings: Settings): Effect.Effect<MissingKeyError> => {
  const { provider } = settings
  const example = keyExample(provider)
  const put = `${fileField(provider, "apiKey", JSON.stringify(example))} in ${settings.configFile}`
  const message = `No ${provider.displayName} API key is configured. ` + (provider.apiKeyEnv === undefined
    ? `Put ${put}`
    : `Set the ${provider.apiKeyEnv} environment variable (export ${provider.apiKeyEnv}=${example}), or put ${put}`)
  if (provider.wire._tag === "Anthropic") {
    return Effect.map(anthropicAdapter, ({ AnthropicError }) => new AnthropicError.AnthropicConfigError({ setting: "apiKey", message }))
  }
  if (provider.name === "deepseek" && !provider.custom) return Effect.succeed(new DeepSeekError.DeepSeekConfigError({ setting: "apiKey", message }))
  return Effect.succeed(new OpenAiError.OpenAiConfigError({ setting: "apiKey", message }))
}

/**
 * What the model Layer needs that the settings may lack, checked before any request: the API
 * key (none for a server that takes none), or the `LLM_CONFIG` failure saying how to set it
 * (the provider's variable and the config file's field); and a model, or `CONFIG_INVALID`
 * saying to pass `--model` when the provider lists none.
 *
 * @since 0.1.0
 * @category constructors
 */
export const apiKey = (settings: Settings): Effect.Effect<Redacted.Redacted<string> | undefined, MissingKeyError | ConfigInvalidError> => {
  const { provider } = settings
  if (settings.apiKey === undefined && provider.apiKeyRequired) return Effect.flatMap(missingKey(settings), Effect.fail)
  // a model given blank (a config file's " ") is that mistake, not a profile without models
  if (settings.model !== "" && settings.model.trim() === "") {
    return Effect.fail(
      new ConfigInvalidError({
        message: `${settings.configFile}: model: expected a model's name, got the blank string ${JSON.stringify(settings.model)}`,
        field: "model",
        source: settings.configFile
      })
    )
  }
  if (settings.model.trim() === "") {
    return Effect.fail(
      new ConfigInvalidError({
        message: `no model: the ${provider.name} profile lists no models, so dsh cannot choose one for ${provider.displayName}; ` +
          `pass --model <name> (or set DSH_MODEL, or put ${fileField(provider, "model", '"…"')} in ${settings.configFile})`,
        field: "model",
        source: "--model"
      })
    )
  }
  return Effect.succeed(settings.apiKey)
}
