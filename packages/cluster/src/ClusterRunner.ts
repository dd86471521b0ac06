/**
 * A whole runner process: the agent entity (`AgentHost`) on the loop's agent graph over a
 * model adapter, its sessions in PostgreSQL (`PgSessions`), and `effect/cluster`'s sharding on
 * the same database (`SqlMessageStorage`, `SqlRunnerStorage`: the cluster's messages, replies,
 * runners and shard locks) with the runners talking over sockets
 * (`@effect/platform-node`'s `NodeClusterSocket`).
 *
 * @example
 * ```ts
 * import { ClusterRunner } from "@dsh/cluster"
 * import { ScriptedModel } from "@dsh/model"
 * import { Layer } from "effect"
 * import { NodeRuntime } from "@effect/platform-node"
 *
 * const Runner = ClusterRunner.layer({
 *   database: "postgres://dsh@127.0.0.1:5432/dsh",
 *   address: { host: "127.0.0.1", port: 34431 },
 *   model: ScriptedModel.layer({ script: [ScriptedModel.reply.text("Hi!")] }),
 *   agent: { model: "scripted" }
 * })
 * Layer.launch(Runner).pipe(NodeRuntime.runMain)
 * ```
 *
 * @since 0.1.0
 */
import { AgentHooks } from "@dsh/agent"
import { AdapterSettings } from "@dsh/llm"
import { AgentLoop } from "@dsh/loop"
import { Model, ModelRegistry } from "@dsh/model"
import { SystemPrompt } from "@dsh/prompt"
import { FlushCheckpoint, type SessionErrors, SessionStore } from "@dsh/session"
import { PgSessions } from "@dsh/sql-sessions"
import { ToolRegistry } from "@dsh/tools"
import { NodeClusterSocket } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type { MessageStorage, Runners, Sharding } from "effect/cluster"
import type { SqlClient, SqlError } from "effect/sql"
import type { SocketServer } from "effect/socket"
import * as AgentHost from "./AgentHost.ts"
import { ClusterConfigError } from "./ClusterErrors.ts"
import * as ClusterConfig from "./internal/config.ts"
import * as Database from "./internal/database.ts"

/**
 * Options of {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<ROut, E, RIn> {
  /** The PostgreSQL database of the cluster: sessions, messages, runners, shard locks. */
  readonly database: string | Redacted.Redacted<string>
  /** Where this runner listens and where the others reach it. */
  readonly address: { readonly host: string; readonly port: number }
  /** The model adapter's Layer (`DeepSeek.layer()`, `ScriptedModel.layer({ script })`, …). */
  readonly model: Layer.Layer<ROut, E, RIn>
  /** How each hosted agent is created (its model, prompt, limits) and how long it idles. */
  readonly agent: AgentHost.Options
  /**
   * The cluster's sharding settings over `effect/cluster`'s defaults (lease and poll intervals,
   * `shardsPerGroup`, …). `shardsPerGroup` must be the same on every runner and client. Nothing
   * is read from the environment.
   */
  readonly sharding?: ClusterConfig.Overrides
}

/**
 * The runner: serves the agent entity for the shards it holds. It fails to build with the
 * model Layer's error, a `PersistenceError` when the session tables cannot be migrated, a
 * `SqlError` when the database cannot be reached, a `SocketServerError` when the address is
 * taken, and `ClusterConfigError` (`CONFIG_INVALID`), before anything starts, for options past
 * their types (a port out of range, a database that is no URL, a model that is no Layer, a
 * sharding setting that is no duration or count, an unknown key), each named.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <ROut, E, RIn>(
  options: Options<ROut, E, RIn>
): Layer.Layer<
  Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage | SqlClient.SqlClient | ROut,
  E | SessionErrors.PersistenceError | SqlError.SqlError | SocketServer.SocketServerError | Config.ConfigError | ClusterConfigError,
  Exclude<RIn, Model | ModelRegistry>
> => {
  const problems = optionsProblems(options)
  return problems.length === 0
    ? runner(options)
    : Layer.unwrap(Effect.fail(new ClusterConfigError({ message: `the cluster runner was not started: ${problems.join("; ")}` })))
}

const optionNames = ["database", "address", "model", "agent", "sharding"]

const optionsProblems = (options: unknown): ReadonlyArray<string> => {
  const shape = ClusterConfig.objectProblems("the options", options, "{ database, address, model, agent, sharding? }")
  if (shape.length > 0) return shape
  const given = options as Partial<Record<string, unknown>>
  const unknown = AdapterSettings.unknownKeys("the options object", given, optionNames)
  return [
    ...(unknown === undefined ? [] : [unknown]),
    ...ClusterConfig.databaseProblems(given["database"]),
    ...ClusterConfig.addressProblems(given["address"]),
    ...ClusterConfig.layerProblems("model", given["model"]),
    ...ClusterConfig.objectProblems("agent", given["agent"], "the options of the hosted agents ({ model, … })"),
    ...ClusterConfig.shardingProblems(given["sharding"])
  ]
}

const runner = <ROut, E, RIn>(options: Options<ROut, E, RIn>) => {
  const url = typeof options.database === "string" ? Redacted.make(options.database) : options.database
  const database = PgClient.layer({ url, applicationName: `dsh runner ${options.address.host}:${options.address.port}` })
  const model = options.model.pipe(Layer.provideMerge(Model.layer))
  const sessions = PgSessions.layer().pipe(Layer.provideMerge(Layer.mergeAll(SessionStore.layer, FlushCheckpoint.layer)))
  const agents = AgentLoop.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(model, sessions, ToolRegistry.layer, SystemPrompt.layer, AgentHooks.layer))
  )
  const sharding = NodeClusterSocket.layer({
    storage: "sql",
    shardingConfig: ClusterConfig.complete(options.sharding, options.address)
  }).pipe(Layer.provide(Database.reachable))
  return AgentHost.layer(options.agent).pipe(
    Layer.provideMerge(agents),
    Layer.provideMerge(sharding),
    Layer.provideMerge(database)
  )
}
