import { Content, History, Ids } from "@dsh/llm"
import {
  type CreateOptions,
  Derivation,
  FlushCheckpoint,
  JsonlSessions,
  type Session,
  SessionEvent,
  SessionStore
} from "@dsh/session"
import * as NodePath from "@effect/platform-node/NodePath"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { execFileSync } from "node:child_process"
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FaultyFs from "./fixtures/faulty-fs.ts"
import { contractViolations, providerViolations } from "./helpers.ts"

// What only the JSONL store has: its file format, torn lines, file-system faults, and the
// details of its files. The contract it shares with the PostgreSQL store (write-behind and
// durability, closing, resume, fork, one writer, typed failures, list) is one suite run
// against both: packages/sql-sessions/test/contract/suite.ts.

// ---------------------------------------------------------------------------------------------
// helpers

const tempDirectory = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "dsh-jsonl-"))),
  (directory) => Effect.promise(() => rm(directory, { recursive: true, force: true }))
)

/** Runs `f` with a fresh temporary directory that is removed afterwards. */
const withDirectory = <A, E, R>(f: (directory: string) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.flatMap(tempDirectory, f))

const Live = (directory: string) =>
  JsonlSessions.layer({ directory }).pipe(Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)))

type Services = SessionStore | FlushCheckpoint | JsonlSessions.JsonlSessions

/** Runs a program with the layer over `directory`; the layer's scope closes when it ends. */
const persisted = <A, E>(directory: string, program: Effect.Effect<A, E, Services | Scope.Scope>) =>
  program.pipe(Effect.scoped, Effect.provide(Live(directory)))

const text = (session: Session.Session, body: string) =>
  session.append("user/message", { content: [Content.text(body)], source: "user" })

const appendMany = (session: Session.Session, count: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < count; i++) yield* text(session, `m${yield* session.seq}`)
  })

const flush = (session: Session.Session) =>
  Effect.gen(function*() {
    yield* (yield* FlushCheckpoint).flush(session)
  })

/** Creates a session and runs `f` with it. */
const withSession = <A, E, R>(options: CreateOptions, f: (session: Session.Session) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    return yield* f(yield* (yield* SessionStore).create(options))
  })

const read = (file: string) => (existsSync(file) ? readFileSync(file, "utf8") : undefined)

const lines = (file: string) => (read(file) ?? "").split("\n").filter((line) => line.length > 0)

const userEvent = (seq: number, body: string) => ({
  type: "user/message",
  seq,
  time: 0,
  data: { content: [{ type: "text", text: body }], source: "user" }
})

const headerOf = (id: string) => JsonlSessions.headerLine(id, 0)

const line = (value: unknown) => JSON.stringify(value) + "\n"

/** `text` with its `X` replaced by two bytes that are not UTF-8. */
const notUtf8 = (text: string) => {
  const [before, after] = text.split("X")
  return Buffer.concat([Buffer.from(before!), Buffer.from([0xff, 0xfe]), Buffer.from(after!)])
}

const loadFile = (file: string) => JsonlSessions.loadFile(file).pipe(Effect.provide(FaultyFs.layer((f) => f)))

// ---------------------------------------------------------------------------------------------

describe("JsonlSessions: format and write-behind", () => {
  it.effect("writes a header line, then one line per event, in a file named after the URI-encoded id", () =>
    withDirectory((directory) =>
      persisted(directory, Effect.gen(function*() {
        const Note = SessionEvent.define("test:note", Schema.Struct({ text: Schema.String }))
        const session = yield* (yield* SessionStore).create({ id: "a b/c" })
        yield* session.append("turn/start", { turn: 1, trigger: "send" })
        yield* text(session, "héllo ✓")
        yield* session.append(Note, { text: "hi" })
        yield* flush(session)
        const file = join(directory, "a%20b%2Fc.jsonl")
        expect((yield* JsonlSessions.JsonlSessions).file("a b/c")).toBe(file)
        expect(read(file)).toBe(
          `{"format":"dsh-session","version":1,"sessionId":"a b/c","createdAt":0}\n` +
            `{"type":"turn/start","seq":0,"time":0,"data":{"turn":1,"trigger":"send"}}\n` +
            `{"type":"user/message","seq":1,"time":0,"data":{"content":[{"type":"text","text":"héllo ✓"}],"source":"user"}}\n` +
            `{"type":"test:note","seq":2,"time":0,"data":{"text":"hi"}}\n`
        )
        const loaded = yield* (yield* JsonlSessions.JsonlSessions).load("a b/c")
        expect(loaded.header).toStrictEqual({ format: "dsh-session", version: 1, sessionId: "a b/c", createdAt: 0 })
        expect(loaded.events).toStrictEqual(yield* session.events)
        expect(Note.decode(loaded.events[2]!)).toStrictEqual({ text: "hi" })
        expect(loaded.torn).toBeUndefined()
        // decoded once: a store seeded with it does not check each event again, and it cannot change
        expect(SessionEvent.isDecodedLog(loaded.events)).toBe(true)
        expect(Object.isFrozen(loaded.events)).toBe(true)
        expect(SessionEvent.isDecodedLog(yield* session.events)).toBe(false)
      }))
    ))

  it.effect("ids with lone surrogates or NUL get names of their own and come back from list and load as they were", () =>
    withDirectory((directory) =>
      persisted(directory, Effect.gen(function*() {
        const ids = ["a\ud800", "a\udfff", "\udc00\ud800", "nul\u0000", "%uD800"]
        const store = yield* SessionStore
        for (const id of ids) {
          const session = yield* store.create({ id })
          yield* text(session, id)
          yield* flush(session)
        }
        expect(new Set(ids.map(JsonlSessions.fileName)).size).toBe(ids.length)
        expect(JsonlSessions.fileName("a\ud800")).toBe("a%uD800.jsonl")
        const jsonl = yield* JsonlSessions.JsonlSessions
        expect((yield* jsonl.list).map((info) => info.id).sort()).toStrictEqual([...ids].sort())
        for (const id of ids) expect((yield* jsonl.load(id)).header.sessionId).toBe(id)
      }))
    ))

  it.effect("appends never touch the disk; a flush returns only once the events are in the file", () =>
    withDirectory((directory) =>
      persisted(directory, Effect.gen(function*() {
        const session = yield* (yield* SessionStore).create({ id: "s" })
        const file = join(directory, "s.jsonl")
        yield* appendMany(session, 5)
        expect(existsSync(file)).toBe(false)
        yield* flush(session)
        expect(lines(file)).toHaveLength(6)
        const before = read(file)
        yield* appendMany(session, 7)
        expect(read(file)).toBe(before)
        yield* flush(session)
        // read synchronously, right after the flush returned: no later write can have helped
        expect(lines(file)).toHaveLength(13)
        expect(lines(file).slice(1).map((l) => JSON.parse(l).seq)).toStrictEqual([...Array(12).keys()])
        const after = read(file)
        yield* flush(session)
        expect(read(file)).toBe(after)
      }))
    ))

  it.effect("a session flushed before its first event gets a header-only file, which loads and resumes", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* persisted(directory, withSession({ id: "empty" }, flush))
        expect(lines(join(directory, "empty.jsonl"))).toStrictEqual([headerOf("empty").trim()])
        yield* persisted(directory, Effect.gen(function*() {
          const { repairs, session } = yield* (yield* JsonlSessions.JsonlSessions).resume("empty")
          expect(repairs).toStrictEqual([])
          expect(yield* session.seq).toBe(0)
          yield* appendMany(session, 2)
          yield* flush(session)
        }))
        expect(lines(join(directory, "empty.jsonl"))).toHaveLength(3)
      })
    ))
})

