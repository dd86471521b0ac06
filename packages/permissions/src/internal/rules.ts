/**
 * Rules compiled for matching, and the matching itself. A rule is compiled once, when the
 * policy is built (or when a session's "always" rule is read back from its log); compiling
 * reports what is wrong with it field by field, and a compiled rule only matches.
 *
 * An allow rule vouches for a call, so it matches only what it can see all of (strictly); a
 * deny or ask rule restricts, so it matches whatever part of the call it recognizes (broadly).
 * See `Policy` for the syntax this implements.
 */
import { ToolArgs, type ToolErrors } from "@dsh/tools"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import { escapePath, matchesPath, nameGlob, type PathGlob, pathGlob, pathProblem, resolvePath } from "./glob.ts"
import * as Shell from "./shell.ts"
import * as Wildcard from "./wildcard.ts"

/** One pattern or a non-empty list of them. */
type Patterns = string | readonly [string, ...Array<string>]

/** A rule as plain data (the Schema is `Policy.Rule`, which has this type). */
export interface RuleData {
  readonly decision: "allow" | "deny" | "ask"
  readonly tool?: Patterns
  readonly server?: Patterns
  readonly command?: Patterns
  readonly exact?: boolean
  readonly path?: Patterns
  readonly reason?: string
}

/** A problem found while compiling a rule: the field, and what is wrong. */
export interface FieldProblem {
  readonly field?: string
  readonly message: string
}

/** A command pattern: its words, each a wildcard over a word's text. */
type CommandPattern = ReadonlyArray<Wildcard.Wildcard>

/** A rule ready to match. */
export interface Compiled {
  readonly rule: RuleData
  readonly names: (name: string) => boolean
  readonly commands: ReadonlyArray<CommandPattern> | undefined
  readonly paths: ReadonlyArray<PathGlob> | undefined
}

/** A call's arguments, parsed the way the registry parses them before decoding. */
export type Arguments =
  | { readonly _tag: "Parsed"; readonly value: Schema.Json }
  | { readonly _tag: "Unparsed"; readonly error: ToolErrors.ToolArgsError }

export const parseArguments = (tool: string, raw: string): Arguments => {
  const parsed = ToolArgs.parse(tool, raw)
  return Result.isSuccess(parsed) ? { _tag: "Parsed", value: parsed.success } : { _tag: "Unparsed", error: parsed.failure }
}

const listOf = (patterns: string | ReadonlyArray<string>): ReadonlyArray<string> =>
  typeof patterns === "string" ? [patterns] : patterns

const namePatternChars = /^[a-zA-Z0-9_*?-]+$/
const toolName = /^[a-zA-Z0-9_-]{1,64}$/

// ---------------------------------------------------------------------------------------------
// compiling

const toolNames = (patterns: ReadonlyArray<string>, problems: Array<FieldProblem>): ((name: string) => boolean) => {
  for (const p of patterns) {
    if (!namePatternChars.test(p)) {
      problems.push({
        field: "tool",
        message: p.length === 0
          ? "is empty"
          : `"${p}" can never match a tool name (names are letters, digits, _ and -; * and ? are wildcards)`
      })
    }
  }
  const globs = patterns.map(nameGlob)
  return (name) => globs.some((g) => Wildcard.matches(g, name))
}

/** The server part of an MCP tool's name (`<server>__<tool>`), if it is one. */
export const serverOf = (name: string): string | undefined => {
  const at = name.indexOf("__")
  return at > 0 && at + 2 < name.length ? name.slice(0, at) : undefined
}

const serverNames = (patterns: ReadonlyArray<string>, problems: Array<FieldProblem>): ((name: string) => boolean) => {
  for (const p of patterns) {
    if (!namePatternChars.test(p)) {
      problems.push({
        field: "server",
        message: p.length === 0
          ? "is empty"
          : `"${p}" can never match an MCP server's name (letters, digits, _ and -; * and ? are wildcards)`
      })
    } else if (p.includes("__")) {
      problems.push({ field: "server", message: `"${p}" holds "__", which separates the server from the tool in MCP tool names` })
    }
  }
  const globs = patterns.map(nameGlob)
  return (name) => {
    const server = serverOf(name)
    return server !== undefined && globs.some((g) => Wildcard.matches(g, server))
  }
}

const assignment = /^[A-Za-z_][A-Za-z0-9_]*=/

