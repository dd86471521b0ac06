/**
 * The sessions directory as the commands see it: which directory, the sessions in it (newest
 * first, each with its first message), a session named by its id or a unique prefix of it, and
 * a session resumed with what resuming repaired.
 *
 * @since 0.1.0
 */
import type { Content } from "@dsh/llm"
import { JsonlSessions, type SessionErrors, type SessionEvent } from "@dsh/session"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import type * as Config from "./Config.ts"
import { ConfigInvalidError } from "./ConfigInvalidError.ts"
import * as Io from "./Io.ts"
import * as Render from "./Render.ts"

/**
 * The sessions directory of the settings, or the failure saying that `--sessions memory` keeps
 * none.
 *
 * @since 0.1.0
 * @category constructors
 */
export const directoryOf = (settings: Config.Settings, what: string): Effect.Effect<string, ConfigInvalidError> =>
  settings.sessions === "memory"
    ? Effect.fail(
      new ConfigInvalidError({
        message: `${what} needs a sessions directory, and --sessions memory keeps none (pass --sessions <dir>, or leave it out for the default)`,
        field: "sessions",
        source: "--sessions"
      })
    )
    : Effect.succeed(settings.sessions.directory)

/**
 * A session of the directory, as listed.
 *
 * @since 0.1.0
 * @category models
 */
export interface Listed extends JsonlSessions.Entry {
  /** A preview of its first user message ("" when it has none yet). */
  readonly firstMessage: string
}

const HEAD_BYTES = 64 * 1024

/** The first user message of a session file, from its first 64 KiB (a listing never reads whole logs). */
const firstMessage = (file: string): Effect.Effect<string, never, FileSystem.FileSystem> =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const handle = yield* fs.open(file, { flag: "r" })
    const head = yield* handle.readAlloc(HEAD_BYTES)
    const text = new TextDecoder().decode(Option.getOrElse(head, () => new Uint8Array(0)))
    for (const line of text.split("\n")) {
      if (!line.includes("\"user/message\"")) continue
      const event = JSON.parse(line) as { readonly type?: unknown; readonly data?: { readonly content?: unknown } }
      if (event.type !== "user/message" || !Array.isArray(event.data?.content)) continue
      return (event.data.content as ReadonlyArray<Content.ContentBlock>).map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join(" ")
    }
    return ""
  })).pipe(Effect.orElseSucceed(() => ""))

/**
 * The sessions of a directory, the most recently active first; none when the directory does
 * not exist yet.
 *
 * @since 0.1.0
 * @category listing
 */
export const list = (
  directory: string
): Effect.Effect<ReadonlyArray<Listed>, SessionErrors.PersistenceError | SessionErrors.CorruptLogError, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    if (!(yield* fs.exists(directory).pipe(Effect.orElseSucceed(() => false)))) return []
    // one damaged file must not hide every other session: it is named, and left out
    const { entries, unreadable } = yield* JsonlSessions.survey(directory)
    for (const { error } of unreadable) {
      yield* Effect.logWarning(`left out of the listing: ${error.message} (${error.code}; move the file aside)`)
    }
    const listed = yield* Effect.forEach(
      entries,
      (entry) => Effect.map(firstMessage(entry.file), (first): Listed => ({ ...entry, firstMessage: first })),
      { concurrency: 4 }
    )
    return [...listed].sort((a, b) => b.lastActivity - a.lastActivity || (a.id < b.id ? 1 : -1))
  })

/**
 * The id of the session `name` names in the directory: its id, or a prefix of exactly one id;
 * without a name, the most recently active session.
 *
 * @since 0.1.0
 * @category listing
 */
export const resolveId = (
  directory: string,
  name: string | undefined
): Effect.Effect<string, ConfigInvalidError | SessionErrors.PersistenceError | SessionErrors.CorruptLogError, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    if (name !== undefined) yield* checkNamed(name)
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    if (name !== undefined && (yield* fs.exists(path.join(directory, JsonlSessions.fileName(name))).pipe(Effect.orElseSucceed(() => false)))) {
      return name
    }
    const sessions = yield* list(directory)
    if (name === undefined) {
      const latest = sessions[0]
      if (latest !== undefined) return latest.id
      return yield* new ConfigInvalidError({
        message: `there is no session to resume in ${directory} yet (dsh run or dsh chat starts one)`,
        field: "id",
        source: "the command line"
      })
    }
    const matches = sessions.filter((session) => session.id.startsWith(name))
    if (matches.length === 1) return matches[0]!.id
    const known = sessions.slice(0, 5).map((s) => s.id).join(", ")
    return yield* new ConfigInvalidError({
      message: matches.length === 0
        ? `no session ${JSON.stringify(name)} in ${directory}${sessions.length === 0 ? " (it has none)" : ` (latest: ${known}; dsh sessions list shows all)`}`
        : `${JSON.stringify(name)} is the start of ${matches.length} sessions (${matches.slice(0, 5).map((s) => s.id).join(", ")}…): give more of the id`,
      field: "id",
      source: "the command line"
    })
  })

/**
 * A session named on the command line names something: an empty or blank id would be the
 * start of every id (and pick the only session, or the latest one, by accident).
 *
 * @since 0.1.0
 * @category listing
 */
export const checkNamed = (name: string): Effect.Effect<void, ConfigInvalidError> =>
  name.trim() === ""
    ? Effect.fail(
      new ConfigInvalidError({
        message: "the session id is empty: give an id or the start of one (dsh sessions list shows them)",
        field: "id",
        source: "the command line"
      })
    )
    : Effect.void

/**
 * Whether `name` names a session in the directory: an id, or the start of one.
 *
 * @since 0.1.0
 * @category utils
 */
export const names = (
  directory: string,
  name: string
): Effect.Effect<boolean, SessionErrors.PersistenceError | SessionErrors.CorruptLogError, FileSystem.FileSystem | Path.Path> =>
  Effect.map(list(directory), (sessions) => sessions.some((session) => session.id.startsWith(name)))

/**
 * A time, local: `2026-12-01 23:44`.
 *
 * @since 0.1.0
 * @category rendering
 */
export const localTime = (millis: number): string => {
  const date = new Date(millis)
  const two = (n: number) => String(n).padStart(2, "0")
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ${two(date.getHours())}:${two(date.getMinutes())}`
}

/**
 * The position of the first event a resume logged: the first of its `repairs.length` repair
 * events, the last ones of the log (an older resume's repairs come before them).
 *
 * @since 0.1.0
 * @category utils
 */
export const firstRepairIndex = (events: ReadonlyArray<SessionEvent.SessionEvent>, repairs: number): number => {
  if (repairs <= 0) return events.length
  let seen = 0
  for (let i = events.length - 1; i >= 0; i--) {
    if (events[i]!.type !== "session/repair") continue
    if (++seen === repairs) return i
  }
  return events.length
}

/**
 * Resumes the session in the current scope and prints its repairs on stderr; returns the
 * session and the position from which the resume logged.
 *
 * @since 0.1.0
 * @category commands
 */
export const open = (id: string) =>
  Effect.gen(function*() {
    const io = yield* Io.Io
    const jsonl = yield* JsonlSessions.JsonlSessions
    const { repairs, session } = yield* jsonl.resume(id)
    for (const repair of repairs) yield* io.err(`dsh: resume: ${Render.repair(repair)}\n`)
    const events = yield* session.events
    return { session, repairs, firstRepair: firstRepairIndex(events, repairs.length), end: events.length }
  })
