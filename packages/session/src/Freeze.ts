/**
 * Deep freezing of logged data: the session's guarantee that nothing outside it can change a
 * logged event. It walks the whole value — also below objects that are already frozen, since a
 * frozen object may still hold mutable ones — and costs O(size of the value), paid once per
 * appended event, never per read.
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
  const seen = new Set<object>()
  const visit = (node: unknown): void => {
    if (typeof node !== "object" || node === null) {
      if (typeof node !== "function") return
    }
    const object = node as object
    if (seen.has(object)) return
    seen.add(object)
    // typed arrays with elements cannot be frozen; logged data is JSON, so none should be here
    if (ArrayBuffer.isView(object)) return
    Object.freeze(object)
    for (const key of Reflect.ownKeys(object)) {
      visit((object as Record<PropertyKey, unknown>)[key])
    }
  }
  visit(value)
  return value
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
