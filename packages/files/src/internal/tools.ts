/**
 * The tools from the Layer's options: the settings with their defaults, and each tool by name.
 */
import { HarnessError } from "@dsh/llm"
import { type Tool, ToolErrors } from "@dsh/tools"
import * as Glob from "effect/Glob"
import type { Settings, ToolName } from "./access.ts"
import * as Edit from "./edit.ts"
import * as List from "./list.ts"
import { globProblem } from "./pattern.ts"
import * as Read from "./read.ts"
import * as Search from "./search.ts"
import type { Workspace } from "./workspace.ts"
import * as Write from "./write.ts"

/** Every tool name, in registration order. */
export const toolNames: ReadonlyArray<ToolName> = ["read", "write", "edit", "list", "glob", "search"]

/** What glob and search skip by default. */
export const defaultIgnore: ReadonlyArray<string> = [".git", "node_modules"]

/** The bounds and ignore patterns a Layer may set. */
export interface Limits {
  readonly ignore?: ReadonlyArray<string> | undefined
  readonly maxReadBytes?: number | undefined
  readonly maxEditBytes?: number | undefined
  readonly maxSearchFileBytes?: number | undefined
  readonly maxLineLength?: number | undefined
  readonly maxWalkEntries?: number | undefined
}

/** The bounds a Layer may set, and the tool each one shapes first (what a refusal names). */
const bounds = {
  maxReadBytes: "read",
  maxEditBytes: "edit",
  maxSearchFileBytes: "search",
  maxLineLength: "read",
  maxWalkEntries: "glob"
} as const satisfies Record<string, ToolName>

/** Every option of the Layer, in the order the documentation gives them. */
const optionNames: ReadonlyArray<string> = ["root", "tools", "ignore", ...Object.keys(bounds)]

// a value as a refusal shows it: a string quoted, so "10" is not read as the number 10
const shown = (value: unknown): string =>
  typeof value === "string" ? JSON.stringify(value) : typeof value === "number" ? String(value) : HarnessError.describe(value)

/**
 * What is wrong with the Layer's options, each problem naming its option (empty when nothing
 * is): a key that is no option (a misspelt bound would be ignored), a root that is not a
 * string, a tool name that is no file tool, an ignore pattern that is not a string or is
 * malformed (effect's Glob would match it literally, ignoring nothing), a bound that is not an
 * integer of at least 1. The types allow none of these; JavaScript callers and configuration
 * read at run time can still pass them.
 */
export const optionProblems = (
  options: Limits & { readonly root?: unknown; readonly tools?: ReadonlyArray<ToolName> | undefined }
): Array<{ readonly tool: string; readonly problem: string }> => {
  if (typeof options !== "object" || options === null) {
    return [{ tool: "read", problem: `the options must be an object ({ root, ... }), got ${shown(options)}` }]
  }
  const problems: Array<{ readonly tool: string; readonly problem: string }> = []
  for (const key of Object.keys(options)) {
    if (!optionNames.includes(key)) {
      problems.push({ tool: "read", problem: `${key} is not an option of the file tools (${optionNames.join(", ")})` })
    }
  }
  // an empty root would resolve to the process's working directory, which nobody named
  if (typeof options.root !== "string" || options.root.trim() === "") {
    problems.push({ tool: "read", problem: `root must be the workspace directory's path, got ${shown(options.root)}` })
  }
  const tools: unknown = options.tools
  if (tools !== undefined && !Array.isArray(tools)) {
    problems.push({ tool: "read", problem: `tools must be a list of tool names, got ${shown(tools)}` })
  } else if (tools !== undefined) {
    for (const [i, name] of (tools as ReadonlyArray<unknown>).entries()) {
      if (!toolNames.includes(name as ToolName)) {
        problems.push({
          tool: typeof name === "string" ? name : shown(name),
          problem: `tools[${i}] is ${shown(name)}, which is not a file tool (${toolNames.join(", ")})`
        })
      }
    }
  }
  const ignore: unknown = options.ignore
  if (ignore !== undefined && !Array.isArray(ignore)) {
    problems.push({ tool: "glob", problem: `ignore must be a list of glob patterns, got ${shown(ignore)}` })
  } else if (ignore !== undefined) {
    for (const [i, pattern] of (ignore as ReadonlyArray<unknown>).entries()) {
      const problem = typeof pattern !== "string" || pattern === ""
        ? "must be a non-empty glob pattern"
        : globProblem(pattern)
      if (problem !== undefined) problems.push({ tool: "glob", problem: `ignore[${i}] (${shown(pattern)}): ${problem}` })
    }
  }
  for (const [option, tool] of Object.entries(bounds)) {
    const value: unknown = options[option as keyof typeof bounds]
    if (value !== undefined && !(typeof value === "number" && Number.isSafeInteger(value) && value >= 1)) {
      problems.push({ tool, problem: `${option} must be an integer of at least 1, got ${shown(value)}` })
    }
  }
  return problems
}

/** The options' problems as the refusal the Layer fails with, or `undefined` when there are none. */
export const checkOptions = (
  options: Parameters<typeof optionProblems>[0]
): ToolErrors.InvalidToolError | undefined => {
  const problems = optionProblems(options)
  if (problems.length === 0) return undefined
  return new ToolErrors.InvalidToolError({
    tool: problems[0]!.tool,
    reason: "options",
    message: `The file tools' options are invalid (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n${
      problems.map((p) => `- ${p.problem}`).join("\n")
    }`
  })
}

/** The settings of the tools on `workspace`, defaults applied (the limits checked by {@link checkOptions}). */
export const settings = (workspace: Workspace, limits: Limits): Settings => ({
  workspace,
  maxReadBytes: limits.maxReadBytes ?? 256 * 1024,
  maxEditBytes: limits.maxEditBytes ?? 4 * 1024 * 1024,
  maxSearchFileBytes: limits.maxSearchFileBytes ?? 1024 * 1024,
  maxLineLength: limits.maxLineLength ?? 2000,
  maxWalkEntries: limits.maxWalkEntries ?? 100_000,
  ignore: (limits.ignore ?? defaultIgnore).map((pattern) => Glob.make(pattern, { dot: true }))
})

/** The tool of a name. */
export const make = (name: ToolName, settings: Settings): Tool.Tool<any, HarnessError.HarnessError, never> => {
  switch (name) {
    case "read":
      return Read.make(settings)
    case "write":
      return Write.make(settings)
    case "edit":
      return Edit.make(settings)
    case "list":
      return List.makeList(settings)
    case "glob":
      return List.makeGlob(settings)
    case "search":
      return Search.make(settings)
  }
}
