/**
 * Shared helpers of the session suite: event drafts, a sample of every core event type,
 * a generator of valid-ish histories, an independent reference derivation and a checker of
 * the provider-validity rules. Not a test file itself (vitest runs `*.test.ts` only).
 */
import { Content, FinishReason, History, Ids, type Message, StreamChunk, Usage } from "@dsh/llm"
import { type Session, SessionEvent } from "@dsh/session"
import { Effect, Schema } from "effect"

// ---------------------------------------------------------------------------------------------
// Drafts: an event without its seq and time
// ---------------------------------------------------------------------------------------------

/** An extension event type used throughout the suite. */
export const Note = SessionEvent.define("test:note", Schema.Struct({ text: Schema.String }))

export type CoreDraft = {
  readonly [K in SessionEvent.CoreType]: { readonly type: K; readonly data: SessionEvent.DataOf<K> }
}[SessionEvent.CoreType]

export type Draft = CoreDraft | { readonly type: "test:note"; readonly data: { readonly text: string } }

export const draft = <T extends SessionEvent.CoreType>(
  type: T,
  data: SessionEvent.DataOf<T>
): { readonly type: T; readonly data: SessionEvent.DataOf<T> } => ({ type, data })

/** Turns drafts into a log: seq from `from`, time `1000 + seq`. */
export const toEvents = (drafts: ReadonlyArray<Draft>, from = 0): Array<SessionEvent.SessionEvent> =>
  drafts.map((d, i) => ({ type: d.type, seq: from + i, time: 1000 + from + i, data: d.data }) as SessionEvent.SessionEvent)

/** Appends a draft to a session (a core type directly, `test:note` through its definition). */
export const appendDraft = (session: Session.Session, d: Draft): Effect.Effect<SessionEvent.SessionEvent> =>
  d.type === "test:note"
    ? Effect.orDie(session.append(Note, d.data))
    : (session.append as unknown as (type: string, data: unknown) => Effect.Effect<SessionEvent.SessionEvent>)(
      d.type,
      d.data
    )

// ---------------------------------------------------------------------------------------------
// One sample of every core type, with nested content and the optional fields set
// ---------------------------------------------------------------------------------------------

export const c1 = Ids.callId("call_1")
export const c2 = Ids.callId("call_2")
export const c3 = Ids.callId("call_3")

const usage = Usage.make({ inputTokens: 120, outputTokens: 30, cacheReadTokens: 1000, reasoningTokens: 7 })

