/**
 * Confinement: nothing outside the workspace root is read, listed, searched, created or
 * changed — not through `..`, not through an absolute path, not through a symbolic link, and
 * not through a link or a directory swapped in while a call runs (an adversary acting at the
 * exact step, through the real file system). Both confinement modes run every case: "descriptor"
 * (lookups under held directory descriptors, Linux) and "path" (systems without /proc).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, type FileSystem, type Layer } from "effect"
import { spawn } from "node:child_process"
import { existsSync, lstatSync, readdirSync, readFileSync, renameSync, rmdirSync, statSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { adversary, codeOf, execute, modeLayer, populate, systemMode, tempDir, textOf } from "./fixtures.ts"

const run = (name: string, args: object) =>
  Effect.map(execute(name, args), (r) => ({ code: codeOf(r), text: textOf(r) }))

/** A root and, beside it, a directory the tools must never reach. */
const setup = Effect.gen(function*() {
  const base = yield* tempDir
  const root = join(base, "root")
  const outside = join(base, "outside")
  populate(base, {
    "root/a.txt": "inside a\n",
    "root/sub/f.txt": "inside TOKEN\n",
    "outside/secret.txt": "SECRET TOKEN\n",
    "outside/f.txt": "SECRET f TOKEN\n"
  })
  return { base, root, outside }
})

/** Swaps a directory of the root for a link to `outside`, keeping the directory under another name. */
const swapForLink = (root: string, name: string, outside: string) => () => {
  renameSync(join(root, name), join(root, `${name}.moved`))
  symlinkSync(outside, join(root, name))
}

/** That the adversary did act (a test whose adversary never ran would prove nothing). */
const swapped = (root: string, name: string) => expect(existsSync(join(root, `${name}.moved`))).toBe(true)

const unchanged = (outside: string) => {
  expect(readdirSync(outside).sort()).toStrictEqual(["f.txt", "secret.txt"])
  expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("SECRET TOKEN\n")
}

