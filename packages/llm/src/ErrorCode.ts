/**
 * The catalog of stable error codes. A code is public API: tool results, session `error`
 * events and retry/sandbox layers match on it, so a code is never renamed or reused.
 * `docs/errors.md` renders this table and a test keeps the two identical.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * Every code with its meaning and the package that raises it.
 *
 * @since 0.1.0
 * @category catalog
 */
export const catalog = {
  LLM_AUTH: {
    meaning: "The provider rejected the credentials (HTTP 401/403), or the account cannot pay for the request (HTTP 402, an exhausted quota or billing error); a missing key is LLM_CONFIG, at the Layer's build.",
    raisedBy: "@dsh/llm (LlmAuthError), raised by model adapters"
  },
  LLM_RATE_LIMIT: {
    meaning: "The provider throttled the request (HTTP 429); `retryAfterMillis` says when to retry, if known.",
    raisedBy: "@dsh/llm (LlmRateLimitError), raised by model adapters"
  },
  LLM_INVALID_REQUEST: {
    meaning: "The provider refused the request (HTTP 400, 404, 413, 422 or another 4xx that is not auth, throttling or a context overflow): malformed, an unknown model or endpoint, too large; the message carries the provider's reason.",
    raisedBy: "@dsh/llm (LlmInvalidRequestError), raised by model adapters"
  },
  LLM_CONTEXT_OVERFLOW: {
    meaning: "The request did not fit the model's context window (the provider said the context length was exceeded); the loop compacts the history and retries the step once, then ends the turn with this code.",
    raisedBy: "@dsh/llm (LlmContextOverflowError), raised by model adapters"
  },
  LLM_SERVER: {
    meaning: "The provider failed on its side (HTTP 5xx or an error event in the stream).",
    raisedBy: "@dsh/llm (LlmServerError), raised by model adapters"
  },
  LLM_PROTOCOL: {
    meaning: "The response broke the wire or chunk protocol: malformed SSE or JSON, a stream cut short, chunks out of order.",
    raisedBy: "@dsh/llm (LlmProtocolError), raised by model adapters and by Model.generate for a stream without finish"
  },
  LLM_TRANSPORT: {
    meaning: "The connection failed or stalled before the response completed (network error, idle timeout).",
    raisedBy: "@dsh/llm (LlmTransportError), raised by model adapters"
  },
  NO_MODEL: {
    meaning: "No registered adapter serves the requested model name; the message lists the models that are registered.",
    raisedBy: "@dsh/model (NoModelError), raised by the model registry"
  },
  MODEL_CONFLICT: {
    meaning: "An adapter claimed a model name that another registered adapter already serves.",
    raisedBy: "@dsh/model (ModelConflictError), raised by the model registry"
  },
  MIDDLEWARE: {
    meaning: "A middleware (around any seam: requests, step results, continuation, listeners, prompt assembly, model calls, tool execution) threw, returned no Effect or Stream, or its Effect or Stream died; the message names the middleware and what went wrong. (Around most seams a middleware's typed failure passes on with its own code; around tool execution a middleware answers with a tool result, whose code it keeps, and one whose Effect fails is MIDDLEWARE.)",
    raisedBy: "@dsh/llm (MiddlewareError), raised by middleware chains"
  },
  INVALID_ARGS: {
    meaning: "A tool call's arguments are not JSON, or do not decode through the tool's parameter Schema; the message lists every violation with its path (the first 25, then how many more; the error's violations hold them all).",
    raisedBy: "@dsh/tools (ToolArgsError), raised by the tool registry before the tool body runs"
  },
  UNKNOWN_TOOL: {
    meaning: "The model called a tool that is not registered; the message names the tools that are.",
    raisedBy: "@dsh/tools (UnknownToolError), raised by the tool registry"
  },
  TOOL_FAILED: {
    meaning: "A tool failed without a catalog code of its own: its body died (threw an exception or hit a defect), failed with an error of no or a foreign code, returned something that is neither text nor content blocks, or the call itself was malformed; also the code of an application's own tool errors made with HarnessError.fields(`TOOL_FAILED`). The message carries the exception's message, never its stack.",
    raisedBy: "@dsh/tools (ToolFailedError), raised by the tool registry"
  },
  TOOL_DENIED: {
    meaning: "A middleware (permissions, sandbox, plan mode) refused to run the call; the message says why.",
    raisedBy: "@dsh/tools (ToolDeniedError), raised by execution middleware"
  },
  TOOL_TIMEOUT: {
    meaning: "A tool call ran longer than its timeout and was interrupted.",
    raisedBy: "@dsh/tools (ToolTimeoutError), raised by the tool registry"
  },
  ABORTED: {
    meaning: "The work was interrupted before it finished (an abort, a disposal, or the tool interrupting itself).",
    raisedBy: "@dsh/tools (AbortedError), raised by the tool registry and by the loop for calls it never finished; @dsh/agent (TurnAbortedError), raised by agent.run for a turn that was aborted"
  },
  TOOL_OUTCOME_UNKNOWN: {
    meaning: "A tool call was running when the process that ran it ended (a crash); resuming the session answered it with this code because whether the tool's effect happened is unknown.",
    raisedBy: "@dsh/session (ToolOutcomeUnknownError), raised when a session is resumed with an interrupted turn"
  },
  INVALID_TOOL: {
    meaning: "A tool definition was refused at registration: its name does not match ^[a-zA-Z0-9_-]{1,64}$ or its parameters are not an object schema, or hold a type JSON cannot carry (a Schema.declare without toCodecJson), or its timeout is no duration above zero, or the scope it is registered into is closed already, or a capability's options cannot make its tools (Files.layer naming each option); an agent.run output Schema is refused the same way.",
    raisedBy: "@dsh/tools (InvalidToolError), raised by the tool registry"
  },
  DUPLICATE_TOOL: {
    meaning: "A tool was registered under a name that is already registered.",
    raisedBy: "@dsh/tools (DuplicateToolError), raised by the tool registry"
  },
  FILE_NOT_FOUND: {
    meaning: "A file tool's path does not exist (ENOENT); the message names the path as the model gave it.",
    raisedBy: "@dsh/files (FileNotFoundError), raised by the file tools"
  },
  FILE_IO: {
    meaning: "A file operation failed in the file system (EACCES, EISDIR, ENOSPC, …); the message carries the system's code and the path.",
    raisedBy: "@dsh/files (FileIoError), raised by the file tools"
  },
  FILE_BINARY: {
    meaning: "A read or an edit refused a binary file (it holds NUL bytes or is not valid UTF-8); the message says so and gives its size.",
    raisedBy: "@dsh/files (FileBinaryError), raised by the read and edit tools"
  },
  FILE_TOO_LARGE: {
    meaning: "A file is larger than the tool's size cap; the message gives the size and how to read it in ranges.",
    raisedBy: "@dsh/files (FileTooLargeError), raised by the file tools"
  },
  EDIT_NOT_FOUND: {
    meaning: "An edit's old text does not occur in the file; the message says so, with the closest line if there is one.",
    raisedBy: "@dsh/files (EditNotFoundError), raised by the edit tool"
  },
  EDIT_AMBIGUOUS: {
    meaning: "An edit's old text occurs more than once; the message gives the count and the lines, so more context can make it unique.",
    raisedBy: "@dsh/files (EditAmbiguousError), raised by the edit tool"
  },
  COMMAND_FAILED: {
    meaning: "A shell command could not be started or watched (no shell, a working directory that does not exist, a spawn error); a non-zero exit is not this but a result.",
    raisedBy: "@dsh/bash (CommandFailedError), raised by the bash capability"
  },
  JOB_NOT_FOUND: {
    meaning: "A background job id that no running or finished job of this agent has.",
    raisedBy: "@dsh/bash (JobNotFoundError), raised by the background-job tools"
  },
  MCP_CONNECT: {
    meaning: "An MCP server could not be started or reached (a command that fails, a URL that refuses, a handshake that fails).",
    raisedBy: "@dsh/mcp (McpConnectError), raised by the MCP capability"
  },
  MCP_PROTOCOL: {
    meaning: "An MCP server broke the protocol (a malformed message, a result that does not decode).",
    raisedBy: "@dsh/mcp (McpProtocolError), raised by the MCP capability"
  },
  MCP_SERVER: {
    meaning: "An MCP server failed a call (a JSON-RPC error, an HTTP error status, or its tool reported an error with isError) or died during it; a server that died is started again on its next call.",
    raisedBy: "@dsh/mcp (McpServerError, McpToolError for a tool that reported an error), raised by the MCP capability"
  },
  CONFIG_INVALID: {
    meaning: "The dsh command's configuration (its config file, a flag or an environment variable) is invalid, or a cluster runner or client Layer was given options past their types (a port out of range, a sharding setting that is no duration or count); the message names the field and what was expected.",
    raisedBy: "dsh (ConfigInvalidError), raised by the dsh command; @dsh/cluster (ClusterConfigError), raised when ClusterRunner.layer or ClusterClient.layer is built"
  },
  POLICY_INVALID: {
    meaning: "A permission policy was built from bad rules (an unknown key or decision, a rule naming no tool, a pattern that can never match); the message gives each rule's index, the field and what is wrong.",
    raisedBy: "@dsh/permissions (PolicyInvalidError), raised when a permission policy is built"
  },
  SESSION_EXISTS: {
    meaning: "A session was created with an id that the store already holds, or that its persistence holds (a JSONL file, a PostgreSQL row) while not resuming it; or an open session was resumed.",
    raisedBy: "@dsh/session (SessionExistsError), raised by the session store, JsonlSessions and PgSessions"
  },
  SESSION_LOCKED: {
    meaning: "A session already has a writer: another process holds its file's lock or its PostgreSQL writer lock, another writer wrote the same seq first, or another agent drives it; the message names the holder.",
    raisedBy: "@dsh/session (SessionLockedError), raised by JsonlSessions, by PgSessions (@dsh/sql-sessions) and by Agents.create"
  },
  PERSISTENCE: {
    meaning:
      "A session could not be persisted or read: a flush hook failed (I/O error, unencodable event), which the agent reports and goes on; or a stored session could not be loaded, listed or resumed (no such session, a file or database that cannot be read, a store that cannot be reached).",
    raisedBy: "@dsh/session (PersistenceError), raised by the flush checkpoint and persistence layers"
  },
  CORRUPT_LOG: {
    meaning: "A persisted session log has a malformed line (not JSON, not a known event, wrong header) other than a torn last line, or a PostgreSQL row that does not decode; the message names the file and line (for PostgreSQL the table, the session and the seq).",
    raisedBy: "@dsh/session (CorruptLogError), raised when loading a persisted session"
  },
  PROMPT_SECTION: {
    meaning: "A system-prompt section computed by an Effect failed or died, or its content was neither a string nor an Effect of one; the message names the section.",
    raisedBy: "@dsh/prompt (PromptSectionError), raised by the system prompt assembly"
  },
  INVALID_SESSION: {
    meaning: "A session was not created: its options are out of their range (an id that is no string, empty or only white space, a createdAt that is no integer of epoch milliseconds, a seed that is no log counting seq from 0 with no gap, or holding an event its type's Schema refuses), or an id JSONL persistence cannot make a file name of (too long); the message names each, a seed event by its index and the path of what is wrong.",
    raisedBy: "@dsh/session (InvalidSessionError), raised by SessionStore.create (and its admission: JsonlSessions refuses an id too long for a file name)"
  },
  INVALID_EVENT: {
    meaning: "An extension event's data does not fit its definition's Schema (a refinement the types cannot see: an Int given 1.5); nothing was appended, and the message lists every violation with its path.",
    raisedBy: "@dsh/session (InvalidEventError), raised by session.append(definition, data)"
  },
  SESSION_CLOSED: {
    meaning: "An event was appended to a session that is closed (its scope ended, its agent was disposed): nothing was appended; a closed session takes no more events (resume it from its store, or start one from its events).",
    raisedBy: "@dsh/session (SessionClosedError), raised by session.append: an extension event's append fails with it, a core event's dies with it"
  },
  INVALID_INPUT: {
    meaning: "A message given to an agent (send, steer, inject) is neither text nor valid content blocks; nothing was queued or logged, and the message says what is wrong where.",
    raisedBy: "@dsh/agent (InvalidInputError), raised by the agent handle"
  },
  TURN_LIMIT: {
    meaning: "A turn stopped at a guard before it answered (max-steps, or repeated invalid arguments for one tool); `agent.run` fails with it, naming the limit.",
    raisedBy: "@dsh/agent (TurnLimitError), raised by agent.run"
  },
  INVALID_OUTPUT: {
    meaning: "The model's answer never decoded through the run's output Schema within the retry budget (or the turn ended without an answer); the message gives the last violations.",
    raisedBy: "@dsh/agent (InvalidOutputError), raised by agent.run"
  },
  AGENT_DISPOSED: {
    meaning: "A message was sent to an agent whose scope has closed; it takes nothing more.",
    raisedBy: "@dsh/agent (AgentDisposedError), raised by the agent handle"
  },
  DEFECT: {
    meaning: "Something inside a turn died with an exception that is not a harness error (a bug); the turn ended with an error event and the agent went on.",
    raisedBy: "@dsh/agent (TurnDefectError), raised by the loop's containment"
  },
  INVARIANT: {
    meaning: "A session log broke the event contract (docs/event-contract.md); the message names the rule, the session, the event's seq and type.",
    raisedBy: "@dsh/invariants (InvariantError), raised by the invariants checker in tests and demos"
  },
  LLM_CONFIG: {
    meaning: "A model adapter's Layer was built without a required setting (an API key) or with an invalid one (a malformed base URL); the message says how to set it.",
    raisedBy: "@dsh/openai (OpenAiConfigError), @dsh/anthropic (AnthropicConfigError), @dsh/deepseek (DeepSeekConfigError), @dsh/effect-ai (EffectAiConfigError), @dsh/model (AdapterConfigError: ModelRegistry.register given no adapter, the scripted model's options; also @dsh/testing's replay model), raised when the adapter's Layer is built"
  },
  REPLAY_MISMATCH: {
    meaning: "A replayed model request differs from the recorded session (model, system prompt, tools, settings or derived messages), or goes past the recording; the message names the request, the recorded step and the first difference with expected and actual previews.",
    raisedBy: "@dsh/testing (ReplayMismatchError), raised by the replay model as a defect of its stream"
  },
  SCRIPT_EXHAUSTED: {
    meaning: "The scripted test model received more requests than it was scripted to answer.",
    raisedBy: "@dsh/model (ScriptExhaustedError), raised by the scripted model as a defect of its stream (a test's script is wrong)"
  },
  TURN_INTERRUPTED: {
    meaning: "A one-call turn sent to an agent on Effect Cluster was taken by a turn that ended before its answer reached the caller (its runner died mid-turn and the turn was closed on resume, or the agent was moved or disposed); the message is in the session log once, `turn` and `reason` say how that turn ended. Send a new message to continue.",
    raisedBy: "@dsh/cluster (TurnInterruptedError), raised by the agent entity's Run"
  },
  SCOPE_CLOSED: {
    meaning: "Something was registered into a scope that is closed already (an Effect.scoped that has ended, a disposed agent's scope): a middleware of any seam, a prompt section, a flush hook, a model adapter; the closed scope would unregister it at once, so nothing was registered. The message names the registration. (A tool registered so fails with INVALID_TOOL, reason \"scope\".)",
    raisedBy: "@dsh/llm (ScopeClosedError), raised by scoped registrations: middleware chains, the system prompt, the flush checkpoint, the model registry"
  }
} as const

/**
 * A stable error code.
 *
 * @since 0.1.0
 * @category models
 */
export type ErrorCode = keyof typeof catalog

/**
 * All codes, in catalog order.
 *
 * @since 0.1.0
 * @category catalog
 */
export const codes: ReadonlyArray<ErrorCode> = Object.keys(catalog) as Array<ErrorCode>

/**
 * Whether a string is a code of the catalog.
 *
 * @since 0.1.0
 * @category guards
 */
export const isErrorCode = (code: unknown): code is ErrorCode => typeof code === "string" && Object.hasOwn(catalog, code)

/**
 * Schema of a stable error code.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorCode = Schema.Literals(codes as [ErrorCode, ...Array<ErrorCode>])
