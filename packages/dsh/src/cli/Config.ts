/**
 * The `dsh` command's configuration: where each setting comes from and what it must be.
 *
 * Every setting is taken from the first of these that has it: a flag, then an environment
 * variable, then the config file (JSON, validated by {@link File}), then a default.
 *
 * | setting | flag | environment | config file | default |
 * |---|---|---|---|---|
 * | config file | `--config <file>` | `DSH_CONFIG` | | `$XDG_CONFIG_HOME/dsh/config.json` (`~/.config/dsh/config.json`) |
 * | model | `--model <name>` | `DSH_MODEL` | `model` | `deepseek-v4-flash` |
 * | base URL | `--base-url <url>` | `DEEPSEEK_BASE_URL` | `deepseek.baseUrl` | `https://api.deepseek.com` |
 * | API key | | `DEEPSEEK_API_KEY` | `deepseek.apiKey` | none: `LLM_CONFIG` |
 * | sessions | `--sessions <dir>\|memory` | `DSH_SESSIONS` | `sessions` | `$XDG_DATA_HOME/dsh/sessions` (`~/.local/share/dsh/sessions`) |
 * | tools | `--tools none\|coding` | | `tools` | `coding` |
 * | MCP servers | `--mcp <file>` | | `mcp` | none |
 * | max steps | `--max-steps <n>` | | `maxSteps` | 50 |
 * | reasoning | `--hide-reasoning` | | `reasoning` (`show`\|`hide`) | `show` |
 *
 * A config file named by `--config` or `DSH_CONFIG` must exist; the default one may not. A
 * value that is not what its setting expects is a {@link ConfigInvalidError} naming the field,
 * where the value came from and what was expected.
 *
 * @since 0.1.0
 */
import { DeepSeek, DeepSeekError } from "@dsh/deepseek"
import { Effect, FileSystem, Option, Redacted, Result, Schema, SchemaIssue } from "effect"
import { homedir } from "node:os"
import { isAbsolute, join, resolve as resolvePath } from "node:path"
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
 * The config file: a JSON object; every key optional, no other key allowed (a misspelt key is
 * an error, not a setting silently ignored).
 *
 * @example
 * ```json
 * {
 *   "model": "deepseek-v4-pro",
 *   "sessions": "~/notes/dsh-sessions",
 *   "deepseek": { "apiKey": "sk-…", "thinking": true }
 * }
 * ```
 *
 * @since 0.1.0
 * @category schemas
 */
