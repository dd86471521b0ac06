/**
 * `dsh replay` of sessions written with the library, as the command writes them (its settings,
 * its agent, a scripted model): logs the command itself cannot make on cue — a last line torn
 * by a crash, then a resume; `agent.compact()` asked while a turn runs. Each is replayed
 * in-process through `Replay.replay`, the command's replay, with the recording as its model.
 * What has to happen mid-turn is held there by a listener until the test has done it: no
 * sleeps.
 */
import { AgentHooks, Compaction, JsonlSessions, ScriptedModel, type SessionEvent } from "dsh"
import { PermissionEvent } from "@dsh/permissions"
import { Replay as Cassette } from "@dsh/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Stream } from "effect"
import { mkdtempSync, readFileSync, statSync, truncateSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Config from "../src/cli/Config.ts"
import * as Platform from "../src/cli/Platform.ts"
import * as Replay from "../src/cli/Replay.ts"
import * as Runtime from "../src/cli/Runtime.ts"

const { reply } = ScriptedModel

/** The command's settings on a sessions directory of the test's own, with no tools. */
const settingsIn = (directory: string) => Config.load({ sessions: directory, tools: "none" }, { HOME: directory })

/** The command's graph on a scripted model serving the settings' model. */
const scripted = (settings: Config.Settings, script: ReadonlyArray<ScriptedModel.Reply>) =>
  Runtime.layer(settings, ScriptedModel.layer({ script, models: [settings.model] }))

/** What `dsh replay <file>` does, returning its verdict: the recording answers, nothing is persisted. */
const replayFile = (settings: Config.Settings, file: string) =>
  Effect.gen(function*() {
    const recording = yield* JsonlSessions.loadFile(file)
    const memory: Config.Settings = { ...settings, sessions: "memory" }
    const recorded = Cassette.layer({ events: recording.events }).pipe(Layer.orDie)
    return yield* Replay.replay(memory, recording.events, recording.header.sessionId).pipe(
      Effect.provide(Runtime.layer(memory, recorded, Replay.recordedAnswers(recording.events)))
    )
  }).pipe(Effect.scoped)

const eventsOf = (file: string) => Effect.map(JsonlSessions.loadFile(file), (loaded) => loaded.events)

/** Cuts the file inside its last line, as a crash mid-write does: the newline and a few bytes go. */
const tearLastLine = (file: string) => truncateSync(file, statSync(file).size - 10)

/** Cuts the whole last line off the file, as a kill before it was written does: nothing is torn. */
const dropLastLine = (file: string) => {
  const text = readFileSync(file, "utf8")
  truncateSync(file, Buffer.byteLength(text.slice(0, text.lastIndexOf("\n", text.length - 2) + 1)))
}

/** Cuts the file inside the line of the first event of `type`: the log ends before it, torn. */
const tearAt = (file: string, type: string) => {
  const text = readFileSync(file, "utf8")
  const line = text.indexOf(`{"type":"${type}"`)
  truncateSync(file, Buffer.byteLength(text.slice(0, line + 20)))
}

/** A session `s` in the settings' directory: one agent, `prompts` run one after the other, then disposed. */
const recordTurns = (settings: Config.Settings, prompts: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const agent = yield* Runtime.agent(settings, { id: "s" })
    for (const prompt of prompts) yield* agent.run(prompt)
  })

/** Resumes session `s` as `dsh resume` does and runs one more turn. */
// A session file of one completed turn, in a directory of its own, and the command's settings there.
const oneTurnRecorded = Effect.gen(function*() {
  const directory = mkdtempSync(join(tmpdir(), "dsh-replay-torn-"))
  const settings = yield* settingsIn(directory)
  yield* recordTurns(settings, ["first"]).pipe(Effect.scoped, Effect.provide(scripted(settings, [reply.text("one")])))
  return { file: join(directory, "s.jsonl"), settings }
})

const resumeAndRun = (settings: Config.Settings, prompt: string, answer: string) =>
  Effect.gen(function*() {
    const { repairs, session } = yield* (yield* JsonlSessions.JsonlSessions).resume("s")
    const agent = yield* Runtime.agent(settings, { resume: session })
    yield* agent.run(prompt)
    return repairs
  }).pipe(Effect.scoped, Effect.provide(scripted(settings, [reply.text(answer)])))

/**
 * A listener that holds the agent at the first event `at` matches until the test has done what
 * it does there ({@link whileHeld}).
 */
