/**
 * Testing for dsh: a test Layer with a scripted model, in-memory sessions and the invariants
 * checker, and replay helpers.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Testing from "./Testing.ts"
