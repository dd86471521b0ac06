/**
 * The tools from the Layer's options: the settings with their defaults, and each tool by name.
 */
import type { HarnessError } from "@dsh/llm"
import type { Tool } from "@dsh/tools"
import * as Glob from "effect/Glob"
import type { Settings, ToolName } from "./access.ts"
import * as Edit from "./edit.ts"
import * as List from "./list.ts"
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

// a bound that is not a positive number is the default, not a tool that can do nothing
const positive = (value: number | undefined, fallback: number): number =>
  value !== undefined && Number.isFinite(value) && value >= 1 ? Math.floor(value) : fallback

/** The settings of the tools on `workspace`, defaults applied. */
export const settings = (workspace: Workspace, limits: Limits): Settings => ({
  workspace,
  maxReadBytes: positive(limits.maxReadBytes, 256 * 1024),
  maxEditBytes: positive(limits.maxEditBytes, 4 * 1024 * 1024),
  maxSearchFileBytes: positive(limits.maxSearchFileBytes, 1024 * 1024),
  maxLineLength: positive(limits.maxLineLength, 2000),
  maxWalkEntries: positive(limits.maxWalkEntries, 100_000),
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
