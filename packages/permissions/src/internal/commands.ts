/**
 * What a simple command runs, for command rules: where a command may start in it (past
 * assignments, reserved words and the programs that run a command they are given, with their
 * options), where a program's subcommand may be past its own options (`git -C dir push`), the
 * shell lines it runs (`eval …`, `bash -c '…'`, `su -c '…'`, `env -S '…'`, `trap '…'`,
 * `find -exec …`, `ssh host …`), and whether it runs something the line does not show: a
 * shell reading its script from its input or a file (`echo 'rm x' | bash`, `bash <<'EOF'`,
 * `sudo -s`, `bash build.sh`), or code in another language (`python -c`, `node -e`).
 *
 * The programs' options are read as getopt reads them: short ones in clusters (`-En 19`,
 * `-n19`), long ones with their value in the next word or after `=`, and abbreviated. Where a
 * word can be read two ways (`--us root` is `--user root` to sudo, or an option we do not
 * know; an option word that is an expansion) both readings are followed: a deny rule must see
 * every command the word could start. Linear in the number of words: each word is read once.
 */
import * as Programs from "./programs.ts"
import * as Shell from "./shell.ts"

/** `NAME=value`: an assignment, not a command (but `NAME=value` after `env` too). */
export const assignment = /^[A-Za-z_][A-Za-z0-9_]*=/

/** The last path segment of a word: `/usr/bin/env` runs `env`. */
export const basename = (word: string): string => word.slice(word.lastIndexOf("/") + 1)

/** What a simple command runs. */
export interface Reading {
  /** Where a command may start: each program the command runs, the runners included (`sudo` in `sudo rm`). */
  readonly starts: ReadonlyArray<number>
  /**
   * Where the subcommand of a program may be, past the options it reads before it
   * (`git -C dir push`: the program at 0, its subcommand at 3); the word right after the
   * program is not listed, as a pattern reads it anyway.
   */
  readonly subcommands: ReadonlyArray<Subcommand>
  /** The shell lines it runs: `eval`'s words, `bash -c`'s line, `su -c`'s, `env -S`'s, `trap`'s, `find -exec`'s, `ssh`'s. */
  readonly lines: ReadonlyArray<string>
  /** The values it assigns (`x='…'`, `export x='…'`): data that may run as a line later. */
  readonly values: ReadonlyArray<string>
  /**
   * It runs what the line does not show: a shell reading its script from its input or a file,
   * code in another language (`python -c`), a value as a prompt; or more inner text than
   * `budget` allowed.
   */
  readonly hidden: boolean
}

/** A program's subcommand past its own options: the program's position, and the subcommand's. */
export interface Subcommand {
  readonly program: number
  readonly at: number
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
  /** Options (among `values`) whose value is a line of ssh configuration, which may hold a command (`-o ProxyCommand=…`). */
  readonly configs?: ReadonlyArray<string>
  /** Options that make it run a shell: with no command after them, one reading its input (`sudo -s`). */
  readonly shells?: ReadonlyArray<string>
  /** Words after the options and before the command: timeout's duration, chroot's directory, ssh's host. */
  readonly operands?: number
  /** It reads options after its operands too (ssh: `ssh host -t rm x`). */
  readonly permutes?: true
  /** It runs its command's words as a shell line, joined (`watch 'rm x'` is `sh -c 'rm x'`). */
  readonly joins?: true
  /** Words that end its command (parallel's `:::`, after which come the arguments). */
  readonly until?: ReadonlyArray<string>
  /** With no command, it runs what its input says (`… | parallel`, `… | ssh host`: a remote shell reads it). */
  readonly input?: true
  /** Like su and script: options anywhere, the other words its user or file, never a command. */
  readonly su?: true
  /** Options after which it runs nothing, only says what a name is (`command -v rm`). */
  readonly queries?: ReadonlyArray<string>
}

// su's options that take a value, and those whose value is the line it runs: runuser reads both as su does
const suValues = ["-g", "-G", "-s", "-w", "--group", "--supp-group", "--shell", "--whitelist-environment"]
const suLines = ["-c", "--command", "--session-command"]

