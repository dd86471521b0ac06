/**
 * The entry of the bundled command (ADR 0029): the command's main, run at once. `bin.ts` is
 * the entry of the sources; the bundle is started by `launcher.ts`, which brings its own code
 * cache instead of Node's.
 *
 * @since 0.1.0
 */
import { main } from "./cli/main.ts"

main()
