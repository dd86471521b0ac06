/**
 * JSONL persistence: every session of the store in its own file, written behind the log and
 * made durable at the flush checkpoint.
 *
 * ## Format (version 1)
 *
 * `<directory>/<encodeURIComponent(id)>.jsonl`: a header line
 * `{"format":"dsh-session","version":1,"sessionId":…,"createdAt":…}`, then one event per line
 * (encoded through the `SessionEvent` Schema), event `seq` n on line n + 2. Every line ends with
 * a newline.
 *
 * ## Writing
 *
 * There is no second buffer: the session log is the buffer. Appends never touch the disk. A
 * flush (the checkpoint's hook) writes the events logged since the last durable one and fsyncs
 * before it returns; flushes of one session are serialized, different sessions flush
 * concurrently. A session is flushed once more when it closes, and every session when the
 * layer's scope closes (a failure there can only be logged).
 *
 * A failed write or fsync is a `PersistenceError` naming the file. The next flush first cuts
 * the file back to its last durable length — a half-written batch would otherwise sit in the
 * middle of the file — and retries from the last durable event.
 *
 * The file is created at the session's first flush, header only, under a temporary name,
 * fsynced and then hard-linked to its final name (and the directory fsynced), so a file under
 * its final name always has a complete header: a crash can tear only the last event line. The link refuses to replace an
 * existing file: a session created in the store whose file already exists fails every flush
 * with a `PersistenceError` and never touches that file. The store creates sessions before
 * this layer hears of them, so the refusal cannot come earlier; continue an existing file with
 * {@link JsonlSessions.resume}.
 *
 * ## Reading
 *
 * {@link load} decodes the header and every line. A torn last line — no trailing newline, or
 * a final line that does not decode, which is what a crash in the middle of a write leaves —
 * is dropped and reported in `torn`. Anything else (a malformed line before the last one, a
 * bad header, a `seq` that does not continue) is a `CorruptLogError` naming the file and line.
 * `resume` cuts a torn tail off the file and seeds a new session of the store with the loaded
 * events, so it continues `seq` and appends to the same file.
 *
 * @since 0.1.0
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import {
  Context,
  Effect,
  Exit,
  FileSystem,
  Layer,
  Option,
  Path,
  type PlatformError,
  Result,
  Schema,
  Scope,
  Semaphore,
  Stream
} from "effect"
import { FlushCheckpoint } from "./FlushCheckpoint.ts"
import type * as Session from "./Session.ts"
import { CorruptLogError, PersistenceError, SessionExistsError } from "./SessionError.ts"
import * as SessionEvent from "./SessionEvent.ts"
import { SessionStore } from "./SessionStore.ts"

/**
 * The `format` of the header line.
 *
 * @since 0.1.0
 * @category constants
 */
export const format = "dsh-session"

/**
 * The format version this module writes and reads.
 *
 * @since 0.1.0
 * @category constants
 */
export const version = 1

/**
 * The header line of a session file.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Header = Schema.Struct({
  format: Schema.Literal(format),
  version: Schema.Literal(version),
  sessionId: Schema.String,
  createdAt: Schema.Int
})

/**
 * @since 0.1.0
 * @category models
 */
export type Header = typeof Header.Type

/**
 * A last line that a crash cut short; {@link load} drops it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Torn {
  /** Its line number (the header is line 1). */
  readonly line: number
  /** What it holds, decoded as UTF-8 (a cut inside a character leaves a replacement character). */
  readonly text: string
  /**
   * `unterminated`: it has no trailing newline (the write was cut); `undecodable`: it ends
   * with a newline but is not an event.
   */
  readonly reason: "unterminated" | "undecodable"
}

/**
 * A session file as read by {@link load}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Loaded {
  readonly file: string
  readonly header: Header
  /** The events, `seq` 0 to `events.length - 1`. */
  readonly events: ReadonlyArray<SessionEvent.SessionEvent>
  readonly torn: Torn | undefined
  /** The length in bytes of the header and the events: where the torn line, if any, starts. */
  readonly bytes: number
}

/**
 * A session file as listed by {@link list}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Entry {
  readonly id: string
  readonly file: string
  /** The size of the file in bytes. */
  readonly bytes: number
  /** The number of events (a torn last line is not counted). */
  readonly events: number
  /** From the header. */
  readonly createdAt: number
  /** The time of the last event, or the file's modification time when it has none (epoch ms). */
  readonly lastActivity: number
  /** Whether the file ends with a torn line. */
  readonly torn: boolean
}

