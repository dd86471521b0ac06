/**
 * The loop: the one concrete driver of agents, provided as the implementation of
 * `@dsh/agent`'s `Agents` service. Only an application's composition root imports it.
 *
 * Per agent, one driver fiber runs turns, following the design brief:
 *
 * ```
 * forever:
 *   wait for queued messages                              status → running
 *   turn/start, then the queued messages as user/message
 *   steps:
 *     steering queued so far → steering/message
 *     step/start
 *     system prompt assembly (sections + tool schemas)   ← assembly middleware
 *     request = derived history + options                 ← request middleware
 *     stream the model; each chunk → assistant/chunk; assemble
 *     finish error/aborted → the step fails
 *     message                                             ← step-result middleware (before logging)
 *     calls given distinct ids; assistant/message, usage
 *     each tool call: tool/call → registry (tool middleware) → tool/result,
 *       consecutive concurrency-safe calls in parallel, results in call order
 *     steering queued meanwhile → steering/message; step/end
 *     continue? (tools were called, or steered)           ← continuation middleware
 *   turn/end; flush checkpoint (a failure is reported, not fatal)
 *   steering left over → queued messages;  status → idle unless more is queued
 * ```
 *
 * The machinery is a flat set of small units in `internal/`, each over explicit state
 * (`internal/state.ts`): the handle and disposal (`agent.ts`), the driver (`driver.ts`), a turn
 * and its supervision (`turn.ts`), a step (`step.ts`), tool dispatch (`tools.ts`), call ids
 * (`calls.ts`), logging and listeners (`events.ts`), bounded waits (`bounded.ts`), failure
 * descriptions (`failure.ts`) and what is read back from a seeded log (`history.ts`). Closing a
 * step or a turn is computed from the log itself (`Closing` of `@dsh/session`). ADR 0015
 * records the shape.
 *
 * Containment: whatever fails inside a turn (a middleware, the model in either sanctioned
 * way, a listener, a prompt section, a defect) is logged as an `error` event with a catalog
 * code and ends the turn with reason `error`; the agent serves the next message. Where nothing
 * is left to fail (a status change, injected context, a turn's closing events) a listener's
 * failure is recorded as an `error` event and never propagates. Whenever a step ends after the
 * model asked for tools (abort, error, disposal) every call of the logged message gets exactly
 * one `tool/call` and one `tool/result` (an `ABORTED` one if it never finished), so the derived
 * history is always valid for a provider and the invariants hold.
 *
 * Abort (and disposal) are prompt: the turn's work is interrupted and given `abortGrace` to
 * stop; whatever still runs then (an uninterruptible tool body, a stalled flush) is detached and
 * its late results are dropped with a log line, never logged in the session.
 *
 * Tracing: spans `Agent.turn` and `Agent.step` (and, inside a step, the model call, the prompt
 * assembly and the tool calls) carry `dsh.session`, `dsh.agent`, `dsh.turn` and `dsh.step`; a
 * failed step and a turn that ended with an error carry `dsh.error_code`, a turn its
 * `dsh.turn.end` reason.
 *
 * @since 0.1.0
 */
import { Agent, Agents, AgentHooks, InvalidInputError } from "@dsh/agent"
import { AdapterSettings, HarnessError, Ids } from "@dsh/llm"
import { Model, ModelRegistry } from "@dsh/model"
import { SystemPrompt } from "@dsh/prompt"
import { Closing, Compaction, FlushCheckpoint, Session, SessionErrors, SessionStore } from "@dsh/session"
import { ToolRegistry } from "@dsh/tools"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { dispose, makeHandle, makeState } from "./internal/agent.ts"
import { budgetOf, problemsOf as compactionProblems } from "./internal/compaction.ts"
import { driver, setStatus } from "./internal/driver.ts"
import { forkable, lastSettingsOf, lastTurnOf } from "./internal/history.ts"
import { type Env, InsideAgents } from "./internal/state.ts"

const DEFAULT_MAX_INVALID_ARGS = 3
const DEFAULT_ABORT_GRACE = Duration.seconds(2)

type CreateError = SessionErrors.SessionExistsError | SessionErrors.SessionLockedError | InvalidInputError

