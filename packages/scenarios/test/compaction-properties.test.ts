/**
 * Compaction (issue #18) on generated sessions: turns of random size — user messages, zero to
 * two tool steps whose results range from a few characters to 1,500, answers — with a random
 * number of verbatim turns kept, pruning on or off, and `agent.compact()` called after random
 * turns. The window is chosen so that the kept turns, the current turn, a summary and the
 * settings always fit. Whatever the session:
 *
 * - every request the agent sends fits the window and is provider-valid;
 * - the system prompt and tools never change, and between two compactions each request starts
 *   with the previous one's messages (the prefix caches keep hitting);
 * - the history is a pure projection of the log: deriving the whole log from scratch gives it;
 * - a summary replaces exactly the turns it covers, and the turns after it stay verbatim; a
 *   summary keeps the configured number of turns;
 * - a pruned result names a logged tool result of that size, which stays in the log;
 * - nothing is lost: every user message is logged once; the invariants hold throughout.
 */
import { Invariants } from "@dsh/invariants"
import { History, type Message, type ModelRequest } from "@dsh/llm"
import { ScriptedModel } from "@dsh/model"
import { Compaction, Derivation, SessionEvent } from "@dsh/session"
import { Tool } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { create, type Event, ofType, TestLayer, textOf } from "./helpers.ts"

const { reply } = ScriptedModel

const between = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))

const TurnSpec = Schema.Struct({
  user: between(10, 300),
  tools: Schema.Array(between(10, 1_500)).check(Schema.isMaxLength(2)),
  answer: between(10, 300),
  compactAfter: Schema.Boolean
})
type TurnSpec = typeof TurnSpec.Type

const Arbitraries = {
  turns: Schema.Array(TurnSpec).check(Schema.isMinLength(6), Schema.isMaxLength(20)),
  keepTurns: Schema.Literals([0, 1, 2]),
  prune: Schema.Boolean,
  summaryChars: between(10, 400)
}

/** A tool returning `size` characters. */
const dump = Tool.make("dump", {
  description: "Returns a large text",
  parameters: Schema.Struct({ size: Schema.Number }),
  execute: ({ size }) => Effect.succeed("d".repeat(size))
})

const userText = (turn: number, chars: number) => `u${turn} ${"u".repeat(chars)}`

/** What the model answers, step by step across the whole session. */
const planOf = (turns: ReadonlyArray<TurnSpec>): ReadonlyArray<ReadonlyArray<ScriptedModel.Step>> =>
  turns.flatMap((turn, t) => [
    ...turn.tools.map((size, k) => reply.toolCalls([{ name: "dump", arguments: { size }, id: `t${t}c${k}` }])),
    reply.text(`a${t} ${"a".repeat(turn.answer)}`)
  ])

/** Step requests get the plan in order; a summarizing call (told apart by its prompt) a summary. */
const scriptOf = (plan: ReadonlyArray<ReadonlyArray<ScriptedModel.Step>>, summaryChars: number) => {
  const steps: Array<ModelRequest.ModelRequest> = []
  let summaries = 0
  const one: ScriptedModel.Reply = (request) => {
    if (request.system === Compaction.defaultPrompt) return reply.text(`summary ${++summaries} ${"s".repeat(summaryChars)}`)
    steps.push(request)
    return plan[steps.length - 1]!
  }
  return { steps, script: Array.from({ length: plan.length * 3 + 10 }, () => one) }
}

/**
 * A window where the kept turns and the current one, the summary and the settings always fit:
 * the largest turn's tokens (a tool call and its envelope counted generously), times the turns
 * a request may hold verbatim, plus the summary and a margin for the settings.
 */
const windowOf = (turns: ReadonlyArray<TurnSpec>, keepTurns: number, summaryChars: number) => {
  const largest = Math.max(...turns.map((turn) => turn.user + turn.answer + turn.tools.reduce((n, size) => n + size + 150, 0) + 50))
  return (keepTurns + 1) * Compaction.tokensOf(largest) + Compaction.tokensOf(summaryChars + 200) + 300
}

/** The size of a request as the loop estimates it: its messages and its settings, characters over four. */
const tokensOfRequest = (request: ModelRequest.ModelRequest) =>
  Compaction.tokensOf(Compaction.charsOfHistory(request.messages) + JSON.stringify(SessionEvent.settingsOf(request)).length)

