/**
 * Record and replay, end to end: a session recorded through the loop with JSONL persistence on
 * (the scripted model standing in for a real one), then replayed from the file by the replay
 * model under the same agent setup — all under `Testing.layer`, so the invariants checker
 * watches both sessions.
 *
 * Replayed events equal the recording's except for `time` (the Clock at append: a real
 * recording and its replay run at different times) — compared as `{type, seq, data}`. Ids
 * need no normalizing: the agent id is the one given to `create` (the same in both runs), the
 * session id is not part of any event, and call ids come from the model's chunks, which the
 * replay repeats.
 *
 * The last section is the code of docs/cookbook/record-replay-testing.md, which the page
 * copies; it replays the committed cassette test/cassettes/weather.jsonl (`DSH_RECORD=1`
 * re-records it).
 */
import { type Agent, Agents } from "@dsh/agent"
import { LlmError, ScopedList, Usage } from "@dsh/llm"
import { AgentLoop } from "@dsh/loop"
import { ScriptedModel } from "@dsh/model"
import { SystemPrompt } from "@dsh/prompt"
import { JsonlSessions, SessionEvent } from "@dsh/session"
import { Replay, Testing } from "@dsh/testing"
import { Tool, Tools } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Effect, Layer, Schema } from "effect"
import { existsSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { echo, endReasons, type Event, ofType, run, turnEvents, waitFor } from "./helpers.ts"

const { reply } = ScriptedModel

/** The model name of the recordings (a real model's; the scripted model stands in for it). */
const MODEL = "recorded-model"
const PROMPT = "You echo words."

// ---- the agent setup, over a model and sessions of choice -------------------------------------

/** The loop and these tools (plus `extra`) over `base`, which provides the test layer's services. */
const agentOver = <ROut, E, R>(
  base: Layer.Layer<ROut, E, R>,
  tools: ReadonlyArray<Tool.Tool<any, any, never>> = [echo],
  extra: Layer.Layer<never, never, SystemPrompt> = Layer.empty
) =>
  AgentLoop.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(Tools.layer(...tools).pipe(Layer.orDie), extra).pipe(Layer.provideMerge(base)))
  )

/** Recording: the scripted model serving {@link MODEL}, JSONL persistence on into `directory`. */
const recording = (directory: string, script: ReadonlyArray<ScriptedModel.Reply>) =>
  JsonlSessions.layer({ directory }).pipe(Layer.orDie, Layer.provideMerge(Testing.layer({ script, models: [MODEL] })))

/** Replaying: the replay model answering from `file` (the scripted model is there, unused). */
const replaying = (file: string) =>
  Replay.layer({ file }).pipe(Layer.provideMerge(Testing.layer()), Layer.provide(NodeFileSystem.layer), Layer.orDie)

/**
 * One agent session: `create` with a fixed id, then `act` (by default: each input sent and
 * run to idle). Returns the session's whole log, read once the agent is disposed.
 */
const converse = (
  inputs: ReadonlyArray<string>,
  options: Partial<Agent.Options> = {},
  act: (agent: Agent.Agent) => Effect.Effect<void, unknown> = (agent) =>
    Effect.forEach(inputs, (input) => run(agent, input), { discard: true })
) =>
  Effect.gen(function*() {
    const agent = yield* (yield* Agents).create({
      id: "agent-1",
      model: MODEL,
      prompt: PROMPT,
      session: { id: "cassette" },
      ...options
    })
    yield* Effect.orDie(act(agent))
    return agent.session
  }).pipe(Effect.scoped, Effect.flatMap((session) => session.events))

/** A temporary directory for the scenario; removed afterwards. */
const tempDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "dsh-replay-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

/** Records a session of `inputs` into a temp dir; returns the file and its loaded events. */
const record = (
  script: ReadonlyArray<ScriptedModel.Reply>,
  inputs: ReadonlyArray<string>,
  act?: (agent: Agent.Agent) => Effect.Effect<void, unknown>
) =>
  Effect.gen(function*() {
    const directory = yield* tempDir
    const live = yield* converse(inputs, {}, act).pipe(Effect.provide(agentOver(recording(directory, script))))
    const file = join(directory, JsonlSessions.fileName("cassette"))
    const loaded = yield* JsonlSessions.loadFile(file).pipe(Effect.provide(NodeFileSystem.layer), Effect.orDie)
    // the file holds what the session logged, nothing torn
    expect(loaded.torn).toBeUndefined()
    expect(loaded.events).toStrictEqual(live)
    return { file, events: loaded.events }
  })

/** Events without their time. */
const untimed = (events: ReadonlyArray<Event>) => events.map(({ time: _time, ...event }) => event)

