/**
 * Programs of the text tools whose language can run a command: awk (`system()`, a pipe to or
 * from a command) and sed (GNU sed's `e` command and `s///e` flag). The policy does not read
 * these languages as it reads the shell's, so a program that can run a command hides what it
 * runs, like inline code of another language. One that cannot (`awk '{print $1}'`,
 * `sed 's/a/b/g'`) runs nothing but the tool, and is read as its words.
 *
 * Each reading is linear in the program's length and never throws; a program it cannot read
 * (a sed script it does not follow, a word that is an expansion) is taken to run a command.
 */
import * as Shell from "./shell.ts"

/** What a text tool's options and operands say about the program it runs. */
export type Program =
  /** It runs nothing but itself (its program is shown and cannot run a command). */
  | { readonly _tag: "Plain" }
  /** Its program can run a command, or cannot be read. */
  | { readonly _tag: "Runs" }
  /** Its program is a file (`awk -f prog.awk`, `sed -f prog.sed`), at this word. */
  | { readonly _tag: "File"; readonly at: number }

const plain: Program = { _tag: "Plain" }
const runs: Program = { _tag: "Runs" }

/**
 * Walks the options of the program at `at`, up to `--` or its first operand, handing each to
 * `option` with its index; `option` gives the index of the option's last word (past a value it
 * took), or `undefined` when the option makes the program unreadable. An option that is an
 * expansion could be anything (`-f FILE`, `-e 'system(…)'`): unreadable. Gives the index of the
 * first operand, or `undefined` for an unreadable program.
 */
const walkOptions = (
  words: ReadonlyArray<Shell.Word>,
  at: number,
  option: (word: Shell.Word, i: number) => number | undefined
): number | undefined => {
  for (let i = at + 1; i < words.length; i++) {
    const word = words[i]!
    if (word.dynamic) return undefined
    if (word.text === "--") return i + 1
    if (!word.text.startsWith("-") || word.text === "-") return i
    const last = option(word, i)
    if (last === undefined) return undefined
    i = last
  }
  return words.length
}

// ---------------------------------------------------------------------------------------------
// awk

/**
 * Whether an awk program can run a command: `system(…)`, output piped to a command
 * (`print … | "cmd"`, `|&`), a command piped into `getline`, or an extension loaded with
 * `@load`. `|` alone is also an alternation in a regular expression (`/a|b/`), so it counts
 * only after `print`/`printf` in the same statement or before `getline`.
 */
