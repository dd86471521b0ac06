/**
 * Fixtures of the scenario suite (not a test file: vitest runs `*.test.ts` only).
 *
 * Every scenario runs under {@link TestLayer}: the loop over `Testing.layer`, so the
 * invariants checker watches every session the scenario creates and fails the test on any
 * violation of the event contract when the layer closes. Scenarios wait on logged events
 * ({@link waitFor} replays the log from its first event, so it cannot miss one), on Deferreds
 * held by tools and model middleware, and on `awaitIdle` — never on time.
 */
import { type Agent, Agents } from "@dsh/agent"
import { type Content, HarnessError } from "@dsh/llm"
import { AgentLoop } from "@dsh/loop"
import { Model, ScriptedModel } from "@dsh/model"
import { type Session, SessionEvent } from "@dsh/session"
import { Testing } from "@dsh/testing"
import { Tool, ToolRegistry, Tools } from "@dsh/tools"
import { Deferred, Effect, Layer, Schema, Stream } from "effect"

export type Event = SessionEvent.SessionEvent

/** A tool that answers at once. */
export const echo = Tool.make("echo", {
  description: "Echoes its text",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: ({ text }) => Effect.succeed(`echo: ${text}`)
})

/** A tool whose body dies (a bug in the tool). */
export const broken = Tool.make("broken", {
  description: "Always crashes",
  parameters: Schema.Struct({}),
  execute: () => Effect.die(new Error("segfault in the tool"))
})

/** The loop over the test layer (scripted model, sessions, invariants) with these tools registered. */
export const TestLayer = (
  options: {
    readonly script?: ReadonlyArray<ScriptedModel.Reply>
    readonly tools?: ReadonlyArray<Tool.Tool<any, any, never>>
    readonly models?: ReadonlyArray<string>
  } = {}
) =>
  AgentLoop.layer.pipe(
    Layer.provideMerge(
      Tools.layer(...(options.tools ?? [echo])).pipe(
        Layer.orDie,
        Layer.provideMerge(
          Testing.layer({
            script: options.script ?? [],
            ...(options.models === undefined ? {} : { models: options.models })
          })
        )
      )
    )
  )

/** Creates an agent on the scripted model. */
export const create = (options: Partial<Agent.Options> = {}) =>
  Agents.use((agents) => agents.create({ model: "scripted", ...options }))

/** `send` then `awaitIdle`. */
export const run = (agent: Agent.Agent, input: Agent.Input) =>
  Effect.andThen(agent.send(input), agent.awaitIdle)

/** The events of one core type. */
export const ofType = <T extends SessionEvent.CoreType>(events: ReadonlyArray<Event>, type: T) =>
  events.filter(SessionEvent.isType(type))

/** The event types of a log, chunks left out. */
export const kinds = (events: ReadonlyArray<Event>): Array<string> =>
  events.filter((e) => e.type !== "assistant/chunk").map((e) => e.type)

/** The text blocks of content, joined. */
export const textOf = (content: ReadonlyArray<Content.ContentBlock | Content.ToolResultContent>): string =>
  content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("")

/** The reasons of the turns that ended. */
export const endReasons = (events: ReadonlyArray<Event>) => ofType(events, "turn/end").map((e) => e.data.reason)

/** The events of turn `n`, from its turn/start to its turn/end. */
export const turnEvents = (events: ReadonlyArray<Event>, n: number): Array<Event> => {
  const start = events.findIndex((e) => e.type === "turn/start" && e.data.turn === n)
  const end = events.findIndex((e) => e.type === "turn/end" && e.data.turn === n)
  return start < 0 ? [] : events.slice(start, end < 0 ? undefined : end + 1)
}

/** The agent/status values logged for one agent. */
export const statuses = (events: ReadonlyArray<Event>, agentId: string) =>
  ofType(events, "agent/status").filter((e) => e.data.agentId === agentId).map((e) => e.data.status)

/**
 * The `nth` event of a type (matching `where`) in a session's log, waiting for it if it is not
 * logged yet. The log's stream replays from the first event, so this never misses one.
 */
export const waitFor = <T extends SessionEvent.CoreType>(
  session: Session.Session,
  type: T,
  where: (event: Extract<Event, { readonly type: T }>) => boolean = () => true,
  nth = 1
) =>
  session.stream.pipe(
    Stream.filter(SessionEvent.isType(type)),
    Stream.filter(where),
    Stream.take(nth),
    Stream.runCollect,
    Effect.flatMap((found) =>
      found.length === nth
        ? Effect.succeed(found[nth - 1]!)
        : Effect.die(new Error(`the session closed before its ${type} #${nth}`))
    )
  )

/** Deferreds around a tool body: `started` when it runs, `release` lets it finish, `done` when it has. */
export interface Gate {
  readonly started: Deferred.Deferred<void>
  readonly release: Deferred.Deferred<void>
  readonly done: Deferred.Deferred<void>
}

export const makeGate: Effect.Effect<Gate> = Effect.all({
  started: Deferred.make<void>(),
  release: Deferred.make<void>(),
  done: Deferred.make<void>()
})

/**
 * A tool whose call with argument `id` signals `gates[id].started`, then waits for
 * `gates[id].release`. `finished` records the ids in the order their bodies finished.
 */
export const gatedTool = (
  name: string,
  gates: Record<string, Gate>,
  options: { readonly concurrencySafe?: boolean; readonly finished?: Array<string> } = {}
) =>
  Tool.make(name, {
    description: "Waits until the test releases it",
    parameters: Schema.Struct({ id: Schema.String }),
    concurrencySafe: options.concurrencySafe ?? false,
    execute: ({ id }) => {
      const gate = gates[id]
      if (gate === undefined) return Effect.succeed(`${name} ${id}: no gate`)
      return Deferred.succeed(gate.started, undefined).pipe(
        Effect.andThen(Deferred.await(gate.release)),
        Effect.andThen(Effect.sync(() => options.finished?.push(id))),
        Effect.andThen(Deferred.succeed(gate.done, undefined)),
        Effect.as(`${name} ${id} done`)
      )
    }
  })

/** Registers a tool for the rest of the scenario. */
export const register = (tool: Tool.Tool<any, any, never>) =>
  ToolRegistry.use((registry) => Effect.orDie(registry.register(tool)))

/**
 * Pauses the model's answer to request number `request` (from 1) after its first `after`
 * chunks, until the returned Deferred is completed: a turn held mid-stream.
 */
export const pauseModel = (options: { readonly request: number; readonly after: number }) =>
  Effect.gen(function*() {
    const model = yield* Model
    const release = yield* Deferred.make<void>()
    let count = 0
    yield* model.use({
      name: "pause",
      around: (request, next) => {
        count++
        if (count !== options.request) return next(request)
        return Stream.unwrap(
          Effect.map(Stream.runCollect(next(request)), (chunks) =>
            Stream.fromIterable(chunks.slice(0, options.after)).pipe(
              Stream.concat(Stream.fromEffectDrain(Deferred.await(release))),
              Stream.concat(Stream.fromIterable(chunks.slice(options.after)))
            ))
        )
      }
    })
    return release
  })

/** The requests the scripted model received. */
export const requests = ScriptedModel.ScriptedModel.use((m) => m.requests)

/** A harness error for scenarios whose middleware fails on purpose (code `LLM_INVALID_REQUEST`). */
export class Refused extends Schema.TaggedError<Refused>()("Refused", {
  ...HarnessError.fields("LLM_INVALID_REQUEST")
}) {}
