/**
 * Waiting on work that may not cooperate: an abort must end a turn within its grace even when
 * a tool body runs uninterruptibly, a listener hangs or the disk stalls. Such work runs in a
 * fiber of its own, so giving up on it never waits for it: it is interrupted and left to finish
 * (or not) on its own. The waits are callbacks on the fiber and on a {@link Signal}, not races
 * of forked fibers: a turn waits this way on every turn, and a race would fork two more.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"

/** A one-shot signal (an abort, a deadline) that callbacks wait on. */
export interface Signal {
  fired: boolean
  readonly waiters: Set<() => void>
}

/** A signal not fired yet. */
export const makeSignal = (): Signal => ({ fired: false, waiters: new Set() })

/** Fires a signal once, waking its waiters. */
export const fire = (signal: Signal): void => {
  if (signal.fired) return
  signal.fired = true
  const waiters = [...signal.waiters]
  signal.waiters.clear()
  for (const wake of waiters) wake()
}

/** Waits until a signal fires. */
export const awaitSignal = (signal: Signal): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    if (signal.fired) return resume(Effect.void)
    const wake = () => resume(Effect.void)
    signal.waiters.add(wake)
    return Effect.sync(() => signal.waiters.delete(wake))
  })

/** Waits for a fiber's exit, or `None` once `signal` fires (the fiber is left as it is). */
export const awaitFiber = <A, E>(fiber: Fiber.Fiber<A, E>, signal: Signal): Effect.Effect<Option.Option<Exit.Exit<A, E>>> =>
  Effect.callback<Option.Option<Exit.Exit<A, E>>>((resume) => {
    const exit = fiber.pollUnsafe()
    if (exit !== undefined) return resume(Effect.succeed(Option.some(exit)))
    if (signal.fired) return resume(Effect.succeed(Option.none()))
    let stopObserving: () => void = () => {}
    const wake = () => {
      stopObserving()
      resume(Effect.succeed(Option.none()))
    }
    signal.waiters.add(wake)
    stopObserving = fiber.addObserver((exit) => {
      signal.waiters.delete(wake)
      resume(Effect.succeed(Option.some(exit)))
    })
    return Effect.sync(() => {
      stopObserving()
      signal.waiters.delete(wake)
    })
  })

/**
 * Runs `effect` in a fiber of its own and returns its exit, or `None` once `deadline` fires:
 * then the work is interrupted without waiting and detached, and `late` (if given) runs on its
 * exit whenever it ends.
 */
export const untilDeadline = <A, E>(
  deadline: Signal,
  effect: Effect.Effect<A, E>,
  late?: (exit: Exit.Exit<A, E>) => Effect.Effect<void>
): Effect.Effect<Option.Option<Exit.Exit<A, E>>> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkDetach(effect, { startImmediately: true }), (fiber) => {
      // started at once, work that needs no waiting (the usual flush, listeners) is done already
      const done = fiber.pollUnsafe()
      if (done !== undefined) return Effect.succeed(Option.some(done))
      return restore(awaitFiber(fiber, deadline)).pipe(
        Effect.tap((exit) => (Option.isNone(exit) ? giveUp(fiber, late) : Effect.void)),
        // if the waiter itself is interrupted, the work must not outlive it unnoticed
        Effect.onInterrupt(() => Effect.sync(() => fiber.interruptUnsafe()))
      )
    })
  )

const giveUp = <A, E>(fiber: Fiber.Fiber<A, E>, late?: (exit: Exit.Exit<A, E>) => Effect.Effect<void>): Effect.Effect<void> => {
  fiber.interruptUnsafe()
  return late === undefined ? Effect.void : Effect.asVoid(Effect.forkDetach(Effect.flatMap(Fiber.await(fiber), late)))
}

/**
 * A signal that fires `grace` (the agent's `abortGrace`) from now, for what still has to happen after work was
 * given up at an abort (a turn's closing and its flush): it gets a grace of its own rather
 * than none. `cancel` stops the timer once the work is done.
 */
export const graceFromNow = (
  grace: Duration.Duration
): Effect.Effect<{ readonly deadline: Signal; readonly cancel: Effect.Effect<void> }> =>
  Effect.suspend(() => {
    const deadline = makeSignal()
    return Effect.map(timer(grace, deadline), (fiber) => ({ deadline, cancel: Effect.sync(() => fiber.interruptUnsafe()) }))
  })

/**
 * Fires `signal` after `grace`, on the Clock. Started at once, so the grace counts from now
 * (and a TestClock sees the sleep before the caller goes on).
 */
export const timer = (grace: Duration.Duration, signal: Signal): Effect.Effect<Fiber.Fiber<void>> =>
  Effect.forkDetach(Effect.andThen(Effect.sleep(grace), Effect.sync(() => fire(signal))), {
    startImmediately: true
  })