describe("JsonlSessions: resume and fork", () => {
  it.effect("resume continues seq and appends to the same file; the header is not rewritten", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* persisted(directory, Effect.gen(function*() {
          const session = yield* (yield* SessionStore).create({ id: "r" })
          yield* session.append("turn/start", { turn: 1, trigger: "send" })
          yield* appendMany(session, 1)
          yield* session.append("turn/end", { turn: 1, reason: { kind: "completed" } })
        }))
        const file = join(directory, "r.jsonl")
        const header = lines(file)[0]
        yield* TestClock.adjust("1 hour")
        yield* persisted(directory, Effect.gen(function*() {
          const original = yield* (yield* JsonlSessions.JsonlSessions).load("r")
          const { repairs, session } = yield* (yield* JsonlSessions.JsonlSessions).resume("r")
          expect(repairs).toStrictEqual([])
          expect(session.seeded).toBe(3)
          expect(yield* session.seq).toBe(3)
          expect(yield* session.events).toStrictEqual(original.events)
          const event = yield* text(session, "after resume")
          expect(event.seq).toBe(3)
          yield* flush(session)
        }))
        expect(lines(file)[0]).toBe(header)
        expect(lines(file)).toHaveLength(5)
        const loaded = yield* loadFile(file)
        expect(loaded.events.map((e) => e.seq)).toStrictEqual([0, 1, 2, 3])
        expect(loaded.events[3]!.time).toBe(3_600_000)
      })
    ))

  it.effect("resume reports the torn last line it cuts and logs the repair before anything else", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* persisted(directory, withSession({ id: "t" }, (s) => appendMany(s, 3)))
        const file = join(directory, "t.jsonl")
        const full = readFileSync(file)
        truncateSync(file, full.length - 10)
        const tornBytes = full.length - 10 - (full.lastIndexOf(0x0a, full.length - 2) + 1)
        const { events, repairs } = yield* persisted(directory, Effect.gen(function*() {
          const resumed = yield* (yield* JsonlSessions.JsonlSessions).resume("t")
          const before = yield* resumed.session.events
          yield* appendMany(resumed.session, 2)
          yield* flush(resumed.session)
          return { repairs: resumed.repairs, events: before }
        }))
        expect(repairs).toHaveLength(1)
        const repair = repairs[0]!
        expect(repair).toMatchObject({ kind: "torn-tail", line: 4, bytes: tornBytes })
        expect(repair.message).toContain(file)
        expect(repair.message).toContain("line 4")
        expect(repair.message).toContain(`${tornBytes} bytes`)
        // the repair is the first event after the loaded ones
        expect(events.map((e) => e.type)).toStrictEqual(["user/message", "user/message", "session/repair"])
        expect(events[2]!.data).toStrictEqual(repair)
        const loaded = yield* loadFile(file)
        expect(loaded.torn).toBeUndefined()
        expect(loaded.events.map((e) => e.seq)).toStrictEqual([0, 1, 2, 3, 4])
        expect(loaded.events[2]!.data).toStrictEqual(repair)
      })
    ))

  it.effect("resume leaves the torn line in the file until the first flush writes the repair with it", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* persisted(directory, withSession({ id: "later" }, (s) => appendMany(s, 2)))
        const file = join(directory, "later.jsonl")
        appendFileSync(file, "{\"type\":\"user/mes")
        const torn = read(file)
        yield* persisted(directory, Effect.gen(function*() {
          yield* (yield* JsonlSessions.JsonlSessions).resume("later")
          // nothing is written at resume: a crash now finds the same torn file and repairs it again
          expect(read(file)).toBe(torn)
        }))
        const loaded = yield* loadFile(file)
        expect(loaded.torn).toBeUndefined()
        expect(loaded.events.map((e) => e.type)).toStrictEqual(["user/message", "user/message", "session/repair"])
      })
    ))

  it.effect("a resumed session keeps the creation time of its file's header, not the time of the resume", () =>
    withDirectory((directory) =>
      persisted(directory, Effect.gen(function*() {
        writeFileSync(join(directory, "old.jsonl"), JsonlSessions.headerLine("old", 1_700_000_000_000) + line(userEvent(0, "hi")))
        const { session } = yield* (yield* JsonlSessions.JsonlSessions).resume("old")
        expect(session.createdAt).toBe(1_700_000_000_000)
      }))
    ))

  it.effect("a session resumed right after its scope closed, before its closing flush ran, continues its file with every event", () =>
    withDirectory((directory) =>
      persisted(directory, Effect.gen(function*() {
        // never flushed: its events reach the disk only at its closing flush, which its close
        // merely schedules
        yield* Effect.scoped(withSession({ id: "quick" }, (s) => appendMany(s, 2)))
        const { repairs, session } = yield* (yield* JsonlSessions.JsonlSessions).resume("quick")
        expect(repairs).toStrictEqual([])
        expect((yield* session.events).map((e) => e.seq)).toStrictEqual([0, 1])
        yield* appendMany(session, 1)
        yield* flush(session)
        expect((yield* loadFile(join(directory, "quick.jsonl"))).events.map((e) => e.seq)).toStrictEqual([0, 1, 2])
      }))
    ))

  it.effect("an id too long for the session's file names is INVALID_SESSION at creation, not a flush that fails every turn", () =>
    withDirectory((directory) =>
      persisted(directory, Effect.gen(function*() {
        const store = yield* SessionStore
        // the file name is the id URI-encoded plus .jsonl; the lock's temporary names add 55 bytes
        const longest = "a".repeat(JsonlSessions.maxFileNameBytes - ".jsonl".length)
        yield* Effect.scoped(withSession({ id: longest }, (s) => Effect.andThen(appendMany(s, 1), flush(s))))
        expect((yield* loadFile(join(directory, JsonlSessions.fileName(longest)))).events).toHaveLength(1)
        const refused = yield* Effect.flip(Effect.scoped(store.create({ id: `${longest}b` })))
        expect(refused.code).toBe("INVALID_SESSION")
        expect(refused.message).toContain(`its id is too long for a session file: its file name`)
        expect(refused.message).toContain(`would be ${JsonlSessions.maxFileNameBytes + 1} bytes`)
        // a character other than ASCII takes up to 12: 23 Chinese characters are 207 bytes
        expect((yield* Effect.flip(Effect.scoped(store.create({ id: "会".repeat(23) })))).code).toBe("INVALID_SESSION")
      }))
    ))

  it.effect("a new session on the id of one closed a moment ago, before its closing flush ran, is SESSION_EXISTS; the file keeps the first's events", () =>
    withDirectory((directory) =>
      persisted(directory, Effect.gen(function*() {
        yield* Effect.scoped(withSession({ id: "again" }, (s) => appendMany(s, 2)))
        const refused = yield* Effect.flip(Effect.scoped((yield* SessionStore).create({ id: "again" })))
        expect(refused.code).toBe("SESSION_EXISTS")
        expect((yield* loadFile(join(directory, "again.jsonl"))).events.map((e) => e.seq)).toStrictEqual([0, 1])
      }))
    ))

  it.effect("the layer's load and list see what a session logged once its scope closed, though its closing flush runs behind", () =>
    withDirectory((directory) =>
      persisted(directory, Effect.gen(function*() {
        const jsonl = yield* JsonlSessions.JsonlSessions
        yield* Effect.scoped(withSession({ id: "done" }, (s) => appendMany(s, 2)))
        expect((yield* jsonl.load("done")).events.map((e) => e.seq)).toStrictEqual([0, 1])
        yield* Effect.scoped(withSession({ id: "listed" }, (s) => appendMany(s, 3)))
        expect((yield* jsonl.list).map((e) => [e.id, e.events])).toStrictEqual([["done", 2], ["listed", 3]])
      }))
    ))

  it.effect("resuming a session with no file is PERSISTENCE", () =>
    withDirectory((directory) =>
      persisted(directory, Effect.gen(function*() {
        const error = yield* Effect.flip((yield* JsonlSessions.JsonlSessions).resume("nobody"))
        expect(error.code).toBe("PERSISTENCE")
        expect(error.message).toContain(join(directory, "nobody.jsonl"))
        // the lock taken to read the file is given back
        expect(readdirSync(directory)).toStrictEqual([])
      }))
    ))

  it.effect("a new session under an id whose file exists is refused at creation: SESSION_EXISTS, the file untouched", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* persisted(directory, withSession({ id: "taken" }, (s) => appendMany(s, 2)))
        const file = join(directory, "taken.jsonl")
        const before = read(file)
        yield* persisted(directory, Effect.gen(function*() {
          const store = yield* SessionStore
          const refused = yield* Effect.flip(store.create({ id: "taken" }))
          expect(refused._tag).toBe("SessionExistsError")
          expect(refused.code).toBe("SESSION_EXISTS")
          expect(refused.message).toBe(
            `session "taken" exists already in ${file}; continue it with JsonlSessions.resume, or create the new session under another id`
          )
          // a fork of it under the same id is refused the same way; under another id it is written
          const resumed = yield* (yield* JsonlSessions.JsonlSessions).resume("taken")
          const events = yield* resumed.session.events
          expect((yield* Effect.flip(store.create({ id: "taken", seed: events }))).code).toBe("SESSION_EXISTS")
          const fork = yield* store.create({ id: "fork", seed: events })
          yield* flush(fork)
        }))
        expect(read(file)).toBe(before)
        expect(readdirSync(directory).sort()).toStrictEqual(["fork.jsonl", "taken.jsonl"])
      })
    ))

  it.effect("a file that appears after the session was created (another process) fails its flushes with PERSISTENCE", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        const file = join(directory, "late.jsonl")
        const theirs = JsonlSessions.headerLine("late", 1_700_000_000_000)
        yield* persisted(directory, Effect.gen(function*() {
          const session = yield* (yield* SessionStore).create({ id: "late" })
          writeFileSync(file, theirs)
          yield* appendMany(session, 3)
          const first = yield* Effect.flip(flush(session))
          expect(first.code).toBe("PERSISTENCE")
          expect(first.message).toContain(file)
          expect(first.message).toContain("exists already")
          expect(first.message).toContain("resume")
          expect((yield* Effect.flip(flush(session))).code).toBe("PERSISTENCE")
        }))
        expect(read(file)).toBe(theirs)
        expect(readdirSync(directory)).toStrictEqual(["late.jsonl"])
      })
    ))
})

