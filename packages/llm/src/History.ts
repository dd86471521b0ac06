/**
 * An immutable sequence of messages that shares structure between versions, so appending to
 * a long history costs O(appended + small constant), never a copy of the history.
 *
 * A session's history only grows, and every step hands the whole of it to a model request. A
 * flat array snapshot per step costs O(history): past ~16k elements V8 allocates such arrays
 * in large-object space, and a step at 100k messages spends most of its time copying. A
 * `History` instead keeps its messages in frozen blocks of 128 plus a frozen tail of fewer
 * than 128; appending copies at most the tail and, when a block fills, the list of blocks
 * (one pointer per 128 messages). Every version stays valid and unchanged: appending to an old
 * version makes a new one and leaves the old one and its other descendants as they were.
 *
 * The layout is a pure function of the messages (always full blocks, then the tail), so two
 * histories holding the same messages have the same structure however they were built, and
 * deep-equality checks (vitest's `toEqual`) compare them by their messages. Only the
 * containers are frozen; messages are stored as given.
 *
 * Code that needs every message walks the history (it is `Iterable`) or flattens it with
 * {@link toArray}, which is O(length) once per history and then memoized. That is what an
 * adapter does when it serializes a request, and `JSON.stringify` of a history gives the flat
 * array of messages, the wire shape of the {@link History} Schema.
 *
 * **Example** (Building and reading a history)
 *
 * ```ts
 * import { History, Message } from "@dsh/llm"
 *
 * const first = History.make(Message.user("hi"))
 * const second = History.append(first, Message.assistant("hello"))
 * first.length // 1: appending made a new history
 * second.length // 2
 * History.at(second, -1) // the assistant message
 * History.toArray(second) // a frozen array of both messages
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { Equivalence } from "effect/Equivalence"
import { dual } from "effect/Function"
import { NodeInspectSymbol } from "effect/Inspectable"
import { type Pipeable, Prototype as PipeableProto } from "effect/Pipeable"
import { hasProperty } from "effect/Predicate"
import { Message } from "./Message.ts"

const TypeId: unique symbol = Symbol.for("@dsh/llm/History")

/**
 * The symbol that marks a {@link History}.
 *
 * @since 0.1.0
 * @category type ids
 */
export type TypeId = typeof TypeId

/**
 * An immutable, structure-sharing sequence of messages. Iterate it, read it with {@link at}
 * and {@link last}, extend it with {@link append} and {@link appendAll}, flatten it with
 * {@link toArray}.
 *
 * @since 0.1.0
 * @category models
 */
export interface History extends Iterable<Message>, Pipeable {
  readonly [TypeId]: TypeId
  /** How many messages the history holds. */
  readonly length: number
  /** The messages as a frozen flat array, so `JSON.stringify` gives the wire shape. */
  toJSON(): ReadonlyArray<Message>
  /** Node's `util.inspect` (and `console.log`) show the messages as an array. */
  [NodeInspectSymbol](): ReadonlyArray<Message>
}

// The representation: `blocks` holds only full blocks of exactly BLOCK_SIZE messages, `tail`
// fewer than BLOCK_SIZE; every array is frozen, and so is the history object.
interface HistoryImpl extends History {
  readonly blocks: ReadonlyArray<ReadonlyArray<Message>>
  readonly tail: ReadonlyArray<Message>
}

// 128: a step appends a few times, and each append copies the tail; with blocks of 1024 those
// copies were the largest garbage a long session's turns made (ADR 0014)
const BLOCK_BITS = 7
const BLOCK_SIZE = 1 << BLOCK_BITS
const BLOCK_MASK = BLOCK_SIZE - 1

// toArray's result per history; held weakly so the history object itself stays frozen
const flattened = new WeakMap<History, ReadonlyArray<Message>>()

// Walks the blocks, then the tail, without a generator's per-element overhead.
class HistoryIterator implements Iterator<Message> {
  readonly blocks: ReadonlyArray<ReadonlyArray<Message>>
  readonly tail: ReadonlyArray<Message>
  current: ReadonlyArray<Message>
  block = 0
  index = 0

  constructor(self: HistoryImpl) {
    this.blocks = self.blocks
    this.tail = self.tail
    this.current = self.blocks.length > 0 ? self.blocks[0]! : self.tail
  }

  next(): IteratorResult<Message, undefined> {
    if (this.index === this.current.length) {
      if (this.current === this.tail) return { done: true, value: undefined }
      this.block++
      this.current = this.block < this.blocks.length ? this.blocks[this.block]! : this.tail
      this.index = 0
      if (this.current.length === 0) return { done: true, value: undefined }
    }
    return { done: false, value: this.current[this.index++]! }
  }

  [Symbol.iterator](): Iterator<Message> {
    return this
  }
}

const HistoryProto: Omit<HistoryImpl, "blocks" | "tail" | "length"> = {
  ...PipeableProto,
  [TypeId]: TypeId,
  [Symbol.iterator](this: HistoryImpl): Iterator<Message> {
    return new HistoryIterator(this)
  },
  toJSON(this: HistoryImpl): ReadonlyArray<Message> {
    return toArray(this)
  },
  [NodeInspectSymbol](this: HistoryImpl): ReadonlyArray<Message> {
    return toArray(this)
  }
}

const makeImpl = (
  blocks: ReadonlyArray<ReadonlyArray<Message>>,
  tail: ReadonlyArray<Message>,
  length: number
): History => {
  const self = Object.create(HistoryProto)
  self.length = length
  self.blocks = blocks
  self.tail = tail
  return Object.freeze(self)
}

