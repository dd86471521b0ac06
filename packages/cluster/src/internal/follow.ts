/**
 * An agent's events that follow it from runner to runner. A stream from a runner that dies is
 * not ended by the cluster (its client waits), so the follower watches where the agent runs
 * (`Status`, every `every`) and, once the runner changed (or `Status` failed), drops the
 * subscription and opens another from the next `seq`: no event is missed or repeated.
 */
import type { SessionEvent } from "@dsh/session"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"

/** How the follower reaches the agent. */
export interface Source<E> {
  readonly runner: Effect.Effect<string, E>
  readonly subscribe: (from: number) => Stream.Stream<SessionEvent.SessionEvent, E>
}

/** The events from `from`, across moves; it ends only when its consumer stops. */
export const follow = <E>(source: Source<E>, from: number, every: Duration.Duration): Stream.Stream<SessionEvent.SessionEvent, E> => {
  let next = from
  const segment = (): Stream.Stream<SessionEvent.SessionEvent, E> =>
    Stream.unwrap(Effect.map(source.runner, (runner) => {
      const moved = source.runner.pipe(
        Effect.repeat({ schedule: Schedule.spaced(every), until: (now) => now !== runner }),
        Effect.ignore
      )
      return source.subscribe(next).pipe(
        Stream.filter((event) => event.seq >= next),
        Stream.tap((event) => Effect.sync(() => void (next = event.seq + 1))),
        Stream.interruptWhen(moved),
        // ended: the agent stopped on that runner (idle, moved) or moved away; resubscribe
        Stream.concat(Stream.suspend(segment))
      )
    }))
  return segment()
}
