/**
 * effect/ai response parts as dsh stream chunks.
 *
 * effect/ai streams blocks as `*-start` / `*-delta` / `*-end` parts keyed by a provider id,
 * tool calls as `tool-params-start` / `-delta` / `-end` followed by a `tool-call` part with the
 * parameters already parsed (or only the `tool-call` part, from providers that do not stream
 * parameters), and ends with a `finish` part carrying the reason and usage. The translation:
 *
 * | effect/ai part | dsh chunks |
 * |---|---|
 * | `text-start`, `reasoning-start` | `block-start` at the next index |
 * | `text-delta`, `reasoning-delta` | `text-delta` / `reasoning-delta` (empty deltas are skipped; a delta whose block never started opens it) |
 * | `text-end`, `reasoning-end` | `block-end` with the block the deltas built; a reasoning block carries the part's merged provider metadata as its `signature` (see `ReasoningMetadata`) |
 * | `text`, `reasoning` (whole) | `block-start`, one delta, `block-end` |
 * | `tool-params-start` | `block-start` of a `tool-call` block |
 * | `tool-params-delta` | `tool-call-delta` with the raw JSON fragment; the first one carries the name |
 * | `tool-params-end` | `block-end` when fragments arrived: the arguments are the raw JSON as the model wrote it |
 * | `tool-call` | for a call whose parameters were not streamed: one `tool-call-delta` with the parameters serialized as JSON (a string is taken as the raw arguments), then `block-end`; ignored for a call already ended |
 * | `file` of an `image/*` type | `block-start` and `block-end` of an `image` block (base64) |
 * | `finish` | `block-end` for every block still open, `usage` (when the provider reported any count), `finish`; the stream ends there |
 * | `error` | the stream fails with the mapped `LlmError` (see `ErrorMapping.fromErrorPart`) |
 * | provider-executed `tool-call`s and `tool-params-*`, `tool-result`, `tool-approval-request`, other `file`s, `source`, `response-metadata` | nothing: dsh has no block for them, and the loop must not try to run a tool the provider already ran |
 *
 * An input that ends without `finish` fails with `LlmProtocolError`.
 *
 * Block contents are built by the `@dsh/llm` block assembler fed with the very chunks emitted,
 * so every `block-end` carries exactly what a consumer's assembler built.
 *
 * @since 0.1.0
 */
import {
  AdapterSettings,
  Assembler,
  type Content,
  FinishReason,
  HarnessError,
  type Ids,
  LlmError,
  StreamChunk,
  type Usage
} from "@dsh/llm"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import type { Response } from "effect/ai"
import { Base64 } from "effect/encoding"
import * as ErrorMapping from "./ErrorMapping.ts"
import * as ReasoningMetadata from "./ReasoningMetadata.ts"

/**
 * An effect/ai finish reason as a dsh one. Reasons without a dsh kind become `other` with the
 * effect/ai word as the name (`pause`, `other`, `unknown`); `error` becomes an `error` finish
 * with code `LLM_SERVER`, the code of a failure the provider reported.
 *
 * @since 0.1.0
 * @category mapping
 */
export const finishReason = (reason: Response.FinishReason): FinishReason.FinishReason => {
  switch (reason) {
    case "stop":
      return FinishReason.stop
    case "length":
      return FinishReason.length
    case "tool-calls":
      return FinishReason.toolCalls
    case "content-filter":
      return FinishReason.contentFilter
    case "error":
      return FinishReason.error("LLM_SERVER", "the provider ended the response with an error")
    case "pause":
    case "other":
    case "unknown":
      return FinishReason.other(reason)
  }
}

const count = (n: number | undefined): number => n === undefined || !Number.isFinite(n) ? 0 : Math.max(0, Math.trunc(n))

