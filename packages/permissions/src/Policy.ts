/**
 * A permission policy: rules that allow, deny or ask about tool calls, matched by tool name
 * and argument patterns, the first match deciding, and a default for calls no rule matches.
 * Rules are plain data with a Schema, so a config file can hold them; {@link make} checks
 * them and fails with a `PolicyInvalidError` (`POLICY_INVALID`) listing every bad rule by
 * index, field and what is wrong. {@link evaluate} is the pure decision.
 *
 * ```json
 * {
 *   "rules": [
 *     { "decision": "deny", "tool": ["bash", "bash_background"], "command": ["rm", "git push"], "reason": "no removals, no pushes" },
 *     { "decision": "allow", "tool": "bash", "command": ["git status", "git diff", "npm test"] },
 *     { "decision": "allow", "tool": ["write", "edit"], "path": "src/**" },
 *     { "decision": "ask", "server": "github" }
 *   ],
 *   "default": "ask"
 * }
 * ```
 *
 * **Which tools** (each field a string or a list of strings; a list matches when one does):
 *
 * - `tool`: tool names, `*` any run of characters and `?` one (`"*"` is every tool);
 * - `server`: MCP servers: a tool named `<server>__<tool>` (split at the first `__`) is one of
 *   the server's tools, so `{ "server": "github" }` matches `github__create_issue`;
 *   `"*"` matches every MCP tool. A rule has `tool` or `server`, not both.
 *
 * **Which arguments** (optional; a rule with both needs both to match). The arguments are
 * parsed as the registry parses them before decoding (`ToolArgs.parse`):
 *
 * - `command`: for tools with a `command` string argument (`bash`, `bash_background`). A
 *   pattern is the words a command starts with: `"git status"` matches `git status` and
 *   `git status --short`, not `git stash`; with `"exact": true` a command must have exactly the
 *   pattern's words. Quotes and escapes are the shell's (`git commit -m "x"`); an unquoted `*`
 *   or `?` in a word is a wildcard within the word. The command line is split the way the
 *   shell splits it — at `;`, `&`, `&&`, `|`, `||`, newlines and parentheses, and into what
 *   `$(…)`, backticks and `<(…)` run — and each simple command is matched:
 *   - an **allow** rule vouches for the call, so it matches only when **every** command of the
 *     line matches one of its patterns exactly as written: no substitution anywhere in the
 *     line, no leading variable assignment, no expansion, glob or `$'…'` in the matched words,
 *     no output redirection to a file (`> /dev/null` and `2>&1` are fine), nothing run that the
 *     line does not show (a shell reading its input or a script file, `… | bash`,
 *     `bash build.sh`, `source env.sh`, `sudo -s`; inline code of another language,
 *     `python -c`; `${x@P}`; see below), and no environment
 *     variables set by the call: an `env` argument other than `{}` (`BASH_FUNC_ls%%` defines
 *     `ls`, `BASH_ENV` runs a file first, `PATH` picks another `ls`, `${x@P}` runs what `x`
 *     holds). So `"git status"` does not allow `git status; rm -rf ~`, `git status > notes`
 *     or `{"command": "git status", "env": {"GIT_DIR": "/elsewhere"}}`;
 *   - a **deny** or **ask** rule restricts, so it matches when **any** command of the line,
 *     those inside substitutions included, matches one of its patterns, looking past leading
 *     assignments, reserved words (`if`, `then`, `do`, `!`, `{`, …) and the programs that run
 *     a command they are given: `sudo`, `doas`, `pkexec`, `su`, `runuser`, `sg`, `env`,
 *     `command`, `builtin`, `exec`, `nohup`, `nice`, `time`, `timeout`, `setsid`, `stdbuf`,
 *     `ionice`, `chrt`, `taskset`, `flock`, `unshare`, `nsenter`, `chroot`, `prlimit`,
 *     `numactl`, `strace`, `ltrace`, `valgrind`, `systemd-run`, `watch`, `script`, `ssh`
 *     (after its host), `parallel`, `fakeroot`, `eatmydata`, `busybox` and `xargs`, by name
 *     or path (`/usr/bin/env`), with their options as getopt reads them (clustered, long,
 *     abbreviated, `--opt value` and `--opt=value`) and the values and operands before the
 *     command (`nice -n 19`, `sudo --user root`, `timeout -s KILL 5`, `ssh -p 2222 host`);
 *     such a program is a command too (`"sudo"` denies `sudo rm x`).
 *     A pattern's words after the first also match past the options a program reads before
 *     its subcommand, for `git` (its global options: `-C`, `-c`, `--git-dir`, `--work-tree`,
 *     `--namespace`, `--config-env`, … with their values, `--no-pager`, `-p`, `--bare`, …),
 *     `docker`, `kubectl` and `npm`: `"git push"` denies `git -C . --no-pager push`, and
 *     `"kubectl delete"` denies `kubectl -n prod delete pod x`; an option not in their table
 *     may take the next word or not, and both readings are followed. It takes `/bin/rm` as
 *     `rm`, decodes `$'…'` as bash does (`$'\x72m'` is `rm`), and reads the lines that
 *     `eval …`, a shell's `-c` (after its options: `bash -o pipefail -c '…'`; `sh`, `zsh`,
 *     `dash`, `ksh`, `fish` and the others too), `su -c`, `script -c`, `env -S`,
 *     `flock FILE -c`, `watch`, `parallel`, `ssh host …` (the remote command), `trap` and
 *     `find`'s `-exec`, `-execdir`, `-ok` and `-okdir` (`find . -exec rm {} \;`) run, the
 *     commands ssh's configuration runs (`-o ProxyCommand=…`, `LocalCommand`,
 *     `KnownHostsCommand`, `RemoteCommand`), the remote shells and helpers of `scp`/`sftp`
 *     (`-S`, `-o`), `rsync` (`-e`, `--rsh`, `--rsync-path`) and `tar` (`-I`, `--to-command`,
 *     `--checkpoint-action=exec=`), and the value an `alias` gives, 8 levels deep; and, for
 *     the commands they spell out, the values the line assigns
 *     (`x='$(rm y)'`), the settings `git -c` gives (an alias `!rm x`, `core.pager`) and the
 *     values of the call's `env` (an exported function `BASH_FUNC_ls%%`), which may run as
 *     lines. So `"rm"` denies `ls && sudo rm -rf build`, `echo $(rm x)`, `bash -c "rm x"` and
 *     `ssh host rm x`.
 *   - What a deny or ask rule cannot know could be anything, so it matches, as arguments that
 *     do not parse are denied: a line nested too deeply; a word made by an expansion, a glob or
 *     a brace expansion where a pattern has a word (`$X -rf x`, `/bin/r? x`, `{rm,x}`,
 *     `git $SUB` for `"git push"`, and `git -C "$DIR" status` too: a value that is an
 *     expansion, quoted or not, is taken to be possibly several words), or in `find`'s
 *     expression (it could be `-exec …`); a shell running a script the line does not show,
 *     from its input (`echo 'rm x' | bash`, `bash <<'EOF'`, `bash /dev/stdin`, `sudo -s`, `su`
 *     or `script` without `-c`), a file (`bash build.sh`, `sh -e ./x.sh`, `source env.sh`,
 *     `. ./env.sh`) or an expansion (`bash -c "$LINE"`, `eval "$X"`); code of another
 *     language given inline (`python -c`, `python3 -Sc`, `node -e`, `--eval`, `-p`,
 *     `perl -e`, `-E`, `ruby -e`, `php -r`, `lua -e`: any of it can run a command) or read
 *     from input (`curl … | python3`, `python3 - <<'EOF'`, `node /dev/stdin`); commands read
 *     from input (`… | parallel`, `parallel ::: 'rm x'`, `… | ssh host`); an awk or sed
 *     program that can run a command (awk's `system()`, a pipe to or from a command,
 *     `@load`; GNU sed's `e` and `s///e`: `awk '{print $1}'` and `sed 's/a/b/'` stay plain);
 *     an ssh `Match exec`; and `${x@P}`,
 *     which expands a value as a prompt, running the command substitutions it holds, and
 *     whose value may come from the environment the command inherits. Such a line meets the
 *     first deny or ask rule with a command pattern.
 *   Command rules read what the line says, not what it does. Not followed: a program file,
 *   whoever runs it (`python x.py`, `python -m pytest`, `node x.js`, `./build.sh`, `make`,
 *   `npm test`); aliases the line does not define (the shell's from a startup file, git's
 *   `alias.p=push` from its config files); `find -delete`; a program's options after its
 *   subcommand (`kubectl delete -n x pod` is not `"kubectl delete pod"`) or before the
 *   subcommand of a program outside the table (`cargo +nightly publish`); inline code of
 *   interpreters outside the list (`Rscript -e`, `deno eval`, `bun -e`, `osascript -e`,
 *   `pwsh -c`); the commands other programs run through a subcommand or a session of their
 *   own (`git submodule foreach`, `npm exec`, `at`, `tmux new`, `screen -dm`); and a value of
 *   the inherited environment evaluated as arithmetic (`echo ${a[x]}`, `$((x))`,
 *   `[[ $x -eq 1 ]]` run the command substitution in an array subscript `x` holds; only
 *   `$((…))` keeps an allow rule away, as a substitution). They keep a model to the commands
 *   you expect; a sandbox is what contains a command.
 * - `path`: for tools with a `path` string argument (`read`, `write`, `edit`, `list`, `glob`,
 *   `search`). A glob: `*` is any run of characters within a path segment (dotfiles
 *   included), `?` one character, `**` as a whole segment any number of segments (none
 *   included: `src/**` matches `src`), `\` escapes; character classes and braces are refused
 *   (give a list). Relative patterns and paths are taken from the policy's `root` (the
 *   directory the file tools resolve paths against; default the process's working directory)
 *   and `.` and `..` are folded first, so `src/**` matches neither `src/../.env` nor
 *   `/etc/passwd`. Symbolic links are not followed and `~` is not expanded. A path rule
 *   matches where a call points, not what a recursive tool reaches beneath it: `glob` or
 *   `search` without a `path` matches no path rule.
 * - `cwd`: for tools with a `cwd` argument (`bash`, `bash_background`): globs, as for `path`,
 *   of the directory the command runs in: the call's `cwd` resolved against `root`, or `root`
 *   itself when the call has none (the dsh command runs bash in the policy's root). A rule
 *   without `cwd` matches any directory; the rule an "always" answer adds for such a tool has one.
 * - A call that lacks the argument does not match the rule (for `cwd`, a call without one runs
 *   in the root); one that gives it as something other than a string (`"command": 42`, a list)
 *   cannot be checked, and is **denied** by that rule, saying so, as below.
 *   Arguments that are not JSON (or nest too deeply): the first rule that matches the call's
 *   name decides as usual if it has no argument pattern; if it has one, the call is **denied**
 *   with the parse error as the reason, rather than the rule skipped — skipping a deny rule
 *   could let a later rule allow the call.
 *
 * **Deciding**: rules are tried in order; the first whose tool and arguments match decides
 * (`allow`, `deny`, or `ask`, which asks the `PermissionPrompt`); `default` (`"ask"` when
 * absent) decides for the rest. Unknown keys are refused, so a misspelt `comand` cannot turn
 * an argument rule into a rule for every call of the tool.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { posix } from "node:path"
import { type Compiled, compile, matchesArguments, needsArguments, parseArguments, unreadableArgument } from "./internal/rules.ts"
import { PolicyInvalidError, type Problem } from "./PermissionError.ts"

/**
 * What a rule decides.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Decision = Schema.Literals(["allow", "deny", "ask"])

/**
 * @since 0.1.0
 * @category models
 */
