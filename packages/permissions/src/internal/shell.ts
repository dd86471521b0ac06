/**
 * Reading a shell command line the way the shell splits it, for command rules: the simple
 * commands it runs (split at `;`, `&`, `&&`, `|`, `||`, newlines and parentheses, and those
 * inside `$(…)`, backticks and process substitutions), each as its words with the quotes
 * removed, and whether it writes files through a redirection.
 *
 * This is not a shell: it does not expand anything but `$'…'` (whose escapes it decodes as
 * bash does, since what they spell is fixed). It records what it cannot see through
 * (expansions, globs, brace expansions, substitutions), so that an allow rule refuses to vouch
 * for it and a deny rule still finds the commands that are spelt out, and treats a word it
 * cannot know as one that could be anything. It never throws and is linear in the line's
 * length; nesting beyond {@link maxNesting} levels marks the line unreadable.
 */
import * as Wildcard from "./wildcard.ts"

/** A word of a simple command. */
export interface Word {
  /** The word with its quotes and escapes removed. */
  readonly text: string
  /**
   * The word as a pattern: an unquoted `*` is any run of characters, an unquoted `?` one
   * character, everything else itself.
   */
  readonly pattern: Wildcard.Wildcard
  /** Whether the word holds an unquoted `*` or `?` (a glob to the shell, a wildcard in a pattern). */
  readonly glob: boolean
  /** Whether the word holds an expansion, a substitution, a `$'…'`, a `[`, `{`, `}` or a leading `~`. */
  readonly expands: boolean
  /**
   * Whether what the word becomes cannot be known without running the shell: it holds a
   * parameter expansion or a substitution, a glob (`*`, `?`, a `[…]` class) or a brace
   * expansion (`{a,b}`, `{1..3}`), any of which may turn it into other words, several or none.
   * A leading `~` and a `$'…'` do not make a word dynamic: what they stand for is known.
   */
  readonly dynamic: boolean
}

/** Whether a word means exactly its text to the shell. */
export const isLiteral = (word: Word): boolean => !word.glob && !word.expands

/** A simple command: its words (redirection targets excluded) and whether it writes a file. */
export interface Command {
  readonly words: ReadonlyArray<Word>
  /** An output redirection to a file (`>`, `>>`, `&>`, `<>`; not `>/dev/null` or `2>&1`). */
  readonly writes: boolean
}

/** A command line as the shell splits it. */
export interface Line {
  /** Every simple command, those inside substitutions included. */
  readonly commands: ReadonlyArray<Command>
  /** The line runs commands whose output becomes part of another command. */
  readonly substitutions: boolean
  /** Nesting deeper than {@link maxNesting}: the rest of the line was not read. */
  readonly unreadable: boolean
  /**
   * An expansion runs what a variable holds, which the line does not show: `${x@P}` expands
   * the value as a prompt, command substitutions included, and the value may come from the
   * environment the command inherits.
   */
  readonly runsValues: boolean
}

/** How deeply substitutions may nest before a line is unreadable. */
export const maxNesting = 32

const parameterChar = /[A-Za-z0-9_]/
const parameterStart = /[A-Za-z_]/
const specialParameters = "@*#?$!-0123456789"

/** The index of the `}` closing a `${` that starts at `open`, or the end of the text. */
const closingBrace = (text: string, open: number): number => {
  let depth = 0
  for (let j = open; j < text.length; j++) {
    const c = text[j]
    if (c === "\\") j++
    else if (c === "{") depth++
    else if (c === "}" && --depth === 0) return j
  }
  return text.length
}

const simpleEscapes: Readonly<Record<string, string>> = {
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  "\\": "\\",
  "'": "'",
  "\"": "\"",
  "?": "?"
}

/** The digits of `base` (at most `max`) at `from`, as their value and how many there were. */
const digitsAt = (text: string, from: number, base: 8 | 16, max: number): { value: number; count: number } => {
  let value = 0
  let count = 0
  while (count < max && from + count < text.length) {
    const digit = Number.parseInt(text[from + count]!, base)
    if (Number.isNaN(digit)) break
    value = value * base + digit
    count++
  }
  return { value, count }
}

const controlOf = (c: string): string => String.fromCharCode(c === "?" ? 0x7f : c.toUpperCase().charCodeAt(0) & 0x1f)

/**
 * The text of a `$'…'` body as bash makes it: `\n`, `\t`, … `\nnn` (octal), `\xHH`, `\uHHHH`,
 * `\UHHHHHHHH`, `\cX` decoded; any other escape kept with its backslash; a NUL ends the text,
 * as it ends bash's. Bytes above 0x7f (`\xe9`) become the character of that code, which names
 * no command a pattern could hold either way.
 */
