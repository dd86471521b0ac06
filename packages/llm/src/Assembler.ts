/**
 * The block assembler: the one implementation that turns stream chunks into content blocks
 * and a message. The loop, `generate` and the conformance kit all use it.
 *
 * It never throws. A malformed sequence is repaired in a documented way and each repair is
 * reported as an {@link Anomaly}:
 *
 * | anomaly | when | what the assembler does |
 * |---|---|---|
 * | `duplicate-block-start` | `block-start` for a block that is open | ignores the chunk |
 * | `index-reused` | `block-start` for an index whose block already ended | opens a new block at that index; both are kept, in arrival order |
 * | `delta-without-start` | a delta for an index with no open block and none ended | opens the block implicitly, typed by the delta |
 * | `delta-after-end` | a delta for an index whose block already ended | drops the delta |
 * | `delta-type-mismatch` | a delta of another kind than its block (text into a tool call) | drops the delta |
 * | `tool-call-conflict` | a tool-call delta whose `id` or `name` differs from what the block has | keeps the first id/name |
 * | `end-without-start` | `block-end` for an index never started | accepts the block |
 * | `duplicate-block-end` | `block-end` for a block already ended | drops the chunk |
 * | `block-end-mismatch` | `block-end`'s block differs from what the deltas built | keeps `block-end`'s block (the adapter's final word) |
 * | `unclosed-block` | `finish` (or the end of input) with a block still open | closes it with what the deltas built; a block with no deltas of its kind (image, custom) is dropped |
 * | `duplicate-finish` | a second `finish` | ignores it |
 * | `chunk-after-finish` | any other chunk after `finish`, or any chunk after `done()` | ignores it |
 * | `missing-finish` | the input ended without `finish` | the result has no finish reason |
 * | `malformed-chunk` | a value that is no stream chunk (`null`, a `text-delta` without its `delta`; see `StreamChunk.problem`) | ignores it |
 *
 * Blocks appear in the message ordered by `index` (blocks sharing an index in the order they
 * ended). Only open blocks hold accumulation state; an ended block is final. `usage` chunks
 * replace earlier ones (providers report cumulative counts).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { ContentBlock, ToolCallBlock } from "./Content.ts"
import type { FinishReason } from "./FinishReason.ts"
import type { CallId } from "./Ids.ts"
import type { Message } from "./Message.ts"
import { problem, type StreamChunk } from "./StreamChunk.ts"
import type { Usage } from "./Usage.ts"

/**
 * @since 0.1.0
 * @category models
 */
export type AnomalyKind =
  | "duplicate-block-start"
  | "index-reused"
  | "delta-without-start"
  | "delta-after-end"
  | "delta-type-mismatch"
  | "tool-call-conflict"
  | "end-without-start"
  | "duplicate-block-end"
  | "block-end-mismatch"
  | "unclosed-block"
  | "duplicate-finish"
  | "chunk-after-finish"
  | "missing-finish"
  | "malformed-chunk"

/**
 * A repair the assembler made to a malformed chunk sequence.
 *
 * @since 0.1.0
 * @category models
 */
export interface Anomaly {
  readonly kind: AnomalyKind
  /** The block index concerned, if any. */
  readonly index?: number
  /** What happened, in words. */
  readonly message: string
}

/**
 * The outcome of assembling a response.
 *
 * @since 0.1.0
 * @category models
 */
export interface Assembled {
  /** The assistant message. */
  readonly message: Message
  /** The finish reason, or `undefined` when the input had no `finish`. */
  readonly finishReason: FinishReason | undefined
  /** The last usage reported, if any. */
  readonly usage: Usage | undefined
  /** Every repair made, in order. */
  readonly anomalies: ReadonlyArray<Anomaly>
}

const none: ReadonlyArray<Anomaly> = []

type Open =
  | { readonly kind: "text" | "reasoning"; readonly index: number; text: string }
  | { readonly kind: "tool-call"; readonly index: number; id: CallId | undefined; name: string | undefined; args: string }
  | { readonly kind: "opaque"; readonly index: number; readonly blockType: string }

interface Ended {
  readonly index: number
  readonly block: ContentBlock
}