/**
 * Options of {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Where the session files are; created if missing. */
  readonly directory: string
}

/**
 * @since 0.1.0
 * @category services
 */
export class JsonlSessions extends Context.Service<JsonlSessions, {
  readonly directory: string
  /** The path of a session's file. */
  readonly file: (id: string) => string
  /**
   * Loads a session file and creates the session in the store, seeded with its events, for
   * the current scope: it continues `seq` and appends to the same file. A torn last line is
   * cut off the file first. Fails with `SessionExistsError` while a session with this id is
   * open.
   */
  readonly resume: (
    id: string
  ) => Effect.Effect<Session.Session, PersistenceError | CorruptLogError | SessionExistsError, Scope.Scope>
  /** {@link load} in this directory. */
  readonly load: (id: string) => Effect.Effect<Loaded, PersistenceError | CorruptLogError>
  /** {@link list} of this directory. */
  readonly list: Effect.Effect<ReadonlyArray<Entry>, PersistenceError | CorruptLogError>
}>()("@dsh/session/JsonlSessions") {}

// ---------------------------------------------------------------------------------------------
// encoding

const NEWLINE = 0x0a
const encodeEvent = Schema.encodeSync(SessionEvent.SessionEvent)
const decodeEvent = Schema.decodeUnknownResult(SessionEvent.SessionEvent)
const encodeHeader = Schema.encodeSync(Header)
const decodeHeader = Schema.decodeUnknownResult(Header)
const utf8 = new TextEncoder()

/**
 * The file name of a session: its id, URI-encoded so that any id is one safe file name.
 *
 * @since 0.1.0
 * @category utils
 */
export const fileName = (id: string): string => `${encodeURIComponent(id)}.jsonl`

const idOfFileName = (name: string): string | undefined => {
  if (!name.endsWith(".jsonl")) return undefined
  try {
    return decodeURIComponent(name.slice(0, -".jsonl".length))
  } catch {
    return undefined
  }
}

/**
 * The header line of a session file, newline included.
 *
 * @since 0.1.0
 * @category utils
 */
export const headerLine = (sessionId: string, createdAt: number): string =>
  JSON.stringify(encodeHeader({ format, version, sessionId, createdAt })) + "\n"

/**
 * The line of an event, newline included.
 *
 * @since 0.1.0
 * @category utils
 */
export const eventLine = (event: SessionEvent.SessionEvent): string => JSON.stringify(encodeEvent(event)) + "\n"

const corrupt = (file: string, line: number, message: string) =>
  new CorruptLogError({ message: `${file}:${line}: ${message}`, file, line })

const parseJson = (text: string): Result.Result<unknown, string> => {
  try {
    return Result.succeed(JSON.parse(text))
  } catch (error) {
    return Result.fail(`not JSON (${error instanceof Error ? error.message : String(error)})`)
  }
}

const readHeader = (file: string, text: string): Result.Result<Header, CorruptLogError> => {
  const json = parseJson(text)
  if (Result.isFailure(json)) return Result.fail(corrupt(file, 1, `bad header: ${json.failure}`))
  const value = json.success
  if (
    typeof value === "object" && value !== null && "format" in value && value.format === format &&
    "version" in value && value.version !== version
  ) {
    return Result.fail(corrupt(file, 1, `unsupported format version ${JSON.stringify(value.version)} (this is version ${version})`))
  }
  const header = decodeHeader(value)
  if (Result.isFailure(header)) {
    return Result.fail(corrupt(file, 1, `bad header (not a ${format} file?): ${header.failure.message}`))
  }
  return Result.succeed(header.success)
}

const readEvent = (text: string): Result.Result<SessionEvent.SessionEvent, string> => {
  const json = parseJson(text)
  if (Result.isFailure(json)) return Result.fail(json.failure)
  const event = decodeEvent(json.success)
  return Result.isFailure(event) ? Result.fail(`not a session event: ${event.failure.message}`) : Result.succeed(event.success)
}

// Lines are decoded a block at a time: one string per line would cost an allocation per line,
// one string for the whole file would cap the file at V8's string length.
const BLOCK_BYTES = 4 * 1024 * 1024

/**
 * Decodes the bytes of a session file (see {@link load}).
 *
 * @since 0.1.0
 * @category decoding
 */
