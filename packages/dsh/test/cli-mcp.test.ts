/**
 * `dsh run --mcp <file>` as a real process: the tools of the MCP servers the file names (here
 * the reference server `@modelcontextprotocol/server-everything` over stdio, with this Node),
 * named `<server>__<tool>`, under the policy that asks before every MCP tool — refused in a
 * headless run unless `--yes` — and a bad file is a usage error.
 */
import { describe, expect, it } from "@effect/vitest"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { dsh, makeHome, messagesOf, server, text, toolCall, writeEverythingServers } from "./cli-helpers.ts"

const slow = { timeout: 120_000 }

describe("dsh run --mcp", slow, () => {
  it("a server's tool runs under its prefixed name with --yes, and its result reaches the model", async () => {
    const home = makeHome()
    const file = writeEverythingServers(home)
    const fake = await server([toolCall("everything__echo", { message: "hello over MCP" }), text("It echoed.")])
    const result = await dsh(home, ["run", "Echo something", "--mcp", file, "--tools", "none", "--yes", "--base-url", fake.url])
    await fake.close()
    expect(result.stderr).toMatch(/ {2}✓ everything__echo [\d.]+s/)
    expect(result.stdout).toBe("It echoed.\n")
    expect(result.status).toBe(0)
    // the first request offered the server's tools; the second carried the tool's answer
    const first = fake.requests()[0]?.json as { tools?: ReadonlyArray<{ function: { name: string } }> } | undefined
    const tools = first?.tools ?? []
    expect(tools.map((t) => t.function.name)).toContain("everything__echo")
    expect(messagesOf(fake.requests()[1]).find((m) => m.role === "tool")?.content).toContain("hello over MCP")
  })

  it("without --yes the policy's question has no one to answer it: TOOL_DENIED, the turn goes on", async () => {
    const home = makeHome()
    const file = writeEverythingServers(home)
    const fake = await server([toolCall("everything__echo", { message: "hi" }), text("Refused.")])
    const result = await dsh(home, ["run", "Echo something", "--mcp", file, "--tools", "none", "--base-url", fake.url])
    await fake.close()
    expect(result.stderr).toMatch(/ {2}✗ everything__echo [\d.]+s TOOL_DENIED: /)
    expect(result.status).toBe(0)
  })

  it("a file that is not an MCP servers file: CONFIG_INVALID naming it, exit 2", async () => {
    const home = makeHome()
    const file = join(home.cwd, "mcp.json")
    writeFileSync(file, JSON.stringify({ mcpServers: { broken: { args: ["x"] } } }))
    const result = await dsh(home, ["run", "Hi", "--mcp", file, "--tools", "none"])
    expect(result.stderr).toContain("dsh: CONFIG_INVALID: ")
    expect(result.stderr).toContain(file)
    expect(result.status).toBe(2)
  })
})
