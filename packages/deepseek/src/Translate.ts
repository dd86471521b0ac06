/**
 * Translation of DeepSeek's stream chunks (OpenAI-compatible deltas) into dsh's chunk protocol.
 *
 * - `reasoning_content` and `content` deltas grow a reasoning or text block; a delta of the
 *   other kind (or a tool call) closes the open one and starts the next block. Empty strings
 *   (the first chunk's `content: ""`) add nothing.
 * - Tool calls are keyed by their wire `index`; several may be open at once, interleaved. A
 *   call's block starts when its index first appears. Its argument fragments are held back
 *   until both its id and its name are known, so the first `tool-call-delta` of a call carries
 *   id, name and everything buffered (consumers show "calling bash…" right away, and a name
 *   arriving after the first argument fragment costs nothing). A call that never got
 *   arguments is announced with `argumentsDelta: ""` when it closes.
 * - `finish_reason` closes every open block (`block-end` carries the block as the `@dsh/llm`
 *   Assembler built it from the deltas: one implementation of accumulation) and is kept:
 *   `usage` may still follow, in a usage-only chunk. `[DONE]` then emits `usage` and `finish`,
 *   in that order, as the contract wants.
 * - Usage: `inputTokens` = cache misses (`prompt_tokens` − hits), `cacheReadTokens` = hits
 *   (`prompt_cache_hit_tokens`, or `prompt_tokens_details.cached_tokens`), `outputTokens` =
 *   `completion_tokens`, `reasoningTokens` from `completion_tokens_details`.
 * - Finish reasons: `stop`, `tool_calls` → `tool-calls`, `length`, `content_filter` →
 *   `content-filter`; any other (DeepSeek's `insufficient_system_resource`) → `other`, named by
 *   the provider's word. `raw` keeps the provider's word in every case.
 * - Only choice 0 is read (the adapter never asks for more).
 *
 * What breaks the protocol fails with `LlmProtocolError`: a delta after `finish_reason`,
 * `[DONE]` without a `finish_reason`, a tool call without an id or a name when it closes. An
 * `error` object inside the stream fails with `LlmServerError`.
 *
 * @since 0.1.0
 */
import { Assembler, type Content, type FinishReason, Ids, LlmError, type StreamChunk as Chunk, type Usage } from "@dsh/llm"
import type * as Wire from "./Wire.ts"

/**
 * A translator for one response. It appends what each wire chunk means to `out` and returns a
 * failure instead of throwing. Not shared between fibers.
 *
 * @since 0.1.0
 * @category models
 */
export interface Translator {
  /** Translates one decoded `data:` payload. */
  readonly chunk: (chunk: Wire.ChatChunk, out: Array<Chunk.StreamChunk>) => LlmError.LlmError | undefined
  /** The stream's `[DONE]`: emits `usage` (when reported) and `finish`. */
  readonly done: (out: Array<Chunk.StreamChunk>) => LlmError.LlmError | undefined
  /** Whether a `finish_reason` was seen. */
  readonly finished: () => boolean
}

/**
 * Maps a provider's finish reason.
 *
 * @since 0.1.0
 * @category mapping
 */
export const finishReason = (raw: string): FinishReason.FinishReason => {
  switch (raw) {
    case "stop":
      return { kind: "stop", raw }
    case "tool_calls":
      return { kind: "tool-calls", raw }
    case "length":
      return { kind: "length", raw }
    case "content_filter":
      return { kind: "content-filter", raw }
    default:
      return { kind: "other", name: raw, raw }
  }
}

/**
 * Maps the provider's token counts to dsh's disjoint usage.
 *
 * @since 0.1.0
 * @category mapping
 */
export const usage = (u: Wire.Usage): Usage.Usage => {
  const hits = u.prompt_cache_hit_tokens ?? u.prompt_tokens_details?.cached_tokens ?? 0
  const misses = u.prompt_cache_miss_tokens ?? Math.max(0, u.prompt_tokens - hits)
  const reasoning = u.completion_tokens_details?.reasoning_tokens
  const mapped: Usage.Usage = {
    inputTokens: misses,
    outputTokens: u.completion_tokens,
    cacheReadTokens: hits,
    cacheWriteTokens: 0
  }
  return reasoning === undefined || reasoning === null ? mapped : { ...mapped, reasoningTokens: reasoning }
}

interface Call {
  readonly block: number
  id: string | undefined
  name: string | undefined
  /** Argument fragments held until id and name are known. */
  pending: string
  announced: boolean
}

