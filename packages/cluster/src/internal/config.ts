/**
 * The sharding configuration of dsh's runners and clients: `effect/cluster`'s defaults with the
 * caller's overrides, complete, so that nothing is read from the environment (the cluster
 * layers also read `HOST`, `PORT`, `SHARDS_PER_GROUP`, …: a stray `PORT` would move a runner).
 */
import { AdapterSettings } from "@dsh/llm"
import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import { RunnerAddress, ShardingConfig } from "effect/cluster"

/** Overrides of the cluster's sharding settings (`ShardingConfig`). */
export type Overrides = Partial<ShardingConfig.ShardingConfig["Service"]>

/** The whole configuration: defaults, then `overrides`, then the runner address (none for a client). */
export const complete = (
  overrides: Overrides | undefined,
  address: { readonly host: string; readonly port: number } | undefined
): ShardingConfig.ShardingConfig["Service"] => ({
  ...ShardingConfig.defaults,
  ...overrides,
  runnerAddress: address === undefined ? Option.none() : Option.some(RunnerAddress.make(address.host, address.port)),
  runnerListenAddress: overrides?.runnerListenAddress ?? Option.none()
})

// set from `address`, never by an override
const settable = Object.keys(ShardingConfig.defaults).filter((key) => key !== "runnerAddress")

/** What is wrong with one sharding setting, judged by the kind of its default. */
const settingProblem = (key: string, value: unknown): string | undefined => {
  const fallback: unknown = (ShardingConfig.defaults as Record<string, unknown>)[key]
  const name = `sharding.${key}`
  if (Duration.isDuration(fallback)) {
    const read = AdapterSettings.duration(name, value as Duration.Input, key === "runnerJoinDebounce" ? "non-negative" : "positive")
    return Result.isFailure(read) ? read.failure : undefined
  }
  if (typeof fallback === "number") {
    return Number.isSafeInteger(value) && (value as number) >= 1 ? undefined : `${name} must be an integer ≥ 1, got ${AdapterSettings.shown(value)}`
  }
  if (typeof fallback === "boolean") return typeof value === "boolean" ? undefined : `${name} must be true or false, got ${AdapterSettings.shown(value)}`
  if (Array.isArray(fallback)) {
    return Array.isArray(value) && value.length > 0 && value.every((group) => typeof group === "string" && group !== "")
      ? undefined
      : `${name} must be a non-empty list of shard group names, got ${AdapterSettings.shown(value)}`
  }
  return Option.isOption(value) ? undefined : `${name} must be an Option, got ${AdapterSettings.shown(value)}`
}

/** What is wrong with the sharding overrides: each setting of the wrong kind, each unknown key. */
export const shardingProblems = (overrides: unknown): ReadonlyArray<string> => {
  if (overrides === undefined) return []
  if (typeof overrides !== "object" || overrides === null || Array.isArray(overrides)) {
    return [`sharding must be an object of sharding settings, got ${AdapterSettings.shown(overrides)}`]
  }
  const unknown = AdapterSettings.unknownKeys("sharding", overrides, settable)
  const problems = Object.entries(overrides).flatMap(([key, value]) =>
    settable.includes(key) && value !== undefined ? [settingProblem(key, value)].filter((p) => p !== undefined) : []
  )
  return unknown === undefined ? problems : [unknown, ...problems]
}

/** What is wrong with a database setting: a URL as text, or a `Redacted` one. */
export const databaseProblems = (database: unknown): ReadonlyArray<string> => {
  const url = Redacted.isRedacted(database) ? Redacted.value(database) : database
  return typeof url === "string" && url.trim() !== ""
    ? []
    : [`database must be a PostgreSQL URL (text or Redacted text), got ${Redacted.isRedacted(database) ? "a Redacted value that is no text" : AdapterSettings.shown(database)}`]
}

/** What is wrong with a runner's address: a host name and a port from 0 to 65535. */
export const addressProblems = (address: unknown): ReadonlyArray<string> => {
  if (typeof address !== "object" || address === null || Array.isArray(address)) {
    return [`address must be { host, port }, got ${AdapterSettings.shown(address)}`]
  }
  const { host, port } = address as { readonly host?: unknown; readonly port?: unknown }
  return [
    ...(typeof host === "string" && host !== "" ? [] : [`address.host must be a host name or IP address, got ${AdapterSettings.shown(host)}`]),
    ...(Number.isSafeInteger(port) && (port as number) >= 0 && (port as number) <= 65535
      ? []
      : [`address.port must be an integer from 0 to 65535, got ${AdapterSettings.shown(port)}`])
  ]
}

/** Problems of options an options object must be first. */
export const objectProblems = (what: string, options: unknown, expected: string): ReadonlyArray<string> =>
  typeof options === "object" && options !== null && !Array.isArray(options)
    ? []
    : [`${what} must be ${expected}, got ${AdapterSettings.shown(options)}`]

/** A Layer that is no Layer, past the types. */
export const layerProblems = (what: string, layer: unknown): ReadonlyArray<string> =>
  Layer.isLayer(layer) ? [] : [`${what} must be a Layer (DeepSeek.layer(), ScriptedModel.layer({ script }), …), got ${AdapterSettings.shown(layer)}`]
