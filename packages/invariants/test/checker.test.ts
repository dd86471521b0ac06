/**
 * The Layer: `Invariants.layer` over `SessionStore.layer` watches every session of the store,
 * and a program that provides it fails with the first `InvariantError` (as a defect, from the
 * Layer's finalizer) whichever fiber broke the contract; `verify` fails mid-program; valid
 * programs pass without an error log; without the Layer nothing checks anything.
 */
import { InvariantError, Invariants } from "@dsh/invariants"
import { type Session, SessionStore } from "@dsh/session"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, Logger, References, type Scope } from "effect"
import { agentStatus, appendDraft, completed, context, type Draft, draft, history, loop, toEvents } from "./logs.ts"

const TestLayer = Invariants.layer.pipe(Layer.provideMerge(SessionStore.layer))

/** Runs a program with the test layer (its sessions in its own scope) and returns its Exit. */
const run = <A, E>(program: Effect.Effect<A, E, SessionStore | Invariants | Scope.Scope>) =>
  Effect.exit(program.pipe(Effect.scoped, Effect.provide(TestLayer)))

/** The defects of a failed Exit. */
const defects = (exit: Exit.Exit<unknown, unknown>): Array<unknown> =>
  Exit.isFailure(exit) ? exit.cause.reasons.filter(Cause.isDieReason).map((r) => r.defect) : []

/** The exit failed with exactly one defect, an InvariantError; returns it. */
const invariantDefect = (exit: Exit.Exit<unknown, unknown>): InvariantError => {
  expect(Exit.isFailure(exit)).toBe(true)
  const found = defects(exit)
  expect(found).toHaveLength(1)
  expect(found[0]).toBeInstanceOf(InvariantError)
  return found[0] as InvariantError
}

const fields = (e: InvariantError) => ({
  _tag: e._tag,
  code: e.code,
  rule: e.rule,
  sessionId: e.sessionId,
  seq: e.seq,
  eventType: e.eventType
})

const appendAll = (session: Session.Session, drafts: ReadonlyArray<Draft>) =>
  Effect.forEach(drafts, (d) => appendDraft(session, d), { discard: true })

const A = "agent-a"
const idle = agentStatus(A, "idle")
const strayEnd = draft("turn/end", { turn: 1, reason: completed })

/** A valid log of two turns. */
const twoTurns = () =>
  loop(A).idle().turn({ steps: [{ chunks: 2, calls: ["ok", "ok"] }, { chunks: 1 }] }).turn({ steps: [{}] }).drafts

/** Collects the messages logged at error level. */
const errorLog = () => {
  const messages: Array<string> = []
  const logger = Logger.make((options) => {
    if (options.logLevel === "Error") messages.push((options.message as ReadonlyArray<unknown>).map(String).join(" "))
  })
  return { messages, layer: Logger.layer([logger]) }
}

