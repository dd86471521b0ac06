/**
 * JSONL persistence: every session of the store in its own file, written behind the log and
 * made durable at the flush checkpoint, with one writer per file.
 *
 * ## Format (version 1)
 *
 * `<directory>/<encodeURIComponent(id)>.jsonl` (see {@link fileName}): a header line
 * `{"format":"dsh-session","version":1,"sessionId":…,"createdAt":…}`, then one event per line
 * (encoded through the `SessionEvent` Schema), event `seq` n on line n + 2. Every line ends with
 * a newline. Any event the session accepted and the Schema encodes is written, however deep its
 * data: past the depth `JSON.stringify` recurses to, lines are written by an iterative writer
 * (same text), and read back by `JSON.parse`, which does not recurse.
 *
 * ## One writer per file
 *
 * A session file is written by one session of one process at a time: whoever opens it for
 * writing — {@link JsonlSessions.resume}, or a new session at its first flush, before its file
 * is created — takes the lock `<file>.lock` ({@link lockFile}) and holds it until the session's
 * scope closes (after its final flush) or the layer closes. The lock file names its holder (pid,
 * host, a random token, start times). It is created atomically (a complete temporary file
 * hard-linked into place, which fails when the lock exists); a lock whose process is gone (same
 * host, `process.kill(pid, 0)` finds none) is stale and taken over, under a guard file
 * (`<file>.lock.takeover`) so two processes cannot both take it; a lock of another host is
 * always held. A second writer is refused: `resume` fails with `SessionLockedError`
 * (`SESSION_LOCKED`) naming the holder; a new session's flushes fail with a `PersistenceError`
 * naming it. Before each write a session checks that the lock still holds its token and that
 * its file's name still names the file it has open, with the length it left: if not (the lock
 * was taken from it, another program wrote the file, or the file was removed, renamed or
 * replaced — as an editor saving it does) it stops writing for good, every later flush failing
 * with a `PersistenceError`, so two writers cannot interleave lines and no flush reports as
 * durable what went to a file nobody can read under that name. Its lock, if still its own, is
 * given back when it closes. See ADR 0016 for what this does not cover.
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
 * middle of the file — and retries from the last durable event. An event the Schema cannot
 * encode (the session does not check core data) fails the flush with a `PersistenceError`
 * naming its `seq`, after the events before it are written; nothing after it is persisted.
 *
 * The file is created at the session's first flush, header only, under a temporary name,
 * fsynced and then hard-linked to its final name (and the directory fsynced), so a file under
 * its final name always has a complete header: a crash can tear only the last event line.
 * Creating a session in the store under an id whose file exists fails at once with
 * `SessionExistsError` (the layer's `admission` middleware); continue an existing file with
 * {@link JsonlSessions.resume}. The link refuses to replace a file too: a session whose file
 * another process created after the session was fails every flush with a `PersistenceError`
 * and never touches that file.
 *
 * ## Reading
 *
 * {@link load} decodes the header and every line. The one thing it repairs is what a crash in
 * the middle of a write leaves: a last line without its newline, which is dropped and reported
 * in `torn`. Anything else — a complete line that is not an event, wherever it is, a bad
 * header, a `seq` that does not continue — is a `CorruptLogError` naming the file and line.
 *
 * ## Resuming
 *
 * {@link JsonlSessions.resume} takes the lock, loads the file and seeds a new session of the
 * store with its events, so it continues `seq` and appends to the same file. Before it hands
 * the session back it logs what it repaired, and returns it in {@link Resumed} `repairs`: a
 * torn last line as a `session/repair` event of kind `torn-tail` (the line is cut off the file
 * by the first flush, which writes that event: until then a crash finds the file as it was),
 * then a turn the log left open — the process died mid-turn — closed by
 * `Closing.closeInterrupted` (a `session/repair` of kind `interrupted-turn`, open tool calls
 * answered `TOOL_OUTCOME_UNKNOWN`, the turn ended `interrupted`).
 *
 * @since 0.1.0
 */
import { AdapterSettings, HarnessError, ScopedList, SystemCode } from "@dsh/llm"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import type * as PlatformError from "effect/PlatformError"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as SchemaJITCompiler from "effect/schema/SchemaJITCompiler"
import * as SchemaParser from "effect/SchemaParser"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as Closing from "./Closing.ts"
import { FlushCheckpoint } from "./FlushCheckpoint.ts"
import * as LockFile from "./internal/lockFile.ts"
import * as Session from "./Session.ts"
import { CorruptLogError, InvalidSessionError, PersistenceError, SessionExistsError, SessionLockedError } from "./SessionError.ts"
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
 * A last line that a crash cut short — it has no newline, since the write was cut — which
 * {@link load} drops. (A complete line that is not an event is never taken for one: it is a
 * `CorruptLogError`.)
 *
 * @since 0.1.0
 * @category models
 */
