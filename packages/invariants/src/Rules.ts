/**
 * The event contract of a session log, as named rules checked one event at a time. This
 * module is the one place the rules live; `docs/event-contract.md` lists them and a test keeps
 * the list and {@link rules} identical.
 *
 * A {@link Checker} consumes a session's events in order, from its first (seeded sessions
 * included, so their history is checked and their turn numbering continues), and returns the
 * violations each event causes. It holds only what the rules need: the open turn and step,
 * the turn's tool calls, and each agent's status.
 *
 * @since 0.1.0
 */
import { HarnessError, type Ids } from "@dsh/llm"
import { Freeze, SessionEvent } from "@dsh/session"

/**
 * Every rule with what it requires. Keys are the rule names reported in violations.
 *
 * @since 0.1.0
 * @category rules
 */
export const rules = {
  "seq-increments": "`seq` starts at 0 and increases by exactly one per event.",
  "data-shape": "An event's type is a core type or an extension type (`namespace:name`), and a core event's data has the fields its type defines, each of its kind (a content block with its `type`), so the log can be read: data a cast or a hand-written log got past the types is this violation alone at its event, not another rule's, nor a crash of the checker.",
  "data-frozen": "Every logged event is deeply frozen, so nothing can change history after the fact (by default checked on a session's first 256 events and one in 256 after them; on all with `frozen: \"deep\"`).",
  "turn-pairing": "`turn/start` and `turn/end` alternate (turns do not nest) and a `turn/end` carries its `turn/start`'s number.",
  "turn-numbering": "Turns are numbered 1, 2, … in the session; a seeded session's next turn follows the seed's last.",
  "message-in-turn": "`user/message` and `steering/message` occur only inside an open turn (everything of a turn lies inside it), and a steering message carries its turn's number.",
  "step-pairing": "`step/start` and `step/end` alternate inside the open turn, carry its number and the same step number, and no step is open at `turn/end`.",
  "step-numbering": "Steps are numbered 1, 2, … within each turn.",
  "in-step": "`model/request`, `assistant/chunk`, `assistant/message`, `usage`, `tool/call` and `tool/result` occur only inside the open step and carry its turn and step numbers.",
  "chunk-before-message": "A step's `assistant/chunk`s come before its `assistant/message`, and a step has at most one `assistant/message`.",
  "usage-after-message": "A step's `usage` comes after its `assistant/message`.",
  "call-ids-unique": "The tool calls of an `assistant/message` have distinct, non-empty ids (a provider cannot tell apart the results of calls that share an id).",
  "call-in-message": "A `tool/call` names a tool call of its step's `assistant/message`, once.",
  "result-has-call": "A `tool/result` answers an earlier `tool/call` with the same id in the same step.",
  "result-once": "No tool call gets two results.",
  "calls-answered": "Every tool call of an assistant message has exactly one `tool/result` before its step ends, and so before its turn ends.",
  "status-transition": "An agent's status starts `idle` and moves idle ↔ running or idle|running → disposed; nothing leaves disposed; no status repeats.",
  "status-matches-turns": "Once a log records agent statuses, a turn starts only while the agent is `running`, and no status changes while a turn is open.",
  "nothing-after-disposed": "After an agent is disposed, no event is appended for it: the next event, if any, is a new agent's first status (`idle`; the id may be the disposed agent's, created again).",
  "compaction-between-steps": "`compaction/applied` and `compaction/failed` occur outside any open step: between a turn's steps or between turns.",
  "compaction-range": "A summary's `through` is the seq of a `turn/end` after the previous summary's `through`, and its `from` is the seq right after that (0 for the first); a prune names `tool/result` events of ended turns, by seq and call id, not summarized or pruned already.",
  "compacted-history-valid": "After each `compaction/applied`, the history derived from the log is one a provider accepts: every tool call answered right after its message, no result without its call (checked by the `Invariants` layer, which derives the history there)."
} as const

/**
 * A rule's name.
 *
 * @since 0.1.0
 * @category rules
 */
export type Rule = keyof typeof rules

/**
 * All rule names, in the order of {@link rules}.
 *
 * @since 0.1.0
 * @category rules
 */
