/**
 * Translation of OpenAI-compatible stream chunks (deltas) into dsh's chunk protocol, with the
 * quirks of a server profile (`Profile.Quirks`: where reasoning arrives, how cache hits are
 * counted, how the end of a stream is judged).
 *
 * - reasoning deltas (`reasoning_content` or `reasoning`, the profile's field read first) and
 *   `content` deltas grow a reasoning or text block; a delta of the other kind (or a tool call)
 *   closes the open one and starts the next block. Empty strings (the first chunk's
 *   `content: ""`) add nothing.
 * - Tool calls are keyed by their wire `index`; several may be open at once, interleaved. A
 *   call's block starts when its index first appears, even with an id an earlier call has
 *   (two calls, not one: the loop gives the repeat a fresh id). Where servers get the index
 *   wrong, the id decides: a different id at an index whose call has one starts another call
 *   (servers that give every call index 0), and a fragment without an index continues the
 *   call its id names, else the latest call. A call's id is the first one a fragment carries (repeats
 *   change nothing); its name is joined from the pieces its fragments carry
 *   ({@link joinName}), like its arguments. The call is announced by one `tool-call-delta`
 *   carrying id, the whole name and every argument fragment so far, as soon as it has an id,
 *   a name and the first argument text (a name arriving after the first argument fragment
 *   costs nothing); later fragments stream as they come. A call that never got arguments is
 *   announced with `argumentsDelta: ""` when it closes.
 * - `finish_reason` (`""` counts as none, as `null` does) closes every open block
 *   (`block-end` carries the block as an `@dsh/llm` Assembler built it from the block's
 *   deltas: one implementation of accumulation) and is kept: `usage` may still follow, in a
 *   usage-only chunk. `[DONE]` then emits `usage` and `finish`, in that order, as the
 *   contract wants. With a lenient end of stream, `[DONE]` without any `finish_reason` ends
 *   the answer as `tool-calls` (it called tools) or `stop`, `raw` absent.
 * - Usage: `inputTokens` = cache misses (`prompt_tokens` − hits − writes), `cacheReadTokens` =
 *   hits (`prompt_cache_hit_tokens` or `prompt_tokens_details.cached_tokens`, the profile's
 *   spelling first), `cacheWriteTokens` = `prompt_tokens_details.cache_write_tokens`
 *   (OpenRouter), `outputTokens` = `completion_tokens`, `reasoningTokens` from
 *   `completion_tokens_details`. A count the server leaves out is 0; a usage object without
 *   any count is no report.
 * - Finish reasons: `stop`, `tool_calls` → `tool-calls`, `length`, `content_filter` →
 *   `content-filter`, `error` → `error` with the catalog code `LLM_SERVER`; any other
 *   (DeepSeek's `insufficient_system_resource`) → `other`, named by the provider's word (cut
 *   to 100 characters). `raw` keeps the provider's word in every case.
 * - Only choice 0 is read (the adapter never asks for more); a first choice without an
 *   `index` is choice 0. A chunk that is an error object (`"object": "error"`, vLLM) fails
 *   like an `error` field.
 *
 * What breaks the protocol fails with `LlmProtocolError`: a delta after `finish_reason`,
 * `[DONE]` without a `finish_reason` (with a strict end of stream), a tool call without an id or a name when it closes, a
 * name that changes after the call's arguments began streaming under it. An `error` inside
 * the stream fails with the `LlmError` its code means (`Failure.fromStreamError`:
 * `LlmServerError` unless the code says throttling, auth or an invalid request).
 *
 * @since 0.1.0
 */
import { Assembler, type FinishReason, Ids, LlmError, type StreamChunk as Chunk, type Usage } from "@dsh/llm"
import { excerpt, fromStreamError } from "./Failure.ts"
import * as Profile from "./Profile.ts"
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
  /**
   * The body ended without `[DONE]`: with a lenient end of stream and a `finish_reason` seen,
   * emits what `done` would and returns `true`; else emits nothing and returns `false`.
   */
  readonly endWithoutDone: (out: Array<Chunk.StreamChunk>) => boolean
  /** Whether a `finish_reason` was seen. */
  readonly finished: () => boolean
}

/** The longest provider word a finish reason keeps (a reason is a word, not a payload). */
const maxReason = 100