describe("JsonlSessions: resuming an interrupted turn", () => {
  const c1 = Ids.callId("c1")
  const c2 = Ids.callId("c2")

  // what a process that died while running tool c2 leaves: c1 answered, c2 announced only
  const crashedDuringATool = (session: Session.Session) =>
    Effect.gen(function*() {
      yield* session.append("turn/start", { turn: 1, trigger: "send" })
      yield* text(session, "list and count the files")
      yield* session.append("step/start", { turn: 1, step: 1 })
      yield* session.append("model/request", { turn: 1, step: 1, model: "m" })
      yield* session.append("assistant/message", {
        turn: 1,
        step: 1,
        content: [Content.toolCall(c1, "ls", "{}"), Content.toolCall(c2, "wc", "{}")]
      })
      yield* session.append("tool/call", { turn: 1, step: 1, callId: c1, name: "ls", arguments: "{}" })
      yield* session.append("tool/result", { turn: 1, step: 1, callId: c1, content: [Content.text("a b")], isError: false })
      yield* session.append("tool/call", { turn: 1, step: 1, callId: c2, name: "wc", arguments: "{}" })
    })

  const closedAsInterrupted = (events: ReadonlyArray<SessionEvent.SessionEvent>, from: number) => {
    expect(events.slice(from).map((e) => e.type)).toStrictEqual(["session/repair", "tool/result", "step/end", "turn/end"])
    const result = events[from + 1]!
    expect(result.type === "tool/result" && result.data).toMatchObject({
      callId: c2,
      isError: true,
      error: { tag: "ToolOutcomeUnknownError", code: "TOOL_OUTCOME_UNKNOWN" }
    })
    const end = events[from + 3]!
    expect(end.type === "turn/end" && end.data.reason.kind).toBe("interrupted")
    expect(contractViolations(events)).toStrictEqual([])
    const history = Derivation.derive(events)
    expect(providerViolations(history)).toStrictEqual([])
    // the call is answered by the logged result, not by the derivation's synthetic one
    const last = History.toArray(history).at(-1)!
    expect(last.content[0]).toMatchObject({ type: "tool-result", toolCallId: c2, error: { code: "TOOL_OUTCOME_UNKNOWN" } })
  }

  it.effect("a torn tail and an interrupted turn are both repaired, the torn tail first", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* persisted(directory, withSession({ id: "both" }, crashedDuringATool))
        appendFileSync(join(directory, "both.jsonl"), "{\"type\":\"tool/res")
        const resumed = yield* persisted(directory, Effect.gen(function*() {
          const { repairs, session } = yield* (yield* JsonlSessions.JsonlSessions).resume("both")
          return { repairs, events: yield* session.events }
        }))
        expect(resumed.repairs.map((r) => r.kind)).toStrictEqual(["torn-tail", "interrupted-turn"])
        expect(resumed.events[8]!.data).toStrictEqual(resumed.repairs[0])
        closedAsInterrupted(resumed.events, 9)
        expect((yield* loadFile(join(directory, "both.jsonl"))).events).toHaveLength(resumed.events.length)
      })
    ))
})

