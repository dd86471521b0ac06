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
 * Whether a value and everything reachable from it is frozen.
 *
 * @since 0.1.0
 * @category guards
 */
export const isDeeplyFrozen = (value: unknown): boolean => {
  const seen = new Set<object>()
  const visit = (node: unknown): boolean => {
    if ((typeof node !== "object" || node === null) && typeof node !== "function") return true
    const object = node as object
    if (seen.has(object)) return true
    seen.add(object)
    if (ArrayBuffer.isView(object)) return false
    if (!Object.isFrozen(object)) return false
    return Reflect.ownKeys(object).every((key) => visit((object as Record<PropertyKey, unknown>)[key]))
  }
  return visit(value)
}