const noMessages: ReadonlyArray<Message> = Object.freeze([])
const emptyHistory = makeImpl(Object.freeze([]), noMessages, 0)

/**
 * Tells whether a value is a {@link History}.
 *
 * @since 0.1.0
 * @category guards
 */
export const isHistory = (u: unknown): u is History => hasProperty(u, TypeId)

/**
 * The history without messages.
 *
 * @since 0.1.0
 * @category constructors
 */
export const empty: History = emptyHistory

/**
 * Appends messages: copies at most the tail (fewer than 128 pointers) and, when blocks fill,
 * the list of blocks once. Appending nothing returns `self`.
 *
 * @since 0.1.0
 * @category combining
 */
export const appendAll: {
  (messages: Iterable<Message>): (self: History) => History
  (self: History, messages: Iterable<Message>): History
} = dual(2, (self: History, messages: Iterable<Message>): History => {
  const { blocks, tail: oldTail } = self as HistoryImpl
  let tail: Array<Message> | undefined
  let grown: Array<ReadonlyArray<Message>> | undefined
  let added = 0
  for (const message of messages) {
    // spread, not slice: V8's slice leaves its fast path on frozen arrays (~15x slower)
    if (tail === undefined) tail = [...oldTail]
    tail.push(message)
    added++
    if (tail.length === BLOCK_SIZE) {
      if (grown === undefined) grown = [...blocks]
      grown.push(Object.freeze(tail))
      tail = []
    }
  }
  if (tail === undefined) return self
  return makeImpl(
    grown === undefined ? blocks : Object.freeze(grown),
    tail.length === 0 ? noMessages : Object.freeze(tail),
    self.length + added
  )
})

/**
 * Appends one message.
 *
 * @since 0.1.0
 * @category combining
 */
export const append: {
  (message: Message): (self: History) => History
  (self: History, message: Message): History
} = dual(2, (self: History, message: Message): History => {
  const { blocks, tail } = self as HistoryImpl
  if (tail.length + 1 < BLOCK_SIZE) return makeImpl(blocks, Object.freeze([...tail, message]), self.length + 1)
  return makeImpl(Object.freeze([...blocks, Object.freeze([...tail, message])]), noMessages, self.length + 1)
})

/**
 * Makes a history of an iterable of messages; a history is returned as it is.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromIterable = (messages: Iterable<Message> | History): History =>
  isHistory(messages) ? messages : appendAll(emptyHistory, messages)

/**
 * Makes a history of the given messages.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (...messages: ReadonlyArray<Message>): History => appendAll(emptyHistory, messages)

/**
 * The message at an index; a negative index counts from the end, as `Array.prototype.at`
 * does. `undefined` when the index is out of range.
 *
 * @since 0.1.0
 * @category getters
 */
export const at: {
  (index: number): (self: History) => Message | undefined
  (self: History, index: number): Message | undefined
} = dual(2, (self: History, index: number): Message | undefined => {
  const { blocks, tail, length } = self as HistoryImpl
  let i = Math.trunc(index) || 0
  if (i < 0) i += length
  if (i < 0 || i >= length) return undefined
  const inBlocks = blocks.length * BLOCK_SIZE
  return i < inBlocks ? blocks[i >> BLOCK_BITS]![i & BLOCK_MASK] : tail[i - inBlocks]
})

/**
 * The last message, or `undefined` for an empty history.
 *
 * @since 0.1.0
 * @category getters
 */
export const last = (self: History): Message | undefined => {
  const { blocks, tail } = self as HistoryImpl
  if (tail.length > 0) return tail[tail.length - 1]
  return blocks.length > 0 ? blocks[blocks.length - 1]![BLOCK_MASK] : undefined
}

/**
 * The messages as a frozen flat array. The first call per history costs O(length); the result
 * is memoized for that history.
 *
 * @since 0.1.0
 * @category conversions
 */
export const toArray = (self: History): ReadonlyArray<Message> => {
  const { blocks, tail } = self as HistoryImpl
  if (blocks.length === 0) return tail
  let out = flattened.get(self)
  if (out === undefined) {
    out = Object.freeze(([] as Array<Message>).concat(...blocks, tail))
    flattened.set(self, out)
  }
  return out
}

/**
 * Two histories are equivalent when they hold equivalent messages in the same order.
 *
 * @since 0.1.0
 * @category instances
 */
export const makeEquivalence = (isEquivalent: Equivalence<Message>): Equivalence<History> => (a, b) => {
  if (a === b) return true
  if (a.length !== b.length) return false
  const left = a[Symbol.iterator]()
  for (const message of b) {
    const next = left.next()
    if (next.done === true || !isEquivalent(next.value, message)) return false
  }
  return true
}

const fromMessages = SchemaTransformation.transform<History, ReadonlyArray<Message>>({
  decode: fromIterable,
  encode: toArray
})

/**
 * The Schema of a history: a {@link History} in its decoded form, the array of its messages
 * encoded (hence in JSON). Decoding validates every message.
 *
 * @since 0.1.0
 * @category schemas
 */
export const History = Schema.Array(Message).pipe(
  Schema.decodeTo(
    Schema.declare(isHistory, {
      identifier: "History",
      expected: "History",
      toCodecArbitrary: () => Schema.link<History>()(Schema.Array(Message), fromMessages),
      toEquivalence: () => makeEquivalence(Schema.toEquivalence(Message))
    }),
    fromMessages
  )
)
