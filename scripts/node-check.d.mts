// Types of scripts/node-check.mjs, for TypeScript importers (scripts/vitest-global-setup.ts).

/** Parses "major.minor.patch" (optional leading "v"). */
export declare function parseVersion(version: string): [number, number, number]
/** The minimum Node version, from package.json "engines.node". */
export declare function minimumNodeVersion(): string
/** Whether `version` is at least `minimum`. */
export declare function isAtLeast(version: string, minimum: string): boolean
/** `node v24.1.0 (/path/to/node)` for the running process. */
export declare function describeRunningNode(): string
/** undefined when the running Node is recent enough, else the explanation. */
export declare function nodeVersionProblem(): string | undefined
