/**
 * `dsh sessions list` and `dsh sessions show <id>`: the persisted sessions as a table (or JSON),
 * and one session's conversation rendered from its log (or its events as JSON lines).
 *
 * @since 0.1.0
 */
import { JsonlSessions, type SessionEvent } from "@dsh/session"
import * as Effect from "effect/Effect"
import * as Config from "./Config.ts"
import * as Io from "./Io.ts"
import * as Render from "./Render.ts"
import * as Report from "./Report.ts"
import * as Run from "./Run.ts"
import * as Store from "./Store.ts"

/**
 * What `dsh sessions list` and `show` take.
 *
 * @since 0.1.0
 * @category models
 */
export interface Input {
  readonly json: boolean
  readonly flags: Pick<Config.Flags, "config" | "sessions">
}

const PROMPT_COLUMN = 60

/**
 * The sessions as a table: id, last activity, events, the first message.
 *
 * @since 0.1.0
 * @category rendering
 */
export const table = (sessions: ReadonlyArray<Store.Listed>, style: Render.Style): string => {
  const rows = sessions.map((s) => [
    s.id,
    Store.localTime(s.lastActivity),
    String(s.events),
    (s.torn ? "(torn) " : "") + Render.preview(s.firstMessage, PROMPT_COLUMN)
  ])
  const header = ["ID", "LAST ACTIVITY", "EVENTS", "FIRST MESSAGE"]
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ")
  return [style.bold(line(header)), ...rows.map(line)].join("\n") + "\n"
}

/**
 * `dsh sessions list`.
 *
 * @since 0.1.0
 * @category commands
 */
export const list = (input: Input, env: Config.Environment) =>
  Effect.gen(function*() {
    const io = yield* Io.Io
    const settings = yield* Config.load(input.flags, env)
    yield* Effect.gen(function*() {
      const directory = yield* Store.directoryOf(settings, "dsh sessions list")
      const sessions = yield* Store.list(directory)
      if (input.json) return yield* io.out(`${JSON.stringify(sessions, null, 2)}\n`)
      if (sessions.length === 0) return yield* io.err(`dsh: no sessions in ${directory} yet\n`)
      const style = Render.styleFor(yield* io.stdoutIsTerminal, env)
      yield* io.out(table(sessions, style))
    }).pipe(Report.reported({ configFile: settings.configFile }))
  })

/** What `show` says on stderr of a session whose last line is torn. */
const tornNote = (file: string, id: string): string =>
  `dsh: the last line of ${file} is torn (a write a crash cut short); dsh resume ${id} repairs it\n`

const turnsOf = (events: ReadonlyArray<SessionEvent.SessionEvent>) => events.filter((e) => e.type === "turn/start").length

/**
 * `dsh sessions show <id>`.
 *
 * @since 0.1.0
 * @category commands
 */
export const show = (input: Input & { readonly id: string }, env: Config.Environment) =>
  Effect.gen(function*() {
    const io = yield* Io.Io
    const settings = yield* Config.load(input.flags, env)
    yield* Effect.gen(function*() {
      const directory = yield* Store.directoryOf(settings, "dsh sessions show")
      const id = yield* Store.resolveId(directory, input.id)
      const loaded = yield* JsonlSessions.load(directory, id)
      if (input.json) {
        for (const event of loaded.events) yield* io.out(Run.jsonLine(event))
      } else {
        const style = Render.styleFor(yield* io.stdoutIsTerminal, env)
        const turns = turnsOf(loaded.events)
        const head = `session ${id} · created ${Store.localTime(loaded.header.createdAt)} · ${turns} turn${turns === 1 ? "" : "s"} · ${loaded.file}`
        yield* io.out(`${style.dim(head)}\n\n${Render.conversation(loaded.events, style)}`)
      }
      // in both forms: with --json too the events stop short of what the torn line held
      if (loaded.torn !== undefined) yield* io.err(tornNote(loaded.file, id))
    }).pipe(Report.reported({ configFile: settings.configFile }))
  })