describe("JsonlSessions: load", () => {
  it.effect("a cut anywhere in the last line loads as a torn line; a cut after a newline loads complete", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* persisted(directory, Effect.gen(function*() {
          const session = yield* (yield* SessionStore).create({ id: "cut" })
          yield* appendMany(session, 2)
          yield* text(session, "multi-byte: é ✓ 🎉 and \"quotes\" and \\ and a\nnewline")
        }))
        const file = join(directory, "cut.jsonl")
        const copy = join(directory, "copy.jsonl")
        const bytes = readFileSync(file)
        const lastStart = bytes.lastIndexOf(0x0a, bytes.length - 2) + 1
        expect(bytes.length - lastStart).toBeGreaterThan(100)
        for (let cut = lastStart; cut <= bytes.length; cut++) {
          copyFileSync(file, copy)
          truncateSync(copy, cut)
          const loaded = yield* loadFile(copy)
          if (cut === bytes.length) {
            expect(loaded.events).toHaveLength(3)
            expect(loaded.torn).toBeUndefined()
            expect(loaded.bytes).toBe(bytes.length)
          } else if (cut === lastStart) {
            expect(loaded.events).toHaveLength(2)
            expect(loaded.torn).toBeUndefined()
            expect(loaded.bytes).toBe(lastStart)
          } else {
            expect(loaded.events, `cut at ${cut}`).toHaveLength(2)
            expect(loaded.torn).toStrictEqual({
              line: 4,
              text: new TextDecoder().decode(bytes.subarray(lastStart, cut)),
              bytes: cut - lastStart
            })
            expect(loaded.bytes).toBe(lastStart)
          }
        }
      })
    ))

  // `listed`: the problem is on the last complete line or in the header, which `list` reads too
  const corruptCases: ReadonlyArray<{
    readonly name: string
    readonly content: string | Uint8Array
    readonly line: number
    readonly says: string
    readonly listed?: true
  }> = [
    {
      name: "a malformed line in the middle",
      content: headerOf("m") + line(userEvent(0, "a")) + "{not json\n" + line(userEvent(1, "b")),
      line: 3,
      says: "not JSON"
    },
    {
      name: "a line that is JSON but not an event",
      content: headerOf("m") + line(userEvent(0, "a")) + line({ type: "user/message", seq: 1 }) + line(userEvent(2, "c")),
      line: 3,
      says: "not a session event"
    },
    {
      name: "an empty line in the middle",
      content: headerOf("m") + line(userEvent(0, "a")) + "\n" + line(userEvent(1, "b")),
      line: 3,
      says: "not JSON"
    },
    {
      name: "a complete last line that is not JSON",
      content: headerOf("m") + line(userEvent(0, "a")) + "{\"type\":\"user/mess\n",
      line: 3,
      says: "not JSON",
      listed: true
    },
    {
      name: "a complete last line that is JSON but not an event",
      content: headerOf("m") + line(userEvent(0, "a")) + line({ type: "user/message", seq: 1 }),
      line: 3,
      says: "not a session event",
      listed: true
    },
    {
      name: "an empty last line",
      content: headerOf("m") + line(userEvent(0, "a")) + "\n",
      line: 3,
      says: "not JSON",
      listed: true
    },
    {
      name: "an undecodable line followed by a torn one",
      content: headerOf("m") + line(userEvent(0, "a")) + "garbage\n{\"type\":",
      line: 3,
      says: "not JSON",
      listed: true
    },
    {
      name: "a complete last line that is not valid UTF-8",
      content: Buffer.concat([Buffer.from(headerOf("m") + line(userEvent(0, "a"))), notUtf8(line(userEvent(1, "bXc")))]),
      line: 3,
      says: "is not valid UTF-8",
      listed: true
    },
    {
      name: "a header that is not valid UTF-8",
      // in a key the header Schema ignores: decoded leniently, the header would be valid
      content: Buffer.concat([
        notUtf8(line({ format: "dsh-session", version: 1, sessionId: "m", createdAt: 0, note: "X" })),
        Buffer.from(line(userEvent(0, "a")))
      ]),
      line: 1,
      says: "is not valid UTF-8",
      listed: true
    },
    {
      name: "a seq gap",
      content: headerOf("m") + line(userEvent(0, "a")) + line(userEvent(2, "c")),
      line: 3,
      says: "expected seq 1, found seq 2",
      listed: true
    },
    {
      // list reads the last line, sees the count is off, and reads the whole file to name the gap
      name: "a line missing in the middle",
      content: headerOf("m") + line(userEvent(0, "a")) + line(userEvent(2, "c")) + line(userEvent(3, "d")) + line(userEvent(4, "e")),
      line: 3,
      says: "expected seq 1, found seq 2",
      listed: true
    },
    {
      name: "a repeated seq on the last line",
      content: headerOf("m") + line(userEvent(0, "a")) + line(userEvent(1, "b")) + line(userEvent(1, "b")),
      line: 4,
      says: "expected seq 2, found seq 1",
      listed: true
    },
    {
      name: "a first event that is not seq 0",
      content: headerOf("m") + line(userEvent(1, "a")),
      line: 2,
      says: "expected seq 0",
      listed: true
    },
    { name: "an empty file", content: "", line: 1, says: "no header", listed: true },
    { name: "an unterminated header", content: headerOf("m").trim(), line: 1, says: "not terminated", listed: true },
    { name: "a header that is not JSON", content: "hello\n", line: 1, says: "bad header", listed: true },
    {
      name: "a header of another format",
      content: line({ format: "other", version: 1, sessionId: "m", createdAt: 0 }),
      line: 1,
      says: "bad header",
      listed: true
    },
    {
      name: "a header of a later version",
      content: line({ format: "dsh-session", version: 2, sessionId: "m", createdAt: 0 }),
      line: 1,
      says: "unsupported format version 2",
      listed: true
    }
  ]

  for (const c of corruptCases) {
    it.effect(`${c.name} is CORRUPT_LOG naming the file and line ${c.line}`, () =>
      withDirectory((directory) =>
        Effect.gen(function*() {
          const file = join(directory, "m.jsonl")
          writeFileSync(file, c.content)
          const error = yield* Effect.flip(loadFile(file))
          expect(error._tag).toBe("CorruptLogError")
          if (error._tag !== "CorruptLogError") return
          expect(error.code).toBe("CORRUPT_LOG")
          expect(error.file).toBe(file)
          expect(error.line).toBe(c.line)
          expect(error.message).toContain(`${file}:${c.line}:`)
          expect(error.message).toContain(c.says)
        })
      ))
  }

  it.effect("a complete line with bytes that are not UTF-8 is CORRUPT_LOG naming its line; a torn tail may end inside a character", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        const file = join(directory, "m.jsonl")
        const [before, after] = line(userEvent(1, "bXc")).split("X")
        writeFileSync(file, Buffer.concat([
          Buffer.from(headerOf("m") + line(userEvent(0, "a"))),
          Buffer.from(before!),
          Buffer.from([0xff, 0xfe]),
          Buffer.from(after!),
          Buffer.from(line(userEvent(2, "c")))
        ]))
        const error = yield* Effect.flip(loadFile(file))
        expect(error).toMatchObject({ _tag: "CorruptLogError", code: "CORRUPT_LOG", line: 3 })
        expect(error.message).toBe(`${file}:3: is not valid UTF-8`)
        // the first two bytes of a three-byte character, cut by a crash: torn, not corrupt
        writeFileSync(file, Buffer.concat([Buffer.from(headerOf("m") + line(userEvent(0, "a"))), Buffer.from([0x7b, 0xe2, 0x82])]))
        const loaded = yield* loadFile(file)
        expect(loaded.events.length).toBe(1)
        expect(loaded.torn?.bytes).toBe(3)
      })
    ))

  it.effect("a directory where a session file goes, or a file where the directory goes: PERSISTENCE saying so in words", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        mkdirSync(join(directory, "m.jsonl"))
        const unreadable = yield* Effect.flip(loadFile(join(directory, "m.jsonl")))
        expect(unreadable.code).toBe("PERSISTENCE")
        expect(unreadable.message).toBe(`cannot read ${join(directory, "m.jsonl")}: it is a directory, not a file (EISDIR)`)
        writeFileSync(join(directory, "afile"), "")
        const inTheWay = yield* Effect.flip(persisted(join(directory, "afile"), Effect.void))
        expect(inTheWay.code).toBe("PERSISTENCE")
        expect(inTheWay.message).toContain("something that is not a directory is in the way (EEXIST)")
      })
    ))

  // list decodes only the header and the last lines, so it agrees with load about those
  for (const c of corruptCases.filter((c) => c.listed === true)) {
    it.effect(`list agrees: ${c.name} is CORRUPT_LOG`, () =>
      withDirectory((directory) =>
        Effect.gen(function*() {
          const file = join(directory, "m.jsonl")
          writeFileSync(file, c.content)
          const error = yield* Effect.flip(
            JsonlSessions.list(directory).pipe(Effect.provide(Layer.mergeAll(FaultyFs.layer((f) => f), NodePath.layer)))
          )
          expect(error._tag).toBe("CorruptLogError")
          if (error._tag !== "CorruptLogError") return
          expect(error.file).toBe(file)
          expect(error.line).toBe(c.line)
          expect(error.message).toContain(c.says)
        })
      ))
  }

  it.effect("survey lists the files that read and names each that does not, with its error", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        const c = corruptCases.find((c) => c.listed === true)!
        writeFileSync(join(directory, "bad.jsonl"), c.content)
        writeFileSync(join(directory, "empty.jsonl"), "")
        const layer = Layer.mergeAll(FaultyFs.layer((f) => f), NodePath.layer)
        const { entries, unreadable } = yield* JsonlSessions.survey(directory).pipe(Effect.provide(layer))
        expect(entries).toStrictEqual([])
        expect(unreadable.map((u) => [u.id, u.error.code])).toStrictEqual([["bad", "CORRUPT_LOG"], ["empty", "CORRUPT_LOG"]])
        // list fails with the first of them, as before
        const error = yield* Effect.flip(JsonlSessions.list(directory).pipe(Effect.provide(layer)))
        expect(error).toStrictEqual(unreadable[0]!.error)
      })
    ))

  it.effect("a named pipe named like a session is reported by survey, not opened (its open would block the listing)", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        const fifo = join(directory, "pipe.jsonl")
        execFileSync("mkfifo", [fifo])
        const layer = Layer.mergeAll(FaultyFs.layer((f) => f), NodePath.layer)
        const { entries, unreadable } = yield* JsonlSessions.survey(directory).pipe(Effect.provide(layer))
        expect(entries).toStrictEqual([])
        expect(unreadable.map((u) => [u.id, u.error.code, u.error.message])).toStrictEqual([
          ["pipe", "PERSISTENCE", `cannot read ${fifo}: it is a named pipe (FIFO), not a regular file`]
        ])
      })
    ))

  it.effect("a FIFO named like a session is refused by load and resume too, not read (a read would block the process)", () =>
    withDirectory((directory) =>
      persisted(directory, Effect.gen(function*() {
        const fifo = join(directory, "pipe.jsonl")
        execFileSync("mkfifo", [fifo])
        const jsonl = yield* JsonlSessions.JsonlSessions
        for (const refused of [yield* Effect.flip(jsonl.load("pipe")), yield* Effect.flip(jsonl.resume("pipe"))]) {
          expect(refused.code).toBe("PERSISTENCE")
          expect(refused.message).toBe(`cannot read ${fifo}: it is a named pipe (FIFO), not a regular file`)
        }
      }))
    ))

  it.effect("a file whose name decodes to no id (100%.jsonl) is reported by survey too, not skipped without a word", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        writeFileSync(join(directory, "100%.jsonl"), headerOf("100%"))
        writeFileSync(join(directory, "ok.jsonl"), headerOf("ok"))
        const layer = Layer.mergeAll(FaultyFs.layer((f) => f), NodePath.layer)
        const { entries, unreadable } = yield* JsonlSessions.survey(directory).pipe(Effect.provide(layer))
        expect(entries.map((e) => e.id)).toStrictEqual(["ok"])
        expect(unreadable.map((u) => [u.id, u.file, u.error.code])).toStrictEqual([["100%", join(directory, "100%.jsonl"), "PERSISTENCE"]])
        expect(unreadable[0]!.error.message).toContain("its name is not an id URI-encoded")
      })
    ))

  it.effect("a file not named as fileName names its session is reported by survey, not listed as one load cannot find", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        // named by hand: `load("a b")` and `resume("a b")` read a%20b.jsonl, never this file
        writeFileSync(join(directory, "a b.jsonl"), headerOf("a b") + line(userEvent(0, "hi")))
        writeFileSync(join(directory, "ok.jsonl"), headerOf("ok"))
        const layer = Layer.mergeAll(FaultyFs.layer((f) => f), NodePath.layer)
        const { entries, unreadable } = yield* JsonlSessions.survey(directory).pipe(Effect.provide(layer))
        expect(entries.map((e) => e.id)).toStrictEqual(["ok"])
        expect(unreadable.map((u) => [u.id, u.file, u.error.code])).toStrictEqual([
          ["a b", join(directory, "a b.jsonl"), "PERSISTENCE"]
        ])
        expect(unreadable[0]!.error.message).toContain(join(directory, JsonlSessions.fileName("a b")))
        expect(read(join(directory, "a b.jsonl"))).toBe(headerOf("a b") + line(userEvent(0, "hi")))
      })
    ))

  it.effect("a file whose header names another session is CORRUPT_LOG", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        writeFileSync(join(directory, "one.jsonl"), headerOf("two"))
        const error = yield* Effect.flip(JsonlSessions.load(directory, "one").pipe(
          Effect.provide(Layer.mergeAll(FaultyFs.layer((f) => f), NodePath.layer))
        ))
        expect(error.code).toBe("CORRUPT_LOG")
        expect(error.message).toContain("\"two\"")
      })
    ))
})