export const parse = (file: string, data: Uint8Array): Result.Result<Loaded, CorruptLogError> => {
  const decoder = new TextDecoder()
  const headerEnd = data.indexOf(NEWLINE)
  if (headerEnd < 0) {
    return Result.fail(corrupt(file, 1, data.length === 0 ? "empty file (no header)" : "the header line is not terminated"))
  }
  const header = readHeader(file, decoder.decode(data.subarray(0, headerEnd)))
  if (Result.isFailure(header)) return Result.fail(header.failure)

  const complete = data.lastIndexOf(NEWLINE) + 1
  const events: Array<SessionEvent.SessionEvent> = []
  let line = 1
  // a line that did not decode: acceptable only as the very last line of the file
  let pending: { readonly line: number; readonly text: string; readonly problem: string } | undefined
  let start = headerEnd + 1
  while (start < complete) {
    const end = data.indexOf(NEWLINE, Math.min(complete, start + BLOCK_BYTES) - 1) + 1
    const lines = decoder.decode(data.subarray(start, end)).split("\n")
    lines.pop()
    for (const text of lines) {
      line++
      if (pending !== undefined) return Result.fail(corrupt(file, pending.line, pending.problem))
      const event = readEvent(text)
      if (Result.isFailure(event)) {
        pending = { line, text, problem: event.failure }
        continue
      }
      if (event.success.seq !== events.length) {
        return Result.fail(corrupt(file, line, `expected seq ${events.length}, found seq ${event.success.seq}`))
      }
      events.push(event.success)
    }
    start = end
  }

  let torn: Torn | undefined
  let bytes = complete
  if (complete < data.length) {
    if (pending !== undefined) return Result.fail(corrupt(file, pending.line, pending.problem))
    torn = { line: line + 1, text: decoder.decode(data.subarray(complete)), reason: "unterminated" }
  } else if (pending !== undefined) {
    torn = { line: pending.line, text: pending.text, reason: "undecodable" }
    bytes = data.lastIndexOf(NEWLINE, complete - 2) + 1
  }
  return Result.succeed({ file, header: header.success, events, torn, bytes })
}

// ---------------------------------------------------------------------------------------------
// reading files

const sessionIdOf = (file: string) => idOfFileName(file.slice(file.lastIndexOf("/") + 1)) ?? ""

const ioError = (sessionId: string, what: string) => (cause: PlatformError.PlatformError) =>
  new PersistenceError({ message: `${what}: ${cause.message}`, sessionId, cause })

/**
 * Loads a session file by path (see {@link load}).
 *
 * @since 0.1.0
 * @category decoding
 */
export const loadFile = (
  file: string
): Effect.Effect<Loaded, PersistenceError | CorruptLogError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const data = yield* fs.readFile(file).pipe(Effect.mapError(ioError(sessionIdOf(file), `cannot read ${file}`)))
    return yield* Effect.fromResult(parse(file, data))
  })

/**
 * Loads the file of session `id` in `directory`: the header and every event, each line
 * decoded through the event Schemas. A torn last line is dropped and reported in `torn`; any
 * other problem is a `CorruptLogError` naming the file and line (a header naming another
 * session included). A missing or unreadable file is a `PersistenceError`.
 *
 * @since 0.1.0
 * @category decoding
 */
export const load = (
  directory: string,
  id: string
): Effect.Effect<Loaded, PersistenceError | CorruptLogError, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const path = yield* Path.Path
    const file = path.join(directory, fileName(id))
    const loaded = yield* loadFile(file)
    if (loaded.header.sessionId !== id) {
      return yield* corrupt(file, 1, `the header names session ${JSON.stringify(loaded.header.sessionId)}, not ${JSON.stringify(id)}`)
    }
    return loaded
  })

const SCAN_BYTES = 1024 * 1024