export type Decision = typeof Decision.Type

/**
 * One pattern, or a non-empty list of them (matching when one does).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Patterns = Schema.Union([Schema.String, Schema.NonEmptyArray(Schema.String)])

/**
 * @since 0.1.0
 * @category models
 */
export type Patterns = typeof Patterns.Type

/**
 * A rule (see the module documentation for what each field matches).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Rule = Schema.Struct({
  decision: Decision,
  tool: Schema.optionalKey(Patterns).annotate({ description: "Tool names or globs (* any run, ? one character)" }),
  server: Schema.optionalKey(Patterns).annotate({ description: "MCP server names or globs: tools named <server>__<tool>" }),
  command: Schema.optionalKey(Patterns).annotate({ description: "The words a command starts with, for tools with a command argument" }),
  exact: Schema.optionalKey(Schema.Boolean).annotate({ description: "Commands must have exactly the pattern's words" }),
  path: Schema.optionalKey(Patterns).annotate({ description: "Path globs (*, ?, **), for tools with a path argument" }),
  cwd: Schema.optionalKey(Patterns).annotate({
    description: "Globs (*, ?, **) of the directory a command runs in, for tools with a cwd argument"
  }),
  reason: Schema.optionalKey(Schema.String).annotate({ description: "Why, told to the model with a denial" })
})

/**
 * @since 0.1.0
 * @category models
 */