export interface Torn {
  /** Its line number (the header is line 1). */
  readonly line: number
  /** What it holds, decoded as UTF-8 (a cut inside a character leaves a replacement character). */
  readonly text: string
  /** Its length in bytes: what cutting it off the file removes. */
  readonly bytes: number
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
 * A resumed session and what resuming it repaired, in the order of the `session/repair`
 * events that record each repair in its log (logged right after the loaded events, before
 * anything else): a torn last line (`torn-tail`), then a turn the log left open
 * (`interrupted-turn`). Empty when the file ended cleanly.
 *
 * @since 0.1.0
 * @category models
 */
export interface Resumed {
  readonly session: Session.Session
  readonly repairs: ReadonlyArray<SessionEvent.Repair>
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
   * Takes the file's lock, loads the file and creates the session in the store, seeded with
   * its events, for the current scope: it continues `seq` and appends to the same file, and
   * holds the lock until the scope closes. Before returning it repairs and logs what a crash
   * left (a torn last line, a turn left open; see {@link Resumed}). Fails with
   * `SessionExistsError` while a session with this id is open in this store, and with
   * `SessionLockedError` while another writer (another process, or another layer of this
   * one) holds the file.
   */
  readonly resume: (
    id: string
  ) => Effect.Effect<
    Resumed,
    PersistenceError | CorruptLogError | SessionExistsError | SessionLockedError,
    Scope.Scope
  >
  /**
   * {@link load} in this directory, once the sessions of this id that closed in this layer have
   * finished their closing flush (a scope closing only schedules it): what they logged is read.
   * Their flush failing fails the load.
   */
  readonly load: (id: string) => Effect.Effect<Loaded, PersistenceError | CorruptLogError>
  /** {@link list} of this directory, once every session closed in this layer has finished its closing flush. */
  readonly list: Effect.Effect<ReadonlyArray<Entry>, PersistenceError | CorruptLogError>
}>()("@dsh/session/JsonlSessions") {}

// ---------------------------------------------------------------------------------------------
// encoding

const NEWLINE = 0x0a
const encodeEvent = Schema.encodeUnknownResult(SessionEvent.SessionEvent)
const decodeEvent = Schema.decodeUnknownResult(SessionEvent.SessionEvent)
const encodeHeader = Schema.encodeSync(Header)
const decodeHeader = Schema.decodeUnknownResult(Header)
const utf8 = new TextEncoder()

// The longest name the layer gives a session's files — the takeover guard's temporary file,
// `<file>.lock.takeover.<uuid>.tmp` — must fit the 255 bytes most file systems allow a name.
const longestSuffix = ".lock.takeover.".length + 36 + ".tmp".length

/**
 * The longest file name (`fileName(id)`, in bytes: it is ASCII) a session of this layer may
 * have: 255 less the suffixes of its lock's temporary files. An id whose name is longer is
 * refused at creation with `InvalidSessionError` (`INVALID_SESSION`), rather than every flush
 * failing.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxFileNameBytes = 255 - longestSuffix

/** Why a session of this id cannot have its files, or `undefined` when it can. */
const fileNameProblem = (id: string): string | undefined => {
  const bytes = fileName(id).length
  return bytes <= maxFileNameBytes
    ? undefined
    : `its id is too long for a session file: its file name (the id URI-encoded, a character other than ASCII taking up to 12 bytes) ` +
      `would be ${bytes} bytes, and with its lock's temporary names a name may be at most ${maxFileNameBytes}`
}

/**
 * The file name of a session: its id, URI-encoded so that any id is one safe file name. A lone
 * surrogate (which URI encoding cannot carry) is written `%uD800`, which URI encoding never
 * produces, so every id has its own name and the name gives the id back.
 *
 * @since 0.1.0
 * @category utils
 */
export const fileName = (id: string): string => `${id.split(loneSurrogate).map(encodePart).join("")}.jsonl`

// A surrogate not in a pair; the capture keeps it as its own part when the id is split.
const loneSurrogate = /([\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF])/

const encodePart = (part: string): string =>
  part.length === 1 && loneSurrogate.test(part) ? `%u${part.charCodeAt(0).toString(16).toUpperCase()}` : encodeURIComponent(part)

const idOfFileName = (name: string): string | undefined => {
  if (!name.endsWith(".jsonl")) return undefined
  try {
    return name.slice(0, -".jsonl".length).split(/(%u[0-9A-F]{4})/).map(decodePart).join("")
  } catch {
    return undefined
  }
}

const decodePart = (part: string): string =>
  /^%u[0-9A-F]{4}$/.test(part) ? String.fromCharCode(parseInt(part.slice(2), 16)) : decodeURIComponent(part)

/**
 * The header line of a session file, newline included.
 *
 * @since 0.1.0
 * @category utils
 */
export const headerLine = (sessionId: string, createdAt: number): string =>
  JSON.stringify(encodeHeader({ format, version, sessionId, createdAt })) + "\n"

/**
 * The lock file of a session file (see the module documentation): `<file>.lock`.
 *
 * @since 0.1.0
 * @category utils
 */
export const lockFile = (file: string): string => `${file}.lock`

/**
 * The line of an event, newline included (see {@link encodeLine}); throws when the Schema
 * cannot encode the event.
 *
 * @since 0.1.0
 * @category utils
 */
export const eventLine = (event: SessionEvent.SessionEvent): string => {
  const line = encodeLine(event)
  if (Result.isFailure(line)) throw new TypeError(line.failure)
  return line.success
}

/**
 * The line of an event, newline included, or why it has none: the Schema cannot encode it. Any
 * encodable event has one, however deeply its data nests.
 *
 * @since 0.1.0
 * @category utils
 */
export const encodeLine = (event: SessionEvent.SessionEvent): Result.Result<string, string> => {
  try {
    const fast = encodeCoreEvent(event)
    if (fast !== undefined) return Result.succeed(stringify(fast) + "\n")
    const encoded = encodeEvent(event)
    if (Result.isFailure(encoded)) return Result.fail(encoded.failure.message)
    return Result.succeed(stringify(encoded.success) + "\n")
  } catch (error) {
    return Result.fail(HarnessError.describe(error))
  }
}

// Nearly every line is a core event, and encoding one through the union first matches it
// against the union's members, with Effect's interpreter: the member of its type, compiled by
// Effect's JIT (code generated once per type), encodes it at about a third of the cost. Only
// an event that member refuses (or an extension event) goes through the union, which reports
// why exactly as before.
// Made on a type's first line, not at import: most importers of the package never write JSONL.
const coreEncoders = new Map<string, (event: unknown) => Exit.Exit<unknown, unknown>>()
const coreTypes = new Set<string>(SessionEvent.coreTypes)

const coreEncoderOf = (type: SessionEvent.CoreType): (event: unknown) => Exit.Exit<unknown, unknown> => {
  const schema = SessionEvent.eventSchema(type)
  SchemaJITCompiler.enable(schema.ast)
  SchemaJITCompiler.enable(SchemaAST.flip(schema.ast))
  const encode = SchemaParser.encodeUnknownExit(schema as Schema.Codec<unknown, unknown>)
  coreEncoders.set(type, encode)
  return encode
}

/** The encoded form of a valid core event; `undefined` for anything else. */
const encodeCoreEvent = (event: SessionEvent.SessionEvent): unknown => {
  const encode = coreEncoders.get(event.type) ??
    (coreTypes.has(event.type) ? coreEncoderOf(event.type as SessionEvent.CoreType) : undefined)
  if (encode === undefined) return undefined
  const exit = encode(event)
  return Exit.isSuccess(exit) ? exit.value : undefined
}

// JSON.stringify recurses, and runs out of stack some thousands of levels down; data that deep
// is rare, so it pays for the slower writer only when it has it.
const stringify = (json: unknown): string => {
  try {
    return JSON.stringify(json)
  } catch (error) {
    if (!(error instanceof RangeError)) throw error
    return stringifyIteratively(json)
  }
}

/** An array or object being written, and how far. */
interface Open {
  readonly node: object
  /** The keys of an object; undefined for an array. */
  readonly keys: ReadonlyArray<string> | undefined
  next: number
  written: number
}

// JSON.stringify omits these members of an object, and writes them as null in an array
const isOmitted = (value: unknown) =>
  value === undefined || typeof value === "function" || typeof value === "symbol"

/**
 * `JSON.stringify` of JSON data (what the Schema encodes to) with a stack of its own: the same
 * text at any depth. A cycle, which JSON data cannot have, throws instead of looping.
 */
const stringifyIteratively = (root: unknown): string => {
  const parts: Array<string> = []
  const stack: Array<Open> = []
  const onPath = new Set<object>()
  const enter = (value: unknown) => {
    if (typeof value !== "object" || value === null) {
      parts.push(JSON.stringify(value) ?? "null")
      return
    }
    if (onPath.has(value)) throw new TypeError("cannot write a cyclic value as JSON")
    onPath.add(value)
    const isArray = Array.isArray(value)
    parts.push(isArray ? "[" : "{")
    stack.push({ node: value, keys: isArray ? undefined : Object.keys(value), next: 0, written: 0 })
  }
  enter(root)
  while (stack.length > 0) {
    const open = stack[stack.length - 1]!
    if (open.keys === undefined) {
      const array = open.node as ReadonlyArray<unknown>
      if (open.next === array.length) {
        parts.push("]")
        onPath.delete(stack.pop()!.node)
        continue
      }
      if (open.next > 0) parts.push(",")
      enter(array[open.next++])
      continue
    }
    const record = open.node as Readonly<Record<string, unknown>>
    while (open.next < open.keys.length && isOmitted(record[open.keys[open.next]!])) open.next++
    if (open.next === open.keys.length) {
      parts.push("}")
      onPath.delete(stack.pop()!.node)
      continue
    }
    const key = open.keys[open.next++]!
    if (open.written++ > 0) parts.push(",")
    parts.push(JSON.stringify(key), ":")
    enter(record[key])
  }
  return parts.join("")
}

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
  try {
    const event = decodeEvent(json.success)
    return Result.isFailure(event) ? Result.fail(`not a session event: ${event.failure.message}`) : Result.succeed(event.success)
  } catch (error) {
    return Result.fail(`cannot be decoded: ${HarnessError.describe(error)}`)
  }
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
  const position = { line: 1 }
  try {
    return parseLines(file, data, position)
  } catch (error) {
    // what the engine refuses (a line longer than its longest string) is not a torn line either
    return Result.fail(corrupt(file, position.line, `cannot be read: ${HarnessError.describe(error)}`))
  }
}