// Reads one file for `list` without decoding every line: it counts newlines, then decodes only
// the header and the last line or two.
const scan = (file: string, id: string) =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const fail = ioError(id, `cannot read ${file}`)
    const handle = yield* fs.open(file, { flag: "r" }).pipe(Effect.mapError(fail))
    const info = yield* handle.stat.pipe(Effect.mapError(fail))
    let size = 0
    let newlines = 0
    let first = -1
    // offsets of the last three newlines, most recent last
    const last = [-1, -1, -1]
    for (;;) {
      const chunk = yield* handle.readAlloc(SCAN_BYTES).pipe(Effect.mapError(fail))
      if (Option.isNone(chunk)) break
      const data = chunk.value
      for (let i = data.indexOf(NEWLINE); i >= 0; i = data.indexOf(NEWLINE, i + 1)) {
        if (first < 0) first = size + i
        newlines++
        last[0] = last[1]!
        last[1] = last[2]!
        last[2] = size + i
      }
      size += data.length
    }
    const range = (from: number, to: number) =>
      handle.readAlloc(to - from, { position: BigInt(from) }).pipe(
        Effect.mapError(fail),
        Effect.map((bytes) => new TextDecoder().decode(Option.getOrElse(bytes, () => new Uint8Array(0))))
      )
    if (first < 0) return yield* corrupt(file, 1, size === 0 ? "empty file (no header)" : "the header line is not terminated")
    const header = yield* Effect.fromResult(readHeader(file, yield* range(0, first)))
    if (header.sessionId !== id) {
      return yield* corrupt(file, 1, `the header names session ${JSON.stringify(header.sessionId)}, not ${JSON.stringify(id)}`)
    }
    let events = newlines - 1
    let torn = size > last[2]! + 1
    let lastTime: number | undefined
    if (events > 0) {
      const final = readEvent(yield* range(last[1]! + 1, last[2]!))
      if (Result.isSuccess(final)) lastTime = final.success.time
      else {
        torn = true
        events--
        if (events > 0) {
          const before = readEvent(yield* range(last[0]! + 1, last[1]!))
          if (Result.isSuccess(before)) lastTime = before.success.time
        }
      }
    }
    const entry: Entry = {
      id,
      file,
      bytes: Number(info.size),
      events,
      createdAt: header.createdAt,
      lastActivity: lastTime ?? Option.match(info.mtime, { onNone: () => 0, onSome: (date) => date.getTime() }),
      torn
    }
    return entry
  }))

/**
 * The sessions of a directory (every `*.jsonl` file), sorted by id, with their sizes, event
 * counts and last activity. Only the header and the last lines are decoded — {@link load}
 * checks every line. A file without a valid header (or whose header names another session
 * than its file name) is a `CorruptLogError`, not skipped.
 *
 * @since 0.1.0
 * @category decoding
 */
export const list = (
  directory: string
): Effect.Effect<ReadonlyArray<Entry>, PersistenceError | CorruptLogError, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const names = yield* fs.readDirectory(directory).pipe(Effect.mapError(ioError("", `cannot list ${directory}`)))
    const files = names.flatMap((name) => {
      const id = idOfFileName(name)
      return id === undefined ? [] : [{ id, file: path.join(directory, name) }]
    })
    const entries = yield* Effect.forEach(files, ({ file, id }) => scan(file, id), { concurrency: 4 })
    return entries.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  })

// ---------------------------------------------------------------------------------------------
// the layer

interface State {
  readonly session: Session.Session
  readonly file: string
  readonly lock: Semaphore.Semaphore
  /** Events before this seq are durable in the file. */
  written: number
  /** The file's length after the last successful fsync; undefined until the file exists. */
  durable: number | undefined
  /** Whether the directory was fsynced since the file got its name (so the name survives a crash). */
  named: boolean
  /** A write or fsync failed since: the bytes past `durable` cannot be trusted. */
  dirty: boolean
  handle: { readonly file: FileSystem.File; readonly scope: Scope.Closeable } | undefined
}

// Keep each write call and its encoded buffer bounded, whatever the size of the flush.
const WRITE_CHUNK_CHARS = 1024 * 1024

