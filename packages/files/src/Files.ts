/**
 * The file capability: six tools the model uses on a workspace directory, registered by one
 * Layer.
 *
 * | tool | does |
 * |---|---|
 * | `read` | a text file with numbered lines; whole up to `maxReadBytes`, or a range (`offset`, `limit`) of any size |
 * | `write` | creates or replaces a file atomically, creating missing directories |
 * | `edit` | replaces an exact text (unique, or every occurrence with `replaceAll`), atomically, with a compact diff |
 * | `list` | a directory's entries (directories `/`, files with sizes, links `@`) |
 * | `glob` | the paths matching a glob pattern |
 * | `search` | the lines containing a text or matching a regular expression, as `path:line: excerpt` |
 *
 * Every path is resolved under the workspace root: `..` or an absolute path outside it, and a
 * symbolic link leading out of it, are refused with `TOOL_DENIED` — including a link created
 * while the call runs (see docs/adr/0020-file-tools-confinement.md for what is guaranteed).
 * Failures reach the model as tool results with their codes: `FILE_NOT_FOUND`, `FILE_IO`
 * (with the system's code), `FILE_BINARY`, `FILE_TOO_LARGE`, `EDIT_NOT_FOUND`,
 * `EDIT_AMBIGUOUS`, `INVALID_ARGS` (a regular expression that does not compile, a glob pattern
 * with a `[` or `{` left open).
 *
 * Inside an agent, `write` and `edit` record each file they change in the agent's session as
 * a {@link Changed} event.
 *
 * @example
 * ```ts
 * import { Files } from "@dsh/files"
 * import { ToolRegistry } from "@dsh/tools"
 * import { Layer } from "effect"
 *
 * const ToolsLive = Files.layer({ root: "." }).pipe(Layer.provideMerge(ToolRegistry.layer))
 * ```
 *
 * @since 0.1.0
 */
import type { SessionEvent } from "@dsh/session"
import { type ToolErrors, ToolRegistry } from "@dsh/tools"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import type { FileIoError, FileNotFoundError } from "./FileError.ts"
import type * as Access from "./internal/access.ts"
import * as Events from "./internal/events.ts"
import * as Tools from "./internal/tools.ts"
import * as Workspace from "./internal/workspace.ts"

/**
 * The names the tools are registered under (what permission policies refer to).
 *
 * @since 0.1.0
 * @category models
 */
export type ToolName = Access.ToolName

/**
 * Every tool name, in registration order.
 *
 * @since 0.1.0
 * @category constants
 */
export const toolNames: ReadonlyArray<ToolName> = Tools.toolNames

/**
 * The tools that change nothing (`concurrencySafe`: they may run in parallel).
 *
 * @since 0.1.0
 * @category constants
 */
export const readOnlyToolNames: ReadonlyArray<ToolName> = ["read", "list", "glob", "search"]

/**
 * What {@link layer} takes. Sizes are in bytes; every bound is an integer of at least 1. Options
 * the tools cannot work with (an unknown tool name, a bound of 0, `NaN` or 1.5, a malformed
 * ignore pattern) fail the Layer's build with `INVALID_TOOL` naming them, rather than being
 * replaced by defaults.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The workspace root: the directory every path is resolved under (relative to the process's directory). */
  readonly root: string
  /** Which tools to register (default: all of {@link toolNames}; e.g. {@link readOnlyToolNames}). */
  readonly tools?: ReadonlyArray<ToolName> | undefined
  /**
   * Glob patterns of the names (or root-relative paths) that `glob` and `search` do not enter
   * or report (default: {@link defaultIgnore}). A path given to the tool inside an ignored
   * directory is searched all the same.
   */
  readonly ignore?: ReadonlyArray<string> | undefined
  /** The largest file `read` shows whole, and the most it shows of a range (default: 256 KiB). */
  readonly maxReadBytes?: number | undefined
  /** The largest file `edit` changes (default: 4 MiB). */
  readonly maxEditBytes?: number | undefined
  /** Larger files are skipped by `search` (default: 1 MiB). */
  readonly maxSearchFileBytes?: number | undefined
  /** Longer lines are cut in what `read` shows (default: 2000 characters). */
  readonly maxLineLength?: number | undefined
  /** How many entries `glob` and `search` look at before they stop and say so (default: 100,000). */
  readonly maxWalkEntries?: number | undefined
}

/**
 * What `glob` and `search` skip unless told otherwise.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultIgnore: ReadonlyArray<string> = Tools.defaultIgnore

/**
 * The `files:changed` session event: a file `write` or `edit` created, replaced or edited
 * (`path` root-relative with links resolved, `bytes` its new size, `callId` the call).
 *
 * @since 0.1.0
 * @category events
 */
export const Changed: SessionEvent.Definition<"files:changed", ChangedData> = Events.Changed

/**
 * The data of a {@link Changed} event.
 *
 * @since 0.1.0
 * @category events
 */
export type ChangedData = Events.ChangedData

/**
 * What building the Layer can fail with: options that are invalid (`INVALID_TOOL`, reason
 * `"options"`, the message naming each option and what is wrong with it), a root that does
 * not exist or is not a directory, or a tool name already taken in the registry.
 *
 * @since 0.1.0
 * @category models
 */
export type LayerError = FileNotFoundError | FileIoError | ToolErrors.RegistrationError

/**
 * Registers the file tools for the Layer's lifetime, confined to `options.root`, over the
 * `FileSystem` and `Path` of the context (use {@link layer} for Node's).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNoDeps = (
  options: Options
): Layer.Layer<never, LayerError, ToolRegistry | FileSystem.FileSystem | Path.Path> =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const refused = Tools.checkOptions(options)
      if (refused !== undefined) return yield* refused
      const workspace = yield* Workspace.make(options.root, {
        descriptors: true,
        fs: yield* FileSystem.FileSystem,
        path: yield* Path.Path
      })
      const settings = Tools.settings(workspace, options)
      const registry = yield* ToolRegistry
      for (const name of options.tools ?? toolNames) yield* registry.register(Tools.make(name, settings))
    })
  )

/**
 * Registers the file tools for the Layer's lifetime, confined to `options.root`, on Node's
 * file system. The root is opened when the Layer is built (it must exist and be a
 * directory) and stays open while the Layer lives.
 *
 * @example
 * ```ts
 * import { Files } from "@dsh/files"
 * import { ToolRegistry } from "@dsh/tools"
 * import { Layer } from "effect"
 *
 * // a read-only agent: read, list, glob and search, nothing that writes
 * const ReadOnly = Files.layer({ root: "/srv/project", tools: Files.readOnlyToolNames }).pipe(
 *   Layer.provideMerge(ToolRegistry.layer)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<never, LayerError, ToolRegistry> =>
  layerNoDeps(options).pipe(Layer.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)))