// Complete lines were written whole from valid text: bytes that are not UTF-8 there are damage,
// not a cut (only the torn tail may end inside a character).
const strictUtf8 = new TextDecoder("utf-8", { fatal: true })

/** One complete line (without its newline) decoded strictly, as {@link decodeLines} does. */
const decodeLine = (file: string, line: number, bytes: Uint8Array): Result.Result<string, CorruptLogError> => {
  try {
    return Result.succeed(strictUtf8.decode(bytes))
  } catch {
    return Result.fail(corrupt(file, line, "is not valid UTF-8"))
  }
}

/** The lines of `data[start, end)` (whole lines), or the 1-based line of the first that is not UTF-8. */
const decodeLines = (data: Uint8Array, start: number, end: number, firstLine: number): Result.Result<Array<string>, number> => {
  try {
    const lines = strictUtf8.decode(data.subarray(start, end)).split("\n")
    lines.pop()
    return Result.succeed(lines)
  } catch {
    let line = firstLine
    for (let from = start; from < end; line++) {
      const next = data.indexOf(NEWLINE, from) + 1
      try {
        strictUtf8.decode(data.subarray(from, next))
      } catch {
        return Result.fail(line)
      }
      from = next
    }
    return Result.fail(firstLine)
  }
}

const parseLines = (file: string, data: Uint8Array, position: { line: number }): Result.Result<Loaded, CorruptLogError> => {
  const decoder = new TextDecoder()
  const headerEnd = data.indexOf(NEWLINE)
  if (headerEnd < 0) {
    return Result.fail(corrupt(file, 1, data.length === 0 ? "empty file (no header)" : "the header line is not terminated"))
  }
  const headerText = decodeLines(data, 0, headerEnd + 1, 1)
  if (Result.isFailure(headerText)) return Result.fail(corrupt(file, 1, "is not valid UTF-8"))
  const header = readHeader(file, headerText.success[0]!)
  if (Result.isFailure(header)) return Result.fail(header.failure)

  const complete = data.lastIndexOf(NEWLINE) + 1
  const events: Array<SessionEvent.SessionEvent> = []
  let start = headerEnd + 1
  while (start < complete) {
    const end = data.indexOf(NEWLINE, Math.min(complete, start + BLOCK_BYTES) - 1) + 1
    const decoded = decodeLines(data, start, end, position.line + 1)
    if (Result.isFailure(decoded)) return Result.fail(corrupt(file, decoded.failure, "is not valid UTF-8"))
    for (const text of decoded.success) {
      position.line++
      // a complete line was written whole: if it is not an event, no crash explains it
      const event = readEvent(text)
      if (Result.isFailure(event)) return Result.fail(corrupt(file, position.line, event.failure))
      if (event.success.seq !== events.length) {
        return Result.fail(corrupt(file, position.line, `expected seq ${events.length}, found seq ${event.success.seq}`))
      }
      events.push(event.success)
    }
    start = end
  }

  const torn: Torn | undefined = complete < data.length
    ? { line: position.line + 1, text: decoder.decode(data.subarray(complete)), bytes: data.length - complete }
    : undefined
  return Result.succeed({ file, header: header.success, events: SessionEvent.decodedLog(events), torn, bytes: complete })
}

// ---------------------------------------------------------------------------------------------
// reading files

const sessionIdOf = (file: string) => idOfFileName(file.slice(file.lastIndexOf("/") + 1)) ?? ""

const ioError = (sessionId: string, what: string) => (cause: PlatformError.PlatformError) =>
  new PersistenceError({ message: `${what}: ${inWords(cause)}`, sessionId, cause })

// What the system said, in words for the errno codes a user meets (a directory where a session
// file goes, a file where the directory goes), else the platform error's own message.
const errnoWords: Readonly<Record<string, string>> = {
  EISDIR: "it is a directory, not a file",
  ENOTDIR: "a part of the path is a file, not a directory",
  EEXIST: "something that is not a directory is in the way",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOENT: "it does not exist",
  ENOSPC: "no space left on the device",
  EROFS: "the file system is read-only",
  ENAMETOOLONG: "the name is too long for the file system"
}

