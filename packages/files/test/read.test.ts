import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { chmodSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { codeOf, execute, filesLayer, loneSurrogate, populate, tempDir, textOf } from "./fixtures.ts"

const five = "one\ntwo\nthree\nfour\nfive\n"

const read = (args: object) => Effect.map(execute("read", args), (r) => ({ code: codeOf(r), text: textOf(r), error: r.error }))

describe("read", () => {
  it.effect("shows the whole file with numbered lines", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "a.txt": five, "crlf.txt": "first\r\nsecond\r\n", "empty.txt": "", "no-newline.txt": "x\ny" })
      yield* Effect.gen(function*() {
        expect(yield* read({ path: "a.txt" })).toStrictEqual({
          code: "ok",
          text: "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive",
          error: undefined
        })
        expect((yield* read({ path: "crlf.txt" })).text).toBe("     1\tfirst\n     2\tsecond")
        expect((yield* read({ path: "no-newline.txt" })).text).toBe("     1\tx\n     2\ty")
        expect((yield* read({ path: "empty.txt" })).text).toBe(`("empty.txt" is empty)`)
        // absolute paths inside the root are the same file
        expect((yield* read({ path: join(root, "a.txt"), limit: 1 })).text).toContain("     1\tone")
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("offset and limit read a range of lines and say what follows", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "a.txt": five })
      yield* Effect.gen(function*() {
        expect((yield* read({ path: "a.txt", offset: 2, limit: 2 })).text).toBe(
          "     2\ttwo\n     3\tthree\n\n(lines 2–3 shown; more follow: continue with offset 4)"
        )
        // a range that ends at the end of the file says how many lines there are
        expect((yield* read({ path: "a.txt", offset: 4, limit: 2 })).text).toBe(
          "     4\tfour\n     5\tfive\n\n(lines 4–5 of 5)"
        )
        expect((yield* read({ path: "a.txt", offset: 4 })).text).toBe("     4\tfour\n     5\tfive\n\n(lines 4–5 of 5)")
        expect((yield* read({ path: "a.txt", limit: 1 })).text).toBe(
          "     1\tone\n\n(lines 1–1 shown; more follow: continue with offset 2)"
        )
        expect((yield* read({ path: "a.txt", limit: 5 })).text).toBe(
          "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive"
        )
        expect((yield* read({ path: "a.txt", offset: 9 })).text).toBe(`("a.txt" has 5 lines; offset 9 is past its end)`)
        // bad ranges never reach the body
        expect((yield* read({ path: "a.txt", offset: 0 })).code).toBe("INVALID_ARGS")
        expect((yield* read({ path: "a.txt", limit: 1.5 })).code).toBe("INVALID_ARGS")
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("a file over the size cap is FILE_TOO_LARGE, saying how to read a range, which then works", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const lines = Array.from({ length: 300 }, (_, i) => `line ${i + 1} ${"x".repeat(20)}`)
      populate(root, { "big.log": lines.join("\n") + "\n" })
      yield* Effect.gen(function*() {
        const whole = yield* read({ path: "big.log" })
        expect(whole.code).toBe("FILE_TOO_LARGE")
        expect(whole.error?.tag).toBe("FileTooLargeError")
        expect(whole.text).toBe(
          `"big.log" is 8.7 KiB, more than the 1 KiB read shows at once; read it in ranges of lines with offset and ` +
            "limit (e.g. offset: 1, limit: 1000)"
        )
        expect((yield* read({ path: "big.log", offset: 150, limit: 2 })).text).toBe(
          `   150\tline 150 ${"x".repeat(20)}\n   151\tline 151 ${"x".repeat(20)}\n\n` +
            "(lines 150–151 shown; more follow: continue with offset 152)"
        )
        // a range that does not fit the cap is cut, saying where to go on
        const cut = yield* read({ path: "big.log", offset: 1, limit: 300 })
        expect(cut.code).toBe("ok")
        expect(cut.text).toMatch(/\n\n\(output cut at 1 KiB after line (\d+); continue with offset (\d+)\)$/)
        const [, after, next] = /after line (\d+); continue with offset (\d+)/.exec(cut.text)!
        expect(Number(next)).toBe(Number(after) + 1)
      }).pipe(Effect.provide(filesLayer(root, { maxReadBytes: 1024 })))
    }).pipe(Effect.scoped))

  it.effect("a range of a large file reads only up to the range", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      // 64 MiB: far more than a read shows; the range comes from its first chunk
      const chunk = Buffer.alloc(1024 * 1024, "0123456789abcde\n")
      writeFileSync(join(root, "huge.txt"), Buffer.concat(Array.from({ length: 64 }, () => chunk)))
      yield* Effect.gen(function*() {
        expect((yield* read({ path: "huge.txt" })).code).toBe("FILE_TOO_LARGE")
        expect((yield* read({ path: "huge.txt", offset: 3, limit: 1 })).text).toBe(
          "     3\t0123456789abcde\n\n(lines 3–3 shown; more follow: continue with offset 4)"
        )
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("binary files are FILE_BINARY: NUL bytes, or bytes that are not UTF-8", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, {
        "image.png": new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00]),
        "latin1.txt": new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]),
        "utf8.txt": "café ☕\n"
      })
      yield* Effect.gen(function*() {
        const png = yield* read({ path: "image.png" })
        expect(png).toStrictEqual({
          code: "FILE_BINARY",
          error: { tag: "FileBinaryError", code: "FILE_BINARY" },
          text: `"image.png" is a binary file (10 bytes; it holds NUL bytes); read shows text files only`
        })
        expect((yield* read({ path: "latin1.txt" })).text).toBe(
          `"latin1.txt" is a binary file (5 bytes; it is not valid UTF-8); read shows text files only`
        )
        expect((yield* read({ path: "image.png", offset: 1, limit: 1 })).code).toBe("FILE_BINARY")
        expect((yield* read({ path: "utf8.txt" })).text).toBe("     1\tcafé ☕")
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("a missing path is FILE_NOT_FOUND; a directory, a FIFO or a file in the way is FILE_IO", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "a.txt": five })
      mkdirSync(join(root, "dir"))
      execFileSync("mkfifo", [join(root, "pipe")])
      yield* Effect.gen(function*() {
        expect(yield* read({ path: "missing.txt" })).toStrictEqual({
          code: "FILE_NOT_FOUND",
          error: { tag: "FileNotFoundError", code: "FILE_NOT_FOUND" },
          text: `"missing.txt" does not exist`
        })
        expect((yield* read({ path: "no/such/dir/a.txt" })).text).toBe(`"no/such/dir/a.txt" does not exist`)
        expect(yield* read({ path: "dir" })).toStrictEqual({
          code: "FILE_IO",
          error: { tag: "FileIoError", code: "FILE_IO" },
          text: `Cannot read "dir": it is a directory (list it, or glob inside it)`
        })
        expect((yield* read({ path: "a.txt/inside" })).text).toBe(
          `Cannot read "a.txt/inside": ENOTDIR (a part of the path is not a directory)`
        )
        // opened without blocking, refused after a look at what it is
        expect((yield* read({ path: "pipe" })).text).toBe(
          `Cannot read "pipe": it is not a regular file (a FIFO, a socket or a device)`
        )
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("long lines are cut, saying how long they were", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "min.js": `${"a".repeat(50)}\nshort\n`, "emoji.txt": `${"a".repeat(9)}😀bbb\n` })
      yield* Effect.gen(function*() {
        expect((yield* read({ path: "min.js" })).text).toBe(
          `     1\t${"a".repeat(10)}… (line cut: 50 characters)\n     2\tshort`
        )
        // never inside a surrogate pair: half of one is no UTF-8, and a provider refuses the request
        const emoji = (yield* read({ path: "emoji.txt" })).text
        expect(emoji).toBe(`     1\t${"a".repeat(9)}… (line cut: 14 characters)`)
        expect(emoji).not.toMatch(loneSurrogate)
      }).pipe(Effect.provide(filesLayer(root, { maxLineLength: 10 })))
    }).pipe(Effect.scoped))
})

// root reads whatever its permissions say
describe.runIf(process.getuid?.() !== 0)("read without permission", () => {
  it.effect("a file it may not read is FILE_IO with EACCES", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "secret.txt": "no" })
      chmodSync(join(root, "secret.txt"), 0o000)
      yield* Effect.gen(function*() {
        expect((yield* read({ path: "secret.txt" })).text).toBe(`Cannot read "secret.txt": EACCES (permission denied)`)
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))
})
