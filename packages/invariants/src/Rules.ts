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
import type { Ids } from "@dsh/llm"
import type { SessionEvent } from "@dsh/session"
import { Freeze } from "@dsh/session"

/**
 * Every rule with what it requires. Keys are the rule names reported in violations.
 *
 * @since 0.1.0
 * @category rules
 */
export const rules = {
  "seq-increments": "`seq` starts at 0 and increases by exactly one per event.",
  "data-frozen": "Every logged event is deeply frozen, so nothing can change history after the fact (by default checked on a session's first 256 events and one in 64 after them; on all with `frozen: \"deep\"`).",
  "turn-pairing": "`turn/start` and `turn/end` alternate (turns do not nest) and a `turn/end` carries its `turn/start`'s number.",
  "turn-numbering": "Turns are numbered 1, 2, … in the session; a seeded session's next turn follows the seed's last.",
  "message-in-turn": "`user/message` and `steering/message` occur only inside an open turn (everything of a turn lies inside it), and a steering message carries its turn's number.",
  "step-pairing": "`step/start` and `step/end` alternate inside the open turn, carry its number and the same step number, and no step is open at `turn/end`.",
  "step-numbering": "Steps are numbered 1, 2, … within each turn.",
  "in-step": "`model/request`, `assistant/chunk`, `assistant/message`, `usage`, `tool/call` and `tool/result` occur only inside the open step and carry its turn and step numbers.",
  "chunk-before-message": "A step's `assistant/chunk`s come before its `assistant/message`, and a step has at most one `assistant/message`.",
  "usage-after-message": "A step's `usage` comes after its `assistant/message`.",
  "call-in-message": "A `tool/call` names a tool call of its step's `assistant/message`, once.",
  "result-has-call": "A `tool/result` answers an earlier `tool/call` with the same id in the same step.",
  "result-once": "No tool call gets two results.",
  "calls-answered": "Every tool call of an assistant message has exactly one `tool/result` before its step ends, and so before its turn ends.",
  "status-transition": "An agent's status starts `idle` and moves idle ↔ running or idle|running → disposed; nothing leaves disposed; no status repeats.",
  "status-matches-turns": "Once a log records agent statuses, a turn starts only while the agent is `running`, and no status changes while a turn is open.",
  "nothing-after-disposed": "After an agent is disposed, no event is appended for it: the next event, if any, is a new agent's first status."
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
  readonly push: (event: SessionEvent.SessionEvent) => ReadonlyArray<Violation>
  /** How many events were checked. */
  readonly checked: () => number
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
   * events all the way down, then one event in 64; `"deep"` walks every event; `"shallow"`
   * checks every event's envelope and data object only; `"off"` skips the rule. The session
   * deep-freezes every event whatever this says (ADR 0010); the rule catches a composition
   * where that stopped. Sampling checks a typical test's whole log and finds such a regression
   * in a long log at the next sampled event, for a small part of the walk's cost.
   */
  readonly frozen?: "sampled" | "deep" | "shallow" | "off"
}

type Status = "idle" | "running" | "disposed"

const none: ReadonlyArray<Violation> = []