const hold = (at: (event: SessionEvent.SessionEvent) => boolean) =>
  Effect.gen(function*() {
    const reached = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const hooks = yield* AgentHooks
    yield* hooks.listeners.register({
      name: "test hold",
      around: (input, next) =>
        Effect.gen(function*() {
          yield* next(input)
          if (!at(input.event) || (yield* Deferred.isDone(reached))) return
          yield* Deferred.succeed(reached, undefined)
          yield* Deferred.await(release)
        })
    })
    return { reached, release }
  })

type Hold = Effect.Success<ReturnType<typeof hold>>

/** Waits until the agent is held, does `action` there, then lets the agent go on. */
const whileHeld = <A, E, R>(held: Hold, action: Effect.Effect<A, E, R>) =>
  Deferred.await(held.reached).pipe(Effect.andThen(action), Effect.tap(() => Deferred.succeed(held.release, undefined)))

const isModelRequestOfTurn = (turn: number) => (event: SessionEvent.SessionEvent) =>
  event.type === "model/request" && event.data.turn === turn

/** The summarizing call's answer; anything else asking it is a mistake of the test's. */
const summary: ScriptedModel.Reply = (request) => {
  if (request.system !== Compaction.defaultPrompt) throw new Error("the summary was scripted for the summarizing call")
  return reply.text("The user counted: one, two.")
}

const typesAfter = (events: ReadonlyArray<SessionEvent.SessionEvent>, type: string, count: number) => {
  const at = events.findIndex((event) => event.type === type)
  return events.slice(at, at + count).map((event) => event.type)
}

const identical = (events: ReadonlyArray<SessionEvent.SessionEvent>) => ({
  _tag: "Identical",
  events: events.length,
  requests: events.filter((event) => event.type === "model/request").length,
  turns: events.filter((event) => event.type === "turn/start").length
})

describe("dsh replay of a session resumed after a crash", () => {
  it.effect("a torn last line (the disposed line), resumed and continued: replays identically", () =>
    Effect.gen(function*() {
      const { file, settings } = yield* oneTurnRecorded
      tearLastLine(file)
      const repairs = yield* resumeAndRun(settings, "second", "two")
      expect(repairs.map((repair) => repair.kind)).toStrictEqual(["torn-tail"])
      const events = yield* eventsOf(file)
      // the first agent's part ends at its idle status (its run returned to a settled agent): its
      // disposed line is the one that tore
      expect(typesAfter(events, "session/repair", 2)).toStrictEqual(["session/repair", "agent/status"])
      expect(events[events.findIndex((event) => event.type === "session/repair") - 1]).toMatchObject({
        type: "agent/status",
        data: { status: "idle" }
      })
      expect(yield* replayFile(settings, file)).toStrictEqual(identical(events))
    }).pipe(Effect.provide(Platform.layer)))

  it.effect("a process killed between turns (no disposed line, nothing to repair), resumed: replays identically", () =>
    Effect.gen(function*() {
      const { file, settings } = yield* oneTurnRecorded
      dropLastLine(file)
      expect(yield* resumeAndRun(settings, "second", "two")).toStrictEqual([])
      const events = yield* eventsOf(file)
      expect(events.filter((event) => event.type === "agent/status" && event.data.status === "disposed")).toHaveLength(1)
      expect(yield* replayFile(settings, file)).toStrictEqual(identical(events))
    }).pipe(Effect.provide(Platform.layer)))

  it.effect("a torn last line, not resumed: replays up to the tear, then cannot go on", () =>
    Effect.gen(function*() {
      const { file, settings } = yield* oneTurnRecorded
      tearLastLine(file)
      const verdict = yield* replayFile(settings, file)
      expect(verdict).toMatchObject({ _tag: "Differs", seq: 13, mismatch: false })
      expect(verdict._tag === "Differs" && verdict.message).toMatch(/stops at seq 13 without being disposed \(its process ended: a crash or a kill\), so the replay cannot go on/)
    }).pipe(Effect.provide(Platform.layer)))

  it.effect("a line torn inside a turn, resumed (the turn closed interrupted): replays up to the crash, then cannot go on", () =>
    Effect.gen(function*() {
      const { file, settings } = yield* oneTurnRecorded
      tearAt(file, "step/end")
      const repairs = yield* resumeAndRun(settings, "second", "two")
      expect(repairs.map((repair) => repair.kind)).toStrictEqual(["torn-tail", "interrupted-turn"])
      const events = yield* eventsOf(file)
      const crash = events.findIndex((event) => event.type === "session/repair") - 1
      const verdict = yield* replayFile(settings, file)
      expect(verdict).toMatchObject({ _tag: "Differs", seq: crash, mismatch: false })
      expect(verdict._tag === "Differs" && verdict.message).toContain(
        `stops at seq ${crash} without being disposed (its process ended: inside a turn or a compaction (a crash or a kill); ` +
          "a resume closed what it left open), so the replay cannot go on"
      )
    }).pipe(Effect.provide(Platform.layer)))
})