for (const descriptors of [true, false]) {
  const mode = descriptors ? "descriptor" : "path"
  const layer = (root: string, fileSystem?: Layer.Layer<FileSystem.FileSystem>) =>
    modeLayer(root, { descriptors, fileSystem })

  describe(`confinement (${mode} mode)`, () => {
    it.effect("`..` and absolute paths outside the root are TOOL_DENIED for every tool", () =>
      Effect.gen(function*() {
        const { outside, root } = yield* setup
        yield* Effect.gen(function*() {
          expect(yield* run("read", { path: "../outside/secret.txt" })).toStrictEqual({
            code: "TOOL_DENIED",
            text: `Tool "read" was denied: "../outside/secret.txt" is outside the workspace root ${
              JSON.stringify(root)
            }; paths must stay inside it`
          })
          const calls: ReadonlyArray<[string, object]> = [
            ["read", { path: join(outside, "secret.txt") }],
            ["read", { path: "/etc/passwd" }],
            ["read", { path: "sub/../../outside/secret.txt" }],
            ["write", { path: "../outside/new.txt", content: "x" }],
            ["write", { path: join(outside, "new.txt"), content: "x" }],
            ["edit", { path: "../outside/secret.txt", old: "SECRET", new: "x" }],
            ["list", { path: ".." }],
            ["list", { path: outside }],
            ["glob", { pattern: "*", path: "../outside" }],
            ["glob", { pattern: "../outside/*" }],
            ["glob", { pattern: join(outside, "*") }],
            ["search", { pattern: "TOKEN", path: ".." }],
            // a glob that reaches out matches nothing inside: "no matches" would mislead the model
            ["search", { pattern: "TOKEN", glob: "../**" }],
            ["search", { pattern: "TOKEN", glob: join(outside, "*") }]
          ]
          for (const [name, args] of calls) {
            const result = yield* run(name, args)
            expect(result.code, `${name} ${JSON.stringify(args)}`).toBe("TOOL_DENIED")
            expect(result.text).not.toContain("SECRET")
          }
          // inside, the same forms are fine
          expect((yield* run("read", { path: join(root, "a.txt") })).text).toBe("     1\tinside a")
          expect((yield* run("read", { path: "sub/../a.txt" })).text).toBe("     1\tinside a")
          expect((yield* run("list", { path: root })).code).toBe("ok")
        }).pipe(Effect.provide(layer(root)))
        unchanged(outside)
      }).pipe(Effect.scoped))

    it.effect("a symbolic link that leads out of the root is TOOL_DENIED, naming the link and its target", () =>
      Effect.gen(function*() {
        const { outside, root } = yield* setup
        symlinkSync(join(outside, "secret.txt"), join(root, "out.txt"))
        symlinkSync("../outside", join(root, "outdir"))
        symlinkSync("../../outside", join(root, "sub", "up"))
        symlinkSync(join(outside, "ghost.txt"), join(root, "ghost.txt"))
        yield* Effect.gen(function*() {
          expect(yield* run("read", { path: "out.txt" })).toStrictEqual({
            code: "TOOL_DENIED",
            text: `Tool "read" was denied: "out.txt" leads through the symbolic link "out.txt" to ${
              JSON.stringify(join(outside, "secret.txt"))
            }, outside the workspace root ${JSON.stringify(root)}`
          })
          expect((yield* run("read", { path: "outdir/secret.txt" })).text).toBe(
            `Tool "read" was denied: "outdir/secret.txt" leads through the symbolic link "outdir" to "../outside", ` +
              `outside the workspace root ${JSON.stringify(root)}`
          )
          const calls: ReadonlyArray<[string, object]> = [
            ["read", { path: "sub/up/secret.txt" }],
            ["write", { path: "out.txt", content: "overwritten" }],
            ["write", { path: "outdir/new.txt", content: "x" }],
            ["write", { path: "outdir/deep/new.txt", content: "x" }],
            // a dangling link to outside: writing would create its target there
            ["write", { path: "ghost.txt", content: "x" }],
            ["edit", { path: "out.txt", old: "SECRET", new: "x" }],
            ["list", { path: "outdir" }],
            ["glob", { pattern: "*", path: "outdir" }],
            ["glob", { pattern: "outdir/*.txt" }],
            ["search", { pattern: "TOKEN", path: "outdir" }],
            ["search", { pattern: "TOKEN", path: "out.txt" }]
          ]
          for (const [name, args] of calls) {
            const result = yield* run(name, args)
            expect(result.code, `${name} ${JSON.stringify(args)}`).toBe("TOOL_DENIED")
            expect(result.text).not.toContain("SECRET")
          }
          // walks list links but never follow them
          expect((yield* run("search", { pattern: "TOKEN" })).text).toBe("sub/f.txt:1: inside TOKEN")
          expect((yield* run("glob", { pattern: "**/*.txt" })).text).toBe("a.txt\nghost.txt\nout.txt\nsub/f.txt")
        }).pipe(Effect.provide(layer(root)))
        unchanged(outside)
      }).pipe(Effect.scoped))

    it.effect("links that stay inside the root are followed; a loop of links is FILE_IO ELOOP", () =>
      Effect.gen(function*() {
        const { root } = yield* setup
        symlinkSync("sub", join(root, "inner"))
        symlinkSync(join(root, "inner", "f.txt"), join(root, "abs.txt"))
        symlinkSync("abs.txt", join(root, "chain.txt"))
        symlinkSync("../a.txt", join(root, "sub", "back.txt"))
        symlinkSync("loop2", join(root, "loop1"))
        symlinkSync("loop1", join(root, "loop2"))
        yield* Effect.gen(function*() {
          expect((yield* run("read", { path: "inner/f.txt" })).text).toBe("     1\tinside TOKEN")
          expect((yield* run("read", { path: "chain.txt" })).text).toBe("     1\tinside TOKEN")
          expect((yield* run("read", { path: "inner/back.txt" })).text).toBe("     1\tinside a")
          expect((yield* run("list", { path: "inner" })).text).toContain("inner/f.txt (13 bytes)")
          expect(yield* run("read", { path: "loop1" })).toStrictEqual({
            code: "FILE_IO",
            text: `Cannot read "loop1": ELOOP (too many symbolic links)`
          })
        }).pipe(Effect.provide(layer(root)))
      }).pipe(Effect.scoped))

    it.effect("the root may itself be reached through a link; absolute paths under either spelling are inside", () =>
      Effect.gen(function*() {
        const { base, root } = yield* setup
        const alias = join(base, "alias")
        symlinkSync(root, alias)
        yield* Effect.gen(function*() {
          expect((yield* run("read", { path: join(alias, "a.txt") })).text).toBe("     1\tinside a")
          expect((yield* run("read", { path: join(root, "a.txt") })).text).toBe("     1\tinside a")
          expect((yield* run("read", { path: join(base, "outside", "secret.txt") })).code).toBe("TOOL_DENIED")
        }).pipe(Effect.provide(layer(alias)))
      }).pipe(Effect.scoped))

    it.effect("a symbolic link swapped in after a link was checked is not followed out", () =>
      Effect.gen(function*() {
        const { outside, root } = yield* setup
        symlinkSync("sub", join(root, "link"))
        // `link` was read and found to point inside, to `sub`; then `sub` becomes a link outside
        const fileSystem = adversary("readLink", "/link", swapForLink(root, "sub", outside))
        yield* Effect.gen(function*() {
          expect(yield* run("read", { path: "link/f.txt" })).toStrictEqual({
            code: "TOOL_DENIED",
            text: `Tool "read" was denied: "link/f.txt" leads through the symbolic link "sub" to ${
              JSON.stringify(outside)
            }, outside the workspace root ${JSON.stringify(root)}`
          })
        }).pipe(Effect.provide(layer(root, fileSystem)))
        unchanged(outside)
        swapped(root, "sub")
      }).pipe(Effect.scoped))

    it.effect("a directory swapped for a link after it was listed is not entered by a walk", () =>
      Effect.gen(function*() {
        const { outside, root } = yield* setup
        // after the root is listed, `sub` (listed as a directory) becomes a link outside
        const fileSystem = adversary("readDirectoryEntries", "", swapForLink(root, "sub", outside))
        yield* Effect.gen(function*() {
          const result = yield* run("search", { pattern: "TOKEN" })
          expect(result.text).not.toContain("SECRET")
          expect(result.text).toBe(`No matches for "TOKEN" under "." (1 file searched)`)
        }).pipe(Effect.provide(layer(root, fileSystem)))
        swapped(root, "sub")
      }).pipe(Effect.scoped))

    it.effect("a directory swapped for a link while a walk reads it yields nothing from outside", () =>
      Effect.gen(function*() {
        const { outside, root } = yield* setup
        // after `sub` itself is listed (the second listing), it is moved away and a link takes its name
        const fileSystem = adversary("readDirectoryEntries", "", swapForLink(root, "sub", outside), 2)
        yield* Effect.gen(function*() {
          const result = yield* run("search", { pattern: "TOKEN" })
          expect(result.text).not.toContain("SECRET")
          // descriptors: the files are read in the directory that was listed (now sub.moved);
          // paths: the swap is seen when the file is opened, and the file is skipped
          expect(result.text).toBe(
            descriptors ? "sub/f.txt:1: inside TOKEN" : `No matches for "TOKEN" under "." (1 file searched)\n(skipped 1 unreadable file)`
          )
        }).pipe(Effect.provide(layer(root, fileSystem)))
        swapped(root, "sub")
      }).pipe(Effect.scoped))

    it.effect("a link put in place of the file just before the rename is replaced, not followed", () =>
      Effect.gen(function*() {
        const { outside, root } = yield* setup
        populate(root, { "notes.txt": "old" })
        const fileSystem = adversary("rename", "/notes.txt", () => {
          renameSync(join(root, "notes.txt"), join(root, "notes.moved"))
          symlinkSync(join(outside, "secret.txt"), join(root, "notes.txt"))
        })
        yield* Effect.gen(function*() {
          expect((yield* run("write", { path: "notes.txt", content: "new" })).code).toBe("ok")
        }).pipe(Effect.provide(layer(root, fileSystem)))
        unchanged(outside)
        swapped(root, "notes")
        expect(statSync(join(root, "notes.txt"), { throwIfNoEntry: false })?.isFile()).toBe(true)
        expect(readFileSync(join(root, "notes.txt"), "utf8")).toBe("new")
      }).pipe(Effect.scoped))

    it.effect("a directory swapped for a link just before the rename: nothing lands outside", () =>
      Effect.gen(function*() {
        const { outside, root } = yield* setup
        const fileSystem = adversary("rename", "/new.txt", swapForLink(root, "sub", outside))
        yield* Effect.gen(function*() {
          const result = yield* run("write", { path: "sub/new.txt", content: "new" })
          // descriptors: the rename happens in the directory that was checked (now sub.moved);
          // paths: the rename looks for its temporary file through the link, and fails
          expect(result.code).toBe(descriptors ? "ok" : "FILE_NOT_FOUND")
        }).pipe(Effect.provide(layer(root, fileSystem)))
        unchanged(outside)
        swapped(root, "sub")
        if (descriptors) expect(readFileSync(join(root, "sub.moved", "new.txt"), "utf8")).toBe("new")
      }).pipe(Effect.scoped))

    it.effect("a directory it just created, swapped for a link, is not followed out", () =>
      Effect.gen(function*() {
        const { outside, root } = yield* setup
        const fileSystem = adversary("makeDirectory", "/fresh", () => {
          rmdirSync(join(root, "fresh"))
          symlinkSync(outside, join(root, "fresh"))
        })
        yield* Effect.gen(function*() {
          const result = yield* run("write", { path: "fresh/deeper/f.txt", content: "x" })
          expect(result.code).toBe("TOOL_DENIED")
          expect(result.text).toContain(`leads through the symbolic link "fresh"`)
        }).pipe(Effect.provide(layer(root, fileSystem)))
        unchanged(outside)
        expect(lstatSync(join(root, "fresh")).isSymbolicLink()).toBe(true)
      }).pipe(Effect.scoped))
  })
}

