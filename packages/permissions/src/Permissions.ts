/**
 * The permission policy as a tool execution middleware: every call through the registry is
 * decided by the policy before it runs.
 *
 * - **allow** passes the call on; **deny** answers it with `TOOL_DENIED` (the reason names the
 *   rule, or says the user refused), which the model reads and the turn goes on;
 * - **ask** first looks at the session's "always" answers (read back from its log, see
 *   `PermissionEvent`), then asks the `PermissionPrompt`: `yes` runs the call, `no` denies it,
 *   `always` runs it and adds the request's allow rule for the rest of the session. No prompt
 *   provided: a denial, saying so. "Always" rules only answer questions: they never override a
 *   rule that denies.
 * - **Every decision is logged** as a `permission:decision` event in the call's session
 *   (`ToolContext.current`), between its `tool/call` and `tool/result`. Outside an agent (a
 *   call executed directly through the registry) there is no session: the decision applies
 *   and is not logged, and an `always` answer allows that call only.
 *
 * **Where it sits**: `order` {@link order} (1000) by default, inside the usual middleware
 * (order 0 and below), so it decides on the arguments the tool will decode, after every
 * rewrite (`ToolMiddleware.mapArguments`) made outside it, and the user is asked about what
 * will really run. Middleware outside it sees a denial as a result like any other; a
 * middleware registered with a higher order runs inside it and sees only allowed calls — give
 * no rewrite a higher order, or it changes a call after it was checked.
 *
 * It never fails and never dies on anything a model or a user can send: arguments that do
 * not parse, a hostile command line, a prompt that fails, throws, answers nonsense or gives
 * back something that is not an Effect all end in a decision (a denial naming what went wrong).
 *
 * @since 0.1.0
 */
import { type Content, HarnessError, ScopedList } from "@dsh/llm"
import type { Session } from "@dsh/session"
import { type Tool, ToolContext, type ToolMiddleware, ToolRegistry, ToolResult } from "@dsh/tools"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Semaphore from "effect/Semaphore"
import { allows, alwaysRule, type Arguments, type Compiled, compile, parseArguments } from "./internal/rules.ts"
import * as PermissionEvent from "./PermissionEvent.ts"
import type { PolicyInvalidError } from "./PermissionError.ts"
import * as PermissionPrompt from "./PermissionPrompt.ts"
import * as Policy from "./Policy.ts"

/**
 * The default `order` of the permission middleware (see the module documentation).
 *
 * @since 0.1.0
 * @category constants
 */
export const order = 1000

/**
 * The middleware's name (in `MIDDLEWARE` errors and traces).
 *
 * @since 0.1.0
 * @category constants
 */
export const name = "permissions"

/**
 * Options of {@link middleware} and {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Where it sits in the chain; default {@link order}. */
  readonly order?: number | undefined
  /**
   * What a refusal tells the model when the policy asks and no `PermissionPrompt` is provided
   * (e.g. an application's headless mode: "nobody is asked in headless runs; …"); by default
   * that no one can be asked.
   */
  readonly unattended?: string | undefined
}

/** A session's "always" rules, read from its log up to `seq`. */
interface SessionRules {
  seq: number
  readonly rules: Array<Compiled>
}

interface State {
  readonly policy: Policy.Policy
  readonly prompt: Option.Option<PermissionPrompt.PermissionPrompt["Service"]>
  readonly registry: ToolRegistry["Service"]
  readonly unattended: string
  /** One question at a time, for every agent this middleware serves. */
  readonly oneQuestion: Semaphore.Semaphore
  /** Keyed by the session object: an entry goes with its session. */
  readonly sessions: WeakMap<Session.Session, SessionRules>
}

/** How an ask ended: the call runs or is denied for `reason`. */
interface Settled {
  readonly allowed: boolean
  readonly reason: string
}

type Where = ToolContext.CallContext | undefined

const record = (
  where: Where,
  call: Content.ToolCallBlock,
  decision: PermissionEvent.Outcome,
  rule: number | "default",
  reason: string,
  always?: Policy.Rule
): Effect.Effect<void> => {
  if (where === undefined) return Effect.void
  const session = where.session
  const data: PermissionEvent.DecisionData = {
    callId: call.id,
    tool: call.name,
    decision,
    rule,
    reason,
    ...(always === undefined ? {} : { always })
  }
  // a session closed meanwhile (its agent disposed) takes no more events; the decision stands.
  // The data is built here from the decision: one that did not fit its definition is a bug.
  return Effect.flatMap(session.closed, (closed) => closed ? Effect.void : Effect.asVoid(Effect.orDie(session.append(PermissionEvent.Decision, data))))
}