export const names = Object.keys(rules) as ReadonlyArray<Rule>

/**
 * A broken rule at an event.
 *
 * @since 0.1.0
 * @category models
 */
export interface Violation {
  readonly rule: Rule
  readonly seq: number
  readonly type: string
  readonly message: string
}

/**
 * Checks one session's events in order.
 *
 * @since 0.1.0
 * @category models
 */
export interface Checker {
  /** Checks the next event; returns what it breaks. */
  push(event: SessionEvent.SessionEvent): ReadonlyArray<Violation>
  /** How many events were checked. */
  checked(): number
}

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * How `data-frozen` is checked: `"sampled"` (the default) walks each of a session's first 256
   * events all the way down, then one event in 256; `"deep"` walks every event; `"shallow"`
   * checks every event's envelope and data object only; `"off"` skips the rule. The session
   * deep-freezes every event whatever this says (ADR 0010); the rule catches a composition
   * where that stopped. Sampling checks a typical test's whole log and finds such a regression
   * in a long log at the next sampled event, for a small part of the walk's cost.
   */
  readonly frozen?: "sampled" | "deep" | "shallow" | "off"
}

type Status = "idle" | "running" | "disposed"

// ---------------------------------------------------------------------------------------------
// data-shape: each core type's data is checked one level down (and the `type` of every content
// block), so what the rules and the derivation read is there and of its kind. A check is one
// expression per type reading constant property names (a full Schema check of every event, or
// a table read by key, would cost several times the rest of the checker); each part gives
// `undefined` or what is wrong, so the common case allocates nothing.

const preview = (value: unknown): string => {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch {
    text = undefined
  }
  text ??= String(value)
  return text.length <= 60 ? text : `${text.slice(0, 59)}…`
}

const wrong = (name: string, value: unknown, kind: string): string =>
  value === undefined ? `${name} is missing` : `${name} is ${preview(value)}, not ${kind}`

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

/** A turn or step number. */
const count = (value: unknown, name: string): string | undefined =>
  typeof value === "number" && Number.isInteger(value) && value >= 1 ? undefined : wrong(name, value, "an integer ≥ 1")

const integer = (value: unknown, name: string): string | undefined =>
  Number.isInteger(value) ? undefined : wrong(name, value, "an integer")

const string = (value: unknown, name: string): string | undefined =>
  typeof value === "string" ? undefined : wrong(name, value, "a string")

const record = (value: unknown, name: string): string | undefined => (isRecord(value) ? undefined : wrong(name, value, "an object"))

const optionalRecord = (value: unknown, name: string): string | undefined => (value === undefined ? undefined : record(value, name))

const oneOf = (value: unknown, name: string, values: ReadonlyArray<string>): string | undefined =>
  typeof value === "string" && values.includes(value) ? undefined : wrong(name, value, `one of ${values.map((v) => JSON.stringify(v)).join(", ")}`)

/** An object with a string `type`: a content block, a stream chunk. */
const typed = (value: unknown, name: string): string | undefined =>
  isRecord(value) && typeof value["type"] === "string" ? undefined : wrong(name, value, "an object with a string type")

const blocks = (value: unknown, name: string): string | undefined => {
  if (!Array.isArray(value)) return wrong(name, value, "an array of content blocks")
  for (let i = 0; i < value.length; i++) {
    const problem = typed(value[i], `${name}[${i}]`)
    if (problem !== undefined) return problem
  }
  return undefined
}

const statuses = ["idle", "running", "disposed"]
const compactionKinds = ["summary", "prune"]
const compactionReasons = ["auto", "manual", "overflow"]
const repairKinds = ["torn-tail", "interrupted-turn"]

const prunedResults = (value: unknown): string | undefined => {
  if (!Array.isArray(value)) return wrong("results", value, "an array")
  for (let i = 0; i < value.length; i++) {
    const r: unknown = value[i]
    const name = `results[${i}]`
    if (!isRecord(r)) return wrong(name, r, "an object")
    const problem = integer(r["seq"], `${name}.seq`) ?? string(r["callId"], `${name}.callId`) ??
      string(r["tool"], `${name}.tool`) ?? integer(r["chars"], `${name}.chars`)
    if (problem !== undefined) return problem
  }
  return undefined
}