/**
 * A mutable assembler for one response. Not shared between fibers.
 *
 * @since 0.1.0
 * @category models
 */
export interface Assembler {
  /** Feeds one chunk; returns the anomalies it caused (a `finish` may close several blocks). */
  readonly push: (chunk: StreamChunk) => ReadonlyArray<Anomaly>
  /** The number of blocks open now (the only blocks holding accumulation state). */
  readonly openBlocks: () => number
  /** The blocks so far, in message order: ended blocks plus the partial state of open ones. */
  readonly snapshot: () => ReadonlyArray<ContentBlock>
  /** Whether `finish` was seen. */
  readonly finished: () => boolean
  /** Ends the input: closes open blocks and returns the result. Idempotent. */
  readonly done: () => Assembled
}

const blockKind = (blockType: string): Open["kind"] =>
  blockType === "text" || blockType === "reasoning" || blockType === "tool-call" ? blockType : "opaque"

const build = (open: Open): ContentBlock | undefined => {
  switch (open.kind) {
    case "text":
      return { type: "text", text: open.text }
    case "reasoning":
      return { type: "reasoning", text: open.text }
    case "tool-call":
      return {
        type: "tool-call",
        id: open.id ?? ("" as CallId),
        name: open.name ?? "",
        arguments: open.args
      } satisfies ToolCallBlock
    case "opaque":
      return undefined
  }
}

// Blocks are ordered by index, equal indexes in arrival order; indexes mostly arrive in order,
// so the search from the end is usually one step.
const insertByIndex = (list: Array<Ended>, entry: Ended) => {
  let at = list.length
  while (at > 0 && list[at - 1]!.index > entry.index) at--
  list.splice(at, 0, entry)
}

/**
 * Structural equality of JSON-like values (blocks are plain data).
 */
const same = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  if (ka.length !== kb.length) return false
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false
    if (!same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false
  }
  return true
}

// `block-end` may add what deltas cannot carry (a reasoning signature), but must agree with
// every field the deltas built.
const agrees = (built: ContentBlock, final: ContentBlock): boolean => {
  if (built.type !== final.type) return false
  for (const [key, value] of Object.entries(built)) {
    if (!same(value, (final as unknown as Record<string, unknown>)[key])) return false
  }
  return true
}

