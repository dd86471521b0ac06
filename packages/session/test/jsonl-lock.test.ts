// One writer per session file: the lock taken when a file is opened for writing (at resume, and
// for a new session at its first flush), released when the session's scope or the layer closes,
// taken over when its process is gone. Checked within one process (two layers over one
// directory, lock files written by hand) and with real processes (fixtures/lock-child.ts),
// waiting on their output lines and exits, never on the clock.
import { Content } from "@dsh/llm"
import { FlushCheckpoint, JsonlSessions, type Session, SessionStore } from "@dsh/session"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { appendFileSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

// ---------------------------------------------------------------------------------------------
// helpers

const withDirectory = <A, E, R>(f: (directory: string) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.flatMap(
    Effect.acquireRelease(
      Effect.promise(() => mkdtemp(join(tmpdir(), "dsh-lock-"))),
      (directory) => Effect.promise(() => rm(directory, { recursive: true, force: true }))
    ),
    f
  ))

const Live = (directory: string) =>
  JsonlSessions.layer({ directory }).pipe(Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)))

type Services = SessionStore | FlushCheckpoint | JsonlSessions.JsonlSessions

const persisted = <A, E>(directory: string, program: Effect.Effect<A, E, Services | Scope.Scope>) =>
  program.pipe(Effect.scoped, Effect.provide(Live(directory)))

/** Builds the layer in a scope of its own, so a test can hold two layers over one directory. */
const openLayer = (directory: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const services = yield* Layer.buildWithScope(Live(directory), scope)
    return {
      run: <A, E>(program: Effect.Effect<A, E, Services | Scope.Scope>) =>
        program.pipe(Scope.provide(scope), Effect.provideContext(services)),
      close: Scope.close(scope, Exit.void)
    }
  })

const appendTexts = (session: Session.Session, count: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < count; i++) {
      yield* session.append("user/message", { content: [Content.text(`m${yield* session.seq}`)], source: "user" })
    }
  })

const flush = (session: Session.Session) =>
  Effect.gen(function*() {
    yield* (yield* FlushCheckpoint).flush(session)
  })

const resume = (id: string) =>
  Effect.gen(function*() {
    return yield* (yield* JsonlSessions.JsonlSessions).resume(id)
  })

const create = (id: string) =>
  Effect.gen(function*() {
    return yield* (yield* SessionStore).create({ id })
  })

/** A session file with `count` events, written and closed by a layer of its own. */
const seedFile = (directory: string, id: string, count: number) =>
  persisted(directory, Effect.gen(function*() {
    const session = yield* (yield* SessionStore).create({ id })
    yield* appendTexts(session, count)
  }))

const lockOf = (directory: string, id: string) => JsonlSessions.lockFile(join(directory, JsonlSessions.fileName(id)))

const readLock = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>

/** The pid of a process that has exited (pids are not reused that fast). */
const deadPid = () => {
  const child = spawnSync(process.execPath, ["-e", ""])
  if (child.pid === undefined) throw new Error("could not spawn a process")
  return child.pid
}

const lockRecord = (fields: { pid: number; hostname?: string; token?: string; startedAt?: number }) =>
  JSON.stringify({
    pid: fields.pid,
    hostname: fields.hostname ?? hostname(),
    token: fields.token ?? crypto.randomUUID(),
    startedAt: fields.startedAt ?? 0,
    acquiredAt: 0
  })

const loadEvents = (directory: string, id: string) =>
  JsonlSessions.load(directory, id).pipe(
    Effect.map((loaded) => loaded.events),
    Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer))
  )

/** Waits, a turn of the event loop at a time (never the clock), until `path` is gone; fails after many. */
const untilGone = (path: string) =>
  Effect.gen(function*() {
    for (let turn = 0; turn < 10_000; turn++) {
      if (!existsSync(path)) return
      yield* Effect.promise(() =>
        new Promise<void>((resolve) => {
          setImmediate(resolve)
        })
      )
    }
    return yield* Effect.die(new Error(`${path} is still there`))
  })

// ---------------------------------------------------------------------------------------------
// in one process

