/**
 * Fixtures of the invariants suite (not a test file: vitest runs `*.test.ts` only).
 *
 * - drafts (an event without its seq and time), appended through the session API or turned
 *   into hand-made events for `Rules.make().push`;
 * - {@link loop}: a writer that logs what the agent loop logs (design.md, "Agents and the
 *   loop"), turn by turn, so valid logs read like the loop's pseudo-code;
 * - {@link history}: a generator of valid histories driven by a tape of small integers (an
 *   `it.prop` input, so a failing history shrinks by shortening the tape);
 * - the single mutations of a log (drop, duplicate, swap two adjacent events).
 */
import { Rules } from "@dsh/invariants"
import { Content, FinishReason, Ids, StreamChunk, Usage } from "@dsh/llm"
import { Freeze, type Session, SessionEvent } from "@dsh/session"
import { Effect, Schema } from "effect"

// ---------------------------------------------------------------------------------------------
// Drafts and events
// ---------------------------------------------------------------------------------------------

/** An extension event type: the checker must accept extension events anywhere in a turn. */
export const Note = SessionEvent.define("test:note", Schema.Struct({ text: Schema.String }))

export type CoreDraft = {
  readonly [K in SessionEvent.CoreType]: { readonly type: K; readonly data: SessionEvent.DataOf<K> }
}[SessionEvent.CoreType]

export type Draft = CoreDraft | { readonly type: "test:note"; readonly data: { readonly text: string } }

export const draft = <T extends SessionEvent.CoreType>(type: T, data: SessionEvent.DataOf<T>): Draft =>
  ({ type, data }) as Draft

export const note = (text: string): Draft => ({ type: "test:note", data: { text } })

/** Appends a draft through the session API (a core type directly, `test:note` through its definition). */
export const appendDraft = (session: Session.Session, d: Draft): Effect.Effect<SessionEvent.SessionEvent> =>
  d.type === "test:note"
    ? Effect.orDie(session.append(Note, d.data))
    : (session.append as unknown as (type: string, data: unknown) => Effect.Effect<SessionEvent.SessionEvent>)(
      d.type,
      d.data
    )

/** Hand-made events: seq counts from `from`; deep-frozen like logged events unless `freeze: false`. */
export const toEvents = (
  drafts: ReadonlyArray<Draft>,
  options: { readonly from?: number; readonly freeze?: boolean } = {}
): Array<SessionEvent.SessionEvent> => {
  const from = options.from ?? 0
  return drafts.map((d, i) => {
    const event = { type: d.type, seq: from + i, time: 1000 + from + i, data: d.data } as SessionEvent.SessionEvent
    return options.freeze === false ? event : Freeze.deep(event)
  })
}

/** The violations of a whole log, checked by one fresh checker. */
export const check = (
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  options?: Rules.Options
): Array<Rules.Violation> => {
  const checker = Rules.make(options)
  return events.flatMap((event) => checker.push(event))
}

/** What the tests compare: a violation without its message. */
export const brief = (v: { readonly rule: string; readonly seq: number; readonly type: string }) => ({
  rule: v.rule,
  seq: v.seq,
  type: v.type
})

// ---------------------------------------------------------------------------------------------
// The loop writer
// ---------------------------------------------------------------------------------------------

/** How a tool call ended: finished, failed, or stopped by abort/error/disposal (an ABORTED result). */
export type Outcome = "ok" | "error" | "aborted"

export interface StepSpec {
  /** Steering messages drained before `step/start`. */
  readonly steering?: number
  /** Text deltas streamed before the assistant message. */
  readonly chunks?: number
  /** False when the stream was cut before a message was assembled (abort or error mid-stream). */
  readonly message?: boolean
  /** The message's tool calls and how each ended. */
  readonly calls?: ReadonlyArray<Outcome>
  /** Tools ran concurrently: every `tool/call` first, then the results in call order. */
  readonly parallel?: boolean
  /** Whether `usage` follows the message (default true). */
  readonly usage?: boolean
  /** Indices of the calls whose `tool/call` is followed by a `context/message` before their result. */
  readonly contextInCall?: ReadonlyArray<number>
  /** Steering messages drained after the tools, before `step/end`. */
  readonly steeringAtEnd?: number
  /** An `error` event inside the step (a failed stream). */
  readonly error?: boolean
}

