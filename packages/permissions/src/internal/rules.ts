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
import * as Commands from "./commands.ts"
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
  readonly cwd?: Patterns
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
  readonly cwds: ReadonlyArray<PathGlob> | undefined
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
  if (Commands.assignment.test(command!.words[0]!.text)) {
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

const pathGlobs = (
  field: "path" | "cwd",
  root: string,
  patterns: ReadonlyArray<string>,
  problems: Array<FieldProblem>
): ReadonlyArray<PathGlob> =>
  patterns.flatMap((pattern) => {
    const problem = pathProblem(pattern)
    if (problem !== undefined) {
      problems.push({ field, message: problem === "is empty" ? problem : `"${pattern}" ${problem}` })
      return []
    }
    return [pathGlob(root, pattern)]
  })

// The arguments rules can look at, by the dsh tools that take them (`@dsh/bash`, `@dsh/files`).
const argumentTools = {
  command: ["bash", "bash_background"],
  cwd: ["bash", "bash_background"],
  path: ["read", "write", "edit", "list", "glob", "search"]
} as const
const dshTools: ReadonlySet<string> = new Set([
  ...argumentTools.command,
  ...argumentTools.path,
  "bash_output",
  "bash_wait",
  "bash_jobs",
  "bash_kill"
])

/**
 * An argument pattern the rule's tools can never be called with: every tool it names is one of
 * dsh's own, by its name, and none of them takes that argument (a `path` for `bash`), so a
 * deny or ask rule would silently fail open. Globs and other tools' names may take anything.
 */
const argumentsTaken = (rule: RuleData, problems: Array<FieldProblem>): void => {
  if (rule.tool === undefined) return
  const names = listOf(rule.tool)
  if (names.length === 0 || !names.every((name) => dshTools.has(name))) return
  for (const field of ["command", "path", "cwd"] as const) {
    if (rule[field] === undefined || names.some((name) => (argumentTools[field] as ReadonlyArray<string>).includes(name))) continue
    problems.push({
      field,
      message: `can never match: ${names.map((name) => `"${name}"`).join(", ")} ${names.length === 1 ? "takes" : "take"} no ${field} argument ` +
        `(${argumentTools[field].join(", ")} do)`
    })
  }
}

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
  const paths = rule.path === undefined ? undefined : pathGlobs("path", root, listOf(rule.path), problems)
  const cwds = rule.cwd === undefined ? undefined : pathGlobs("cwd", root, listOf(rule.cwd), problems)
  argumentsTaken(rule, problems)
  if (rule.reason !== undefined && rule.reason.trim().length === 0) problems.push({ field: "reason", message: "is empty" })
  return problems.length > 0 ? Result.fail(problems) : Result.succeed({ rule, names, commands, paths, cwds })
}

// ---------------------------------------------------------------------------------------------
// matching

/** Whether the rule looks at arguments (and so needs them parsed). */
export const needsArguments = (compiled: Compiled): boolean =>
  compiled.commands !== undefined || compiled.paths !== undefined || compiled.cwds !== undefined

/** An argument of the call, whatever it is (`undefined` when the call has no such key). */
const argument = (args: Schema.Json, key: string): Schema.Json | undefined => {
  if (typeof args !== "object" || args === null || Array.isArray(args) || !Object.hasOwn(args, key)) return undefined
  return (args as { readonly [key: string]: Schema.Json })[key]
}

const stringArgument = (args: Schema.Json, key: string): string | undefined => {
  const value = argument(args, key)
  return typeof value === "string" ? value : undefined
}

const fits = (pattern: CommandPattern, exact: boolean, count: number): boolean =>
  exact ? pattern.length === count : pattern.length <= count

/**
 * How a restriction reads a line: as a line that runs (`"code"`), where whatever it cannot
 * know could be anything and so matches; or as data that may run (`"data"`: a variable's
 * value), where only the commands it spells out count — most values are not code, and one
 * like `$HOME/bin` must not match every rule.
 */
type ReadAs = "code" | "data"

/**
 * A deny or ask pattern at `from`, `/bin/rm` taken as `rm`, its words after the first read
 * from `sub` on (the word after the program, or its subcommand past its own options:
 * `git -C dir push`). In code, a dynamic word (an expansion, a glob, a brace expansion) could
 * become any words, or none: from there on, it matches.
 */