const decodeAnsiC = (body: string): string => {
  let out = ""
  let i = 0
  while (i < body.length) {
    const c = body[i]!
    if (c !== "\\" || i + 1 >= body.length) {
      out += c
      i++
      continue
    }
    const e = body[i + 1]!
    let decoded: string
    let used = 2
    if (Object.hasOwn(simpleEscapes, e)) decoded = simpleEscapes[e]!
    else if (e >= "0" && e <= "7") {
      const octal = digitsAt(body, i + 1, 8, 3)
      decoded = String.fromCharCode(octal.value & 0xff)
      used = 1 + octal.count
    } else if (e === "x" || e === "u" || e === "U") {
      const hex = digitsAt(body, i + 2, 16, e === "x" ? 2 : e === "u" ? 4 : 8)
      decoded = hex.count === 0
        ? `\\${e}`
        : e === "x"
        ? String.fromCharCode(hex.value)
        : hex.value <= 0x10ffff
        ? String.fromCodePoint(hex.value)
        : "\ufffd"
      used = 2 + hex.count
    } else if (e === "c" && i + 2 < body.length) {
      // `\c` takes the next character, and a backslash pair as one: `\c\\` and `\c\` are both control-backslash
      const x = body[i + 2]!
      decoded = controlOf(x)
      used = x === "\\" && body[i + 3] === "\\" ? 4 : 3
    } else decoded = `\\${e}`
    if (decoded === "\0") break
    out += decoded
    i += used
  }
  return out
}

interface Result {
  commands: Array<Command>
  substitutions: boolean
  unreadable: boolean
  runsValues: boolean
}

/** A `${…}` whose parameter is transformed by `@P` (prompt expansion), itself or one nested in it. */
const promptExpansion = /@P(\}|$)/

