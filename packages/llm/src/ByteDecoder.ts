/**
 * The stream shape every wire decoder of the adapters shares: a stateful decoder that turns
 * network reads into stream chunks, and {@link decode}, which runs one over a byte stream — the
 * chunks of one read emitted together, a failure found after some chunks of a read emitted
 * after them, the input not pulled once the answer is complete, and the decoder's own word on
 * how the body ended.
 *
 * @since 0.1.0
 */
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Pull from "effect/Pull"
import * as Stream from "effect/Stream"
import type * as LlmError from "./LlmError.ts"
import type * as StreamChunk from "./StreamChunk.ts"

/**
 * A wire decoder for one response body. It never throws: what the server sent that it cannot
 * read is its failure.
 *
 * @since 0.1.0
 * @category models
 */
export interface ByteDecoder {
  /** Decodes the next bytes of the body, appending the chunks they complete to `out`. */
  readonly feed: (bytes: Uint8Array, out: Array<StreamChunk.StreamChunk>) => LlmError.LlmError | undefined
  /** The body ended: the last chunks go to `out`; a failure when the answer is not complete. */
  readonly end: (out: Array<StreamChunk.StreamChunk>) => LlmError.LlmError | undefined
  /** Whether the answer is complete (what follows is not read). */
  readonly done: () => boolean
}

type Chunks = Arr.NonEmptyReadonlyArray<StreamChunk.StreamChunk>

/**
 * Runs a fresh decoder (from `make`, once per run of the stream) over a byte stream. The input's
 * own failures pass through.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = <E, R>(
  bytes: Stream.Stream<Uint8Array, E, R>,
  make: () => ByteDecoder
): Stream.Stream<StreamChunk.StreamChunk, E | LlmError.LlmError, R> =>
  Stream.transformPull(bytes, (pull) =>
    Effect.sync(() => {
      const decoder = make()
      // a failure found after some chunks: those chunks go first, the failure at the next pull
      let failed: LlmError.LlmError | undefined
      const emit = (out: Array<StreamChunk.StreamChunk>, failure: LlmError.LlmError | undefined): Pull.Pull<Chunks, LlmError.LlmError> | undefined => {
        if (failure !== undefined) {
          if (!Arr.isArrayNonEmpty(out)) return Effect.fail(failure)
          failed = failure
        }
        return Arr.isArrayNonEmpty(out) ? Effect.succeed(out) : undefined
      }
      // the input's end, as a value: the decoder has the last word on it
      const read = Pull.catchDone(pull, () => Effect.succeed(undefined))
      const ended = (): Pull.Pull<Chunks, LlmError.LlmError> => {
        const out: Array<StreamChunk.StreamChunk> = []
        return emit(out, decoder.end(out)) ?? Cause.done()
      }
      const next: Pull.Pull<Chunks, E | LlmError.LlmError> = Effect.suspend(() => {
        if (failed !== undefined) return Effect.fail(failed)
        if (decoder.done()) return Cause.done()
        return Effect.flatMap(read, (arrays) => {
          if (arrays === undefined) return ended()
          const out: Array<StreamChunk.StreamChunk> = []
          let failure: LlmError.LlmError | undefined
          for (const chunk of arrays) {
            failure = decoder.feed(chunk, out)
            if (failure !== undefined || decoder.done()) break
          }
          return emit(out, failure) ?? next
        })
      })
      return next
    }))