// Taken from each program's getopt options (sudo 1.9, coreutils, util-linux, GNU findutils,
// GNU time, procps watch, strace 6, OpenSSH 9, GNU parallel); an option with an optional value takes it only after `=`
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
  pkexec: { values: ["--user"] },
  // util-linux runuser: `-u USER [--] COMMAND…`, or su's way with its options first (`runuser -c LINE USER`)
  runuser: { values: ["-u", "--user", ...suValues], lines: suLines },
  // sg GROUP -c LINE, or sg GROUP COMMAND… (its words joined and run by sh)
  sg: { lines: ["-c"], operands: 1, joins: true },
  "systemd-run": {
    values: [
      "-u",
      "--unit",
      "-p",
      "--property",
      "--description",
      "--slice",
      "-E",
      "--setenv",
      "-M",
      "--machine",
      "-H",
      "--host",
      "--uid",
      "--gid",
      "--nice",
      "--working-directory",
      "--service-type",
      "--on-active",
      "--on-boot",
      "--on-startup",
      "--on-unit-active",
      "--on-unit-inactive",
      "--on-calendar",
      "--timer-property",
      "--path-property",
      "--socket-property"
    ]
  },
  ltrace: { values: "aADeFlnopsuwx".split("").map((c) => `-${c}`) },
  // valgrind's own options are all --name=value
  valgrind: {},
  su: { values: suValues, lines: suLines, su: true },
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
  // util-linux script: `-c LINE` runs a line; without it, a shell reading its input
  script: {
    values: [
      ..."IOBTmEo".split("").map((c) => `-${c}`),
      "--log-in",
      "--log-out",
      "--log-io",
      "--log-timing",
      "--logging-format",
      "--echo",
      "--output-limit"
    ],
    lines: ["-c", "--command"],
    su: true
  },
  // the remote command's words are joined and run by the remote user's shell
  ssh: {
    values: "BbcDEeFIiJLlmOoPpQRSWw".split("").map((c) => `-${c}`),
    configs: ["-o"],
    queries: ["-G", "-V"],
    operands: 1,
    permutes: true,
    joins: true,
    input: true
  },
  // GNU parallel runs its command's words as a shell line, once per argument after `:::`
  parallel: {
    values: [
      ..."aCdEIjPnNLS".split("").map((c) => `-${c}`),
      "--arg-file",
      "--arg-file-sep",
      "--arg-sep",
      "--basefile",
      "--colsep",
      "--delimiter",
      "--delay",
      "--halt",
      "--jobs",
      "--joblog",
      "--load",
      "--max-args",
      "--max-replace-args",
      "--memfree",
      "--nice",
      "--results",
      "--retries",
      "--return",
      "--sshlogin",
      "--sshloginfile",
      "--tagstring",
      "--timeout",
      "--tmpdir",
      "--transferfile",
      "--workdir"
    ],
    maybe: ["--replace", "--eof", "--max-lines"],
    joins: true,
    until: [":::", "::::", ":::+", "::::+"],
    input: true
  },
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
  /** Its value is a line of ssh configuration (attached to it, or the next word). */
  readonly config?: string | "next"
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
    if (runner.configs?.includes(option) === true) {
      return rest.length > 0 ? { takes: 0, config: rest, shell } : { takes: 1, config: "next", shell }
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
  /** The characters of inner lines left, charged as each line is found. */
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
 * The words from `from` on (up to a word of `until`) as one line (what `eval`, `watch` and
 * `ssh` run), if it is no longer than the budget allows: it is measured before it is made, so
 * that `do eval` ten thousand times over does not make ten thousand lines. `"hidden"` when a
 * word is an expansion or it is too long.
 */
const joined = (
  words: ReadonlyArray<Shell.Word>,
  from: number,
  budget: Budget,
  until: ReadonlyArray<string> = []
): string | "hidden" => {
  let length = 0
  let end = from
  for (; end < words.length && !until.includes(words[end]!.text); end++) {
    if (words[end]!.dynamic) return "hidden"
    length += words[end]!.text.length + 1
    if (length > budget.left) return "hidden"
  }
  return words.slice(from, end).map((w) => w.text).join(" ")
}

/**
 * A line a runner runs, charged to the budget as it is found: a runner whose options can be
 * read many ways (`watch --int 1 --int 1 …`) finds a line at each, and past the budget the
 * rest is hidden rather than made.
 */
const addLine = (step: Step, line: string): void => {
  step.budget.left -= line.length
  if (step.budget.left < 0) step.hidden = true
  else step.lines.push(line)
}

/** A runner's line in a word: what the line is, unless the word is an expansion (then it hides what runs). */
const lineIn = (step: Step, word: Shell.Word | undefined): void => {
  if (word === undefined) return
  if (word.dynamic) step.hidden = true
  else addLine(step, word.text)
}

/** A line an option holds: attached to it (`-S'rm x'`), or in the next word; or a command in the ssh configuration it gives. */
const optionLine = (step: Step, option: OptionWord, next: Shell.Word | undefined): void => {
  if (option.line === "next") lineIn(step, next)
  else if (option.line !== undefined) addLine(step, option.line)
  const config = option.config === "next" ? next : option.config === undefined ? undefined : { text: option.config, dynamic: false }
  if (config === undefined) return
  // an expansion could be `ProxyCommand …`
  if (config.dynamic) step.hidden = true
  else {
    const command = sshConfigCommand(config.text)
    if (command === "hidden") step.hidden = true
    else if (command !== undefined) addLine(step, command)
  }
}

/** The ssh configuration keywords whose value is a command ssh runs (locally, or on the host: `RemoteCommand`). */
const sshCommandKeys = new Set(["proxycommand", "localcommand", "knownhostscommand", "remotecommand"])

/**
 * The command a line of ssh configuration (`-o Key=Value`, `-o 'Key Value'`) runs, by a shell:
 * `ProxyCommand`, `LocalCommand`, `KnownHostsCommand`, `RemoteCommand` (`none` runs nothing);
 * `"hidden"` for a `Match exec`, whose command the policy does not take apart.
 */
export const sshConfigCommand = (text: string): string | "hidden" | undefined => {
  const match = /^\s*([A-Za-z]+)\s*(?:=\s*|\s+)([\s\S]*)$/.exec(text)
  if (match === null) return undefined
  const key = match[1]!.toLowerCase()
  const value = match[2]!.replace(/^"([\s\S]*)"$/, "$1")
  if (key === "match") return /\bexec\b/i.test(value) ? "hidden" : undefined
  return sshCommandKeys.has(key) && value.trim().length > 0 && value.trim().toLowerCase() !== "none" ? value : undefined
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
const optionEnds = (
  runner: Runner,
  words: ReadonlyArray<Shell.Word>,
  at: number,
  step: Step,
  seen: Set<number> = step.seen
): ReadonlyArray<End> => {
  const ends: Array<End> = []
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

/** The readings of runners by this key already followed in the command (see {@link Step.seen}). */
const seenOf = (shared: Shared, key: string): Set<number> => {
  let seen = shared.seen.get(key)
  if (seen === undefined) shared.seen.set(key, seen = new Set())
  return seen
}

/**
 * Past a runner's operands (timeout's duration, ssh's host): one that is an expansion may be
 * several words, the command among them.
 */
const pastOperands = (runner: Runner, words: ReadonlyArray<Shell.Word>, end: End, step: Step): End => {
  const operands = runner.operands ?? 0
  for (let k = end.at; k < end.at + operands && k < words.length; k++) {
    if (words[k]!.dynamic) step.next.push(k)
  }
  return { ...end, at: end.at + operands }
}

/** Where a runner's command may start: past its options and operands, and the options after them if it reads those too (ssh). */
const commandEnds = (
  runner: Runner,
  words: ReadonlyArray<Shell.Word>,
  at: number,
  step: Step,
  shared: Shared
): ReadonlyArray<End> => {
  const ends = optionEnds(runner, words, at, step)
    .filter((end) => !end.query)
    .map((end) => pastOperands(runner, words, end, step))
  if (runner.permutes !== true) return ends
  // the options after the operands are other positions of the same words: a reading of their own
  const after = seenOf(shared, `${step.runner}\0after`)
  return ends.flatMap((end) =>
    optionEnds(runner, words, end.at - 1, step, after).map((more) => ({
      at: more.at,
      shell: end.shell || more.shell,
      query: more.query
    }))
  )
}

/** A runner's command at `start`: where it starts, and the line it is when the runner joins its words. */
const commandAt = (runner: Runner, words: ReadonlyArray<Shell.Word>, start: number, step: Step): void => {
  step.next.push(start)
  const line = runner.joins === true ? joined(words, start, step.budget, runner.until) : undefined
  if (line === "hidden") step.hidden = true
  else if (line !== undefined) addLine(step, line)
}

const pastRunner = (runner: Runner, words: ReadonlyArray<Shell.Word>, at: number, shared: Shared): Step => {
  const name = basename(words[at]!.text)
  const seen = seenOf(shared, name)
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
  for (const { at: start, query, shell } of commandEnds(runner, words, at, step, shared)) {
    if (query) continue
    const word = words[start]
    if (word === undefined) {
      // no command: a shell (`sudo -s`), or what its input says (`… | parallel`), runs
      if (shell || runner.input === true) step.hidden = true
    } else if (runner.until?.includes(word.text) === true) {
      // `parallel ::: 'rm x'`: no command, so its arguments are the commands
      step.hidden = true
    } else if (hasLong(runner.lines, word.text)) {
      // flock FILE -c LINE
      lineIn(step, words[start + 1])
    } else commandAt(runner, words, start, step)
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

/**
 * The script a shell runs: the line after `-c`; else its input (`-s`, no script,
 * `/dev/stdin`) or a file, which the line does not show either way.
 */
const shellScript = (words: ReadonlyArray<Shell.Word>, at: number): Script => {
  let i = at + 1
  let command = false
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
      else if (letter === "o" || letter === "O") values++
    }
    i += 1 + values
  }
  return command ? lineOf(words[i]) : hiddenScript
}

/** `source FILE` / `. FILE`: a script file (or the line's own input) the line does not show. */
const sourced = (words: ReadonlyArray<Shell.Word>, at: number): Script => {
  const file = words[at + 1]?.text === "--" ? words[at + 2] : words[at + 1]
  return file === undefined ? undefined : hiddenScript
}

/**
 * How an interpreter of another language reads its options. Code it is given inline
 * (`python -c`, `node -e`) can run any command, and the policy reads only the shell's
 * language: such a command hides what it runs. So does one reading its program from its input.
 * A program file (`python x.py`, `python -m pytest`) is a program like any other, not followed.
 */
interface Interpreter {
  /** Options whose value is code: attached (`-e'…'`, `--eval=…`) or the next word. */
  readonly code: ReadonlyArray<string>
  /** Options that take a value, attached (`-Wignore`) or the next word (`-W ignore`). */
  readonly values?: ReadonlyArray<string>
  /** Short options whose value is the rest of their word, if anything (`perl -i.bak`, `-Mstrict`). */
  readonly attached?: ReadonlyArray<string>
  /** Options after which it runs no script operand: a module or file it names (`-m pytest`), its version. */
  readonly ends?: ReadonlyArray<string>
  /** Long options known to take no value; any other long option may take the next word, and both readings are followed. */
  readonly flags?: ReadonlyArray<string>
}

// From each interpreter's manual (CPython 3.13, Node 24, perl 5.36, Ruby 3.3, PHP 8, Lua 5.4).
const interpreters: Readonly<Record<string, Interpreter>> = {
  python: {
    code: ["-c"],
    values: ["-W", "-X", "--check-hash-based-pycs"],
    ends: ["-m", "-V", "-h", "-?", "--version", "--help", "--help-env", "--help-xoptions", "--help-all"]
  },
  node: {
    code: ["-e", "--eval", "-p", "--print"],
    values: [
      "-r",
      "--require",
      "--import",
      "--loader",
      "--experimental-loader",
      "-C",
      "--conditions",
      "--input-type",
      "--env-file",
      "--inspect-port",
      "--title",
      "--disable-warning",
      "--test-reporter",
      "--test-reporter-destination",
      "--test-name-pattern",
      "--watch-path"
    ],
    ends: ["-v", "-h", "--version", "--help", "--v8-options"],
    // node refuses options it does not know: the fork only covers ones missing here
    flags: [
      "--watch",
      "--test",
      "--test-only",
      "--inspect",
      "--inspect-brk",
      "--inspect-wait",
      "--no-warnings",
      "--no-deprecation",
      "--trace-warnings",
      "--trace-deprecation",
      "--trace-uncaught",
      "--throw-deprecation",
      "--pending-deprecation",
      "--enable-source-maps",
      "--preserve-symlinks",
      "--preserve-symlinks-main",
      "--expose-gc",
      "--abort-on-uncaught-exception",
      "--frozen-intrinsics",
      "--jitless",
      "--no-addons",
      "--cpu-prof",
      "--heap-prof",
      "--prof",
      "--experimental-vm-modules",
      "--experimental-strip-types",
      "--experimental-transform-types",
      "--experimental-detect-module",
      "--experimental-require-module",
      "--experimental-test-coverage",
      "--experimental-sqlite",
      "--experimental-websocket"
    ]
  },
  perl: {
    code: ["-e", "-E"],
    values: ["-I"],
    attached: ["-i", "-x", "-C", "-d", "-D", "-M", "-m", "-F"],
    ends: ["-v", "-V", "--version", "--help"]
  },
  ruby: {
    code: ["-e"],
    values: ["-I", "-r", "-C", "-E", "--encoding"],
    attached: ["-x", "-0", "-i", "-W", "-K", "-T", "-F"],
    ends: ["--version", "-h", "--help"]
  },
  php: { code: ["-r", "-B", "-R", "-E"], values: ["-c", "-d", "-z"], ends: ["-f", "-l", "-S", "-v", "-h", "-i", "--version", "--help"] },
  lua: { code: ["-e"], values: ["-l"], ends: ["-v"] }
}

/** An interpreter by its name: `python3.12`, `pypy3` and `nodejs` are python and node. */
const interpreterOf = (name: string): Interpreter | undefined => {
  if (/^(python|pypy)[0-9.]*$/.test(name)) return interpreters.python
  if (name === "nodejs") return interpreters.node
  if (/^lua(jit|[0-9.]+)?$/.test(name)) return interpreters.lua
  return Object.hasOwn(interpreters, name) ? interpreters[name] : undefined
}

/** How an interpreter's option word reads: as code, the end of its options, a flag, or taking the next word (maybe). */
type Reads = "code" | "end" | "flag" | "value" | "maybe"

const interpreterLong = (spec: Interpreter, text: string): Reads => {
  const eq = text.indexOf("=")
  const name = eq < 0 ? text : text.slice(0, eq)
  if (spec.code.includes(name)) return "code"
  if (spec.ends?.includes(name) === true) return "end"
  if (eq >= 0 || spec.flags?.includes(name) === true) return "flag"
  return spec.values?.includes(name) === true ? "value" : "maybe"
}

/** A cluster of short options (`-Sc`, `-lane`), read letter by letter until one takes the rest. */
const interpreterShort = (spec: Interpreter, text: string): Reads => {
  for (let k = 1; k < text.length; k++) {
    const option = shortName(text[k]!)
    if (spec.code.includes(option)) return "code"
    if (spec.ends?.includes(option) === true) return "end"
    if (spec.values?.includes(option) === true) return k + 1 < text.length ? "flag" : "value"
    if (spec.attached?.includes(option) === true) return "flag"
  }
  return "flag"
}

/** Whether an interpreter's script operand hides its program: none (its input), `-`, `/dev/stdin`, an expansion. */
const hidesProgram = (script: Shell.Word | undefined): boolean =>
  script === undefined || script.dynamic || script.text === "-" || inputPaths.has(script.text)

/**
 * The program an interpreter runs, hidden when the line does not show it (inline code, its
 * input, an expansion that could be `-c …`), each way its options can be read.
 */
const interpreted = (spec: Interpreter, words: ReadonlyArray<Shell.Word>, at: number): Script => {
  const queue = [at + 1]
  const seen = new Set<number>()
  while (queue.length > 0) {
    let i = queue.pop()!
    while (!seen.has(i)) {
      seen.add(i)
      const word = words[i]
      if (word === undefined || word.dynamic) return hiddenScript
      if (word.text === "--" || word.text === "-" || !word.text.startsWith("-")) {
        if (hidesProgram(word.text === "--" ? words[i + 1] : word)) return hiddenScript
        break
      }
      const reads = word.text.startsWith("--") ? interpreterLong(spec, word.text) : interpreterShort(spec, word.text)
      if (reads === "code") return hiddenScript
      if (reads === "end") break
      // a value that is an expansion may be several words, `-c …` among them
      if (reads !== "flag" && words[i + 1]?.dynamic === true) return hiddenScript
      if (reads === "maybe") queue.push(i + 2)
      i += reads === "value" ? 2 : 1
    }
  }
  return undefined
}

/** `trap 'LINE' SIGNAL…`: the line runs when the signal comes. */
const trapped = (words: ReadonlyArray<Shell.Word>, at: number): Script => {
  let i = at + 1
  while (words[i] !== undefined && /^-[lpP]+$/.test(words[i]!.text)) i++
  if (words[i]?.text === "--") i++
  return lineOf(words[i])
}

/**
 * What the text tool at `at` runs: hidden when its program can run a command. A program file
 * (`awk -f x.awk`) is a program like any other, as `python3 x.py` is: not followed.
 */
const textProgram = (name: string, words: ReadonlyArray<Shell.Word>, at: number): Script =>
  (Programs.isAwk(name) ? Programs.awkProgram(words, at) : Programs.sedProgram(words, at))._tag === "Runs"
    ? hiddenScript
    : undefined

/** The script the program starting at `at` runs, if it is a shell, an interpreter, awk, sed, `eval`, `source` or `trap`. */
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
  if (shells.has(name)) return shellScript(words, at)
  if (Programs.isAwk(name) || Programs.isSed(name)) return textProgram(name, words, at)
  const interpreter = interpreterOf(name)
  return interpreter === undefined ? undefined : interpreted(interpreter, words, at)
}

/** find's actions that run a command: `-exec CMD ARG… ;` (or `{} +`) and their kin. */
const findActions = new Set(["-exec", "-execdir", "-ok", "-okdir"])

/** Where a find action's command ends: at `;`, or at `+` right after `{}`. */
const actionEnd = (words: ReadonlyArray<Shell.Word>, from: number): number => {
  let end = from
  while (end < words.length && words[end]!.text !== ";" && !(words[end]!.text === "+" && words[end - 1]?.text === "{}")) end++
  return end
}

/**
 * The commands `find … -exec CMD … ;` runs: each a line of its words quoted back, so that it
 * is read like any other line (an `exact` pattern sees its words only). A word that is an
 * expansion could be such an action, or part of its command: it is where a command may start.
 */
const findCommands = (
  words: ReadonlyArray<Shell.Word>,
  at: number,
  work: Budget,
  starts: Array<number>,
  collect: (line: string) => void
): void => {
  for (let k = at + 1; k < words.length; k++) {
    // each word counted as work: `do find` many times over is a line built to be slow
    if (--work.left < 0) return
    if (words[k]!.dynamic) starts.push(k)
    if (!findActions.has(words[k]!.text)) continue
    const end = actionEnd(words, k + 1)
    const command = words.slice(k + 1, end)
    if (command.some((w) => w.dynamic)) starts.push(k + 1)
    else if (command.length > 0) collect(command.map((w) => Shell.quote(w.text)).join(" "))
    k = end
  }
}

/**
 * Programs whose own options may come before their subcommand (`git -C dir push`), so that a
 * rule `git push` matches past them: the options that take a value (the next word, or after
 * `=`) and those that take none. Any other option may take the next word or not, and both
 * readings are followed. Options after the subcommand are the subcommand's, read as words.
 */
interface Subcommanded {
  readonly values: ReadonlyArray<string>
  readonly flags: ReadonlyArray<string>
  /** Options whose `name=value` is configuration that may run as a line (`git -c alias.x='!rm y'`): read as data. */
  readonly data?: ReadonlyArray<string>
}

// git(1)'s global options (2.39 to 2.47), and the global flags of docker, kubectl and npm
const subcommanded: Readonly<Record<string, Subcommanded>> = {
  git: {
    values: ["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--attr-source", "--shallow-file"],
    flags: [
      ..."pPvh".split("").map((c) => `-${c}`),
      "--paginate",
      "--no-pager",
      "--bare",
      "--no-replace-objects",
      "--no-lazy-fetch",
      "--no-optional-locks",
      "--no-advice",
      "--literal-pathspecs",
      "--glob-pathspecs",
      "--noglob-pathspecs",
      "--icase-pathspecs",
      "--exec-path",
      "--html-path",
      "--man-path",
      "--info-path",
      "--version",
      "--help"
    ],
    data: ["-c"]
  },
  docker: {
    values: ["-c", "-H", "-l", "--config", "--context", "--host", "--log-level", "--tlscacert", "--tlscert", "--tlskey"],
    flags: ["-D", "-v", "-h", "--debug", "--tls", "--tlsverify", "--version", "--help"]
  },
  kubectl: {
    values: [
      "-n",
      "-s",
      "-v",
      "--namespace",
      "--context",
      "--cluster",
      "--user",
      "--kubeconfig",
      "--server",
      "--token",
      "--as",
      "--as-group",
      "--as-uid",
      "--certificate-authority",
      "--client-certificate",
      "--client-key",
      "--cache-dir",
      "--request-timeout",
      "--tls-server-name",
      "--v"
    ],
    flags: ["-h", "--help", "--insecure-skip-tls-verify", "--match-server-version", "--warnings-as-errors", "--disable-compression"]
  },
  npm: {
    values: ["-C", "-w", "--prefix", "--workspace", "--userconfig", "--registry", "--loglevel", "--cache"],
    flags: ["-g", "-s", "-q", "-d", "-f", "-y", "--global", "--workspaces", "--silent", "--quiet", "--dry-run", "--force", "--yes", "--json"]
  }
}

/** How many words after a global option word are its value: `=value` or a cluster's rest is attached. */
const globalOption = (program: Subcommanded, text: string): 0 | 1 | "maybe" => {
  if (text.startsWith("--")) {
    if (text.includes("=")) return 0
    return program.values.includes(text) ? 1 : program.flags.includes(text) ? 0 : "maybe"
  }
  for (let k = 1; k < text.length; k++) {
    const option = shortName(text[k]!)
    if (program.values.includes(option)) return k + 1 < text.length ? 0 : 1
    if (!program.flags.includes(option)) return "maybe"
  }
  return 0
}

/**
 * A data option's value (`git -c name=value`): the value may run as a line (`core.pager`,
 * `core.sshCommand`; an alias `!…` runs what follows its `!` in a shell).
 */
const configured = (program: Subcommanded, option: Shell.Word, value: Shell.Word | undefined, keep: (value: string) => void) => {
  if (value === undefined || value.dynamic || program.data?.includes(option.text) !== true) return
  const eq = value.text.indexOf("=")
  const setting = eq < 0 ? "" : value.text.slice(eq + 1).replace(/^!/, "")
  if (setting.length > 0) keep(setting)
}

/**
 * Where the subcommand of the program at `at` may be, past the options it reads before it
 * (`git -C dir --no-pager push`: at `push`), each way they can be read; not the word right
 * after the program. A word that is an expansion may be any words, the subcommand among them.
 * `"hidden"` past the command's allowance of work.
 */
const subcommandsOf = (
  program: Subcommanded,
  words: ReadonlyArray<Shell.Word>,
  at: number,
  work: Budget,
  keep: (value: string) => void
): Array<number> | "hidden" => {
  const found: Array<number> = []
  const reach = new Set([at + 1])
  let furthest = at + 1
  for (let j = at + 1; j <= furthest && j < words.length; j++) {
    if (!reach.has(j)) continue
    if (--work.left < 0) return "hidden"
    const word = words[j]!
    const option = word.dynamic || isOptionWord(word.text)
    if (j > at + 1 && (word.dynamic || !option)) found.push(j)
    if (!option) continue
    const takes = word.dynamic ? "maybe" : globalOption(program, word.text)
    if (takes !== 1) reach.add(j + 1)
    if (takes !== 0) {
      reach.add(j + 2)
      if (words[j + 1]?.dynamic === true) found.push(j + 1)
      configured(program, word, words[j + 1], keep)
    }
    furthest = Math.max(furthest, takes === 0 ? j + 1 : j + 2)
  }
  return found
}

const subcommandedOf = (word: Shell.Word): Subcommanded | undefined => {
  if (word.dynamic) return undefined
  const name = basename(word.text)
  return Object.hasOwn(subcommanded, name) ? subcommanded[name] : undefined
}

/** Where a reading of a command puts what it finds, and what it may spend. */
interface Reader {
  /** Where a command may start, still to be read. */
  readonly queue: Array<number>
  readonly subcommands: Array<Subcommand>
  readonly work: Budget
  readonly budget: Budget
  /** A line it runs; a value it assigns. */
  readonly collect: (line: string) => void
  readonly keep: (value: string) => void
}

/** `alias NAME=VALUE`: the value runs where the name is later used, so it is read as data (the commands it spells out). */
const aliased = (words: ReadonlyArray<Shell.Word>, at: number, reader: Reader): void => {
  for (let k = at + 1; k < words.length; k++) {
    if (--reader.work.left < 0) return
    const eq = words[k]!.text.indexOf("=")
    if (eq <= 0) continue
    if (eq + 1 < words[k]!.text.length) reader.keep(words[k]!.text.slice(eq + 1))
  }
}

/**
 * Programs (not runners) with options whose value is a command they run: ssh's options as
 * scp, sftp and rsync's remote shell give them, tar's programs. `line`: the value is a shell
 * line (or a program and its words); `config`: a line of ssh configuration.
 */
interface CommandOptions {
  /** Options whose value is a shell line, or a program and its words, that it runs. */
  readonly line: ReadonlyArray<string>
  /** Options whose value is a line of ssh configuration. */
  readonly config?: ReadonlyArray<string>
  /** Its short options that take a value: in a cluster, the first of them takes the rest (`-avze ssh`). */
  readonly values: string
}

// from scp(1), sftp(1) (OpenSSH 9), rsync 3.2 and GNU tar 1.35
const commandOptions: Readonly<Record<string, CommandOptions>> = {
  scp: { line: ["-S"], config: ["-o"], values: "cDFiJloPSX" },
  sftp: { line: ["-S", "-D"], config: ["-o"], values: "BbcDFiJloPRSsX" },
  rsync: { line: ["-e", "--rsh", "--rsync-path"], values: "efBTM" },
  tar: {
    line: ["-I", "--use-compress-program", "--to-command", "-F", "--info-script", "--new-volume-script", "--checkpoint-action"],
    values: "bCfFgHIKLNTVX"
  }
}

/** What an option of such a program holds: its name and value (attached, or the next word), or nothing. */
const optionValue = (
  spec: CommandOptions,
  words: ReadonlyArray<Shell.Word>,
  k: number
): { readonly name: string; readonly value: Shell.Word | undefined; readonly attached: boolean } | undefined => {
  const text = words[k]!.text
  if (text.startsWith("--")) {
    const eq = text.indexOf("=")
    if (eq >= 0) return { name: text.slice(0, eq), value: { ...words[k]!, text: text.slice(eq + 1) }, attached: true }
    return { name: text, value: words[k + 1], attached: false }
  }
  for (let c = 1; c < text.length; c++) {
    if (!spec.values.includes(text[c]!)) continue
    const name = `-${text[c]}`
    return c + 1 < text.length
      ? { name, value: { ...words[k]!, text: text.slice(c + 1) }, attached: true }
      : { name, value: words[k + 1], attached: false }
  }
  return undefined
}

/** The commands the options of scp, sftp, rsync and tar run (`rsync -e 'ssh -o ProxyCommand=…'`), as lines; whether one is hidden. */
const optionCommands = (name: string, words: ReadonlyArray<Shell.Word>, at: number, reader: Reader): boolean => {
  const spec = Object.hasOwn(commandOptions, name) ? commandOptions[name]! : undefined
  if (spec === undefined) return false
  for (let k = at + 1; k < words.length; k++) {
    if (--reader.work.left < 0) return true
    const word = words[k]!
    if (word.text === "--") break
    // an option that is an expansion could be `-e CMD`
    if (word.dynamic && isOptionWord(word.text)) return true
    if (!isOptionWord(word.text)) continue
    const option = optionValue(spec, words, k)
    if (option === undefined) continue
    // tar's --checkpoint-action runs only its exec= action
    const runs = spec.line.includes(option.name) &&
      (option.name !== "--checkpoint-action" || option.value?.text.startsWith("exec=") === true)
    const configures = spec.config?.includes(option.name) === true
    if ((runs || configures) && option.value?.dynamic === true) return true
    if (runs && option.value !== undefined) reader.collect(option.value.text.replace(/^exec=/, ""))
    if (configures && option.value !== undefined) {
      const command = sshConfigCommand(option.value.text)
      if (command === "hidden") return true
      if (command !== undefined) reader.collect(command)
    }
    if (!option.attached && (option.name.length === 2 || runs || configures)) k++
  }
  return false
}

/**
 * What the program at `i` (not a runner) runs besides itself: a shell's, an interpreter's or
 * `eval`'s script, the values a declaring builtin assigns, find's actions, its subcommand past
 * its own options. Whether it hides what it runs.
 */
const pastProgram = (words: ReadonlyArray<Shell.Word>, i: number, reader: Reader): boolean => {
  const word = words[i]!
  const script = scriptOf(words, i, reader.budget)
  if (script?._tag === "Hidden") return true
  if (script !== undefined) reader.collect(script.text)
  if (declarers.has(word.text)) declared(words, i, reader.work, reader.keep)
  if (word.text === "alias") aliased(words, i, reader)
  if (!word.dynamic) {
    if (optionCommands(basename(word.text), words, i, reader)) return true
  }
  if (!word.dynamic && basename(word.text) === "find") findCommands(words, i, reader.work, reader.queue, reader.collect)
  const program = subcommandedOf(word)
  const found = program === undefined ? [] : subcommandsOf(program, words, i, reader.work, reader.keep)
  if (found === "hidden") return true
  for (const at of found) reader.subcommands.push({ program: i, at })
  return reader.work.left < 0
}

/**
 * Reads a simple command: every place a command may start (a breadth-first walk past
 * assignments, reserved words and runners, each word visited once), where a program's
 * subcommand may be, the lines they run, and whether one of them hides its script. Lines
 * longer than `budget` allows make it hidden.
 */
export const read = (words: ReadonlyArray<Shell.Word>, budget: Budget): Reading => {
  const starts: Array<number> = []
  const subcommands: Array<Subcommand> = []
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
      // charged to the budget already, as each was found
      for (const line of step.lines) lines.push(line)
      hidden ||= step.hidden
    } else if (assignment.test(word.text) || reserved.has(word.text)) {
      if (assignment.test(word.text)) assigned(word, keep)
      queue.push(i + 1)
    } else {
      starts.push(i)
      hidden ||= pastProgram(words, i, { queue, subcommands, work, budget, collect, keep })
    }
  }
  return { starts, subcommands, lines, values, hidden }
}
