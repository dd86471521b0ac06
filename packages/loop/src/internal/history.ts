/**
 * What the loop reads back from a session's log when an agent starts on it (a seeded or forked
 * session continues where its log left off).
 */
import type { SessionEvent } from "@dsh/session"

/** The last turn number of a log (a seeded session continues from it). */
export const lastTurnOf = (events: ReadonlyArray<SessionEvent.SessionEvent>): number => {
  let last = 0
  for (const event of events) if (event.type === "turn/start") last = Math.max(last, event.data.turn)
  return last
}

/** The settings the last `model/request` of a log carried, as JSON. */
export const lastSettingsOf = (events: ReadonlyArray<SessionEvent.SessionEvent>): string | undefined => {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === "model/request" && event.data.settings !== undefined) return JSON.stringify(event.data.settings)
  }
  return undefined
}

/** A session's events up to its last completed turn (what a fork starts from). */
export const forkable = (events: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<SessionEvent.SessionEvent> => {
  let open = false
  let cut = 0
  events.forEach((event, i) => {
    if (event.type === "turn/start") open = true
    if (event.type === "turn/end") {
      open = false
      cut = i + 1
    }
    if (!open && event.type !== "turn/end" && event.type !== "agent/status") cut = i + 1
  })
  return events.slice(0, cut)
}
