/**
 * How the command ends: the exit statuses, and a failure in words — its catalog code, its
 * message and what to do about it — never a stack trace or a cause dump (`DSH_DEBUG=1` adds the
 * cause for a bug report).
 *
 * | status | meaning |
 * |---|---|
 * | 0 | the turn completed (`replay`: the session replays identically) |
 * | 1 | the turn ended with an error, or another failure (a session locked or corrupt, I/O); the code is printed |
 * | 2 | usage or configuration: a bad flag or argument (`CONFIG_INVALID`), no API key (`LLM_CONFIG`) |
 * | 3 | the turn stopped at a limit (`TURN_LIMIT`) |
 * | 4 | `replay`: the session does not replay identically (`REPLAY_MISMATCH` or another difference) |
 * | 5 | `--dev`: the session broke the event contract (`INVARIANT`) |
 * | 130 | the turn was aborted (Ctrl-C, SIGINT, SIGTERM, SIGHUP, a stdout that fails other than by its reader going away) |
 *
 * @since 0.1.0
 */
import { ErrorCode, HarnessError } from "@dsh/llm"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Io from "./Io.ts"

/**
 * The exit statuses (see the module's table).
 *
 * @since 0.1.0
 * @category constants
 */
export const Status = {
  ok: 0,
  error: 1,
  usage: 2,
  limit: 3,
  differs: 4,
  invariant: 5,
  aborted: 130
} as const

/**
 * @since 0.1.0
 * @category models
 */
export type Status = (typeof Status)[keyof typeof Status]

/**
 * The command ends with this status; whatever it had to say is said.
 *
 * @since 0.1.0
 * @category models
 */
export class Exit extends Data.TaggedError("DshExit")<{ readonly status: Status }> {}

/**
 * What the user is told about a failure.
 *
 * @since 0.1.0
 * @category models
 */
export interface Report {
  readonly code: string
  readonly message: string
  /** What to do about it, when there is something to say. */
  readonly hint: string | undefined
  readonly status: Status
}

/**
 * The provider, as a hint names it (the settings' provider is one).
 *
 * @since 0.1.0
 * @category models
 */
export interface ProviderHint {
  readonly name: string
  readonly displayName: string
  readonly wire: { readonly _tag: string }
  /** The variable holding the key, when it has one. */
  readonly apiKeyEnv: string | undefined
  /** The variable that may set the base URL, when it has one. */
  readonly baseUrlEnv: string | undefined
  /** The config file's section of its settings: `deepseek`, or `providers.<name>`. */
  readonly section: string
}

/**
 * What a hint may mention.
 *
 * @since 0.1.0
 * @category models
 */
export interface HintContext {
  readonly configFile?: string | undefined
  readonly baseUrl?: string | undefined
  readonly model?: string | undefined
  /** The provider; DeepSeek when absent. */
  readonly provider?: ProviderHint | undefined
}

const deepseek: ProviderHint = {
  name: "deepseek",
  displayName: "DeepSeek",
  wire: { _tag: "OpenAiCompat" },
  apiKeyEnv: "DEEPSEEK_API_KEY",
  baseUrlEnv: "DEEPSEEK_BASE_URL",
  section: "deepseek"
}

/** How the config file holds one of the provider's settings: `"deepseek": { "apiKey" }`. */
const fileField = (provider: ProviderHint, field: string): string =>
  provider.section === "deepseek" ? `"deepseek": { "${field}" }` : `"providers": { ${JSON.stringify(provider.name)}: { "${field}" } }`

const isLocal = (baseUrl: string | undefined): boolean => {
  if (baseUrl === undefined) return false
  try {
    const host = new URL(baseUrl).hostname
    return host === "localhost" || host === "127.0.0.1" || host === "[::1]" || host === "::1"
  } catch {
    return false
  }
}

const statusOfCode = (code: string): Status => {
  switch (code) {
    case "CONFIG_INVALID":
    case "LLM_CONFIG":
      return Status.usage
    case "TURN_LIMIT":
      return Status.limit
    case "REPLAY_MISMATCH":
      return Status.differs
    case "INVARIANT":
      return Status.invariant
    case "ABORTED":
      return Status.aborted
    default:
      return Status.error
  }
}

// What an adapter tells a program about its key (`pass apiKey: Redacted.make(key) to X.layer`):
// no advice for someone at the command line, whose hint says where the command reads the key.
const libraryAdvice = /\s*(?:Set the [A-Z0-9_]+ environment variable, or pass|Pass) `apiKey: Redacted\.make\(key\)` to [A-Za-z]+\.layer\.?/g

const withoutLibraryAdvice = (message: string): string => message.replace(libraryAdvice, "")

/** Where the command reads the provider's key. */
const keyHint = (context: HintContext): string => {
  const provider = context.provider ?? deepseek
  const inFile = `${fileField(provider, "apiKey")} in ${context.configFile ?? "the config file"}`
  return `check ${provider.apiKeyEnv === undefined ? inFile : `${provider.apiKeyEnv} (or ${inFile})`}`
}

