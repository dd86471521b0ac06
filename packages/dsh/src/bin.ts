#!/usr/bin/env node
/**
 * The `dsh` command's entry point (see `./cli/main.ts`). It turns on Node's compile cache
 * before loading anything else, so later starts skip parsing and compiling the command's
 * modules (and stripping their types, when run from the sources).
 *
 * @since 0.1.0
 */
import { enableCompileCache } from "node:module"

enableCompileCache?.()
const { main } = await import("./cli/main.ts")
main()
