// Types of scripts/bundle-command.mjs, for the TypeScript that imports it (the startup bench,
// the command's bundle test).

/** Where `npm run build` writes the bundle: the package's `bin` points at its entry. */
export declare const defaultOutDir: string

/** The entry file's name in the output directory. */
export declare const entryName: string

/** Bundles the command into `outDir` (emptied first); returns the entry file's path. */
export declare const bundleCommand: (outDir?: string) => Promise<string>