/**
 * Maps a provider's finish reason. `error` (which OpenAI-compatible servers send when the
 * answer failed on their side) is a finish of kind `error` with the catalog code
 * `LLM_SERVER`; a word outside the known set is an `other` named by it, cut to 100
 * characters.
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
    case "error":
      return { kind: "error", code: "LLM_SERVER", message: "the server ended the answer with finish_reason \"error\"", raw }
    default: {
      const word = excerpt(raw, maxReason)
      return { kind: "other", name: word, raw: word }
    }
  }
}

/**
 * Maps the provider's token counts to dsh's disjoint usage. `cacheHits` says which spelling of
 * the cache hits is read first (the other is read when it is absent).
 *
 * @since 0.1.0
 * @category mapping
 */
export const usage = (u: Wire.Usage, cacheHits: Profile.ResolvedQuirks["cacheHits"] = Profile.defaults.cacheHits): Usage.Usage => {
  const prompt = u.prompt_tokens ?? 0
  const details = u.prompt_tokens_details
  const deepseek = u.prompt_cache_hit_tokens ?? undefined
  const openai = details?.cached_tokens ?? undefined
  const hits = (cacheHits === "prompt_cache_hit_tokens" ? deepseek ?? openai : openai ?? deepseek) ?? 0
  const writes = details?.cache_write_tokens ?? 0
  // DeepSeek counts its misses itself; elsewhere they are what the prompt held besides the cache
  const misses = deepseek !== undefined && (cacheHits === "prompt_cache_hit_tokens" || openai === undefined)
    ? u.prompt_cache_miss_tokens ?? Math.max(0, prompt - hits)
    : Math.max(0, prompt - hits - writes)
  const reasoning = u.completion_tokens_details?.reasoning_tokens
  const mapped: Usage.Usage = {
    inputTokens: misses,
    outputTokens: u.completion_tokens ?? 0,
    cacheReadTokens: hits,
    cacheWriteTokens: writes
  }
  return reasoning === undefined || reasoning === null ? mapped : { ...mapped, reasoningTokens: reasoning }
}

/** Whether a usage object holds any count: `"usage": {}` reports nothing (an earlier report stands). */
const countsSomething = (u: Wire.Usage): boolean =>
  u.prompt_tokens != null || u.completion_tokens != null || u.prompt_cache_hit_tokens != null ||
  u.prompt_cache_miss_tokens != null || u.prompt_tokens_details?.cached_tokens != null ||
  u.prompt_tokens_details?.cache_write_tokens != null || u.completion_tokens_details?.reasoning_tokens != null

/**
 * A name piece joined to the name so far. Servers send a tool call's name whole in its first
 * fragment (the usual case), in pieces to concatenate (`"read_"`, `"file"`), whole again in
 * every fragment, or as a growing prefix (`"read"`, `"read_file"`): a piece that equals or
 * extends the name so far is a resend and replaces it, any other piece continues it.
 *
 * @since 0.1.0
 * @category mapping
 */
export const joinName = (name: string, piece: string): string =>
  piece.startsWith(name) ? piece : name + piece

/**
 * A block being built: its number, and the Assembler that builds it from its own deltas, so
 * that `block-end` carries what the one implementation of accumulation made of them. One
 * Assembler per block, not one for the answer: a snapshot of the whole answer copies every
 * block so far, and taking one at each block-end made an answer of many blocks quadratic (tens
 * of seconds of synchronous work for 20 000 blocks, which no timeout can cut short).
 */
interface Building {
  readonly block: number
  readonly assembler: Assembler.Assembler
}

interface Call extends Building {
  /** How errors name the call: its wire index. */
  readonly label: string
  id: string | undefined
  /** The name joined from its pieces so far; `""` until one arrives. */
  name: string
  /** Argument fragments held until the call is announced. */
  pending: string
  announced: boolean
}

// A wire string that says something: servers write `null` or `""` for "nothing here".
const present = (value: string | null | undefined): string | undefined =>
  value === undefined || value === null || value === "" ? undefined : value

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Names the server in error messages (default `"OpenAI-compatible server"`). */
  readonly provider?: string
  /** The server's quirks (the defaults of `Profile` when omitted). */
  readonly quirks?: Profile.Quirks | Profile.ResolvedQuirks
}

// The reasoning text of a delta: the profile's field first, the other when it says nothing.
// Only a string is reasoning (`reasoning` is too generic a name to trust blindly).
const reasoningOf = (delta: Wire.Delta, field: Profile.ResolvedQuirks["reasoningField"]): string | undefined => {
  const content = present(delta.reasoning_content)
  const reasoning = typeof delta.reasoning === "string" && delta.reasoning !== "" ? delta.reasoning : undefined
  return field === "reasoning" ? reasoning ?? content : content ?? reasoning
}