const commandProblem = (pattern: string, line: Shell.Line): string | undefined => {
  if (line.commands.length === 0) return pattern.trim().length === 0 ? "is empty" : `"${pattern}" holds no command`
  if (line.commands.length > 1 || line.substitutions || line.unreadable) {
    return `"${pattern}" is a shell line, not a command pattern: give each command as a pattern of its own`
  }
  const [command] = line.commands
  if (command!.writes) return `"${pattern}" holds a redirection; a pattern is the words a command starts with`
  if (command!.words.length === 0) return `"${pattern}" holds no command`
  const expanding = command!.words.find((w) => w.expands)
  if (expanding !== undefined) {
    return `"${pattern}" holds "${expanding.text}": a pattern is words, not expansions (quote a character to mean it)`
  }
  if (assignment.test(command!.words[0]!.text)) {
    return `"${pattern}" starts with a variable assignment; rules match the command that follows assignments`
  }
  return undefined
}

const commandPatterns = (
  patterns: ReadonlyArray<string>,
  problems: Array<FieldProblem>
): ReadonlyArray<CommandPattern> =>
  patterns.flatMap((pattern) => {
    const line = Shell.parse(pattern)
    const problem = commandProblem(pattern, line)
    if (problem !== undefined) {
      problems.push({ field: "command", message: problem })
      return []
    }
    return [line.commands[0]!.words.map((w) => w.pattern)]
  })

const pathGlobs = (root: string, patterns: ReadonlyArray<string>, problems: Array<FieldProblem>): ReadonlyArray<PathGlob> =>
  patterns.flatMap((pattern) => {
    const problem = pathProblem(pattern)
    if (problem !== undefined) {
      problems.push({ field: "path", message: problem === "is empty" ? problem : `"${pattern}" ${problem}` })
      return []
    }
    return [pathGlob(root, pattern)]
  })

/** Compiles a rule whose shape the Schema has checked; paths are taken from `root`. */
export const compile = (rule: RuleData, root: string): Result.Result<Compiled, ReadonlyArray<FieldProblem>> => {
  const problems: Array<FieldProblem> = []
  let names: (name: string) => boolean = () => false
  if (rule.tool !== undefined && rule.server !== undefined) {
    problems.push({ field: "server", message: "a rule names tools by tool or by server, not both" })
  } else if (rule.tool !== undefined) {
    names = toolNames(listOf(rule.tool), problems)
  } else if (rule.server !== undefined) {
    names = serverNames(listOf(rule.server), problems)
  } else {
    problems.push({ message: "names no tool: give tool (names or globs, \"*\" for every tool) or server (MCP servers)" })
  }
  const commands = rule.command === undefined ? undefined : commandPatterns(listOf(rule.command), problems)
  if (rule.exact !== undefined && rule.command === undefined) {
    problems.push({ field: "exact", message: "applies to command patterns, and the rule has none" })
  }
  const paths = rule.path === undefined ? undefined : pathGlobs(root, listOf(rule.path), problems)
  if (rule.reason !== undefined && rule.reason.trim().length === 0) problems.push({ field: "reason", message: "is empty" })
  return problems.length > 0 ? Result.fail(problems) : Result.succeed({ rule, names, commands, paths })
}

// ---------------------------------------------------------------------------------------------
// matching

/** Whether the rule looks at arguments (and so needs them parsed). */
export const needsArguments = (compiled: Compiled): boolean =>
  compiled.commands !== undefined || compiled.paths !== undefined

const stringArgument = (args: Schema.Json, key: string): string | undefined => {
  if (typeof args !== "object" || args === null || Array.isArray(args)) return undefined
  const value = (args as { readonly [key: string]: Schema.Json })[key]
  return typeof value === "string" ? value : undefined
}

