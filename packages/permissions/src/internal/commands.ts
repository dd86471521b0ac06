/**
 * What a simple command runs, for command rules: where a command may start in it (past
 * assignments, reserved words and the programs that run a command they are given, with their
 * options), the shell lines it runs (`eval …`, `bash -c '…'`, `su -c '…'`, `env -S '…'`,
 * `trap '…'`), and whether it runs something the line does not show: a shell reading its
 * script from its input (`echo 'rm x' | bash`, `bash <<'EOF'`, `sudo -s`).
 *
 * The programs' options are read as getopt reads them: short ones in clusters (`-En 19`,
 * `-n19`), long ones with their value in the next word or after `=`, and abbreviated. Where a
 * word can be read two ways (`--us root` is `--user root` to sudo, or an option we do not
 * know; an option word that is an expansion) both readings are followed: a deny rule must see
 * every command the word could start. Linear in the number of words: each word is read once.
 */
import type * as Shell from "./shell.ts"

/** `NAME=value`: an assignment, not a command (but `NAME=value` after `env` too). */
export const assignment = /^[A-Za-z_][A-Za-z0-9_]*=/

/** The last path segment of a word: `/usr/bin/env` runs `env`. */
export const basename = (word: string): string => word.slice(word.lastIndexOf("/") + 1)

/** What a simple command runs. */
export interface Reading {
  /** Where a command may start: each program the command runs, the runners included (`sudo` in `sudo rm`). */
  readonly starts: ReadonlyArray<number>
  /** The shell lines it runs: `eval`'s words, `bash -c`'s line, `su -c`'s, `env -S`'s, `trap`'s. */
  readonly lines: ReadonlyArray<string>
  /** The values it assigns (`x='…'`, `export x='…'`): data that may run as a line later. */
  readonly values: ReadonlyArray<string>
  /**
   * It runs what the line does not show: a shell reading its script from its input, or from a
   * file whose name is an expansion; or more inner text than `budget` allowed.
   */
  readonly hidden: boolean
}

/** What is left of an allowance (characters of inner lines, words to read), shared by the readings it bounds. */
export interface Budget {
  left: number
}

/** How a program that runs a command it is given reads its arguments. */
interface Runner {
  /** Options that take a value: short (`-n`: `-n 19`, `-n19`) and long (`--user`: `--user root`, `--user=root`). */
  readonly values?: ReadonlyArray<string>
  /** Options whose value is optional: the next word may be the value or the command, so both are followed. */
  readonly maybe?: ReadonlyArray<string>
  /** Options whose value is a shell line the program runs (`env -S 'rm x'`). */
  readonly lines?: ReadonlyArray<string>
  /** Options that make it run a shell: with no command after them, one reading its input (`sudo -s`). */
  readonly shells?: ReadonlyArray<string>
  /** Words after the options and before the command: timeout's duration, chroot's directory. */
  readonly operands?: number
  /** It runs its command's words as a shell line, joined (`watch 'rm x'` is `sh -c 'rm x'`). */
  readonly joins?: true
  /** Like su: options anywhere, the other words its user and its shell's arguments, never a command. */
  readonly su?: true
  /** Options after which it runs nothing, only says what a name is (`command -v rm`). */
  readonly queries?: ReadonlyArray<string>
}