/** Returns fresh objects on every call, so a test may freeze them. */
export const coreSamples = (): Array<CoreDraft> => [
  { type: "turn/start", data: { turn: 1, trigger: "send" } },
  { type: "step/start", data: { turn: 1, step: 1 } },
  {
    type: "user/message",
    data: {
      content: [Content.text("look at this"), Content.image("image/png", "iVBORw0KGgo="), {
        type: "custom",
        kind: "mention",
        data: { path: ["src", "a.ts"], line: 3, meta: { pinned: true, note: null } }
      }],
      source: "user"
    }
  },
  { type: "context/message", data: { content: [Content.text("the file changed")], source: "ide" } },
  { type: "model/request", data: { turn: 1, step: 1, model: "deepseek-v4-flash" } },
  {
    type: "model/request",
    data: {
      turn: 1,
      step: 2,
      model: "deepseek-v4-flash",
      settings: {
        system: "Be terse.",
        tools: [{ name: "bash", description: "Run a command", parameters: { type: "object" } }],
        toolChoice: "auto",
        temperature: 0.2,
        maxTokens: 512,
        stop: ["END"],
        providerOptions: { deepseek: { thinking: "enabled" } }
      }
    }
  },
  { type: "assistant/chunk", data: { turn: 1, step: 1, chunk: StreamChunk.textDelta(0, "Hel") } },
  {
    type: "assistant/chunk",
    data: { turn: 1, step: 1, chunk: StreamChunk.blockEnd(1, Content.toolCall(c1, "read", "{\"path\":\"a\"}")) }
  },
  { type: "assistant/chunk", data: { turn: 1, step: 1, chunk: StreamChunk.usage(usage) } },
  { type: "assistant/chunk", data: { turn: 1, step: 1, chunk: StreamChunk.finish(FinishReason.error("E", "boom")) } },
  {
    type: "assistant/message",
    data: {
      turn: 1,
      step: 1,
      content: [Content.reasoning("hmm", "sig=="), Content.text("Hello"), Content.toolCall(c1, "read", "{\"path\":\"a\"}")],
      finishReason: FinishReason.toolCalls
    }
  },
  {
    type: "assistant/message",
    data: {
      turn: 1,
      step: 2,
      content: [Content.toolCall(c1, "read", "{}")],
      rewrittenCallIds: { [c1]: "call_0" }
    }
  },
  { type: "tool/call", data: { turn: 1, step: 1, callId: c1, name: "read", arguments: "{\"path\":\"a\"}" } },
  {
    type: "tool/result",
    data: {
      turn: 1,
      step: 1,
      callId: c1,
      content: [Content.text("no such file"), { type: "custom", kind: "diag", data: [1, { x: "y" }] }],
      isError: true,
      error: { tag: "ToolFailedError", code: "TOOL_FAILED" }
    }
  },
  { type: "usage", data: { turn: 1, step: 1, usage } },
  { type: "steering/message", data: { turn: 1, content: [Content.text("stop that")], source: "user" } },
  { type: "error", data: { turn: 1, step: 1, message: "flush failed", code: "PERSISTENCE" } },
  { type: "error", data: { message: "no turn", code: "INVARIANT" } },
  { type: "error", data: { turn: 1, step: 1, message: "overloaded", code: "LLM_SERVER", reportedCode: "upstream_overloaded" } },
  { type: "session/repair", data: { kind: "torn-tail", line: 12, bytes: 40, message: "cut" } },
  {
    type: "compaction/applied",
    data: { kind: "summary", reason: "auto", from: 0, through: 10, summary: "we read a file", model: "m", tokensBefore: 900, tokensAfter: 100 }
  },
  {
    type: "compaction/applied",
    data: { kind: "prune", reason: "manual", results: [{ seq: 5, callId: c1, tool: "read", chars: 9000 }], tokensBefore: 3000, tokensAfter: 800 }
  },
  { type: "compaction/failed", data: { kind: "summary", reason: "overflow", message: "summarizer failed", code: "LLM_SERVER" } },
  { type: "session/repair", data: { kind: "interrupted-turn", turn: 7, step: 2, calls: 1, message: "crash" } },
  { type: "session/repair", data: { kind: "interrupted-turn", turn: 7, calls: 0, message: "crash before a step" } },
  { type: "agent/status", data: { agentId: Ids.agentId("agent-1"), status: "running" } },
  { type: "agent/status", data: { agentId: Ids.agentId("agent-1"), status: "disposed" } },
  { type: "step/end", data: { turn: 1, step: 1 } },
  { type: "turn/end", data: { turn: 1, reason: { kind: "completed" } } },
  { type: "turn/end", data: { turn: 2, reason: { kind: "aborted", reason: "user" } } },
  { type: "turn/end", data: { turn: 3, reason: { kind: "aborted" } } },
  { type: "turn/end", data: { turn: 4, reason: { kind: "error", message: "x", code: "LLM_SERVER" } } },
  { type: "turn/end", data: { turn: 5, reason: { kind: "disposed" } } },
  { type: "turn/end", data: { turn: 6, reason: { kind: "limit", name: "max-steps", message: "50 steps" } } },
  { type: "turn/end", data: { turn: 7, reason: { kind: "interrupted", message: "the process ended" } } }
]

// ---------------------------------------------------------------------------------------------
// Values as they come back from JSON
// ---------------------------------------------------------------------------------------------

/**
 * A plain copy: Schema-derived arbitraries produce null-prototype objects (which
 * `toStrictEqual` tells from plain ones) and `-0` inside JSON data (which JSON writes as `0`).
 */
export const plain = <A>(value: A): A => {
  const go = (u: unknown): unknown => {
    if (Object.is(u, -0)) return 0
    if (Array.isArray(u)) return u.map(go)
    if (typeof u === "object" && u !== null) return Object.fromEntries(Object.entries(u).map(([k, v]) => [k, go(v)]))
    return u
  }
  return go(value) as A
}

const LogCodec = Schema.Array(SessionEvent.SessionEvent)

/** Encodes a log to a JSON string and decodes it back, as persistence does. */
export const viaJson = (events: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<SessionEvent.SessionEvent> =>
  Schema.decodeUnknownSync(LogCodec)(JSON.parse(JSON.stringify(Schema.encodeSync(LogCodec)(events))))

// ---------------------------------------------------------------------------------------------
// A generator of valid-ish histories: a script of operations interpreted into drafts
// ---------------------------------------------------------------------------------------------

const Small = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 }))
const Pick = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 99 }))

