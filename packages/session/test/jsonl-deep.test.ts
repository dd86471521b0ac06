// Persistence is total for any event the session accepts: the session freezes data at any
// depth, so an event may hold JSON nested 100,000 levels deep (far past the ~5,000 levels
// JSON.stringify recurses through). Such an event must flush, load and resume like any other.
// Events are compared through their lines: vitest's deep equality recurses too.
import { Content } from "@dsh/llm"
import { FlushCheckpoint, JsonlSessions, type Session, SessionStore } from "@dsh/session"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, type Schema } from "effect"
import { readFileSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"

const DEPTH = 100_000

const withDirectory = <A, E, R>(f: (directory: string) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.flatMap(
    Effect.acquireRelease(
      Effect.promise(() => mkdtemp(join(tmpdir(), "dsh-deep-"))),
      (directory) => Effect.promise(() => rm(directory, { recursive: true, force: true }))
    ),
    f
  ))

const Live = (directory: string) =>
  JsonlSessions.layer({ directory }).pipe(Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)))

/** Arrays and objects alternating, `depth` levels around a string. */
const nested = (depth: number): Schema.Json => {
  let value: Schema.Json = "leaf"
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value }
  return value
}

/** The same value as JSON text, built by hand: no JSON writer is trusted to check one. */
const nestedText = (depth: number): string => {
  const open: Array<string> = []
  const close: Array<string> = []
  for (let i = depth - 1; i >= 0; i--) {
    open.push(i % 2 === 0 ? "[" : "{\"k\":")
    close.push(i % 2 === 0 ? "]" : "}")
  }
  return open.join("") + "\"leaf\"" + close.reverse().join("")
}

const deepMessage = (session: Session.Session, data: Schema.Json) =>
  session.append("user/message", {
    content: [Content.text("before"), { type: "custom", kind: "deep", data }],
    source: "user"
  })

const linesOf = (events: ReadonlyArray<Parameters<typeof JsonlSessions.eventLine>[0]>) => events.map(JsonlSessions.eventLine)

describe("JsonlSessions: deeply nested data", () => {
  it.effect(`an event nested ${DEPTH.toLocaleString("en")} levels deep flushes, loads and resumes identically`, () =>
    withDirectory((directory) =>
      Effect.gen(function*() {
        const file = join(directory, "deep.jsonl")
        const written = yield* Effect.gen(function*() {
          const session = yield* (yield* SessionStore).create({ id: "deep" })
          yield* session.append("turn/start", { turn: 1, trigger: "send" })
          yield* deepMessage(session, nested(DEPTH))
          yield* session.append("turn/end", { turn: 1, reason: { kind: "completed" } })
          yield* (yield* FlushCheckpoint).flush(session)
          return linesOf(yield* session.events)
        }).pipe(Effect.scoped, Effect.provide(Live(directory)))

        // the line is the JSON a shallow event gets, with the deep value in place of a marker
        const marker = yield* Effect.gen(function*() {
          const session = yield* (yield* SessionStore).create({ id: "marker" })
          return JsonlSessions.eventLine(yield* deepMessage(session, "MARKER"))
        }).pipe(Effect.scoped, Effect.provide(SessionStore.layer))
        const deepLine = marker.replace("\"MARKER\"", nestedText(DEPTH)).replace("\"seq\":0", "\"seq\":1")
        expect(written[1] === deepLine).toBe(true)
        expect(readFileSync(file, "utf8") === JsonlSessions.headerLine("deep", 0) + written.join("")).toBe(true)

        const resumed = yield* Effect.gen(function*() {
          const jsonl = yield* JsonlSessions.JsonlSessions
          const loaded = yield* jsonl.load("deep")
          expect(linesOf(loaded.events).join("") === written.join("")).toBe(true)
          const { repairs, session } = yield* jsonl.resume("deep")
          expect(repairs).toStrictEqual([])
          const events = linesOf(yield* session.events)
          // the resumed session goes on writing after the deep event
          yield* deepMessage(session, nested(DEPTH))
          yield* (yield* FlushCheckpoint).flush(session)
          return events
        }).pipe(Effect.scoped, Effect.provide(Live(directory)))
        expect(resumed.join("") === written.join("")).toBe(true)

        const again = yield* JsonlSessions.load(directory, "deep").pipe(
          Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer))
        )
        expect(again.events).toHaveLength(4)
        expect(JsonlSessions.eventLine(again.events[3]!) === deepLine.replace("\"seq\":1", "\"seq\":3")).toBe(true)
      })
    ), 60_000)
})