const startsBroadly = (
  pattern: CommandPattern,
  exact: boolean,
  words: ReadonlyArray<Shell.Word>,
  from: number,
  sub: number,
  readAs: ReadAs
): boolean => {
  for (let k = 0; k < pattern.length; k++) {
    const word = words[k === 0 ? from : sub + k - 1]
    if (word === undefined) return false
    if (word.dynamic) return readAs === "code"
    const p = pattern[k]!
    if (!Wildcard.matches(p, word.text) && !(k === 0 && Wildcard.matches(p, Commands.basename(word.text)))) return false
  }
  // exact: no more words, unless those that follow could all turn into none
  const rest = words.slice(sub + pattern.length - 1)
  return !exact || rest.length === 0 || (readAs === "code" && rest.every((w) => w.dynamic))
}

/** How deeply `eval` and `sh -c` are followed, and how much text they may add, before a line is unreadable. */
const maxShellDepth = 8
const maxInnerText = 1_000_000

/**
 * A deny or ask pattern: any command of the line as written, past runners and reserved words,
 * `/bin/rm` as `rm`, a subcommand past its program's own options, into the lines `eval`,
 * `sh -c` and the others run, and into the values it assigns, as data. What the policy cannot
 * read in code could be anything, so a restriction applies to it: a line nested too deeply, a
 * dynamic word where the pattern has a word, a script the line does not show (inline code of
 * another language, a script file, a value run as a prompt).
 */
const matchesLineBroadly = (
  patterns: ReadonlyArray<CommandPattern>,
  exact: boolean,
  line: Shell.Line,
  depth: number,
  budget: Commands.Budget,
  readAs: ReadAs
): boolean => {
  const code = readAs === "code"
  const inner = (text: string, as: ReadAs) =>
    depth >= maxShellDepth
      ? as === "code"
      : matchesLineBroadly(patterns, exact, Shell.parse(text), depth + 1, budget, as)
  return (code && (line.unreadable || line.runsValues)) || line.commands.some(({ words }) => {
    const command = Commands.read(words, budget)
    if (code && command.hidden) return true
    const matchesAt = (from: number, sub: number) => patterns.some((p) => startsBroadly(p, exact, words, from, sub, readAs))
    if (command.starts.some((from) => matchesAt(from, from + 1))) return true
    if (command.subcommands.some(({ at, program }) => matchesAt(program, at))) return true
    return command.lines.some((text) => inner(text, readAs)) || command.values.some((text) => inner(text, "data"))
  })
}

/** An allow pattern: only a command that means exactly its words, and writes no file. */
const matchesStrictly = (pattern: CommandPattern, exact: boolean, command: Shell.Command): boolean => {
  const words = command.words
  if (command.writes || !fits(pattern, exact, words.length) || Commands.assignment.test(words[0]?.text ?? "")) return false
  return pattern.every((p, k) => Shell.isLiteral(words[k]!) && Wildcard.matches(p, words[k]!.text))
}

/** Whether an allow rule can vouch for a command at all: not when it runs a script the line does not show (`… | bash`). */
const shows = (command: Shell.Command): boolean => !Commands.read(command.words, { left: maxInnerText }).hidden

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

/** The values of the call's `env` (the environment the command runs with). */
const environment = (args: Schema.Json): ReadonlyArray<string> => {
  const env = argument(args, "env")
  return typeof env === "object" && env !== null && !Array.isArray(env)
    ? Object.values(env).filter((v): v is string => typeof v === "string")
    : []
}

/**
 * Whether the call sets environment variables: an `env` argument that is anything but an
 * empty object. An allow rule vouches for a line as written, and the environment rewrites
 * what it means (`BASH_FUNC_ls%%` defines `ls`, `BASH_ENV` runs a file first, `PATH` picks
 * another `ls`, `${x@P}` runs what `x` holds).
 */
const setsEnvironment = (args: Schema.Json): boolean => {
  const env = argument(args, "env")
  if (env === undefined) return false
  return typeof env !== "object" || env === null || Array.isArray(env) || Object.keys(env).length > 0
}