describe("dsh replay of agent.compact() asked while a turn ran", () => {
  it.effect("the compaction runs after that turn, before the message queued behind it: replays identically", () =>
    Effect.gen(function*() {
      const directory = mkdtempSync(join(tmpdir(), "dsh-replay-compact-"))
      const settings = yield* settingsIn(directory)
      const script = [reply.text("one"), reply.text("two"), reply.text("three"), summary, reply.text("four")]
      yield* Effect.gen(function*() {
        const held = yield* hold(isModelRequestOfTurn(3))
        const agent = yield* Runtime.agent(settings, { id: "s" })
        yield* agent.run("first")
        yield* agent.run("second")
        const third = yield* Effect.forkChild(agent.run("third"))
        // started at once, so the compaction is queued before the agent is let go
        const compaction = yield* whileHeld(
          held,
          Effect.andThen(Effect.forkChild(agent.compact(), { startImmediately: true }), (fiber) => Effect.as(agent.send("fourth"), fiber))
        )
        yield* Fiber.join(third)
        expect((yield* Fiber.join(compaction)).applied.map((c) => `${c.kind} (${c.reason})`)).toStrictEqual(["summary (manual)"])
        yield* agent.awaitIdle
      }).pipe(Effect.scoped, Effect.provide(scripted(settings, script)))
      const file = join(directory, "s.jsonl")
      const events = yield* eventsOf(file)
      // no idle between: the compaction was asked while turn 3 ran, turn 4 queued behind both
      expect(typesAfter(events, "compaction/applied", 2)).toStrictEqual(["compaction/applied", "turn/start"])
      expect(events[events.findIndex((event) => event.type === "compaction/applied") - 1]).toMatchObject({ type: "turn/end", data: { turn: 3 } })
      expect(yield* replayFile(settings, file)).toStrictEqual(identical(events))
    }).pipe(Effect.provide(Platform.layer)))

  it.effect("steering sent while that compaction ran starts the next turn: replays identically", () =>
    Effect.gen(function*() {
      const directory = mkdtempSync(join(tmpdir(), "dsh-replay-compact-"))
      const settings = yield* settingsIn(directory)
      const script = [reply.text("one"), reply.text("two"), reply.text("three"), summary, reply.text("four")]
      yield* Effect.gen(function*() {
        const inTurn = yield* hold(isModelRequestOfTurn(3))
        const compacting = yield* hold((event) => event.type === "compaction/applied")
        const agent = yield* Runtime.agent(settings, { id: "s" })
        yield* agent.run("first")
        yield* agent.run("second")
        const third = yield* Effect.forkChild(agent.run("third"))
        const compaction = yield* whileHeld(inTurn, Effect.forkChild(agent.compact(), { startImmediately: true }))
        yield* whileHeld(compacting, agent.steer("fourth"))
        yield* Fiber.join(third)
        yield* Fiber.join(compaction)
        yield* agent.awaitIdle
      }).pipe(Effect.scoped, Effect.provide(scripted(settings, script)))
      const file = join(directory, "s.jsonl")
      const events = yield* eventsOf(file)
      const afterCompaction = events[events.findIndex((event) => event.type === "compaction/applied") + 1]
      expect(afterCompaction).toMatchObject({ type: "turn/start", data: { turn: 4, trigger: "steer" } })
      expect(yield* replayFile(settings, file)).toStrictEqual(identical(events))
    }).pipe(Effect.provide(Platform.layer)))

  it.effect("steering sent while a compaction asked of the idle agent ran (`/compact`): replays identically", () =>
    Effect.gen(function*() {
      const directory = mkdtempSync(join(tmpdir(), "dsh-replay-compact-"))
      const settings = yield* settingsIn(directory)
      const script = [reply.text("one"), reply.text("two"), reply.text("three"), summary, reply.text("four")]
      yield* Effect.gen(function*() {
        const compacting = yield* hold((event) => event.type === "compaction/applied")
        const agent = yield* Runtime.agent(settings, { id: "s" })
        for (const prompt of ["first", "second", "third"]) yield* agent.run(prompt)
        yield* agent.awaitIdle
        const compaction = yield* Effect.forkChild(agent.compact(), { startImmediately: true })
        yield* whileHeld(compacting, agent.steer("fourth"))
        yield* Fiber.join(compaction)
        yield* agent.awaitIdle
      }).pipe(Effect.scoped, Effect.provide(scripted(settings, script)))
      const file = join(directory, "s.jsonl")
      const events = yield* eventsOf(file)
      const at = events.findIndex((event) => event.type === "compaction/applied")
      expect(events[at - 1]).toMatchObject({ type: "agent/status", data: { status: "running" } })
      expect(events[at + 1]).toMatchObject({ type: "turn/start", data: { turn: 4, trigger: "steer" } })
      expect(yield* replayFile(settings, file)).toStrictEqual(identical(events))
    }).pipe(Effect.provide(Platform.layer)))
})