/**
 * The loop as the `Agents` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<
  Agents,
  never,
  Model | SessionStore | FlushCheckpoint | ToolRegistry | SystemPrompt | AgentHooks
> = Layer.effect(
  Agents,
  Effect.gen(function*() {
    const services = {
      model: yield* Model,
      checkpoint: yield* FlushCheckpoint,
      registry: yield* ToolRegistry,
      prompt: yield* SystemPrompt,
      hooks: yield* AgentHooks
    }
    // the context windows of the models it serves, when there is one (a Model may be composed without)
    const registry = Option.getOrUndefined(yield* Effect.serviceOption(ModelRegistry))
    const store = yield* SessionStore
    // the agent driving each session: a session has one writer
    const drivers = new WeakMap<Session.Session, string>()

    const create = (options: Agent.Options): Effect.Effect<Agent.Agent, CreateError, Scope.Scope> =>
      Effect.gen(function*() {
        const agentId = Ids.agentId(typeof options?.id === "string" && options.id !== "" ? options.id : crypto.randomUUID())
        yield* checkOptions(agentId, options)
        const session = yield* sessionFor(store, options.session ?? {}, agentId)
        yield* claim(drivers, session, agentId)
        // a log that ends inside a turn (a crash) is closed under the contract before serving
        if (Closing.openTurn(yield* session.events) !== undefined) yield* Closing.closeInterrupted(session)
        const logged = yield* session.events
        const env: Env = {
          ...services,
          session,
          agentId,
          options,
          maxSteps: options.maxSteps ?? Agent.defaultMaxSteps,
          maxInvalidArgs: options.maxInvalidArgs ?? DEFAULT_MAX_INVALID_ARGS,
          abortGrace: options.abortGrace === undefined ? DEFAULT_ABORT_GRACE : Duration.fromInputUnsafe(options.abortGrace),
          agentScope: yield* Effect.scope,
          budget: budgetOf(options, registry === undefined ? Option.none() : yield* registry.info(options.model))
        }
        const state = yield* makeState(lastTurnOf(logged), lastSettingsOf(logged), Compaction.lastSummary(logged)?.through ?? -1)
        yield* setStatus(env, state, "idle")
        const outer = yield* InsideAgents
        const fiber = yield* Effect.forkDetach(
          driver(env, state).pipe(Effect.provideService(InsideAgents, new Set([...outer, agentId])))
        )
        yield* Effect.addFinalizer(() => dispose(env, state, fiber))
        state.handle = makeHandle(env, state)
        return state.handle
      })

    return Agents.of({ create })
  })
)

const optionNames: ReadonlyArray<keyof Agent.Options> = [
  "model", "id", "prompt", "session", "maxSteps", "maxInvalidArgs", "abortGrace", "temperature", "maxTokens", "providerOptions", "compaction"
]

const sessionSourceNames = ["id", "seed", "fork", "through", "resume"]

const isProviderOptions = Schema.is(Schema.Record(Schema.String, Schema.Json))

// a value in a message: text quoted, so that "5" and "" read as the strings they are
const shown = (value: unknown): string => (typeof value === "string" ? JSON.stringify(value) : HarnessError.describe(value))

/** Refuses options out of their ranges, naming each (a mistake there is found at creation, not mid-session). */
const checkOptions = (agentId: string, options: Agent.Options): Effect.Effect<void, InvalidInputError> => {
  if (!isRecord(options)) {
    return Effect.fail(new InvalidInputError({ message: `an agent was not created: its options must be an object, got ${shown(options)}`, agentId }))
  }
  const problems: Array<string> = []
  const count = (name: string, value: unknown, min: number) => {
    if (value !== undefined && !(Number.isSafeInteger(value) && (value as number) >= min)) {
      problems.push(`${name} must be an integer ≥ ${min}, got ${shown(value)}`)
    }
  }
  // a misspelt `maxStep` would otherwise be dropped without a word, its default kept
  const unknown = AdapterSettings.unknownKeys("the options object", options, optionNames)
  if (unknown !== undefined) problems.push(unknown)
  if (typeof options.model !== "string" || options.model === "") problems.push(`model must be a model name, got ${shown(options.model)}`)
  count("maxSteps", options.maxSteps, 1)
  count("maxInvalidArgs", options.maxInvalidArgs, 1)
  const grace = options.abortGrace === undefined ? undefined : AdapterSettings.duration("abortGrace", options.abortGrace, "non-negative")
  // an infinite grace would let an abort wait for ever on a tool that ignores interruption
  if (grace !== undefined && (Result.isFailure(grace) || !Number.isFinite(Duration.toMillis(grace.success)))) {
    problems.push(`abortGrace must be a finite duration of zero or more ("2 seconds", milliseconds), got ${shown(options.abortGrace)}`)
  }
  if (options.prompt !== undefined && typeof options.prompt !== "string") problems.push(`prompt must be text, got ${shown(options.prompt)}`)
  if (options.id !== undefined && (typeof options.id !== "string" || options.id === "")) problems.push(`id must be a non-empty string, got ${shown(options.id)}`)
  if (options.temperature !== undefined && !(typeof options.temperature === "number" && options.temperature >= 0 && options.temperature <= 2)) {
    problems.push(`temperature must be a number from 0 to 2, got ${shown(options.temperature)}`)
  }
  count("maxTokens", options.maxTokens, 1)
  if (options.providerOptions !== undefined && !isProviderOptions(options.providerOptions)) {
    problems.push(`providerOptions must be an object of JSON values by provider name, got ${shown(options.providerOptions)}`)
  }
  problems.push(...compactionProblems(options.compaction))
  problems.push(...sessionProblems(options.session))
  if (problems.length === 0) return Effect.void
  return Effect.fail(new InvalidInputError({ message: `agent ${agentId} was not created: ${problems.join("; ")}`, agentId }))
}