export interface Rule extends Schema.Schema.Type<typeof Rule> {}

/**
 * A policy as plain data: the rules, in order, and the default decision (`"ask"` when
 * absent).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Config = Schema.Struct({
  rules: Schema.Array(Rule),
  default: Schema.optionalKey(Decision)
})

/**
 * @since 0.1.0
 * @category models
 */
export interface Config extends Schema.Schema.Type<typeof Config> {}

/**
 * How a policy is built.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * The directory relative paths are taken from (the file tools' root). Default: the
   * working directory of the process when the policy is built.
   */
  readonly root?: string | undefined
}

const PolicyTypeId: unique symbol = Symbol.for("@dsh/permissions/Policy")

/**
 * A built policy: its rules checked and compiled.
 *
 * @since 0.1.0
 * @category models
 */
export interface Policy {
  readonly [PolicyTypeId]: typeof PolicyTypeId
  readonly rules: ReadonlyArray<Rule>
  readonly default: Decision
  /** The absolute directory relative paths are taken from. */
  readonly root: string
}

/**
 * What the policy decides for a call, which rule decided (its index, or `"default"`), and why
 * in words (what the model reads with a denial).
 *
 * @since 0.1.0
 * @category models
 */
export interface Verdict {
  readonly decision: Decision
  readonly rule: number | "default"
  readonly reason: string
}