export interface TurnSpec {
  readonly trigger?: string
  /** Queued user messages drained after `turn/start` (default 1). */
  readonly users?: number
  /** An extension event after the user messages. */
  readonly note?: boolean
  readonly steps: ReadonlyArray<StepSpec>
  /** Default `completed`. A `disposed` turn is followed by `agent/status disposed`, not `idle`. */
  readonly end?: SessionEvent.TurnEndReason
  /**
   * More was queued: the agent stays `running` after the turn, and the next turn follows
   * without a status between (the loop's driver runs queued turns back to back).
   */
  readonly stay?: boolean
  /** A failed flush checkpoint: an `error` event after `turn/end`. */
  readonly errorAfter?: boolean
}

export interface Loop {
  readonly drafts: Array<Draft>
  /** The current agent's status (its first must be `idle`). */
  readonly status: (status: "idle" | "running" | "disposed") => Loop
  readonly idle: () => Loop
  readonly dispose: () => Loop
  /**
   * `running` (unless the agent still is), a whole turn, then `idle` (`disposed` for a turn
   * that ended `disposed`; nothing for a turn that `stay`s running).
   */
  readonly turn: (spec: TurnSpec) => Loop
  /** Whether the current agent's latest status is `running`. */
  readonly running: () => boolean
  /** `inject`: a `context/message` outside a turn. */
  readonly inject: (text?: string) => Loop
  /** A new agent takes over the log (after the previous one was disposed); call `idle()` next. */
  readonly switchTo: (agent: string) => Loop
  /** Raw drafts. */
  readonly push: (...drafts: ReadonlyArray<Draft>) => Loop
  readonly lastTurn: () => number
}

export const agentStatus = (agent: string, status: "idle" | "running" | "disposed"): Draft =>
  draft("agent/status", { agentId: Ids.agentId(agent), status })

export const completed: SessionEvent.TurnEndReason = { kind: "completed" }
export const aborted: SessionEvent.TurnEndReason = { kind: "aborted", reason: "user" }
export const failed: SessionEvent.TurnEndReason = { kind: "error", message: "the stream failed", code: "LLM_SERVER" }
export const limit: SessionEvent.TurnEndReason = { kind: "limit", name: "max-steps", message: "too many steps" }
export const disposed: SessionEvent.TurnEndReason = { kind: "disposed" }

export const result = (turn: number, step: number, callId: Ids.CallId, outcome: Outcome = "ok"): Draft =>
  draft("tool/result", {
    turn,
    step,
    callId,
    ...(outcome === "ok"
      ? { content: [Content.text(`result of ${callId}`)], isError: false }
      : outcome === "error"
      ? { content: [Content.text("boom")], isError: true, error: { tag: "ToolFailedError", code: "TOOL_FAILED" } }
      : { content: [Content.text("aborted")], isError: true, error: { tag: "ToolAbortedError", code: "ABORTED" } })
  })

export const call = (turn: number, step: number, callId: Ids.CallId): Draft =>
  draft("tool/call", { turn, step, callId, name: "tool", arguments: "{}" })

export const message = (turn: number, step: number, callIds: ReadonlyArray<Ids.CallId> = []): Draft =>
  draft("assistant/message", {
    turn,
    step,
    content: [Content.text(`answer ${turn}.${step}`), ...callIds.map((id) => Content.toolCall(id, "tool", "{}"))],
    finishReason: callIds.length > 0 ? FinishReason.toolCalls : FinishReason.stop
  })

export const chunk = (turn: number, step: number, text = "d"): Draft =>
  draft("assistant/chunk", { turn, step, chunk: StreamChunk.textDelta(0, text) })

export const usage = (turn: number, step: number): Draft =>
  draft("usage", { turn, step, usage: Usage.make({ inputTokens: 10 * step, outputTokens: step }) })

export const user = (text = "hello"): Draft => draft("user/message", { content: [Content.text(text)], source: "user" })

export const context = (text = "the file changed"): Draft =>
  draft("context/message", { content: [Content.text(text)], source: "ide" })

export const steering = (turn: number, text = "not that one"): Draft =>
  draft("steering/message", { turn, content: [Content.text(text)], source: "user" })

/**
 * Writes logs the way the loop does. Call ids are unique per call (`unique`), or `call_1`,
 * `call_2`, … in every message, like a scripted model's (`scripted`).
 */
