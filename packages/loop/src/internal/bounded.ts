/**
 * Waiting on work that may not cooperate: an abort must end a turn within its grace even when
 * a tool body runs uninterruptibly, a listener hangs or the disk stalls. The work runs in a
 * fiber of its own, so giving up on it never waits for it; it is interrupted and left to
 * finish (or not) on its own.
 *
 * @internal
 */
import { Deferred, Effect, Exit, Fiber, Option } from "effect"
import type { Env } from "./state.ts"

/**
 * Runs `effect` and returns its exit, or `None` once `deadline` is done: then the work is
 * interrupted without waiting and detached, and `late` (if given) runs on its exit whenever it
 * ends.
 */
export const untilDeadline = <A, E>(
  deadline: Deferred.Deferred<void>,
  effect: Effect.Effect<A, E>,
  late?: (exit: Exit.Exit<A, E>) => Effect.Effect<void>
): Effect.Effect<Option.Option<Exit.Exit<A, E>>> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkDetach(effect), (fiber) =>
      restore(awaitUntilDeadline(deadline, fiber)).pipe(
        Effect.tap((exit) =>
          Option.isNone(exit) && late !== undefined ? Effect.forkDetach(Effect.flatMap(Fiber.await(fiber), late)) : Effect.void
        ),
        // if the waiter itself is interrupted, the work must not outlive it unnoticed
        Effect.onInterrupt(() => Effect.sync(() => fiber.interruptUnsafe()))
      ))
  )

/**
 * Waits for a fiber's exit, or `None` once `deadline` is done; then the fiber is interrupted
 * without waiting (after the race, so that its interruption cannot pass for its exit).
 */
export const awaitUntilDeadline = <A, E>(
  deadline: Deferred.Deferred<void>,
  fiber: Fiber.Fiber<A, E>
): Effect.Effect<Option.Option<Exit.Exit<A, E>>> =>
  Effect.raceFirst(
    Effect.map(Fiber.await(fiber), Option.some),
    Effect.as(Deferred.await(deadline), Option.none<Exit.Exit<A, E>>())
  ).pipe(Effect.tap((exit) => (Option.isNone(exit) ? Effect.sync(() => fiber.interruptUnsafe()) : Effect.void)))

/**
 * A deadline `abortGrace` from now, for what still has to happen after work was given up at an
 * abort (a turn's closing and its flush): it gets a grace of its own rather than none. `cancel`
 * stops the timer once the work is done.
 */
export const graceFromNow = (
  env: Env
): Effect.Effect<{ readonly deadline: Deferred.Deferred<void>; readonly cancel: Effect.Effect<void> }> =>
  Effect.map(
    Effect.suspend(() => {
      const deadline = Deferred.makeUnsafe<void>()
      return Effect.map(
        Effect.forkDetach(Effect.andThen(Effect.sleep(env.abortGrace), Deferred.done(deadline, Exit.void)), {
          startImmediately: true
        }),
        (timer) => ({ deadline, timer })
      )
    }),
    ({ deadline, timer }) => ({ deadline, cancel: Effect.sync(() => timer.interruptUnsafe()) })
  )
