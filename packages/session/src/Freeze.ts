/**
 * Deep freezing of logged data: the session's guarantee that nothing outside it can change a
 * logged event. It walks the whole value through its string keys — also below objects that are
 * already frozen, since a frozen object may still hold mutable ones — and costs O(size of the
 * value), paid once per appended event, never per read.
 *
 * It freezes at any depth. The walk recurses (no allocation: this runs for every streamed
 * chunk) down to {@link recursionLimit} levels and continues below them with a stack of its
 * own and a visited set, so 100,000 levels of model-written JSON are frozen all the way down
 * without overflowing the call stack, and a cycle cannot make it loop.
 *
 * @since 0.1.0
 */

/**
 * How deep the walk recurses before it continues iteratively.
 *
 * @since 0.1.0
 * @category constants
 */
export const recursionLimit = 256

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

const freezeBelow = (node: unknown, depth: number): void => {
  if (typeof node !== "object" || node === null) return
  if (depth >= recursionLimit) return freezeIteratively(node)
  // typed arrays with elements cannot be frozen; logged data is JSON, so none should be here
  if (ArrayBuffer.isView(node)) return
  Object.freeze(node)
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) freezeBelow(node[i], depth + 1)
    return
  }
  for (const key in node) freezeBelow((node as Record<string, unknown>)[key], depth + 1)
}

const freezeIteratively = (root: object): void => {
  const pending: Array<unknown> = [root]
  const entered = new Set<object>()
  while (pending.length > 0) {
    const node = pending.pop()
    if (typeof node !== "object" || node === null || entered.has(node)) continue
    entered.add(node)
    if (ArrayBuffer.isView(node)) continue
    Object.freeze(node)
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) pending.push(node[i])
      continue
    }
    for (const key in node) pending.push((node as Record<string, unknown>)[key])
  }
}

/**
 * Whether a value and everything reachable from it through string keys is frozen, at any
 * depth (like {@link deep}: recursively, then iteratively below {@link recursionLimit}).
 *
 * @since 0.1.0
 * @category guards
 */
export const isDeeplyFrozen = (value: unknown): boolean => frozenBelow(value, 0)

const frozenBelow = (node: unknown, depth: number): boolean => {
  if (typeof node !== "object" || node === null) return typeof node !== "function" || Object.isFrozen(node)
  if (depth >= recursionLimit) return frozenIteratively(node)
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

const frozenIteratively = (root: object): boolean => {
  const pending: Array<unknown> = [root]
  const entered = new Set<object>()
  while (pending.length > 0) {
    const node = pending.pop()
    if (typeof node !== "object" || node === null) {
      if (typeof node === "function" && !Object.isFrozen(node)) return false
      continue
    }
    if (entered.has(node)) continue
    entered.add(node)
    if (ArrayBuffer.isView(node) || !Object.isFrozen(node)) return false
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) pending.push(node[i])
      continue
    }
    for (const key in node) pending.push((node as Record<string, unknown>)[key])
  }
  return true
}
