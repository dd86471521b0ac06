// Types of scripts/layers.mjs (the layer table), for TypeScript importers.

export interface Layer {
  readonly name: string
  readonly packages: readonly string[]
}

/** Ordered lowest first: index = layer number. */
export declare const LAYERS: readonly Layer[]
/** The loop package: only packages of APPS_LAYER may import it. */
export declare const LOOP_PACKAGE: string
/** The composition-root layer: the only one allowed to import LOOP_PACKAGE. */
export declare const APPS_LAYER: string
/** npm scope of the workspace packages ("@dsh"). */
export declare const SCOPE: string
/** All package names, in layer order. */
export declare const ALL_PACKAGES: readonly string[]
/** Layer index of a package, or -1 when it is not in the table. */
export declare function layerIndexOf(pkg: string): number
/** Whether package `from` may depend on package `to` (directory names). */
export declare function mayDependOn(from: string, to: string): boolean
/** Packages `from` must not depend on (excluding itself). */
export declare function forbiddenTargetsOf(from: string): string[]
/** Throws when the table is malformed. */
export declare function assertWellFormed(): void