/** What is wrong with where the session comes from: its shape, its id, its seed. */
const sessionProblems = (source: Agent.SessionSource | undefined): ReadonlyArray<string> => {
  if (source === undefined) return []
  if (typeof source !== "object" || source === null || Array.isArray(source)) {
    return [`session must be { id?, seed? }, { id?, fork, through? } or { resume }, got ${shown(source)}`]
  }
  const unknown = AdapterSettings.unknownKeys("session", source, sessionSourceNames)
  const id: unknown = "id" in source ? source.id : undefined
  const idProblem = id === undefined ? undefined : Session.idProblem(id)
  return [...(unknown === undefined ? [] : [unknown]), ...(idProblem === undefined ? [] : [`session.id ${idProblem}`]), ...seedProblems(source), ...sessionValueProblems(source)]
}

/** What is wrong with the session given to resume or to fork: it must be a session (possible past the types). */
const sessionValueProblems = (source: Agent.SessionSource): ReadonlyArray<string> => {
  const key = "resume" in source ? "resume" : "fork" in source ? "fork" : undefined
  if (key === undefined) return []
  const value: unknown = (source as unknown as Record<string, unknown>)[key]
  return isSession(value)
    ? []
    : [`session.${key} must be a session (an agent's \`session\`, or the one a store's resume returned), got ${shown(value)}`]
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

// the parts of a session the loop reads first: enough to tell one from a mistake
const isSession = (value: unknown): value is Session.Session =>
  isRecord(value) && typeof value["id"] === "string" && Effect.isEffect(value["events"]) &&
  Effect.isEffect(value["closed"]) && typeof value["append"] === "function" && typeof value["streamFrom"] === "function"

/** What is wrong with a seed log: it must be events counting from seq 0 with no gap (the session's own check throws). */
const seedProblems = (source: Agent.SessionSource): ReadonlyArray<string> => {
  if (!("seed" in source)) return []
  const seed: unknown = source.seed
  if (!Array.isArray(seed)) return [`session.seed must be an array of session events, got ${shown(seed)}`]
  const at = seed.findIndex((event: unknown, i) =>
    typeof event !== "object" || event === null || (event as { seq?: unknown }).seq !== i ||
    typeof (event as { type?: unknown }).type !== "string")
  if (at === -1) return []
  const event: unknown = seed[at]
  const seq = typeof event === "object" && event !== null ? (event as { seq?: unknown }).seq : undefined
  return [`session.seed must be session events counting from seq 0 with no gap: event ${at} ${seq === at ? "has no type" : `has seq ${shown(seq)}`}`]
}

/** The session an agent starts on: created in the store (fresh, seeded or forked), or an open one to resume. */
const sessionFor = (
  store: SessionStore["Service"],
  source: Agent.SessionSource,
  agentId: string
): Effect.Effect<Session.Session, CreateError, Scope.Scope> =>
  Effect.gen(function*() {
    if ("resume" in source) {
      const session = source.resume
      if (yield* session.closed) {
        return yield* new SessionErrors.SessionLockedError({
          message: `session ${session.id} is closed and takes no more events; resume it again from its store ` +
            "(JsonlSessions.resume), or start a session from its events (session: { id, seed: events })",
          sessionId: session.id
        })
      }
      return session
    }
    const seed = "seed" in source ? source.seed : "fork" in source ? yield* forkOf(source, agentId) : undefined
    const id = source.id === undefined ? {} : { id: source.id }
    return yield* store.create(seed === undefined ? id : { ...id, seed }).pipe(
      Effect.mapError((error) =>
        error._tag === "SessionExistsError"
          ? new SessionErrors.SessionExistsError({
            message: `${error.message}; to continue that session, pass it as session: { resume: session }`,
            sessionId: error.sessionId
          })
          // (checkOptions refused these already; a store of another kind may check more)
          : new InvalidInputError({ message: `agent ${agentId} was not created: ${error.message}`, agentId })
      )
    )
  })

/** The log a fork starts from: the source's up to its last completed turn (at or before `through`). */
const forkOf = (source: { readonly fork: Session.Session; readonly through?: number }, agentId: string) =>
  Effect.gen(function*() {
    const { through } = source
    if (through !== undefined && !(Number.isSafeInteger(through) && through >= 0)) {
      return yield* new InvalidInputError({
        message: `a fork of session ${source.fork.id} was refused: through must be a seq (an integer ≥ 0), got ${shown(through)}`,
        agentId
      })
    }
    const events = yield* source.fork.events
    return forkable(through === undefined ? events : events.filter((event) => event.seq <= through))
  })

/** Makes the agent the session's one writer until its scope closes. */
const claim = (
  drivers: WeakMap<Session.Session, string>,
  session: Session.Session,
  agentId: string
): Effect.Effect<void, SessionErrors.SessionLockedError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const holder = drivers.get(session)
      if (holder !== undefined) {
        return Effect.fail(
          new SessionErrors.SessionLockedError({
            message: `session ${session.id} is driven by agent ${holder}; a session has one writer`,
            sessionId: session.id,
            holder: `agent ${holder}`
          })
        )
      }
      drivers.set(session, agentId)
      return Effect.void
    }),
    () => Effect.sync(() => drivers.delete(session))
  )
