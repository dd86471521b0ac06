import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { chmodSync, closeSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, statSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { adversary, codeOf, execute, filesLayer, modeLayer, populate, tempDir, textOf } from "./fixtures.ts"

const run = (name: string, args: object) =>
  Effect.map(execute(name, args), (r) => ({ code: codeOf(r), text: textOf(r), tag: r.error?.tag }))

const content = (root: string, path: string) => readFileSync(join(root, path), "utf8")

describe("write", () => {
  it.effect("creates a file and its missing directories, saying what it wrote", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      yield* Effect.gen(function*() {
        expect(yield* run("write", { path: "notes/2026/todo.md", content: "# Todo\n- buy milk\n" })).toStrictEqual({
          code: "ok",
          tag: undefined,
          text: `Created "notes/2026/todo.md": 18 bytes, 2 lines\nCreated the directories "notes", "notes/2026"`
        })
        expect((yield* run("write", { path: "notes/empty.txt", content: "" })).text).toBe(
          `Created "notes/empty.txt": 0 bytes, 0 lines`
        )
        const deep = "a/b/c/d/e/f/g/h/i/j/k/l"
        expect((yield* run("write", { path: `${deep}/deep.txt`, content: "x" })).text).toMatch(
          /^Created "a\/b\/c\/d\/e\/f\/g\/h\/i\/j\/k\/l\/deep.txt": 1 byte, 1 line\nCreated the directories "a", "a\/b", /
        )
      }).pipe(Effect.provide(filesLayer(root)))
      expect(content(root, "notes/2026/todo.md")).toBe("# Todo\n- buy milk\n")
      expect(content(root, "a/b/c/d/e/f/g/h/i/j/k/l/deep.txt")).toBe("x")
      // nothing but the file: the temporary file was renamed, not left behind
      expect(readdirSync(join(root, "notes/2026"))).toStrictEqual(["todo.md"])
    }).pipe(Effect.scoped))

  it.effect("replaces a file atomically: a new inode, its permissions kept, a reader of the old one unaffected", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "run.sh": "echo old\n" })
      chmodSync(join(root, "run.sh"), 0o750)
      const before = statSync(join(root, "run.sh"))
      const reader = openSync(join(root, "run.sh"), "r")
      yield* Effect.gen(function*() {
        expect((yield* run("write", { path: "run.sh", content: "echo new\necho twice\n" })).text).toBe(
          `Replaced "run.sh": 20 bytes, 2 lines (it had 9 bytes)`
        )
      }).pipe(Effect.provide(filesLayer(root)))
      const after = statSync(join(root, "run.sh"))
      expect(after.ino).not.toBe(before.ino)
      expect(after.mode & 0o7777).toBe(0o750)
      expect(content(root, "run.sh")).toBe("echo new\necho twice\n")
      // the old file was never truncated or written: it was replaced whole
      const old = Buffer.alloc(64)
      const n = readSync(reader, old, 0, 64, 0)
      closeSync(reader)
      expect(old.subarray(0, n).toString()).toBe("echo old\n")
      expect(readdirSync(root)).toStrictEqual(["run.sh"])
    }).pipe(Effect.scoped))

  it.effect("writes through a symbolic link that stays inside the root, to the file it links to", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "docs/real.md": "old" })
      symlinkSync("docs/real.md", join(root, "link.md"))
      symlinkSync("docs/new.md", join(root, "dangling.md"))
      yield* Effect.gen(function*() {
        expect((yield* run("write", { path: "link.md", content: "new" })).text).toBe(
          `Replaced "link.md" (the file "docs/real.md" it links to): 3 bytes, 1 line (it had 3 bytes)`
        )
        // a link to a file that does not exist yet creates it, as the system would
        expect((yield* run("write", { path: "dangling.md", content: "made" })).text).toBe(
          `Created "dangling.md" (the file "docs/new.md" it links to): 4 bytes, 1 line`
        )
      }).pipe(Effect.provide(filesLayer(root)))
      expect(content(root, "docs/real.md")).toBe("new")
      expect(content(root, "docs/new.md")).toBe("made")
      expect(statSync(join(root, "link.md"), { throwIfNoEntry: false })?.isFile()).toBe(true)
    }).pipe(Effect.scoped))

  it.effect("a directory in the way is FILE_IO, naming the system's code", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "file.txt": "x" })
      mkdirSync(join(root, "dir"))
      yield* Effect.gen(function*() {
        expect(yield* run("write", { path: "dir", content: "x" })).toStrictEqual({
          code: "FILE_IO",
          tag: "FileIoError",
          text: `Cannot write "dir": EISDIR (it is a directory)`
        })
        expect((yield* run("write", { path: "file.txt/inner.txt", content: "x" })).text).toBe(
          `Cannot write "file.txt/inner.txt": ENOTDIR (a part of the path is not a directory)`
        )
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("a path ending in / names a directory: no file is written under its name, as the system would refuse", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "a.txt": "one\n" })
      const refusal = (path: string) =>
        `Cannot write ${JSON.stringify(path)}: a path ending in "/" names a directory, not a file; give the file's name ` +
        "(write creates the missing directories on its way)"
      yield* Effect.gen(function*() {
        expect(yield* run("write", { path: "new/", content: "x" })).toStrictEqual({
          code: "FILE_IO",
          tag: "FileIoError",
          text: refusal("new/")
        })
        expect((yield* run("write", { path: "new/.", content: "x" })).text).toBe(refusal("new/."))
        expect((yield* run("write", { path: "a.txt/", content: "x" })).text).toBe(refusal("a.txt/"))
        // no directory is created on the way to it either
        expect((yield* run("write", { path: "sub/new/", content: "x" })).code).toBe("FILE_NOT_FOUND")
        // a directory that is there is a directory, as before
        mkdirSync(join(root, "dir"))
        expect((yield* run("write", { path: "dir/", content: "x" })).text).toBe(`Cannot write "dir/": EISDIR (it is a directory)`)
        // read and edit refuse a file named as a directory
        expect(yield* run("read", { path: "a.txt/" })).toStrictEqual({
          code: "FILE_IO",
          tag: "FileIoError",
          text: `Cannot read "a.txt/": it is a file, not a directory (give its path without the trailing "/")`
        })
        expect((yield* run("edit", { path: "a.txt/", old: "one", new: "1" })).text).toBe(
          `Cannot edit "a.txt/": it is a file, not a directory (give its path without the trailing "/")`
        )
      }).pipe(Effect.provide(filesLayer(root)))
      expect(readdirSync(root).sort()).toStrictEqual(["a.txt", "dir"])
      expect(content(root, "a.txt")).toBe("one\n")
    }).pipe(Effect.scoped))

  it.effect("a FIFO or a device in the way is FILE_IO saying it is not a regular file, for write as for read", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      execFileSync("mkfifo", [join(root, "pipe")])
      yield* Effect.gen(function*() {
        expect(yield* run("write", { path: "pipe", content: "x" })).toStrictEqual({
          code: "FILE_IO",
          tag: "FileIoError",
          text: `Cannot write "pipe": it is not a regular file (a FIFO, a socket or a device)`
        })
        expect((yield* run("search", { pattern: "x", path: "pipe" })).text).toBe(
          `Cannot search "pipe": it is not a regular file (a FIFO, a socket or a device)`
        )
      }).pipe(Effect.provide(filesLayer(root)))
      expect(lstatSync(join(root, "pipe")).isFIFO()).toBe(true)
    }).pipe(Effect.scoped))

  it.effect("a rename that fails leaves the old file untouched and no temporary file behind", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      // between the checks and the rename, a directory takes the file's name
      const fileSystem = adversary("rename", "/target", () => {
        mkdirSync(join(root, "target"))
        populate(root, { "target/keep": "x" })
      })
      yield* Effect.gen(function*() {
        const result = yield* run("write", { path: "target", content: "new" })
        expect(result.code).toBe("FILE_IO")
        expect(result.text).toMatch(/^Cannot write "target": (EISDIR|ENOTEMPTY|EEXIST) /)
      }).pipe(Effect.provide(modeLayer(root, { descriptors: true, fileSystem })))
      expect(readdirSync(root)).toStrictEqual(["target"])
      expect(readdirSync(join(root, "target"))).toStrictEqual(["keep"])
    }).pipe(Effect.scoped))
})