const compiledRules = new WeakMap<Policy, ReadonlyArray<Compiled>>()

/**
 * Whether a value is a built policy.
 *
 * @since 0.1.0
 * @category guards
 */
export const isPolicy = (u: unknown): u is Policy => typeof u === "object" && u !== null && PolicyTypeId in u

const ruleKeys = Object.keys(Rule.fields)
const configKeys = Object.keys(Config.fields)
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()
const parseOptions = { errors: "all", onExcessProperty: "error", reportInput: true } as const

/** Schema issues as problems; `rule` is the index of the rule they are about, if any. */
const schemaProblems = (issue: SchemaIssue.Issue, rule: number | undefined): ReadonlyArray<Problem> =>
  formatIssues(issue).issues.map((i): Problem => {
    const path = (i.path ?? []).map((p) => (typeof p === "object" && p !== null && "key" in p ? p.key : p))
    const field = typeof path[0] === "string" ? path[0] : undefined
    const message = i.message.startsWith("Unexpected key")
      ? rule === undefined
        ? `unknown key; a policy has ${configKeys.join(" and ")}`
        : `unknown key; a rule has ${ruleKeys.slice(0, -1).join(", ")} and ${ruleKeys.at(-1)}`
      : path.length === 2 && path[1] === 0 && i.message.startsWith("Missing key")
      ? "is an empty list: give one pattern or more"
      : i.message
    return { ...(rule === undefined ? {} : { rule }), ...(field === undefined ? {} : { field }), message }
  })

const where = (problem: Problem): string =>
  problem.rule === undefined
    ? problem.field ?? "the policy"
    : `rules[${problem.rule}]${problem.field === undefined ? "" : `.${problem.field}`}`

const invalid = (problems: ReadonlyArray<Problem>): PolicyInvalidError =>
  new PolicyInvalidError({
    problems,
    message: `Invalid permission policy (${problems.length} ${problems.length === 1 ? "problem" : "problems"}):\n${
      problems.map((p) => `- ${where(p)}: ${p.message}`).join("\n")
    }`
  })

// The policy's shape first, then each rule on its own, so that every bad rule is reported.
const decodeShape = Schema.decodeUnknownResult(Schema.Struct({ ...Config.fields, rules: Schema.Array(Schema.Unknown) }))
const decodeRule = Schema.decodeUnknownResult(Rule)

