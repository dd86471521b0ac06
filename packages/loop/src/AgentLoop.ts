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
 *     assistant/message, usage
 *     each tool call: tool/call → registry (tool middleware) → tool/result,
 *       consecutive concurrency-safe calls in parallel, results in call order
 *     steering queued meanwhile → steering/message; step/end
 *     continue? (tools were called, or steered)           ← continuation middleware
 *   turn/end; flush checkpoint (a failure is reported, not fatal)
 *   steering left over → queued messages;  status → idle unless more is queued
 * ```
 *
 * Containment: whatever fails inside a turn (a middleware, the model in either sanctioned
 * way, a listener, a prompt section, a defect) is logged as an `error` event with its code and
 * ends the turn with reason `error`; the agent serves the next message. Whenever a step ends
 * after the model asked for tools (abort, error, disposal) every call of the logged message
 * gets exactly one `tool/call` and one `tool/result` (an `ABORTED` one if it never finished),
 * so the derived history is always valid for a provider and the invariants hold.
 *
 * Abort interrupts the step's fiber and disposal the driver's, at any point. So every append
 * whose bookkeeping decides how a step or turn is closed (turn/start, step/start, each chunk,
 * assistant/message, tool/call, tool/result, step/end, turn/end) updates that bookkeeping in
 * the same uninterruptible step: whoever closes the step sees exactly what the log holds.
 *
 * Listeners see every event after it is logged. Those logged inside a step or a turn can fail
 * it; those logged where nothing is left to fail (turn/end, a turn's error, a failed flush,
 * injected context) run with their failures ignored; none run while the agent is disposed.
 *
 * Tracing: spans `Agent.turn` and `Agent.step` (and, inside a step, the model call, the prompt
 * assembly and the tool calls) carry `dsh.session`, `dsh.agent`, `dsh.turn` and `dsh.step`; a
 * failed step and a turn that ended with an error carry `dsh.error_code`, a turn its
 * `dsh.turn.end` reason.
 *
 * @since 0.1.0
 */
import { AgentDisposedError, Agents, AgentHooks } from "@dsh/agent"
import type { Agent as AgentModule } from "@dsh/agent"
import {
  Assembler,
  Content,
  HarnessError,
  Ids,
  type Message,
  type ModelRequest,
  type StreamChunk
} from "@dsh/llm"
import { Model } from "@dsh/model"
import { SystemPrompt } from "@dsh/prompt"
import { FlushCheckpoint, type SessionErrors, SessionEvent, SessionStore } from "@dsh/session"
import { ToolRegistry, ToolResult } from "@dsh/tools"
import {
  Cause,
  Data,
  Deferred,
  Effect,
  Exit,
  Fiber,
  Latch,
  Layer,
  Option,
  type Scope,
  Stream,
  SubscriptionRef
} from "effect"
import { describeCause } from "./internal/failure.ts"
import { forkable, lastSettingsOf, lastTurnOf } from "./internal/history.ts"

type Agent = AgentModule.Agent
type Status = AgentModule.Status

interface Pending {
  readonly content: ReadonlyArray<Content.ContentBlock>
  readonly source: string
  readonly trigger: "send" | "steer"
}

/** Why a turn stops early, decided inside it. */
type Stop =
  | { readonly _tag: "Error"; readonly code: string; readonly message: string }
  | { readonly _tag: "Aborted"; readonly reason: string | undefined }

/** What a step logged, so whoever ends it (normally, on abort, on disposal) can close it properly. */
interface StepLog {
  readonly step: number
  readonly assembler: Assembler.Assembler
  message: Message.Message | undefined
  calls: ReadonlyArray<Content.ToolCallBlock>
  readonly called: Set<Ids.CallId>
  readonly results: Map<Ids.CallId, Content.ToolResultBlock>
  readonly answered: Set<Ids.CallId>
  ended: boolean
}

const DEFAULT_MAX_STEPS = 50
const DEFAULT_MAX_INVALID_ARGS = 3

const toContent = (input: AgentModule.Input): ReadonlyArray<Content.ContentBlock> =>
  typeof input === "string" ? [Content.text(input)] : input






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
    const model = yield* Model
    const store = yield* SessionStore
    const checkpoint = yield* FlushCheckpoint
    const registry = yield* ToolRegistry
    const prompt = yield* SystemPrompt
    const hooks = yield* AgentHooks

    const create = (options: AgentModule.Options): Effect.Effect<Agent, SessionErrors.SessionExistsError, Scope.Scope> =>
      Effect.gen(function*() {
        const source = options.session ?? {}
        const seed = "seed" in source
          ? source.seed
          : "fork" in source
          ? forkable(yield* source.fork.events)
          : undefined
        const session = yield* store.create(
          seed === undefined ? (source.id === undefined ? {} : { id: source.id }) : source.id === undefined ? { seed } : { id: source.id, seed }
        )
        const agentId = Ids.agentId(options.id ?? crypto.randomUUID())
        const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS
        const maxInvalidArgs = options.maxInvalidArgs ?? DEFAULT_MAX_INVALID_ARGS

        const queued: Array<Pending> = []
        const steering: Array<Pending> = []
        const wake = yield* Latch.make(false)
        const statusRef = yield* SubscriptionRef.make<Status>("idle")
        // completed whenever the agent is idle with nothing queued (or disposed); a send to an
        // idle agent replaces it with a fresh one: what awaitIdle waits on
        let idle = Deferred.makeUnsafe<void>()
        Deferred.doneUnsafe(idle, Effect.void)
        const becomeBusy = () => {
          if (Deferred.isDoneUnsafe(idle)) idle = Deferred.makeUnsafe<void>()
        }
        const becomeIdle = () => void Deferred.doneUnsafe(idle, Effect.void)
        // undefined until the first status is logged
        let status: Status | undefined
        let disposing = false
        const logged = yield* session.events
        let lastTurn = lastTurnOf(logged)
        // the settings of the session's last logged request (JSON), carried over from a seed
        let lastSettings = lastSettingsOf(logged)
        // the running turn's abort switch
        let current: Run | undefined

        const agentRef: { current?: Agent } = {}

        const notify = (event: SessionEvent.SessionEvent): Effect.Effect<void, HarnessError.HarnessError> =>
          hooks.listeners.current().length === 0 || agentRef.current === undefined
            ? Effect.void
            : hooks.listeners.apply({ event, agent: agentRef.current }, () => Effect.void)

        // Listeners of events logged where a listener failure cannot end the turn (after turn/end,
        // outside a turn, while a failure is being recorded): run, failures ignored; not while
        // the agent is being disposed.
        const announce = (event: SessionEvent.SessionEvent) =>
          disposing ? Effect.void : Effect.ignore(notify(event))

        const setStatus = (next: Status) =>
          Effect.gen(function*() {
            if (status === next) return
            status = next
            const event = yield* session.append("agent/status", { agentId, status: next })
            yield* SubscriptionRef.set(statusRef, next)
            yield* notify(event).pipe(Effect.ignore)
          })

        const refuseWhenDisposed = Effect.suspend(() =>
          disposing
            ? Effect.fail(new AgentDisposedError({ message: `agent ${agentId} is disposed`, agentId }))
            : Effect.void
        )

        const enqueue = (pending: Pending) =>
          Effect.andThen(refuseWhenDisposed, () =>
            Effect.gen(function*() {
              if (pending.trigger === "steer" && current !== undefined) steering.push(pending)
              else queued.push(pending)
              becomeBusy()
              yield* wake.open
            }))

        // ---- one turn -------------------------------------------------------------------

        const runTurn = (messages: ReadonlyArray<Pending>) =>
          Effect.suspend(() => {
            const turn = ++lastTurn
            const run: Run = { turn, abort: null, stepFiber: undefined }
            current = run
            // what the turn has logged, for whoever ends it (normally, on error, on disposal)
            let started = false
            let ended = false
            let openStep: StepLog | undefined
            let stop: Stop | undefined
            let limit: { name: string; message: string } | undefined

            const log = <T extends SessionEvent.CoreType>(type: T, data: SessionEvent.DataOf<T>) =>
              Effect.flatMap(
                session.append(type, data),
                (event) => Effect.as(notify(event as SessionEvent.SessionEvent), event)
              )

            // Appends an event and updates the turn's bookkeeping in one uninterruptible step.
            // An abort (which interrupts the step fiber) or a disposal (the driver) landing
            // between the two would leave the bookkeeping disagreeing with the log, and whoever
            // closes the step would then announce a call twice, answer a call never announced,
            // skip a step/end or close a turn that never started. Listeners run afterwards.
            const appendMarked = <T extends SessionEvent.CoreType>(
              type: T,
              data: SessionEvent.DataOf<T>,
              mark: () => void
            ) =>
              Effect.uninterruptible(
                Effect.tap(session.append(type, data), () => Effect.sync(mark))
              )
            const record = <T extends SessionEvent.CoreType>(type: T, data: SessionEvent.DataOf<T>, mark: () => void) =>
              Effect.flatMap(appendMarked(type, data, mark), (event) => notify(event as SessionEvent.SessionEvent))

            // Closes a step whatever stopped it: a partial answer is kept, every call of the logged
            // message is announced and answered (ABORTED when it has no result), then step/end.
            // `listen` is false when listeners must not run (the turn is being torn down).
            const closeStep = (step: StepLog, reason: string | undefined, listen: boolean) =>
              Effect.gen(function*() {
                if (step.ended) return
                const append = <T extends SessionEvent.CoreType>(
                  type: T,
                  data: SessionEvent.DataOf<T>,
                  mark: () => void
                ) => listen ? Effect.ignore(record(type, data, mark)) : Effect.asVoid(appendMarked(type, data, mark))
                if (step.message === undefined) {
                  const partial = step.assembler.snapshot().filter((b) =>
                    (b.type === "text" || b.type === "reasoning") && b.text !== ""
                  )
                  if (partial.length > 0) {
                    yield* append(
                      "assistant/message",
                      { turn, step: step.step, content: partial },
                      () => (step.message = { role: "assistant", content: partial })
                    )
                  }
                }
                for (const call of step.calls) {
                  if (step.answered.has(call.id)) continue
                  if (!step.called.has(call.id)) {
                    yield* append("tool/call", callData(turn, step.step, call), () => step.called.add(call.id))
                  }
                  const result = step.results.get(call.id) ?? ToolResult.aborted(call, reason)
                  yield* append(
                    "tool/result",
                    resultData(turn, step.step, call, result),
                    () => step.answered.add(call.id)
                  )
                }
                yield* append("step/end", { turn, step: step.step }, () => (step.ended = true))
              })

            const isSafe = (call: Content.ToolCallBlock) =>
              Effect.map(
                registry.lookup(call.name),
                Option.match({ onNone: () => false, onSome: (tool) => tool.concurrencySafe })
              )

            const runTools = (step: StepLog, calls: ReadonlyArray<Content.ToolCallBlock>) =>
              Effect.gen(function*() {
                let i = 0
                while (i < calls.length) {
                  // a run of consecutive concurrency-safe calls goes together; any other call alone
                  const batch = [calls[i]!]
                  if (yield* isSafe(calls[i]!)) {
                    while (i + batch.length < calls.length && (yield* isSafe(calls[i + batch.length]!))) {
                      batch.push(calls[i + batch.length]!)
                    }
                  }
                  i += batch.length
                  for (const call of batch) {
                    yield* record("tool/call", callData(turn, step.step, call), () => step.called.add(call.id))
                  }
                  yield* Effect.forEach(
                    batch,
                    (call) =>
                      registry.execute(call).pipe(
                        Effect.tap((result) => Effect.sync(() => step.results.set(call.id, result)))
                      ),
                    { concurrency: batch.length, discard: true }
                  )
                  // results are logged in call order, whichever finished first
                  for (const call of batch) {
                    yield* record(
                      "tool/result",
                      resultData(turn, step.step, call, step.results.get(call.id)!),
                      () => step.answered.add(call.id)
                    )
                  }
                }
              })

            const runStep = (step: StepLog) =>
              Effect.gen(function*() {
                const context = { agentId, sessionId: session.id, turn, step: step.step }
                const assembly = yield* prompt.assemble({
                  ...(options.prompt === undefined ? {} : { agentPrompt: options.prompt }),
                  tools: yield* registry.schemas(),
                  context
                })
                const base: ModelRequest.ModelRequest = {
                  model: options.model,
                  messages: yield* session.messages,
                  ...(assembly.system === "" ? {} : { system: assembly.system }),
                  ...(assembly.tools.length === 0 ? {} : { tools: assembly.tools }),
                  ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
                  ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
                  ...(options.providerOptions === undefined ? {} : { providerOptions: options.providerOptions })
                }
                const request = yield* hooks.request.apply(
                  { request: base, context },
                  (input) => Effect.succeed(input.request)
                )
                // what was asked, besides the messages the log already determines; the settings
                // only when they changed, so a replay can check prompt and tools cheaply
                const settings = SessionEvent.settingsOf(request)
                const encoded = JSON.stringify(settings)
                if (encoded === lastSettings) {
                  yield* log("model/request", { turn, step: step.step, model: request.model })
                } else {
                  yield* log("model/request", { turn, step: step.step, model: request.model, settings })
                  lastSettings = encoded
                }
                yield* model.stream(request).pipe(
                  // the assembler takes the chunk with its append, so a partial answer kept on
                  // abort or disposal is exactly what the logged chunks say
                  Stream.runForEach((chunk: StreamChunk.StreamChunk) =>
                    record("assistant/chunk", { turn, step: step.step, chunk }, () => void step.assembler.push(chunk))
                  )
                )
                const assembled = step.assembler.done()
                const finishReason = assembled.finishReason
                if (finishReason === undefined) {
                  return yield* new StepFailure({
                    code: "LLM_PROTOCOL",
                    message: `the response of model "${options.model}" ended without a finish chunk`
                  })
                }
                if (finishReason.kind === "error") {
                  return yield* new StepFailure({
                    code: finishReason.code,
                    message: `the model reported an error: ${finishReason.message}`
                  })
                }
                if (finishReason.kind === "aborted") {
                  return yield* new StepFailure({
                    code: "ABORTED",
                    message: `the model aborted its response${finishReason.reason === undefined ? "" : `: ${finishReason.reason}`}`
                  })
                }
                const message = yield* hooks.stepResult.apply(
                  { message: assembled.message, finishReason, usage: assembled.usage, context },
                  (input) => Effect.succeed(input.message)
                )
                const calls = message.content.filter((b): b is Content.ToolCallBlock => b.type === "tool-call")
                yield* record("assistant/message", { turn, step: step.step, content: message.content, finishReason }, () => {
                  step.message = message
                  step.calls = calls
                })
                if (assembled.usage !== undefined) yield* log("usage", { turn, step: step.step, usage: assembled.usage })
                yield* runTools(step, calls)
                return { message, hadToolCalls: calls.length > 0 }
              }).pipe(
                Effect.tapCause((cause) => Effect.annotateCurrentSpan("dsh.error_code", describeCause(cause).code)),
                Effect.onInterrupt(() => Effect.annotateCurrentSpan("dsh.error_code", "ABORTED")),
                // the call site would always be this line: not worth an Error per step
                Effect.withSpan("Agent.step", { attributes: { "dsh.step": step.step } }, { captureStackTrace: false }),
                // every span inside the step (model call, prompt assembly, tool calls) says whose it is
                Effect.annotateSpans({ "dsh.session": session.id, "dsh.agent": agentId, "dsh.turn": turn, "dsh.step": step.step })
              )

            const drainSteering = Effect.gen(function*() {
              let steered = false
              while (steering.length > 0) {
                const pending = steering.shift()!
                steered = true
                yield* log("steering/message", { turn, content: pending.content, source: pending.source })
              }
              return steered
            })

            const steps = Effect.gen(function*() {
              yield* record("turn/start", { turn, trigger: messages[0]?.trigger ?? "send" }, () => (started = true))
              for (const pending of messages) {
                yield* log("user/message", { content: pending.content, source: pending.source })
              }
              const invalidArgs = new Map<string, number>()
              let stepNumber = 0
              while (true) {
                if (run.abort !== null) {
                  stop = { _tag: "Aborted", reason: run.abort }
                  return
                }
                if (stepNumber >= maxSteps) {
                  limit = { name: "max-steps", message: `the turn reached its limit of ${maxSteps} steps` }
                  return
                }
                stepNumber++
                yield* drainSteering
                const step: StepLog = {
                  step: stepNumber,
                  assembler: Assembler.make(),
                  message: undefined,
                  calls: [],
                  called: new Set(),
                  results: new Map(),
                  answered: new Set(),
                  ended: false
                }
                yield* record("step/start", { turn, step: stepNumber }, () => (openStep = step))
                // forked and recorded in one step: a disposal landing in between would find no
                // step fiber to stop, and the step would go on logging after its turn was closed
                const fiber = yield* Effect.uninterruptibleMask((restore) =>
                  Effect.tap(Effect.forkChild(restore(runStep(step))), (forked) =>
                    Effect.sync(() => {
                      run.stepFiber = forked
                    }))
                )
                // an abort that came while the step was being opened found no fiber to interrupt
                if (run.abort !== null) fiber.interruptUnsafe()
                const exit = yield* Fiber.await(fiber)
                run.stepFiber = undefined
                if (Exit.isFailure(exit)) {
                  if (run.abort !== null && Cause.hasInterruptsOnly(exit.cause)) {
                    stop = { _tag: "Aborted", reason: run.abort }
                    yield* closeStep(step, run.abort ?? "the turn was aborted", true)
                    openStep = undefined
                    return
                  }
                  const { code, message } = describeCause(exit.cause)
                  stop = { _tag: "Error", code, message }
                  yield* log("error", { turn, step: step.step, message, code })
                  yield* closeStep(step, `the step failed: ${message}`, true)
                  openStep = undefined
                  return
                }
                const { hadToolCalls, message } = exit.value
                for (const call of step.calls) {
                  const code = step.results.get(call.id)?.error?.code
                  invalidArgs.set(call.name, code === "INVALID_ARGS" ? (invalidArgs.get(call.name) ?? 0) + 1 : 0)
                }
                const steered = yield* drainSteering
                yield* record("step/end", { turn, step: step.step }, () => {
                  step.ended = true
                  openStep = undefined
                })
                const stuck = [...invalidArgs].find(([, count]) => count >= maxInvalidArgs)
                if (stuck !== undefined) {
                  limit = {
                    name: "invalid-args",
                    message: `the model sent invalid arguments to tool "${stuck[0]}" ${stuck[1]} times in a row`
                  }
                  return
                }
                const proceed = yield* hooks.continuation.apply(
                  { message, hadToolCalls, steered, context: { agentId, sessionId: session.id, turn, step: step.step } },
                  (input) => Effect.succeed(input.hadToolCalls || input.steered)
                )
                // steering queued by step-end or continuation listeners forces another step
                if (!proceed && steering.length === 0) {
                  if (run.abort !== null) stop = { _tag: "Aborted", reason: run.abort }
                  return
                }
              }
            })

            const endReason = (): SessionEvent.TurnEndReason =>
              stop?._tag === "Error"
                ? { kind: "error", message: stop.message, code: stop.code }
                : stop?._tag === "Aborted"
                ? stop.reason === undefined ? { kind: "aborted" } : { kind: "aborted", reason: stop.reason }
                : limit !== undefined
                ? { kind: "limit", name: limit.name, message: limit.message }
                : { kind: "completed" }

            const end = (reason: SessionEvent.TurnEndReason) =>
              Effect.gen(function*() {
                if (!started || ended) return
                yield* Effect.flatMap(appendMarked("turn/end", { turn, reason }, () => (ended = true)), announce)
                yield* Effect.annotateCurrentSpan(
                  reason.kind === "error" ? { "dsh.turn.end": reason.kind, "dsh.error_code": reason.code } : { "dsh.turn.end": reason.kind }
                )
                yield* flush(turn)
              })

            const turnBody = Effect.gen(function*() {
              // a failure outside a step (a listener, a continuation middleware) ends the turn too
              const outcome = yield* Effect.exit(steps)
              if (Exit.isFailure(outcome)) {
                if (Cause.hasInterruptsOnly(outcome.cause)) return yield* Effect.failCause(outcome.cause)
                const { code, message } = describeCause(outcome.cause)
                stop = { _tag: "Error", code, message }
                yield* Effect.flatMap(
                  session.append("error", {
                    turn,
                    ...(openStep === undefined ? {} : { step: openStep.step }),
                    message,
                    code
                  }),
                  announce
                )
                if (openStep !== undefined) yield* closeStep(openStep, `the turn failed: ${message}`, false)
              }
              yield* end(endReason())
            })

            // Disposal interrupts the turn: close what is open and end it `disposed`.
            const dispose = Effect.gen(function*() {
              // the step fiber outlives the interrupted driver until the driver exits: stop it
              // first, so that nothing it does lands after the turn is closed
              if (run.stepFiber !== undefined) yield* Fiber.interrupt(run.stepFiber)
              if (!started || ended) return
              if (openStep !== undefined) yield* closeStep(openStep, "the agent was disposed", false)
              yield* end({ kind: "disposed" })
            })

            return turnBody.pipe(
              Effect.onInterrupt(() => dispose),
              Effect.ensuring(Effect.sync(() => (current = undefined))),
              Effect.withSpan("Agent.turn", {}, { captureStackTrace: false }),
              Effect.annotateSpans({ "dsh.session": session.id, "dsh.agent": agentId, "dsh.turn": turn })
            )
          })

        const flush = (turn: number) =>
          checkpoint.flush(session).pipe(
            Effect.catch((error) =>
              Effect.gen(function*() {
                yield* Effect.flatMap(session.append("error", { turn, message: error.message, code: error.code }), announce)
                yield* Effect.logWarning(`dsh: flushing session ${session.id} failed: ${error.message}`)
              })
            )
          )

        // ---- the driver -----------------------------------------------------------------

        const driver = Effect.gen(function*() {
          while (true) {
            yield* wake.await
            yield* wake.close
            if (queued.length === 0) {
              if (current === undefined) becomeIdle()
              continue
            }
            yield* setStatus("running")
            while (queued.length > 0) {
              const batch = queued.splice(0, queued.length)
              yield* runTurn(batch)
              // steering that arrived too late for the turn becomes the next turn's messages
              if (steering.length > 0) queued.push(...steering.splice(0, steering.length).map((p) => ({ ...p, trigger: "steer" as const })))
            }
            yield* setStatus("idle")
            if (queued.length === 0) becomeIdle()
          }
        })

        yield* setStatus("idle")
        const driverFiber = yield* Effect.forkDetach(driver)

        yield* Effect.addFinalizer(() =>
          Effect.gen(function*() {
            disposing = true
            yield* Fiber.interrupt(driverFiber)
            yield* setStatus("disposed")
            becomeIdle()
          })
        )

        const agent: Agent = {
          id: agentId,
          session,
          send: (input, opts) => enqueue({ content: toContent(input), source: opts?.source ?? "user", trigger: "send" }),
          steer: (input, opts) => enqueue({ content: toContent(input), source: opts?.source ?? "user", trigger: "steer" }),
          inject: (input, opts) =>
            Effect.andThen(refuseWhenDisposed, () =>
              Effect.flatMap(
                session.append("context/message", { content: toContent(input), source: opts?.source ?? "context" }),
                announce
              )),
          abort: (reason) =>
            Effect.sync(() => {
              const run = current
              if (run === undefined || run.abort !== null) return
              run.abort = reason
              run.stepFiber?.interruptUnsafe()
            }),
          status: Effect.sync(() => status ?? "idle"),
          statusChanges: SubscriptionRef.changes(statusRef),
          events: Stream.unwrap(Effect.map(session.seq, (seq) => session.streamFrom(seq))),
          awaitIdle: Effect.suspend(() => Deferred.await(idle))
        }
        agentRef.current = agent
        return agent
      })

    return Agents.of({ create })
  })
)

/** The step could not produce an answer (a finish of kind error/aborted, or no finish). */
class StepFailure extends Data.TaggedError("StepFailure")<{ readonly code: string; readonly message: string }> {}

/** The running turn's abort switch: `abort` is null until `abort()` is called. */
interface Run {
  readonly turn: number
  abort: string | undefined | null
  stepFiber: Fiber.Fiber<unknown, unknown> | undefined
}

const callData = (turn: number, step: number, call: Content.ToolCallBlock): SessionEvent.DataOf<"tool/call"> => ({
  turn,
  step,
  callId: call.id,
  name: call.name,
  arguments: call.arguments
})

const resultData = (
  turn: number,
  step: number,
  call: Content.ToolCallBlock,
  result: Content.ToolResultBlock
): SessionEvent.DataOf<"tool/result"> =>
  // the result carries its call's own id, whatever a middleware returned
  result.error === undefined
    ? { turn, step, callId: call.id, content: result.content, isError: result.isError }
    : { turn, step, callId: call.id, content: result.content, isError: result.isError, error: result.error }

