import { describe, expect, it } from "@effect/vitest"
import { Effect, Glob } from "effect"
import { mkdirSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { globProblem } from "../src/internal/pattern.ts"
import { codeOf, execute, filesLayer, loneSurrogate, populate, tempDir, textOf } from "./fixtures.ts"

const run = (name: string, args: object) =>
  Effect.map(execute(name, args), (r) => ({ code: codeOf(r), text: textOf(r) }))

const project = (root: string) => {
  populate(root, {
    "README.md": "# Demo\nSee src/index.ts\n",
    "src/index.ts": "export const main = () => greet('world')\n",
    "src/greet.ts": "export const greet = (name: string) => `Hello, ${name}`\n// TODO: i18n\n",
    "src/util/strings.ts": "export const upper = (s: string) => s.toUpperCase() // todo\n",
    "src/.hidden.ts": "export const secret = 'TODO'\n",
    "test/greet.test.ts": "greet('test') // TODO\n",
    "node_modules/lib/index.ts": "export const TODO = 1\n",
    ".git/HEAD": "ref: refs/heads/main TODO\n",
    "assets/logo.png": new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x54, 0x4f, 0x44, 0x4f]),
    "dist/bundle.js": `${"x".repeat(4096)} TODO\n`
  })
}

describe("list", () => {
  it.effect("lists a directory in name order: directories with /, files with sizes, links with @", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      project(root)
      symlinkSync("src/index.ts", join(root, "entry.ts"))
      yield* Effect.gen(function*() {
        expect((yield* run("list", {})).text).toBe(
          [
            "./ (8 entries)",
            ".git/",
            "README.md (24 bytes)",
            "assets/",
            "dist/",
            "entry.ts@ (symbolic link)",
            "node_modules/",
            "src/",
            "test/"
          ].join("\n")
        )
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("paths are root-relative; a long listing is cut and says so; a file or a missing path is refused", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      project(root)
      yield* Effect.gen(function*() {
        expect((yield* run("list", { path: "src" })).text).toBe(
          "src/ (4 entries)\nsrc/.hidden.ts (29 bytes)\nsrc/greet.ts (70 bytes)\nsrc/index.ts (41 bytes)\nsrc/util/"
        )
        expect((yield* run("list", { path: "src", limit: 2 })).text).toBe(
          "src/ (4 entries)\nsrc/.hidden.ts (29 bytes)\nsrc/greet.ts (70 bytes)\n" +
            "… 2 more entries not shown (list a subdirectory, or glob to filter)"
        )
        expect(yield* run("list", { path: "README.md" })).toStrictEqual({
          code: "FILE_IO",
          text: `Cannot list "README.md": it is not a directory; read it instead`
        })
        expect((yield* run("list", { path: "nope" })).code).toBe("FILE_NOT_FOUND")
        mkdirSync(join(root, "empty"))
        expect((yield* run("list", { path: "empty/" })).text).toBe("empty/ (0 entries)")
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))
})

describe("glob", () => {
  it.effect("finds matching files in path order, skipping dot names and ignored directories", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      project(root)
      yield* Effect.gen(function*() {
        expect((yield* run("glob", { pattern: "**/*.ts" })).text).toBe(
          [
            "src/greet.ts",
            "src/index.ts",
            "src/util/strings.ts",
            "test/greet.test.ts",
            "(ignored: .git, node_modules; give a path inside one to search it)"
          ].join("\n")
        )
        expect((yield* run("glob", { pattern: "**/.*.ts" })).text).toBe(
          "src/.hidden.ts\n(ignored: .git, node_modules; give a path inside one to search it)"
        )
        // relative to path, shown from the root; a path inside an ignored directory is searched
        expect((yield* run("glob", { pattern: "*.ts", path: "src" })).text).toBe("src/greet.ts\nsrc/index.ts")
        expect((yield* run("glob", { pattern: "**/*.ts", path: "node_modules" })).text).toBe("node_modules/lib/index.ts")
        expect((yield* run("glob", { pattern: "src/*/" })).text).toBe("src/util/")
        expect((yield* run("glob", { pattern: "{README,LICENSE}.md" })).text).toBe(
          "README.md\n(ignored: .git, node_modules; give a path inside one to search it)"
        )
        expect((yield* run("glob", { pattern: "docs/**/*.md" })).text).toBe(`No files match "docs/**/*.md" under "."`)
        expect((yield* run("glob", { pattern: "**/*.ts", limit: 2 })).text).toBe(
          "src/greet.ts\nsrc/index.ts\n… 2 more not shown (narrow the pattern or the path)\n" +
            "(ignored: .git, node_modules; give a path inside one to search it)"
        )
        expect((yield* run("glob", { pattern: "**/*.ts", path: "README.md" })).code).toBe("FILE_IO")
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("a malformed pattern is INVALID_ARGS naming it and what is wrong, not an answer of no matches", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      project(root)
      populate(root, { "src/[draft].ts": "x\n" })
      const refused = (tool: string, args: object) =>
        Effect.map(execute(tool, args), (r) => {
          expect(r.error).toStrictEqual({ tag: "ToolArgsError", code: "INVALID_ARGS" })
          return textOf(r)
        })
      yield* Effect.gen(function*() {
        expect(yield* refused("glob", { pattern: "src/[ab.ts" })).toBe(
          `Invalid arguments for tool "glob" (1 problem):\n- at pattern: Expected a valid glob pattern: the "[" at ` +
            `character 5 opens a set of characters that no "]" closes within its path segment (write \\[ to match ` +
            `a "[" itself), got "src/[ab.ts"`
        )
        expect(yield* refused("glob", { pattern: "**/*.{ts,md" })).toBe(
          `Invalid arguments for tool "glob" (1 problem):\n- at pattern: Expected a valid glob pattern: the "{" at ` +
            `character 6 opens alternatives that no "}" closes (write \\{ to match a "{" itself), got "**/*.{ts,md"`
        )
        // a set ends in its own path segment
        expect(yield* refused("glob", { pattern: "src/[a/b]*.ts" })).toMatch(/the "\[" at character 5 opens a set/)
        // search's file filter is a glob pattern too
        expect(yield* refused("search", { pattern: "TODO", glob: "*.{ts" })).toMatch(
          /^Invalid arguments for tool "search" \(1 problem\):\n- at glob: Expected a valid glob pattern: the "\{" at character 3/
        )
        // escaped, the characters match themselves; a "]" first in a set is one of its members
        expect((yield* run("glob", { pattern: "src/\\[draft].ts" })).text).toBe("src/[draft].ts")
        expect((yield* run("glob", { pattern: "src/[[]draft[]].ts" })).text).toBe("src/[draft].ts")
        expect((yield* run("glob", { pattern: "{src,test}/[[:lower:]]*.ts" })).text).toBe(
          "src/greet.ts\nsrc/index.ts\ntest/greet.test.ts\n(ignored: .git, node_modules; give a path inside one to search it)"
        )
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("a directory pattern of plain names matches that directory; a prefix through a link out is refused, named", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const outside = yield* tempDir
      project(root)
      populate(outside, { "secret.ts": "x\n" })
      symlinkSync(outside, join(root, "src/out"))
      yield* Effect.gen(function*() {
        // the walk started inside the directory the pattern names, where it never meets it
        expect((yield* run("glob", { pattern: "src/util/" })).text).toBe("src/util/")
        expect((yield* run("glob", { pattern: "src/" })).text).toBe(
          "src/\n(ignored: .git, node_modules; give a path inside one to search it)"
        )
        expect((yield* run("glob", { pattern: "util/", path: "src" })).text).toBe("src/util/")
        expect((yield* run("glob", { pattern: "src/nope/" })).text).toBe(`No directories match "src/nope/" under "."`)
        // the walk would start at src/out, not at path (".")
        expect(yield* run("glob", { pattern: "src/out/*.ts" })).toStrictEqual({
          code: "TOOL_DENIED",
          text: `Tool "glob" was denied: "src/out" leads through the symbolic link "src/out" to ${
            JSON.stringify(outside)
          }, outside the workspace root ${JSON.stringify(root)}`
        })
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it("refuses exactly the patterns effect's Glob would take literally", () => {
    const malformed = ["[", "a[", "[]", "[!]", "[^]", "a[b/c]", "[a-\\]", "{", "{a,b", "{a,{b}", "x/{c"]
    for (const pattern of malformed) {
      expect(globProblem(pattern), pattern).toBeDefined()
      // what would have been read as a plain character: the pattern matches itself, unescaped
      expect(Glob.match(Glob.make(pattern), pattern.replaceAll("\\", "")), pattern).toBe(true)
    }
    const wellFormed = ["*.ts", "[]]", "[!]]", "[a-\\]]", "[[:digit:]]", "[[:nope:]]", "\\[", "a\\{", "{a}", "a}", "]", "[{]"]
    for (const pattern of wellFormed) expect(globProblem(pattern), pattern).toBeUndefined()
  })

  it.effect("ignore patterns and the walk's bound are configurable", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      project(root)
      yield* Effect.gen(function*() {
        expect((yield* run("glob", { pattern: "**/*.ts" })).text).toBe(
          "node_modules/lib/index.ts\nsrc/greet.ts\nsrc/index.ts\n(ignored: README.md, util, test; give a path inside one to search it)"
        )
      }).pipe(Effect.provide(filesLayer(root, { ignore: ["util", "test", "*.md"] })))
      yield* Effect.gen(function*() {
        expect((yield* run("glob", { pattern: "**/*" })).text).toBe(
          "README.md\n(stopped after looking at 3 entries: give a narrower path to see the rest)\n" +
            "(ignored: .git; give a path inside one to search it)"
        )
      }).pipe(Effect.provide(filesLayer(root, { maxWalkEntries: 3 })))
    }).pipe(Effect.scoped))
})

describe("search", () => {
  it.effect("finds the lines containing a text as path:line: excerpt, skipping binary, large and ignored files", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      project(root)
      yield* Effect.gen(function*() {
        expect((yield* run("search", { pattern: "TODO" })).text).toBe(
          [
            "src/.hidden.ts:1: export const secret = 'TODO'",
            "src/greet.ts:2: // TODO: i18n",
            "test/greet.test.ts:1: greet('test') // TODO",
            "(skipped 1 binary file, 1 file over 1 KiB)",
            "(ignored: .git, node_modules; give a path inside one to search it)"
          ].join("\n")
        )
        expect((yield* run("search", { pattern: "todo", ignoreCase: true, path: "src" })).text).toBe(
          [
            "src/.hidden.ts:1: export const secret = 'TODO'",
            "src/greet.ts:2: // TODO: i18n",
            "src/util/strings.ts:1: export const upper = (s: string) => s.toUpperCase() // todo"
          ].join("\n")
        )
        // the text is literal: regular expression characters are just characters
        expect((yield* run("search", { pattern: "greet('" })).text).toBe(
          "src/index.ts:1: export const main = () => greet('world')\ntest/greet.test.ts:1: greet('test') // TODO\n" +
            "(skipped 1 binary file, 1 file over 1 KiB)\n" +
            "(ignored: .git, node_modules; give a path inside one to search it)"
        )
        expect((yield* run("search", { pattern: "TODO", path: "src/greet.ts" })).text).toBe("src/greet.ts:2: // TODO: i18n")
        expect((yield* run("search", { pattern: "nothing like this", path: "src" })).text).toBe(
          `No matches for "nothing like this" under "src" (4 files searched)`
        )
      }).pipe(Effect.provide(filesLayer(root, { maxSearchFileBytes: 1024 })))
    }).pipe(Effect.scoped))

  it.effect("regular expressions, a file filter and a bound on matches", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      project(root)
      yield* Effect.gen(function*() {
        expect((yield* run("search", { pattern: "^export const \\w+ = \\(", regex: true, glob: "*.ts" })).text).toBe(
          "src/greet.ts:1: export const greet = (name: string) => `Hello, ${name}`\n" +
            "src/index.ts:1: export const main = () => greet('world')\n" +
            "src/util/strings.ts:1: export const upper = (s: string) => s.toUpperCase() // todo\n" +
            "(ignored: .git, node_modules; give a path inside one to search it)"
        )
        expect((yield* run("search", { pattern: "export", glob: "src/util/**", limit: 5 })).text).toBe(
          "src/util/strings.ts:1: export const upper = (s: string) => s.toUpperCase() // todo\n" +
            "(ignored: .git, node_modules; give a path inside one to search it)"
        )
        expect((yield* run("search", { pattern: "export", path: "src", limit: 2 })).text).toBe(
          "src/.hidden.ts:1: export const secret = 'TODO'\nsrc/greet.ts:1: export const greet = (name: string) => `Hello, ${name}`\n" +
            "(stopped at 2 matches: narrow the search with path or glob)"
        )
        const invalid = yield* execute("search", { pattern: "greet(", regex: true })
        expect(invalid.error).toStrictEqual({ tag: "ToolArgsError", code: "INVALID_ARGS" })
        expect(textOf(invalid)).toMatch(/^Invalid arguments for tool "search" \(1 problem\):\n- at pattern: Invalid regular expression/)
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("patterns are Unicode: astral characters are one character, \\p{…} classes work, a lone brace says how to escape it", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "faces.txt": "😀\nab\nÉcole\n𝒳 = 1\nfn() {}\n" })
      yield* Effect.gen(function*() {
        // one character per line: the emoji is one, not two halves
        expect((yield* run("search", { pattern: "^.$", regex: true })).text).toBe("faces.txt:1: 😀")
        expect((yield* run("search", { pattern: "^[😀]$", regex: true })).text).toBe("faces.txt:1: 😀")
        expect((yield* run("search", { pattern: "^\\p{Lu}\\p{Ll}+$", regex: true })).text).toBe("faces.txt:3: École")
        expect((yield* run("search", { pattern: "\\u{1D4B3}", regex: true })).text).toBe("faces.txt:4: 𝒳 = 1")
        expect((yield* run("search", { pattern: "ÉCOLE", ignoreCase: true })).text).toBe("faces.txt:3: École")
        // text, not a regex: braces are plain characters
        expect((yield* run("search", { pattern: "() {}" })).text).toBe("faces.txt:5: fn() {}")
        expect((yield* run("search", { pattern: "\\(\\) \\{\\}", regex: true })).text).toBe("faces.txt:5: fn() {}")
        const lone = yield* execute("search", { pattern: "fn() {", regex: true })
        expect(lone.error).toStrictEqual({ tag: "ToolArgsError", code: "INVALID_ARGS" })
        expect(textOf(lone)).toContain("compiled with the u flag")
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("an excerpt never splits a surrogate pair (half of one is no UTF-8 on the wire)", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      // the excerpt would start (at 450) and end (at 650) inside an emoji
      populate(root, { "emoji.txt": `${"a".repeat(449)}😀${"a".repeat(49)}NEEDLE${"b".repeat(143)}😀${"b".repeat(300)}\n` })
      yield* Effect.gen(function*() {
        const text = (yield* run("search", { pattern: "NEEDLE" })).text
        expect(text).toBe(`emoji.txt:1: …${"a".repeat(49)}NEEDLE${"b".repeat(143)}…`)
        expect(text).not.toMatch(loneSurrogate)
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))

  it.effect("long lines are shown as an excerpt around the match", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      populate(root, { "min.js": `${"a".repeat(500)}NEEDLE${"b".repeat(500)}\n` })
      yield* Effect.gen(function*() {
        const text = (yield* run("search", { pattern: "NEEDLE" })).text
        expect(text).toBe(`min.js:1: …${"a".repeat(50)}NEEDLE${"b".repeat(144)}…`)
      }).pipe(Effect.provide(filesLayer(root)))
    }).pipe(Effect.scoped))
})
