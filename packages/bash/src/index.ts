/**
 * dsh bash capability: the Bash service (commands, background jobs), its local implementation on
 * effect/process, and the model-facing bash tools.
 *
 * - `Bash` — the interface: the `Bash.Bash` service and its vocabulary (results, exit status,
 *   bounded output, jobs).
 * - `BashLocal` — the implementation: commands as process groups of child processes, through
 *   `effect/process` and `@effect/platform-node`.
 * - `BashTools` — the consumer: the tools the model calls (`bash`, `bash_background`,
 *   `bash_output`, `bash_wait`, `bash_kill`, `bash_jobs`), which require only `Bash.Bash`.
 * - `BashEvents` — the session events of background jobs; `BashErrors` — the typed failures.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Bash from "./Bash.ts"
/** @since 0.1.0 */
export * as BashErrors from "./BashError.ts"
/** @since 0.1.0 */
export * as BashEvents from "./BashEvents.ts"
/** @since 0.1.0 */
export * as BashLocal from "./BashLocal.ts"
/** @since 0.1.0 */
export * as BashTools from "./BashTools.ts"