/**
 * Creates a translator.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Translator => {
  const provider = options.provider ?? "OpenAI-compatible server"
  const quirks = Profile.resolveQuirks(options.quirks)
  let nextBlock = 0
  // the open text or reasoning block
  let sequential: (Building & { readonly kind: "text" | "reasoning" }) | undefined
  // open tool calls, in block order, and how fragments find them
  const calls: Array<Call> = []
  const byIndex = new Map<number, Call>()
  const byId = new Map<string, Call>()
  let latest: Call | undefined
  let finish: FinishReason.FinishReason | undefined
  let reported: Usage.Usage | undefined

  const protocol = (message: string) => new LlmError.LlmProtocolError({ message: `${provider} stream: ${message}` })

  const emit = (building: Building, chunk: Chunk.StreamChunk, out: Array<Chunk.StreamChunk>) => {
    building.assembler.push(chunk)
    out.push(chunk)
  }

  const start = (blockType: string, out: Array<Chunk.StreamChunk>): Building => {
    const building = { block: nextBlock++, assembler: Assembler.make() }
    emit(building, { type: "block-start", index: building.block, blockType }, out)
    return building
  }

  // the only block its assembler holds, as built from its deltas
  const end = (building: Building, out: Array<Chunk.StreamChunk>) =>
    out.push({ type: "block-end", index: building.block, block: building.assembler.snapshot()[0]! })

  const closeSequential = (out: Array<Chunk.StreamChunk>) => {
    if (sequential === undefined) return
    end(sequential, out)
    sequential = undefined
  }

  const grow = (kind: "text" | "reasoning", delta: string, out: Array<Chunk.StreamChunk>) => {
    if (sequential?.kind !== kind) {
      closeSequential(out)
      sequential = { kind, ...start(kind, out) }
    }
    const index = sequential.block
    emit(sequential, kind === "text" ? { type: "text-delta", index, delta } : { type: "reasoning-delta", index, delta }, out)
  }

  // The Assembler keeps the first name a call's deltas carry (a different later one is a
  // `tool-call-conflict`), so the name must go out whole, in one delta. A name streamed in
  // pieces is known to be whole only once the call's arguments begin (a fragment's name comes
  // before its arguments) or when the call closes; until then the call's block is started but
  // its first delta is held. Sending the full name on block-end instead would make block-end
  // disagree with the deltas (`block-end-agrees`), and a consumer showing "calling read_…"
  // would have shown the wrong tool.
  const announce = (call: Call, out: Array<Chunk.StreamChunk>) => {
    call.announced = true
    const argumentsDelta = call.pending
    call.pending = ""
    emit(call, { type: "tool-call-delta", index: call.block, id: Ids.callId(call.id!), name: call.name, argumentsDelta }, out)
  }

  const growArguments = (call: Call, fragment: string, out: Array<Chunk.StreamChunk>) => {
    if (call.announced) {
      if (fragment !== "") {
        emit(call, { type: "tool-call-delta", index: call.block, id: Ids.callId(call.id!), argumentsDelta: fragment }, out)
      }
      return
    }
    call.pending += fragment
    if (call.id !== undefined && call.name !== "" && call.pending !== "") announce(call, out)
  }

  const startCall = (label: string, out: Array<Chunk.StreamChunk>): Call => {
    closeSequential(out)
    const call: Call = { ...start("tool-call", out), label, id: undefined, name: "", pending: "", announced: false }
    calls.push(call)
    latest = call
    return call
  }

  // Which call a fragment continues. The wire index decides, except where servers get it
  // wrong: a different id at an index whose call has one is another call (Ollama and proxies
  // translating other APIs give every call index 0), and a fragment without an index
  // continues the call its id names, else the latest call (servers that omit the index stream
  // calls one after the other). A call's first id sticks, so an id repeated in every fragment
  // changes nothing.
  const callFor = (index: number | undefined, id: string | undefined, out: Array<Chunk.StreamChunk>): Call => {
    const named = id === undefined ? undefined : byId.get(id)
    if (index === undefined) {
      if (named !== undefined) return named
      if (latest !== undefined && (id === undefined || latest.id === undefined)) return latest
      return startCall(`tool call #${calls.length} (no index)`, out)
    }
    const current = byIndex.get(index)
    if (current !== undefined && (id === undefined || current.id === undefined || current.id === id)) return current
    // a new index is a new call even when its id repeats one already seen: the calls are two
    // (the loop gives the repeat a fresh id), where merging them would join their arguments
    const call = current === undefined ? startCall(`tool call ${index}`, out) : named ?? startCall(`tool call ${index}`, out)
    // an index keeps pointing at its latest new call: id-less fragments continue that one
    if (current === undefined || named === undefined) byIndex.set(index, call)
    return call
  }

  const toolCall = (delta: Wire.ToolCallDelta, out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    const id = present(delta.id)
    const call = callFor(delta.index ?? undefined, id, out)
    if (call.id === undefined && id !== undefined) {
      call.id = id
      if (!byId.has(id)) byId.set(id, call)
    }
    const piece = present(delta.function?.name)
    if (piece !== undefined) {
      const name = joinName(call.name, piece)
      if (call.announced && name !== call.name) {
        // running a tool under a name the server then changed could run the wrong tool
        return protocol(
          `${call.label} (${call.id}) changed its name to ${JSON.stringify(excerpt(name, 100))} after its arguments began streaming as ${
            JSON.stringify(call.name)
          }`
        )
      }
      call.name = name
    }
    growArguments(call, delta.function?.arguments ?? "", out)
    return undefined
  }

  const closeAll = (out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    const open: Array<{ readonly block: number; readonly close: () => LlmError.LlmError | undefined }> = []
    if (sequential !== undefined) {
      const building = sequential
      open.push({ block: building.block, close: () => void end(building, out) })
      sequential = undefined
    }
    for (const call of calls) {
      open.push({
        block: call.block,
        close: () => {
          if (call.id === undefined) return protocol(`${call.label} never got an id`)
          if (call.name === "") return protocol(`${call.label} (${call.id}) never got a name`)
          if (!call.announced) announce(call, out)
          end(call, out)
          return undefined
        }
      })
    }
    calls.length = 0
    byIndex.clear()
    byId.clear()
    latest = undefined
    open.sort((a, b) => a.block - b.block)
    for (const { close } of open) {
      const failure = close()
      if (failure !== undefined) return failure
    }
    return undefined
  }

  // choice 0, or a first choice that does not say which it is
  const firstChoice = (choices: ReadonlyArray<Wire.Choice>): Wire.Choice | undefined => {
    for (let i = 0; i < choices.length; i++) {
      const c = choices[i]!
      if (c.index === 0 || ((c.index === undefined || c.index === null) && i === 0)) return c
    }
    return undefined
  }

  const chunk = (wire: Wire.ChatChunk, out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    if (wire.error !== undefined && wire.error !== null) return fromStreamError(provider, wire.error)
    if (wire.object === "error") return fromStreamError(provider, wire)
    const choice = wire.choices === undefined || wire.choices === null ? undefined : firstChoice(wire.choices)
    if (choice !== undefined) {
      const delta = choice.delta
      if (delta !== undefined && delta !== null) {
        const reasoning = reasoningOf(delta, quirks.reasoningField)
        const content = present(delta.content)
        const toolCalls = delta.tool_calls
        const grows = reasoning !== undefined || content !== undefined ||
          (toolCalls !== undefined && toolCalls !== null && toolCalls.length > 0)
        if (grows) {
          if (finish !== undefined) return protocol("a delta arrived after finish_reason")
          if (reasoning !== undefined) grow("reasoning", reasoning, out)
          if (content !== undefined) grow("text", content, out)
          if (toolCalls !== undefined && toolCalls !== null) {
            for (const call of toolCalls) {
              const failure = toolCall(call, out)
              if (failure !== undefined) return failure
            }
          }
        }
      }
      // some proxies write "" rather than null on every chunk before the last
      const raw = present(choice.finish_reason)
      if (raw !== undefined && finish === undefined) {
        const failure = closeAll(out)
        if (failure !== undefined) return failure
        finish = finishReason(raw)
      }
    }
    if (wire.usage !== undefined && wire.usage !== null && countsSomething(wire.usage)) reported = usage(wire.usage, quirks.cacheHits)
    return undefined
  }

  const finishWith = (reason: FinishReason.FinishReason, out: Array<Chunk.StreamChunk>) => {
    if (reported !== undefined) out.push({ type: "usage", usage: reported })
    out.push({ type: "finish", reason })
  }

  const done = (out: Array<Chunk.StreamChunk>): LlmError.LlmError | undefined => {
    if (finish === undefined) {
      if (quirks.streamEnd === "strict") return protocol("[DONE] arrived before any finish_reason")
      // the server said it is done without saying why: an answer that called tools asked for
      // them, anything else stopped
      const calledTools = calls.length > 0
      const failure = closeAll(out)
      if (failure !== undefined) return failure
      finish = calledTools ? { kind: "tool-calls" } : { kind: "stop" }
    }
    finishWith(finish, out)
    return undefined
  }

  const endWithoutDone = (out: Array<Chunk.StreamChunk>): boolean => {
    if (quirks.streamEnd === "strict" || finish === undefined) return false
    finishWith(finish, out)
    return true
  }

  return { chunk, done, endWithoutDone, finished: () => finish !== undefined }
}
