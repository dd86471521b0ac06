/**
 * Translation of Anthropic's stream events into dsh's chunk protocol.
 *
 * Anthropic streams one content block at a time, each opened by `content_block_start`, grown
 * by `content_block_delta`s and closed by `content_block_stop`, all naming the block by its
 * `index`. Each block becomes one dsh block (numbered in the order they start):
 *
 * | Anthropic block | deltas | dsh block |
 * |---|---|---|
 * | `text` | `text_delta` (`citations_delta` is skipped) | `text` |
 * | `thinking` | `thinking_delta`, `signature_delta` | `reasoning` with `signature` (the signature's pieces joined; none when it stayed empty) |
 * | `redacted_thinking` | none (its `data` comes whole) | `custom` `anthropic:redacted-thinking` (`Blocks.RedactedThinking`) |
 * | `tool_use` | `input_json_delta` | `tool-call`: its id and name in the first `tool-call-delta`, at once; `arguments` the `partial_json` pieces joined, untouched — a call whose input never streamed gets the `input` of its start (`{}`) as JSON |
 * | any other (`server_tool_use`, `web_search_tool_result`, …) | `input_json_delta` joins its `input` | `custom` `anthropic:server-block` (`Blocks.ServerBlock`), the block as sent |
 *
 * `block-end` carries the block as an `@dsh/llm` Assembler built it from the block's own
 * deltas (plus what deltas cannot carry: a signature), so it agrees with what consumers rebuild.
 * Delta types this package does not know are skipped, as are unknown event types and `ping`:
 * the API adds both over time.
 *
 * `message_start` and `message_delta` carry usage; the last value of each count wins (they are
 * cumulative). Anthropic's counts are already disjoint: `inputTokens` = `input_tokens` (which
 * excludes cached input), `cacheReadTokens` = `cache_read_input_tokens`, `cacheWriteTokens` =
 * `cache_creation_input_tokens`, `outputTokens` = `output_tokens` (thinking included; the API
 * does not report it apart, so `reasoningTokens` stays absent). `message_delta` carries the
 * stop reason; `message_stop` emits `usage` and `finish`, in that order, and ends the answer.
 *
 * Stop reasons: `end_turn` and `stop_sequence` → `stop`, `tool_use` → `tool-calls`,
 * `max_tokens` and `model_context_window_exceeded` → `length`, `refusal` → `content-filter`;
 * any other (`pause_turn`: a server tool paused a long turn, send the answer back to continue
 * it) → `other`, named by the API's word (cut to 100 characters). `raw` keeps the API's word.
 *
 * What breaks the protocol fails with `LlmProtocolError`: content before `message_start` or a
 * second one, a block started twice, a delta or stop for a block that is not open, a delta of
 * another block's kind (`text_delta` into a `tool_use`), a `tool_use` without id or name, a
 * `redacted_thinking` without data, a server block whose streamed input is not JSON,
 * `message_stop` with a block still open or without a stop reason. An `error` event fails with
 * the `LlmError` its type means (`Failure.fromStreamError`).
 *
 * @since 0.1.0
 */
import { Assembler, type Content, type FinishReason, Ids, LlmError, type StreamChunk as Chunk, type Usage } from "@dsh/llm"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { RedactedThinking, ServerBlock } from "./Blocks.ts"
import { excerpt, fromStreamError, quote } from "./Failure.ts"
import * as Wire from "./Wire.ts"

/**
 * A translator for one response. It appends what each event means to `out` and returns a
 * failure instead of throwing. Not shared between fibers.
 *
 * @since 0.1.0
 * @category models
 */
export interface Translator {
  /** Translates one event's parsed `data` (an object with a `type`). */
  readonly event: (json: Readonly<Record<string, unknown>>, out: Array<Chunk.StreamChunk>) => LlmError.LlmError | undefined
  /** Whether `message_stop` was seen: the answer is complete. */
  readonly finished: () => boolean
  /** Whether a stop reason was seen. */
  readonly stopped: () => boolean
}

/** The longest provider word a finish reason keeps (a reason is a word, not a payload). */
const maxReason = 100

/**
 * Maps a stop reason.
 *
 * @since 0.1.0
 * @category mapping
 */
export const finishReason = (raw: string): FinishReason.FinishReason => {
  switch (raw) {
    case "end_turn":
    case "stop_sequence":
      return { kind: "stop", raw }
    case "tool_use":
      return { kind: "tool-calls", raw }
    case "max_tokens":
    case "model_context_window_exceeded":
      return { kind: "length", raw }
    case "refusal":
      return { kind: "content-filter", raw }
    default: {
      const word = excerpt(raw, maxReason)
      return { kind: "other", name: word, raw: word }
    }
  }
}