/** The one `error` event of turn `turn`, checked to carry `code` and to end the turn with it. */
const turnError = (events: ReadonlyArray<Event>, turn: number, code: string) => {
  const errors = ofType(turnEvents(events, turn), "error")
  expect(errors.map((e) => e.data.code)).toStrictEqual([code])
  expect(endReasons(events)[turn - 1]).toStrictEqual({ kind: "error", code, message: errors[0]!.data.message })
  return errors[0]!.data
}

/** The `seq` of the model/request of recorded request `n` (from 1). */
const requestSeq = (events: ReadonlyArray<Event>, n: number) => Replay.steps(events)[n - 1]!.seq

// ---- the recorded session ---------------------------------------------------------------------

const usage = Usage.make({ inputTokens: 120, outputTokens: 14 })

/** Turn 1: echo, then two echoes in one step, then an answer; turn 2: reasoning and an answer. */
const script: ReadonlyArray<ScriptedModel.Reply> = [
  reply.toolCalls([{ name: "echo", arguments: { text: "one" }, id: "call_a" }], { usage }),
  reply.toolCalls(
    [{ name: "echo", arguments: { text: "two" }, id: "call_b" }, { name: "echo", arguments: { text: "three" }, id: "call_c" }],
    { text: "Two more.", usage }
  ),
  reply.text("one, two, three", { usage }),
  reply.reasoningThenText("Nothing was asked.", "Nothing left to echo.")
]
const inputs = ["echo one, two, three", "and now?"]

const shout = Tool.make("shout", {
  description: "Echoes its text",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: ({ text }) => Effect.succeed(`echo: ${text}`)
})

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number }),
  execute: ({ a, b }) => Effect.succeed(String(a + b))
})

const loud = Tool.make("echo", {
  description: "Echoes its text",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: ({ text }) => Effect.succeed(`ECHO: ${text.toUpperCase()}`)
})

const frenchSection = Layer.effectDiscard(
  SystemPrompt.use((prompt) => ScopedList.inOpenScope(prompt.addSection({ name: "style", content: "Answer in French." })))
)