const scanLine = (text: string, depth: number, into: Result): void => {
  let i = 0

  // Scans simple commands until `stop` (consumed) or the end of the text.
  const scanCommands = (stop: string | undefined, level: number): void => {
    let words: Array<Word> = []
    let writes = false
    let word = ""
    let pattern: Array<Wildcard.Token> = []
    let glob = false
    let expands = false
    // an expansion or a substitution; and how far an unquoted `[…]` or `{…}` got (open, closed)
    let substituted = false
    let bracket: 0 | 1 | 2 = 0
    let brace: 0 | 1 | 2 = 0
    // whether a `,` or `..` followed the unquoted `{`: `{}` and `{x}` are themselves, `{a,b}` and `{1..3}` are not
    let braceSplits = false
    let started = false
    let inDouble = false
    // the kind of redirection whose target the next word is
    let redirect: "out" | "dup-out" | "in" | undefined

    const endWord = () => {
      if (!started) return
      if (redirect === "out") {
        if (word !== "/dev/null") writes = true
      } else if (redirect === "dup-out") {
        // `>&2`, `>&-` duplicate a descriptor; `>&file` writes the file
        if (!/^(\d+|-)$/.test(word)) writes = true
      } else if (redirect === undefined) {
        const dynamic = substituted || glob || bracket === 2 || brace === 2
        words.push({ text: word, pattern, glob, expands, dynamic })
      }
      redirect = undefined
      word = ""
      pattern = []
      glob = false
      expands = false
      substituted = false
      bracket = 0
      brace = 0
      braceSplits = false
      started = false
    }
    const endCommand = () => {
      endWord()
      redirect = undefined
      if (words.length > 0 || writes) into.commands.push({ words, writes })
      words = []
      writes = false
    }
    // `;`, `&`, `|`, `(`, `)` and their doubled forms end a simple command
    const separator = () => {
      endCommand()
      i++
      while (i < text.length && ";&|".includes(text[i]!) && text[i + 1] !== ">") i++
    }
    const add = (c: string, token?: Wildcard.Token) => {
      if (brace === 1 && (c.includes(",") || (c.startsWith(".") && word.endsWith(".")) || c.includes(".."))) {
        braceSplits = true
      }
      word += c
      if (token === undefined) pattern.push(...Wildcard.literal(c))
      else pattern.push(token)
      // a `]` closes a class an unquoted `[` opened, even quoted: counting it is the safe side
      if (c === "]" && bracket === 1) bracket = 2
      started = true
    }
    const substitution = (close: string) => {
      into.substitutions = true
      expands = true
      substituted = true
      started = true
      if (level >= maxNesting) {
        into.unreadable = true
        i = text.length
        return
      }
      scanCommands(close, level + 1)
    }
    const dollar = () => {
      const next = text[i + 1]
      if (next === "(") {
        i += 2
        substitution(")")
      } else if (next === "{") {
        const end = closingBrace(text, i + 1)
        const inner = text.slice(i + 2, end)
        // `${x:-$(cmd)}` runs cmd: read what the expansion holds as a line of its own
        if (inner.includes("$(") || inner.includes("`")) {
          into.substitutions = true
          if (level >= maxNesting) into.unreadable = true
          else scanLine(inner, level + 1, into)
        }
        // `${x@P}` runs the substitutions x holds: a substitution the line does not show
        if (promptExpansion.test(inner)) {
          into.substitutions = true
          into.runsValues = true
        }
        add(text.slice(i, end + 1))
        expands = true
        substituted = true
        i = end + 1
      } else if (next !== undefined && parameterStart.test(next)) {
        let j = i + 1
        while (j < text.length && parameterChar.test(text[j]!)) j++
        add(text.slice(i, j))
        expands = true
        substituted = true
        i = j
      } else if (next !== undefined && specialParameters.includes(next)) {
        add(text.slice(i, i + 2))
        expands = true
        substituted = true
        i += 2
      } else if (next === "'" && !inDouble) {
        // $'…': its escapes decoded, as quoted text; still not "as written" to an allow rule
        let j = i + 2
        while (j < text.length && text[j] !== "'") j += text[j] === "\\" ? 2 : 1
        for (const q of decodeAnsiC(text.slice(i + 2, Math.min(j, text.length)))) add(q)
        expands = true
        started = true
        i = j + 1
      } else if (next === "\"" && !inDouble) {
        i += 1 // $"…" is a double-quoted string
      } else {
        add("$")
        i += 1
      }
    }

    while (i < text.length) {
      const c = text[i]!
      if (inDouble) {
        if (c === "\"") {
          inDouble = false
          i++
        } else if (c === "\\" && i + 1 < text.length && "$`\"\\\n".includes(text[i + 1]!)) {
          if (text[i + 1] !== "\n") add(text[i + 1]!)
          i += 2
        } else if (c === "$") {
          dollar()
        } else if (c === "`") {
          i++
          substitution("`")
        } else {
          add(c)
          i++
        }
        continue
      }
      if (stop !== undefined && c === stop) {
        i++
        endCommand()
        return
      }
      switch (c) {
        case " ":
        case "\t":
          endWord()
          i++
          break
        case "\n":
          endCommand()
          i++
          break
        case "#":
          if (started) {
            add(c)
            i++
          } else {
            while (i < text.length && text[i] !== "\n") i++
          }
          break
        case "\\":
          if (text[i + 1] === "\n") i += 2
          else if (i + 1 < text.length) {
            add(text[i + 1]!)
            i += 2
          } else {
            add("\\")
            i++
          }
          break
        case "'": {
          const end = text.indexOf("'", i + 1)
          const close = end < 0 ? text.length : end
          for (const q of text.slice(i + 1, close)) add(q)
          started = true
          i = close + 1
          break
        }
        case "\"":
          inDouble = true
          started = true
          i++
          break
        case "`":
          i++
          substitution("`")
          break
        case "$":
          dollar()
          break
        case "&":
          if (text[i + 1] === ">") {
            endWord()
            i += text[i + 2] === ">" ? 3 : 2
            redirect = "out"
          } else separator()
          break
        case ";":
        case "|":
        case "(":
        case ")":
          separator()
          break
        case ">":
        case "<": {
          // `2>file`: the digits right before the operator name a descriptor, not a word
          if (started && !glob && !expands && /^\d+$/.test(word)) {
            word = ""
            pattern = []
            started = false
          } else endWord()
          const next = text[i + 1]
          if (next === "(") {
            i += 2
            substitution(")")
          } else if (c === ">") {
            redirect = next === "&" ? "dup-out" : "out"
            i += next === "&" || next === ">" || next === "|" ? 2 : 1
          } else if (next === ">") {
            redirect = "out"
            i += 2
          } else {
            redirect = "in"
            i += next === "<" ? (text[i + 2] === "<" ? 3 : text[i + 2] === "-" ? 3 : 2) : next === "&" ? 2 : 1
          }
          break
        }
        case "*":
          add(c, Wildcard.star)
          glob = true
          i++
          break
        case "?":
          add(c, Wildcard.one)
          glob = true
          i++
          break
        case "[":
          add(c)
          expands = true
          if (bracket === 0) bracket = 1
          i++
          break
        case "{":
          add(c)
          if (brace === 0) brace = 1
          expands = true
          i++
          break
        case "}":
          if (brace === 1 && braceSplits) brace = 2
          add(c)
          expands = true
          i++
          break
        case "~":
          add(c)
          if (word.length === 1) expands = true
          i++
          break
        default:
          add(c)
          i++
      }
    }
    endCommand()
  }

  scanCommands(undefined, depth)
}

/** Splits a command line into its simple commands. */
export const parse = (text: string): Line => {
  const result: Result = { commands: [], substitutions: false, unreadable: false, runsValues: false }
  scanLine(text, 0, result)
  return result
}

const plain = /^[A-Za-z0-9_./:=@%+,-]+$/

/** A word quoted so that {@link parse} reads it back as this exact, literal text. */
export const quote = (text: string): string =>
  text.length > 0 && plain.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`
