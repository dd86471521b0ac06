#!/usr/bin/env node
/**
 * The published `dsh` command (ADR 0029): runs the bundled command, `dsh-command.cjs` beside
 * this file (one CommonJS script), through `vm.Script` with a V8 code cache made at the end of
 * an earlier run of the same command. Node's own compile cache is made when a module is
 * compiled, before it runs, so it holds only what V8 compiles eagerly; a cache made after a
 * run also holds every function that run compiled, which a start would otherwise parse and
 * compile again.
 *
 * The cache is a file per command (`run`, `chat`, `resume`, `sessions`, `replay`, and one for
 * the rest), Node version and build of the bundle, in `$XDG_CACHE_HOME/dsh/code-cache`
 * (`~/.cache/dsh/code-cache`); it is written when there was none or V8 rejected it, and a cache
 * that cannot be read or written only makes the start slower; writing one removes the
 * command's caches of other Node versions and builds. `NODE_DISABLE_COMPILE_CACHE` turns it
 * off.
 *
 * @since 0.1.0
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import Module from "node:module"
import { homedir, userInfo } from "node:os"
import { basename, dirname, isAbsolute, join } from "node:path"
import * as vm from "node:vm"

const bundle = join(__dirname, "dsh-command.cjs")

/** The commands whose starts compile different code, each with a cache of its own. */
const commands = new Set(["run", "chat", "resume", "sessions", "replay"])

const commandOf = (argv: ReadonlyArray<string>): string => commands.has(argv[2] ?? "") ? argv[2]! : "other"

/** `HOME`, else (unset or empty) the account's home: never `""`, which would put the cache in the working directory. */
const homeDirectory = (): string => {
  const named = process.env["HOME"] ?? ""
  if (named !== "") return named
  try {
    return userInfo().homedir || homedir()
  } catch {
    return homedir()
  }
}

/**
 * `$XDG_CACHE_HOME` when it is an absolute path (the XDG spec has a relative one ignored), else
 * `~/.cache`; none when there is no absolute home either (the start goes without a cache).
 */
const cacheHome = (): string | undefined => {
  const named = process.env["XDG_CACHE_HOME"] ?? ""
  if (named !== "" && isAbsolute(named)) return named
  const home = homeDirectory()
  return isAbsolute(home) ? join(home, ".cache") : undefined
}

const cacheFileOf = (stats: { readonly size: number; readonly mtimeMs: number }): string | undefined => {
  const command = commandOf(process.argv)
  const base = cacheHome()
  if (base === undefined) return undefined
  const directory = join(base, "dsh", "code-cache")
  return join(directory, `${command}-${process.version}-${process.arch}-${stats.size}-${Math.trunc(stats.mtimeMs)}.bin`)
}

const readCache = (file: string): Buffer | undefined => {
  try {
    return readFileSync(file)
  } catch {
    return undefined
  }
}

// renamed into place, so a concurrent start reads a whole cache or none; the command's caches
// of other Node versions and builds go (an upgrade leaves none behind)
const writeCache = (file: string, data: Buffer): void => {
  try {
    const directory = dirname(file)
    mkdirSync(directory, { recursive: true })
    const partial = `${file}.${process.pid}.tmp`
    writeFileSync(partial, data)
    renameSync(partial, file)
    const own = `${commandOf(process.argv)}-`
    for (const name of readdirSync(directory)) {
      if (name.startsWith(own) && name.endsWith(".bin") && name !== basename(file)) rmSync(join(directory, name), { force: true })
    }
  } catch {
    // no cache: the next start compiles again
  }
}

// how Node wraps a CommonJS module: the bundle reads require, module and __dirname from it
const wrap = (source: string): string => `(function (exports, require, module, __filename, __dirname) { ${source}\n});`

const start = (): void => {
  const file = (process.env["NODE_DISABLE_COMPILE_CACHE"] ?? "") === "" ? cacheFileOf(statSync(bundle)) : undefined
  const cachedData = file === undefined ? undefined : readCache(file)
  const script = new vm.Script(wrap(readFileSync(bundle, "utf8")), {
    filename: bundle,
    ...(cachedData === undefined ? {} : { cachedData }),
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER
  })
  if (file !== undefined && (cachedData === undefined || script.cachedDataRejected === true)) {
    process.once("exit", () => writeCache(file, script.createCachedData()))
  }
  const module = { exports: {} }
  const run = script.runInThisContext() as (...args: ReadonlyArray<unknown>) => void
  run.call(module.exports, module.exports, Module.createRequire(bundle), module, bundle, __dirname)
}

start()
