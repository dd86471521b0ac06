/**
 * Session stores in SQL databases for dsh: `PgSessions`, the session log in PostgreSQL through
 * `effect/sql` and `@effect/sql-pg`, with the contract of the JSONL store (`JsonlSessions` of
 * `@dsh/session`, which stays the embedded default).
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as PgSessions from "./PgSessions.ts"