describe("JsonlSessions: failures", () => {
  it.effect("an empty directory name is PERSISTENCE when the layer is built, not the working directory", () =>
    Effect.gen(function*() {
      for (const directory of ["", "  "]) {
        const error = yield* Effect.flip(persisted(directory, Effect.void))
        expect(error.code).toBe("PERSISTENCE")
        expect(error.message).toBe(`JsonlSessions: the session directory must be a path, got ${JSON.stringify(directory)}`)
      }
    }))

  it.effect("options that are no { directory } (a misspelt key, no object) are PERSISTENCE when the layer is built, naming them", () =>
    Effect.gen(function*() {
      const built = (options: unknown) =>
        Effect.flip(Effect.scoped(Layer.build(
          JsonlSessions.layer(options as JsonlSessions.Options).pipe(Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)))
        )))
      const misspelt = yield* built({ directory: "sessions", durable: true })
      expect(misspelt.code).toBe("PERSISTENCE")
      expect(misspelt.message).toBe(`JsonlSessions: the options object has "durable", which is no option (known: directory)`)
      expect((yield* built(null)).message).toBe("JsonlSessions: the options must be { directory }, got null")
    }))

  it.effect("a write that fails (the directory replaced by a file) is PERSISTENCE naming the file; the next flush retries", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        const sessions = join(directory, "sessions")
        const file = join(sessions, "w.jsonl")
        yield* persisted(sessions, Effect.gen(function*() {
          const session = yield* (yield* SessionStore).create({ id: "w" })
          yield* appendMany(session, 3)
          rmSync(sessions, { recursive: true })
          writeFileSync(sessions, "in the way")
          const error = yield* Effect.flip(flush(session))
          expect(error._tag).toBe("PersistenceError")
          expect(error.code).toBe("PERSISTENCE")
          expect(error.sessionId).toBe("w")
          expect(error.message).toContain(file)
          rmSync(sessions)
          mkdirSync(sessions)
          yield* appendMany(session, 1)
          yield* flush(session)
          expect(lines(file)).toHaveLength(5)
        }))
      })
    ))

  it.effect("after a failed write or fsync the next flush cuts the file back and writes each event once", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        const faults = { write: false, sync: false }
        const Faulty = FaultyFs.layer((file, path) =>
          FaultyFs.overrideFile(file, {
            // half the buffer reaches the file, then the write fails
            writeAll: (buffer) =>
              faults.write
                ? Effect.andThen(file.writeAll(buffer.subarray(0, Math.ceil(buffer.length / 2))), Effect.fail(FaultyFs.fault("writeAll", path)))
                : file.writeAll(buffer),
            sync: Effect.suspend(() => (faults.sync ? Effect.fail(FaultyFs.fault("sync", path)) : file.sync))
          })
        )
        const Sessions = JsonlSessions.layerNoDeps({ directory }).pipe(
          Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)),
          Layer.provide(Layer.mergeAll(Faulty, NodePath.layer))
        )
        const file = join(directory, "f.jsonl")
        yield* Effect.gen(function*() {
          const session = yield* (yield* SessionStore).create({ id: "f" })
          yield* appendMany(session, 3)
          yield* flush(session)
          const durable = statSync(file).size

          yield* appendMany(session, 3)
          faults.write = true
          const write = yield* Effect.flip(flush(session))
          expect(write.code).toBe("PERSISTENCE")
          expect(write.message).toContain(`cannot write ${file}`)
          expect(statSync(file).size).toBeGreaterThan(durable)
          faults.write = false
          yield* flush(session)
          expect((yield* loadFile(file)).events).toStrictEqual(yield* session.events)

          yield* appendMany(session, 2)
          faults.sync = true
          const sync = yield* Effect.flip(flush(session))
          expect(sync.message).toContain(`cannot fsync ${file}`)
          faults.sync = false
          yield* flush(session)
          const loaded = yield* loadFile(file)
          expect(loaded.torn).toBeUndefined()
          expect(loaded.events).toStrictEqual(yield* session.events)
          expect(loaded.events).toHaveLength(8)
        }).pipe(Effect.scoped, Effect.provide(Sessions))
      })
    ))
})