// What `dataProblem` gives for a type that is no core type: the switch itself tells, so the
// common case pays no lookup in a set of the core types.
const notCore: unique symbol = Symbol("not a core type")

/** What is wrong with a core event's data (its fields by name), if anything; {@link notCore} for other types. */
const dataProblem = (type: string, d: Readonly<Record<string, unknown>>): string | undefined | typeof notCore => {
  switch (type) {
    case "turn/start":
      return count(d["turn"], "turn") ?? string(d["trigger"], "trigger")
    case "turn/end":
      return count(d["turn"], "turn") ?? record(d["reason"], "reason")
    case "step/start":
    case "step/end":
      return count(d["turn"], "turn") ?? count(d["step"], "step")
    case "user/message":
    case "context/message":
      return blocks(d["content"], "content") ?? string(d["source"], "source")
    case "model/request":
      return count(d["turn"], "turn") ?? count(d["step"], "step") ?? string(d["model"], "model") ??
        optionalRecord(d["settings"], "settings")
    case "assistant/chunk":
      return count(d["turn"], "turn") ?? count(d["step"], "step") ?? typed(d["chunk"], "chunk")
    case "assistant/message":
      return count(d["turn"], "turn") ?? count(d["step"], "step") ?? blocks(d["content"], "content") ??
        optionalRecord(d["finishReason"], "finishReason") ?? optionalRecord(d["rewrittenCallIds"], "rewrittenCallIds")
    case "tool/call":
      return count(d["turn"], "turn") ?? count(d["step"], "step") ?? string(d["callId"], "callId") ??
        string(d["name"], "name") ?? string(d["arguments"], "arguments")
    case "tool/result":
      return count(d["turn"], "turn") ?? count(d["step"], "step") ?? string(d["callId"], "callId") ??
        blocks(d["content"], "content") ??
        (typeof d["isError"] === "boolean" ? undefined : wrong("isError", d["isError"], "a boolean")) ??
        optionalRecord(d["error"], "error")
    case "steering/message":
      return count(d["turn"], "turn") ?? blocks(d["content"], "content") ?? string(d["source"], "source")
    case "usage":
      return count(d["turn"], "turn") ?? count(d["step"], "step") ?? record(d["usage"], "usage")
    case "agent/status":
      return string(d["agentId"], "agentId") ?? oneOf(d["status"], "status", statuses)
    case "error":
      return (d["turn"] === undefined ? undefined : count(d["turn"], "turn")) ??
        (d["step"] === undefined ? undefined : count(d["step"], "step")) ??
        string(d["message"], "message") ?? string(d["code"], "code") ??
        (d["reportedCode"] === undefined ? undefined : string(d["reportedCode"], "reportedCode"))
    case "session/repair":
      return oneOf(d["kind"], "kind", repairKinds) ?? string(d["message"], "message")
    case "compaction/applied":
      return oneOf(d["kind"], "kind", compactionKinds) ?? oneOf(d["reason"], "reason", compactionReasons) ??
        integer(d["tokensBefore"], "tokensBefore") ?? integer(d["tokensAfter"], "tokensAfter") ??
        (d["kind"] === "summary"
          ? integer(d["from"], "from") ?? integer(d["through"], "through") ?? string(d["summary"], "summary") ??
            string(d["model"], "model")
          : prunedResults(d["results"]))
    case "compaction/failed":
      return oneOf(d["kind"], "kind", compactionKinds) ?? oneOf(d["reason"], "reason", compactionReasons) ??
        string(d["message"], "message") ?? string(d["code"], "code")
    default:
      return notCore
  }
}

const extensionType = /^[^/:\s]+:\S+$/

/**
 * What makes an event's type or data one the log cannot hold, if anything: a type that is no
 * core type and no extension type (`namespace:name`), or core data without a field its type
 * defines or with one of another kind.
 */