const inWords = (cause: PlatformError.PlatformError): string => {
  const code = SystemCode.of(cause)
  return code !== undefined && code in errnoWords ? `${errnoWords[code]} (${code})` : cause.message
}

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
    const fail = ioError(sessionIdOf(file), `cannot read ${file}`)
    yield* refuseSpecial(fs, file, sessionIdOf(file), fail)
    const data = yield* fs.readFile(file).pipe(Effect.mapError(fail))
    return yield* Effect.fromResult(parse(file, data))
  })

/**
 * Loads the file of session `id` in `directory`: the header and every event, each line
 * decoded through the event Schemas. A torn last line (no newline: a cut write) is dropped and
 * reported in `torn`; any other problem — a complete line that is not an event included, even
 * the last — is a `CorruptLogError` naming the file and line (a header naming another session
 * included). A missing or unreadable file is a `PersistenceError`.
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

// The kinds of file `scan` refuses to open, in words (a directory fails its open with EISDIR,
// in the words of `errnoWords`).
const kindWords: Readonly<Record<string, string>> = {
  FIFO: "named pipe (FIFO)",
  Socket: "socket",
  BlockDevice: "block device",
  CharacterDevice: "character device"
}

// A FIFO or a device named like a session would block a read on its open or its reads, and
// the process with it (a thread-pool read cannot be interrupted): refused by its kind first.
const refuseSpecial = (
  fs: FileSystem.FileSystem,
  file: string,
  id: string,
  fail: (cause: PlatformError.PlatformError) => PersistenceError
): Effect.Effect<void, PersistenceError> =>
  Effect.flatMap(Effect.mapError(fs.stat(file), fail), (info) =>
    kindWords[info.type] === undefined
      ? Effect.void
      : Effect.fail(new PersistenceError({ message: `cannot read ${file}: it is a ${kindWords[info.type]}, not a regular file`, sessionId: id })))

// Reads one file for `list` without decoding every line: it counts newlines, then decodes only
// the header and the last complete line.
const scan = (file: string, id: string) =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const fail = ioError(id, `cannot read ${file}`)
    yield* refuseSpecial(fs, file, id, fail)
    const handle = yield* fs.open(file, { flag: "r" }).pipe(Effect.mapError(fail))
    const info = yield* handle.stat.pipe(Effect.mapError(fail))
    let size = 0
    let newlines = 0
    let first = -1
    // offsets of the last two newlines, most recent last
    const last = [-1, -1]
    for (;;) {
      const chunk = yield* handle.readAlloc(SCAN_BYTES).pipe(Effect.mapError(fail))
      if (Option.isNone(chunk)) break
      const data = chunk.value
      for (let i = data.indexOf(NEWLINE); i >= 0; i = data.indexOf(NEWLINE, i + 1)) {
        if (first < 0) first = size + i
        newlines++
        last[0] = last[1]!
        last[1] = size + i
      }
      size += data.length
    }
    // Both lines read here are complete, so they are decoded as strictly as `load` decodes
    // them: a lenient decoder would turn damaged bytes into U+FFFD and accept the line.
    const lineAt = (line: number, from: number, to: number) =>
      handle.readAlloc(to - from, { position: BigInt(from) }).pipe(
        Effect.mapError(fail),
        Effect.flatMap((bytes) => Effect.fromResult(decodeLine(file, line, Option.getOrElse(bytes, () => new Uint8Array(0)))))
      )
    if (first < 0) return yield* corrupt(file, 1, size === 0 ? "empty file (no header)" : "the header line is not terminated")
    const header = yield* Effect.fromResult(readHeader(file, yield* lineAt(1, 0, first)))
    if (header.sessionId !== id) {
      return yield* corrupt(file, 1, `the header names session ${JSON.stringify(header.sessionId)}, not ${JSON.stringify(id)}`)
    }
    const events = newlines - 1
    const torn = size > last[1]! + 1
    let lastTime: number | undefined
    if (events > 0) {
      // the last complete line is line `newlines`: what load says of it, list says too
      const final = readEvent(yield* lineAt(newlines, last[0]! + 1, last[1]!))
      if (Result.isFailure(final)) return yield* corrupt(file, newlines, final.failure)
      if (final.success.seq !== events - 1) {
        // a line missing or repeated anywhere before the last: reading the whole file (rare: it
        // is damaged) names the line where the count first goes wrong, as `load` does
        const whole = yield* Effect.exit(loadFile(file))
        if (whole._tag === "Failure") return yield* Effect.failCause(whole.cause)
        return yield* corrupt(file, newlines, `expected seq ${events - 1}, found seq ${final.success.seq}`)
      }
      lastTime = final.success.time
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

// A file named by hand (`a b.jsonl`): its name decodes to an id, but `load`, `resume` and a new
// session of that id use the id's own file name, so listing it as that session would list a
// session nobody can open (and let a second file of the same id be created beside it).
const misnamed = (file: string, id: string, own: string) =>
  Effect.fail(
    new PersistenceError({
      message: `${file} is not where session ${JSON.stringify(id)} is kept (${own}): loading, resuming or creating ` +
        "that session uses that name, never this one; rename the file to use it",
      sessionId: id
    })
  )

/**
 * A session file of a directory that {@link survey} could not read: its header or last complete
 * line does not decode (`CorruptLogError`), or it cannot be read at all (`PersistenceError`: a
 * directory named like a session file, no permission), or it is not named as {@link fileName}
 * names the session its name decodes to (`PersistenceError`: `a b.jsonl`, named by hand, where
 * `load("a b")` reads `a%20b.jsonl`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Unreadable {
  readonly id: string
  readonly file: string
  readonly error: PersistenceError | CorruptLogError
}

/**
 * Every session file of a directory, each read as {@link list} reads it: those that read, sorted
 * by id, and those that do not, each with its error, so that one damaged file does not hide the
 * others (what a listing for a person needs). Fails only when the directory itself cannot be
 * listed.
 *
 * @since 0.1.0
 * @category decoding
 */
export const survey = (
  directory: string
): Effect.Effect<
  { readonly entries: ReadonlyArray<Entry>; readonly unreadable: ReadonlyArray<Unreadable> },
  PersistenceError,
  FileSystem.FileSystem | Path.Path
> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const names = yield* fs.readDirectory(directory).pipe(Effect.mapError(ioError("", `cannot list ${directory}`)))
    const files = names.flatMap((name) => {
      const id = idOfFileName(name)
      return id === undefined ? [] : [{ id, file: path.join(directory, name), named: fileName(id) === name }]
    })
    // a name made by hand may not decode at all (`100%.jsonl`): no session's file, said so
    const undecodable = names.filter((name) => name.endsWith(".jsonl") && idOfFileName(name) === undefined).map((name): Unreadable => {
      const file = path.join(directory, name)
      const id = name.slice(0, -".jsonl".length)
      return {
        id,
        file,
        error: new PersistenceError({
          message: `${file} is no session's file: its name is not an id URI-encoded (fileName), so no session can load, resume or create it; rename the file to use it`,
          sessionId: id
        })
      }
    })
    const scanned = yield* Effect.forEach(
      files,
      ({ file, id, named }) => Effect.result(named ? scan(file, id) : misnamed(file, id, path.join(directory, fileName(id)))),
      { concurrency: 4 }
    )
    const entries: Array<Entry> = []
    const unreadable: Array<Unreadable> = [...undecodable]
    scanned.forEach((result, i) => {
      if (Result.isSuccess(result)) entries.push(result.success)
      else unreadable.push({ id: files[i]!.id, file: files[i]!.file, error: result.failure })
    })
    const byId = (a: { readonly id: string }, b: { readonly id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
    return { entries: entries.sort(byId), unreadable: unreadable.sort(byId) }
  })

/**
 * The sessions of a directory (every `*.jsonl` file; one not named as {@link fileName} names
 * its session is a `PersistenceError`, see {@link Unreadable}), sorted by id, with their sizes, event
 * counts and last activity. Only the header and the last complete line are decoded —
 * {@link load} checks every line — and about those two it agrees with {@link load}: a file
 * without a valid header (or whose header names another session than its file name), or whose
 * last complete line is not the event its position says (or is not valid UTF-8, which `load`
 * refuses on any complete line), is a `CorruptLogError`, not skipped
 * or counted as torn (the first such file by id; {@link survey} reports every one and lists the
 * rest).
 *
 * @since 0.1.0
 * @category decoding
 */
export const list = (
  directory: string
): Effect.Effect<ReadonlyArray<Entry>, PersistenceError | CorruptLogError, FileSystem.FileSystem | Path.Path> =>
  Effect.flatMap(survey(directory), ({ entries, unreadable }) =>
    unreadable.length === 0 ? Effect.succeed(entries) : Effect.fail(unreadable[0]!.error))

// ---------------------------------------------------------------------------------------------
// the layer

interface State {
  readonly session: Session.Session
  readonly file: string
  /** One flush at a time. */
  readonly serial: Semaphore.Semaphore
  /** Events before this seq are durable in the file. */
  written: number
  /** The file's length after the last successful fsync; undefined until the file exists. */
  durable: number | undefined
  /** Whether the directory was fsynced since the file got its name (so the name survives a crash). */
  named: boolean
  /** The bytes past `durable` cannot be trusted: a write or fsync failed since, or a resume found a torn line there. */
  dirty: boolean
  handle: Handle | undefined
  /** The file's lock, while this session may write the file. */
  lock: LockFile.Held | undefined
  /** Why this session must not write its file any more (its lock was lost, the file changed behind it): for good. */
  lost: string | undefined
  /** The session closed and gave its file and lock back: it writes no more. */
  released: boolean
}

/** A session's open file. */
interface Handle {
  readonly file: FileSystem.File
  readonly scope: Scope.Closeable
  /** Its device and inode (see {@link identityOf}), when the platform gives them. */
  readonly identity: string | undefined
}

/** Why a session must stop writing its file, and what follows for the user. */
interface Problem {
  readonly why: string
  readonly consequence?: string
}

/** Which file a stat describes: device and inode, when the platform gives them. */
const identityOf = (info: FileSystem.File.Info): string | undefined =>
  Option.isNone(info.ino) ? undefined : `${info.dev}:${info.ino.value}`

/** A file being resumed: the session the store creates for it continues the file instead of creating it. */
interface Resuming {
  readonly events: ReadonlyArray<SessionEvent.SessionEvent>
  readonly bytes: number
  readonly torn: boolean
  readonly lock: LockFile.Held
}

// Keep each write call and its encoded buffer bounded, whatever the size of the flush.
const WRITE_CHUNK_CHARS = 1024 * 1024

