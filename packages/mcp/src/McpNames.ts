/**
 * How MCP tools are named in dsh: `<server>__<tool>`, within the names providers accept
 * (`^[a-zA-Z0-9_-]{1,64}$`, `Tool.namePattern`).
 *
 * - **Server names** are 1 to 24 letters, digits, `-` and `_`, starting with a letter or a
 *   digit, with no `__` and no trailing `_`: so the first `__` of a tool name always ends the
 *   server's part, and {@link serverOf} (what a permission policy matches on) is never
 *   ambiguous.
 * - **Tool names** keep what the server calls them when they can. A character outside
 *   `[a-zA-Z0-9_-]` (MCP also allows `.` and `/`; servers send others) becomes `_`; a name too
 *   long for 64 characters is cut and given `_` and a 7-character hash of the original name,
 *   so two long names that share a beginning stay apart.
 * - **Collisions** inside a server: a name the server sent as it is keeps it; names that were
 *   changed and now collide (`a.b` and `a/b`, or one of them with an untouched `a_b`) each get
 *   the hash of their original name. A tool listed twice, or one whose hashed name still
 *   collides, is refused with a reason (see {@link assign}). Tools of different servers never
 *   collide: their prefixes differ.
 *
 * @since 0.1.0
 */

/**
 * What separates the server's name from the tool's.
 *
 * @since 0.1.0
 * @category constants
 */
export const separator = "__"

/**
 * The longest server name.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxServerNameLength = 24

/**
 * The longest tool name providers accept.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxToolNameLength = 64

/**
 * The server names accepted: letters, digits, `-` and single `_`s, starting with a letter or a
 * digit and not ending with `_` (at most {@link maxServerNameLength} characters, checked apart).
 *
 * @since 0.1.0
 * @category validation
 */
export const serverNamePattern = /^[a-zA-Z0-9](?:[a-zA-Z0-9-]|_(?=[a-zA-Z0-9-]))*$/

/**
 * Why a server name cannot be used, or `undefined` when it can.
 *
 * @since 0.1.0
 * @category validation
 */
export const serverNameProblem = (name: string): string | undefined => {
  if (name.length === 0) return "a server name cannot be empty"
  if (name.length > maxServerNameLength) {
    return `a server name must be at most ${maxServerNameLength} characters (it prefixes each of its tools' names, which must fit in ${maxToolNameLength}); this one has ${name.length}`
  }
  if (!serverNamePattern.test(name)) {
    return "a server name must be letters, digits, '-' and '_', start with a letter or a digit, and have no '__' and no trailing '_' ('__' separates the server from the tool in tool names)"
  }
  return undefined
}

/**
 * The prefix of every tool of a server: `<server>__`.
 *
 * @since 0.1.0
 * @category names
 */
export const prefix = (server: string): string => `${server}${separator}`

/**
 * The server a tool name belongs to by the naming convention (the part before the first
 * `__`), or `undefined` for a name without one.
 *
 * @since 0.1.0
 * @category names
 */
export const serverOf = (toolName: string): string | undefined => {
  const at = toolName.indexOf(separator)
  return at <= 0 ? undefined : toolName.slice(0, at)
}

/**
 * A short, stable hash of a name: FNV-1a over its UTF-16 code units, in base 36, 7 characters.
 *
 * @since 0.1.0
 * @category names
 */
export const hash = (name: string): string => {
  let h = 0x811c9dc5
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return (h >>> 0).toString(36).padStart(7, "0")
}

const sanitize = (mcpName: string): string => {
  let out = ""
  // By code point, so a character outside the BMP becomes one `_`, not two.
  for (const char of mcpName) out += /^[a-zA-Z0-9_-]$/.test(char) ? char : "_"
  return out === "" ? "_" : out
}

const hashed = (server: string, mcpName: string): string => {
  const suffix = `_${hash(mcpName)}`
  const room = maxToolNameLength - prefix(server).length - suffix.length
  return `${prefix(server)}${sanitize(mcpName).slice(0, room)}${suffix}`
}

/**
 * The dsh name of one MCP tool, ignoring the other tools of its server, and whether it differs
 * from what the server calls it (after the prefix).
 *
 * @since 0.1.0
 * @category names
 */
export const candidate = (server: string, mcpName: string): { readonly name: string; readonly changed: boolean } => {
  const sanitized = sanitize(mcpName)
  const name = `${prefix(server)}${sanitized}`
  if (name.length > maxToolNameLength) return { name: hashed(server, mcpName), changed: true }
  return { name, changed: sanitized !== mcpName }
}

/**
 * The names of a server's tools: each listed name is given its dsh name, or refused with a
 * reason. The result follows the listing's order.
 *
 * @since 0.1.0
 * @category names
 */
export const assign = (
  server: string,
  mcpNames: ReadonlyArray<string>
): ReadonlyArray<
  | { readonly _tag: "Named"; readonly mcpName: string; readonly name: string }
  | { readonly _tag: "Refused"; readonly mcpName: string; readonly reason: string }
> => {
  const seen = new Set<string>()
  const firsts = mcpNames.map((mcpName) => {
    const first = !seen.has(mcpName)
    seen.add(mcpName)
    return first
  })
  const candidates = mcpNames.map((mcpName) => candidate(server, mcpName))
  // How many distinct tools want each name, and which names are taken as the server sent them.
  const wanted = new Map<string, number>()
  const untouched = new Set<string>()
  candidates.forEach((c, i) => {
    if (!firsts[i]) return
    wanted.set(c.name, (wanted.get(c.name) ?? 0) + 1)
    if (!c.changed) untouched.add(c.name)
  })
  const taken = new Set<string>(untouched)
  const named = candidates.map((c, i) => {
    const mcpName = mcpNames[i]!
    if (!firsts[i]) return { _tag: "Refused" as const, mcpName, reason: "the server lists a tool of this name twice" }
    if (!c.changed) return { _tag: "Named" as const, mcpName, name: c.name }
    const contested = (wanted.get(c.name) ?? 0) > 1 || untouched.has(c.name)
    const name = contested ? hashed(server, mcpName) : c.name
    if (taken.has(name)) {
      return {
        _tag: "Refused" as const,
        mcpName,
        reason: `its dsh name ${JSON.stringify(name)} collides with another tool of the server`
      }
    }
    taken.add(name)
    return { _tag: "Named" as const, mcpName, name }
  })
  return named
}