/**
 * effect/ai usage as dsh's disjoint counts: `inputTokens` is effect/ai's `uncached` count, or
 * when the provider gives none, its `total` less the cache reads and writes; `outputTokens` is
 * the output `total` (or text plus reasoning); `reasoningTokens` is kept when reported.
 * `undefined` when the provider reported no count at all (zeros would claim a free call).
 *
 * @since 0.1.0
 * @category mapping
 */
export const usage = (usage: Response.Usage): Usage.Usage | undefined => {
  const input = usage.inputTokens
  const output = usage.outputTokens
  const reported = [input.uncached, input.total, input.cacheRead, input.cacheWrite, output.total, output.text, output.reasoning]
  if (reported.every((n) => n === undefined)) return undefined
  const cacheReadTokens = count(input.cacheRead)
  const cacheWriteTokens = count(input.cacheWrite)
  const inputTokens = input.uncached !== undefined
    ? count(input.uncached)
    : Math.max(0, count(input.total) - cacheReadTokens - cacheWriteTokens)
  const outputTokens = output.total !== undefined ? count(output.total) : count(output.text) + count(output.reasoning)
  const counts: Usage.Usage = { inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens }
  return output.reasoning === undefined ? counts : { ...counts, reasoningTokens: count(output.reasoning) }
}

/**
 * Translates one response. Stateful: one per response, not shared between fibers.
 *
 * @since 0.1.0
 * @category models
 */
export interface Translator {
  /** The chunks a part yields, or the failure it reports (an `error` part). */
  readonly push: (part: Response.AnyPart) => Result.Result<ReadonlyArray<StreamChunk.StreamChunk>, LlmError.LlmError>
  /** Ends the input: nothing when `finish` was seen, else a `LlmProtocolError`. */
  readonly end: () => Result.Result<ReadonlyArray<StreamChunk.StreamChunk>, LlmError.LlmError>
  /** Whether `finish` was seen (later parts are ignored). */
  readonly finished: () => boolean
}

interface OpenText {
  readonly kind: "text" | "reasoning"
  /** `kind:id`: text and reasoning ids are separate namespaces. */
  readonly key: string
  readonly index: number
  metadata: Response.ProviderMetadata
}

interface OpenTool {
  readonly index: number
  readonly id: Ids.CallId
  name: string | undefined
  nameSent: boolean
  streamed: boolean
}

const none: ReadonlyArray<StreamChunk.StreamChunk> = []

/**
 * Serializes a `tool-call` part's parameters as the raw arguments of a dsh tool call.
 *
 * @since 0.1.0
 * @category mapping
 */
export const argumentsOf = (params: unknown): string => {
  // a provider that hands over the unparsed text: it is the raw arguments already
  if (typeof params === "string") return params
  return JSON.stringify(params) ?? "{}"
}