export const Op = Schema.Struct({
  kind: Schema.Literals([
    "user",
    "context",
    "steering",
    "assistant",
    "result",
    "results",
    "stray",
    "chunk",
    "stepEnd",
    "turn",
    "bookkeeping",
    "note"
  ]),
  n: Small,
  k: Pick
})
export type Op = typeof Op.Type

/** A script of up to 60 operations; shrinks by dropping operations. */
export const Script = Schema.Array(Op).check(Schema.isMaxLength(60))

const reasons: ReadonlyArray<SessionEvent.TurnEndReason> = [
  { kind: "completed" },
  { kind: "aborted", reason: "user" },
  { kind: "error", message: "stream failed", code: "LLM_SERVER" },
  { kind: "disposed" },
  { kind: "limit", name: "max-steps", message: "too many" }
]
const sources = ["ide", "mcp \"x\" <y> & z", "user"] as const

/**
 * Interprets a script: turns and steps, assistant messages with 0..3 tool calls (and their
 * `tool/call` events), results in any order, missing, duplicated or stray, context, steering
 * and user messages interleaved anywhere, chunks and bookkeeping.
 */
export const history = (script: ReadonlyArray<Op>): Array<Draft> => {
  const out: Array<Draft> = []
  let turn = 1
  let step = 0
  let calls: Array<Ids.CallId> = []
  const answered = new Set<Ids.CallId>()
  const allCalls: Array<Ids.CallId> = []
  let counter = 0
  const result = (callId: Ids.CallId, k: number, n: number): Draft => {
    answered.add(callId)
    const isError = k % 4 === 0
    return draft("tool/result", {
      turn,
      step: Math.max(step, 1),
      callId,
      content: [Content.text(`r${k}`)],
      isError,
      ...(isError && n % 2 === 0 ? { error: { tag: "ToolFailedError", code: "TOOL_FAILED" } } : {})
    })
  }
  out.push(draft("turn/start", { turn, trigger: "send" }))
  for (const { k, kind, n } of script) {
    switch (kind) {
      case "user":
        out.push(draft("user/message", {
          content: k % 4 === 0 ? [Content.text(`u${k}`), Content.image("image/png", "AAAA")] : [Content.text(`u${k}`)],
          source: "user"
        }))
        break
      case "context":
        out.push(draft("context/message", {
          content: k % 3 === 0
            ? [Content.text(`c${k}`), { type: "custom", kind: "file", data: { k } }]
            : Array.from({ length: 1 + (n % 2) }, (_, i) => Content.text(`c${k}.${i}`)),
          source: sources[k % 3]!
        }))
        break
      case "steering":
        out.push(draft("steering/message", { turn, content: [Content.text(`s${k}`)], source: "user" }))
        break
      case "assistant": {
        step++
        out.push(draft("step/start", { turn, step }))
        for (let i = 0; i < n % 3; i++) {
          out.push(draft("assistant/chunk", { turn, step, chunk: StreamChunk.textDelta(0, `d${i}`) }))
        }
        calls = Array.from({ length: n }, () => Ids.callId(`call-${counter++}`))
        allCalls.push(...calls)
        out.push(draft("assistant/message", {
          turn,
          step,
          content: [
            ...(k % 5 === 0 ? [Content.reasoning(`why${k}`)] : []),
            Content.text(`a${k}`),
            ...calls.map((id) => Content.toolCall(id, "tool", `{"k":${k}}`))
          ],
          ...(n > 0 ? { finishReason: FinishReason.toolCalls } : {})
        }))
        for (const callId of calls) out.push(draft("tool/call", { turn, step, callId, name: "tool", arguments: "{}" }))
        break
      }
      case "result":
        // one call of the last assistant message, answered or not (a duplicate then)
        if (calls.length > 0) out.push(result(calls[k % calls.length]!, k, n))
        break
      case "results": {
        // every unanswered call of the last assistant message, in a rotated order
        const open = calls.filter((id) => !answered.has(id))
        const shift = open.length === 0 ? 0 : k % open.length
        for (const callId of [...open.slice(shift), ...open.slice(0, shift)]) out.push(result(callId, k, n))
        break
      }
      case "stray":
        // a result for an unknown call, or for a call of any earlier assistant message
        out.push(result(
          n % 2 === 0 || allCalls.length === 0 ? Ids.callId(`ghost-${k}`) : allCalls[k % allCalls.length]!,
          k,
          n
        ))
        break
      case "chunk":
        out.push(draft("assistant/chunk", { turn, step: Math.max(step, 1), chunk: StreamChunk.textDelta(0, `x${k}`) }))
        break
      case "stepEnd":
        out.push(draft("step/end", { turn, step: Math.max(step, 1) }))
        break
      case "turn":
        // n = 3: a turn/start without the previous turn's end (a crash, then a resume)
        if (n !== 3) out.push(draft("turn/end", { turn, reason: reasons[k % reasons.length]! }))
        turn++
        step = 0
        out.push(draft("turn/start", { turn, trigger: k % 2 === 0 ? "send" : "steer" }))
        break
      case "bookkeeping":
        out.push(
          k % 3 === 0
            ? draft("usage", { turn, step: Math.max(step, 1), usage: Usage.make({ inputTokens: k }) })
            : k % 3 === 1
            ? draft("error", { turn, message: `e${k}`, code: "LLM_SERVER" })
            : draft("agent/status", { agentId: Ids.agentId("agent"), status: n % 2 === 0 ? "running" : "idle" })
        )
        break
      case "note":
        out.push({ type: "test:note", data: { text: `n${k}` } })
        break
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// An independent reference derivation (windows, not a state machine) and the validity checker
// ---------------------------------------------------------------------------------------------

const escapeAttr = (s: string) => s.replaceAll("&", "&amp;").replaceAll("\"", "&quot;").replaceAll("<", "&lt;")

/** The envelope rule of the Derivation module doc, written out again. */
export const referenceEnvelope = (
  tag: string,
  source: string,
  content: ReadonlyArray<Content.ContentBlock>
): Array<Content.ContentBlock> =>
  content.every((b) => b.type === "text")
    ? [Content.text(`<${tag} source="${escapeAttr(source)}">\n${content.map((b) => b.type === "text" ? b.text : "").join("\n")}\n</${tag}>`)]
    : [Content.text(`<${tag} source="${escapeAttr(source)}">`), ...content, Content.text(`</${tag}>`)]

export const syntheticResult = (toolCallId: Ids.CallId): Message.Message => ({
  role: "user",
  content: [{
    type: "tool-result",
    toolCallId,
    content: [Content.text("No result was recorded for this tool call: the session ended or was interrupted before it finished.")],
    isError: true,
    error: { tag: "NoResultRecorded", code: "ABORTED" }
  }]
})

/**
 * From-scratch derivation by windows: an assistant message opens a window that the next
 * assistant message, step/end, turn/end, turn/start or the end of the log closes. A window
 * yields the assistant message, the first result of each of its calls in log order, a
 * synthetic result for each call left unanswered (in call order), then the user-role messages
 * logged inside the window. Outside windows, user-role messages are kept and results dropped.
 */
export const referenceDerive = (events: ReadonlyArray<SessionEvent.SessionEvent>): Array<Message.Message> => {
  const out: Array<Message.Message> = []
  type Window = {
    calls: Array<Ids.CallId>
    results: Map<Ids.CallId, Message.Message>
    userish: Array<Message.Message>
  }
  let window: Window | undefined
  const close = () => {
    if (window === undefined) return
    out.push(...window.results.values())
    for (const id of new Set(window.calls)) if (!window.results.has(id)) out.push(syntheticResult(id))
    out.push(...window.userish)
    window = undefined
  }
  const userish = (m: Message.Message) => (window === undefined ? out.push(m) : window.userish.push(m))
  for (const event of events) {
    switch (event.type) {
      case "assistant/message":
        close()
        out.push({ role: "assistant", content: event.data.content })
        window = {
          calls: event.data.content.flatMap((b) => (b.type === "tool-call" ? [b.id] : [])),
          results: new Map(),
          userish: []
        }
        break
      case "step/end":
      case "turn/end":
      case "turn/start":
        close()
        break
      case "tool/result": {
        const { callId, content, error, isError } = event.data
        if (window !== undefined && window.calls.includes(callId) && !window.results.has(callId)) {
          window.results.set(callId, {
            role: "user",
            content: [
              error === undefined
                ? { type: "tool-result", toolCallId: callId, content, isError }
                : { type: "tool-result", toolCallId: callId, content, isError, error }
            ]
          })
        }
        break
      }
      case "user/message":
        userish({ role: "user", content: event.data.content })
        break
      case "context/message":
        userish({ role: "user", content: referenceEnvelope("context", event.data.source, event.data.content) })
        break
      case "steering/message":
        userish({ role: "user", content: referenceEnvelope("steering", event.data.source, event.data.content) })
        break
      default:
        break
    }
  }
  close()
  return out
}

/**
 * The provider-validity rule: every assistant message's tool calls are followed immediately by
 * exactly one result per call (before any other message), and a tool result appears nowhere
 * else. Returns the violations (empty when valid).
 */
export const providerViolations = (history: ReadonlyArray<Message.Message> | History.History): Array<string> => {
  const messages = History.isHistory(history) ? History.toArray(history) : history
  const violations: Array<string> = []
  const resultIds = (m: Message.Message) => m.content.flatMap((b) => (b.type === "tool-result" ? [b.toolCallId] : []))
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!
    if (m.role !== "assistant") {
      if (resultIds(m).length > 0) violations.push(`message ${i}: a tool result not right after its call`)
      continue
    }
    const calls = new Set(m.content.flatMap((b) => (b.type === "tool-call" ? [b.id] : [])))
    const answered = new Set<Ids.CallId>()
    for (let j = 0; j < calls.size; j++) {
      const next = messages[i + 1 + j]
      if (next === undefined || next.role !== "user" || next.content.length !== 1 || next.content[0]!.type !== "tool-result") {
        violations.push(`message ${i}: call ${j + 1} of ${calls.size} is not answered immediately`)
        break
      }
      const id = resultIds(next)[0]!
      if (!calls.has(id) || answered.has(id)) violations.push(`message ${i + 1 + j}: result ${id} is not for a pending call`)
      answered.add(id)
    }
    i += answered.size
  }
  return violations
}

/** mulberry32: a small seeded generator, so concurrency tests are reproducible. */
export const rng = (seed: number) => {
  let a = seed >>> 0
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// ---------------------------------------------------------------------------------------------
// The structural rules of the event contract, written out again for the session suite (the
// invariants package is of a higher layer): seq, turn and step pairing, tool events inside
// their step, and every call of an assistant message answered once before its step ends.
// ---------------------------------------------------------------------------------------------

/** What `events` breaks of those rules (empty when it breaks none). */
export const contractViolations = (events: ReadonlyArray<SessionEvent.SessionEvent>): Array<string> => {
  const out: Array<string> = []
  let turn: number | undefined
  let step: number | undefined
  let calls = new Map<string, { called: boolean; answers: number }>()
  const closeStep = (at: number) => {
    for (const [id, call] of calls) {
      if (call.answers !== 1) out.push(`seq ${at}: call ${id} has ${call.answers} results when its step ends`)
    }
    calls = new Map()
    step = undefined
  }
  events.forEach((event, index) => {
    const at = event.seq
    if (at !== index) out.push(`event ${index} has seq ${at}`)
    switch (event.type) {
      case "turn/start":
        if (turn !== undefined) out.push(`seq ${at}: turn ${event.data.turn} starts inside turn ${turn}`)
        turn = event.data.turn
        break
      case "turn/end":
        if (turn !== event.data.turn) out.push(`seq ${at}: turn/end ${event.data.turn} does not end the open turn ${turn}`)
        if (step !== undefined) out.push(`seq ${at}: turn/end while step ${step} is open`)
        turn = undefined
        break
      case "step/start":
        if (turn === undefined || step !== undefined) out.push(`seq ${at}: step/start outside a turn or inside a step`)
        step = event.data.step
        break
      case "step/end":
        if (step !== event.data.step) out.push(`seq ${at}: step/end ${event.data.step} does not end the open step ${step}`)
        closeStep(at)
        break
      case "assistant/message":
        if (step !== event.data.step) out.push(`seq ${at}: assistant/message outside its step`)
        for (const block of event.data.content) {
          if (block.type === "tool-call") calls.set(block.id, { called: false, answers: 0 })
        }
        break
      case "tool/call": {
        const call = calls.get(event.data.callId)
        if (step !== event.data.step || call === undefined || call.called) out.push(`seq ${at}: tool/call ${event.data.callId} is not a call of the open step's message`)
        else call.called = true
        break
      }
      case "tool/result": {
        const call = calls.get(event.data.callId)
        if (step !== event.data.step || call === undefined || !call.called) out.push(`seq ${at}: tool/result ${event.data.callId} has no tool/call in the open step`)
        else call.answers++
        break
      }
      default:
        break
    }
  })
  if (step !== undefined) out.push(`the log ends inside step ${step}`)
  if (turn !== undefined) out.push(`the log ends inside turn ${turn}`)
  return out
}