export const loop = (
  agent: string,
  options: { readonly turn?: number; readonly ids?: "unique" | "scripted" } = {}
): Loop => {
  const drafts: Array<Draft> = []
  let current = agent
  let turn = options.turn ?? 0
  let running = false
  const self: Loop = {
    drafts,
    status: (status) => {
      running = status === "running"
      return self.push(agentStatus(current, status))
    },
    idle: () => self.status("idle"),
    dispose: () => self.status("disposed"),
    inject: (text) => self.push(context(text)),
    switchTo: (next) => {
      current = next
      return self
    },
    push: (...more) => {
      drafts.push(...more)
      return self
    },
    lastTurn: () => turn,
    running: () => running,
    turn: (spec) => {
      const n = ++turn
      const end = spec.end ?? completed
      if (!running) self.status("running")
      self.push(draft("turn/start", { turn: n, trigger: spec.trigger ?? "send" }))
      for (let i = 0; i < (spec.users ?? 1); i++) self.push(user(`message ${n}.${i}`))
      if (spec.note === true) self.push(note(`note ${n}`))
      spec.steps.forEach((s, k) => {
        const step = k + 1
        for (let i = 0; i < (s.steering ?? 0); i++) self.push(steering(n))
        self.push(draft("step/start", { turn: n, step }))
        for (let i = 0; i < (s.chunks ?? 0); i++) self.push(chunk(n, step, `d${i}`))
        if (s.message !== false) {
          const outcomes = s.calls ?? []
          const ids = outcomes.map((_, j) =>
            Ids.callId(options.ids === "scripted" ? `call_${j + 1}` : `${current}/t${n}s${step}c${j + 1}`)
          )
          self.push(message(n, step, ids))
          if (s.usage !== false) self.push(usage(n, step))
          const announce = (j: number) => {
            self.push(call(n, step, ids[j]!))
            if (s.contextInCall?.includes(j) === true) self.push(context(`while ${ids[j]} runs`))
          }
          if (s.parallel === true) {
            ids.forEach((_, j) => announce(j))
            ids.forEach((id, j) => self.push(result(n, step, id, outcomes[j])))
          } else {
            ids.forEach((id, j) => {
              announce(j)
              self.push(result(n, step, id, outcomes[j]))
            })
          }
        }
        for (let i = 0; i < (s.steeringAtEnd ?? 0); i++) self.push(steering(n, "and then"))
        if (s.error === true) self.push(draft("error", { turn: n, step, message: "stream failed", code: "LLM_SERVER" }))
        self.push(draft("step/end", { turn: n, step }))
      })
      self.push(draft("turn/end", { turn: n, reason: end }))
      if (spec.errorAfter === true) self.push(draft("error", { message: "flush failed", code: "PERSISTENCE" }))
      if (end.kind === "disposed") return self.status("disposed")
      return spec.stay === true ? self : self.status("idle")
    }
  }
  return self
}

// ---------------------------------------------------------------------------------------------
// The generator of valid histories
// ---------------------------------------------------------------------------------------------

/**
 * The tape: every choice of the generator reads the next number (modulo its range). When the
 * tape runs out every choice is 0, the smallest history; shrinking shortens the tape.
 */
export const Tape = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 99 }))).check(
  Schema.isMaxLength(240)
)

/**
 * A valid history: agents in sequence (every one but the last disposed), each with up to five
 * turns of one to three steps; steps with chunks, zero to three tool calls run in order or in
 * parallel, context messages between a call and its result, steering before and inside steps,
 * errors inside a step and after a turn; turns that complete, hit a limit, are aborted or fail
 * (mid-stream, or between tool calls with ABORTED results for the rest) or are disposed; turns
 * back to back while the agent stays running, and disposals between two such turns.
 */
