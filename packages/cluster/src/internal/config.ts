/**
 * The sharding configuration of dsh's runners and clients: `effect/cluster`'s defaults with the
 * caller's overrides, complete, so that nothing is read from the environment (the cluster
 * layers also read `HOST`, `PORT`, `SHARDS_PER_GROUP`, …: a stray `PORT` would move a runner).
 */
import * as Option from "effect/Option"
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
