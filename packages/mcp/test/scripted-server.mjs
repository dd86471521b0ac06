// A small stdio MCP server for the tests, written by hand (newline-delimited JSON-RPC), so it
// can misbehave the way no SDK would. MODE picks the handshake: "normal" or "wrong-version"
// (it answers `initialize` with a revision dsh does not speak). Its tools:
//
// - `echo`: `echo <message>`;
// - `hang`: opens the FIFO named by `FIFO` for reading (which tells the test it is inside the
//   call) and never answers;
// - `rpc-flood`: a JSON-RPC error whose message is 300,000 characters;
// - `then-garbage`: answers `fine`, then writes a line that is not JSON-RPC (a stray log line);
// - `cancelled`: the ids of the requests the client cancelled (`notifications/cancelled`).
import { open } from "node:fs/promises"

const mode = process.env["MODE"] ?? "normal"
const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`)
const result = (id, value) => send({ jsonrpc: "2.0", id, result: value })
const text = (id, value) => result(id, { content: [{ type: "text", text: value }] })
const tools = ["echo", "hang", "rpc-flood", "then-garbage", "cancelled"].map((name) => ({ name, inputSchema: { type: "object" } }))
const cancelled = []

const call = (id, name, args) => {
  switch (name) {
    case "echo":
      return text(id, `echo ${args?.message}`)
    case "hang":
      // Held open: the call hangs until the client cancels it or the process ends.
      return void open(process.env["FIFO"], "r")
    case "rpc-flood":
      return send({ jsonrpc: "2.0", id, error: { code: -32000, message: "E".repeat(300_000) } })
    case "then-garbage":
      text(id, "fine")
      return void process.stdout.write("listening on stdio\n")
    case "cancelled":
      return text(id, JSON.stringify(cancelled))
    default:
      return send({ jsonrpc: "2.0", id, error: { code: -32602, message: `no tool ${name}` } })
  }
}

const handle = (message) => {
  if (message.method === "notifications/cancelled") return void cancelled.push(message.params?.requestId)
  if (message.id === undefined || message.method === undefined) return
  switch (message.method) {
    case "initialize":
      return result(message.id, {
        protocolVersion: mode === "wrong-version" ? "2024-11-05" : message.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "scripted", version: "1.0.0" }
      })
    case "tools/list":
      return result(message.id, { tools })
    case "tools/call":
      return call(message.id, message.params?.name, message.params?.arguments)
    default:
      return send({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "Method not found" } })
  }
}

let buffer = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk) => {
  buffer += chunk
  let end
  while ((end = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, end)
    buffer = buffer.slice(end + 1)
    if (line.trim() !== "") handle(JSON.parse(line))
  }
})
process.stdin.on("end", () => process.exit(0))