const shapeProblem = (event: SessionEvent.SessionEvent): string | undefined => {
  const type: unknown = event.type
  if (typeof type !== "string") return typeProblem(type)
  const data: unknown = event.data
  const problem = isRecord(data)
    ? dataProblem(type, data)
    : coreTypes.has(type)
    ? `${type}'s data is ${preview(data)}, not an object`
    : notCore
  if (problem === notCore) return extensionType.test(type) ? undefined : typeProblem(type)
  return problem === undefined || !isRecord(data) ? problem : `${type}'s data.${problem}`
}

const typeProblem = (type: unknown): string =>
  `the type ${preview(type)} is neither a core event type nor an extension type (namespace:name)`

const coreTypes: ReadonlySet<string> = new Set(SessionEvent.coreTypes)

const none: ReadonlyArray<Violation> = []

// `"sampled"` walks every one of a session's first events (a test's whole log, typically), then
// one in 256: a composition that stops freezing is caught at the next sampled event. Checking
// reads every event from memory anyway; the walk would read every object of the event too.
const sampleAllUpTo = 256
const sampleMask = 255

const isFrozenShallow = (event: SessionEvent.SessionEvent): boolean =>
  Object.isFrozen(event) && (typeof event.data !== "object" || event.data === null || Object.isFrozen(event.data))

const legal: Record<Status, ReadonlyArray<Status>> = {
  idle: ["running", "disposed"],
  running: ["idle", "disposed"],
  disposed: []
}

interface Call {
  readonly id: Ids.CallId
  called: boolean
  answered: boolean
}