const tornTailRepair = (loaded: Loaded, torn: Torn): SessionEvent.Repair => ({
  kind: "torn-tail",
  line: torn.line,
  bytes: torn.bytes,
  message: `line ${torn.line} of ${loaded.file} had no newline, so a crash cut its write short: ` +
    `${torn.bytes} bytes cut off the file, which holds events up to seq ${loaded.events.length - 1} intact`
})

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
      // a misspelt key (`directroy`) would otherwise be dropped without a word
      const unknown = typeof options === "object" && options !== null
        ? AdapterSettings.unknownKeys("JsonlSessions: the options object", options, ["directory"])
        : `JsonlSessions: the options must be { directory }, got ${HarnessError.describe(options)}`
      if (unknown !== undefined) return yield* new PersistenceError({ message: unknown, sessionId: "" })
      // an empty name would resolve to the working directory and scatter sessions there
      if (typeof options.directory !== "string" || options.directory.trim() === "") {
        return yield* new PersistenceError({
          message: `JsonlSessions: the session directory must be a path, got ${JSON.stringify(options.directory) ?? String(options.directory)}`,
          sessionId: ""
        })
      }
      const directory = path.resolve(options.directory)
      const fileOf = (id: string) => path.join(directory, fileName(id))
      const host = LockFile.nodeHost

      yield* fs.makeDirectory(directory, { recursive: true }).pipe(
        Effect.mapError(ioError("", `cannot create the session directory ${directory}`))
      )

      const states = new WeakMap<Session.Session, State>()
      // states that may still have something to write, a file handle or a lock to give back
      const active = new Set<State>()
      const resuming = new Map<string, Resuming>()

      const stateFor = (session: Session.Session): Effect.Effect<State> => {
        const known = states.get(session)
        return known === undefined ? newState(session) : Effect.succeed(known)
      }

      const newState = Effect.fnUntraced(function*(session: Session.Session): Effect.fn.Return<State> {
        const resumed = resuming.get(session.id)
        const continues = resumed !== undefined && (yield* Session.continues(session, resumed.events))
        const again = states.get(session)
        if (again !== undefined) return again
        const state: State = {
          session,
          file: fileOf(session.id),
          serial: Semaphore.makeUnsafe(1),
          written: continues ? session.seeded : 0,
          durable: continues ? resumed!.bytes : undefined,
          named: continues,
          // a torn line is cut by the first flush, which writes the repair that reports it
          dirty: continues && resumed!.torn,
          handle: undefined,
          lock: continues ? resumed!.lock : undefined,
          lost: undefined,
          released: false
        }
        if (continues) resuming.delete(session.id)
        states.set(session, state)
        active.add(state)
        return state
      })

      const existingFile = (id: string) =>
        new SessionExistsError({
          message: `session ${JSON.stringify(id)} exists already in ${fileOf(id)}; continue it with ` +
            "JsonlSessions.resume, or create the new session under another id",
          sessionId: id
        })

      const failure = (state: State, message: string, cause?: unknown) =>
        new PersistenceError({ message, sessionId: state.session.id, ...(cause === undefined ? {} : { cause }) })

      const syncDirectory = Effect.scoped(
        Effect.flatMap(fs.open(directory, { flag: "r" }), (handle) => handle.sync)
      )

      const lockedError = (id: string, refused: LockFile.Refused, what: string) =>
        new SessionLockedError({
          message: `${what} session ${JSON.stringify(id)}: ${refused.message}`,
          sessionId: id,
          ...(refused.holder === undefined ? {} : { holder: refused.holder })
        })

      const takeLock = (id: string, file: string) =>
        LockFile.acquire(fs, host, lockFile(file), `write session ${JSON.stringify(id)}`)

      const giveLockBack = (id: string, lock: LockFile.Held) =>
        LockFile.release(fs, lock).pipe(
          Effect.catch((error) => Effect.logWarning(`JsonlSessions: cannot remove the lock ${lock.path} of session ${id}: ${error.message}`))
        )

      // Stops a state writing for good: whatever happened to its file, its idea of the file's
      // length can no longer be trusted. It keeps its lock, which its release gives back if the
      // lock still names it (one taken from it is left to its new holder): a lock dropped here
      // would stay on disk, naming this process, and refuse every later resume of the file.
      const lose = (state: State, why: string, consequence = "so another process may be writing it (resume the session to go on)") => {
        state.lost = `session ${JSON.stringify(state.session.id)} stopped writing ${state.file}: ${why}, ${consequence}`
        return failure(state, state.lost)
      }

      // The lock is taken before a new session's file is created, and checked before every
      // write of a session that holds it. A session whose file is open returns the lock for
      // `checkOwnership` to check, with the file's length.
      const ensureWriter = Effect.fnUntraced(function*(state: State): Effect.fn.Return<LockFile.Held | undefined, PersistenceError> {
        if (state.released) {
          return yield* failure(state, `cannot write ${state.file}: session ${JSON.stringify(state.session.id)} closed and gave the file back`)
        }
        if (state.lost !== undefined) return yield* failure(state, state.lost)
        if (state.lock === undefined) {
          state.lock = yield* takeLock(state.session.id, state.file).pipe(
            Effect.mapError((error) =>
              error._tag === "Refused"
                ? failure(state, `cannot write ${state.file}: ${error.message}`, lockedError(state.session.id, error, "cannot write"))
                : ioError(state.session.id, `cannot lock ${state.file}`)(error)
            )
          )
          return undefined
        }
        if (state.handle !== undefined && state.named) return state.lock
        const problem = yield* checkLock(state, state.lock)
        if (problem !== undefined) return yield* lose(state, problem)
        return undefined
      })

      const checkLock = (state: State, lock: LockFile.Held) =>
        LockFile.check(fs, lock).pipe(Effect.mapError(ioError(state.session.id, `cannot check the lock of ${state.file}`)))

      // Creates the file with its header under a temporary name and links it into place: the
      // link fails rather than replace a file, and the final name never holds a torn header.
      const create = (state: State) => {
        const temporary = `${state.file}.${crypto.randomUUID()}.tmp`
        const fail = ioError(state.session.id, `cannot create ${state.file}`)
        return Effect.gen(function*() {
          const header = yield* Effect.try({
            try: () => utf8.encode(headerLine(state.session.id, state.session.createdAt)),
            catch: (error) => failure(state, `cannot encode the header of ${state.file}: ${HarnessError.describe(error)}`)
          })
          yield* Effect.scoped(Effect.gen(function*() {
            const handle = yield* fs.open(temporary, { flag: "wx" })
            yield* handle.writeAll(header)
            yield* handle.sync
          })).pipe(
            Effect.andThen(fs.link(temporary, state.file)),
            Effect.ensuring(Effect.ignore(fs.remove(temporary, { force: true }))),
            Effect.catch((cause) =>
              cause.reason._tag === "AlreadyExists"
                ? exists(state, cause)
                : Effect.fail(fail(cause))
            )
          )
          state.durable = header.length
        })
      }

      // The file is someone else's: give back the lock that was taken for it. The session never
      // writes it, so it stops for good (and a resume of the file need not wait for it).
      const exists = (state: State, cause: PlatformError.PlatformError) =>
        Effect.gen(function*() {
          const lock = state.lock
          state.lock = undefined
          if (lock !== undefined) yield* giveLockBack(state.session.id, lock)
          state.lost = `cannot create ${state.file}: the file exists already. It belongs to an earlier session ` +
            `with id ${JSON.stringify(state.session.id)}; continue it with JsonlSessions.resume, or use another id`
          return yield* failure(state, state.lost, cause)
        })

      // Opened once per session; the identity of the file it opened is what `fileProblem` checks
      // the file name against.
      const openHandle = Effect.fnUntraced(function*(state: State) {
        if (state.handle !== undefined) return state.handle
        const scope = Scope.makeUnsafe()
        const handle: Handle = yield* Effect.gen(function*() {
          const file = yield* fs.open(state.file, { flag: "a" })
          return { file, scope, identity: identityOf(yield* file.stat) }
        }).pipe(
          Scope.provide(scope),
          Effect.onError(() => Scope.close(scope, Exit.void)),
          Effect.mapError(ioError(state.session.id, `cannot open ${state.file}`))
        )
        state.handle = handle
        return handle
      })

      // What is wrong with the file under the session's name, if anything: it must still be the
      // file the session has open — not removed or renamed, not replaced by another (as an editor
      // saving it does), either of which would leave every later write in a file nobody reads
      // under that name — and as long as the session left it: `durable`, or longer after a
      // failed write (or at a torn line). One `stat` of the name, which gives both.
      const fileProblem = (state: State, handle: Handle, durable: number): Effect.Effect<Problem | undefined, PersistenceError> =>
        (handle.identity === undefined ? handle.file.stat : fs.stat(state.file)).pipe(
          Effect.map((info): Problem | undefined => {
            if (handle.identity !== undefined && identityOf(info) !== handle.identity) {
              return gone("another file was put in its place (as an editor saving it does)")
            }
            const size = Number(info.size)
            if (size === durable || (state.dirty && size > durable)) return undefined
            return { why: `it is ${size} bytes long, but this session left it at ${durable}` }
          }),
          Effect.catchIf((cause) => cause.reason._tag === "NotFound", () => Effect.succeed(gone("it was removed or renamed"))),
          Effect.mapError(ioError(state.session.id, `cannot stat ${state.file}`))
        )

      const gone = (why: string): Problem => ({
        why,
        consequence: "so what the session logs would not reach the file of that name; the session keeps its events " +
          "(start a session from them to persist them)"
      })

      // The file must be the session's own and as it left it (`fileProblem`). The lock, when
      // given, is checked at the same time (one wait on the disk, not two), and a lost lock is
      // reported before a problem with the file.
      const checkOwnership = Effect.fnUntraced(function*(state: State, handle: Handle, durable: number, lock: LockFile.Held | undefined) {
        const onDisk = fileProblem(state, handle, durable)
        const [lockProblem, problem] = lock === undefined
          ? [undefined, yield* onDisk]
          : yield* Effect.all([checkLock(state, lock), onDisk], { concurrency: 2 })
        if (lockProblem !== undefined) return yield* lose(state, lockProblem)
        if (problem !== undefined) return yield* lose(state, problem.why, problem.consequence)
      })

      /**
       * Writes the lines of `events` up to the first one that cannot be encoded. Nothing is
       * written before `ready` succeeds (it always runs, even with nothing to write): the
       * first lines are encoded meanwhile.
       */
      const writeLines = Effect.fnUntraced(function*(
        state: State,
        file: FileSystem.File,
        events: ReadonlyArray<SessionEvent.SessionEvent>,
        ready: Effect.Effect<void, PersistenceError>
      ) {
        const fail = ioError(state.session.id, `cannot write ${state.file}`)
        let bytes = 0
        let count = 0
        let unencodable: string | undefined
        let text = ""
        let waited = false
        const put = (chunk: string) =>
          Effect.suspend(() => {
            const buffer = utf8.encode(chunk)
            bytes += buffer.length
            if (waited) return file.writeAll(buffer).pipe(Effect.mapError(fail))
            waited = true
            return Effect.andThen(ready, file.writeAll(buffer).pipe(Effect.mapError(fail)))
          })
        for (const event of events) {
          const line = encodeLine(event)
          if (Result.isFailure(line)) {
            unencodable = `cannot encode event seq ${event.seq} (${event.type}) of session ${JSON.stringify(state.session.id)}, ` +
              `so neither it nor any later event is persisted in ${state.file}: ${line.failure}`
            break
          }
          text += line.success
          count++
          if (text.length >= WRITE_CHUNK_CHARS) {
            yield* put(text)
            text = ""
          }
        }
        if (text.length > 0) yield* put(text)
        if (!waited) yield* ready
        return { bytes, count, unencodable }
      })

      const write = Effect.fnUntraced(function*(state: State) {
        const events = yield* state.session.eventsFrom(state.written)
        if (state.durable !== undefined && state.named && !state.dirty && events.length === 0) return
        const lock = yield* ensureWriter(state)
        if (state.durable === undefined) yield* create(state)
        if (!state.named) {
          yield* syncDirectory.pipe(Effect.mapError(ioError(state.session.id, `cannot fsync the directory of ${state.file}`)))
          state.named = true
        }
        const handle = yield* openHandle(state)
        const file = handle.file
        const durable = state.durable!
        // the disk answers the ownership check while the lines are encoded
        const checked = yield* Effect.forkChild(checkOwnership(state, handle, durable, lock), { startImmediately: true })
        const ready = readyToWrite(state, file, durable, checked)
        const { bytes, count, unencodable } = yield* writeLines(state, file, events, ready)
        yield* file.sync.pipe(Effect.mapError(ioError(state.session.id, `cannot fsync ${state.file}`)))
        state.durable = durable + bytes
        state.written += count
        state.dirty = false
        if (unencodable !== undefined) return yield* failure(state, unencodable)
      })

      // The file is this session's and as it left it: cut what a failed write left past `durable`.
      const readyToWrite = Effect.fnUntraced(function*(
        state: State,
        file: FileSystem.File,
        durable: number,
        checked: Fiber.Fiber<void, PersistenceError>
      ): Effect.fn.Return<void, PersistenceError> {
        yield* Fiber.join(checked)
        if (state.dirty) yield* file.truncate(durable).pipe(Effect.mapError(ioError(state.session.id, `cannot write ${state.file}`)))
        state.dirty = true
      })

      // A flush half-done is worth nothing, and interrupting one would leave the file dirty for
      // no gain: once it holds the session's permit it runs to the end.
      const flushState = (state: State) =>
        state.serial.withPermit(Effect.uninterruptible(write(state))).pipe(
          Effect.withSpan("JsonlSessions.flush", { attributes: { "dsh.session": state.session.id } })
        )

      // Never fails: what cannot be given back is logged, and the next state is released anyway.
      // Run under the session's permit (see `release`), so whoever takes it after sees a release
      // finished.
      const releaseNow = (state: State) =>
        Effect.gen(function*() {
          active.delete(state)
          state.released = true
          const handle = state.handle
          state.handle = undefined
          if (handle !== undefined) yield* Scope.close(handle.scope, Exit.void)
          const lock = state.lock
          state.lock = undefined
          if (lock !== undefined) yield* giveLockBack(state.session.id, lock)
        })

      // Not interruptible: a release cut short (the layer closing interrupts the fiber that
      // watches a session close) would forget a lock it has not removed yet.
      const release = (state: State) => Effect.uninterruptible(state.serial.withPermit(releaseNow(state)))

      // A failure here has no caller to go to: it is logged, defects included, so that one
      // session cannot keep the others from being flushed and released. The layer closing waits
      // for one under way rather than cut it between the flush and the release.
      const flushAndRelease = (state: State, when: string) =>
        flushState(state).pipe(
          Effect.andThen(release(state)),
          Effect.catchCause((cause) =>
            Effect.andThen(
              Effect.logError(
                `JsonlSessions: ${when}, session ${JSON.stringify(state.session.id)} was not persisted: ${HarnessError.describe(Cause.squash(cause))}`
              ),
              releaseIfLost(state)
            )
          ),
          Effect.uninterruptible
        )

      // A session that stopped writing for good will never write again: once its flush failed,
      // it gives its file and lock back now rather than hold them until the layer closes (one
      // whose flush may yet succeed keeps them for the layer's last attempt).
      const releaseIfLost = (state: State) => Effect.suspend(() => (state.lost === undefined ? Effect.void : release(state)))

      const fibers = yield* Scope.fork(yield* Effect.scope)

      yield* Effect.addFinalizer(() =>
        Effect.gen(function*() {
          yield* Scope.close(fibers, Exit.void)
          for (const session of yield* store.all) yield* stateFor(session)
          yield* Effect.forEach([...active], (state) => flushAndRelease(state, "at shutdown"), {
            concurrency: 8,
            discard: true
          })
          // what could not be flushed is lost now: at least give the file handles and locks back
          for (const state of active) yield* release(state)
        })
      )

      yield* ScopedList.inOpenScope(checkpoint.register({
        name: "jsonl",
        flush: (session) => Effect.flatMap(stateFor(session), flushState)
      }))

      const watch = (session: Session.Session) =>
        session.awaitClosed.pipe(
          Effect.andThen(stateFor(session)),
          Effect.flatMap((state) => flushAndRelease(state, "when it closed"))
        )

      // A new session may not take an id whose file holds an earlier session: that file is
      // continued by `resume` (which creates its session with the file's events), never replaced.
      // A session of that id closed in this layer finishes its closing flush first: it may not
      // have written its file yet, and both would then write one file, each losing the other's.
      yield* ScopedList.inOpenScope(store.admission.register(SessionStore.refuseStored({
        name: "JsonlSessions",
        resuming: (id) => resuming.has(id),
        holds: (id) => Effect.andThen(finishEarlier(id), fs.exists(fileOf(id))),
        refusal: existingFile
      })))

      yield* ScopedList.inOpenScope(store.admission.register({
        name: "JsonlSessions file name",
        around: (admission, next) => {
          // a file there already has its name: what resumes it is not refused
          const problem = resuming.has(admission.id) ? undefined : fileNameProblem(admission.id)
          return problem === undefined ? next(admission) : Effect.fail(new InvalidSessionError({ message: `a session was not created: ${problem}` }))
        }
      }))

      yield* store.sessions.pipe(
        Stream.runForEach((session) => Effect.andThen(stateFor(session), Effect.forkIn(watch(session), fibers))),
        Effect.forkIn(fibers)
      )

      // Sessions created before now must not be taken for the one resuming, and a closed
      // session of this id must finish writing the file and give it back before it is read —
      // also one that never flushed, whose closing flush (which creates the file) its watcher
      // may not have run yet: skipped, its events would be lost and the file missing or locked.
      // One that lost the file has nothing it may write: it only lets go. Its permit is taken
      // even when it looks released, to wait for a release under way in its watcher.
      const finishEarlier = (id: string) => finishClosed((session) => session.id === id)

      // Does for the closed sessions `which` picks what their watchers do (or have done): the
      // closing flush and the release, so that whoever reads their files next reads what they
      // logged — a scope closing only schedules that flush.
      const finishClosed = (which: (session: Session.Session) => boolean) =>
        Effect.gen(function*() {
          for (const session of yield* store.all) {
            // every session gets its state now, before a resume marks its id as resuming
            const state = yield* stateFor(session)
            // an open one (created since the check) keeps its file: the lock then refuses a resume
            if (!which(session) || !(yield* session.closed)) continue
            yield* state.serial.withPermit(Effect.uninterruptible(Effect.gen(function*() {
              if (state.released) return
              if (state.lost === undefined) yield* write(state)
              yield* releaseNow(state)
            })))
          }
        })

      // The session for a loaded file, holding its lock; what a crash left is repaired and logged
      // before anyone else can append.
      const adopt = (id: string, loaded: Loaded, lock: LockFile.Held) =>
        Effect.gen(function*() {
          resuming.set(id, { events: loaded.events, bytes: loaded.bytes, torn: loaded.torn !== undefined, lock })
          const session = yield* store.create({ id, seed: loaded.events, createdAt: loaded.header.createdAt }).pipe(
            // a loaded log is one (decoded, counted from 0) with an integer createdAt: in range
            Effect.catchTag("InvalidSessionError", Effect.die),
            Effect.onError(() => Effect.andThen(Effect.sync(() => resuming.delete(id)), giveLockBack(id, lock)))
          )
          yield* stateFor(session)
          const repairs: Array<SessionEvent.Repair> = []
          if (loaded.torn !== undefined) {
            const repair = tornTailRepair(loaded, loaded.torn)
            yield* session.append("session/repair", repair)
            repairs.push(repair)
          }
          const interrupted = yield* Closing.closeInterrupted(session)
          if (interrupted !== undefined) repairs.push(interrupted)
          const resumed: Resumed = { session, repairs }
          return resumed
        })

      const resume = (id: string) =>
        Effect.gen(function*() {
          if (Option.isSome(yield* store.get(id))) {
            return yield* new SessionExistsError({
              message: `session ${JSON.stringify(id)} is open; close it before resuming it`,
              sessionId: id
            })
          }
          yield* finishEarlier(id)
          const file = fileOf(id)
          // from the lock on, nothing may be interrupted but the load: the lock is either given
          // back or handed to the session's state, never dropped
          return yield* Effect.uninterruptibleMask((restore) =>
            Effect.gen(function*() {
              const lock = yield* takeLock(id, file).pipe(
                Effect.mapError((error) =>
                  error._tag === "Refused"
                    ? lockedError(id, error, "cannot resume")
                    : ioError(id, `cannot lock ${file}`)(error)
                )
              )
              const loaded = yield* restore(load(directory, id).pipe(Effect.provideContext(platform))).pipe(
                Effect.onError(() => giveLockBack(id, lock))
              )
              return yield* adopt(id, loaded, lock)
            })
          )
        }).pipe(Effect.withSpan("JsonlSessions.resume", { attributes: { "dsh.session": id } }))

      return JsonlSessions.of({
        directory,
        file: fileOf,
        resume,
        load: (id) => Effect.andThen(finishEarlier(id), load(directory, id).pipe(Effect.provideContext(platform))),
        list: Effect.andThen(finishClosed(() => true), list(directory).pipe(Effect.provideContext(platform)))
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
  Layer.unwrap(Effect.map(nodePlatform, (platform) => layerNoDeps(options).pipe(Layer.provide(platform))))

// Loaded when a layer is built, not with this module: a composition that keeps its sessions in
// memory imports `@dsh/session` too, and should not pay for Node's file system layers.
const nodePlatform = Effect.promise(() =>
  Promise.all([import("@effect/platform-node/NodeFileSystem"), import("@effect/platform-node/NodePath")])
).pipe(Effect.map(([NodeFileSystem, NodePath]) => Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)))