/**
 * Usage as the events report it, count by count: a count reported later replaces the earlier
 * one (the API reports totals, not increments).
 *
 * @since 0.1.0
 * @category mapping
 */
export interface UsageCounts {
  input?: number
  output?: number
  cacheRead?: number
  cacheWrite?: number
}

/**
 * Takes the counts a usage object reports into `counts`.
 *
 * @since 0.1.0
 * @category mapping
 */
export const mergeUsage = (counts: UsageCounts, usage: Wire.Usage): void => {
  if (usage.input_tokens !== undefined && usage.input_tokens !== null) counts.input = usage.input_tokens
  if (usage.output_tokens !== undefined && usage.output_tokens !== null) counts.output = usage.output_tokens
  if (usage.cache_read_input_tokens !== undefined && usage.cache_read_input_tokens !== null) {
    counts.cacheRead = usage.cache_read_input_tokens
  }
  if (usage.cache_creation_input_tokens !== undefined && usage.cache_creation_input_tokens !== null) {
    counts.cacheWrite = usage.cache_creation_input_tokens
  }
}

/**
 * dsh's disjoint usage from the counts reported; `undefined` when none was.
 *
 * @since 0.1.0
 * @category mapping
 */
export const usage = (counts: UsageCounts): Usage.Usage | undefined =>
  counts.input === undefined && counts.output === undefined && counts.cacheRead === undefined &&
    counts.cacheWrite === undefined
    ? undefined
    : {
      inputTokens: counts.input ?? 0,
      outputTokens: counts.output ?? 0,
      cacheReadTokens: counts.cacheRead ?? 0,
      cacheWriteTokens: counts.cacheWrite ?? 0
    }

/**
 * An open block: its dsh number, the wire index that names it, and what it is building. The
 * text-like kinds build through an Assembler of their own (one per block: a snapshot of a
 * whole answer copies every block, and taking one per block-end made long answers quadratic).
 */
type Open =
  | { readonly kind: "text"; readonly block: number; readonly assembler: Assembler.Assembler }
  | { readonly kind: "thinking"; readonly block: number; readonly assembler: Assembler.Assembler; signature: string }
  | { readonly kind: "redacted"; readonly block: number; readonly data: string }
  | {
    readonly kind: "tool"
    readonly block: number
    readonly assembler: Assembler.Assembler
    readonly id: Ids.CallId
    readonly start: unknown
    streamed: boolean
  }
  | { readonly kind: "server"; readonly block: number; readonly json: { readonly [key: string]: Schema.Json }; input: string }

const decodeMessageStart = Schema.decodeUnknownResult(Wire.MessageStart)
const decodeMessageDelta = Schema.decodeUnknownResult(Wire.MessageDelta)
const decodeBlockStart = Schema.decodeUnknownResult(Wire.BlockStart)

const kindName = { text: "text", thinking: "thinking", redacted: "redacted_thinking", tool: "tool_use", server: "server" }