/**
 * Makes a checker for one session.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Checker => new RuleChecker(options.frozen ?? "sampled")

// A class rather than closures: every session's checker runs the same compiled methods, so a
// new session (a test makes many) neither deoptimizes nor recompiles the per-event path.
class RuleChecker implements Checker {
  private readonly walkAll: boolean
  private readonly sampling: boolean
  private readonly shallow: boolean
  private nextSeq = 0
  // events checked so far, whatever their seq (the sampling of `data-frozen` counts these)
  private checkedCount = 0
  private lastTurn = 0
  private openTurn: number | undefined = undefined
  private lastStep = 0
  private openStep: number | undefined = undefined
  private stepMessage = false
  // the open turn's tool calls (from its assistant messages), all of them, and by id the open
  // step's calls (a scripted model may reuse ids from step to step; an earlier call with the
  // same id must still be answered, in its own step)
  private readonly turnCalls: Array<Call> = []
  private readonly calls = new Map<Ids.CallId, Call>()
  // the latest agent status logged, once there is one
  private latestStatus: Status | undefined = undefined
  // the open step's assistant message's call ids not yet announced by tool/call
  private readonly unannounced = new Set<Ids.CallId>()
  private readonly statuses = new Map<string, Status>()
  // the agent whose disposal closed the session to further events, if any
  private disposedAgent: string | undefined = undefined
  // What compactions may name: the `through` of the last summary, the seqs of the turn/ends
  // after it, the call ids of the tool/results after it (by seq) and the results pruned since
  private summarizedThrough = -1
  private readonly turnEnds: Array<number> = []
  private readonly results = new Map<number, Ids.CallId>()
  private readonly pruned = new Set<number>()
  // What the event being checked broke, if anything. Checking an event that breaks nothing
  // allocates and stores nothing: it runs on every append, and a store of a fresh object into
  // this long-lived checker would cost a write barrier per event.
  private out: Array<Violation> | undefined = undefined

  constructor(frozen: NonNullable<Options["frozen"]>) {
    this.walkAll = frozen === "deep"
    this.sampling = frozen === "sampled"
    this.shallow = frozen === "shallow"
  }

  checked(): number {
    return this.checkedCount
  }

  // the violations of the event just checked, leaving none behind for the next
  private taken(): ReadonlyArray<Violation> {
    const out = this.out
    if (out === undefined) return none
    this.out = undefined
    return out
  }

  private violate(event: SessionEvent.SessionEvent, rule: Rule, message: string): void {
    ;(this.out ??= []).push({ rule, seq: event.seq, type: event.type, message })
  }

  private inStep(event: SessionEvent.SessionEvent, turn: unknown, step: unknown): boolean {
    if (this.openStep === undefined || this.openTurn === undefined) {
      this.violate(event, "in-step", `${event.type} outside an open step`)
      return false
    }
    if (turn !== this.openTurn || step !== this.openStep) {
      this.violate(
        event,
        "in-step",
        `${event.type} carries turn ${turn} step ${step}, but turn ${this.openTurn} step ${this.openStep} is open`
      )
      return false
    }
    return true
  }

  push(event: SessionEvent.SessionEvent): ReadonlyArray<Violation> {
    try {
      return this.check(event)
    } catch (error) {
      // what the rules read was not there: the event's data is not of its type's shape
      this.violate(event, "data-shape", `${event.type}'s data cannot be read as its type's: ${HarnessError.describe(error)}`)
      return this.taken()
    }
  }

  private check(event: SessionEvent.SessionEvent): ReadonlyArray<Violation> {
    if (event.seq !== this.nextSeq) this.violate(event, "seq-increments", `expected seq ${this.nextSeq}, got ${event.seq}`)
    this.nextSeq = event.seq + 1
    const walk = this.walkAll || (this.sampling && (this.checkedCount < sampleAllUpTo || (this.checkedCount & sampleMask) === 0))
    if (walk ? !Freeze.isDeeplyFrozen(event) : this.shallow && !isFrozenShallow(event)) {
      this.violate(event, "data-frozen", walk ? "the logged event is not deeply frozen" : "the logged event is not frozen")
    }
    this.checkedCount++

    // The common case first: a chunk streamed inside the open step before its message, with no
    // disposed agent to watch for (three in four events a loop logs are chunks).
    // Anything else about a chunk takes the general path below.
    if (event.type === "assistant/chunk" && this.disposedAgent === undefined) {
      const { chunk, step, turn } = event.data
      if (
        turn === this.openTurn && step === this.openStep && this.openStep !== undefined && !this.stepMessage &&
        typeof chunk === "object" && chunk !== null && typeof chunk.type === "string"
      ) return this.taken()
    }

    // An event the log cannot hold is reported as that alone: the rules would read what is not there.
    const problem = shapeProblem(event)
    if (problem !== undefined) {
      this.violate(event, "data-shape", problem)
      if (this.disposedAgent !== undefined) {
        this.violate(event, "nothing-after-disposed", `${String(event.type)} appended after agent ${this.disposedAgent} was disposed`)
      }
      return this.taken()
    }

    const data = event.data as Record<string, unknown>
    const isStatus = event.type === "agent/status"
    if (this.disposedAgent !== undefined) {
      const agent = isStatus ? String(data["agentId"]) : undefined
      const before = agent === undefined ? undefined : this.statuses.get(agent)
      // a new agent's first status; its id may be one whose agent was disposed (an agent created
      // again under a fixed id, as a resumed session's is), which starts a new life
      if (isStatus && (before === undefined || (before === "disposed" && data["status"] === "idle"))) {
        this.disposedAgent = undefined
        this.statuses.delete(agent!)
      } else {
        this.violate(event, "nothing-after-disposed", `${event.type} appended after agent ${this.disposedAgent} was disposed`)
      }
    }


    switch (event.type) {
      case "turn/start": {
        const turn = event.data.turn
        if (this.openTurn !== undefined) this.violate(event, "turn-pairing", `turn ${turn} starts while turn ${this.openTurn} is open`)
        if (turn !== this.lastTurn + 1) this.violate(event, "turn-numbering", `turn ${turn} follows turn ${this.lastTurn}; expected ${this.lastTurn + 1}`)
        if (this.latestStatus !== undefined && this.latestStatus !== "running") {
          this.violate(event, "status-matches-turns", `turn ${turn} starts while the agent is ${this.latestStatus}`)
        }
        this.openTurn = turn
        this.lastTurn = Math.max(this.lastTurn, turn)
        this.openStep = undefined
        this.lastStep = 0
        this.turnCalls.length = 0
        this.calls.clear()
        this.unannounced.clear()
        break
      }
      case "turn/end": {
        const turn = event.data.turn
        if (this.openTurn === undefined) this.violate(event, "turn-pairing", `turn/end for turn ${turn} with no open turn`)
        else if (turn !== this.openTurn) this.violate(event, "turn-pairing", `turn/end for turn ${turn} while turn ${this.openTurn} is open`)
        if (this.openStep !== undefined) this.violate(event, "step-pairing", `turn ${turn} ends while step ${this.openStep} is open`)
        for (const call of this.turnCalls) {
          if (!call.answered) this.violate(event, "calls-answered", `tool call ${call.id} has no tool/result at the end of turn ${turn}`)
        }
        this.turnEnds.push(event.seq)
        this.openTurn = undefined
        this.openStep = undefined
        this.turnCalls.length = 0
        this.calls.clear()
        this.unannounced.clear()
        break
      }
      case "step/start": {
        const { step, turn } = event.data
        if (this.openTurn === undefined) this.violate(event, "step-pairing", `step ${step} starts outside a turn`)
        else if (turn !== this.openTurn) this.violate(event, "step-pairing", `step/start carries turn ${turn} while turn ${this.openTurn} is open`)
        if (this.openStep !== undefined) this.violate(event, "step-pairing", `step ${step} starts while step ${this.openStep} is open`)
        if (step !== this.lastStep + 1) this.violate(event, "step-numbering", `step ${step} follows step ${this.lastStep}; expected ${this.lastStep + 1}`)
        this.openStep = step
        this.lastStep = Math.max(this.lastStep, step)
        this.stepMessage = false
        this.calls.clear()
        this.unannounced.clear()
        break
      }
      case "step/end": {
        const { step, turn } = event.data
        if (this.openStep === undefined) this.violate(event, "step-pairing", `step/end for step ${step} with no open step`)
        else if (step !== this.openStep || turn !== this.openTurn) {
          this.violate(event, "step-pairing", `step/end for turn ${turn} step ${step} while turn ${this.openTurn} step ${this.openStep} is open`)
        }
        for (const call of this.calls.values()) {
          if (!call.answered) {
            call.answered = true // reported here, not again at turn/end
            this.violate(event, "calls-answered", `tool call ${call.id} has no tool/result at the end of step ${step}`)
          }
        }
        this.openStep = undefined
        this.calls.clear()
        this.unannounced.clear()
        break
      }
      case "model/request": {
        this.inStep(event, event.data.turn, event.data.step)
        break
      }
      case "assistant/chunk": {
        if (this.inStep(event, event.data.turn, event.data.step) && this.stepMessage) {
          this.violate(event, "chunk-before-message", `a chunk after step ${this.openStep}'s assistant/message`)
        }
        break
      }
      case "assistant/message": {
        if (this.inStep(event, event.data.turn, event.data.step)) {
          if (this.stepMessage) this.violate(event, "chunk-before-message", `a second assistant/message in step ${this.openStep}`)
          this.stepMessage = true
          for (const block of event.data.content) {
            if (block.type !== "tool-call") continue
            const missing = typeof block.id !== "string" || block.id === ""
            if (missing || this.unannounced.has(block.id)) {
              this.violate(event, "call-ids-unique", missing ? "a tool call without an id" : `tool call id ${block.id} repeats within the message`)
              continue
            }
            const call: Call = { id: block.id, called: false, answered: false }
            this.turnCalls.push(call)
            this.calls.set(block.id, call)
            this.unannounced.add(block.id)
          }
        }
        break
      }
      case "user/message": {
        if (this.openTurn === undefined) this.violate(event, "message-in-turn", "a user/message outside a turn")
        break
      }
      case "steering/message": {
        if (this.openTurn === undefined) this.violate(event, "message-in-turn", "a steering/message outside a turn")
        else if (event.data.turn !== this.openTurn) {
          this.violate(event, "message-in-turn", `a steering/message for turn ${event.data.turn} while turn ${this.openTurn} is open`)
        }
        break
      }
      case "usage": {
        if (this.inStep(event, event.data.turn, event.data.step) && !this.stepMessage) {
          this.violate(event, "usage-after-message", `usage before step ${this.openStep}'s assistant/message`)
        }
        break
      }
      case "tool/call": {
        if (this.inStep(event, event.data.turn, event.data.step)) {
          const id = event.data.callId
          if (!this.unannounced.delete(id)) {
            this.violate(event, "call-in-message", `tool/call ${id} is not an unannounced tool call of step ${this.openStep}'s assistant message`)
          } else {
            this.calls.get(id)!.called = true
          }
        }
        break
      }
      case "tool/result": {
        const id = event.data.callId
        if (this.inStep(event, event.data.turn, event.data.step)) {
          const call = this.calls.get(id)
          if (call === undefined || !call.called) {
            this.violate(event, "result-has-call", `tool/result ${id} has no earlier tool/call in step ${this.openStep}`)
          } else if (call.answered) {
            this.violate(event, "result-once", `tool call ${id} already has a result`)
          } else {
            call.answered = true
          }
        }
        this.results.set(event.seq, id)
        break
      }
      case "compaction/applied":
      case "compaction/failed": {
        if (this.openStep !== undefined) {
          this.violate(event, "compaction-between-steps", `${event.type} while step ${this.openStep} of turn ${this.openTurn} is open`)
        }
        if (event.type === "compaction/applied") this.compaction(event, event.data)
        break
      }
      case "agent/status": {
        const agent = String(data["agentId"])
        const status = data["status"] as Status
        const previous = this.statuses.get(agent)
        if (previous === undefined) {
          if (status !== "idle") this.violate(event, "status-transition", `agent ${agent}'s first status is ${status}, not idle`)
        } else if (previous === status) {
          this.violate(event, "status-transition", `agent ${agent}'s status repeats ${status}`)
        } else if (!legal[previous].includes(status)) {
          this.violate(event, "status-transition", `agent ${agent}'s status goes ${previous} → ${status}`)
        }
        if (this.openTurn !== undefined) {
          this.violate(event, "status-matches-turns", `agent ${agent}'s status becomes ${status} while turn ${this.openTurn} is open`)
        }
        this.statuses.set(agent, status)
        this.latestStatus = status
        if (status === "disposed") this.disposedAgent = agent
        break
      }
      default:
        break
    }
    return this.taken()
  }

  private compaction(event: SessionEvent.SessionEvent, data: SessionEvent.Compaction): void {
    const lastEnd = this.turnEnds.length === 0 ? -1 : this.turnEnds[this.turnEnds.length - 1]!
    if (data.kind === "prune") {
      for (const result of data.results) {
        const problem = this.results.get(result.seq) !== result.callId
          ? `names seq ${result.seq} (call ${result.callId}), which is no tool/result of that call after the last summary`
          : result.seq > lastEnd
          ? `names seq ${result.seq}, a result of the turn in progress`
          : this.pruned.has(result.seq)
          ? `prunes seq ${result.seq} again`
          : undefined
        if (problem !== undefined) this.violate(event, "compaction-range", `the prune ${problem}`)
        this.pruned.add(result.seq)
      }
      return
    }
    const expectedFrom = this.summarizedThrough + 1
    if (data.from !== expectedFrom) {
      this.violate(event, "compaction-range", `the summary starts at seq ${data.from}, not right after the previous one (${expectedFrom})`)
    }
    const end = this.turnEnds.indexOf(data.through)
    if (end < 0) {
      this.violate(event, "compaction-range", `the summary runs through seq ${data.through}, which is no turn/end after the previous summary`)
      return
    }
    this.summarizedThrough = data.through
    this.turnEnds.splice(0, end + 1)
    for (const seq of this.results.keys()) if (seq <= data.through) this.results.delete(seq)
    for (const seq of this.pruned) if (seq <= data.through) this.pruned.delete(seq)
  }
}

/**
 * The `compacted-history-valid` violations of the history derived after a compaction (the
 * event): what makes it one a provider refuses (`Derivation.problems`).
 *
 * @since 0.1.0
 * @category rules
 */
export const compactedHistory = (event: SessionEvent.SessionEvent, problems: ReadonlyArray<string>): ReadonlyArray<Violation> =>
  problems.map((problem) => ({
    rule: "compacted-history-valid" as const,
    seq: event.seq,
    type: event.type,
    message: `the history derived after the compaction is not provider-valid: ${problem}`
  }))