export const File = Schema.Struct({
  /** The model every agent runs on. */
  model: Schema.optionalKey(Schema.NonEmptyString),
  /** Where sessions are kept: a directory (`~` is the home directory), or `"memory"`. */
  sessions: Schema.optionalKey(Schema.NonEmptyString),
  tools: Schema.optionalKey(Schema.Literals(toolSets)),
  /** An MCP servers file. */
  mcp: Schema.optionalKey(Schema.NonEmptyString),
  /** The most steps a turn may take. */
  maxSteps: Schema.optionalKey(PositiveInt),
  /** Whether `dsh chat` shows the model's reasoning. */
  reasoning: Schema.optionalKey(Schema.Literals(["show", "hide"])),
  /** The agent's prompt, in place of the built-in one. */
  prompt: Schema.optionalKey(Schema.String),
  deepseek: Schema.optionalKey(Schema.Struct({
    apiKey: Schema.optionalKey(Schema.NonEmptyString),
    baseUrl: Schema.optionalKey(Schema.NonEmptyString),
    thinking: Schema.optionalKey(Schema.Boolean),
    reasoningEffort: Schema.optionalKey(Schema.Literals(["high", "max"])),
    /** How often a request that failed before its answer began is sent again (2 by default). */
    retries: Schema.optionalKey(NonNegativeInt)
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
 * The resolved configuration.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  /** The config file read, if one was. */
  readonly configFile: string
  readonly configFound: boolean
  readonly model: string
  /** Without a trailing slash. */
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string> | undefined
  readonly thinking: boolean | undefined
  readonly reasoningEffort: "high" | "max" | undefined
  readonly retries: number | undefined
  readonly sessions: Sessions
  readonly tools: ToolSet
  readonly mcp: string | undefined
  readonly maxSteps: number | undefined
  readonly showReasoning: boolean
  /** Approve every tool call the permission policy would ask about. */
  readonly yes: boolean
  /** Check the event contract on the live session. */
  readonly dev: boolean
  readonly prompt: string
}

/**
 * The model when nothing names one.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultModel = "deepseek-v4-flash"

/**
 * The agent's prompt when the config file has none.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultPrompt = "You are dsh, an assistant working in the user's terminal. Answer concisely. " +
  "When you have tools, use them to look things up rather than guessing, and say what you did."

const home = (env: Environment): string => env["HOME"] ?? homedir()

/**
 * The config file when neither `--config` nor `DSH_CONFIG` names one.
 *
 * @since 0.1.0
 * @category paths
 */
export const defaultConfigFile = (env: Environment): string =>
  join(nonEmpty(env["XDG_CONFIG_HOME"]) ?? join(home(env), ".config"), "dsh", "config.json")

/**
 * The sessions directory when nothing names one.
 *
 * @since 0.1.0
 * @category paths
 */
export const defaultSessionsDirectory = (env: Environment): string =>
  join(nonEmpty(env["XDG_DATA_HOME"]) ?? join(home(env), ".local", "share"), "dsh", "sessions")

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : value

/** A path as the user wrote it: `~` is the home directory, a relative path is from the working directory. */
const expand = (path: string, env: Environment): string =>
  path === "~" ? home(env) : path.startsWith("~/") ? join(home(env), path.slice(2)) : isAbsolute(path) ? path : resolvePath(path)

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
      message: `${source} is invalid: ${lines.join("; ")} (see \`dsh --help\` and the dsh README for the fields)`,
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
    const named = nonEmpty(flags.config) === undefined
      ? nonEmpty(env["DSH_CONFIG"]) === undefined ? undefined : { path: env["DSH_CONFIG"]!, source: "DSH_CONFIG" }
      : { path: flags.config!, source: "--config" }
    const path = named === undefined ? defaultConfigFile(env) : expand(named.path, env)
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(path).pipe(Effect.option)
    if (Option.isNone(text)) {
      if (named === undefined) return { path, found: false, file: {} }
      return yield* new ConfigInvalidError({
        message: `${named.source}: the config file ${path} cannot be read (it does not exist, or is not a readable file)`,
        field: "config",
        source: named.source
      })
    }
    const file = yield* Effect.fromResult(decodeFile(text.value, path))
    return { path, found: true, file }
  })

// ---------------------------------------------------------------------------------------------
// resolution

interface Sourced<A> {
  readonly value: A
  readonly source: string
}

const first = <A>(...candidates: ReadonlyArray<Sourced<A | undefined>>): Sourced<A> | undefined => {
  for (const candidate of candidates) if (candidate.value !== undefined) return candidate as Sourced<A>
  return undefined
}

const checkBaseUrl = (candidate: Sourced<string>): Result.Result<string, ConfigInvalidError> => {
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
        message: `${candidate.source}: expected an http(s) URL such as ${DeepSeek.defaultBaseUrl}, got ${JSON.stringify(candidate.value)}`,
        field: "deepseek.baseUrl",
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
  return Result.succeed(value === "memory" ? "memory" : { directory: expand(value, env) })
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
): Result.Result<Settings, ConfigInvalidError> =>
  Result.gen(function*() {
    const file = config.file
    const inFile = (field: string) => `${config.path} (${field})`
    const baseUrl = first<string>(
      { value: nonEmpty(flags.baseUrl), source: "--base-url" },
      { value: nonEmpty(env["DEEPSEEK_BASE_URL"]), source: "DEEPSEEK_BASE_URL" },
      { value: file.deepseek?.baseUrl, source: inFile("deepseek.baseUrl") }
    )
    const sessions = first<string>(
      { value: flags.sessions, source: "--sessions" },
      { value: nonEmpty(env["DSH_SESSIONS"]), source: "DSH_SESSIONS" },
      { value: file.sessions, source: inFile("sessions") }
    )
    const apiKey = nonEmpty(env["DEEPSEEK_API_KEY"]) ?? file.deepseek?.apiKey
    return {
      configFile: config.path,
      configFound: config.found,
      model: nonEmpty(flags.model) ?? nonEmpty(env["DSH_MODEL"]) ?? file.model ?? defaultModel,
      baseUrl: baseUrl === undefined ? DeepSeek.defaultBaseUrl : yield* checkBaseUrl(baseUrl),
      apiKey: apiKey === undefined ? undefined : Redacted.make(apiKey),
      thinking: file.deepseek?.thinking,
      reasoningEffort: file.deepseek?.reasoningEffort,
      retries: file.deepseek?.retries,
      sessions: sessions === undefined ? { directory: defaultSessionsDirectory(env) } : yield* resolveSessions(sessions, env),
      tools: flags.tools ?? file.tools ?? "coding",
      mcp: flags.mcp ?? (file.mcp === undefined ? undefined : expand(file.mcp, env)),
      maxSteps: (yield* checkMaxSteps(flags.maxSteps)) ?? file.maxSteps,
      showReasoning: flags.hideReasoning === true ? false : file.reasoning !== "hide",
      yes: flags.yes === true,
      dev: flags.dev === true,
      prompt: file.prompt ?? defaultPrompt
    }
  })

/**
 * Reads the config file and resolves the settings.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load = (flags: Flags, env: Environment): Effect.Effect<Settings, ConfigInvalidError, FileSystem.FileSystem> =>
  Effect.flatMap(readFile(flags, env), (config) => Effect.fromResult(resolve(flags, env, config)))

/**
 * The API key, or the `LLM_CONFIG` failure saying how to set one.
 *
 * @since 0.1.0
 * @category constructors
 */
export const apiKey = (settings: Settings): Effect.Effect<Redacted.Redacted<string>, DeepSeekError.DeepSeekConfigError> =>
  settings.apiKey !== undefined ? Effect.succeed(settings.apiKey) : Effect.fail(
    new DeepSeekError.DeepSeekConfigError({
      setting: "apiKey",
      message: `No DeepSeek API key is configured. Set the DEEPSEEK_API_KEY environment variable ` +
        `(export DEEPSEEK_API_KEY=sk-…), or put "deepseek": { "apiKey": "sk-…" } in ${settings.configFile}`
    })
  )