/** The session's "always" rules, reading only what was logged since the last look. */
const sessionRules = (state: State, session: Session.Session): Effect.Effect<ReadonlyArray<Compiled>> =>
  Effect.suspend(() => {
    let known = state.sessions.get(session)
    if (known === undefined) {
      known = { seq: 0, rules: [] }
      state.sessions.set(session, known)
    }
    const rules = known
    return Effect.map(session.eventsFrom(rules.seq), (events) => {
      for (const data of PermissionEvent.decisionsOf(events)) {
        if (data.decision !== "ask-always" || data.always === undefined) continue
        // a rule that no longer compiles (a log written by another version) allows nothing
        const compiled = compile(data.always, state.policy.root)
        if (Result.isSuccess(compiled)) rules.rules.push(compiled.success)
      }
      rules.seq += events.length
      return rules.rules
    })
  })

const parameterNames = (tool: Tool.Any): ReadonlyArray<string> => {
  if (tool.parameters._tag === "Schema") return Object.keys(tool.parameters.schema.fields)
  const properties = tool.parameters.jsonSchema["properties"]
  return typeof properties === "object" && properties !== null && !Array.isArray(properties) ? Object.keys(properties) : []
}

/** The rule "always" would add for the call, if one can allow exactly it. */
const suggestion = (state: State, call: Content.ToolCallBlock, args: Arguments): Effect.Effect<Policy.Rule | undefined> =>
  Effect.map(state.registry.lookup(call.name), (tool) => {
    // a tool we cannot see might take anything: it needs both a command and a path to narrow to
    const names = Option.match(tool, { onNone: () => undefined, onSome: parameterNames })
    return alwaysRule(call.name, args, state.policy.root, (argument) => names === undefined || names.includes(argument))
  })

const shownAnswer = (answer: unknown): string =>
  typeof answer === "string" ? JSON.stringify(answer.length > 100 ? `${answer.slice(0, 100)}…` : answer) : HarnessError.describe(answer)

const isAnswer = (u: unknown): u is PermissionPrompt.Answer => u === "yes" || u === "no" || u === "always"

const isPromise = (u: unknown): boolean =>
  typeof u === "object" && u !== null && typeof (u as { readonly then?: unknown }).then === "function"

/** The prompt's question as an Effect: one that gives back anything else (a Promise, a plain `"yes"`) failed. */
const question = (
  prompt: PermissionPrompt.PermissionPrompt["Service"],
  request: PermissionPrompt.Request
): Effect.Effect<unknown, unknown> =>
  Effect.suspend(() => {
    const asked: unknown = prompt.ask(request)
    // running it would die past every catch ("Not a valid effect"); a Promise is not awaited
    return Effect.isEffect(asked)
      ? asked as Effect.Effect<unknown, unknown>
      : Effect.fail(
        `it gave back ${isPromise(asked) ? "a Promise" : shownAnswer(asked)}, which is not an Effect (ask returns an Effect of yes, no or always)`
      )
  })

/** The prompt's answer, or what went wrong with it; an interruption interrupts. */
const askPrompt = (
  prompt: PermissionPrompt.PermissionPrompt["Service"],
  request: PermissionPrompt.Request
): Effect.Effect<Result.Result<PermissionPrompt.Answer, string>> =>
  question(prompt, request).pipe(
    Effect.map((answer: unknown) =>
      isAnswer(answer)
        ? Result.succeed(answer)
        : Result.fail(`it answered ${shownAnswer(answer)}, which is not yes, no or always`)
    ),
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
      const reason = cause.reasons.find((r) => Cause.isFailReason(r) || Cause.isDieReason(r))
      const failure = reason === undefined ? undefined : Cause.isFailReason(reason) ? reason.error : reason.defect
      return Effect.succeed(Result.fail(HarnessError.describe(failure)))
    })
  )

const allowed = (reason: string): Settled => ({ allowed: true, reason })
const denied = (reason: string): Settled => ({ allowed: false, reason })