describe("write and edit on a file its permissions protect", () => {
  it.effect("a file without any write bit is FILE_IO EACCES for write and edit, root included, and left as it is", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "locked.txt": "keep me\n", "bin/tool": "#!/bin/sh\n" })
      chmodSync(join(root, "locked.txt"), 0o444)
      chmodSync(join(root, "bin/tool"), 0o555)
      const before = statSync(join(root, "locked.txt"))
      yield* Effect.gen(function*() {
        expect(yield* run("write", { path: "locked.txt", content: "changed\n" })).toStrictEqual({
          code: "FILE_IO",
          tag: "FileIoError",
          text: `Cannot write "locked.txt": EACCES (permission denied): the file is read-only (mode r--r--r--); it was ` +
            "left as it is"
        })
        expect(yield* run("edit", { path: "locked.txt", old: "keep", new: "lose" })).toStrictEqual({
          code: "FILE_IO",
          tag: "FileIoError",
          text: `Cannot edit "locked.txt": EACCES (permission denied): the file is read-only (mode r--r--r--); it was ` +
            "left as it is"
        })
        expect((yield* run("write", { path: "bin/tool", content: "x" })).text).toBe(
          `Cannot write "bin/tool": EACCES (permission denied): the file is read-only (mode r-xr-xr-x); it was left as it is`
        )
      }).pipe(Effect.provide(filesLayer(root)))
      const after = statSync(join(root, "locked.txt"))
      expect(content(root, "locked.txt")).toBe("keep me\n")
      expect([after.ino, after.mode & 0o7777, after.mtimeMs]).toStrictEqual([before.ino, 0o444, before.mtimeMs])
      expect(content(root, "bin/tool")).toBe("#!/bin/sh\n")
      // no temporary file was made
      expect(readdirSync(root).sort()).toStrictEqual(["bin", "locked.txt"])
    }).pipe(Effect.scoped))

  it.effect("a file the owner may not write but others may: the system decides (refused for a user, written by root)", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "shared.txt": "old\n" })
      // write bits for group and others, none for the owner (the test's user)
      chmodSync(join(root, "shared.txt"), 0o466)
      const asRoot = process.getuid?.() === 0
      yield* Effect.gen(function*() {
        const result = yield* run("write", { path: "shared.txt", content: "new\n" })
        if (asRoot) {
          expect(result.text).toBe(`Replaced "shared.txt": 4 bytes, 1 line (it had 4 bytes)`)
        } else {
          expect(result).toStrictEqual({
            code: "FILE_IO",
            tag: "FileIoError",
            text: `Cannot write "shared.txt": EACCES (permission denied): this process may not write the file (mode ` +
              "r--rw-rw-); it was left as it is"
          })
        }
      }).pipe(Effect.provide(filesLayer(root)))
      expect(content(root, "shared.txt")).toBe(asRoot ? "new\n" : "old\n")
      expect(statSync(join(root, "shared.txt")).mode & 0o7777).toBe(0o466)
    }).pipe(Effect.scoped))
})

