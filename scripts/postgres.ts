// A throw-away PostgreSQL server for tests and benchmarks: Debian's `postgresql` package
// (initdb and postgres from PATH or /usr/lib/postgresql/<version>/bin), a fresh cluster in a
// temporary directory, listening on 127.0.0.1 on a free port (and on a socket in that
// directory), run as an unprivileged user — initdb refuses root, so as root the server runs as
// the system user `dsh-pg`, created when missing. The server is this process's child; `stop`
// ends it by its pid (SIGINT: a fast shutdown), waits for it to exit and removes the directory.
//
// Used by scripts/vitest-postgres-setup.ts (when DSH_PG_URL is not set). Trust authentication
// for the user `dsh` on 127.0.0.1 only, `fsync=off` (a test server: a killed client loses
// nothing that was committed, only an OS crash would), nothing else changed.
import { execFileSync, spawn } from "node:child_process"
import { chmodSync, chownSync, closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A running server. */
export interface Server {
  /** `postgres://dsh@127.0.0.1:<port>/postgres`: a superuser, trusted on 127.0.0.1. */
  readonly url: string
  readonly port: number
  /** The postmaster's pid. */
  readonly pid: number
  /** The temporary directory: `data/` (the cluster), `server.log`, the socket. */
  readonly directory: string
  /** The server's major version, e.g. `15`. */
  readonly version: string
  /** Stops the server by its pid and removes the directory; resolves once it has exited. */
  readonly stop: () => Promise<void>
}

/** The unprivileged user the server runs as when this process is root. */
export const SERVER_USER = "dsh-pg"

const versionDirs = (): Array<string> => {
  const base = "/usr/lib/postgresql"
  if (!existsSync(base)) return []
  return readdirSync(base)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a))
    .map((name) => join(base, name, "bin"))
}

const onPath = (name: string): string | undefined => {
  for (const dir of (process.env["PATH"] ?? "").split(":")) {
    if (dir.length > 0 && existsSync(join(dir, name))) return join(dir, name)
  }
  return undefined
}

/**
 * The directory holding `initdb` and `postgres`: `DSH_PG_BIN`, else the one of `initdb` on PATH,
 * else the newest /usr/lib/postgresql/<version>/bin (Debian does not put initdb on PATH).
 * Undefined when PostgreSQL is not installed.
 */
export const findBin = (): string | undefined => {
  const explicit = process.env["DSH_PG_BIN"]
  const candidates = [
    ...(explicit === undefined ? [] : [explicit]),
    ...versionDirs()
  ]
  const initdb = onPath("initdb")
  // initdb on PATH is often a link into /usr/lib/postgresql/<version>/bin: use that directory
  if (initdb !== undefined) {
    const real = execFileSync("readlink", ["-f", initdb], { encoding: "utf8" }).trim()
    candidates.splice(explicit === undefined ? 0 : 1, 0, real.slice(0, real.lastIndexOf("/")))
  }
  return candidates.find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "postgres")))
}

/** Why no server can be started here, or undefined when one can. */
export const unavailable = (): string | undefined =>
  findBin() === undefined
    ? "PostgreSQL is not installed: no initdb on PATH, in DSH_PG_BIN or in /usr/lib/postgresql/*/bin " +
      "(install Debian's package: apt-get install -y postgresql), and DSH_PG_URL is not set"
    : undefined

/** A free TCP port on 127.0.0.1 (taken and let go: whoever asked binds it right after). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** The uid and gid to run the server as: this process's own, or `dsh-pg`'s when root. */
const serverIdentity = (): { uid: number; gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const id = (flag: string) => Number(execFileSync("id", [flag, SERVER_USER], { encoding: "utf8", stdio: "pipe" }).trim())
  try {
    return { uid: id("-u"), gid: id("-g") }
  } catch {
    try {
      execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", SERVER_USER], {
        stdio: "pipe"
      })
      return { uid: id("-u"), gid: id("-g") }
    } catch (error) {
      throw new Error(
        `initdb refuses root, and the unprivileged user ${SERVER_USER} is missing and cannot be created with useradd: ` +
          `${error instanceof Error ? error.message : String(error)}`,
        { cause: error }
      )
    }
  }
}

