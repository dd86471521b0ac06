/**
 * The MCP servers file (`--mcp`): each server decoded as the kind its keys say, every mistake
 * reported with its path and against that kind's fields only.
 */
import { McpNames } from "@dsh/mcp"
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as McpConfig from "../src/cli/McpConfig.ts"

const refusal = (file: unknown): string => {
  const decoded = McpConfig.decode(JSON.stringify(file), "/conf/mcp.json")
  if (Result.isSuccess(decoded)) throw new Error("decoded")
  expect(decoded.failure.code).toBe("CONFIG_INVALID")
  return decoded.failure.message
}

const expectedForm = ` (expected { "mcpServers": { "<name>": { "command", "args" } or { "url" } } })`

describe("McpConfig.decode", () => {
  it("takes stdio and HTTP servers as their keys say", () => {
    const file = {
      mcpServers: {
        local: { command: "node", args: ["server.js"], env: { A: "1" }, timeout: 5000 },
        remote: { url: "https://mcp.example.com/mcp", headers: { authorization: "Bearer x" } }
      }
    }
    expect(Result.getOrThrow(McpConfig.decode(JSON.stringify(file), "/conf/mcp.json"))).toStrictEqual(file)
  })

  it("reports each server's mistakes against its own kind, every one with its path", () => {
    expect(refusal({
      mcpServers: {
        stdio: { command: "x", headers: {} },
        ftp: { url: "ftp://files.example.com" },
        both: { url: "https://x.example", command: "y" },
        number: 3,
        slow: { url: "not a url", timeout: 0 },
        neither: { args: ["x"] }
      }
    })).toBe(
      "--mcp /conf/mcp.json: " + [
        "mcpServers.stdio.headers: Expected no excess property",
        "mcpServers.ftp.url: expected an http: or https: URL, got ftp:",
        `mcpServers.both: give either "command" (a stdio server) or "url" (an HTTP server), not both`,
        `mcpServers.number: expected a server: { "command" } (stdio) or { "url" } (HTTP)`,
        "mcpServers.slow.timeout: Expected a value greater than or equal to 1",
        `mcpServers.neither: expected "command" (a stdio server) or "url" (an HTTP server)`
      ].join("; ") + expectedForm
    )
  })

  it("a server name MCP tool names cannot carry is listed with the other mistakes, when the name rule is given", () => {
    const file = { mcpServers: { "a b": { command: "node" }, ok: { command: "node" }, bad: { url: "ftp://x" } } }
    const decoded = McpConfig.decode(JSON.stringify(file), "/conf/mcp.json", "--mcp", McpNames.serverNameProblem)
    if (Result.isSuccess(decoded)) throw new Error("decoded")
    expect(decoded.failure.code).toBe("CONFIG_INVALID")
    expect(decoded.failure.message).toContain("mcpServers.a b: a server name must be letters, digits")
    expect(decoded.failure.message).toContain("mcpServers.bad.url: expected an http: or https: URL, got ftp:")
    expect(Result.isSuccess(McpConfig.decode(JSON.stringify(file), "/conf/mcp.json"))).toBe(false)
  })

  it("a URL that does not parse is named as such", () => {
    expect(refusal({ mcpServers: { bad: { url: "not a url" } } })).toBe(
      `--mcp /conf/mcp.json: mcpServers.bad.url: expected an http(s) URL, got "not a url"${expectedForm}`
    )
  })

  it("a file that is no servers file, or not JSON, is named with the source", () => {
    expect(refusal({ servers: {} })).toBe(
      `--mcp /conf/mcp.json: servers: Expected no excess property; mcpServers: Missing key${expectedForm}`
    )
    expect(refusal([])).toBe(`--mcp /conf/mcp.json: (the file): Expected object${expectedForm}`)
    const notJson = McpConfig.decode("{", "/conf/mcp.json", "/conf/dsh.json (mcp)")
    expect(Result.isFailure(notJson) && notJson.failure.message).toMatch(/^\/conf\/dsh\.json \(mcp\): \/conf\/mcp\.json: not JSON: /)
  })
})
