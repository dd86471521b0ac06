/**
 * Fixtures of the bash tests (not a test file). Tests wait on what the commands themselves
 * report — a pid sent to a server on 127.0.0.1, a session event, a process's exit — never on
 * time.
 */
import { Deferred, Effect, Exit, type Scope } from "effect"
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { createServer, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * Whether a process is gone. A zombie counts as gone: it is dead, and only waits for its new
 * parent (init, in a container one that may reap late) to collect its exit status.
 */
export const isGone = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH"
  }
  try {
    // the state follows the parenthesized command name: "1234 (sleep) Z 1 …"
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return true
  }
}

/** A fresh temporary directory (its real path), removed when the scope closes. */
export const tempDir = (prefix: string): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), prefix)))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/**
 * A server on 127.0.0.1 that a command reports to: `bash` redirects a command's output to
 * `/dev/tcp/127.0.0.1/<port>` (see {@link reportTo}), and `line` is the first line it sent.
 */
export interface Reporter {
  readonly port: number
  readonly line: Effect.Effect<string>
}

export const reporter: Effect.Effect<Reporter, never, Scope.Scope> = Effect.gen(function*() {
  const line = yield* Deferred.make<string>()
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
    socket.setEncoding("utf8")
    let text = ""
    socket.on("data", (data: string) => {
      text += data
      const end = text.indexOf("\n")
      if (end >= 0) Deferred.doneUnsafe(line, Exit.succeed(text.slice(0, end)))
    })
  })
  const port = yield* Effect.acquireRelease(
    Effect.callback<number>((resume) => {
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
      })
    }),
    () =>
      Effect.callback<void>((resume) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  )
  return { port, line: Deferred.await(line) }
})

/** `command` (a bash list), its output sent to the reporter instead of the command's own output. */
export const reportTo = (reporter: Reporter, command: string): string =>
  `{ ${command}; } > /dev/tcp/127.0.0.1/${reporter.port}`

/** `command` (a bash list), its output both kept as the command's and copied to the reporter. */
export const copyTo = (reporter: Reporter, command: string): string =>
  // tee writes its standard output before the copy: what the reporter got, the command's output has
  `{ ${command}; } | tee >(cat > /dev/tcp/127.0.0.1/${reporter.port})`

/** A shell whose background grandchild (`sleep 1000`) it waits for, reporting the grandchild's pid. */
export const grandchild = "sh -c 'sleep 1000 & echo $!; wait'"