/**
 * Creates an assembler.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): Assembler => {
  const open = new Map<number, Open>()
  const endedIndexes = new Set<number>()
  // Kept sorted by index; equal indexes in the order they ended.
  const ended: Array<Ended> = []
  const anomalies: Array<Anomaly> = []
  let finishReason: FinishReason | undefined
  let usage: Usage | undefined
  let result: Assembled | undefined

  const report = (kind: AnomalyKind, message: string, index?: number): Anomaly => {
    const anomaly: Anomaly = index === undefined ? { kind, message } : { kind, message, index }
    anomalies.push(anomaly)
    return anomaly
  }

  const end = (index: number, block: ContentBlock) => {
    insertByIndex(ended, { index, block })
    endedIndexes.add(index)
  }

  const startBlock = (index: number, blockType: string): Open => {
    const kind = blockKind(blockType)
    const block: Open = kind === "opaque"
      ? { kind, index, blockType }
      : kind === "tool-call"
      ? { kind, index, id: undefined, name: undefined, args: "" }
      : { kind, index, text: "" }
    open.set(index, block)
    return block
  }

  const closeUnfinished = (why: string) => {
    for (const [index, block] of [...open].sort(([a], [b]) => a - b)) {
      open.delete(index)
      const built = build(block)
      if (built === undefined) {
        report("unclosed-block", `block ${index} (${(block as { blockType: string }).blockType}) was never ended ${why}; dropped`, index)
      } else {
        report("unclosed-block", `block ${index} (${block.kind}) was never ended ${why}; closed with its deltas`, index)
        end(index, built)
      }
    }
  }

  // The block a delta applies to, opening one implicitly when the index is new.
  const target = (index: number, kind: "text" | "reasoning" | "tool-call", chunkType: string) => {
    const current = open.get(index)
    if (current !== undefined) {
      if (current.kind === kind) return { block: current, anomaly: undefined }
      return {
        block: undefined,
        anomaly: report("delta-type-mismatch", `${chunkType} for block ${index} of type ${current.kind}; dropped`, index)
      }
    }
    if (endedIndexes.has(index)) {
      return { block: undefined, anomaly: report("delta-after-end", `${chunkType} after block ${index} ended; dropped`, index) }
    }
    const anomaly = report("delta-without-start", `${chunkType} for block ${index} before its block-start; opened it`, index)
    return { block: startBlock(index, kind), anomaly }
  }

  const push = (chunk: StreamChunk): ReadonlyArray<Anomaly> => {
    const before = anomalies.length
    pushOne(chunk)
    return anomalies.length === before ? none : anomalies.slice(before)
  }

  const pushOne = (chunk: StreamChunk): Anomaly | undefined => {
    // past the types (an adapter's or a middleware's bug): repaired by dropping it, never a throw
    const malformed = problem(chunk)
    if (malformed !== undefined) return report("malformed-chunk", `a value that is no stream chunk (${malformed}); ignored`)
    if (result !== undefined) {
      // `done()` already returned its result; this anomaly is only returned by `push`
      return report("chunk-after-finish", `${chunk.type} after the input was ended with done(); ignored`)
    }
    if (finishReason !== undefined) {
      return chunk.type === "finish"
        ? report("duplicate-finish", "a second finish; ignored")
        : report("chunk-after-finish", `${chunk.type} after finish; ignored`)
    }
    switch (chunk.type) {
      case "block-start": {
        if (open.has(chunk.index)) {
          return report("duplicate-block-start", `block-start for open block ${chunk.index}; ignored`, chunk.index)
        }
        startBlock(chunk.index, chunk.blockType)
        return endedIndexes.has(chunk.index)
          ? report("index-reused", `block-start for ended block ${chunk.index}; opened a new block there`, chunk.index)
          : undefined
      }
      case "text-delta":
      case "reasoning-delta": {
        const kind = chunk.type === "text-delta" ? "text" : "reasoning"
        const { anomaly, block } = target(chunk.index, kind, chunk.type)
        if (block !== undefined && block.kind === kind) block.text += chunk.delta
        return anomaly
      }
      case "tool-call-delta": {
        const found = target(chunk.index, "tool-call", chunk.type)
        const block = found.block
        if (block === undefined || block.kind !== "tool-call") return found.anomaly
        let anomaly = found.anomaly
        if (block.id === undefined) block.id = chunk.id
        else if (block.id !== chunk.id) {
          anomaly = report("tool-call-conflict", `tool call ${chunk.index} changed id to ${chunk.id}; kept ${block.id}`, chunk.index)
        }
        if (chunk.name !== undefined && chunk.name !== "") {
          if (block.name === undefined) block.name = chunk.name
          else if (block.name !== chunk.name) {
            anomaly = report(
              "tool-call-conflict",
              `tool call ${chunk.index} changed name to ${chunk.name}; kept ${block.name}`,
              chunk.index
            )
          }
        }
        block.args += chunk.argumentsDelta
        return anomaly
      }
      case "block-end": {
        const current = open.get(chunk.index)
        if (current === undefined) {
          if (endedIndexes.has(chunk.index)) {
            return report("duplicate-block-end", `block-end for ended block ${chunk.index}; ignored`, chunk.index)
          }
          end(chunk.index, chunk.block)
          return report("end-without-start", `block-end for block ${chunk.index} never started; accepted`, chunk.index)
        }
        open.delete(chunk.index)
        end(chunk.index, chunk.block)
        const built = build(current)
        const matches = built === undefined
          ? current.kind === "opaque" && current.blockType === chunk.block.type
          : agrees(built, chunk.block)
        return matches ? undefined : report(
          "block-end-mismatch",
          `block-end for block ${chunk.index} differs from what its start and deltas built; kept block-end's block`,
          chunk.index
        )
      }
      case "usage": {
        usage = chunk.usage
        return undefined
      }
      case "finish": {
        closeUnfinished("before finish")
        finishReason = chunk.reason
        return undefined
      }
    }
  }

  const snapshot = (): ReadonlyArray<ContentBlock> => {
    const all: Array<Ended> = ended.slice()
    for (const block of open.values()) {
      const built = build(block)
      if (built === undefined) continue
      insertByIndex(all, { index: block.index, block: built })
    }
    return all.map((e) => e.block)
  }

  const done = (): Assembled => {
    if (result !== undefined) return result
    if (finishReason === undefined) {
      closeUnfinished("before the input ended")
      report("missing-finish", "the input ended without finish")
    }
    result = {
      message: { role: "assistant", content: ended.map((e) => e.block) },
      finishReason,
      usage,
      anomalies: anomalies.slice()
    }
    return result
  }

  return { push, openBlocks: () => open.size, snapshot, finished: () => finishReason !== undefined, done }
}

/**
 * Assembles a complete chunk sequence.
 *
 * @since 0.1.0
 * @category constructors
 */