// Words that come before the command they run: broad matching looks past them.
const reserved = new Set(["!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time", "coproc"])
const wrappers = new Set(["sudo", "doas", "env", "command", "builtin", "exec", "nohup", "nice", "xargs", "time"])
// The options of each wrapper that take the next word as their value (`nice -n 19 rm`): that
// word is not the command.
const valueOptions: Readonly<Record<string, ReadonlySet<string>>> = {
  sudo: new Set(["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "-R"]),
  doas: new Set(["-u", "-C"]),
  env: new Set(["-u", "-C", "-S", "--unset", "--chdir", "--split-string"]),
  nice: new Set(["-n", "--adjustment"]),
  xargs: new Set(["-a", "-d", "-E", "-e", "-I", "-L", "-l", "-n", "-P", "-s", "--arg-file", "--delimiter", "--max-args", "--max-lines", "--max-procs", "--max-chars", "--replace"]),
  time: new Set(["-f", "-o", "--format", "--output"]),
  exec: new Set(["-a"])
}
const shells = new Set(["sh", "bash", "zsh", "dash", "ksh"])

const basename = (word: string): string => word.slice(word.lastIndexOf("/") + 1)

const fits = (pattern: CommandPattern, exact: boolean, count: number): boolean =>
  exact ? pattern.length === count : pattern.length <= count

/**
 * Where the command itself starts, from each index: past assignments, reserved words, and
 * wrappers with their options. Computed from the end, once per command, so a line of many
 * reserved words costs no more than its length.
 */
const commandStarts = (words: ReadonlyArray<Shell.Word>): ReadonlyArray<number> => {
  const next: Array<number> = Array.from({ length: words.length + 1 }, () => words.length)
  for (let i = words.length - 1; i >= 0; i--) {
    const text = words[i]!.text
    // a wrapper first (`time -p rm`: `time` is a reserved word too), by its name (`/usr/bin/env`)
    const wrapper = basename(text)
    if (wrappers.has(wrapper)) {
      const takesValue = valueOptions[wrapper]
      let j = i + 1
      while (j < words.length && words[j]!.text.startsWith("-")) {
        j += takesValue?.has(words[j]!.text) === true ? 2 : 1
      }
      next[i] = next[Math.min(j, words.length)]!
    } else if (assignment.test(text) || reserved.has(text)) next[i] = next[i + 1]!
    else next[i] = i
  }
  return next
}

/** Where a command may start within a simple command: at its start, and after each reserved word. */
const starts = (words: ReadonlyArray<Shell.Word>): ReadonlyArray<number> => {
  const next = commandStarts(words)
  const found = new Set([next[0]!])
  words.forEach((word, k) => {
    if (k > 0 && reserved.has(word.text)) found.add(next[k + 1]!)
  })
  return [...found]
}

/** The text a command runs as a shell line (`eval …`, `bash -c '…'`), if it is one of those. */
const innerLine = (words: ReadonlyArray<Shell.Word>, from: number): string | undefined => {
  const first = words[from]?.text
  if (first === "eval") return words.slice(from + 1).map((w) => w.text).join(" ")
  if (first === undefined || !shells.has(basename(first))) return undefined
  let i = from + 1
  let script = false
  while (i < words.length && words[i]!.text.startsWith("-")) {
    if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(words[i]!.text)) script = true
    i++
  }
  return script ? words[i]?.text : undefined
}

const startsWith = (pattern: CommandPattern, exact: boolean, words: ReadonlyArray<Shell.Word>, from: number): boolean =>
  fits(pattern, exact, words.length - from) &&
  pattern.every((p, k) =>
    Wildcard.matches(p, words[from + k]!.text) || (k === 0 && Wildcard.matches(p, basename(words[from]!.text)))
  )

/** How deeply `eval` and `sh -c` are followed, and how much text they may add, before a line is unreadable. */
const maxShellDepth = 8
const maxInnerText = 1_000_000

/**
 * A deny or ask pattern: any command of the line as written, past wrappers and reserved words,
 * `/bin/rm` as `rm`, and into the lines `eval` and `sh -c` run. What the policy cannot read
 * could be anything, so a restriction applies to it.
 */
const matchesLineBroadly = (
  patterns: ReadonlyArray<CommandPattern>,
  exact: boolean,
  line: Shell.Line,
  depth: number,
  budget: { left: number }
): boolean =>
  line.unreadable || line.commands.some(({ words }) =>
    starts(words).some((from) => {
      if (patterns.some((p) => startsWith(p, exact, words, from))) return true
      const inner = innerLine(words, from)
      if (inner === undefined) return false
      budget.left -= inner.length
      if (depth >= maxShellDepth || budget.left < 0) return true
      return matchesLineBroadly(patterns, exact, Shell.parse(inner), depth + 1, budget)
    })
  )

/** An allow pattern: only a command that means exactly its words, and writes no file. */
const matchesStrictly = (pattern: CommandPattern, exact: boolean, command: Shell.Command): boolean => {
  const words = command.words
  if (command.writes || !fits(pattern, exact, words.length) || assignment.test(words[0]?.text ?? "")) return false
  return pattern.every((p, k) => Shell.isLiteral(words[k]!) && Wildcard.matches(p, words[k]!.text))
}

// The rules of a policy are tried one after another on the same call: its line is read once.
let lastText: string | undefined
let lastLine: Shell.Line | undefined
const parseLine = (text: string): Shell.Line => {
  if (text !== lastText || lastLine === undefined) {
    lastLine = Shell.parse(text)
    lastText = text
  }
  return lastLine
}

const matchesCommand = (compiled: Compiled, patterns: ReadonlyArray<CommandPattern>, text: string): boolean => {
  const line = parseLine(text)
  const exact = compiled.rule.exact === true
  if (compiled.rule.decision === "allow") {
    // every command the line runs must be one the rule allows, and all of them must be visible
    return !line.substitutions && !line.unreadable && line.commands.length > 0 &&
      line.commands.every((c) => patterns.some((p) => matchesStrictly(p, exact, c)))
  }
  return matchesLineBroadly(patterns, exact, line, 0, { left: maxInnerText })
}

/** Whether a rule whose names match also matches the call's (parsed) arguments. */
export const matchesArguments = (compiled: Compiled, root: string, args: Schema.Json): boolean => {
  if (compiled.commands !== undefined) {
    const command = stringArgument(args, "command")
    if (command === undefined || !matchesCommand(compiled, compiled.commands, command)) return false
  }
  if (compiled.paths !== undefined) {
    const path = stringArgument(args, "path")
    if (path === undefined) return false
    const resolved = resolvePath(root, path)
    if (!compiled.paths.some((glob) => matchesPath(glob, resolved))) return false
  }
  return true
}

/** Whether an allow rule (a session's "always" rule) matches a call. */
export const allows = (compiled: Compiled, root: string, name: string, args: Arguments): boolean => {
  if (!compiled.names(name)) return false
  if (!needsArguments(compiled)) return true
  return args._tag === "Parsed" && matchesArguments(compiled, root, args.value)
}

// ---------------------------------------------------------------------------------------------
// "always"

/** Exact patterns for every command of a line, if an allow rule could vouch for all of them. */
const exactCommands = (text: string): readonly [string, ...Array<string>] | undefined => {
  const line = Shell.parse(text)
  if (line.substitutions || line.unreadable || line.commands.length === 0) return undefined
  const patterns: Array<string> = []
  for (const command of line.commands) {
    const words = command.words
    if (command.writes || words.length === 0 || !words.every(Shell.isLiteral) || assignment.test(words[0]!.text)) {
      return undefined
    }
    const pattern = words.map((w) => Shell.quote(w.text)).join(" ")
    if (!patterns.includes(pattern)) patterns.push(pattern)
  }
  const [first, ...rest] = patterns
  return first === undefined ? undefined : [first, ...rest]
}

/**
 * The allow rule an "always" answer adds for a call: its tool, narrowed to its exact commands
 * and its path when it has them; `undefined` when no rule would allow exactly this and no
 * more (arguments that do not parse, a command with expansions or redirections, a call that
 * lacks the command or path its tool takes). `takes` says whether the tool declares an argument.
 */
export const alwaysRule = (
  name: string,
  args: Arguments,
  root: string,
  takes: (argument: string) => boolean
): RuleData | undefined => {
  // a call to a name no tool can have (a wildcard in it) must not become a glob
  if (args._tag === "Unparsed" || !toolName.test(name)) return undefined
  const value = args.value
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined
  const command = stringArgument(value, "command")
  const path = stringArgument(value, "path")
  if ((command === undefined && takes("command")) || (path === undefined && takes("path"))) return undefined
  const commands = command === undefined ? undefined : exactCommands(command)
  if (command !== undefined && commands === undefined) return undefined
  const rule: RuleData = {
    decision: "allow",
    tool: name,
    ...(commands === undefined ? {} : { command: commands, exact: true }),
    ...(path === undefined ? {} : { path: escapePath(resolvePath(root, path)) })
  }
  // the rule must allow the very call it was made from; anything else is not worth adding
  const compiled = compile(rule, root)
  return Result.isSuccess(compiled) && allows(compiled.success, root, name, args) ? rule : undefined
}