const build = (input: unknown, options: Options | undefined): Result.Result<Policy, PolicyInvalidError> => {
  const shape = decodeShape(input, parseOptions)
  const problems: Array<Problem> = Result.isFailure(shape) ? [...schemaProblems(shape.failure.issue, undefined)] : []
  // the rules are checked even when something else is wrong, so that one run reports all
  const given: unknown = typeof input === "object" && input !== null ? (input as { readonly rules?: unknown }).rules : undefined
  const root = posix.resolve(options?.root ?? process.cwd())
  const rules: Array<Rule> = []
  const compiled: Array<Compiled> = []
  for (const [index, item] of (Array.isArray(given) ? given : []).entries()) {
    const rule = decodeRule(item, parseOptions)
    if (Result.isFailure(rule)) {
      problems.push(...schemaProblems(rule.failure.issue, index))
      continue
    }
    const result = compile(rule.success, root)
    if (Result.isFailure(result)) problems.push(...result.failure.map((p) => ({ rule: index, ...p })))
    else {
      rules.push(rule.success)
      compiled.push(result.success)
    }
  }
  if (Result.isFailure(shape) || problems.length > 0) return Result.fail(invalid(problems))
  const policy: Policy = { [PolicyTypeId]: PolicyTypeId, rules, default: shape.success.default ?? "ask", root }
  compiledRules.set(policy, compiled)
  return Result.succeed(policy)
}

/**
 * Builds a policy, checking every rule. Fails with a `PolicyInvalidError` listing each bad
 * rule's index, field and problem.
 *
 * @example
 * ```ts
 * import { Policy } from "@dsh/permissions"
 *
 * const policy = Policy.make({
 *   rules: [
 *     { decision: "deny", tool: "bash", command: "rm", reason: "nothing is removed here" },
 *     { decision: "allow", tool: "bash", command: ["git status", "npm test"] }
 *   ],
 *   default: "ask"
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (config: Config, options?: Options): Effect.Effect<Policy, PolicyInvalidError> =>
  Effect.suspend(() => Effect.fromResult(build(config, options)))

/**
 * Builds a policy from data of unknown shape (a parsed config file), decoded through
 * {@link Config} with unknown keys refused.
 *
 * @since 0.1.0
 * @category constructors
 */
export const decode = (input: unknown, options?: Options): Effect.Effect<Policy, PolicyInvalidError> =>
  Effect.suspend(() => Effect.fromResult(build(input, options)))

