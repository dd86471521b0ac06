/**
 * dsh agents on Effect Cluster: an agent addressed by its session id as an `effect/cluster`
 * entity (`AgentEntity`), served by runners (`AgentHost`, `ClusterRunner`) that keep sessions,
 * the cluster's messages and its shard assignments in one PostgreSQL database, and reached from
 * any process of the cluster (`ClusterClient`). When a runner dies, its agents move to another
 * runner and resume from the database. See docs/cluster.md.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as AgentEntity from "./AgentEntity.ts"
/** @since 0.1.0 */
export * as AgentHost from "./AgentHost.ts"
/** @since 0.1.0 */
export * as ClusterClient from "./ClusterClient.ts"
/** @since 0.1.0 */
export * as ClusterErrors from "./ClusterErrors.ts"
/** @since 0.1.0 */
export { TurnInterruptedError } from "./ClusterErrors.ts"
/** @since 0.1.0 */
export * as ClusterRunner from "./ClusterRunner.ts"