describe("Invariants.layer: a violation fails the program that provides it", () => {
  it.effect("(a) the program's own fiber appends an illegal event: a defect InvariantError naming rule, session, seq, type", () =>
    Effect.gen(function*() {
      const exit = yield* run(Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ id: "own-fiber" })
        yield* appendAll(session, [idle, context()])
        yield* appendDraft(session, strayEnd)
        return "done"
      }))
      const error = invariantDefect(exit)
      expect(fields(error)).toStrictEqual({
        _tag: "InvariantError",
        code: "INVARIANT",
        rule: "turn-pairing",
        sessionId: "own-fiber",
        seq: 2,
        eventType: "turn/end"
      })
      expect(error.message).toBe(
        "invariant \"turn-pairing\" violated in session own-fiber at seq 2 (turn/end): turn/end for turn 1 with no open turn"
      )
      expect(Cause.pretty((exit as Exit.Failure<unknown, unknown>).cause)).toContain(error.message)
    }))

  it.effect("(a) also when the program's sessions outlive the layer (created in the test's own scope)", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        Effect.gen(function*() {
          const store = yield* SessionStore
          const session = yield* store.create({ id: "outer-scope" })
          yield* appendDraft(session, agentStatus(A, "running"))
        }).pipe(Effect.provide(TestLayer))
      )
      expect(fields(invariantDefect(exit))).toMatchObject({ rule: "status-transition", sessionId: "outer-scope", seq: 0 })
    }))

  it.effect("(b) a child fiber appends an illegal event just before the program ends", () =>
    Effect.gen(function*() {
      const exit = yield* run(Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ id: "child" })
        yield* appendAll(session, twoTurns())
        const appended = yield* Deferred.make<void>()
        yield* Effect.forkChild(Effect.gen(function*() {
          yield* appendDraft(session, strayEnd)
          yield* Deferred.succeed(appended, undefined)
          return yield* Effect.never
        }))
        yield* Deferred.await(appended)
      }))
      expect(fields(invariantDefect(exit))).toMatchObject({
        rule: "turn-pairing",
        sessionId: "child",
        seq: twoTurns().length,
        eventType: "turn/end"
      })
    }))

  it.effect("(b) a detached fiber appends an illegal event; the program ends in the same step", () =>
    Effect.gen(function*() {
      const exit = yield* run(Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ id: "detached" })
        yield* appendAll(session, twoTurns())
        const fiber = yield* Effect.forkDetach(appendDraft(session, agentStatus(A, "idle")))
        yield* Fiber.await(fiber)
      }))
      expect(fields(invariantDefect(exit))).toMatchObject({
        rule: "status-transition",
        sessionId: "detached",
        seq: twoTurns().length,
        eventType: "agent/status"
      })
    }))

  it.effect("(b) the watcher reports on its own fiber, without verify: the violation is recorded and logged at once", () =>
    Effect.gen(function*() {
      const log = errorLog()
      const exit = yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const invariants = yield* Invariants
        const session = yield* store.create({ id: "watched" })
        yield* appendDraft(session, strayEnd)
        let found: ReadonlyArray<InvariantError> = []
        for (let i = 0; i < 100 && found.length === 0; i++) {
          yield* Effect.yieldNow
          found = yield* invariants.violations
        }
        expect(found.map((e) => e.rule)).toStrictEqual(["turn-pairing"])
        expect(log.messages).toStrictEqual([found[0]!.message])
      }).pipe(Effect.scoped, Effect.provide(TestLayer), Effect.provide(log.layer), Effect.exit)
      expect(fields(invariantDefect(exit))).toMatchObject({ rule: "turn-pairing", sessionId: "watched", seq: 0 })
      // recorded once: the finalizer's catch-up does not check an event twice
      expect(log.messages).toHaveLength(1)
    }))

  it.effect("(c) a seeded session is checked from its first event: a seed with a violation fails", () =>
    Effect.gen(function*() {
      const seed = toEvents([...twoTurns(), draft("step/start", { turn: 2, step: 2 })])
      const exit = yield* run(Effect.gen(function*() {
        const store = yield* SessionStore
        yield* store.create({ id: "seeded", seed })
      }))
      expect(fields(invariantDefect(exit))).toMatchObject({
        rule: "step-pairing",
        sessionId: "seeded",
        seq: seed.length - 1,
        eventType: "step/start"
      })
    }))

  it.effect("(c) a seeded session's numbering continues the seed's: turn 1 again fails, turn 3 passes", () =>
    Effect.gen(function*() {
      const seed = toEvents(twoTurns())
      const continued = (turn: number) =>
        run(Effect.gen(function*() {
          const store = yield* SessionStore
          const session = yield* store.create({ id: `seeded-${turn}`, seed })
          yield* appendAll(session, [agentStatus(A, "running"), draft("turn/start", { turn, trigger: "send" })])
        }))
      expect(fields(invariantDefect(yield* continued(1)))).toMatchObject({
        rule: "turn-numbering",
        sessionId: "seeded-1",
        seq: seed.length + 1
      })
      expect(yield* continued(3)).toStrictEqual(Exit.void)
    }))

  it.effect("(d) verify fails mid-program with the first violation; violations lists them all", () =>
    Effect.gen(function*() {
      const exit = yield* run(Effect.gen(function*() {
        const store = yield* SessionStore
        const invariants = yield* Invariants
        const good = yield* store.create({ id: "good" })
        yield* appendAll(good, twoTurns())
        yield* invariants.verify
        const bad = yield* store.create({ id: "bad" })
        yield* appendAll(bad, [idle, agentStatus(A, "running"), draft("turn/start", { turn: 2, trigger: "send" })])
        // verify catches up without waiting for the watchers
        const error = yield* Effect.flip(invariants.verify)
        expect(fields(error)).toMatchObject({ rule: "turn-numbering", sessionId: "bad", seq: 2 })
        const other = yield* store.create({ id: "other" })
        yield* appendAll(other, [context(), agentStatus(A, "disposed")])
        expect(fields(yield* Effect.flip(invariants.verify))).toMatchObject({ sessionId: "bad", seq: 2 })
        const all = yield* invariants.violations
        expect(all.map((e) => `${e.rule}@${e.sessionId}#${e.seq}`)).toStrictEqual([
          "turn-numbering@bad#2",
          "status-transition@other#1"
        ])
      }))
      // the program caught the failures of verify, yet it still fails at the end, with the
      // first violation and a count of the others
      const error = invariantDefect(exit)
      expect(fields(error)).toMatchObject({ rule: "turn-numbering", sessionId: "bad", seq: 2 })
      expect(error.message).toContain("(and 1 more violation(s): status-transition@other#1)")
    }))

  it.effect("(e) a valid program passes and logs nothing at error level (and an invalid one does)", () =>
    Effect.gen(function*() {
      const program = (extra: ReadonlyArray<Draft>) =>
        Effect.gen(function*() {
          const store = yield* SessionStore
          const invariants = yield* Invariants
          for (const id of ["one", "two"]) {
            const session = yield* store.create({ id })
            yield* appendAll(session, [...twoTurns(), ...extra])
          }
          yield* invariants.verify
          return yield* invariants.violations
        })
      const valid = errorLog()
      const passed = yield* program([]).pipe(Effect.scoped, Effect.provide(TestLayer), Effect.provide(valid.layer), Effect.exit)
      expect(passed).toStrictEqual(Exit.succeed([]))
      expect(valid.messages).toStrictEqual([])

      const invalid = errorLog()
      const failed = yield* program([agentStatus(A, "disposed"), context()]).pipe(
        Effect.scoped,
        Effect.provide(TestLayer),
        Effect.provide(invalid.layer),
        Effect.exit
      )
      expect(Exit.isFailure(failed)).toBe(true)
      // one error log per violation (one in each session), however the watchers and the
      // catch-up shared the work
      expect([...invalid.messages].sort()).toStrictEqual(["one", "two"].map((id) =>
        `invariant "nothing-after-disposed" violated in session ${id} at seq ${twoTurns().length + 1} (context/message): ` +
        "context/message appended after agent agent-a was disposed"
      ))
    }))

  it.effect("(f) many sessions appended concurrently: all checked, the one bad session named", () =>
    Effect.gen(function*() {
      const tapes = Array.from({ length: 40 }, (_, i) => Array.from({ length: 120 }, (_, j) => (i * 31 + j * 17) % 100))
      const program = (bad: number | undefined) =>
        run(Effect.gen(function*() {
          const store = yield* SessionStore
          const invariants = yield* Invariants
          yield* Effect.forEach(
            tapes,
            (tape, i) =>
              Effect.gen(function*() {
                const session = yield* store.create({ id: `s${i}` })
                const drafts = history(tape)
                for (const [k, d] of drafts.entries()) {
                  if (i === bad && k === 5) yield* appendDraft(session, draft("step/end", { turn: 9, step: 9 }))
                  yield* appendDraft(session, d)
                  if (k % 3 === 0) yield* Effect.yieldNow
                }
              }),
            { concurrency: "unbounded", discard: true }
          )
          const sessions = yield* (yield* SessionStore).all
          expect(sessions).toHaveLength(tapes.length)
          let events = 0
          for (const s of sessions) events += (yield* s.events).length
          expect(events).toBeGreaterThan(tapes.length * 10)
          // (verify would fail the program itself; here only the layer's finalizer fails it)
          if (bad === undefined) yield* invariants.verify
        }))
      expect(yield* program(undefined)).toStrictEqual(Exit.void)
      const error = invariantDefect(yield* program(17))
      expect(fields(error)).toMatchObject({ rule: "step-pairing", sessionId: "s17", seq: 5, eventType: "step/end" })
    }))
})

