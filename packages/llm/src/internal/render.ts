/**
 * A bounded, total rendering of any value for failure messages: what a thrown or failed value
 * that is not an `Error` says about itself. It never throws (a getter or a Proxy trap that
 * throws is rendered as unreadable), never loops (a cycle is `[Circular]`), and never grows
 * past its budget (deep or wide values are cut with a marker), so a hostile or accidental
 * value cannot turn a failure report into a second failure.
 *
 * @internal
 */

const maxDepth = 6
const maxEntries = 20

/** @internal */
export const cutCodePoints = (text: string, max: number): string => {
  if (text.length <= max) return text
  let end = max
  const code = text.charCodeAt(end - 1)
  // never split a surrogate pair: a lone surrogate is not valid UTF-8 on the wire
  if (code >= 0xd800 && code <= 0xdbff) end--
  return text.slice(0, end)
}

/** @internal */
export const bounded = (text: string, limit: number): string =>
  text.length <= limit ? text : `${cutCodePoints(text, limit)}… (${text.length} characters)`

const read = (object: object, key: PropertyKey): { readonly ok: boolean; readonly value?: unknown } => {
  try {
    return { ok: true, value: (object as Record<PropertyKey, unknown>)[key] }
  } catch {
    return { ok: false }
  }
}

/**
 * A JSON-like rendering of a value, depth- and width-bounded, cycle-safe and total.
 *
 * @internal
 */
export const render = (value: unknown): string => {
  const seen = new Set<object>()
  const go = (node: unknown, depth: number): string => {
    switch (typeof node) {
      case "string":
        return JSON.stringify(node.length > 200 ? `${cutCodePoints(node, 200)}…` : node)
      case "number":
      case "boolean":
        return String(node)
      case "bigint":
        return `${node}n`
      case "undefined":
        return "undefined"
      case "symbol":
        return node.toString()
      case "function":
        return `[Function ${node.name === "" ? "(anonymous)" : node.name}]`
    }
    if (node === null) return "null"
    const object = node as object
    if (seen.has(object)) return "[Circular]"
    if (object instanceof Error) return `[${object.name}: ${object.message}]`
    // it renders as the empty object it looks like, which hides what was given (an async function's result)
    if (object instanceof Promise) return depth === 0 ? "a Promise" : "[Promise]"
    if (depth >= maxDepth) return Array.isArray(object) ? "[…]" : "{…}"
    seen.add(object)
    try {
      if (Array.isArray(object)) {
        const shown = object.slice(0, maxEntries).map((item) => go(item, depth + 1))
        if (object.length > maxEntries) shown.push(`… ${object.length - maxEntries} more`)
        return `[${shown.join(",")}]`
      }
      const keys = Object.keys(object)
      const shown = keys.slice(0, maxEntries).map((key) => {
        const entry = read(object, key)
        return `${JSON.stringify(key)}:${entry.ok ? go(entry.value, depth + 1) : "[unreadable]"}`
      })
      if (keys.length > maxEntries) shown.push(`… ${keys.length - maxEntries} more keys`)
      return `{${shown.join(",")}}`
    } finally {
      seen.delete(object)
    }
  }
  try {
    return go(value, 0)
  } catch {
    return "[an unreadable value]"
  }
}

/**
 * The message a value carries: an `Error`'s (with its name when it is not plain `Error`), a
 * string's text, an object's own non-empty string `message`; `undefined` for anything else.
 *
 * @internal
 */
export const messageOf = (value: unknown): string | undefined => {
  try {
    if (value instanceof Error) {
      const message = value.message.length > 0 ? value.message : "(no message)"
      return value.name === "Error" || value.name === "" || typeof value.name !== "string"
        ? message
        : `${value.name}: ${message}`
    }
    if (typeof value === "string") return value
    if (typeof value === "object" && value !== null) {
      const message = read(value, "message")
      if (message.ok && typeof message.value === "string" && message.value.length > 0) return message.value
    }
    return undefined
  } catch {
    return undefined
  }
}