describe("JsonlSessions lock: in one process", () => {
  it.effect("a session holds its file's lock from resume on; the lock names this process; the layer gives it back", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* seedFile(directory, "s", 2)
        const lock = lockOf(directory, "s")
        expect(existsSync(lock)).toBe(false)
        yield* persisted(directory, Effect.gen(function*() {
          yield* Effect.scoped((yield* JsonlSessions.JsonlSessions).resume("s"))
          // the close is seen by the layer's own fiber; the resume below waits for it
          const { session } = yield* (yield* JsonlSessions.JsonlSessions).resume("s")
          const record = readLock(lock)
          expect(record).toMatchObject({ pid: process.pid, hostname: hostname() })
          expect(typeof record.token).toBe("string")
          yield* appendTexts(session, 1)
        }))
        expect(existsSync(lock)).toBe(false)
        expect(readdirSync(directory)).toStrictEqual(["s.jsonl"])
      })
    ))

  it.effect("a new session takes the lock at its first flush and gives it back when the layer closes", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        const lock = lockOf(directory, "n")
        const layer = yield* openLayer(directory)
        const session = yield* layer.run(create("n"))
        yield* appendTexts(session, 2)
        expect(existsSync(lock)).toBe(false)
        yield* layer.run(flush(session))
        expect(readLock(lock)).toMatchObject({ pid: process.pid })
        yield* layer.close
        expect(existsSync(lock)).toBe(false)
        expect(yield* loadEvents(directory, "n")).toHaveLength(2)
      })
    ))

  it.effect("a second layer cannot resume a session the first holds (SESSION_LOCKED), nor create it as a new one (SESSION_EXISTS)", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* seedFile(directory, "s", 2)
        const file = join(directory, "s.jsonl")
        const first = yield* openLayer(directory)
        const second = yield* openLayer(directory)
        const { session } = yield* first.run(resume("s"))
        const before = readFileSync(file, "utf8")

        const locked = yield* Effect.flip(second.run(resume("s")))
        expect(locked._tag).toBe("SessionLockedError")
        if (locked._tag !== "SessionLockedError") return
        expect(locked.code).toBe("SESSION_LOCKED")
        expect(locked.sessionId).toBe("s")
        expect(locked.holder).toContain(`pid ${process.pid}`)
        expect(locked.message).toContain("this process")
        expect(locked.message).toContain(lockOf(directory, "s"))

        const taken = yield* Effect.flip(second.run(create("s")))
        expect(taken.code).toBe("SESSION_EXISTS")
        // a new session whose lock another holds before its file exists cannot write either
        const fresh = yield* first.run(create("fresh"))
        yield* appendTexts(fresh, 1)
        writeFileSync(lockOf(directory, "fresh"), lockRecord({ pid: process.pid, startedAt: performance.timeOrigin }))
        const refused = yield* Effect.flip(first.run(flush(fresh)))
        expect(refused.code).toBe("PERSISTENCE")
        expect(refused.message).toContain(`pid ${process.pid}`)
        expect(refused.cause).toMatchObject({ _tag: "SessionLockedError", code: "SESSION_LOCKED", sessionId: "fresh" })
        rmSync(lockOf(directory, "fresh"))
        expect(readFileSync(file, "utf8")).toBe(before)
        yield* second.close

        yield* appendTexts(session, 1)
        yield* first.run(flush(session))
        yield* first.close
        expect((yield* loadEvents(directory, "s")).map((e) => e.seq)).toStrictEqual([0, 1, 2])
        // the new session wrote its file once its lock was free
        expect(readdirSync(directory).sort()).toStrictEqual(["fresh.jsonl", "s.jsonl"])
      })
    ))

  it.effect("a lock of another host is never taken over: SESSION_LOCKED naming the host, lock and file untouched", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* seedFile(directory, "s", 1)
        const lock = lockOf(directory, "s")
        const record = lockRecord({ pid: deadPid(), hostname: "elsewhere.example" })
        writeFileSync(lock, record)
        const error = yield* Effect.flip(persisted(directory, resume("s")))
        expect(error.code).toBe("SESSION_LOCKED")
        expect(error.message).toContain("elsewhere.example")
        expect(error.message).toContain("another host")
        expect(readFileSync(lock, "utf8")).toBe(record)
      })
    ))

  it.effect("a lock file that cannot be read is held: SESSION_LOCKED telling what to do", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* seedFile(directory, "s", 1)
        const lock = lockOf(directory, "s")
        writeFileSync(lock, "garbage")
        const error = yield* Effect.flip(persisted(directory, resume("s")))
        expect(error.code).toBe("SESSION_LOCKED")
        expect(error.message).toContain(lock)
        expect(error.message).toContain("remove")
        expect(readFileSync(lock, "utf8")).toBe("garbage")
      })
    ))

  it.effect("a stale lock (its process is gone) is taken over, and so is one of an earlier process with this pid", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* seedFile(directory, "s", 1)
        const lock = lockOf(directory, "s")
        for (const stale of [lockRecord({ pid: deadPid() }), lockRecord({ pid: process.pid, startedAt: 1 })]) {
          writeFileSync(lock, stale)
          yield* persisted(directory, Effect.gen(function*() {
            const { session } = yield* (yield* JsonlSessions.JsonlSessions).resume("s")
            expect(readLock(lock)).toMatchObject({ pid: process.pid, startedAt: performance.timeOrigin })
            yield* appendTexts(session, 1)
          }))
          expect(existsSync(lock)).toBe(false)
        }
        expect((yield* loadEvents(directory, "s")).map((e) => e.seq)).toStrictEqual([0, 1, 2])
        expect(readdirSync(directory)).toStrictEqual(["s.jsonl"])
      })
    ))

  it.effect("a takeover is serialized by a guard: a live guard refuses, a dead one is cleared", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* seedFile(directory, "s", 1)
        const lock = lockOf(directory, "s")
        const guard = `${lock}.takeover`
        const stale = lockRecord({ pid: deadPid() })
        writeFileSync(lock, stale)
        // another process (here: this one) is taking the stale lock over right now
        writeFileSync(guard, lockRecord({ pid: process.pid, startedAt: performance.timeOrigin }))
        const busy = yield* Effect.flip(persisted(directory, resume("s")))
        expect(busy.code).toBe("SESSION_LOCKED")
        expect(busy.message).toContain("taking")
        expect(readFileSync(lock, "utf8")).toBe(stale)
        // the process taking it over died on the way: its guard is stale too
        writeFileSync(guard, lockRecord({ pid: deadPid() }))
        yield* persisted(directory, resume("s"))
        expect(readdirSync(directory)).toStrictEqual(["s.jsonl"])
      })
    ))

  it.effect("a session whose lock was taken from it stops writing: every later flush is PERSISTENCE", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* seedFile(directory, "s", 1)
        const file = join(directory, "s.jsonl")
        const lock = lockOf(directory, "s")
        const thief = lockRecord({ pid: process.pid, startedAt: performance.timeOrigin })
        yield* persisted(directory, Effect.gen(function*() {
          const { session } = yield* (yield* JsonlSessions.JsonlSessions).resume("s")
          const before = readFileSync(file, "utf8")
          writeFileSync(lock, thief)
          yield* appendTexts(session, 1)
          const error = yield* Effect.flip(flush(session))
          expect(error.code).toBe("PERSISTENCE")
          expect(error.message).toContain(lock)
          expect(readFileSync(file, "utf8")).toBe(before)
          // even once the lock is free again: the file may have been written by the other writer
          yield* Effect.promise(() => rm(lock))
          expect((yield* Effect.flip(flush(session))).code).toBe("PERSISTENCE")
          expect(readFileSync(file, "utf8")).toBe(before)
          writeFileSync(lock, thief)
        }))
        // the lock is not ours: closing leaves it alone
        expect(readFileSync(lock, "utf8")).toBe(thief)
      })
    ))

  it.effect("a file changed behind the session's back (another writer without the lock) is not written over", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* seedFile(directory, "s", 1)
        const file = join(directory, "s.jsonl")
        yield* persisted(directory, Effect.gen(function*() {
          const { session } = yield* (yield* JsonlSessions.JsonlSessions).resume("s")
          yield* appendTexts(session, 1)
          yield* flush(session)
          appendFileSync(file, readFileSync(file, "utf8").split("\n")[2] + "\n")
          const changed = readFileSync(file, "utf8")
          yield* appendTexts(session, 1)
          const error = yield* Effect.flip(flush(session))
          expect(error.code).toBe("PERSISTENCE")
          expect(error.message).toContain("another process")
          expect(readFileSync(file, "utf8")).toBe(changed)
        }))
      })
    ))

  it.effect("a session that stopped writing its changed file gives its lock back when it closes: the file resumes", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* seedFile(directory, "s", 1)
        const file = join(directory, "s.jsonl")
        const lock = lockOf(directory, "s")
        yield* persisted(directory, Effect.gen(function*() {
          yield* Effect.scoped(Effect.gen(function*() {
            const { session } = yield* resume("s")
            // another program appends the next event without the lock
            appendFileSync(file, readFileSync(file, "utf8").split("\n")[1]!.replace("\"seq\":0", "\"seq\":1") + "\n")
            yield* appendTexts(session, 1)
            expect((yield* Effect.flip(flush(session))).code).toBe("PERSISTENCE")
            expect(readLock(lock)).toMatchObject({ pid: process.pid })
          }))
          // the session closed: the lock it still held is given back, so its file can be resumed
          const { session } = yield* resume("s")
          expect(yield* session.seq).toBe(2)
        }))
        expect(existsSync(lock)).toBe(false)
        expect((yield* loadEvents(directory, "s")).map((e) => e.seq)).toStrictEqual([0, 1])
      })
    ))

  it.effect("a session that stopped writing gives its lock back at its close, not only when its layer closes", () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        yield* seedFile(directory, "s", 1)
        const file = join(directory, "s.jsonl")
        const lock = lockOf(directory, "s")
        const first = yield* openLayer(directory)
        yield* first.run(Effect.scoped(Effect.gen(function*() {
          const { session } = yield* resume("s")
          appendFileSync(file, readFileSync(file, "utf8").split("\n")[1]!.replace("\"seq\":0", "\"seq\":1") + "\n")
          yield* appendTexts(session, 1)
          expect((yield* Effect.flip(flush(session))).code).toBe("PERSISTENCE")
        })))
        // its closing flush fails as the others did, and then it lets go: the first layer is
        // still open, and another process (here: another layer) can resume the file
        yield* untilGone(lock)
        const second = yield* openLayer(directory)
        const { session } = yield* second.run(resume("s"))
        expect(yield* session.seq).toBe(2)
        yield* second.close
        yield* first.close
      })
    ))

  for (
    const [what, change, says] of [
      ["removed", (file: string) => rmSync(file), "removed"],
      // what an editor saving the file does: a new file renamed over the old one
      ["replaced by another file", (file: string) => {
        writeFileSync(`${file}.saved`, readFileSync(file))
        renameSync(`${file}.saved`, file)
      }, "another file"]
    ] as const
  ) {
    it.effect(`a file ${what} behind the session's back stops it writing: PERSISTENCE, not flushes into a file nobody can read`, () =>
      withDirectory((directory) =>
        Effect.gen(function*() {
          const file = join(directory, "s.jsonl")
          yield* persisted(directory, Effect.gen(function*() {
            const session = yield* create("s")
            yield* appendTexts(session, 1)
            yield* flush(session)
            change(file)
            const after = existsSync(file) ? readFileSync(file, "utf8") : undefined
            yield* appendTexts(session, 1)
            const error = yield* Effect.flip(flush(session))
            expect(error.code).toBe("PERSISTENCE")
            expect(error.message).toContain(file)
            expect(error.message).toContain(says)
            expect((yield* Effect.flip(flush(session))).code).toBe("PERSISTENCE")
            expect(existsSync(file) ? readFileSync(file, "utf8") : undefined).toBe(after)
            // nothing is lost: the session still has every event
            expect(yield* session.seq).toBe(2)
          }))
          // and its lock is given back
          expect(existsSync(lockOf(directory, "s"))).toBe(false)
        })
      ))
  }
})