describe("Invariants.layer: the watcher and the catch-up never check an event twice", () => {
  it.effect("verify racing the watchers (fibers yielding every few operations) reports no false violation", () =>
    Effect.gen(function*() {
      // with a small operation budget, the fiber running verify's catch-up yields between
      // reading a session's events and checking them, and the watcher checks some of them
      // meanwhile; checking one twice would report a spurious seq-increments
      for (let budget = 3; budget <= 16; budget++) {
        const exit = yield* Effect.gen(function*() {
          const store = yield* SessionStore
          const invariants = yield* Invariants
          for (let i = 0; i < 3; i++) {
            const session = yield* store.create({ id: `s${i}` })
            const tape = Array.from({ length: 100 }, (_, j) => (j * 7 + i) % 100)
            for (const d of history(tape)) yield* appendDraft(session, d)
            yield* invariants.verify
          }
        }).pipe(
          Effect.scoped,
          Effect.provide(TestLayer),
          // the layer's watchers get the same budget
          Effect.provideService(References.MaxOpsBeforeYield, budget),
          Effect.exit
        )
        expect(exit, `MaxOpsBeforeYield ${budget}`).toStrictEqual(Exit.void)
      }
    }))
})

describe("Invariants.layer: no violation is lost, however large or odd the log", () => {
  it.effect("a huge seed broken at every event: every violation is recorded, verify and the teardown fail with the first", () =>
    Effect.gen(function*() {
      // one batch of 200,000 violations (a spread push of them would throw a RangeError)
      const n = 200_000
      const seed = toEvents(Array.from({ length: n }, () => draft("user/message", { content: [], source: "user" })))
      let recorded = 0
      let verified: Exit.Exit<void, InvariantError> | undefined
      const exit = yield* run(Effect.gen(function*() {
        const invariants = yield* Invariants
        yield* (yield* SessionStore).create({ id: "huge", seed })
        verified = yield* Effect.exit(invariants.verify)
        recorded = (yield* invariants.violations).length
      })).pipe(Effect.provideService(References.MinimumLogLevel, "None"))
      expect(recorded).toBe(n)
      expect(verified !== undefined && Exit.isFailure(verified) ? Cause.squash(verified.cause) : undefined).toMatchObject({
        rule: "message-in-turn",
        seq: 0
      })
      const error = invariantDefect(exit)
      expect(fields(error)).toMatchObject({ rule: "message-in-turn", sessionId: "huge", seq: 0, eventType: "user/message" })
      expect(error.message).toContain(`and ${n - 1} more violation(s)`)
    }))

  it.effect("a compaction after data the derivation cannot read: the data-shape violation fails the program, verify is no TypeError", () =>
    Effect.gen(function*() {
      let verified: unknown
      const exit = yield* run(Effect.gen(function*() {
        const session = yield* (yield* SessionStore).create({ id: "odd" })
        const append = session.append as unknown as (type: string, data: unknown) => Effect.Effect<unknown>
        yield* appendAll(session, [idle, agentStatus(A, "running"), draft("turn/start", { turn: 1, trigger: "send" })])
        yield* appendAll(session, [draft("step/start", { turn: 1, step: 1 })])
        yield* append("assistant/message", { turn: 1, step: 1, content: null })
        yield* appendAll(session, [draft("step/end", { turn: 1, step: 1 }), draft("turn/end", { turn: 1, reason: completed })])
        yield* appendAll(session, [draft("compaction/applied", { kind: "prune", reason: "manual", results: [], tokensBefore: 2, tokensAfter: 1 })])
        const invariants = yield* Invariants
        const result = yield* Effect.exit(invariants.verify)
        verified = Exit.isFailure(result) ? Cause.squash(result.cause) : undefined
      })).pipe(Effect.provideService(References.MinimumLogLevel, "None"))
      expect(verified).toBeInstanceOf(InvariantError)
      expect(fields(verified as InvariantError)).toMatchObject({ rule: "data-shape", seq: 4, eventType: "assistant/message" })
      expect(fields(invariantDefect(exit))).toMatchObject({ rule: "data-shape", sessionId: "odd", seq: 4 })
    }))

  it.effect("a long log with a compaction every turn is checked whole, without a violation (its history is derived once)", () =>
    Effect.gen(function*() {
      // 4,000 turns, each followed by a summary of it: deriving the log from its start at each
      // compaction made this take seconds (no timing is asserted: the bench measures speed)
      const l = loop(A).idle()
      let through = -1
      for (let t = 0; t < 4000; t++) {
        l.turn({ steps: [{ chunks: 2 }] })
        const end = l.drafts.length - 2 // the turn/end (its idle status follows)
        l.push(draft("compaction/applied", {
          kind: "summary",
          reason: "auto",
          from: through + 1,
          through: end,
          summary: `turns 1 to ${t + 1}`,
          model: "m",
          tokensBefore: 100,
          tokensAfter: 10
        }))
        through = end
      }
      const seed = toEvents(l.drafts)
      const exit = yield* run(Effect.gen(function*() {
        yield* (yield* SessionStore).create({ id: "compacted", seed })
        yield* (yield* Invariants).verify
      }))
      expect(exit).toStrictEqual(Exit.void)
    }))
})

