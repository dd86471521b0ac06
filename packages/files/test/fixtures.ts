/**
 * Fixtures of the file tools' tests (not a test file: vitest runs `*.test.ts` only): a
 * temporary workspace on the real file system, the tools registered over it, and calls
 * executed through the registry the way the loop executes them.
 */
import { Files } from "@dsh/files"
import { Content, Ids } from "@dsh/llm"
import { ToolRegistry, ToolResult } from "@dsh/tools"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { Effect, FileSystem, Layer, Path } from "effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import * as Tools from "../src/internal/tools.ts"
import * as Workspace from "../src/internal/workspace.ts"

/** A fresh directory, removed when the scope closes. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), "dsh-files-")))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** Writes files (path → content) under `root`, creating their directories. */
export const populate = (root: string, files: Record<string, string | Uint8Array>) => {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), content)
  }
}

let calls = 0

/** A tool call with a fresh id. */
export const call = (name: string, args: object | string): Content.ToolCallBlock =>
  Content.toolCall(Ids.callId(`call-${++calls}`), name, typeof args === "string" ? args : JSON.stringify(args))

/** Executes a call through the registry. */
export const execute = (name: string, args: object | string) =>
  ToolRegistry.use((registry) => registry.execute(call(name, args)))

/** Half of a surrogate pair, alone: what is no UTF-8 on the wire. */
export const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** The text of a result. */
export const textOf = ToolResult.textOf

/** A result's code, `ok` for a success. */
export const codeOf = (result: Content.ToolResultBlock): string => result.error?.code ?? "ok"

/** The public Layer over `root`, with a registry. */
export const filesLayer = (root: string, options: Omit<Files.Options, "root"> = {}) =>
  Files.layer({ root, ...options }).pipe(Layer.provideMerge(ToolRegistry.layer))

/**
 * The tools over `root` in a chosen confinement mode, on a chosen FileSystem (the real one by
 * default, or the real one with an adversary acting at a chosen call).
 */
export const modeLayer = (
  root: string,
  options: {
    readonly descriptors: boolean
    readonly fileSystem?: Layer.Layer<FileSystem.FileSystem> | undefined
    readonly limits?: Tools.Limits | undefined
  }
) =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const workspace = yield* Workspace.make(root, {
        descriptors: options.descriptors,
        fs: yield* FileSystem.FileSystem,
        path: yield* Path.Path
      })
      const registry = yield* ToolRegistry
      for (const name of Tools.toolNames) yield* registry.register(Tools.make(name, Tools.settings(workspace, options.limits ?? {})))
    })
  ).pipe(
    Layer.provideMerge(ToolRegistry.layer),
    Layer.provide(Layer.mergeAll(options.fileSystem ?? NodeFileSystem.layer, NodePath.layer)),
    Layer.orDie
  )

/** The confinement mode the system gives (descriptors where `/proc/self/fd` anchors lookups). */
export const systemMode = (root: string) =>
  Effect.scoped(
    Effect.gen(function*() {
      const workspace = yield* Workspace.make(root, {
        descriptors: true,
        fs: yield* FileSystem.FileSystem,
        path: yield* Path.Path
      })
      return workspace.mode
    })
  ).pipe(Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)), Effect.orDie)

/**
 * The real file system, with `act` run once, right after the `nth` call of `method` whose path
 * ends with `suffix` succeeded (`rename`: right before it): an adversary changing the tree at
 * that exact moment.
 */
export const adversary = (
  method: "lstat" | "readLink" | "readDirectoryEntries" | "rename" | "makeDirectory",
  suffix: string,
  act: () => void,
  nth = 1
): Layer.Layer<FileSystem.FileSystem> =>
  Layer.effect(
    FileSystem.FileSystem,
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      let seen = 0
      const after = (path: string) =>
        Effect.sync(() => {
          if (path.endsWith(suffix) && ++seen === nth) act()
        })
      const wrapped: FileSystem.FileSystem = {
        ...fs,
        lstat: (path) => Effect.tap(fs.lstat(path), () => (method === "lstat" ? after(path) : Effect.void)),
        readLink: (path) => Effect.tap(fs.readLink(path), () => (method === "readLink" ? after(path) : Effect.void)),
        readDirectoryEntries: (path) =>
          Effect.tap(
            fs.readDirectoryEntries(path),
            () => (method === "readDirectoryEntries" ? after(path) : Effect.void)
          ),
        rename: (from, to) =>
          // before: the adversary acts between everything checked and the rename itself
          Effect.andThen(method === "rename" ? after(to) : Effect.void, fs.rename(from, to)),
        makeDirectory: (path, options) =>
          Effect.tap(fs.makeDirectory(path, options), () => (method === "makeDirectory" ? after(path) : Effect.void))
      }
      return wrapped
    })
  ).pipe(Layer.provide(NodeFileSystem.layer))
