/**
 * The model seam of dsh: the `Model` service, the adapter registry, middleware around model
 * calls, a scripted model for tests and the chunk-contract checker the conformance kit uses.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as ChunkContract from "./ChunkContract.ts"
/** @since 0.1.0 */
export { Model } from "./Model.ts"
/** @since 0.1.0 */
export type { ChunkStream, ModelError, ModelMiddleware } from "./Model.ts"
/** @since 0.1.0 */
export * as ModelErrors from "./ModelError.ts"
/** @since 0.1.0 */
export { layerAdapter, ModelRegistry } from "./ModelRegistry.ts"
/** @since 0.1.0 */
export type { Adapter } from "./ModelRegistry.ts"
/** @since 0.1.0 */
export * as ScriptedModel from "./ScriptedModel.ts"