/**
 * Creates a translator. `provider` names the server in error messages.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (provider = "DeepSeek"): Translator => {
  const assembler = Assembler.make()
  let nextBlock = 0
  // the open text or reasoning block
  let sequential: { readonly kind: "text" | "reasoning"; readonly block: number } | undefined
  // open tool calls by wire index
  const calls = new Map<number, Call>()
  let finish: FinishReason.FinishReason | undefined
  let reported: Usage.Usage | undefined

  const protocol = (message: string) => new LlmError.LlmProtocolError({ message: `${provider} stream: ${message}` })

  const emit = (chunk: Chunk.StreamChunk, out: Array<Chunk.StreamChunk>) => {
    assembler.push(chunk)
    out.push(chunk)
  }

  // The block as the assembler built it from its deltas. Blocks are numbered 0, 1, 2… in
  // order and every number is either ended or open, so the snapshot's position is the index.
  const built = (block: number): Content.ContentBlock => assembler.snapshot()[block]!

  const end = (block: number, out: Array<Chunk.StreamChunk>) => emit({ type: "block-end", index: block, block: built(block) }, out)

  const closeSequential = (out: Array<Chunk.StreamChunk>) => {
    if (sequential === undefined) return
    end(sequential.block, out)
    sequential = undefined
  }

  const grow = (kind: "text" | "reasoning", delta: string, out: Array<Chunk.StreamChunk>) => {
    if (sequential?.kind !== kind) {
      closeSequential(out)
      sequential = { kind, block: nextBlock++ }
      emit({ type: "block-start", index: sequential.block, blockType: kind }, out)
    }
    emit(
      kind === "text"
        ? { type: "text-delta", index: sequential.block, delta }
        : { type: "reasoning-delta", index: sequential.block, delta },
      out
    )
  }

  const announce = (call: Call, argumentsDelta: string, out: Array<Chunk.StreamChunk>) => {
    if (call.announced) {
      if (argumentsDelta !== "") {
        emit({ type: "tool-call-delta", index: call.block, id: Ids.callId(call.id!), argumentsDelta }, out)
      }
      return
    }
    if (call.id === undefined || call.name === undefined) {
      call.pending += argumentsDelta
      return
    }
    call.announced = true
    const all = call.pending + argumentsDelta
    call.pending = ""
    emit({ type: "tool-call-delta", index: call.block, id: Ids.callId(call.id), name: call.name, argumentsDelta: all }, out)
  }

  const toolCall = (delta: Wire.ToolCallDelta, out: Array<Chunk.StreamChunk>) => {
    let call = calls.get(delta.index)
    if (call === undefined) {
      closeSequential(out)
      call = { block: nextBlock++, id: undefined, name: undefined, pending: "", announced: false }
      calls.set(delta.index, call)
      emit({ type: "block-start", index: call.block, blockType: "tool-call" }, out)
    }
    // The first id and name win: some servers repeat them in every fragment.
    if (call.id === undefined && delta.id !== undefined && delta.id !== null && delta.id !== "") call.id = delta.id
    const name = delta.function?.name
    if (call.name === undefined && name !== undefined && name !== null && name !== "") call.name = name
    announce(call, delta.function?.arguments ?? "", out)
  }

  const closeAll = (out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    const open: Array<{ readonly block: number; readonly close: () => LlmError.LlmError | undefined }> = []
    if (sequential !== undefined) {
      const block = sequential.block
      open.push({ block, close: () => void end(block, out) })
      sequential = undefined
    }
    for (const [index, call] of calls) {
      open.push({
        block: call.block,
        close: () => {
          if (call.id === undefined) return protocol(`tool call ${index} never got an id`)
          if (call.name === undefined) return protocol(`tool call ${index} (${call.id}) never got a name`)
          if (!call.announced) announce(call, "", out)
          end(call.block, out)
          return undefined
        }
      })
    }
    calls.clear()
    open.sort((a, b) => a.block - b.block)
    for (const { close } of open) {
      const failure = close()
      if (failure !== undefined) return failure
    }
    return undefined
  }

  const chunk = (wire: Wire.ChatChunk, out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    if (wire.error !== undefined && wire.error !== null) {
      return new LlmError.LlmServerError({ message: `${provider} reported an error in the stream: ${wire.error.message}` })
    }
    const choice = wire.choices?.find((c) => c.index === 0)
    if (choice !== undefined) {
      const delta = choice.delta
      if (delta !== undefined && delta !== null) {
        const reasoning = delta.reasoning_content
        const content = delta.content
        const toolCalls = delta.tool_calls
        const grows = (reasoning !== undefined && reasoning !== null && reasoning !== "") ||
          (content !== undefined && content !== null && content !== "") ||
          (toolCalls !== undefined && toolCalls !== null && toolCalls.length > 0)
        if (grows) {
          if (finish !== undefined) return protocol("a delta arrived after finish_reason")
          if (reasoning !== undefined && reasoning !== null && reasoning !== "") grow("reasoning", reasoning, out)
          if (content !== undefined && content !== null && content !== "") grow("text", content, out)
          if (toolCalls !== undefined && toolCalls !== null) for (const call of toolCalls) toolCall(call, out)
        }
      }
      const raw = choice.finish_reason
      if (raw !== undefined && raw !== null && finish === undefined) {
        const failure = closeAll(out)
        if (failure !== undefined) return failure
        finish = finishReason(raw)
      }
    }
    if (wire.usage !== undefined && wire.usage !== null) reported = usage(wire.usage)
    return undefined
  }

  const done = (out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    if (finish === undefined) return protocol("[DONE] arrived before any finish_reason")
    if (reported !== undefined) emit({ type: "usage", usage: reported }, out)
    emit({ type: "finish", reason: finish }, out)
    return undefined
  }

  return { chunk, done, finished: () => finish !== undefined }
}
