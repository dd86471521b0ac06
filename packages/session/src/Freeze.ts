/**
 * Deep freezing of logged data: the session's guarantee that nothing outside it can change a
 * logged event. It walks the whole value through its string keys — also below objects that are
 * already frozen, since a frozen object may still hold mutable ones — and costs O(size of the
 * value), paid once per appended event, never per read. Logged data is JSON, so the walk keeps
 * no visited set; a value nested deeper than 256 levels is frozen down to that depth.
 *
 * @since 0.1.0
 */

/**
 * Freezes a value and everything reachable from it; returns the value.
 *
 * @since 0.1.0
 * @category utils
 */
export const deep = <A>(value: A): A => {
  freezeBelow(value, 0)
  return value
}

// Logged data is JSON (no cycles), so no visited set: a depth bound stops a cyclic value.
const freezeBelow = (node: unknown, depth: number): void => {
  if (typeof node !== "object" || node === null || depth > 256) return
  // typed arrays with elements cannot be frozen; logged data is JSON, so none should be here
  if (ArrayBuffer.isView(node)) return
  Object.freeze(node)
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) freezeBelow(node[i], depth + 1)
    return
  }
  for (const key in node) freezeBelow((node as Record<string, unknown>)[key], depth + 1)
}

/**
 * Whether a value and everything reachable from it through string keys is frozen. Meant for
 * logged data, which is JSON: it does not track visited objects (a cycle deeper than 256
 * levels is taken as frozen), which keeps the check cheap enough to run on every event.
 *
 * @since 0.1.0
 * @category guards
 */
export const isDeeplyFrozen = (value: unknown): boolean => frozenBelow(value, 0)

const frozenBelow = (node: unknown, depth: number): boolean => {
  if (typeof node !== "object" || node === null) return typeof node !== "function" || Object.isFrozen(node)
  if (depth > 256) return true
  if (ArrayBuffer.isView(node) || !Object.isFrozen(node)) return false
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) if (!frozenBelow(node[i], depth + 1)) return false
    return true
  }
  for (const key in node) {
    if (!frozenBelow((node as Record<string, unknown>)[key], depth + 1)) return false
  }
  return true
}