// Taken from each program's getopt options (sudo 1.9, coreutils, util-linux, GNU findutils,
// GNU time, procps watch, strace 6); an option with an optional value takes it only after `=`
// or attached, so it is a flag here unless the program reads the next word too (sudo's -h).
const runners: Readonly<Record<string, Runner>> = {
  sudo: {
    values: [
      ..."aCcDgpRrTtUu".split("").map((c) => `-${c}`),
      "--auth-type",
      "--close-from",
      "--login-class",
      "--chdir",
      "--group",
      "--prompt",
      "--chroot",
      "--role",
      "--type",
      "--command-timeout",
      "--other-user",
      "--user"
    ],
    maybe: ["-h", "--host"],
    shells: ["-s", "-i", "--shell", "--login"]
  },
  doas: { values: ["-a", "-C", "-u"], shells: ["-s"] },
  su: {
    values: ["-g", "-G", "-s", "-w", "--group", "--supp-group", "--shell", "--whitelist-environment"],
    lines: ["-c", "--command", "--session-command"],
    su: true
  },
  env: { values: ["-a", "-C", "-u", "--argv0", "--chdir", "--unset"], lines: ["-S", "--split-string"] },
  command: { queries: ["-v", "-V"] },
  builtin: {},
  exec: { values: ["-a"] },
  nohup: {},
  nice: { values: ["-n", "--adjustment"] },
  time: { values: ["-f", "-o", "--format", "--output"] },
  xargs: {
    values: [
      ..."aEILnsPd".split("").map((c) => `-${c}`),
      "--arg-file",
      "--delimiter",
      "--max-args",
      "--max-chars",
      "--max-procs",
      "--process-slot-var"
    ]
  },
  timeout: { values: ["-k", "-s", "--kill-after", "--signal"], operands: 1 },
  setsid: {},
  stdbuf: { values: ["-i", "-o", "-e", "--input", "--output", "--error"] },
  ionice: { values: ["-c", "-n", "-p", "-P", "-u", "--class", "--classdata", "--pid", "--pgid", "--uid"] },
  chrt: { values: ["-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"], operands: 1 },
  taskset: { operands: 1 },
  // flock FILE -c LINE runs a line; flock FILE COMMAND… a command
  flock: { values: ["-w", "-E", "--wait", "--timeout", "--conflict-exit-code"], lines: ["-c", "--command"], operands: 1 },
  unshare: {
    values: [
      ..."RSGwl".split("").map((c) => `-${c}`),
      "--root",
      "--wd",
      "--setuid",
      "--setgid",
      "--propagation",
      "--setgroups",
      "--map-user",
      "--map-group",
      "--map-users",
      "--map-groups",
      "--monotonic",
      "--boottime",
      "--load-interp"
    ]
  },
  nsenter: { values: ["-t", "-S", "-G", "--target", "--setuid", "--setgid"] },
  chroot: { values: ["--userspec", "--groups"], operands: 1 },
  prlimit: { values: ["-p", "-o", "--pid", "--output"] },
  numactl: {
    values: [
      ..."iNCmpPw".split("").map((c) => `-${c}`),
      "--interleave",
      "--cpunodebind",
      "--physcpubind",
      "--membind",
      "--preferred",
      "--preferred-many",
      "--weighted-interleave"
    ]
  },
  strace: {
    values: [
      ..."abeEIoOpPsSuUX".split("").map((c) => `-${c}`),
      "--output",
      "--trace",
      "--trace-path",
      "--signal",
      "--status",
      "--string-limit",
      "--summary-sort-by",
      "--user",
      "--env",
      "--attach",
      "--columns"
    ]
  },
  watch: { values: ["-n", "-q", "--interval", "--equexit"], joins: true },
  fakeroot: { values: ["-l", "-s", "-i", "--lib", "--faked"] },
  eatmydata: {},
  busybox: {}
}