export const assemble = (chunks: Iterable<StreamChunk>): Assembled => {
  const assembler = make()
  for (const chunk of chunks) assembler.push(chunk)
  return assembler.done()
}

/**
 * Runs a chunk stream to its end and assembles it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const collect = <E, R>(chunks: Stream.Stream<StreamChunk, E, R>): Effect.Effect<Assembled, E, R> =>
  Effect.suspend(() => {
    const assembler = make()
    return Stream.runForEach(chunks, (chunk) => Effect.sync(() => assembler.push(chunk))).pipe(
      Effect.map(() => assembler.done())
    )
  })

/**
 * How {@link toChunks} cuts a string into deltas.
 *
 * @since 0.1.0
 * @category models
 */
export type Fragmenter = (text: string) => ReadonlyArray<string>

/**
 * Sends a string as one delta.
 *
 * @since 0.1.0
 * @category fragmenters
 */
export const whole: Fragmenter = (text) => [text]

/**
 * Cuts a string into pieces of at most `size` code points (never splitting one). A `size`
 * that is not a positive whole number is treated as 1; fractions are rounded down.
 *
 * @since 0.1.0
 * @category fragmenters
 */
export const pieces = (size: number): Fragmenter => {
  // a size that is not a positive whole number would lose text or overshoot: fall back to 1
  const n = Number.isFinite(size) && size >= 1 ? Math.floor(size) : 1
  return (text) => {
    const chars = Array.from(text)
    if (chars.length === 0) return [""]
    const out: Array<string> = []
    for (let i = 0; i < chars.length; i += n) out.push(chars.slice(i, i + n).join(""))
    return out
  }
}

/**
 * The chunk sequence of a response: each block of `content` as `block-start`, its deltas (cut
 * by `fragment`) and `block-end`, then `usage` (when given), then `finish`. It is what a
 * well-behaved adapter emits, so `assemble(toChunks(m)).message` equals `m` for an assistant
 * message `m`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toChunks = (
  content: ReadonlyArray<ContentBlock>,
  options: {
    readonly usage?: Usage
    readonly finish?: FinishReason
    readonly fragment?: Fragmenter
  } = {}
): Array<StreamChunk> => {
  const fragment = options.fragment ?? whole
  const chunks: Array<StreamChunk> = []
  content.forEach((block, index) => {
    chunks.push({ type: "block-start", index, blockType: block.type })
    switch (block.type) {
      case "text":
        for (const delta of fragment(block.text)) chunks.push({ type: "text-delta", index, delta })
        break
      case "reasoning":
        for (const delta of fragment(block.text)) chunks.push({ type: "reasoning-delta", index, delta })
        break
      case "tool-call":
        fragment(block.arguments).forEach((argumentsDelta, i) =>
          chunks.push(
            i === 0
              ? { type: "tool-call-delta", index, id: block.id, name: block.name, argumentsDelta }
              : { type: "tool-call-delta", index, id: block.id, argumentsDelta }
          )
        )
        break
      default:
        break
    }
    chunks.push({ type: "block-end", index, block })
  })
  if (options.usage !== undefined) chunks.push({ type: "usage", usage: options.usage })
  chunks.push({ type: "finish", reason: options.finish ?? defaultFinish(content) })
  return chunks
}

const defaultFinish = (content: ReadonlyArray<ContentBlock>): FinishReason =>
  content.some((b) => b.type === "tool-call") ? { kind: "tool-calls" } : { kind: "stop" }