export const history = (tape: ReadonlyArray<number>): Array<Draft> => {
  let at = 0
  const pick = (n: number): number => (n <= 1 ? 0 : (tape[at++] ?? 0) % n)
  const chance = (n: number): boolean => pick(n) === n - 1
  const l = loop("agent-0", { ids: chance(4) ? "scripted" : "unique" })

  const ending = (kind: number): SessionEvent.TurnEndReason =>
    [completed, completed, aborted, failed, limit, disposed][kind]!

  const turnSpec = (): TurnSpec => {
    const end = ending(pick(6))
    const count = 1 + pick(3)
    const steps = Array.from({ length: count }, (_, k): StepSpec => {
      const base = {
        steering: chance(4) ? 1 : 0,
        chunks: pick(4),
        parallel: chance(4),
        usage: !chance(5),
        steeringAtEnd: chance(5) ? 1 : 0
      }
      const withContext = (calls: ReadonlyArray<Outcome>) => ({
        calls,
        contextInCall: calls.flatMap((_, j) => (chance(4) ? [j] : []))
      })
      if (k < count - 1) {
        // the model asked for tools, so the turn went on
        return { ...base, ...withContext(Array.from({ length: 1 + pick(3) }, () => (chance(5) ? "error" : "ok"))) }
      }
      switch (end.kind) {
        case "completed":
          return base
        case "limit":
          return { ...base, ...withContext(Array.from({ length: 1 + pick(2) }, () => "ok")) }
        default: {
          const mode = pick(3)
          const error = end.kind === "error"
          if (mode === 0) return { ...base, message: false, error } // cut mid-stream
          if (mode === 1) return { ...base, error }
          const n = 1 + pick(3)
          const executed = pick(n + 1)
          return {
            ...base,
            error,
            ...withContext(Array.from({ length: n }, (_, j): Outcome => (j < executed ? "ok" : "aborted")))
          }
        }
      }
    })
    return {
      trigger: chance(3) ? "steer" : "send",
      users: 1 + pick(2),
      note: chance(6),
      steps,
      end,
      errorAfter: chance(5),
      stay: chance(4)
    }
  }

  for (let a = 0;; a++) {
    if (a > 0) l.switchTo(`agent-${a}`)
    l.idle()
    let gone = false
    // the first agent runs a turn whenever the tape is not empty
    for (let t = 0; t < 5 && !gone && (a === 0 && t === 0 ? at < tape.length : pick(5) !== 0); t++) {
      if (chance(4)) l.inject()
      const spec = turnSpec()
      l.turn(spec)
      gone = spec.end?.kind === "disposed"
    }
    const another = a < 2 && chance(3)
    // a disposal while the agent is still running comes between two queued turns
    if (!gone && (another || chance(3))) l.dispose()
    else if (!gone && l.running()) l.idle() // nothing more was queued
    if (!another) break
  }
  return l.drafts
}

// ---------------------------------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------------------------------

export type Mutation =
  | { readonly kind: "drop"; readonly at: number }
  | { readonly kind: "duplicate"; readonly at: number }
  | { readonly kind: "swap"; readonly at: number } // the events at `at` and `at + 1`

/** Every single mutation of a log of `length` events. */
export const mutations = (length: number): Array<Mutation> => [
  ...Array.from({ length }, (_, at) => ({ kind: "drop", at }) as const),
  ...Array.from({ length }, (_, at) => ({ kind: "duplicate", at }) as const),
  ...Array.from({ length: Math.max(0, length - 1) }, (_, at) => ({ kind: "swap", at }) as const)
]

export const mutate = <A>(events: ReadonlyArray<A>, m: Mutation): Array<A> => {
  const out = events.slice()
  switch (m.kind) {
    case "drop":
      out.splice(m.at, 1)
      break
    case "duplicate":
      out.splice(m.at, 0, events[m.at]!)
      break
    case "swap":
      out[m.at] = events[m.at + 1]!
      out[m.at + 1] = events[m.at]!
      break
  }
  return out
}

/** The same events with `seq` counting from 0 again (new, unfrozen objects). */
export const renumber = (events: ReadonlyArray<SessionEvent.SessionEvent>): Array<SessionEvent.SessionEvent> =>
  events.map((event, seq) => ({ ...event, seq }) as SessionEvent.SessionEvent)

export const describeMutation = (events: ReadonlyArray<SessionEvent.SessionEvent>, m: Mutation): string => {
  const label = (i: number) => {
    const e = events[i]!
    const d = e.data as Record<string, unknown>
    const extra = "callId" in d ? ` ${String(d["callId"])}` : "status" in d ? ` ${String(d["agentId"])} ${String(d["status"])}` : ""
    return `#${i} ${e.type}${extra}`
  }
  return m.kind === "swap" ? `swap ${label(m.at)} with ${label(m.at + 1)}` : `${m.kind} ${label(m.at)}`
}