/**
 * The layer without its platform: requires `FileSystem` and `Path` besides the store and the
 * checkpoint (tests provide a failing file system through it).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNoDeps = (
  options: Options
): Layer.Layer<
  JsonlSessions,
  PersistenceError,
  SessionStore | FlushCheckpoint | FileSystem.FileSystem | Path.Path
> =>
  Layer.effect(
    JsonlSessions,
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const store = yield* SessionStore
      const checkpoint = yield* FlushCheckpoint
      const platform = Context.make(FileSystem.FileSystem, fs).pipe(Context.add(Path.Path, path))
      const directory = path.resolve(options.directory)
      const fileOf = (id: string) => path.join(directory, fileName(id))

      yield* fs.makeDirectory(directory, { recursive: true }).pipe(
        Effect.mapError(ioError("", `cannot create the session directory ${directory}`))
      )

      const states = new WeakMap<Session.Session, State>()
      // states that may still have something to write or a file handle to close
      const active = new Set<State>()
      // files being resumed, by session id: the session the store creates for them continues
      // the file instead of creating it
      const resuming = new Map<string, { readonly events: ReadonlyArray<SessionEvent.SessionEvent>; readonly bytes: number }>()

      const stateFor = (session: Session.Session): Effect.Effect<State> =>
        Effect.gen(function*() {
          const known = states.get(session)
          if (known !== undefined) return known
          const resumed = resuming.get(session.id)
          let continues = false
          if (resumed !== undefined && resumed.events.length === session.seeded) {
            // the seed's events are the very objects that were loaded (the session freezes them in
            // place); an empty file has none to compare, and any session continuing it is right
            const lastSeeded = session.seeded === 0 ? [] : yield* session.eventsFrom(session.seeded - 1)
            continues = session.seeded === 0 || lastSeeded[0] === resumed.events[resumed.events.length - 1]
          }
          const again = states.get(session)
          if (again !== undefined) return again
          const state: State = {
            session,
            file: fileOf(session.id),
            lock: Semaphore.makeUnsafe(1),
            written: continues ? session.seeded : 0,
            durable: continues ? resumed!.bytes : undefined,
            named: continues,
            dirty: false,
            handle: undefined
          }
          if (continues) resuming.delete(session.id)
          states.set(session, state)
          active.add(state)
          return state
        })

      const syncDirectory = Effect.scoped(
        Effect.flatMap(fs.open(directory, { flag: "r" }), (handle) => handle.sync)
      )

      // Creates the file with its header under a temporary name and links it into place: the
      // link fails rather than replace a file, and the final name never holds a torn header.
      const create = (state: State) => {
        const temporary = `${state.file}.${crypto.randomUUID()}.tmp`
        const header = utf8.encode(headerLine(state.session.id, state.session.createdAt))
        const fail = ioError(state.session.id, `cannot create ${state.file}`)
        return Effect.scoped(Effect.gen(function*() {
          const handle = yield* fs.open(temporary, { flag: "wx" })
          yield* handle.writeAll(header)
          yield* handle.sync
        })).pipe(
          Effect.andThen(fs.link(temporary, state.file)),
          Effect.ensuring(Effect.ignore(fs.remove(temporary, { force: true }))),
          Effect.mapError((cause) =>
            cause.reason._tag === "AlreadyExists"
              ? new PersistenceError({
                message: `cannot create ${state.file}: the file exists already. It belongs to an earlier session ` +
                  `with id ${JSON.stringify(state.session.id)}; continue it with JsonlSessions.resume, or use another id`,
                sessionId: state.session.id,
                cause
              })
              : fail(cause)
          ),
          Effect.tap(() => Effect.sync(() => (state.durable = header.length)))
        )
      }

      const openHandle = (state: State) =>
        Effect.gen(function*() {
          if (state.handle !== undefined) return state.handle.file
          const scope = Scope.makeUnsafe()
          const file = yield* fs.open(state.file, { flag: "a" }).pipe(
            Scope.provide(scope),
            Effect.mapError(ioError(state.session.id, `cannot open ${state.file}`))
          )
          state.handle = { file, scope }
          return file
        })

      const write = (state: State) =>
        Effect.gen(function*() {
          const events = yield* state.session.eventsFrom(state.written)
          if (state.durable !== undefined && state.named && !state.dirty && events.length === 0) return
          if (state.durable === undefined) yield* create(state)
          if (!state.named) {
            yield* syncDirectory.pipe(Effect.mapError(ioError(state.session.id, `cannot fsync the directory of ${state.file}`)))
            state.named = true
          }
          const file = yield* openHandle(state)
          const fail = ioError(state.session.id, `cannot write ${state.file}`)
          const durable = state.durable!
          if (state.dirty) yield* file.truncate(durable).pipe(Effect.mapError(fail))
          state.dirty = true
          let bytes = 0
          let text = ""
          for (const event of events) {
            text += eventLine(event)
            if (text.length >= WRITE_CHUNK_CHARS) {
              const chunk = utf8.encode(text)
              text = ""
              yield* file.writeAll(chunk).pipe(Effect.mapError(fail))
              bytes += chunk.length
            }
          }
          if (text.length > 0) {
            const chunk = utf8.encode(text)
            yield* file.writeAll(chunk).pipe(Effect.mapError(fail))
            bytes += chunk.length
          }
          yield* file.sync.pipe(Effect.mapError(ioError(state.session.id, `cannot fsync ${state.file}`)))
          state.durable = durable + bytes
          state.written += events.length
          state.dirty = false
        })

      // A flush half-done is worth nothing, and interrupting one would leave the file dirty for
      // no gain: once it holds the session's lock it runs to the end.
      const flushState = (state: State) =>
        state.lock.withPermit(Effect.uninterruptible(write(state))).pipe(
          Effect.withSpan("JsonlSessions.flush", { attributes: { "dsh.session": state.session.id } })
        )

      const release = (state: State) =>
        Effect.gen(function*() {
          active.delete(state)
          const handle = state.handle
          state.handle = undefined
          if (handle !== undefined) yield* Scope.close(handle.scope, Exit.void)
        })

      const flushAndRelease = (state: State, when: string) =>
        flushState(state).pipe(
          Effect.andThen(release(state)),
          Effect.catch((error) => Effect.logError(`JsonlSessions: ${when}, session ${state.session.id} was not persisted: ${error.message}`))
        )

      const fibers = yield* Scope.fork(yield* Effect.scope)

      yield* Effect.addFinalizer(() =>
        Effect.gen(function*() {
          yield* Scope.close(fibers, Exit.void)
          for (const session of yield* store.all) yield* stateFor(session)
          yield* Effect.forEach([...active], (state) => flushAndRelease(state, "at shutdown"), {
            concurrency: 8,
            discard: true
          })
          // what could not be flushed is lost now: at least give the file handles back
          for (const state of active) yield* release(state)
        })
      )

      yield* checkpoint.register({
        name: "jsonl",
        flush: (session) => Effect.flatMap(stateFor(session), flushState)
      })

      const watch = (session: Session.Session) =>
        session.awaitClosed.pipe(
          Effect.andThen(stateFor(session)),
          Effect.flatMap((state) => flushAndRelease(state, "when it closed"))
        )

      yield* store.sessions.pipe(
        Stream.runForEach((session) => Effect.andThen(stateFor(session), Effect.forkIn(watch(session), fibers))),
        Effect.forkIn(fibers)
      )

      const resume = (id: string) =>
        Effect.gen(function*() {
          if (Option.isSome(yield* store.get(id))) {
            return yield* new SessionExistsError({
              message: `session ${JSON.stringify(id)} is open; close it before resuming it`,
              sessionId: id
            })
          }
          // sessions created before now must not be taken for the one resuming, and a closed
          // session that owns the file must finish writing it before it is read
          for (const session of yield* store.all) yield* stateFor(session)
          for (const state of active) {
            if (state.session.id === id && state.durable !== undefined) {
              yield* flushState(state)
              yield* release(state)
            }
          }
          const loaded = yield* load(directory, id).pipe(Effect.provideContext(platform))
          if (loaded.torn !== undefined) {
            const fail = ioError(id, `cannot cut the torn last line off ${loaded.file}`)
            yield* Effect.scoped(Effect.gen(function*() {
              const handle = yield* fs.open(loaded.file, { flag: "r+" })
              yield* handle.truncate(loaded.bytes)
              yield* handle.sync
            })).pipe(Effect.mapError(fail))
          }
          resuming.set(id, { events: loaded.events, bytes: loaded.bytes })
          const session = yield* store.create({ id, seed: loaded.events }).pipe(
            Effect.onError(() => Effect.sync(() => resuming.delete(id)))
          )
          yield* stateFor(session)
          return session
        }).pipe(Effect.withSpan("JsonlSessions.resume", { attributes: { "dsh.session": id } }))

      return JsonlSessions.of({
        directory,
        file: fileOf,
        resume,
        load: (id) => load(directory, id).pipe(Effect.provideContext(platform)),
        list: list(directory).pipe(Effect.provideContext(platform))
      })
    })
  )

/**
 * Persists every session of the store in `options.directory` (see the module documentation),
 * on Node's file system. Requires the store and the checkpoint.
 *
 * @example
 * ```ts
 * import { FlushCheckpoint, JsonlSessions, SessionStore } from "@dsh/session"
 * import { Effect, Layer } from "effect"
 *
 * const Sessions = JsonlSessions.layer({ directory: ".dsh/sessions" }).pipe(
 *   Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer))
 * )
 *
 * const program = Effect.gen(function*() {
 *   const session = yield* (yield* SessionStore).create({ id: "demo" })
 *   yield* session.append("user/message", { content: [], source: "user" })
 *   yield* (yield* FlushCheckpoint).flush(session) // durable when this returns
 * }).pipe(Effect.scoped, Effect.provide(Sessions))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<JsonlSessions, PersistenceError, SessionStore | FlushCheckpoint> =>
  layerNoDeps(options).pipe(Layer.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)))