// `"sampled"` walks every one of a session's first events (a test's whole log, typically), then
// one in every 64: a composition that stops freezing is caught at the first sampled event.
const sampleAllUpTo = 256
const sampleMask = 63

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
export const make = (options: Options = {}): Checker => {
  const frozen = options.frozen ?? "sampled"
  const walkAll = frozen === "deep"
  const sampling = frozen === "sampled"
  const shallow = frozen === "shallow"
  let nextSeq = 0
  // events checked so far, whatever their seq (the sampling of `data-frozen` counts these)
  let checkedCount = 0
  let lastTurn = 0
  let openTurn: number | undefined
  let lastStep = 0
  let openStep: number | undefined
  let stepMessage = false
  // the open turn's tool calls (from its assistant messages), all of them, and by id the open
  // step's calls (a scripted model may reuse ids from step to step; an earlier call with the
  // same id must still be answered, in its own step)
  let turnCalls: Array<Call> = []
  let calls = new Map<Ids.CallId, Call>()
  // the latest agent status logged, once there is one
  let latestStatus: Status | undefined
  // the open step's assistant message's call ids not yet announced by tool/call
  let unannounced = new Set<Ids.CallId>()
  const statuses = new Map<string, Status>()
  // the agent whose disposal closed the session to further events, if any
  let disposedAgent: string | undefined

  // The event being checked and what it broke live here, not in `push`: checking an event that
  // breaks nothing then allocates nothing, and it runs on every append.
  let event: SessionEvent.SessionEvent
  let out: Array<Violation> | undefined
  const violate = (rule: Rule, message: string) =>
    (out ??= []).push({ rule, seq: event.seq, type: event.type, message })

  const inStep = (turn: unknown, step: unknown): boolean => {
    if (openStep === undefined || openTurn === undefined) {
      violate("in-step", `${event.type} outside an open step`)
      return false
    }
    if (turn !== openTurn || step !== openStep) {
      violate("in-step", `${event.type} carries turn ${turn} step ${step}, but turn ${openTurn} step ${openStep} is open`)
      return false
    }
    return true
  }

  const push = (next: SessionEvent.SessionEvent): ReadonlyArray<Violation> => {
    event = next
    out = undefined

    if (event.seq !== nextSeq) violate("seq-increments", `expected seq ${nextSeq}, got ${event.seq}`)
    nextSeq = event.seq + 1
    const walk = walkAll || (sampling && (checkedCount < sampleAllUpTo || (checkedCount & sampleMask) === 0))
    if (walk ? !Freeze.isDeeplyFrozen(event) : shallow && !isFrozenShallow(event)) {
      violate("data-frozen", walk ? "the logged event is not deeply frozen" : "the logged event is not frozen")
    }
    checkedCount++

    // The common case first: a chunk streamed inside the open step before its message, with no
    // disposed agent to watch for (three in four events a loop logs are chunks).
    if (event.type === "assistant/chunk" && disposedAgent === undefined) {
      const { step, turn } = event.data
      if (turn !== openTurn || step !== openStep || openStep === undefined || stepMessage) {
        if (inStep(turn, step) && stepMessage) {
          violate("chunk-before-message", `a chunk after step ${openStep}'s assistant/message`)
        }
      }
      return out ?? none
    }

    const data = event.data as Record<string, unknown>
    const isStatus = event.type === "agent/status"
    if (disposedAgent !== undefined) {
      const agent = isStatus ? String(data["agentId"]) : undefined
      if (!isStatus || agent === disposedAgent || statuses.has(agent!)) {
        violate("nothing-after-disposed", `${event.type} appended after agent ${disposedAgent} was disposed`)
      } else {
        disposedAgent = undefined
      }
    }


    switch (event.type) {
      case "turn/start": {
        const turn = event.data.turn
        if (openTurn !== undefined) violate("turn-pairing", `turn ${turn} starts while turn ${openTurn} is open`)
        if (turn !== lastTurn + 1) violate("turn-numbering", `turn ${turn} follows turn ${lastTurn}; expected ${lastTurn + 1}`)
        if (latestStatus !== undefined && latestStatus !== "running") {
          violate("status-matches-turns", `turn ${turn} starts while the agent is ${latestStatus}`)
        }
        openTurn = turn
        lastTurn = Math.max(lastTurn, turn)
        openStep = undefined
        lastStep = 0
        turnCalls = []
        calls = new Map()
        unannounced = new Set()
        break
      }
      case "turn/end": {
        const turn = event.data.turn
        if (openTurn === undefined) violate("turn-pairing", `turn/end for turn ${turn} with no open turn`)
        else if (turn !== openTurn) violate("turn-pairing", `turn/end for turn ${turn} while turn ${openTurn} is open`)
        if (openStep !== undefined) violate("step-pairing", `turn ${turn} ends while step ${openStep} is open`)
        for (const call of turnCalls) {
          if (!call.answered) violate("calls-answered", `tool call ${call.id} has no tool/result at the end of turn ${turn}`)
        }
        openTurn = undefined
        openStep = undefined
        turnCalls = []
        calls = new Map()
        unannounced = new Set()
        break
      }
      case "step/start": {
        const { step, turn } = event.data
        if (openTurn === undefined) violate("step-pairing", `step ${step} starts outside a turn`)
        else if (turn !== openTurn) violate("step-pairing", `step/start carries turn ${turn} while turn ${openTurn} is open`)
        if (openStep !== undefined) violate("step-pairing", `step ${step} starts while step ${openStep} is open`)
        if (step !== lastStep + 1) violate("step-numbering", `step ${step} follows step ${lastStep}; expected ${lastStep + 1}`)
        openStep = step
        lastStep = Math.max(lastStep, step)
        stepMessage = false
        calls = new Map()
        unannounced = new Set()
        break
      }
      case "step/end": {
        const { step, turn } = event.data
        if (openStep === undefined) violate("step-pairing", `step/end for step ${step} with no open step`)
        else if (step !== openStep || turn !== openTurn) {
          violate("step-pairing", `step/end for turn ${turn} step ${step} while turn ${openTurn} step ${openStep} is open`)
        }
        for (const call of calls.values()) {
          if (!call.answered) {
            call.answered = true // reported here, not again at turn/end
            violate("calls-answered", `tool call ${call.id} has no tool/result at the end of step ${step}`)
          }
        }
        openStep = undefined
        calls = new Map()
        unannounced = new Set()
        break
      }
      case "model/request": {
        inStep(event.data.turn, event.data.step)
        break
      }
      case "assistant/chunk": {
        if (inStep(event.data.turn, event.data.step) && stepMessage) {
          violate("chunk-before-message", `a chunk after step ${openStep}'s assistant/message`)
        }
        break
      }
      case "assistant/message": {
        if (inStep(event.data.turn, event.data.step)) {
          if (stepMessage) violate("chunk-before-message", `a second assistant/message in step ${openStep}`)
          stepMessage = true
          for (const block of event.data.content) {
            if (block.type !== "tool-call") continue
            const call: Call = { id: block.id, called: false, answered: false }
            turnCalls.push(call)
            calls.set(block.id, call)
            unannounced.add(block.id)
          }
        }
        break
      }
      case "user/message": {
        if (openTurn === undefined) violate("message-in-turn", "a user/message outside a turn")
        break
      }
      case "steering/message": {
        if (openTurn === undefined) violate("message-in-turn", "a steering/message outside a turn")
        else if (event.data.turn !== openTurn) {
          violate("message-in-turn", `a steering/message for turn ${event.data.turn} while turn ${openTurn} is open`)
        }
        break
      }
      case "usage": {
        if (inStep(event.data.turn, event.data.step) && !stepMessage) {
          violate("usage-after-message", `usage before step ${openStep}'s assistant/message`)
        }
        break
      }
      case "tool/call": {
        if (inStep(event.data.turn, event.data.step)) {
          const id = event.data.callId
          if (!unannounced.delete(id)) {
            violate("call-in-message", `tool/call ${id} is not an unannounced tool call of step ${openStep}'s assistant message`)
          } else {
            calls.get(id)!.called = true
          }
        }
        break
      }
      case "tool/result": {
        const id = event.data.callId
        if (inStep(event.data.turn, event.data.step)) {
          const call = calls.get(id)
          if (call === undefined || !call.called) {
            violate("result-has-call", `tool/result ${id} has no earlier tool/call in step ${openStep}`)
          } else if (call.answered) {
            violate("result-once", `tool call ${id} already has a result`)
          } else {
            call.answered = true
          }
        }
        break
      }
      case "agent/status": {
        const agent = String(data["agentId"])
        const status = data["status"] as Status
        const previous = statuses.get(agent)
        if (previous === undefined) {
          if (status !== "idle") violate("status-transition", `agent ${agent}'s first status is ${status}, not idle`)
        } else if (previous === status) {
          violate("status-transition", `agent ${agent}'s status repeats ${status}`)
        } else if (!legal[previous].includes(status)) {
          violate("status-transition", `agent ${agent}'s status goes ${previous} → ${status}`)
        }
        if (openTurn !== undefined) {
          violate("status-matches-turns", `agent ${agent}'s status becomes ${status} while turn ${openTurn} is open`)
        }
        statuses.set(agent, status)
        latestStatus = status
        if (status === "disposed") disposedAgent = agent
        break
      }
      default:
        break
    }
    return out ?? none
  }

  return { push, checked: () => nextSeq }
}