// ---------------------------------------------------------------------------------------------
// real processes

const childScript = fileURLToPath(new URL("./fixtures/lock-child.ts", import.meta.url))

// a child that stops printing is a bug; fail instead of hanging the suite
const WATCHDOG_MS = 20_000

interface Child {
  readonly pid: number
  /** Resolves with the first line (from now on or already printed) starting with one of `words`. */
  readonly line: (...words: ReadonlyArray<string>) => Promise<string>
  readonly send: (line: string) => void
  readonly kill: () => void
  /** Resolves when the process has exited: its code, or the signal that ended it. */
  readonly exited: Promise<number | NodeJS.Signals>
  /** The ends of its batches: events [0, ack) were durable when it printed each. */
  readonly acks: Array<number>
}

interface ChildOptions {
  readonly directory: string
  readonly id: string
  readonly name: string
  readonly create?: boolean
  readonly hold?: boolean
  readonly count?: number
}

const start = (options: ChildOptions): Child => {
  const args = [childScript, "--dir", options.directory, "--id", options.id, "--name", options.name]
  if (options.create === true) args.push("--create")
  if (options.hold === true) args.push("--hold")
  if (options.count !== undefined) args.push("--count", String(options.count))
  const proc: ChildProcess = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "pipe"] })
  const seen: Array<string> = []
  const waiting: Array<{ readonly words: ReadonlyArray<string>; readonly resolve: (line: string) => void }> = []
  const acks: Array<number> = []
  let stderr = ""
  let pending = ""
  const matches = (line: string, words: ReadonlyArray<string>) => words.some((w) => line === w || line.startsWith(`${w} `))
  const onLine = (line: string) => {
    seen.push(line)
    if (line.startsWith("ack ")) acks.push(Number(line.slice(4)))
    for (let i = waiting.length - 1; i >= 0; i--) {
      if (matches(line, waiting[i]!.words)) waiting.splice(i, 1)[0]!.resolve(line)
    }
  }
  let failWatchdog: (error: Error) => void = () => {}
  const watchdogFired = new Promise<never>((_, reject) => {
    failWatchdog = reject
  })
  watchdogFired.catch(() => {})
  const watchdog = setTimeout(() => {
    proc.kill("SIGKILL")
    failWatchdog(new Error(`lock child ${options.name} printed nothing for ${WATCHDOG_MS} ms; stderr:\n${stderr}`))
  }, WATCHDOG_MS)
  proc.stdout!.setEncoding("utf8")
  proc.stdout!.on("data", (data: string) => {
    watchdog.refresh()
    pending += data
    for (let newline = pending.indexOf("\n"); newline >= 0; newline = pending.indexOf("\n")) {
      onLine(pending.slice(0, newline))
      pending = pending.slice(newline + 1)
    }
  })
  proc.stderr!.setEncoding("utf8")
  proc.stderr!.on("data", (data: string) => (stderr += data))
  const exited = new Promise<number | NodeJS.Signals>((resolve, reject) => {
    proc.on("error", reject)
    proc.on("close", (code, signal) => {
      clearTimeout(watchdog)
      resolve(signal ?? code ?? -1)
    })
  })
  const line = (...words: ReadonlyArray<string>) => {
    const found = seen.find((l) => matches(l, words))
    if (found !== undefined) return Promise.resolve(found)
    const printed = new Promise<string>((resolve) => {
      waiting.push({ words, resolve })
    })
    const ended = exited.then((how) => {
      const late = seen.find((l) => matches(l, words))
      if (late !== undefined) return late
      throw new Error(`lock child ${options.name} exited (${how}) without printing ${words.join("/")}; stderr:\n${stderr}`)
    })
    return Promise.race([printed, ended, watchdogFired])
  }
  return {
    pid: proc.pid!,
    line,
    send: (text) => proc.stdin!.write(text + "\n"),
    kill: () => proc.kill("SIGKILL"),
    exited,
    acks
  }
}