const hintOf = (code: string, context: HintContext): string | undefined => {
  const config = context.configFile === undefined ? "the config file" : context.configFile
  const provider = context.provider ?? deepseek
  switch (code) {
    case "LLM_AUTH":
      return `the provider refused the API key: ${keyHint(context)}`
    case "LLM_RATE_LIMIT":
      return "the provider is throttling requests: wait a little and try again"
    case "LLM_SERVER":
      return "the provider failed on its side: try again later"
    case "LLM_TRANSPORT": {
      const running = isLocal(context.baseUrl) ? `is ${provider.displayName} running there? ` : ""
      const where = provider.baseUrlEnv ?? `${fileField(provider, "baseUrl")} in ${config}`
      return `the provider could not be reached${
        context.baseUrl === undefined ? "" : ` at ${context.baseUrl}`
      }: ${running}check the network, --base-url or ${where}`
    }
    case "LLM_INVALID_REQUEST":
      return `the provider refused the request${context.model === undefined ? "" : ` for ${context.model}`}: check --model`
    case "LLM_PROTOCOL":
      return `the provider's answer broke the protocol: try again; if it persists, check --base-url points at ${
        provider.wire._tag === "Anthropic" ? "Anthropic's Messages API" : "an OpenAI-compatible API"
      }`
    case "NO_MODEL":
      return "check --model"
    case "SESSION_LOCKED":
      return "another dsh process is writing this session: wait for it to end, or continue another session"
    case "CORRUPT_LOG":
      return "the session file is damaged at the line named: move the file aside to start afresh"
    case "PERSISTENCE":
      return "check that the sessions directory (--sessions, DSH_SESSIONS) is a directory dsh can write to (run and chat can also go on with --sessions memory)"
    case "TURN_LIMIT":
      return "the turn stopped at a guard before it answered: raise --max-steps, or ask for less at once"
    case "INVARIANT":
      return "the session log broke the event contract: a bug in dsh or a tool; please report it with the session file"
    case "DEFECT":
      return "a bug: please report it (DSH_DEBUG=1 prints the details)"
    default:
      return undefined
  }
}

/**
 * The report of a failure known by its code and message (an `error` event's).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromCode = (code: string, message: string, context: HintContext = {}): Report => ({
  code,
  message,
  hint: hintOf(code, context),
  status: statusOfCode(code)
})

/**
 * A failure (a typed error, a defect) in words, with its exit status.
 *
 * @since 0.1.0
 * @category constructors
 */
export const of = (failure: unknown, context: HintContext = {}): Report => {
  if (HarnessError.isHarnessError(failure)) {
    const code = ErrorCode.isErrorCode(failure.code) ? failure.code : "DEFECT"
    const message = code === "LLM_AUTH" || code === "LLM_CONFIG" ? withoutLibraryAdvice(failure.message) : failure.message
    const keySetting = code === "LLM_CONFIG" && (failure as { readonly setting?: unknown }).setting === "apiKey" && message !== failure.message
    return { code, message, hint: keySetting ? keyHint(context) : hintOf(code, context), status: statusOfCode(code) }
  }
  return { code: "DEFECT", message: HarnessError.describe(failure), hint: hintOf("DEFECT", context), status: Status.error }
}

/**
 * The report of a failed program's cause: its first typed failure, else its first defect; an
 * interruption alone is an abort.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ofCause = (cause: Cause.Cause<unknown>, context: HintContext = {}): Report => {
  const failure = cause.reasons.find(Cause.isFailReason)
  if (failure !== undefined) return of(failure.error, context)
  const defect = cause.reasons.find(Cause.isDieReason)
  if (defect !== undefined) return of(defect.defect, context)
  return { code: "ABORTED", message: "interrupted", hint: undefined, status: Status.aborted }
}

/**
 * The lines printed on stderr for a report: `dsh: CODE: message`, then the hint.
 *
 * @since 0.1.0
 * @category rendering
 */
export const render = (report: Report): string =>
  `dsh: ${report.code}: ${unindented(report.message)}\n` + (report.hint === undefined ? "" : `  ${report.hint}\n`)

/**
 * A message whose indented continuation lines (a Schema issue's `\n  at ["format"]`) are joined
 * to the line they continue, so that the report's only indented line is its hint and nothing
 * in it reads as a stack frame; lines of their own (a server's stderr) stay.
 *
 * @since 0.1.0
 * @category rendering
 */
export const unindented = (message: string): string => message.trimEnd().replace(/[ \t]*\r?\n[ \t]+/g, " ")

/**
 * Whether a value is an {@link Exit}.
 *
 * @since 0.1.0
 * @category guards
 */
export const isExit = (u: unknown): u is Exit => Predicate.isTagged(u, "DshExit")

/**
 * Reports the failure of `effect` on stderr (see {@link render}; `DSH_DEBUG=1` adds the cause)
 * and fails with the {@link Exit} its status says. An `Exit` passes through as it is.
 *
 * @since 0.1.0
 * @category reporting
 */
export const reported = (context: HintContext) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exit, R | Io.Io> =>
  Effect.catchCause(effect, (cause) =>
    Effect.gen(function*() {
      const exit = cause.reasons.find((reason) => Cause.isFailReason(reason) && isExit(reason.error))
      if (exit !== undefined && Cause.isFailReason(exit)) return yield* Effect.fail(exit.error as Exit)
      const report = ofCause(cause, context)
      const io = yield* Io.Io
      yield* io.err(render(report))
      if (process.env["DSH_DEBUG"] === "1") yield* io.err(`${Cause.pretty(cause)}\n`)
      return yield* Effect.fail(new Exit({ status: report.status }))
    }))