/**
 * Creates a translator.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): Translator => {
  // fed with every emitted chunk: it builds the blocks that `block-end` carries
  const assembler = Assembler.make()
  const texts = new Map<string, OpenText>()
  const tools = new Map<string, OpenTool>()
  // the calls ended, by id, with their names: a later call of another name under an ended id is
  // a second call the provider gave the same id, not the confirmation of the first
  const endedTools = new Map<string, string | undefined>()
  const providerTools = new Set<string>()
  let next = 0
  let done = false
  let out: Array<StreamChunk.StreamChunk> = []

  const emit = (chunk: StreamChunk.StreamChunk) => {
    out.push(chunk)
    assembler.push(chunk)
  }

  // indexes are dense and never reused, and every started block is in the snapshot (open
  // text, reasoning and tool-call blocks as built so far; images end as they start)
  const built = (index: number): Content.ContentBlock => assembler.snapshot()[index]!

  const openText = (kind: OpenText["kind"], id: string, metadata: Response.ProviderMetadata): OpenText => {
    const block: OpenText = { kind, key: `${kind}:${id}`, index: next++, metadata }
    texts.set(block.key, block)
    emit(StreamChunk.blockStart(block.index, kind))
    return block
  }

  const textDelta = (block: OpenText, delta: string, metadata: Response.ProviderMetadata) => {
    block.metadata = ReasoningMetadata.merge(block.metadata, metadata)
    if (delta === "") return
    emit(
      block.kind === "text"
        ? StreamChunk.textDelta(block.index, delta)
        : StreamChunk.reasoningDelta(block.index, delta)
    )
  }

  const closeText = (block: OpenText) => {
    texts.delete(block.key)
    const content = built(block.index)
    const signature = block.kind === "reasoning" ? ReasoningMetadata.toSignature(block.metadata) : undefined
    emit(StreamChunk.blockEnd(block.index, signature === undefined ? content : { ...content, signature } as Content.ContentBlock))
  }

  const openTool = (id: string, name: string | undefined): OpenTool => {
    const tool: OpenTool = { index: next++, id: id as Ids.CallId, name, nameSent: false, streamed: false }
    tools.set(id, tool)
    emit(StreamChunk.blockStart(tool.index, "tool-call"))
    return tool
  }

  const toolDelta = (tool: OpenTool, argumentsDelta: string) => {
    const withName = !tool.nameSent && tool.name !== undefined
    if (withName) tool.nameSent = true
    emit(StreamChunk.toolCallDelta(tool.index, tool.id, argumentsDelta, withName ? tool.name : undefined))
  }

  const closeTool = (id: string, tool: OpenTool) => {
    // the name must arrive at least once, even when no fragment carried it
    if (!tool.nameSent && tool.name !== undefined) toolDelta(tool, "")
    tools.delete(id)
    endedTools.set(id, tool.name)
    emit(StreamChunk.blockEnd(tool.index, built(tool.index)))
  }

  const textKey = (part: { readonly type: string }): OpenText["kind"] =>
    part.type.startsWith("text") ? "text" : "reasoning"

  // a call without an id cannot be answered: its result would match no call (the wire adapters refuse it too)
  const hasCallId = (part: { readonly id: unknown }): boolean => typeof part.id === "string" && part.id !== ""
  const noCallId = (part: { readonly type: string; readonly id: unknown }) =>
    new LlmError.LlmProtocolError({
      message: `the effect/ai response has a ${part.type} part with no call id (got ${AdapterSettings.shown(part.id)}): its result could not be matched to it`
    })

  const pushOne = (part: Response.AnyPart): LlmError.LlmError | undefined => {
    // past the types (a `configure` that maps parts): no part at all, which a read of its type would crash on
    if (typeof part !== "object" || part === null) {
      return new LlmError.LlmProtocolError({ message: `the effect/ai response stream gave ${HarnessError.describe(part)}, not a response part` })
    }
    switch (part.type) {
      case "text-start":
      case "reasoning-start": {
        const kind = textKey(part)
        if (!texts.has(`${kind}:${part.id}`)) openText(kind, part.id, part.metadata)
        return undefined
      }
      case "text-delta":
      case "reasoning-delta": {
        const kind = textKey(part)
        const block = texts.get(`${kind}:${part.id}`) ?? openText(kind, part.id, {})
        textDelta(block, part.delta, part.metadata)
        return undefined
      }
      case "text-end":
      case "reasoning-end": {
        const block = texts.get(`${textKey(part)}:${part.id}`)
        if (block === undefined) return undefined
        block.metadata = ReasoningMetadata.merge(block.metadata, part.metadata)
        closeText(block)
        return undefined
      }
      case "text":
      case "reasoning": {
        // a whole block: keyed by its position, it can collide with no streamed block
        const id = `whole-${next}`
        const block = openText(part.type, id, part.metadata)
        textDelta(block, part.text, {})
        closeText(block)
        return undefined
      }
      case "tool-params-start": {
        if (part.providerExecuted) providerTools.add(part.id)
        else if (!hasCallId(part)) return noCallId(part)
        else if (!tools.has(part.id) && !endedTools.has(part.id)) openTool(part.id, part.name)
        return undefined
      }
      case "tool-params-delta": {
        if (providerTools.has(part.id) || endedTools.has(part.id) || part.delta === "") return undefined
        if (!hasCallId(part)) return noCallId(part)
        const tool = tools.get(part.id) ?? openTool(part.id, undefined)
        tool.streamed = true
        toolDelta(tool, part.delta)
        return undefined
      }
      case "tool-params-end": {
        const tool = tools.get(part.id)
        // without fragments the arguments come with the `tool-call` part, and without a start
        // the name: wait for it
        if (tool !== undefined && tool.streamed && tool.name !== undefined) closeTool(part.id, tool)
        return undefined
      }
      case "tool-call": {
        if (part.providerExecuted || providerTools.has(part.id)) return undefined
        if (!hasCallId(part)) return noCallId(part)
        if (endedTools.has(part.id)) {
          const ended = endedTools.get(part.id)
          return ended === undefined || ended === part.name
            ? undefined
            : new LlmError.LlmProtocolError({
              message: `the effect/ai response has two tool calls with id ${JSON.stringify(part.id)} (${ended}, then ${part.name}): the second would be lost`
            })
        }
        const tool = tools.get(part.id) ?? openTool(part.id, part.name)
        if (tool.name === undefined) tool.name = part.name
        if (!tool.streamed) toolDelta(tool, argumentsOf(part.params))
        closeTool(part.id, tool)
        return undefined
      }
      case "file": {
        if (!part.mediaType.startsWith("image/")) return undefined
        const index = next++
        emit(StreamChunk.blockStart(index, "image"))
        emit(StreamChunk.blockEnd(index, { type: "image", mediaType: part.mediaType, data: Base64.encode(part.data) }))
        return undefined
      }
      case "finish": {
        const open = [
          ...[...texts.values()].map((block) => ({ index: block.index, close: () => closeText(block) })),
          ...[...tools].map(([id, tool]) => ({ index: tool.index, close: () => closeTool(id, tool) }))
        ].sort((a, b) => a.index - b.index)
        for (const block of open) block.close()
        const counts = usage(part.usage)
        if (counts !== undefined) emit(StreamChunk.usage(counts))
        emit(StreamChunk.finish(finishReason(part.reason)))
        done = true
        return undefined
      }
      case "error":
        return ErrorMapping.fromErrorPart(part.error)
      case "tool-result":
      case "tool-approval-request":
      case "source":
      case "response-metadata":
        return undefined
    }
  }

  const push = (part: Response.AnyPart) => {
    if (done) return Result.succeed(none)
    out = []
    const failure = pushOne(part)
    return failure === undefined ? Result.succeed(out) : Result.fail(failure)
  }

  const end = () =>
    done
      ? Result.succeed(none)
      : Result.fail(
        new LlmError.LlmProtocolError({ message: "the effect/ai response stream ended without a finish part" })
      )

  return { push, end, finished: () => done }
}

/**
 * Translates a stream of effect/ai parts into dsh chunks. The stream stops pulling its input
 * at `finish` (nothing may follow it) or at an `error` part, which releases the provider's
 * connection.
 *
 * @since 0.1.0
 * @category constructors
 */
export const translate = <E, R>(
  parts: Stream.Stream<Response.AnyPart, E, R>
): Stream.Stream<StreamChunk.StreamChunk, E | LlmError.LlmError, R> =>
  Stream.suspend(() => {
    const translator = make()
    return parts.pipe(
      Stream.takeUntil((part) => part?.type === "finish" || part?.type === "error"),
      Stream.mapEffect((part) => Effect.fromResult(translator.push(part))),
      Stream.concat(Stream.fromEffect(Effect.suspend(() => Effect.fromResult(translator.end())))),
      Stream.flattenIterable
    )
  })