/** Whether every directory from the root down to `path` lets others through (the server user must reach its directory). */
const searchableByOthers = (path: string): boolean => {
  const parts = path.split("/").filter((part) => part.length > 0)
  for (let i = 0; i <= parts.length; i++) {
    const dir = `/${parts.slice(0, i).join("/")}`
    try {
      if ((statSync(dir).mode & 0o001) === 0) return false
    } catch {
      return false
    }
  }
  return true
}

const sleep = (ms: number) =>
  new Promise((resolve) => {
    setTimeout(resolve, ms)
  })

/** Whether `exited` settles within `ms`; the timer does not outlive the wait. */
const within = async (exited: Promise<void>, ms: number): Promise<boolean> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms)
  })
  try {
    return await Promise.race([exited.then(() => true), timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** Starts a server (see the module comment). Throws, with the server's log, when it cannot. */
export const startPostgres = async (): Promise<Server> => {
  const bin = findBin()
  if (bin === undefined) throw new Error(unavailable())
  const identity = serverIdentity()
  // as root the server runs as another user, who must be able to reach the directory
  const base = identity === undefined || searchableByOthers(tmpdir()) ? tmpdir() : "/tmp"
  const directory = mkdtempSync(join(base, "dsh-pg-"))
  const data = join(directory, "data")
  const log = join(directory, "server.log")
  const as = identity === undefined ? {} : { uid: identity.uid, gid: identity.gid }
  if (identity !== undefined) chownSync(directory, identity.uid, identity.gid)
  chmodSync(directory, 0o700)
  const env = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", LANG: "C", LC_ALL: "C" }
  try {
    execFileSync(join(bin, "initdb"), ["-D", data, "-U", "dsh", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"], {
      ...as,
      cwd: directory,
      env,
      stdio: "pipe"
    })
    const version = readFileSync(join(data, "PG_VERSION"), "utf8").trim()
    // a port found free can be taken before the server binds it: try a few
    for (let attempt = 1; ; attempt++) {
      const port = await freePort()
      const out = openSync(log, "a")
      const child = spawn(join(bin, "postgres"), [
        "-D", data,
        "-c", "listen_addresses=127.0.0.1",
        "-c", `port=${port}`,
        "-c", `unix_socket_directories=${directory}`,
        "-c", "fsync=off",
        "-c", "max_connections=200",
        "-c", "shared_buffers=32MB"
      ], { ...as, cwd: directory, env, stdio: ["ignore", out, out] })
      closeSync(out)
      const status = { gone: false }
      const exited = new Promise<void>((resolve) => {
        child.once("exit", () => {
          status.gone = true
          resolve()
        })
      })
      const ready = await (async () => {
        for (let i = 0; i < 600 && !status.gone; i++) {
          const pidFile = join(data, "postmaster.pid")
          if (existsSync(pidFile) && readFileSync(pidFile, "utf8").split("\n")[7]?.trim() === "ready") return true
          await sleep(50)
        }
        return false
      })()
      if (ready && child.pid !== undefined) {
        const pid = child.pid
        // the server must not keep this process alive by itself
        child.unref()
        const stop = async () => {
          if (!status.gone) {
            process.kill(pid, "SIGINT")
            if (!(await within(exited, 15_000))) {
              process.kill(pid, "SIGKILL")
              await exited
            }
          }
          rmSync(directory, { recursive: true, force: true })
        }
        return { url: `postgres://dsh@127.0.0.1:${port}/postgres`, port, pid, directory, version, stop }
      }
      if (!status.gone) {
        child.kill("SIGKILL")
        await exited
      }
      if (attempt >= 3) throw new Error(`the server did not start; its log (${log}):\n${readFileSync(log, "utf8")}`)
    }
  } catch (error) {
    const detail = error instanceof Error && "stderr" in error ? `\n${String((error as { stderr: unknown }).stderr)}` : ""
    rmSync(directory, { recursive: true, force: true })
    throw new Error(`cannot start PostgreSQL from ${bin}: ${error instanceof Error ? error.message : String(error)}${detail}`, {
      cause: error
    })
  }
}