describe("dsh replay of a run whose permission policy asked no one", () => {
  it.effect("a call refused because nobody could be asked (dsh run without --yes) replays identically: no prompt answers it", () =>
    Effect.gen(function*() {
      const directory = mkdtempSync(join(tmpdir(), "dsh-replay-unattended-"))
      const settings = yield* Config.load({ sessions: directory }, { HOME: directory })
      const script = [reply.toolCalls([{ name: "bash", arguments: { command: "touch made-by-the-model" } }]), reply.text("it was refused")]
      yield* recordTurns(settings, ["make a file"]).pipe(Effect.scoped, Effect.provide(scripted(settings, script)))
      const file = join(directory, "s.jsonl")
      const recording = yield* JsonlSessions.loadFile(file)
      expect(PermissionEvent.decisionsOf(recording.events).map((d) => d.decision)).toStrictEqual(["deny"])
      // what `dsh replay` provides: no prompt for a recording that asked nobody
      expect(Replay.recordedPrompt(recording.events)).toBeUndefined()
      const memory: Config.Settings = { ...settings, sessions: "memory" }
      const verdict = yield* Replay.replay(memory, recording.events, recording.header.sessionId).pipe(
        Effect.provide(Runtime.layer(memory, Cassette.layer({ events: recording.events }).pipe(Layer.orDie), Replay.recordedPrompt(recording.events))),
        Effect.scoped
      )
      expect(verdict).toStrictEqual(identical(recording.events))
    }).pipe(Effect.provide(Platform.layer)))
})

describe("dsh replay of an abort while a tool ran", () => {
  it.effect("aborted after its permission was logged, while bash ran: the replay aborts it there too, and replays identically", () =>
    Effect.gen(function*() {
      const directory = mkdtempSync(join(tmpdir(), "dsh-replay-abort-tool-"))
      const settings = yield* Config.load({ sessions: directory, tools: "coding", yes: true }, { HOME: directory })
      // a command that would outlast the test: only an abort ends it
      const script = [reply.toolCalls([{ name: "bash", arguments: { command: "sleep 600" } }])]
      yield* Effect.gen(function*() {
        const agent = yield* Runtime.agent(settings, { id: "s" })
        const turn = yield* Effect.forkChild(Effect.exit(agent.run("wait")))
        // the permission is logged by the tool's middleware, which no listener hears: waited for on the log
        yield* agent.session.stream.pipe(Stream.filter((event) => event.type === "permission:decision"), Stream.runHead)
        yield* agent.abort("stop")
        yield* Fiber.join(turn)
      }).pipe(Effect.scoped, Effect.provide(scripted(settings, script)))
      const file = join(directory, "s.jsonl")
      const events = yield* eventsOf(file)
      expect(events.filter((event) => event.type !== "assistant/chunk").map((event) => event.type)).toStrictEqual([
        "agent/status", "agent/status", "turn/start", "user/message", "step/start", "model/request", "assistant/message",
        "tool/call", "permission:decision", "tool/result", "step/end", "turn/end", "agent/status", "agent/status"
      ])
      expect(events.find((event) => event.type === "tool/result")).toMatchObject({ data: { error: { code: "ABORTED" } } })
      // before, the replay let the command run (here: for ten minutes) and then differed at its result
      expect(yield* replayFile(settings, file)).toStrictEqual(identical(events))
    }).pipe(Effect.provide(Platform.layer)), { timeout: 30_000 })
})
