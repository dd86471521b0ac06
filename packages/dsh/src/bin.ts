#!/usr/bin/env node
/**
 * The `dsh` command's entry point (see `./cli/`).
 *
 * @since 0.1.0
 */
console.error("dsh: the command is not built yet")
process.exitCode = 70