describe("confinement (path mode): the directories of a path are checked again after each open", () => {
  it.effect("a directory swapped for a link between two steps is detected before anything is returned", () =>
    Effect.gen(function*() {
      const { outside, root } = yield* setup
      // after `sub` was opened (and the root checked), `sub` becomes a link outside: the open of
      // sub/f.txt goes through it, and the check of the directories after that open sees it
      const fileSystem = adversary("lstat", root, swapForLink(root, "sub", outside))
      yield* Effect.gen(function*() {
        expect(yield* run("read", { path: "sub/f.txt" })).toStrictEqual({
          code: "TOOL_DENIED",
          text: `Tool "read" was denied: the directory "sub" on the way to "sub/f.txt" was replaced while it was being ` +
            "used; it is not followed"
        })
      }).pipe(Effect.provide(modeLayer(root, { descriptors: false, fileSystem })))
      swapped(root, "sub")
      unchanged(outside)
    }).pipe(Effect.scoped))
})

describe.runIf(existsSync("/proc/self/fd"))("confinement mode", () => {
  it.effect("where /proc/self/fd names open directories, lookups go through descriptors", () =>
    Effect.gen(function*() {
      const { root } = yield* setup
      expect(yield* systemMode(root)).toBe("descriptor")
    }).pipe(Effect.scoped))
})