describe("record, then replay", () => {
  it.effect("a multi-step session replays from its file with the same events, time aside", () =>
    Effect.gen(function*() {
      const recorded = yield* record(script, inputs)
      expect(Replay.steps(recorded.events)).toHaveLength(4)
      expect(ofType(recorded.events, "tool/result")).toHaveLength(3)

      const replayed = yield* converse(inputs).pipe(
        Effect.tap(() =>
          Replay.Replay.use((replay) =>
            Effect.map(replay.remaining, (remaining) => expect(remaining).toBe(0))
          )
        ),
        Effect.provide(agentOver(replaying(recorded.file)))
      )
      expect(untimed(replayed)).toStrictEqual(untimed(recorded.events))
      expect(endReasons(replayed)).toStrictEqual([{ kind: "completed" }, { kind: "completed" }])
    }).pipe(Effect.scoped))

  it.effect("a system prompt section added: the first request fails the turn with REPLAY_MISMATCH naming `system`", () =>
    Effect.gen(function*() {
      const recorded = yield* record(script, inputs)
      const replayed = yield* converse(inputs.slice(0, 1)).pipe(
        Effect.provide(agentOver(replaying(recorded.file), [echo], frenchSection))
      )
      const error = turnError(replayed, 1, "REPLAY_MISMATCH")
      expect(error).toMatchObject({ turn: 1, step: 1 })
      expect(error.message).toBe(
        `request 1 does not match the recording (turn 1, step 1, seq ${requestSeq(recorded.events, 1)}): ` +
          `system: expected "You echo words.", got "Answer in French.\\n\\nYou echo words."`
      )
      // nothing was answered: no chunk, no assistant message, no tool ran
      expect(ofType(replayed, "assistant/chunk")).toStrictEqual([])
      expect(ofType(replayed, "tool/call")).toStrictEqual([])
    }).pipe(Effect.scoped))

  it.effect("a tool renamed, a tool added: REPLAY_MISMATCH naming tools[k]", () =>
    Effect.gen(function*() {
      const recorded = yield* record(script, inputs)
      const seq = requestSeq(recorded.events, 1)

      const renamed = yield* converse(inputs.slice(0, 1)).pipe(Effect.provide(agentOver(replaying(recorded.file), [shout])))
      expect(turnError(renamed, 1, "REPLAY_MISMATCH").message).toBe(
        `request 1 does not match the recording (turn 1, step 1, seq ${seq}): tools[0].name: expected "echo", got "shout"`
      )

      const added = yield* converse(inputs.slice(0, 1)).pipe(Effect.provide(agentOver(replaying(recorded.file), [echo, add])))
      expect(turnError(added, 1, "REPLAY_MISMATCH").message).toMatch(
        new RegExp(
          `^request 1 does not match the recording \\(turn 1, step 1, seq ${seq}\\): ` +
            `tools\\[1\\]: expected \\(absent\\), got \\{"name":"add","description":"Adds two numbers",.*…$`
        )
      )
    }).pipe(Effect.scoped))

  it.effect("a different user message: REPLAY_MISMATCH naming message 0's text", () =>
    Effect.gen(function*() {
      const recorded = yield* record(script, inputs)
      const replayed = yield* converse(["echo four, five, six"]).pipe(Effect.provide(agentOver(replaying(recorded.file))))
      expect(turnError(replayed, 1, "REPLAY_MISMATCH").message).toBe(
        `request 1 does not match the recording (turn 1, step 1, seq ${requestSeq(recorded.events, 1)}): ` +
          `message 0 (user) / block 0 (text) / text: expected "echo one, two, three", got "echo four, five, six"`
      )
    }).pipe(Effect.scoped))

  it.effect("a tool that answers differently: caught at the next request, in the derived tool result", () =>
    Effect.gen(function*() {
      const recorded = yield* record(script, inputs)
      const replayed = yield* converse(inputs.slice(0, 1)).pipe(Effect.provide(agentOver(replaying(recorded.file), [loud])))
      // step 1 replayed (the call ran, with the new body); step 2's request carries its result
      const error = turnError(replayed, 1, "REPLAY_MISMATCH")
      expect(error).toMatchObject({ turn: 1, step: 2 })
      expect(error.message).toBe(
        `request 2 does not match the recording (turn 1, step 2, seq ${requestSeq(recorded.events, 2)}): ` +
          `message 2 (user) / block 0 (tool-result) / content[0].text: expected "echo: one", got "ECHO: ONE"`
      )
    }).pipe(Effect.scoped))

  it.effect("recorded model failures replay as the same failures (an LlmError; a defect of another code)", () =>
    Effect.gen(function*() {
      const turns = ["first", "second", "third"]
      const recorded = yield* record(
        [
          reply.failAt(reply.text("partial answer"), 2, new LlmError.LlmServerError({ message: "upstream overloaded" })),
          reply.text("recovered")
          // the third turn finds the script exhausted: the scripted model dies with SCRIPT_EXHAUSTED
        ],
        turns
      )
      expect(turnError(recorded.events, 1, "LLM_SERVER").message).toBe("upstream overloaded")
      expect(turnError(recorded.events, 3, "SCRIPT_EXHAUSTED").message).toBe(
        "the scripted model got request 3 but was scripted for 2"
      )

      const replayed = yield* converse(turns).pipe(Effect.provide(agentOver(replaying(recorded.file))))
      expect(untimed(replayed)).toStrictEqual(untimed(recorded.events))
      expect(endReasons(replayed)).toStrictEqual([
        { kind: "error", code: "LLM_SERVER", message: "upstream overloaded" },
        { kind: "completed" },
        { kind: "error", code: "SCRIPT_EXHAUSTED", message: "the scripted model got request 3 but was scripted for 2" }
      ])
    }).pipe(Effect.scoped))

  it.effect("a turn aborted mid-answer replays when the test aborts at the same point", () =>
    Effect.gen(function*() {
      // abort once the second chunk of the first answer is logged, then run a second turn
      const abortMidAnswer = (agent: Agent.Agent) =>
        Effect.gen(function*() {
          yield* agent.send("start")
          yield* waitFor(agent.session, "assistant/chunk", () => true, 2)
          yield* agent.abort("changed my mind")
          yield* agent.awaitIdle
          yield* run(agent, "again")
        })
      const recorded = yield* record([reply.hangAt(reply.text("a long answer"), 2), reply.text("ok")], [], abortMidAnswer)
      expect(endReasons(recorded.events)).toStrictEqual([{ kind: "aborted", reason: "changed my mind" }, { kind: "completed" }])
      expect(Replay.steps(recorded.events)[0]!.ending).toStrictEqual({ _tag: "Interrupted" })

      const replayed = yield* converse([], {}, abortMidAnswer).pipe(Effect.provide(agentOver(replaying(recorded.file))))
      expect(untimed(replayed)).toStrictEqual(untimed(recorded.events))
    }).pipe(Effect.scoped))

  it.effect("running past the recording: REPLAY_MISMATCH, recording exhausted", () =>
    Effect.gen(function*() {
      const recorded = yield* record(script, inputs)
      const replayed = yield* converse([...inputs, "one more thing"]).pipe(Effect.provide(agentOver(replaying(recorded.file))))
      expect(endReasons(replayed).slice(0, 2)).toStrictEqual([{ kind: "completed" }, { kind: "completed" }])
      const error = turnError(replayed, 3, "REPLAY_MISMATCH")
      expect(error).toMatchObject({ turn: 3, step: 1 })
      expect(error.message).toBe("request 5 goes past the recording: recording exhausted — it holds 4 model requests")
      // what was replayed is the recording
      expect(untimed(replayed.slice(0, recorded.events.length - 1))).toStrictEqual(untimed(recorded.events.slice(0, -1)))
    }).pipe(Effect.scoped))
})