/** The shells that run a line given with `-c`, or else a script file, or else their input. */
const shells = new Set("sh bash rbash dash ash zsh ksh ksh93 mksh pdksh oksh yash posh fish csh tcsh".split(" "))
/** The shells' long options that take the next word: `bash --rcfile f -c '…'`. */
const shellValues = new Set(["--rcfile", "--init-file", "--emulate"])
/** Long options after which a shell runs nothing. */
const shellQueries = new Set(["--help", "--version"])
/** Paths of a process's own input: a script read from one is read from the line's pipe. */
const inputPaths = new Set(["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "/proc/thread-self/fd/0"])

// Words that come before the command they run.
const reserved = new Set(["!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time", "coproc"])

/** The builtins whose arguments are assignments: `export x='…'`. */
const declarers = new Set(["export", "declare", "typeset", "local", "readonly"])

/**
 * A variable's value may run as a line later in the same line (`${x@P}`, `eval "$x"`, an
 * arithmetic subscript `${a[x]}` with `x='b[$(rm y)]'`): a restriction reads it as one.
 */
const assigned = (word: Shell.Word, collect: (value: string) => void): void => {
  const match = assignment.exec(word.text)
  if (match !== null && word.text.length > match[0].length) collect(word.text.slice(match[0].length))
}

/** The values a declaring builtin at `at` assigns, each word counted as work. */
const declared = (words: ReadonlyArray<Shell.Word>, at: number, work: Budget, keep: (value: string) => void): void => {
  for (let k = at + 1; k < words.length; k++) {
    if (--work.left < 0) return
    assigned(words[k]!, keep)
  }
}

// `-` alone is an option too (`env -` is `env -i`): skipping a word is the safe side, as no rule names `-`
const isOptionWord = (text: string): boolean => text.startsWith("-")

const shortName = (letter: string) => `-${letter}`

const hasLong = (list: ReadonlyArray<string> | undefined, name: string) => list?.includes(name) === true

const abbreviates = (list: ReadonlyArray<string> | undefined, name: string) =>
  list?.some((option) => option.startsWith(name)) === true

/** How one option word of a runner reads: how many words after it are its value (`"maybe"`: 0 or 1), and what it holds. */
interface OptionWord {
  readonly takes: 0 | 1 | "maybe"
  /** Its value is a line (attached to it, or the next word when `takes` is not 0). */
  readonly line?: string | "next"
  /** It makes the runner run a shell (`sudo -s`). */
  readonly shell: boolean
  /** It makes the runner run nothing (`command -v`). */
  readonly query?: true
}

const longOption = (runner: Runner, text: string): OptionWord => {
  const eq = text.indexOf("=")
  const name = eq < 0 ? text : text.slice(0, eq)
  const attached = eq < 0 ? undefined : text.slice(eq + 1)
  const exact = hasLong(runner.values, name) || hasLong(runner.lines, name) || hasLong(runner.maybe, name)
  // getopt takes any unambiguous abbreviation of a long option: `--us` is `--user`
  const abbreviated = !exact &&
    (abbreviates(runner.values, name) || abbreviates(runner.lines, name) || abbreviates(runner.maybe, name))
  const isLine = hasLong(runner.lines, name) || (!exact && abbreviates(runner.lines, name))
  const shell = hasLong(runner.shells, name) || abbreviates(runner.shells, name)
  if (attached !== undefined) return isLine ? { takes: 0, line: attached, shell } : { takes: 0, shell }
  const takes = hasLong(runner.maybe, name) || abbreviated ? "maybe" : exact ? 1 : 0
  return { takes, ...(isLine && takes !== 0 ? { line: "next" as const } : {}), shell }
}

const shortOptions = (runner: Runner, text: string): OptionWord => {
  let shell = false
  let query = false
  for (let k = 1; k < text.length; k++) {
    const option = shortName(text[k]!)
    if (runner.shells?.includes(option) === true) shell = true
    if (runner.queries?.includes(option) === true) query = true
    const rest = text.slice(k + 1)
    if (runner.lines?.includes(option) === true) {
      return rest.length > 0 ? { takes: 0, line: rest, shell } : { takes: 1, line: "next", shell }
    }
    if (runner.values?.includes(option) === true) return { takes: rest.length > 0 ? 0 : 1, shell }
    if (runner.maybe?.includes(option) === true) return { takes: rest.length > 0 ? 0 : "maybe", shell }
  }
  return { takes: 0, shell, ...(query ? { query: true as const } : {}) }
}

const anyOption: OptionWord = { takes: "maybe", shell: true }

const optionWord = (runner: Runner, word: Shell.Word, step: Step): OptionWord => {
  // an option word that is an expansion could be any option, one taking a value included
  if (word.dynamic) return anyOption
  // a line repeating a runner's options is read once per distinct word
  const key = `${step.runner}\0${word.text}`
  let option = step.options.get(key)
  if (option === undefined) {
    option = word.text.startsWith("--") ? longOption(runner, word.text) : shortOptions(runner, word.text)
    step.options.set(key, option)
  }
  return option
}

/** What a runner at `at` leads to: where its command may start, the lines it runs, whether it hides one. */
interface Step {
  readonly next: Array<number>
  readonly lines: Array<string>
  hidden: boolean
  /** How many more option words the command's runners may read (see {@link read}). */
  readonly work: Budget
  /** The characters of inner lines left. */
  readonly budget: Budget
  /** The runner's name, and how the command's option words read, by runner and word. */
  readonly runner: string
  readonly options: Map<string, OptionWord>
  /**
   * The option readings of runners of this name already followed in the command (by position
   * and flags): a runner whose options run into the next one's (`sudo --us sudo --us …`) meets
   * them there, and what they lead to is already known.
   */
  readonly seen: Set<number>
}

/**
 * Counts reading a word; past the command's allowance, it is hidden (a line built to make the
 * reading slow, `sudo --us sudo --us …`, matches every restriction, as one nested too deeply does).
 */
const spend = (step: Step): boolean => {
  if (--step.work.left >= 0) return true
  step.hidden = true
  return false
}

/**
 * The words from `from` on as one line (what `eval` and `watch` run), if it is no longer than
 * the budget allows: it is measured before it is made, so that `do eval` ten thousand times
 * over does not make ten thousand lines. `"hidden"` when a word is an expansion or it is too long.
 */
const joined = (words: ReadonlyArray<Shell.Word>, from: number, budget: Budget): string | "hidden" => {
  let length = 0
  for (let k = from; k < words.length; k++) {
    if (words[k]!.dynamic) return "hidden"
    length += words[k]!.text.length + 1
    if (length > budget.left) return "hidden"
  }
  return words.slice(from).map((w) => w.text).join(" ")
}

/** A runner's line in a word: what the line is, unless the word is an expansion (then it hides what runs). */
const lineIn = (step: Step, word: Shell.Word | undefined): void => {
  if (word === undefined) return
  if (word.dynamic) step.hidden = true
  else step.lines.push(word.text)
}

/** A line an option holds: attached to it (`-S'rm x'`), or in the next word. */
const optionLine = (step: Step, option: OptionWord, next: Shell.Word | undefined): void => {
  if (option.line === "next") lineIn(step, next)
  else if (option.line !== undefined) step.lines.push(option.line)
}

/** su and its kind: options anywhere; a line to run, or else a shell reading its input. */
const pastSu = (runner: Runner, words: ReadonlyArray<Shell.Word>, at: number, step: Step): void => {
  let lines = 0
  for (let j = at + 1; j < words.length; j++) {
    const word = words[j]!
    if (!spend(step)) return
    if (word.text === "--") break
    if (!isOptionWord(word.text)) continue
    const option = optionWord(runner, word, step)
    if (option.line !== undefined) lines++
    optionLine(step, option, words[j + 1])
    if (option.takes === 1) j++
  }
  if (lines === 0) step.hidden = true
}

/** Where a runner's options may end: each position, and whether a shell or a query option came before it. */
interface End {
  readonly at: number
  readonly shell: boolean
  readonly query: boolean
}

/** Where a runner's options end, each way they can be read (a `"maybe"` value forks the reading). */
const optionEnds = (runner: Runner, words: ReadonlyArray<Shell.Word>, at: number, step: Step): ReadonlyArray<End> => {
  const ends: Array<End> = []
  const seen = step.seen
  const queue: Array<End> = [{ at: at + 1, shell: false, query: false }]
  while (queue.length > 0) {
    let { at: j, query, shell } = queue.pop()!
    for (;;) {
      const key = j * 4 + (shell ? 2 : 0) + (query ? 1 : 0)
      if (seen.has(key)) break
      seen.add(key)
      const word = words[j]
      if (word === undefined || !isOptionWord(word.text)) {
        ends.push({ at: j, shell, query })
        break
      }
      if (!spend(step)) return ends
      if (word.text === "--") {
        ends.push({ at: j + 1, shell, query })
        break
      }
      const option = optionWord(runner, word, step)
      shell ||= option.shell
      query ||= option.query === true
      optionLine(step, option, words[j + 1])
      if (option.takes === 0) j += 1
      else {
        // a value that is an expansion may be several words, the command among them
        if (words[j + 1]?.dynamic === true) step.next.push(j + 1)
        if (option.takes === "maybe") queue.push({ at: j + 1, shell, query })
        j += 2
      }
    }
  }
  return ends
}

/** What the runners of a command share: the work left, how option words read, which readings were followed. */
interface Shared {
  readonly work: Budget
  readonly budget: Budget
  readonly options: Map<string, OptionWord>
  readonly seen: Map<string, Set<number>>
}

const pastRunner = (runner: Runner, words: ReadonlyArray<Shell.Word>, at: number, shared: Shared): Step => {
  const name = basename(words[at]!.text)
  let seen = shared.seen.get(name)
  if (seen === undefined) shared.seen.set(name, seen = new Set())
  const step: Step = {
    next: [],
    lines: [],
    hidden: false,
    work: shared.work,
    budget: shared.budget,
    options: shared.options,
    runner: name,
    seen
  }
  if (runner.su === true) {
    pastSu(runner, words, at, step)
    return step
  }
  const operands = runner.operands ?? 0
  for (const end of optionEnds(runner, words, at, step)) {
    if (end.query) continue
    for (let k = end.at; k < end.at + operands && k < words.length; k++) {
      if (words[k]!.dynamic) step.next.push(k)
    }
    const start = end.at + operands
    const word = words[start]
    if (word === undefined) {
      if (end.shell) step.hidden = true
    } else if (hasLong(runner.lines, word.text)) {
      // flock FILE -c LINE
      lineIn(step, words[start + 1])
    } else {
      step.next.push(start)
      const line = runner.joins === true ? joined(words, start, step.budget) : undefined
      if (line === "hidden") step.hidden = true
      else if (line !== undefined) step.lines.push(line)
    }
  }
  return step
}

const runnerOf = (word: Shell.Word): Runner | undefined => {
  if (word.dynamic) return undefined
  const name = basename(word.text)
  return Object.hasOwn(runners, name) ? runners[name] : undefined
}

type Script = { readonly _tag: "Line"; readonly text: string } | { readonly _tag: "Hidden" } | undefined

const hiddenScript: Script = { _tag: "Hidden" }

/** The line a word holds; an expansion holds a line the policy cannot see (`bash -c "$X"`). */
const lineOf = (word: Shell.Word | undefined): Script =>
  word === undefined ? undefined : word.dynamic ? hiddenScript : { _tag: "Line", text: word.text }

/** The script a shell runs: the line after `-c`, its input (`-s`, no script, `/dev/stdin`), or a file (not followed). */
const shellScript = (words: ReadonlyArray<Shell.Word>, at: number): Script => {
  let i = at + 1
  let command = false
  let input = false
  while (i < words.length) {
    const word = words[i]!
    const text = word.text
    if (text === "--" || text === "-") {
      i++
      break
    }
    if (!(text.startsWith("-") || text.startsWith("+"))) break
    // an option that is an expansion could be `-c` or `-s`
    if (word.dynamic) return hiddenScript
    if (text.startsWith("--")) {
      if (shellQueries.has(text)) return undefined
      i += shellValues.has(text) ? 2 : 1
      continue
    }
    // each `o` or `O` of a cluster takes the next word (`-eo pipefail`), whatever the sign
    let values = 0
    for (const letter of text.slice(1)) {
      if (letter === "c") command = true
      else if (letter === "s") input = true
      else if (letter === "o" || letter === "O") values++
    }
    i += 1 + values
  }
  if (command) return lineOf(words[i])
  const script = words[i]
  if (input || script === undefined || script.dynamic || inputPaths.has(script.text)) return hiddenScript
  return undefined
}

/** `source FILE` / `. FILE`: a file is not followed, but the line's own input is a script it does not show. */
const sourced = (words: ReadonlyArray<Shell.Word>, at: number): Script => {
  const file = words[at + 1]?.text === "--" ? words[at + 2] : words[at + 1]
  return file !== undefined && (file.dynamic || inputPaths.has(file.text)) ? hiddenScript : undefined
}

/** `trap 'LINE' SIGNAL…`: the line runs when the signal comes. */
const trapped = (words: ReadonlyArray<Shell.Word>, at: number): Script => {
  let i = at + 1
  while (words[i] !== undefined && /^-[lpP]+$/.test(words[i]!.text)) i++
  if (words[i]?.text === "--") i++
  return lineOf(words[i])
}

/** The script the program starting at `at` runs, if it is a shell, `eval`, `source` or `trap`. */
const scriptOf = (words: ReadonlyArray<Shell.Word>, at: number, budget: Budget): Script => {
  const word = words[at]!
  if (word.dynamic) return undefined
  const name = basename(word.text)
  if (name === "eval") {
    if (at + 1 >= words.length) return undefined
    const line = joined(words, at + 1, budget)
    return line === "hidden" ? hiddenScript : { _tag: "Line", text: line }
  }
  if (name === "source" || name === ".") return sourced(words, at)
  if (name === "trap") return trapped(words, at)
  return shells.has(name) ? shellScript(words, at) : undefined
}

/**
 * Reads a simple command: every place a command may start (a breadth-first walk past
 * assignments, reserved words and runners, each word visited once), the lines they run, and
 * whether one of them hides its script. Lines longer than `budget` allows make it hidden.
 */
export const read = (words: ReadonlyArray<Shell.Word>, budget: Budget): Reading => {
  const starts: Array<number> = []
  const lines: Array<string> = []
  const values: Array<string> = []
  let hidden = false
  const seen = new Uint8Array(words.length + 1)
  // each word is read a few times at most in a command anyone writes; more means a line
  // built to be slow to read, and reading stops (hidden) well before that costs anything
  const work: Budget = { left: 4 * words.length + 64 }
  const shared: Shared = { work, budget, options: new Map(), seen: new Map() }
  // a command may start at the start, and after each reserved word (`foo; then rm`, `! rm`)
  const queue = [0]
  words.forEach((word, k) => {
    if (k > 0 && reserved.has(word.text)) queue.push(k + 1)
  })
  const collect = (line: string) => {
    budget.left -= line.length
    if (budget.left < 0) hidden = true
    else lines.push(line)
  }
  const keep = (value: string) => {
    budget.left -= value.length
    if (budget.left >= 0) values.push(value)
  }
  // once something is hidden the command matches every restriction: the rest need not be read
  while (queue.length > 0 && !hidden) {
    const i = queue.pop()!
    if (i >= words.length || seen[i] === 1) continue
    seen[i] = 1
    const word = words[i]!
    // a runner first (`time -p rm`: `time` is a reserved word too), by its name (`/usr/bin/env`)
    const runner = runnerOf(word)
    if (runner !== undefined) {
      starts.push(i)
      const step = pastRunner(runner, words, i, shared)
      for (const next of step.next) queue.push(next)
      step.lines.forEach(collect)
      hidden ||= step.hidden
    } else if (assignment.test(word.text) || reserved.has(word.text)) {
      if (assignment.test(word.text)) assigned(word, keep)
      queue.push(i + 1)
    } else {
      starts.push(i)
      const script = scriptOf(words, i, budget)
      if (script?._tag === "Hidden") hidden = true
      else if (script !== undefined) collect(script.text)
      if (declarers.has(word.text)) declared(words, i, work, keep)
      if (work.left < 0) hidden = true
    }
  }
  return { starts, lines, values, hidden }
}
