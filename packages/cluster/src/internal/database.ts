/**
 * The cluster's database, reached before `effect/cluster`'s SQL storage is built: that storage
 * dies when the database cannot be reached (its migrations and its runner storage are built
 * `orDie`), so an unreachable, unknown or malformed `database` would be a defect of the layer's
 * build instead of its typed `SqlError`.
 */
import * as Layer from "effect/Layer"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

/** Fails the build with the database's `SqlError` when a first statement cannot run on it. */
export const reachable: Layer.Layer<never, SqlError, SqlClient.SqlClient> = Layer.effectDiscard(
  SqlClient.SqlClient.use((sql) => sql`SELECT 1`)
)