const texts = (messages: ReadonlyArray<Message.Message>) => messages.map((m) => textOf(m.content))

const isPrefix = (shorter: ReadonlyArray<Message.Message>, longer: ReadonlyArray<Message.Message>) =>
  shorter.length <= longer.length && JSON.stringify(longer.slice(0, shorter.length)) === JSON.stringify(shorter)

const summaries = (events: ReadonlyArray<Event>) =>
  ofType(events, "compaction/applied").flatMap((e) => (e.data.kind === "summary" ? [{ seq: e.seq, ...e.data }] : []))

describe("#18 compaction on generated sessions", () => {
  it.effect.prop(
    "requests fit and stay valid, the history is the log's projection, summaries keep the newest turns verbatim",
    Arbitraries,
    ({ keepTurns, prune, summaryChars, turns }) => {
      const { script, steps } = scriptOf(planOf(turns), summaryChars)
      const window = windowOf(turns, keepTurns, summaryChars)
      return Effect.gen(function*() {
        const agent = yield* create({
          compaction: { contextWindow: window, threshold: 0.8, keepTurns, prune: prune ? { minChars: 200 } : false }
        })
        const invariants = yield* Invariants
        for (const [t, turn] of turns.entries()) {
          yield* agent.run(userText(t, turn.user))
          if (turn.compactAfter) yield* agent.compact()
          yield* invariants.verify
        }
        yield* agent.awaitIdle
        const events = yield* agent.session.events

        // every request fits and is provider-valid; its settings are the first one's
        expect(steps).toHaveLength(turns.reduce((n, turn) => n + turn.tools.length + 1, 0))
        const settings = JSON.stringify(SessionEvent.settingsOf(steps[0]!))
        for (const request of steps) {
          expect(tokensOfRequest(request)).toBeLessThanOrEqual(window)
          expect(Derivation.problems(request.messages)).toStrictEqual([])
          expect(JSON.stringify(SessionEvent.settingsOf(request))).toBe(settings)
        }
        // between two compactions, each request extends the previous one
        const requests = ofType(events, "model/request")
        const compacted = ofType(events, "compaction/applied").map((e) => e.seq)
        for (let i = 1; i < steps.length; i++) {
          const since = compacted.some((seq) => seq > requests[i - 1]!.seq && seq < requests[i]!.seq)
          if (!since) expect(isPrefix(History.toArray(steps[i - 1]!.messages), History.toArray(steps[i]!.messages))).toBe(true)
        }

        // the history is the log's projection
        const history = History.toArray(yield* agent.session.messages)
        expect(JSON.stringify(history)).toBe(JSON.stringify(History.toArray(Derivation.derive(events))))
        expect(Derivation.problems(yield* agent.session.messages)).toStrictEqual([])

        // nothing lost from the log
        const users = ofType(events, "user/message")
        expect(users.map((e) => textOf(e.data.content))).toStrictEqual(turns.map((turn, t) => userText(t, turn.user)))

        // the last summary stands in for the turns it covers; the turns after it are there verbatim
        const last = summaries(events).at(-1)
        const shown = texts(history)
        for (const user of users) {
          const text = textOf(user.data.content)
          expect(shown.includes(text)).toBe(last === undefined || user.seq > last.through)
        }
        if (last !== undefined) expect(shown[0]).toBe(Derivation.summaryText(last.summary))
        // each summary keeps the configured number of whole turns after its range
        const ends = ofType(events, "turn/end").map((e) => e.seq)
        for (const summary of summaries(events)) {
          expect(events[summary.through]!.type).toBe("turn/end")
          expect(ends.filter((seq) => seq > summary.through && seq < summary.seq)).toHaveLength(keepTurns)
        }

        // a pruned result names a logged tool result of that size
        for (const applied of ofType(events, "compaction/applied")) {
          if (applied.data.kind !== "prune") continue
          for (const pruned of applied.data.results) {
            const original = events[pruned.seq]!
            expect(original.type).toBe("tool/result")
            if (original.type !== "tool/result") continue
            expect(original.data.callId).toBe(pruned.callId)
            expect(Compaction.charsOfContent(original.data.content)).toBe(pruned.chars)
          }
        }
        yield* invariants.verify
      }).pipe(Effect.scoped, Effect.provide(TestLayer({ script, tools: [dump] })))
    },
    { timeout: 60_000, arbitrary: { runs: 150 } }
  )
})