describe("Invariants.layer: production compositions leave it out", () => {
  it.effect("(g) without the layer nothing checks: an illegal log is appended and the program succeeds", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        Effect.gen(function*() {
          const store = yield* SessionStore
          const session = yield* store.create({ id: "prod" })
          yield* appendAll(session, [strayEnd, agentStatus(A, "running"), agentStatus(A, "running")])
          return (yield* session.events).length
        }).pipe(Effect.scoped, Effect.provide(SessionStore.layer))
      )
      expect(exit).toStrictEqual(Exit.succeed(3))
    }))

  it.effect("(g) the checker is a service of the test layer only: SessionStore.layer alone does not provide it", () =>
    Effect.gen(function*() {
      const withStore = yield* Effect.serviceOption(Invariants).pipe(Effect.provide(SessionStore.layer))
      expect(withStore._tag).toBe("None")
      const withTest = yield* Effect.serviceOption(Invariants).pipe(Effect.provide(TestLayer))
      expect(withTest._tag).toBe("Some")
    }))
})

describe("Invariants.layer: what a test author sees", () => {
  const illegal = Effect.gen(function*() {
    const store = yield* SessionStore
    const session = yield* store.create({ id: "author" })
    yield* appendAll(session, [idle, agentStatus(A, "disposed"), context("too late")])
  }).pipe(Effect.scoped, Effect.provide(TestLayer))

  // vitest's it.fails: this test passes only because the Effect test fails
  it.effect.fails("an it.effect whose program breaks the contract fails", () => illegal)

  it("the test fails with the InvariantError's message", async () => {
    const rejection = await Effect.runPromise(illegal).then(() => undefined, (e: unknown) => e)
    expect(rejection).toBeInstanceOf(Error)
    expect(String((rejection as Error).message)).toBe(
      "invariant \"nothing-after-disposed\" violated in session author at seq 2 (context/message): " +
        "context/message appended after agent agent-a was disposed"
    )
  })
})
