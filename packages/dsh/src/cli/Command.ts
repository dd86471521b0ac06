/**
 * The `dsh` command tree, on `effect/cli`: `run`, `chat`, `resume`, `sessions list|show`,
 * `replay`. Each handler loads its module when it runs, so `dsh --help` (and a typo) costs the
 * command-line parser and no more; the agent stack is loaded by the commands that use it.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Argument, Command, Flag } from "effect/cli"
import type * as Config from "./Config.ts"

const toolSets = ["none", "coding"] as const

const optional = <A>(option: Option.Option<A>): A | undefined => Option.getOrUndefined(option)

// ---------------------------------------------------------------------------------------------
// flags

const config = Flag.String("config").pipe(
  Flag.withMetavar("file"),
  Flag.withDescription("The config file (JSON); default $XDG_CONFIG_HOME/dsh/config.json, or DSH_CONFIG"),
  Flag.optional
)

const sessions = Flag.String("sessions").pipe(
  Flag.withMetavar("dir|memory"),
  Flag.withDescription("Where sessions are kept (JSONL files), or memory; default $XDG_DATA_HOME/dsh/sessions, or DSH_SESSIONS"),
  Flag.optional
)

const provider = Flag.String("provider").pipe(
  Flag.withMetavar("name"),
  Flag.withDescription(
    "The provider: deepseek (the default), openai, anthropic, openrouter, ollama, vllm, llamacpp, lmstudio, " +
      "or a profile from the config file; or DSH_PROVIDER. The key is the provider's variable " +
      "(OPENAI_API_KEY, ANTHROPIC_API_KEY, …) or the config file's; local servers need none"
  ),
  Flag.optional
)

const model = Flag.String("model").pipe(
  Flag.withAlias("m"),
  Flag.withDescription(
    "The model; default the provider's first (deepseek-v4-flash, gpt-5.5, claude-opus-5-5; " +
      "openrouter and local servers list none: name one), or DSH_MODEL"
  ),
  Flag.optional
)

const baseUrl = Flag.String("base-url").pipe(
  Flag.withMetavar("url"),
  Flag.withDescription(
    "The provider's API; default the provider's (https://api.deepseek.com, http://localhost:11434/v1 for ollama, …), " +
      "or its variable (DEEPSEEK_BASE_URL, OPENAI_BASE_URL, ANTHROPIC_BASE_URL)"
  ),
  Flag.optional
)

const tools = Flag.Literals("tools", toolSets).pipe(
  Flag.withDescription("The agent's tools: coding (bash and file tools on the working directory, asking before writes and commands; the default), or none"),
  Flag.optional
)

const mcp = Flag.String("mcp").pipe(
  Flag.withMetavar("file"),
  Flag.withDescription("MCP servers to take tools from (a JSON file)"),
  Flag.optional
)

const maxSteps = Flag.Int("max-steps").pipe(
  Flag.withDescription("The most model requests a turn may make; default 50"),
  Flag.optional
)

const yes = Flag.Boolean("yes").pipe(
  Flag.withAlias("y"),
  Flag.withDescription("Approve every tool call the permission policy would ask about"),
  Flag.withDefault(false)
)

const dev = Flag.Boolean("dev").pipe(
  Flag.withDescription("Check the event contract on the live session; a violation ends the command (INVARIANT)"),
  Flag.withDefault(false)
)

const json = Flag.Boolean("json").pipe(
  Flag.withDescription("Machine-readable output: the session's events as JSON lines"),
  Flag.withDefault(false)
)

const listJson = Flag.Boolean("json").pipe(
  Flag.withDescription("Machine-readable output: the sessions as one JSON array"),
  Flag.withDefault(false)
)

const replayJson = Flag.Boolean("json").pipe(
  Flag.withDescription("Machine-readable output: the verdict as one JSON object"),
  Flag.withDefault(false)
)

const hideReasoning = Flag.Boolean("hide-reasoning").pipe(
  Flag.withDescription("Do not show the model's reasoning"),
  Flag.withDefault(false)
)

const agentFlags = { config, sessions, provider, model, baseUrl, tools, mcp, maxSteps, yes, dev }

interface AgentFlagValues {
  readonly config: Option.Option<string>
  readonly sessions: Option.Option<string>
  readonly provider: Option.Option<string>
  readonly model: Option.Option<string>
  readonly baseUrl: Option.Option<string>
  readonly tools: Option.Option<Config.ToolSet>
  readonly mcp: Option.Option<string>
  readonly maxSteps: Option.Option<number>
  readonly yes: boolean
  readonly dev: boolean
}

const agentSettings = (values: AgentFlagValues): Config.Flags => ({
  config: optional(values.config),
  sessions: optional(values.sessions),
  provider: optional(values.provider),
  model: optional(values.model),
  baseUrl: optional(values.baseUrl),
  tools: optional(values.tools),
  mcp: optional(values.mcp),
  maxSteps: optional(values.maxSteps),
  yes: values.yes,
  dev: values.dev
})

const env = (): Config.Environment => ({ ...process.env })

// ---------------------------------------------------------------------------------------------
// commands

const run = Command.make(
  "run",
  {
    prompt: Argument.String("prompt").pipe(
      Argument.withDescription("What to ask; without it, or as -, the prompt is read from stdin"),
      Argument.optional
    ),
    json,
    ...agentFlags
  },
  (input) =>
    Effect.flatMap(
      Effect.promise(() => import("./Run.ts")),
      (Run) => Run.command({ prompt: optional(input.prompt), json: input.json, flags: agentSettings(input) }, env())
    )
).pipe(
  Command.withDescription(
    "One turn, headless: the answer streams to stdout, tool activity and a usage summary to stderr. " +
      "The exit status says how the turn ended: 0 completed, 1 error, 2 usage or configuration, 3 limit, 5 the event contract broken (--dev), 130 aborted."
  ),
  Command.withShortDescription("One turn, headless"),
  Command.withExamples([
    { command: "dsh run \"What is a monad, in one sentence?\"", description: "Ask once" },
    { command: "git diff | dsh run -", description: "The prompt from stdin" },
    { command: "dsh run --json \"hi\" | jq -c .type", description: "The session's events as JSON lines" },
    { command: "dsh run --provider anthropic \"hi\"", description: "On Anthropic (ANTHROPIC_API_KEY)" },
    { command: "dsh run --provider ollama --model qwen3:8b \"hi\"", description: "On a local Ollama, no key" }
  ])
)

const chat = Command.make(
  "chat",
  { hideReasoning, ...agentFlags },
  (input) =>
    Effect.flatMap(
      Effect.promise(() => import("./Chat.ts")),
      (Chat) => Chat.command({ flags: { ...agentSettings(input), hideReasoning: input.hideReasoning }, resume: undefined }, env())
    )
).pipe(
  Command.withDescription(
    "An interactive session in the terminal. Ctrl-C aborts the running turn (twice at the prompt: exit). " +
      "A line typed during a turn is queued as the next message; one starting with >> steers the running turn. " +
      "Commands: /new, /sessions, /resume <id>, /compact, /usage, /help, /exit (or /quit)."
  ),
  Command.withShortDescription("An interactive session")
)

const resume = Command.make(
  "resume",
  {
    id: Argument.String("id").pipe(
      Argument.withDescription("The session (an id from dsh sessions list, or a unique prefix); default the latest"),
      Argument.optional
    ),
    prompt: Argument.String("prompt").pipe(
      Argument.withDescription("Run one headless turn with this prompt (- reads stdin) instead of chatting"),
      Argument.optional
    ),
    json,
    hideReasoning,
    ...agentFlags
  },
  (input) =>
    Effect.flatMap(
      Effect.promise(() => import("./Resume.ts")),
      (Resume) =>
        Resume.command({
          id: optional(input.id),
          prompt: optional(input.prompt),
          json: input.json,
          flags: { ...agentSettings(input), hideReasoning: input.hideReasoning }
        }, env())
    )
).pipe(
  Command.withDescription(
    "Continue a persisted session: in chat, or for one headless turn with a prompt. " +
      "The agent flags apply as to a new session (--provider and --model may differ from the recording's: the history is sent to the provider now chosen). " +
      "What resuming repaired (a torn last line, a turn a crash left open) is printed on stderr."
  ),
  Command.withShortDescription("Continue a session"),
  Command.withExamples([
    { command: "dsh resume", description: "Chat on in the latest session" },
    { command: "dsh resume 20261201-2344 \"and in French?\"", description: "One more headless turn" },
    { command: "dsh resume \"and in French?\"", description: "One more headless turn in the latest session (a lone prompt with a space)" }
  ])
)

const storeFlags = { config, sessions }

const list = Command.make(
  "list",
  { json: listJson, ...storeFlags },
  (input) =>
    Effect.flatMap(
      Effect.promise(() => import("./Sessions.ts")),
      (Sessions) => Sessions.list({ json: input.json, flags: { config: optional(input.config), sessions: optional(input.sessions) } }, env())
    )
).pipe(Command.withDescription("The persisted sessions, newest first"), Command.withAlias("ls"))

const show = Command.make(
  "show",
  {
    id: Argument.String("id").pipe(Argument.withDescription("The session (an id, or a unique prefix)")),
    json,
    ...storeFlags
  },
  (input) =>
    Effect.flatMap(
      Effect.promise(() => import("./Sessions.ts")),
      (Sessions) =>
        Sessions.show({ id: input.id, json: input.json, flags: { config: optional(input.config), sessions: optional(input.sessions) } }, env())
    )
).pipe(Command.withDescription("A session's conversation, rendered from its log (--json: its events)"))

const sessionsCommand = Command.make("sessions").pipe(
  Command.withSubcommands([list, show]),
  Command.withDescription("The persisted sessions: list them, show one")
)

const replay = Command.make(
  "replay",
  {
    file: Argument.String("file").pipe(
      Argument.withDescription("A session file (.jsonl), or the id of a session in the sessions directory")
    ),
    config,
    sessions,
    tools,
    mcp,
    yes,
    json: replayJson
  },
  (input) =>
    Effect.flatMap(
      Effect.promise(() => import("./Replay.ts")),
      (Replay) =>
        Replay.command({
          file: input.file,
          json: input.json,
          flags: {
            config: optional(input.config),
            sessions: optional(input.sessions),
            tools: optional(input.tools),
            mcp: optional(input.mcp),
            yes: input.yes
          }
        }, env())
    )
).pipe(
  Command.withDescription(
    "Re-run a recorded session against its own recording (the model answers from the file) with the current " +
      "tools and prompt; report the first difference (exit 4), or that it replays identically (exit 0)."
  ),
  Command.withShortDescription("Re-run a recorded session, report the first difference")
)

/**
 * The `dsh` command.
 *
 * @since 0.1.0
 * @category commands
 */
export const dsh = Command.make("dsh").pipe(
  Command.withSubcommands([run, chat, resume, sessionsCommand, replay]),
  Command.withDescription(
    "dsh: an Effect-native LLM agent in your terminal. The model is DeepSeek's by default (DEEPSEEK_API_KEY); " +
      "--provider picks OpenAI, Anthropic, OpenRouter, a local server (Ollama, vLLM, llama.cpp, LM Studio) " +
      "or an OpenAI-compatible profile of your own; sessions persist as JSONL files and can be resumed and replayed."
  )
)