describe("edit", () => {
  const source = "function greet(name) {\n  return 'hello ' + name\n}\n\nconsole.log(greet('world'))\n"

  it.effect("replaces a unique text and shows the lines that changed", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "greet.js": source })
      yield* Effect.gen(function*() {
        expect(yield* run("edit", { path: "greet.js", old: "'hello '", new: "'hi '" })).toStrictEqual({
          code: "ok",
          tag: undefined,
          text: `Edited "greet.js": 1 replacement (line 2)\n@@ -2,1 +2,1 @@\n-  return 'hello ' + name\n+  return 'hi ' + name`
        })
        expect(
          (yield* run("edit", {
            path: "greet.js",
            old: "function greet(name) {\n  return 'hi ' + name\n}\n",
            new: "const greet = (name) =>\n  'hi ' + name\n"
          })).text
        ).toBe(
          `Edited "greet.js": 1 replacement (line 1)\n@@ -1,3 +1,2 @@\n-function greet(name) {\n-  return 'hi ' + name\n-}\n` +
            "+const greet = (name) =>\n+  'hi ' + name"
        )
        // deleting whole lines shows them removed and nothing added
        expect((yield* run("edit", { path: "greet.js", old: "\nconsole.log(greet('world'))\n", new: "" })).text).toBe(
          `Edited "greet.js": 1 replacement (line 3)\n@@ -3,2 +3,0 @@\n-\n-console.log(greet('world'))`
        )
      }).pipe(Effect.provide(filesLayer(root)))
      expect(content(root, "greet.js")).toBe("const greet = (name) =>\n  'hi ' + name\n")
    }).pipe(Effect.scoped))

  it.effect("old text that does not occur is EDIT_NOT_FOUND, with the closest line when there is one", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "greet.js": source })
      yield* Effect.gen(function*() {
        expect(yield* run("edit", { path: "greet.js", old: "return 'hallo ' + name", new: "x" })).toStrictEqual({
          code: "EDIT_NOT_FOUND",
          tag: "EditNotFoundError",
          text: `The old text does not occur in "greet.js"; the closest line is 2: "  return 'hello ' + name"`
        })
        expect((yield* run("edit", { path: "greet.js", old: "console.log( greet('world') )", new: "x" })).text).toBe(
          `The old text does not occur in "greet.js"; line 5 differs from the first line of old only in whitespace: ` +
            `"console.log(greet('world'))"`
        )
        expect((yield* run("edit", { path: "greet.js", old: "SELECT * FROM users", new: "x" })).text).toBe(
          `The old text does not occur in "greet.js"; read the file to see its current text`
        )
      }).pipe(Effect.provide(filesLayer(root)))
      expect(content(root, "greet.js")).toBe(source)
    }).pipe(Effect.scoped))

  it.effect("EDIT_NOT_FOUND says where old stops matching once its first line is found, whitespace only when that is all", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "greet.js": source, "mixed.txt": "one\r\ntwo\nthree\r\n" })
      const notFound = (path: string, old: string) =>
        Effect.map(run("edit", { path, old, new: "x" }), (r) => {
          expect(r.code).toBe("EDIT_NOT_FOUND")
          return r.text.replace(`The old text does not occur in "${path}"; `, "")
        })
      yield* Effect.gen(function*() {
        // the first line is the file's: the difference is further down, and not whitespace
        expect(yield* notFound("greet.js", "function greet(name) {\n  return 'hallo ' + name\n}")).toBe(
          `the first line of old matches line 1 of the file, but line 2 of old differs from line 2 of the file: ` +
            `"  return 'hello ' + name"`
        )
        expect(yield* notFound("greet.js", "function greet(name) {\n  return 'hello ' + name\n}\nconsole.log")).toBe(
          `lines 1–3 of old match lines 1–3 of the file, but line 4 of old differs from line 4 of the file: ""`
        )
        // a whitespace difference is named as one where it is
        expect(yield* notFound("greet.js", "function greet(name) {\n  return 'hello '+name")).toBe(
          `the first line of old matches line 1 of the file, but line 2 of old differs from line 2 of the file only ` +
            `in whitespace: "  return 'hello ' + name"`
        )
        expect(yield* notFound("greet.js", "console.log(greet('world'))\ngreet('again')")).toBe(
          "the first line of old matches line 5 of the file, but old goes on past the end of the file, at line 5"
        )
        // a line equal to old's first non-blank one is not a whitespace difference
        expect(yield* notFound("greet.js", "\n\nfunction greet(name) {")).toBe(
          "line 1 of the file is line 3 of old exactly, so what differs is in the lines around it"
        )
        // text as read, from a file that mixes CRLF and LF line endings
        expect(yield* notFound("mixed.txt", "one\ntwo\nthree")).toBe(
          `the first line of old matches line 1 of the file, but line 2 of old differs from line 2 of the file only ` +
            `in how it ends (CRLF or LF): "two"`
        )
      }).pipe(Effect.provide(filesLayer(root)))
      expect(content(root, "greet.js")).toBe(source)
    }).pipe(Effect.scoped))

  it.effect("replaceAll shows each changed line once: replacements sharing a line are one hunk", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "a.txt": "a a\nb\na\n", "b.txt": "x x\ny\nx x\nx x\nx x\n", "c.txt": "a\na\nz\n" })
      yield* Effect.gen(function*() {
        expect((yield* run("edit", { path: "a.txt", old: "a", new: "c", replaceAll: true })).text).toBe(
          `Edited "a.txt": 3 replacements (lines 1, 3)\n@@ -1,1 +1,1 @@\n-a a\n+c c\n@@ -3,1 +3,1 @@\n-a\n+c`
        )
        // the bound counts hunks; what is left unshown counts replacements
        expect((yield* run("edit", { path: "b.txt", old: "x", new: "w", replaceAll: true })).text).toBe(
          `Edited "b.txt": 8 replacements (lines 1, 3, 4, 5)\n` +
            "@@ -1,1 +1,1 @@\n-x x\n+w w\n@@ -3,1 +3,1 @@\n-x x\n+w w\n@@ -4,1 +4,1 @@\n-x x\n+w w\n" +
            "… 2 more replacements"
        )
        // replacements on lines of their own that end up on one line are one hunk too
        expect((yield* run("edit", { path: "c.txt", old: "a\n", new: "b", replaceAll: true })).text).toBe(
          `Edited "c.txt": 2 replacements (lines 1, 2)\n@@ -1,3 +1,1 @@\n-a\n-a\n-z\n+bbz`
        )
      }).pipe(Effect.provide(filesLayer(root)))
      expect(content(root, "a.txt")).toBe("c c\nb\nc\n")
      expect(content(root, "c.txt")).toBe("bbz\n")
    }).pipe(Effect.scoped))

  it.effect("old text that is not unique is EDIT_AMBIGUOUS with the count and lines; replaceAll replaces them all", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const text = Array.from({ length: 8 }, (_, i) => `item ${i}: TODO`).join("\n") + "\n"
      populate(root, { "list.txt": text })
      yield* Effect.gen(function*() {
        expect(yield* run("edit", { path: "list.txt", old: "TODO", new: "done" })).toStrictEqual({
          code: "EDIT_AMBIGUOUS",
          tag: "EditAmbiguousError",
          text: `The old text occurs 8 times in "list.txt" (starting on lines 1, 2, 3, 4, 5, 6, 7, 8); include more ` +
            "of the surrounding lines to make it unique, or set replaceAll to replace them all"
        })
        expect(content(root, "list.txt")).toBe(text)
        expect((yield* run("edit", { path: "list.txt", old: "item 3: TODO", new: "item 3: done" })).code).toBe("ok")
        expect((yield* run("edit", { path: "list.txt", old: "TODO", new: "done", replaceAll: true })).text).toBe(
          `Edited "list.txt": 7 replacements (lines 1, 2, 3, 5, 6, 7, 8)\n` +
            "@@ -1,1 +1,1 @@\n-item 0: TODO\n+item 0: done\n" +
            "@@ -2,1 +2,1 @@\n-item 1: TODO\n+item 1: done\n" +
            "@@ -3,1 +3,1 @@\n-item 2: TODO\n+item 2: done\n" +
            "… 4 more replacements"
        )
      }).pipe(Effect.provide(filesLayer(root)))
      expect(content(root, "list.txt")).toBe(text.replaceAll("TODO", "done"))
    }).pipe(Effect.scoped))

  it.effect("occurrences that share a line name it once in EDIT_AMBIGUOUS", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "pairs.txt": "a = a\nb\n" })
      yield* Effect.gen(function*() {
        expect(yield* run("edit", { path: "pairs.txt", old: "a", new: "c" })).toStrictEqual({
          code: "EDIT_AMBIGUOUS",
          tag: "EditAmbiguousError",
          text: `The old text occurs 2 times in "pairs.txt" (starting on line 1); include more ` +
            "of the surrounding lines to make it unique, or set replaceAll to replace them all"
        })
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("keeps CRLF line endings, a byte-order mark and the file's permissions", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "win.txt": "\uFEFFfirst\r\nsecond\r\nthird\r\n" })
      chmodSync(join(root, "win.txt"), 0o600)
      yield* Effect.gen(function*() {
        // the old text as read shows it: without the \r
        expect((yield* run("edit", { path: "win.txt", old: "first\nsecond", new: "one\ntwo" })).text).toBe(
          `Edited "win.txt": 1 replacement (line 1)\n@@ -1,2 +1,2 @@\n-\uFEFFfirst\n-second\n+\uFEFFone\n+two`
        )
      }).pipe(Effect.provide(filesLayer(root)))
      expect(readFileSync(join(root, "win.txt"))).toStrictEqual(Buffer.from("\uFEFFone\r\ntwo\r\nthird\r\n"))
      expect(statSync(join(root, "win.txt")).mode & 0o7777).toBe(0o600)
    }).pipe(Effect.scoped))

  it.effect("new lines written into a CRLF file get CRLF endings, whatever old matched as", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, {
        "one-line.txt": "a\r\nb\r\nc\r\n",
        "with-crlf.txt": "a\r\nb\r\nc\r\n",
        "endings.txt": "a\r\nb\r\n",
        "same.txt": "a\r\nb\r\n",
        "mixed.txt": "a\r\nb\nc\n",
        "lf.txt": "a\nb\n"
      })
      yield* Effect.gen(function*() {
        // old has no line break, so it matched as given: the new text's LF were written as they came
        expect((yield* run("edit", { path: "one-line.txt", old: "b", new: "b\nb2" })).code).toBe("ok")
        // old written with the file's CRLF, new as read shows it
        expect((yield* run("edit", { path: "with-crlf.txt", old: "b\r\n", new: "b\nb2\n" })).code).toBe("ok")
        // a new text with a \r chooses its own endings; one that differs only in them changes nothing
        expect((yield* run("edit", { path: "endings.txt", old: "a", new: "a\r\nz\n" })).code).toBe("ok")
        expect((yield* run("edit", { path: "same.txt", old: "b\r\n", new: "b\n" })).text).toBe(
          `No change: old and new are the same text, so "same.txt" was left as it is`
        )
        // a file with LF breaks (some or all) is written as given
        expect((yield* run("edit", { path: "mixed.txt", old: "c", new: "c\nd" })).code).toBe("ok")
        expect((yield* run("edit", { path: "lf.txt", old: "b", new: "b\nb2" })).code).toBe("ok")
      }).pipe(Effect.provide(filesLayer(root)))
      expect(content(root, "one-line.txt")).toBe("a\r\nb\r\nb2\r\nc\r\n")
      expect(content(root, "with-crlf.txt")).toBe("a\r\nb\r\nb2\r\nc\r\n")
      expect(content(root, "endings.txt")).toBe("a\r\nz\n\r\nb\r\n")
      expect(content(root, "same.txt")).toBe("a\r\nb\r\n")
      expect(content(root, "mixed.txt")).toBe("a\r\nb\nc\nd\n")
      expect(content(root, "lf.txt")).toBe("a\nb\nb2\n")
    }).pipe(Effect.scoped))

  it.effect("the same old and new text changes nothing; a binary or too large file is refused", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "a.txt": "abc", "b.bin": new Uint8Array([1, 0, 2]), "big.txt": "x".repeat(2048) })
      yield* Effect.gen(function*() {
        expect((yield* run("edit", { path: "a.txt", old: "b", new: "b" })).text).toBe(
          `No change: old and new are the same text, so "a.txt" was left as it is`
        )
        expect(yield* run("edit", { path: "b.bin", old: "x", new: "y" })).toStrictEqual({
          code: "FILE_BINARY",
          tag: "FileBinaryError",
          text: `"b.bin" is a binary file (3 bytes; it holds NUL bytes); edit changes text files only`
        })
        expect((yield* run("edit", { path: "big.txt", old: "x", new: "y" })).text).toBe(
          `"big.txt" is 2 KiB, more than the 1 KiB edit works on; read it in ranges and rewrite it with write, ` +
            "or change it with a command"
        )
        expect((yield* run("edit", { path: "a.txt", old: "", new: "y" })).code).toBe("INVALID_ARGS")
        expect((yield* run("edit", { path: "nope.txt", old: "a", new: "b" })).code).toBe("FILE_NOT_FOUND")
      }).pipe(Effect.provide(filesLayer(root, { maxEditBytes: 1024 })))
    }).pipe(Effect.scoped))

  it.effect("concurrent edits and writes of one file take turns: every edit lands on the text before it, none is lost", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const lines = Array.from({ length: 40 }, (_, i) => `line ${i}`)
      populate(root, { "shared.txt": `${lines.join("\n")}\n` })
      symlinkSync("shared.txt", join(root, "alias.txt"))
      yield* Effect.gen(function*() {
        // half of them through a link: the same file, the same turn
        const results = yield* Effect.all(
          lines.map((line, i) =>
            run("edit", { path: i % 2 === 0 ? "shared.txt" : "alias.txt", old: `${line}\n`, new: `LINE ${i}\n` })
          ),
          { concurrency: "unbounded" }
        )
        expect(results.map((r) => r.code)).toStrictEqual(lines.map(() => "ok"))
      }).pipe(Effect.provide(filesLayer(root)))
      expect(content(root, "shared.txt")).toBe(`${lines.map((_, i) => `LINE ${i}`).join("\n")}\n`)
      expect(readdirSync(root).sort()).toStrictEqual(["alias.txt", "shared.txt"])
    }).pipe(Effect.scoped))

  it.effect("a file with hard links is written in place: edit and write through any of its names reach them all", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "f.txt": "hello\n" })
      linkSync(join(root, "f.txt"), join(root, "hard.txt"))
      chmodSync(join(root, "f.txt"), 0o640)
      const before = statSync(join(root, "f.txt"))
      yield* Effect.gen(function*() {
        expect((yield* run("edit", { path: "hard.txt", old: "hello", new: "bye" })).code).toBe("ok")
        expect(content(root, "f.txt")).toBe("bye\n")
        expect((yield* run("write", { path: "f.txt", content: "a longer text\n" })).code).toBe("ok")
        expect(content(root, "hard.txt")).toBe("a longer text\n")
        expect((yield* run("write", { path: "hard.txt", content: "short\n" })).code).toBe("ok")
      }).pipe(Effect.provide(filesLayer(root)))
      const after = statSync(join(root, "f.txt"))
      // one file still, two names, its bits as they were; shorter content leaves no tail behind
      expect([after.ino, after.nlink, after.mode & 0o7777]).toStrictEqual([before.ino, 2, 0o640])
      expect(content(root, "f.txt")).toBe("short\n")
      expect(readdirSync(root).sort()).toStrictEqual(["f.txt", "hard.txt"])
    }).pipe(Effect.scoped))

  it.effect("a file that changes while it is edited is not overwritten: FILE_IO EAGAIN", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "a.txt": "one\n" })
      // "path" mode checks the root after each open of the file: another writer appends right after the
      // second (the edit's open once it holds the file's lock, before it reads)
      const fileSystem = adversary("lstat", root, () => populate(root, { "a.txt": "one\nadded by another writer\n" }), 2)
      yield* Effect.gen(function*() {
        expect(yield* run("edit", { path: "a.txt", old: "one", new: "1" })).toStrictEqual({
          code: "FILE_IO",
          tag: "FileIoError",
          text: `"a.txt" changed while it was being edited; nothing was written: read it again`
        })
      }).pipe(Effect.provide(modeLayer(root, { descriptors: false, fileSystem })))
      expect(content(root, "a.txt")).toBe("one\nadded by another writer\n")
    }).pipe(Effect.scoped))
})