export const awkRuns = (program: string): boolean =>
  /\bsystem\s*\(/.test(program) ||
  /\|&/.test(program) ||
  /\|\s*getline\b/.test(program) ||
  /\bprintf?\b[^;{}\n]*\|(?!\|)/.test(program) ||
  /@load\b/.test(program)

/** awk's options that take a value (POSIX, gawk, mawk, busybox): the next word or the rest of a cluster. */
const awkValues = new Set(["-F", "-v", "-f", "-e", "-i", "-l", "-E", "-W", "--file", "--source", "--include", "--load", "--exec", "--field-separator", "--assign"])
/** Options whose value is a program file, and those whose value is program text. */
const awkFiles = new Set(["-f", "-E", "-i", "--file", "--exec", "--include"])
const awkSources = new Set(["-e", "--source"])

/** How an awk option word reads: its name, and its value attached (`-F:`, `--file=x`) if any. */
const optionParts = (text: string, values: ReadonlySet<string>): { readonly name: string; readonly attached?: string } => {
  if (text.startsWith("--")) {
    const eq = text.indexOf("=")
    return eq < 0 ? { name: text } : { name: text.slice(0, eq), attached: text.slice(eq + 1) }
  }
  // a cluster: the first letter that takes a value takes the rest of the word
  for (let k = 1; k < text.length; k++) {
    const name = `-${text[k]}`
    if (values.has(name)) return k + 1 < text.length ? { name, attached: text.slice(k + 1) } : { name }
  }
  return { name: text }
}

/** The program `awk` (or gawk, mawk, nawk, busybox awk) at `at` runs. */
export const awkProgram = (words: ReadonlyArray<Shell.Word>, at: number): Program => {
  let file: number | undefined
  let sources = 0
  const operand = walkOptions(words, at, (word, i) => {
    const { attached, name } = optionParts(word.text, awkValues)
    if (!awkValues.has(name)) return i
    const value = attached ?? words[i + 1]?.text
    if (attached === undefined) {
      if (words[i + 1]?.dynamic === true && (awkFiles.has(name) || awkSources.has(name))) return undefined
      i++
    }
    if (awkFiles.has(name)) file ??= i
    if (awkSources.has(name)) {
      sources++
      if (value === undefined || awkRuns(value)) return undefined
    }
    return i
  })
  if (operand === undefined) return runs
  const i = operand
  if (file !== undefined) return { _tag: "File", at: file }
  if (sources > 0) return plain
  const program = words[i]
  if (program === undefined) return plain
  return program.dynamic || awkRuns(program.text) ? runs : plain
}

// ---------------------------------------------------------------------------------------------
// sed

/** sed's commands of one letter that take nothing more. */
const sedSimple = new Set("=dDgGhHnNpPxzFlLqQ".split(""))

/** The end of a delimited part (`s/…/…/`, `/…/`) from `from`: the index of the closing delimiter, or -1. */
const delimited = (script: string, from: number, delimiter: string): number => {
  let inClass = false
  for (let j = from; j < script.length; j++) {
    const c = script[j]!
    if (c === "\\") j++
    else if (c === "\n" && delimiter !== "\n") return -1
    // a `[…]` class may hold the delimiter (`s/[/]/x/`)
    else if (c === "[" && !inClass) inClass = true
    else if (c === "]" && inClass) inClass = false
    else if (c === delimiter && !inClass) return j
  }
  return -1
}

/** Past an address (`12`, `$`, `/re/`, `\%re%`, with `I`/`M`, `first~step`, `,+N`), from `i`; -1 if it does not close. */
const pastAddress = (script: string, i: number): number => {
  const c = script[i]
  if (c === "/" || c === "\\") {
    const delimiter = c === "/" ? "/" : script[i + 1]
    if (delimiter === undefined) return -1
    const end = delimited(script, c === "/" ? i + 1 : i + 2, delimiter)
    if (end < 0) return -1
    let j = end + 1
    while (script[j] === "I" || script[j] === "M") j++
    return j
  }
  let j = i
  if (script[j] === "$") return j + 1
  while (j < script.length && /[0-9~+]/.test(script[j]!)) j++
  return j
}

/** Past the rest of a line (a label, a file name, `a`'s text): the index of its newline, or the end. */
const toEndOfLine = (script: string, i: number): number => {
  const end = script.indexOf("\n", i)
  return end < 0 ? script.length : end
}

/** Past a label of `b`, `t`, `T`, `:`: it ends at a newline or `;`. */
const pastLabel = (script: string, i: number): number => {
  let j = i
  while (j < script.length && script[j] !== "\n" && script[j] !== ";") j++
  return j
}

/**
 * Past `s/re/replacement/flags` at `i` (the `s`); `"runs"` when a flag is `e` (the pattern
 * space run as a command), -1 when it does not close.
 */
const pastSubstitution = (script: string, i: number): number | "runs" => {
  const delimiter = script[i + 1]
  if (delimiter === undefined || delimiter === "\\" || delimiter === "\n") return -1
  const re = delimited(script, i + 2, delimiter)
  if (re < 0) return -1
  const replacement = delimited(script, re + 1, delimiter)
  if (replacement < 0) return -1
  let j = replacement + 1
  while (j < script.length && /[0-9gpiImMe]/.test(script[j]!)) {
    if (script[j] === "e") return "runs"
    j++
  }
  // the `w FILE` flag writes a file, to the end of the line
  return script[j] === "w" ? toEndOfLine(script, j) : j
}

/**
 * Whether a sed script can run a command (`e COMMAND`, `e` alone, `s///e`), reading it as GNU
 * sed does; a script it cannot follow counts as one that can (sed itself refuses most of those).
 */
export const sedRuns = (script: string): boolean => {
  let i = 0
  while (i < script.length) {
    const c = script[i]!
    if (" \t\n;{}!".includes(c)) {
      i++
      continue
    }
    if (c === "#") {
      i = toEndOfLine(script, i)
      continue
    }
    if (c === "/" || c === "\\" || c === "$" || /[0-9]/.test(c)) {
      const end = pastAddress(script, i)
      if (end < 0) return true
      i = end
      if (script[i] === ",") {
        const second = pastAddress(script, i + 1)
        if (second < 0) return true
        i = second
      }
      continue
    }
    if (c === "e") return true
    if (c === "s") {
      const end = pastSubstitution(script, i)
      if (end === "runs" || end < 0) return true
      i = end
    } else if (c === "y") {
      const first = delimited(script, i + 2, script[i + 1] ?? "")
      const second = first < 0 ? -1 : delimited(script, first + 1, script[i + 1]!)
      if (second < 0) return true
      i = second + 1
    } else if ("aic".includes(c)) {
      // `a\` text lines end at an unescaped newline
      let j = i + 1
      while (j < script.length && !(script[j] === "\n" && script[j - 1] !== "\\")) j++
      i = j
    } else if ("rRwWv".includes(c)) i = toEndOfLine(script, i)
    else if ("btT:".includes(c)) i = pastLabel(script, i + 1)
    else if (sedSimple.has(c)) {
      i++
      while (i < script.length && /[0-9]/.test(script[i]!)) i++
    } else return true
  }
  return false
}

/** sed's options that take a value (GNU sed 4.9, BSD sed). */
const sedValues = new Set(["-e", "-f", "-l", "--expression", "--file", "--line-length"])
/** Options whose value, if any, is attached only: `-i.bak`, `--in-place=.bak`. */
const sedAttached = new Set(["-i", "-I"])

/** A sed option word that takes a value: its name, and the value if attached (`-es/a/b/`, `-ne p`: `-e` takes the next word). */
const sedOption = (text: string): { readonly name: string; readonly attached?: string } | undefined => {
  if (text.startsWith("--")) return sedValues.has(text) ? { name: text } : undefined
  for (let k = 1; k < text.length; k++) {
    const name = `-${text[k]}`
    // `-i.bak`: the rest of the word is a suffix
    if (sedAttached.has(name)) return undefined
    if (sedValues.has(name)) return k + 1 < text.length ? { name, attached: text.slice(k + 1) } : { name }
  }
  return undefined
}

/** The program `sed` at `at` runs: its `-e` scripts, or its first operand, or a file (`-f`); `--sandbox` runs none. */
export const sedProgram = (words: ReadonlyArray<Shell.Word>, at: number): Program => {
  const scripts: Array<string> = []
  let file: number | undefined
  let sandbox = false
  const operand = walkOptions(words, at, (word, i) => {
    if (word.text === "--sandbox") sandbox = true
    if (word.text.startsWith("--") && word.text.includes("=")) {
      const { attached, name } = optionParts(word.text, sedValues)
      if (name === "--expression") scripts.push(attached ?? "")
      if (name === "--file") file ??= i
      return i
    }
    const option = sedOption(word.text)
    if (option === undefined) return i
    if (option.attached === undefined) {
      if (words[i + 1]?.dynamic === true) return undefined
      i++
    }
    const value = option.attached ?? words[i]?.text
    if (option.name === "-e" || option.name === "--expression") scripts.push(value ?? "")
    if (option.name === "-f" || option.name === "--file") file ??= i
    return i
  })
  if (operand === undefined) return runs
  const i = operand
  if (file !== undefined) return sandbox ? plain : { _tag: "File", at: file }
  if (scripts.length === 0) {
    const script = words[i]
    if (script === undefined) return plain
    if (script.dynamic) return runs
    scripts.push(script.text)
  }
  // GNU sed joins its -e scripts with newlines
  return !sandbox && sedRuns(scripts.join("\n")) ? runs : plain
}

/** awk by its names (`gawk`, `mawk`, `nawk`, `busybox awk` is read past `busybox`). */
export const isAwk = (name: string): boolean => name === "awk" || name === "gawk" || name === "mawk" || name === "nawk"

/** sed by its names (`gsed` is GNU sed on BSD systems). */
export const isSed = (name: string): boolean => name === "sed" || name === "gsed"
