/**
 * Logging and listeners. Every event is appended before its listeners run (the agent's events
 * are the session's events). Inside a turn a listener's failure is the turn's; where nothing
 * is left to fail (a status change, injected context, a turn being closed) it is contained:
 * recorded as an `error` event and a log line, never propagated, never able to stop the agent
 * from settling. No listener runs while the agent is being disposed.
 *
 * @internal
 */
import type { HarnessError } from "@dsh/llm"
import type { SessionEvent } from "@dsh/session"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { graceFromNow, type Signal, untilDeadline } from "./bounded.ts"
import { describeCause } from "./failure.ts"
import type { AgentState, Env, Turn } from "./state.ts"

/** Whether an event logged now has listeners to run. */
export const listening = (env: Env, state: AgentState): boolean =>
  state.handle !== undefined && env.hooks.listeners.current().length > 0

// Whether an event has anyone to tell it to: not once disposal began.
const announcing = (env: Env, state: AgentState): boolean => !state.disposing && listening(env, state)

/** Runs the listeners of an event; a failure is the caller's. */
export const notify = (
  env: Env,
  state: AgentState,
  event: SessionEvent.SessionEvent
): Effect.Effect<void, HarnessError.HarnessError> =>
  listening(env, state) ? env.hooks.listeners.apply({ event, agent: state.handle! }, () => Effect.void) : Effect.void

/**
 * Appends an event of a turn and runs its listeners, unless the turn is being closed: then the
 * event is dropped (its work was detached by an abort) and says so in a log line. The check and
 * the append are one synchronous step, so nothing lands after the turn's closing has begun.
 * `logged` runs right after the append, uninterruptibly, so state that must agree with the log
 * (the open step, the last logged settings) cannot miss an event to an interruption.
 */
export const logInTurn = <T extends SessionEvent.CoreType>(
  env: Env,
  state: AgentState,
  turn: Turn,
  type: T,
  data: SessionEvent.DataOf<T>,
  logged?: (event: SessionEvent.CoreEvent<T>) => void
): Effect.Effect<void, HarnessError.HarnessError> => {
  const open = () => !turn.closed
  // `logged` runs in the append's own synchronous step: nothing can come between them
  const append = logged === undefined
    ? env.session.appendIf(open, type, data)
    : env.session.appendBurst((appendIf) => {
      const event = appendIf(open, type, data)
      if (event !== undefined) logged(event)
      return event
    })
  return Effect.flatMap(append, (event) =>
    event === undefined
      ? dropLate(env, turn, type)
      : notify(env, state, event as SessionEvent.SessionEvent))
}

/**
 * The log line of what work detached by an abort tried to log after its turn closed: one per
 * turn (a detached stream may keep producing chunks), counting what was dropped before.
 */
export const dropLate = (env: Env, turn: Turn, what: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (turn.dropped++ > 0) return Effect.void
    return Effect.logWarning(
      `dsh: agent ${env.agentId}, turn ${turn.number}: ${what} arrived after the turn was closed ` +
        "(its work had been detached by an abort); dropped, and so is whatever else it produces"
    )
  })

/**
 * Runs the listeners of an event logged where nothing is left to fail, contained: a failure
 * becomes an `error` event (whose own listeners do not run) and a warning. With a deadline,
 * the wait is given up when it is done.
 */
export const announce = (
  env: Env,
  state: AgentState,
  event: SessionEvent.SessionEvent,
  deadline?: Signal
): Effect.Effect<void> => {
  if (!announcing(env, state)) return Effect.void
  const listeners = notify(env, state, event)
  if (deadline === undefined) return contain(env, state, event, listeners)
  return Effect.flatMap(untilDeadline(deadline, listeners), (exit) =>
    Option.match(exit, {
      onNone: () => Effect.logWarning(`dsh: the listeners of ${event.type} (seq ${event.seq}) did not finish within the abort grace; detached`),
      onSome: (exit) => (exit._tag === "Success" ? Effect.void : contain(env, state, event, Effect.failCause(exit.cause)))
    }))
}

/**
 * Announces an event of no turn (a status change, an injected message) with the abort grace as
 * its deadline: no turn's abort can stop a listener that hangs there, and the agent must not
 * hang with it — it is detached once the grace has passed, with a warning.
 */
export const announceWithinGrace = (env: Env, state: AgentState, event: SessionEvent.SessionEvent): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (!announcing(env, state)) return Effect.void
    return Effect.flatMap(graceFromNow(env.abortGrace), ({ cancel, deadline }) =>
      Effect.ensuring(announce(env, state, event, deadline), cancel))
  })

/** Appends an event and announces it (see {@link announce}). */
export const appendAnnounced = <T extends SessionEvent.CoreType>(
  env: Env,
  state: AgentState,
  type: T,
  data: SessionEvent.DataOf<T>,
  deadline?: Signal
): Effect.Effect<void> =>
  Effect.flatMap(env.session.append(type, data), (event) => announce(env, state, event as SessionEvent.SessionEvent, deadline))

const contain = (
  env: Env,
  state: AgentState,
  event: SessionEvent.SessionEvent,
  listeners: Effect.Effect<void, unknown>
): Effect.Effect<void> =>
  Effect.catchCause(listeners, (cause) => {
    // a listener's own interruption is not a failure to report, nor the caller's to take
    if (Cause.hasInterruptsOnly(cause)) return Effect.void
    const { code, message } = describeCause(cause)
    const text = `a listener failed on ${event.type} (seq ${event.seq}): ${message}`
    return Effect.andThen(
      state.disposing ? Effect.void : Effect.asVoid(env.session.append("error", { message: text, code })),
      Effect.logWarning(`dsh: agent ${env.agentId}: ${text}`)
    )
  })