// The flipper: swaps `sub` between the directory and a link outside, `count` times, as fast as
// it can, then exits. Run as a separate process, so its system calls interleave with ours.
const flipper = `
const { renameSync, symlinkSync, unlinkSync } = require("node:fs")
const [root, outside, count] = process.argv.slice(1)
process.stdout.write("flipping\\n")
for (let i = 0; i < Number(count); i++) {
  renameSync(root + "/sub", root + "/sub.real")
  symlinkSync(outside, root + "/sub")
  unlinkSync(root + "/sub")
  renameSync(root + "/sub.real", root + "/sub")
}
`

describe.runIf(existsSync("/proc/self/fd"))("confinement (descriptor mode) under a concurrent adversary", () => {
  it.effect("reads and searches while another process flips a directory and a link never see outside", () =>
    Effect.gen(function*() {
      const { outside, root } = yield* setup
      const child = spawn(process.execPath, ["-e", flipper, root, outside, "20000"], { stdio: ["ignore", "pipe", "inherit"] })
      const flipping = { exited: false }
      const started = new Promise<void>((resolve) => {
        child.stdout.once("data", () => resolve())
      })
      const exit = new Promise<number | null>((resolve) => {
        child.on("exit", (code) => {
          flipping.exited = true
          resolve(code)
        })
      })
      // start once the flipping has
      yield* Effect.promise(() => started)
      const codes = new Set<string>()
      let calls = 0
      yield* Effect.gen(function*() {
        while (!flipping.exited) {
          for (const [name, args] of [["read", { path: "sub/f.txt" }], ["search", { pattern: "TOKEN" }]] as const) {
            const result = yield* run(name, args)
            calls++
            codes.add(result.code)
            expect(result.text).not.toContain("SECRET")
          }
        }
      }).pipe(Effect.provide(modeLayer(root, { descriptors: true })))
      expect(yield* Effect.promise(() => exit)).toBe(0)
      expect(calls).toBeGreaterThan(0)
      // what a call may meet mid-flip: the directory, the link (refused), or neither
      expect([...codes].filter((c) => !["ok", "TOOL_DENIED", "FILE_NOT_FOUND", "FILE_IO"].includes(c))).toStrictEqual([])
      unchanged(outside)
    }).pipe(Effect.scoped))
})
