/**
 * What every command runs on: Node's file system, path and stdio, and — for `effect/cli`, whose
 * environment names them for its prompts and wizard, which dsh does not turn on — a terminal
 * and a child-process spawner provided on demand. `dsh chat` opens a terminal of its own and
 * bash brings its own spawner, so nothing of dsh uses these two; Node's implementations (and
 * `node:readline`, `node:child_process` under them) are loaded only if something ever does,
 * instead of on every start (ADR 0029).
 *
 * @since 0.1.0
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import * as Scope from "effect/Scope"
import * as Terminal from "effect/Terminal"
import { ChildProcessSpawner } from "effect/process"

/**
 * A terminal that loads `NodeTerminal` on its first use, made in the scope of the Layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const terminalOnDemand: Layer.Layer<Terminal.Terminal> = Layer.effect(
  Terminal.Terminal,
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const node = yield* Effect.cached(
      Effect.flatMap(Effect.promise(() => import("@effect/platform-node/NodeTerminal")), (module) => module.make()).pipe(
        Scope.provide(scope)
      )
    )
    const use = <A, E, R>(f: (terminal: Terminal.Terminal) => Effect.Effect<A, E, R>) => Effect.flatMap(node, f)
    return Terminal.make({
      columns: use((t) => t.columns),
      rows: use((t) => t.rows),
      size: use((t): Effect.Effect<Effect.Success<Terminal.Terminal["size"]>, never, Scope.Scope> => t.size),
      readInput: use((t) => t.readInput),
      readLine: use((t) => t.readLine),
      display: (text) => use((t) => t.display(text))
    })
  })
)

/**
 * A child-process spawner that loads `NodeChildProcessSpawner` on its first spawn.
 *
 * @since 0.1.0
 * @category layers
 */
export const spawnerOnDemand: Layer.Layer<ChildProcessSpawner.ChildProcessSpawner, never, FileSystem.FileSystem | Path.Path> =
  Layer.effect(
    ChildProcessSpawner.ChildProcessSpawner,
    Effect.gen(function*() {
      const scope = yield* Effect.scope
      const services = Layer.mergeAll(
        Layer.succeed(FileSystem.FileSystem, yield* FileSystem.FileSystem),
        Layer.succeed(Path.Path, yield* Path.Path)
      )
      const node = yield* Effect.cached(
        Effect.flatMap(
          Effect.promise(() => import("@effect/platform-node/NodeChildProcessSpawner")),
          (module) =>
            Effect.map(
              Layer.buildWithScope(module.layer.pipe(Layer.provide(services)), scope),
              (context) => Context.get(context, ChildProcessSpawner.ChildProcessSpawner)
            )
        )
      )
      return ChildProcessSpawner.make((command) => Effect.flatMap(node, (spawner) => spawner.spawn(command)))
    })
  )

/**
 * The platform of every command: `NodeServices`' services, the terminal and the spawner on
 * demand.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = Layer.mergeAll(terminalOnDemand, NodeStdio.layer, spawnerOnDemand).pipe(
  Layer.provideMerge(Layer.merge(NodeFileSystem.layer, NodePath.layer))
)
