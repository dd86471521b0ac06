/**
 * The flush checkpoint: where write-behind persistence becomes durable. Persistence Layers
 * register a flush hook (scoped; registering into a scope that is closed already fails with
 * `ScopeClosedError` and registers nothing); `flush(session)` runs every hook concurrently and returns
 * when all have finished. Failures are reported as one typed `PersistenceError` for the
 * caller to decide about — the loop logs it and goes on; it never kills an agent. A flush
 * after the Layer closed fails the same way: the persistence it ran closed with it.
 *
 * @since 0.1.0
 */
import { HarnessError, ScopedList } from "@dsh/llm"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Session } from "./Session.ts"
import { PersistenceError } from "./SessionError.ts"

/**
 * A flush hook: makes everything logged in the session so far durable.
 *
 * @since 0.1.0
 * @category models
 */
export interface FlushHook {
  readonly name: string
  readonly flush: (session: Session) => Effect.Effect<void, PersistenceError>
}

// What a hook is called in a refused registration: its name, or what stands in its place.
const nameOf = (hook: FlushHook): string => {
  const name: unknown = (hook as { readonly name?: unknown } | null | undefined)?.name
  return typeof name === "string" ? name : HarnessError.describe(name)
}

/**
 * @since 0.1.0
 * @category services
 */
export class FlushCheckpoint extends Context.Service<FlushCheckpoint, {
  /**
   * Registers a hook until the current scope closes. Fails with `ScopeClosedError`,
   * registering nothing, when the current scope is closed already.
   */
  readonly register: (hook: FlushHook) => Effect.Effect<void, ScopedList.ScopeClosedError, Scope.Scope>
  /** Runs every hook for the session, concurrently. */
  readonly flush: (session: Session) => Effect.Effect<void, PersistenceError>
}>()("@dsh/session/FlushCheckpoint") {
  /**
   * @since 0.1.0
   */
  static readonly layer: Layer.Layer<FlushCheckpoint> = Layer.effect(FlushCheckpoint, Effect.gen(function*() {
    // one entry per registration: the same hook registered in two scopes stays until both close
    const hooks = ScopedList.make<FlushHook>({ describe: (hook) => `flush hook ${JSON.stringify(nameOf(hook))}` })
    // its persistence Layers closed with it: a flush after that would succeed having written nothing
    let closed = false
    yield* Effect.addFinalizer(() => Effect.sync(() => void (closed = true)))

    const flush = (session: Session) =>
      Effect.suspend(() => {
        if (closed) {
          return Effect.fail(
            new PersistenceError({
              message: `session ${JSON.stringify(session.id)} was not flushed: the FlushCheckpoint Layer is closed, and the persistence ` +
                "it ran went with it; nothing was made durable",
              sessionId: session.id
            })
          )
        }
        const running = hooks.current()
        if (running.length === 0) return Effect.void
        return Effect.forEach(
          running,
          (hook) =>
            // a hook that throws (or gives no Effect) fails like one that dies: a plain suspend
            // would let either escape every catch below
            Effect.suspend(() => {
              const flushed: unknown = hook.flush(session)
              return Effect.isEffect(flushed)
                ? flushed as Effect.Effect<void, PersistenceError>
                : Effect.die(new TypeError(`it returned ${HarnessError.describe(flushed)}, not an Effect`))
            }).pipe(
              Effect.catchDefect((defect) =>
                Effect.fail(
                  new PersistenceError({
                    message: `flush hook "${hook.name}" died: ${HarnessError.describe(defect)}`,
                    sessionId: session.id,
                    cause: defect
                  })
                )
              ),
              Effect.result
            ),
          { concurrency: "unbounded" }
        ).pipe(
          Effect.flatMap((results) => {
            const failures = results.flatMap((r) => (r._tag === "Failure" ? [r.failure] : []))
            if (failures.length === 0) return Effect.void
            // a hook's failure of another class (past the types: a plain Error) is named as the
            // PersistenceError its type promises, never passed on without a code
            if (failures.length === 1 && failures[0] instanceof PersistenceError) return Effect.fail(failures[0])
            return Effect.fail(
              new PersistenceError({
                message: failures.length === 1
                  ? `a flush hook failed for session ${session.id}: ${HarnessError.describe(failures[0])}`
                  : `${failures.length} flush hooks failed for session ${session.id}: ` +
                    failures.map((f) => HarnessError.describe(f)).join("; "),
                sessionId: session.id,
                failures: failures.map((f) => HarnessError.describe(f))
              })
            )
          })
        )
      }).pipe(
        // the caller is the agent loop at every turn end: not worth an Error per turn
        Effect.withSpan("FlushCheckpoint.flush", { attributes: { "dsh.session": session.id } }, { captureStackTrace: false })
      )

    return FlushCheckpoint.of({ register: (hook) => hooks.add(hook), flush })
  }))
}