/**
 * Builds a policy synchronously, as a `Result`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeResult = (input: unknown, options?: Options): Result.Result<Policy, PolicyInvalidError> =>
  build(input, options)

const listText = (items: ReadonlyArray<string>, show: (s: string) => string = (s) => s): string =>
  items.length === 1 ? show(items[0]!) : `${items.slice(0, -1).map(show).join(", ")} or ${show(items.at(-1)!)}`

const listOf = (patterns: Patterns): ReadonlyArray<string> => (typeof patterns === "string" ? [patterns] : patterns)

const quoted = (s: string) => JSON.stringify(s)

/**
 * A rule in words: `deny bash with a command starting "rm"`, `allow read, list, glob or
 * search`, `ask the tools of MCP server github`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const describeRule = (rule: Rule): string => {
  const tools = rule.tool !== undefined
    ? (listOf(rule.tool).includes("*") ? "every tool" : listText(listOf(rule.tool)))
    : rule.server !== undefined
    ? (listOf(rule.server).includes("*")
      ? "the tools of every MCP server"
      : `the tools of MCP ${listOf(rule.server).length === 1 ? "server" : "servers"} ${listText(listOf(rule.server))}`)
    : "no tool"
  const command = rule.command === undefined
    ? ""
    : rule.exact === true
    ? ` with the command ${listText(listOf(rule.command), quoted)}`
    : ` with a command starting ${listText(listOf(rule.command), quoted)}`
  const path = rule.path === undefined ? "" : ` with a path matching ${listText(listOf(rule.path), quoted)}`
  const cwd = rule.cwd === undefined ? "" : ` run in a directory matching ${listText(listOf(rule.cwd), quoted)}`
  return `${rule.decision} ${tools}${command}${path}${cwd}`
}

/**
 * Where a decision came from, in words: `rules[0]: deny bash with a command starting "rm"`, or
 * `the default decision, as no rule matched`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const source = (policy: Policy, rule: number | "default"): string =>
  rule === "default"
    ? "the default decision, as no rule matched"
    : `rules[${rule}]: ${describeRule(policy.rules[rule]!)}`

const verdictOf = (policy: Policy, rule: number | "default"): Verdict => {
  const decision = rule === "default" ? policy.default : policy.rules[rule]!.decision
  const own = rule === "default" ? undefined : policy.rules[rule]!.reason
  const from = source(policy, rule)
  const reason = decision === "allow"
    ? `the permission policy allows it (${from})`
    : decision === "deny"
    ? `the permission policy forbids it (${from})${own === undefined ? "" : `: ${own}`}`
    : `the permission policy asks the user (${from})${own === undefined ? "" : `: ${own}`}`
  return { decision, rule, reason }
}

const compiledOf = (policy: Policy): ReadonlyArray<Compiled> | string => {
  const known = compiledRules.get(policy)
  if (known !== undefined) return known
  // a policy object made by hand, not by `make`: check it now, once
  const built = build({ rules: policy.rules, default: policy.default }, { root: policy.root })
  if (Result.isFailure(built)) return built.failure.message
  const compiled = compiledRules.get(built.success)!
  compiledRules.set(policy, compiled)
  return compiled
}

/**
 * What the policy decides for a call: the first rule whose tool and arguments match, or the
 * default. Total: a call whose arguments are not JSON is denied by the first rule that
 * matches its name and needs its arguments (see the module documentation).
 *
 * @example
 * ```ts
 * import { Policy } from "@dsh/permissions"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const policy = yield* Policy.make({ rules: [{ decision: "deny", tool: "bash", command: "rm" }], default: "allow" })
 *   return Policy.evaluate(policy, { name: "bash", arguments: `{"command": "ls && rm -rf build"}` }).decision // "deny"
 * })
 * ```
 *
 * @since 0.1.0
 * @category deciding
 */
export const evaluate = (policy: Policy, call: { readonly name: string; readonly arguments: string }): Verdict => {
  const compiled = compiledOf(policy)
  if (typeof compiled === "string") {
    return { decision: "deny", rule: "default", reason: `the permission policy is invalid: ${compiled}` }
  }
  let args: ReturnType<typeof parseArguments> | undefined
  for (let index = 0; index < compiled.length; index++) {
    const rule = compiled[index]!
    if (!rule.names(call.name)) continue
    if (!needsArguments(rule)) return verdictOf(policy, index)
    args ??= parseArguments(call.name, call.arguments)
    if (args._tag === "Unparsed") {
      return {
        decision: "deny",
        rule: index,
        reason: `the permission policy cannot check the call (${
          source(policy, index)
        } looks at its arguments, which do not parse): ${args.error.message}`
      }
    }
    const unreadable = unreadableArgument(rule, args.value)
    if (unreadable !== undefined) {
      return {
        decision: "deny",
        rule: index,
        reason: `the permission policy cannot check the call (${source(policy, index)} looks at its ${unreadable}, which is no text)`
      }
    }
    if (matchesArguments(rule, policy.root, args.value)) return verdictOf(policy, index)
  }
  return verdictOf(policy, "default")
}

/**
 * The policy the dsh command uses by default, "asks before writes and commands": it allows
 * the file tools that only read (`read`, `list`, `glob`, `search`, wherever they point) and
 * the tools that only look after the agent's own background jobs (`bash_output`, `bash_wait`,
 * `bash_jobs`, `bash_kill`: a job was asked about when `bash_background` started it), asks
 * before `bash`, `bash_background`, `write` and `edit`, asks before every MCP tool, and asks
 * before any other tool too (the default is `ask`): nothing the policy does not know runs
 * unasked, and nothing is refused outright.
 *
 * @since 0.1.0
 * @category policies
 */
export const askBeforeChanges: Config = {
  rules: [
    { decision: "allow", tool: ["read", "list", "glob", "search", "bash_output", "bash_wait", "bash_jobs", "bash_kill"] },
    { decision: "ask", tool: ["bash", "bash_background", "write", "edit"] },
    { decision: "ask", server: "*" }
  ],
  default: "ask"
}
