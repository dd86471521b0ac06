/**
 * Waiting on work that may not cooperate: an abort must end a turn within its grace even when
 * a tool body runs uninterruptibly, a listener hangs or the disk stalls. The work runs in a
 * fiber of its own, so giving up on it never waits for it; it is interrupted and left to
 * finish (or not) on its own.
 *
 * @internal
 */
import { Deferred, Effect, Exit, Fiber, Option } from "effect"
import type { Run } from "./state.ts"

/**
 * Runs `effect` and returns its exit, or `None` once the run's abort deadline has passed
 * (then the work is interrupted without waiting and detached).
 */
export const untilDeadline = <A, E>(run: Run, effect: Effect.Effect<A, E>): Effect.Effect<Option.Option<Exit.Exit<A, E>>> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkDetach(effect), (fiber) =>
      restore(awaitUntilDeadline(run, fiber)).pipe(
        // if the waiter itself is interrupted, the work must not outlive it unnoticed
        Effect.onInterrupt(() => Effect.sync(() => fiber.interruptUnsafe()))
      ))
  )

/**
 * Waits for a fiber's exit, or `None` once the run's abort deadline has passed; then the fiber
 * is interrupted without waiting.
 */
export const awaitUntilDeadline = <A, E>(run: Run, fiber: Fiber.Fiber<A, E>): Effect.Effect<Option.Option<Exit.Exit<A, E>>> =>
  Effect.raceFirst(
    Effect.map(Fiber.await(fiber), Option.some),
    Effect.andThen(
      Deferred.await(run.deadline),
      Effect.sync(() => {
        fiber.interruptUnsafe()
        return Option.none<Exit.Exit<A, E>>()
      })
    )
  )