describe("JsonlSessions: events the Schema cannot encode", () => {
  it.effect("fail the flush with PERSISTENCE naming the event; the events before it are written, nothing dies", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        const file = join(directory, "bad.jsonl")
        yield* persisted(directory, Effect.gen(function*() {
          const session = yield* (yield* SessionStore).create({ id: "bad" })
          yield* appendMany(session, 2)
          // the session takes any data of the right type; turn 0 breaks the Schema's turn >= 1
          yield* session.append("turn/start", { turn: 0, trigger: "send" })
          const first = yield* Effect.flip(flush(session))
          expect(first.code).toBe("PERSISTENCE")
          expect(first.message).toContain("seq 2")
          expect(first.message).toContain("turn/start")
          expect(first.message).not.toContain("died")
          expect(lines(file)).toHaveLength(3)
          const second = yield* Effect.flip(flush(session))
          expect(second.message).toContain("seq 2")
        }))
        // closing the layer reported the failure instead of dying, and released the file
        expect((yield* loadFile(file)).events).toHaveLength(2)
        expect(existsSync(JsonlSessions.lockFile(file))).toBe(false)
      })
    ))
})

describe("JsonlSessions: list", () => {
  it.effect("lists the sessions of a directory with their files, sizes, event counts and last activity", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* TestClock.adjust("1000 millis")
        yield* persisted(directory, Effect.gen(function*() {
          const store = yield* SessionStore
          const b = yield* store.create({ id: "b" })
          const a = yield* store.create({ id: "a/1" })
          yield* appendMany(a, 2)
          yield* TestClock.adjust("500 millis")
          yield* appendMany(b, 4)
          yield* TestClock.adjust("500 millis")
          yield* appendMany(a, 1)
          yield* store.create({ id: "empty" })
          yield* store.create({ id: "torn" }).pipe(Effect.tap((t) => appendMany(t, 2)))
        }))
        truncateSync(join(directory, "torn.jsonl"), statSync(join(directory, "torn.jsonl")).size - 3)
        // not session files: ignored
        writeFileSync(join(directory, "notes.txt"), "hello")
        writeFileSync(join(directory, "b.jsonl.0123.tmp"), "")
        const entries = yield* persisted(directory, Effect.gen(function*() {
          return yield* (yield* JsonlSessions.JsonlSessions).list
        }))
        const mtime = statSync(join(directory, "empty.jsonl")).mtimeMs
        expect(entries).toStrictEqual([
          {
            id: "a/1",
            file: join(directory, "a%2F1.jsonl"),
            bytes: statSync(join(directory, "a%2F1.jsonl")).size,
            events: 3,
            createdAt: 1000,
            lastActivity: 2000,
            torn: false
          },
          {
            id: "b",
            file: join(directory, "b.jsonl"),
            bytes: statSync(join(directory, "b.jsonl")).size,
            events: 4,
            createdAt: 1000,
            lastActivity: 1500,
            torn: false
          },
          {
            id: "empty",
            file: join(directory, "empty.jsonl"),
            bytes: JsonlSessions.headerLine("empty", 2000).length,
            events: 0,
            createdAt: 2000,
            lastActivity: Math.floor(mtime),
            torn: false
          },
          {
            id: "torn",
            file: join(directory, "torn.jsonl"),
            bytes: statSync(join(directory, "torn.jsonl")).size,
            events: 1,
            createdAt: 2000,
            lastActivity: 2000,
            torn: true
          }
        ])
      })
    ))

  it.effect("a file in the directory without a valid header is CORRUPT_LOG", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        writeFileSync(join(directory, "x.jsonl"), "{}\n")
        const error = yield* Effect.flip(
          JsonlSessions.list(directory).pipe(Effect.provide(Layer.mergeAll(FaultyFs.layer((f) => f), NodePath.layer)))
        )
        expect(error.code).toBe("CORRUPT_LOG")
        expect(error.message).toContain(join(directory, "x.jsonl"))
      })
    ))
})