/**
 * Creates a translator. `provider` names the server in error messages.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (provider = "Anthropic"): Translator => {
  let started = false
  let finished = false
  let nextBlock = 0
  const open = new Map<number, Open>()
  const ended = new Set<number>()
  const counts: UsageCounts = {}
  let stop: FinishReason.FinishReason | undefined

  const protocol = (message: string) => new LlmError.LlmProtocolError({ message: `${provider} stream: ${message}` })
  const invalid = (what: string, why: string, data: unknown) =>
    protocol(`${what} is malformed (${excerpt(why.replaceAll(/\s*\n\s*/g, " "), 300)}): ${quote(data)}`)

  const emit = (assembler: Assembler.Assembler, chunk: Chunk.StreamChunk, out: Array<Chunk.StreamChunk>) => {
    assembler.push(chunk)
    out.push(chunk)
  }

  // the only block its assembler holds, as built from its deltas
  const built = (assembler: Assembler.Assembler): Content.ContentBlock => assembler.snapshot()[0]!

  const startBlock = (blockType: string, out: Array<Chunk.StreamChunk>) => {
    const block = nextBlock++
    const chunk: Chunk.StreamChunk = { type: "block-start", index: block, blockType }
    out.push(chunk)
    return { block, chunk }
  }

  const withAssembler = (blockType: string, out: Array<Chunk.StreamChunk>) => {
    const { block, chunk } = startBlock(blockType, out)
    const assembler = Assembler.make()
    assembler.push(chunk)
    return { block, assembler }
  }

  const messageStart = (json: unknown): LlmError.LlmError | undefined => {
    if (started) return protocol("a second message_start")
    const decoded = decodeMessageStart(json)
    if (decoded._tag === "Failure") return invalid("message_start", decoded.failure.message, json)
    started = true
    const reported = decoded.success.message.usage
    if (reported !== undefined && reported !== null) mergeUsage(counts, reported)
    return undefined
  }

  const blockStart = (json: Readonly<Record<string, unknown>>, out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    const decoded = decodeBlockStart(json)
    if (decoded._tag === "Failure") return invalid("a content_block_start", decoded.failure.message, json)
    const { content_block: start, index } = decoded.success
    if (open.has(index) || ended.has(index)) return protocol(`block ${index} was started twice`)
    switch (start.type) {
      case "text": {
        const { assembler, block } = withAssembler("text", out)
        open.set(index, { kind: "text", block, assembler })
        if (start.text !== undefined && start.text !== "") emit(assembler, { type: "text-delta", index: block, delta: start.text }, out)
        return undefined
      }
      case "thinking": {
        const { assembler, block } = withAssembler("reasoning", out)
        open.set(index, { kind: "thinking", block, assembler, signature: start.signature ?? "" })
        if (start.thinking !== undefined && start.thinking !== "") {
          emit(assembler, { type: "reasoning-delta", index: block, delta: start.thinking }, out)
        }
        return undefined
      }
      case "redacted_thinking": {
        if (start.data === undefined) return protocol(`redacted_thinking block ${index} has no data`)
        const { block } = startBlock("custom", out)
        open.set(index, { kind: "redacted", block, data: start.data })
        return undefined
      }
      case "tool_use": {
        if (start.id === undefined || start.id === "") return protocol(`tool_use block ${index} has no id`)
        if (start.name === undefined || start.name === "") return protocol(`tool_use block ${index} (${start.id}) has no name`)
        const { assembler, block } = withAssembler("tool-call", out)
        const id = Ids.callId(start.id)
        open.set(index, { kind: "tool", block, assembler, id, start: start.input, streamed: false })
        // the name comes whole at the start: announced at once, so a UI can show the call
        emit(assembler, { type: "tool-call-delta", index: block, id, name: start.name, argumentsDelta: "" }, out)
        return undefined
      }
      default: {
        const { block } = startBlock("custom", out)
        // parsed JSON, kept with every field the API sent (the Schema above only checked some)
        const raw = json["content_block"] as { readonly [key: string]: Schema.Json }
        open.set(index, { kind: "server", block, json: raw, input: "" })
        return undefined
      }
    }
  }

  const notOpen = (index: number, what: string) =>
    protocol(ended.has(index) ? `${what} for block ${index} after its content_block_stop` : `${what} for block ${index}, which was never started`)

  // Anthropic streams one block at a time: the block of the last delta is almost always the
  // block of the next one.
  let recent: { index: number; block: Open } | undefined
  const openBlock = (index: number): Open | undefined => {
    if (recent !== undefined && recent.index === index) return recent.block
    const block = open.get(index)
    if (block !== undefined) recent = { index, block }
    return block
  }

  const mismatch = (type: string, index: number, current: Open) =>
    protocol(`a ${type} for block ${index}, a ${kindName[current.kind]} block`)

  const blockDelta = (json: Readonly<Record<string, unknown>>, out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    const index = Wire.readIndex(json)
    if (typeof index === "string") return invalid("a content_block_delta", index, json)
    const delta = Wire.readDelta(json)
    if (typeof delta === "string") return invalid("a content_block_delta", delta, json)
    const current = openBlock(index)
    if (current === undefined) return notOpen(index, `a ${delta === null ? String((json["delta"] as { type: unknown }).type) : delta.type}`)
    if (delta === null) return undefined
    switch (delta.type) {
      case "text_delta":
        if (current.kind !== "text") return mismatch(delta.type, index, current)
        if (delta.text !== "") emit(current.assembler, { type: "text-delta", index: current.block, delta: delta.text }, out)
        return undefined
      case "thinking_delta":
        if (current.kind !== "thinking") return mismatch(delta.type, index, current)
        if (delta.thinking !== "") {
          emit(current.assembler, { type: "reasoning-delta", index: current.block, delta: delta.thinking }, out)
        }
        return undefined
      case "signature_delta":
        if (current.kind !== "thinking") return mismatch(delta.type, index, current)
        current.signature += delta.signature
        return undefined
      case "input_json_delta":
        if (current.kind === "server") {
          current.input += delta.partial_json
        } else if (current.kind !== "tool") {
          return mismatch(delta.type, index, current)
        } else if (delta.partial_json !== "") {
          current.streamed = true
          emit(current.assembler, {
            type: "tool-call-delta",
            index: current.block,
            id: current.id,
            argumentsDelta: delta.partial_json
          }, out)
        }
        return undefined
    }
  }

  const close = (index: number, current: Open, out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    switch (current.kind) {
      case "text":
        out.push({ type: "block-end", index: current.block, block: built(current.assembler) })
        return undefined
      case "thinking": {
        const block = built(current.assembler)
        out.push({
          type: "block-end",
          index: current.block,
          block: current.signature === "" ? block : { ...block, signature: current.signature } as Content.ReasoningBlock
        })
        return undefined
      }
      case "redacted":
        out.push({ type: "block-end", index: current.block, block: RedactedThinking.make({ data: current.data }) })
        return undefined
      case "tool": {
        if (!current.streamed) {
          // no input streamed: the call's input is what its start said (`{}`)
          const input = Predicate.isObject(current.start) ? JSON.stringify(current.start) : "{}"
          emit(current.assembler, { type: "tool-call-delta", index: current.block, id: current.id, argumentsDelta: input }, out)
        }
        out.push({ type: "block-end", index: current.block, block: built(current.assembler) })
        return undefined
      }
      case "server": {
        let block = current.json
        if (current.input !== "") {
          let input: Schema.Json
          try {
            input = JSON.parse(current.input)
          } catch {
            return protocol(`the input of block ${index} (${excerpt(String(current.json["type"]), 100)}) is not JSON: ${
              quote(current.input)
            }`)
          }
          block = { ...block, input }
        }
        out.push({ type: "block-end", index: current.block, block: { type: "custom", kind: ServerBlock.kind, data: { block } } })
        return undefined
      }
    }
  }

  const blockStop = (json: Readonly<Record<string, unknown>>, out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    const index = Wire.readIndex(json)
    if (typeof index === "string") return invalid("a content_block_stop", index, json)
    const current = openBlock(index)
    if (current === undefined) return notOpen(index, "a content_block_stop")
    open.delete(index)
    recent = undefined
    ended.add(index)
    return close(index, current, out)
  }

  const messageDelta = (json: unknown): LlmError.LlmError | undefined => {
    const decoded = decodeMessageDelta(json)
    if (decoded._tag === "Failure") return invalid("a message_delta", decoded.failure.message, json)
    const reason = decoded.success.delta?.stop_reason
    if (reason !== undefined && reason !== null && reason !== "") stop = finishReason(reason)
    const reported = decoded.success.usage
    if (reported !== undefined && reported !== null) mergeUsage(counts, reported)
    return undefined
  }

  const messageStop = (out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    if (open.size > 0) {
      const indexes = [...open.keys()].sort((a, b) => a - b).join(", ")
      return protocol(`message_stop arrived with block ${indexes} still open`)
    }
    if (stop === undefined) return protocol("message_stop arrived before any stop_reason")
    finished = true
    const reported = usage(counts)
    if (reported !== undefined) out.push({ type: "usage", usage: reported })
    out.push({ type: "finish", reason: stop })
    return undefined
  }

  const event = (json: Readonly<Record<string, unknown>>, out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    const type = json["type"]
    // the hot path first: one content_block_delta per few characters of the answer
    if (type === "content_block_delta") return started ? blockDelta(json, out) : protocol("a content_block_delta before message_start")
    switch (type) {
      case "ping":
        return undefined
      case "message_start":
        return messageStart(json)
      case "content_block_start":
        return started ? blockStart(json, out) : protocol("a content_block_start before message_start")
      case "content_block_stop":
        return started ? blockStop(json, out) : protocol("a content_block_stop before message_start")
      case "message_delta":
        return started ? messageDelta(json) : protocol("a message_delta before message_start")
      case "message_stop":
        return started ? messageStop(out) : protocol("a message_stop before message_start")
      case "error":
        return fromStreamError(provider, json["error"])
      default:
        // event types added to the API later say nothing this adapter can use
        return typeof type === "string"
          ? undefined
          : protocol(`an event without a type: ${quote(json)}`)
    }
  }

  return { event, finished: () => finished, stopped: () => stop !== undefined }
}
