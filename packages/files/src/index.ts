/**
 * dsh file capability: read, write, edit, list, glob and search tools confined to a workspace
 * root, and the Layer that registers them.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as FileErrors from "./FileError.ts"
/** @since 0.1.0 */
export * as Files from "./Files.ts"