/** Runs a child to its end and returns it, failing when it did not exit cleanly. */
const run = async (options: ChildOptions): Promise<Child> => {
  const child = start(options)
  expect(await child.exited, `${options.name} exit`).toBe(0)
  return child
}

/** Every event is the one its seq names ("<seq>:<writer>"), and every acknowledged one is there. */
const checkFile = async (directory: string, id: string, acked: number) => {
  const events = await Effect.runPromise(loadEvents(directory, id))
  expect(events.length).toBeGreaterThanOrEqual(acked)
  events.forEach((event, index) => {
    expect(event.seq).toBe(index)
    const first = event.type === "user/message" ? event.data.content[0] : undefined
    expect(first?.type === "text" && first.text.startsWith(`${index}:`), `event ${index}`).toBe(true)
  })
  return events
}

const withTemp = async <A>(f: (directory: string) => Promise<A>): Promise<A> => {
  const directory = await mkdtemp(join(tmpdir(), "dsh-lock-proc-"))
  try {
    return await f(directory)
  } finally {
    await rm(directory, { recursive: true, force: true })
  }
}

const refusal = (line: string) => {
  const [, code, ...rest] = line.split(" ")
  return { code, message: JSON.parse(rest.join(" ")) as string }
}

describe("JsonlSessions lock: two processes", () => {
  it("refused while another process holds the session; resumed after it exits; taken over after it is killed", () =>
    withTemp(async (directory) => {
      const lock = lockOf(directory, "s")
      const init = await run({ directory, id: "s", name: "init", create: true })
      expect(init.acks).toStrictEqual([3])

      const a = start({ directory, id: "s", name: "a", hold: true })
      await a.line("holding")
      expect(readLock(lock)).toMatchObject({ pid: a.pid })

      const b = start({ directory, id: "s", name: "b" })
      const refused = refusal(await b.line("refused", "ack"))
      expect(refused.code).toBe("SESSION_LOCKED")
      expect(refused.message).toContain(`pid ${a.pid}`)
      expect(await b.exited).toBe(0)

      // a new session cannot take the id of the file either
      const c = start({ directory, id: "s", name: "c", create: true })
      const exists = refusal(await c.line("refused", "ack"))
      expect(exists.code).toBe("SESSION_EXISTS")
      expect(exists.message).toContain("exists already")
      expect(await c.exited).toBe(0)

      a.send("go")
      expect(await a.exited).toBe(0)
      expect(a.acks).toStrictEqual([6, 9])
      expect(existsSync(lock)).toBe(false)

      const d = start({ directory, id: "s", name: "d", hold: true })
      await d.line("holding")
      d.kill()
      expect(await d.exited).toBe("SIGKILL")
      expect(readLock(lock)).toMatchObject({ pid: d.pid })

      const e = await run({ directory, id: "s", name: "e" })
      expect(e.acks).toStrictEqual([15])
      expect(existsSync(lock)).toBe(false)
      const events = await checkFile(directory, "s", 15)
      expect(events).toHaveLength(15)
      const writers = events.map((event) => {
        const first = event.type === "user/message" ? event.data.content[0] : undefined
        return first?.type === "text" ? first.text.split(":")[1] : undefined
      })
      expect(writers).toStrictEqual([...Array(3).fill("init"), ...Array(6).fill("a"), ...Array(3).fill("d"), ...Array(3).fill("e")])
    }), 60_000)

  it("processes racing to take over one stale lock: exactly one wins, the others are refused, the file loads", () =>
    withTemp(async (directory) => {
      await run({ directory, id: "s", name: "init", create: true })
      const dead = start({ directory, id: "s", name: "dead", hold: true })
      await dead.line("holding")
      dead.kill()
      await dead.exited

      const racers = Array.from({ length: 4 }, (_, i) => start({ directory, id: "s", name: `r${i}`, hold: true }))
      const outcomes = await Promise.all(racers.map((r) => r.line("holding", "refused")))
      const winners = racers.filter((_, i) => outcomes[i] === "holding")
      expect(winners, outcomes.join("\n")).toHaveLength(1)
      for (const outcome of outcomes.filter((o) => o !== "holding")) expect(refusal(outcome).code).toBe("SESSION_LOCKED")
      const winner = winners[0]!
      expect(readLock(lockOf(directory, "s"))).toMatchObject({ pid: winner.pid })
      winner.send("go")
      for (const racer of racers) expect(await racer.exited).toBe(0)
      const events = await checkFile(directory, "s", 12)
      expect(events).toHaveLength(12)
      expect(readdirSync(directory)).toStrictEqual(["s.jsonl"])
    }), 60_000)
})