/** An ask: the session's "always" rules, then the prompt. Runs holding the one-question permit. */
const settle = (
  state: State,
  where: Where,
  call: Content.ToolCallBlock,
  verdict: Policy.Verdict
): Effect.Effect<Settled> =>
  Effect.gen(function*() {
    const args = parseArguments(call.name, call.arguments)
    const root = state.policy.root
    if (where !== undefined) {
      const earlier = (yield* sessionRules(state, where.session)).find((rule) => allows(rule, root, call.name, args))
      if (earlier !== undefined) {
        const reason = `the user allowed it for the rest of the session (${Policy.describeRule(earlier.rule)})`
        yield* record(where, call, "allow", verdict.rule, reason, earlier.rule)
        return allowed(reason)
      }
    }
    const asker = Policy.source(state.policy, verdict.rule)
    if (Option.isNone(state.prompt)) {
      const reason = `the permission policy asks the user (${asker}), and ${state.unattended}`
      yield* record(where, call, "deny", verdict.rule, reason)
      return denied(reason)
    }
    const always = where === undefined ? undefined : yield* suggestion(state, call, args)
    const request: PermissionPrompt.Request = {
      callId: call.id,
      tool: call.name,
      arguments: call.arguments,
      rule: verdict.rule,
      reason: verdict.reason,
      ...(always === undefined ? {} : { always }),
      ...(where === undefined ? {} : { agentId: where.agentId, sessionId: where.session.id })
    }
    const answer = yield* askPrompt(state.prompt.value, request)
    if (Result.isFailure(answer)) {
      const reason = `the permission policy asks the user (${asker}), and the prompt failed: ${answer.failure}`
      yield* record(where, call, "deny", verdict.rule, reason)
      return denied(reason)
    }
    switch (answer.success) {
      case "yes": {
        const reason = `the user allowed it (asked by ${asker})`
        yield* record(where, call, "ask-allow", verdict.rule, reason)
        return allowed(reason)
      }
      case "no": {
        const reason = `the user refused (asked by ${asker})`
        yield* record(where, call, "ask-deny", verdict.rule, reason)
        return denied(reason)
      }
      case "always": {
        const reason = always === undefined
          ? `the user allowed it, for this call only: no rule can allow exactly this call again (asked by ${asker})`
          : `the user allowed it for the rest of the session: ${Policy.describeRule(always)} (asked by ${asker})`
        // the log is where the rule is kept: `sessionRules` reads it back
        yield* record(where, call, "ask-always", verdict.rule, reason, always)
        return allowed(reason)
      }
    }
  })

const decide = (
  state: State,
  call: Content.ToolCallBlock,
  next: ToolMiddleware.Next
): Effect.Effect<Content.ToolResultBlock> =>
  Effect.flatMap(ToolContext.current, (context) => {
    const where = Option.getOrUndefined(context)
    const verdict = Policy.evaluate(state.policy, call)
    switch (verdict.decision) {
      case "allow":
        return Effect.andThen(record(where, call, "allow", verdict.rule, verdict.reason), next(call))
      case "deny":
        return Effect.as(record(where, call, "deny", verdict.rule, verdict.reason), ToolResult.denied(call, verdict.reason))
      case "ask":
        // the call itself runs after the permit is released: only the question is one at a time
        return Effect.flatMap(
          state.oneQuestion.withPermit(settle(state, where, call, verdict)),
          (settled) => (settled.allowed ? next(call) : Effect.succeed(ToolResult.denied(call, settled.reason)))
        )
    }
  })

/**
 * The policy's middleware, for `registry.use`. The `PermissionPrompt`, if the context
 * provides one, is taken now; the registry is used to see which arguments a tool takes (so
 * that "always" is narrowed to a command or a path where the tool has one).
 *
 * @since 0.1.0
 * @category constructors
 */
export const middleware = (
  policy: Policy.Policy,
  options?: Options
): Effect.Effect<ToolMiddleware.ToolMiddleware, never, ToolRegistry> =>
  Effect.gen(function*() {
    const state: State = {
      policy,
      prompt: yield* Effect.serviceOption(PermissionPrompt.PermissionPrompt),
      registry: yield* ToolRegistry,
      unattended: options?.unattended ?? "there is no one to ask: no PermissionPrompt is provided",
      oneQuestion: yield* Semaphore.make(1),
      sessions: new WeakMap()
    }
    return { name, order: options?.order ?? order, around: (call, next) => decide(state, call, next) }
  })

/**
 * A Layer registering the policy for its lifetime: a built policy, or a config it builds
 * (failing with `PolicyInvalidError`). Provide the `PermissionPrompt` to this Layer for
 * `ask` to reach someone.
 *
 * @example
 * ```ts
 * import { PermissionPrompt, Permissions, Policy } from "@dsh/permissions"
 * import { Layer } from "effect"
 *
 * const PermissionsLive = Permissions.layer(Policy.askBeforeChanges).pipe(
 *   Layer.provide(PermissionPrompt.layer((request) => askInTheTerminal(request)))
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  policy: Policy.Policy | Policy.Config,
  options?: Options & Policy.Options
): Layer.Layer<never, PolicyInvalidError, ToolRegistry> =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const built = Policy.isPolicy(policy) ? policy : yield* Policy.make(policy, options)
      const registry = yield* ToolRegistry
      yield* ScopedList.inOpenScope(registry.use(yield* middleware(built, options)))
    })
  )