const matchesCommand = (
  compiled: Compiled,
  patterns: ReadonlyArray<CommandPattern>,
  text: string,
  args: Schema.Json
): boolean => {
  const line = parseLine(text)
  const exact = compiled.rule.exact === true
  if (compiled.rule.decision === "allow") {
    // every command the line runs must be one the rule allows, and all of them must be visible
    return !setsEnvironment(args) && !line.substitutions && !line.unreadable && line.commands.length > 0 &&
      line.commands.every((c) => patterns.some((p) => matchesStrictly(p, exact, c)) && shows(c))
  }
  // a variable's value may run as a line (an exported function, PS4, a prompt expansion): read each as data
  const budget = { left: maxInnerText }
  return matchesLineBroadly(patterns, exact, line, 0, budget, "code") ||
    environment(args).some((value) => matchesLineBroadly(patterns, exact, Shell.parse(value), 1, budget, "data"))
}

/** The directory a call's command runs in: its `cwd` resolved against the root, the root without one. */
const workingDirectory = (args: Schema.Json, root: string): string | undefined => {
  const cwd = argument(args, "cwd")
  if (cwd === undefined) return root
  return typeof cwd === "string" ? resolvePath(root, cwd) : undefined
}

/**
 * The argument a rule reads that the call gives but not as text (`"command": 42`, a list), or
 * `undefined`: such a call cannot be checked, and is refused like one whose arguments do not
 * parse, rather than the rule skipped. An argument the call does not give at all leaves the
 * rule out, as before (a path rule does not apply to a tool without a path).
 */
export const unreadableArgument = (compiled: Compiled, args: Schema.Json): string | undefined => {
  const reads = [
    ...(compiled.commands === undefined ? [] : ["command"]),
    ...(compiled.cwds === undefined ? [] : ["cwd"]),
    ...(compiled.paths === undefined ? [] : ["path"])
  ]
  return reads.find((key) => {
    const value = argument(args, key)
    return value !== undefined && typeof value !== "string"
  })
}

/** Whether a rule whose names match also matches the call's (parsed) arguments. */
export const matchesArguments = (compiled: Compiled, root: string, args: Schema.Json): boolean => {
  if (compiled.commands !== undefined) {
    const command = stringArgument(args, "command")
    if (command === undefined || !matchesCommand(compiled, compiled.commands, command, args)) return false
  }
  if (compiled.cwds !== undefined) {
    const cwd = workingDirectory(args, root)
    if (cwd === undefined || !compiled.cwds.some((glob) => matchesPath(glob, cwd))) return false
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
    if (
      command.writes || words.length === 0 || !words.every(Shell.isLiteral) || Commands.assignment.test(words[0]!.text) ||
      !shows(command)
    ) {
      return undefined
    }
    const pattern = words.map((w) => Shell.quote(w.text)).join(" ")
    if (!patterns.includes(pattern)) patterns.push(pattern)
  }
  const [first, ...rest] = patterns
  return first === undefined ? undefined : [first, ...rest]
}

/**
 * The allow rule an "always" answer adds for a call: its tool, narrowed to its exact commands,
 * its path, and the directory its command runs in when its tool takes a `cwd` (the same
 * command elsewhere runs another project's scripts); `undefined` when no rule would allow
 * exactly this and no more (arguments that do not parse, a command with expansions or
 * redirections, a call that sets environment variables, a call that lacks the command or path
 * its tool takes). `takes` says whether the tool declares an argument.
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
  const cwd = takes("cwd") ? workingDirectory(value, root) : undefined
  if (takes("cwd") && cwd === undefined) return undefined
  const rule: RuleData = {
    decision: "allow",
    tool: name,
    ...(commands === undefined ? {} : { command: commands, exact: true }),
    ...(path === undefined ? {} : { path: escapePath(resolvePath(root, path)) }),
    ...(cwd === undefined ? {} : { cwd: escapePath(cwd) })
  }
  // the rule must allow the very call it was made from (not one that sets environment
  // variables, which no allow rule matches); anything else is not worth adding
  const compiled = compile(rule, root)
  return Result.isSuccess(compiled) && allows(compiled.success, root, name, args) ? rule : undefined
}
