/**
 * MCP tool names in dsh: `<server>__<tool>`, always within the providers' pattern, distinct
 * within a server, with the server recoverable from the name (what a permission policy uses).
 */
import { McpNames } from "@dsh/mcp"
import { Tool } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"

const named = (server: string, names: ReadonlyArray<string>) =>
  McpNames.assign(server, names).map((a) => (a._tag === "Named" ? a.name : `refused: ${a.reason}`))

describe("McpNames", () => {
  it("a name the providers accept keeps what the server calls the tool", () => {
    expect(named("fs", ["read_text_file", "get-tiny-image"])).toStrictEqual(["fs__read_text_file", "fs__get-tiny-image"])
  })

  it("other characters become _, one per code point", () => {
    expect(named("gh", ["issues.list", "repo/get", "emoji😀x"])).toStrictEqual(["gh__issues_list", "gh__repo_get", "gh__emoji_x"])
  })

  it("a name too long is cut and given the hash of the original, within 64 characters", () => {
    const long = "a".repeat(100)
    const [name] = named("server", [long])
    expect(name).toBe(`server__${"a".repeat(48)}_${McpNames.hash(long)}`)
    expect(name!.length).toBe(64)
    // two long names with the same beginning stay apart
    const [x, y] = named("server", [`${long}x`, `${long}y`])
    expect(x).not.toBe(y)
  })

  it("changed names that collide each get their hash; an untouched name keeps its own", () => {
    expect(named("s", ["a.b", "a_b", "a/b"])).toStrictEqual([
      `s__a_b_${McpNames.hash("a.b")}`,
      "s__a_b",
      `s__a_b_${McpNames.hash("a/b")}`
    ])
    // the order of the listing does not change who gets which name
    expect(named("s", ["a/b", "a.b", "a_b"])).toStrictEqual([
      `s__a_b_${McpNames.hash("a/b")}`,
      `s__a_b_${McpNames.hash("a.b")}`,
      "s__a_b"
    ])
  })

  it("a tool listed twice is refused the second time", () => {
    expect(named("s", ["x", "x"])).toStrictEqual(["s__x", "refused: the server lists a tool of this name twice"])
  })

  it("every assigned name matches the providers' pattern and is distinct", () => {
    const hostile = ["", ".", "__", "a".repeat(500), "ünïcödé", "tab\there", "x", "x.", "x/", "x_", "😀".repeat(40)]
    const names = McpNames.assign("my-server_1", hostile).flatMap((a) => (a._tag === "Named" ? [a.name] : []))
    expect(names.length).toBe(hostile.length)
    expect(names.every((n) => Tool.namePattern.test(n))).toBe(true)
    expect(new Set(names).size).toBe(names.length)
    expect(names.every((n) => McpNames.serverOf(n) === "my-server_1")).toBe(true)
  })

  it("server names: letters, digits, - and single _, never __ or a trailing _, at most 24", () => {
    for (const ok of ["fs", "my-server", "my_server", "a1", "github-2", "x".repeat(24)]) {
      expect(McpNames.serverNameProblem(ok)).toBeUndefined()
    }
    for (const bad of ["", "a__b", "a_", "_a", "-a", "a b", "a.b", "x".repeat(25)]) {
      expect(McpNames.serverNameProblem(bad)).toBeTypeOf("string")
    }
  })

  it("serverOf reads the server from a tool name; prefix builds it", () => {
    expect(McpNames.serverOf("fs__read_text_file")).toBe("fs")
    expect(McpNames.serverOf("my_server__a__b")).toBe("my_server")
    expect(McpNames.serverOf("bash")).toBeUndefined()
    expect(McpNames.serverOf("__x")).toBeUndefined()
    expect(McpNames.prefix("fs")).toBe("fs__")
  })
})
