/**
 * MCP tools inside an agent, under the invariants: a scripted model calls tools of the official
 * reference servers (everything's `echo`, filesystem's `read_text_file` on a temporary
 * directory), run as real processes over stdio. A server killed during a call fails that call
 * with MCP_SERVER and the next call starts it again; an abort while a call is stuck in a
 * server answers ABORTED. A FIFO in the directory says when the server is inside a call: the
 * test's open of its write end returns only once the server has opened it to read.
 */
import { McpEvents, Mcp, McpServers } from "@dsh/mcp"
import { AgentLoop } from "@dsh/loop"
import { ScriptedModel } from "@dsh/model"
import { Testing } from "@dsh/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { open } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { create, endReasons, ofType, requests, textOf, waitFor } from "./helpers.ts"

const { reply } = ScriptedModel

const entry = (pkg: string) => fileURLToPath(import.meta.resolve(`@modelcontextprotocol/${pkg}/dist/index.js`))

const workspace = () => {
  const dir = mkdtempSync(join(tmpdir(), "dsh-mcp-scenario-"))
  writeFileSync(join(dir, "notes.txt"), "buy milk\n")
  const fifo = join(dir, "pipe")
  execFileSync("mkfifo", [fifo])
  return { dir, notes: join(dir, "notes.txt"), fifo }
}

const servers = (dir: string): Mcp.Options["servers"] => ({
  everything: { command: process.execPath, args: [entry("server-everything"), "stdio"] },
  fs: { command: process.execPath, args: [entry("server-filesystem"), dir] }
})

/** The loop over the test layer, with the MCP servers' tools in its registry. */
const McpLayer = (dir: string, script: ReadonlyArray<ScriptedModel.Reply>) =>
  AgentLoop.layer.pipe(
    Layer.provideMerge(Mcp.layer({ servers: servers(dir) }).pipe(Layer.provideMerge(Testing.layer({ script }))))
  )

/** Returns once the filesystem server is reading the FIFO (inside a call); the effect it returns lets the read end. */
const whenReading = (fifo: string) =>
  Effect.promise(() => open(fifo, "w")).pipe(Effect.map((handle) => Effect.promise(() => handle.close())))

const fsStatus = McpServers.use((s) => s.servers).pipe(Effect.map((all) => all.find((s) => s.name === "fs")!))

const results = (events: Parameters<typeof ofType>[0]) =>
  ofType(events, "tool/result").map((e) => ({ error: e.data.error, text: textOf(e.data.content) }))

describe("MCP tools in an agent", () => {
  const calls = workspace()
  it.live("the model calls everything's echo and filesystem's read; the results reach it", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const { text } = yield* agent.run("echo hi, then read my notes")
      expect(text).toBe("You need milk.")
      expect(results(yield* agent.session.events)).toStrictEqual([
        { error: undefined, text: "Echo: hi" },
        { error: undefined, text: "buy milk\n" }
      ])
      // the model was offered the servers' tools under their prefixes, with their schemas
      const [first] = yield* requests
      const tools = first?.tools ?? []
      const offered = tools.map((t) => t.name)
      expect(offered).toContain("everything__echo")
      expect(offered).toContain("fs__read_text_file")
      expect(tools.find((t) => t.name === "everything__echo")?.parameters["required"]).toStrictEqual(["message"])
    }).pipe(
      Effect.scoped,
      Effect.provide(McpLayer(calls.dir, [
        reply.toolCalls([{ name: "everything__echo", arguments: { message: "hi" } }]),
        reply.toolCalls([{ name: "fs__read_text_file", arguments: { path: calls.notes } }]),
        reply.text("You need milk.")
      ]))
    ))

  const killed = workspace()
  it.live("a server killed during a call fails it with MCP_SERVER; the next call starts it again and works", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      const { pid } = yield* fsStatus
      yield* agent.send("read the pipe, then my notes")
      yield* waitFor(agent.session, "tool/call")
      const release = yield* whenReading(killed.fifo)
      process.kill(pid!, "SIGKILL")
      yield* agent.awaitIdle
      yield* release
      const events = yield* agent.session.events
      const [failed, worked] = results(events)
      expect(failed!.error).toStrictEqual({ tag: "McpServerError", code: "MCP_SERVER" })
      expect(failed!.text).toMatch(/^MCP server "fs" disconnected during the call to tool "fs__read_text_file"/)
      expect(worked).toStrictEqual({ error: undefined, text: "buy milk\n" })
      expect(endReasons(events)).toStrictEqual([{ kind: "completed" }])
      // the log says the server was started again, before the second call's result
      const restarted = events.flatMap((e) => (McpEvents.Restarted.is(e) ? [{ seq: e.seq, data: McpEvents.Restarted.decode(e) }] : []))
      expect(restarted.map((r) => r.data)).toStrictEqual([
        { server: "fs", tool: "fs__read_text_file", restarts: 1, reason: expect.stringMatching(/^MCP server closed stdout|^its process was killed by SIGKILL/) }
      ])
      expect(restarted[0]!.seq).toBeLessThan(ofType(events, "tool/result")[1]!.seq)
      expect(yield* fsStatus).toMatchObject({ state: "connected", restarts: 1 })
    }).pipe(
      Effect.scoped,
      Effect.provide(McpLayer(killed.dir, [
        reply.toolCalls([{ name: "fs__read_text_file", arguments: { path: killed.fifo } }]),
        reply.toolCalls([{ name: "fs__read_text_file", arguments: { path: killed.notes } }]),
        reply.text("Your notes say: buy milk.")
      ]))
    ))

  const stuck = workspace()
  it.live("an abort while a call is stuck in the server answers ABORTED; the next turn's call needs no restart", () =>
    Effect.gen(function*() {
      const agent = yield* create()
      yield* agent.send("read the pipe")
      yield* waitFor(agent.session, "tool/call")
      const release = yield* whenReading(stuck.fifo)
      yield* agent.abort("the user gave up")
      yield* agent.awaitIdle
      yield* release
      const { text } = yield* agent.run("read my notes instead")
      expect(text).toBe("Milk.")
      const events = yield* agent.session.events
      expect(results(events).map((r) => r.error?.code ?? r.text)).toStrictEqual(["ABORTED", "buy milk\n"])
      expect(endReasons(events)).toStrictEqual([{ kind: "aborted", reason: "the user gave up" }, { kind: "completed" }])
      expect(yield* fsStatus).toMatchObject({ state: "connected", restarts: 0 })
    }).pipe(
      Effect.scoped,
      Effect.provide(McpLayer(stuck.dir, [
        reply.toolCalls([{ name: "fs__read_text_file", arguments: { path: stuck.fifo } }]),
        reply.toolCalls([{ name: "fs__read_text_file", arguments: { path: stuck.notes } }]),
        reply.text("Milk.")
      ]))
    ))
})