// ---- docs/cookbook/record-replay-testing.md (the page copies this code) ------------------------

const weather = Tool.make("weather", {
  description: "Today's weather in a city",
  parameters: Schema.Struct({ city: Schema.NonEmptyString }),
  execute: ({ city }) => Effect.succeed(`${city}: sunny, 21°C`)
})

/** The agent under test: the loop and its tools, over the model and sessions `base` provides. */
const WeatherAgent = <E, R>(base: Layer.Layer<Testing.Services, E, R>) =>
  AgentLoop.layer.pipe(Layer.provideMerge(Tools.layer(weather).pipe(Layer.orDie, Layer.provideMerge(base))))

/** The conversation: one question, run to idle; returns the session's log. */
const askWeather = (prompt = "You answer questions about the weather.") =>
  Effect.gen(function*() {
    const agent = yield* (yield* Agents).create({
      id: "weather-agent",
      model: "deepseek-v4-flash",
      prompt,
      session: { id: "weather" } // the cassette's file name: weather.jsonl
    })
    yield* agent.send("What's the weather in Lyon?")
    yield* agent.awaitIdle
    return yield* agent.session.events
  }).pipe(Effect.scoped)

/** Recording: JSONL persistence on. The scripted model stands in for DeepSeek here. */
const Recording = (directory: string) =>
  WeatherAgent(
    JsonlSessions.layer({ directory }).pipe(
      Layer.orDie,
      Layer.provideMerge(Testing.layer({
        script: [
          ScriptedModel.reply.toolCalls([{ name: "weather", arguments: { city: "Lyon" }, id: "call_lyon" }]),
          ScriptedModel.reply.text("It is sunny in Lyon, 21°C.")
        ],
        models: ["deepseek-v4-flash"]
      }))
    )
  )

/** Replaying: the replay model answers from the cassette. */
const Replaying = (cassette: string) =>
  WeatherAgent(
    Replay.layer({ file: cassette }).pipe(
      Layer.provideMerge(Testing.layer()),
      Layer.provide(NodeFileSystem.layer),
      Layer.orDie
    )
  )

const cassettes = join(import.meta.dirname, "cassettes")
const cassette = join(cassettes, "weather.jsonl")

describe("the cookbook's workflow", () => {
  it.effect("replays the committed cassette (DSH_RECORD=1 re-records it)", () =>
    Effect.gen(function*() {
      if (process.env["DSH_RECORD"] === "1") {
        yield* Effect.promise(() => rm(cassette, { force: true }))
        yield* askWeather().pipe(Effect.provide(Recording(cassettes)))
      }
      expect(existsSync(cassette), `${cassette} is missing: record it with DSH_RECORD=1`).toBe(true)
      const events = yield* askWeather().pipe(Effect.provide(Replaying(cassette)))
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
      const result = ofType(events, "tool/result")[0]
      expect(result?.data.content).toStrictEqual([{ type: "text", text: "Lyon: sunny, 21°C" }])
    }))

  it.effect("a recording replays with the same events", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir
      const recorded = yield* askWeather().pipe(Effect.provide(Recording(directory)))
      const replayed = yield* askWeather().pipe(Effect.provide(Replaying(join(directory, "weather.jsonl"))))
      const untimedEvents = (events: ReadonlyArray<SessionEvent.SessionEvent>) => events.map(({ time: _time, ...e }) => e)
      expect(untimedEvents(replayed)).toStrictEqual(untimedEvents(recorded))
    }).pipe(Effect.scoped))

  it.effect("a changed prompt: the turn ends with REPLAY_MISMATCH naming the first difference", () =>
    Effect.gen(function*() {
      const events = yield* askWeather("You answer questions about the weather, briefly.").pipe(
        Effect.provide(Replaying(cassette))
      )
      const [reason] = endReasons(events)
      expect(reason).toStrictEqual({
        kind: "error",
        code: "REPLAY_MISMATCH",
        message: "request 1 does not match the recording (turn 1, step 1, seq 5): system: " +
          "expected …\"questions about the weather.\" (from char 11), got …\"questions about the weather, briefly.\" (from char 11)"
      })
    }))
})
