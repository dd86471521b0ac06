/**
 * Wire fixtures: `@dsh/openai/testing`'s `Fixture` (the format, the builders, the fixture
 * files in the formats the servers use), with DeepSeek's own fixture files added to the ones
 * {@link names} lists and {@link load} reads (a DeepSeek file hides a shared one of the same
 * name).
 *
 * @since 0.1.0
 */
import { Fixture as Shared } from "@dsh/openai/testing"

/**
 * What may be written verbatim, or repeated.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Payload = Shared.Payload

/**
 * @since 0.1.0
 * @category models
 */
export type Payload = Shared.Payload

/**
 * One network write, or a marker.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Write = Shared.Write

/**
 * @since 0.1.0
 * @category models
 */
export type Write = Shared.Write

/**
 * What a conforming adapter makes of a fixture.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Expect = Shared.Expect

/**
 * @since 0.1.0
 * @category models
 */
export type Expect = Shared.Expect

/**
 * @since 0.1.0
 * @category schemas
 */
export const Fixture = Shared.Fixture

/**
 * @since 0.1.0
 * @category models
 */
export type Fixture = Shared.Fixture

/**
 * What a conforming adapter with these quirks makes of a fixture.
 *
 * @since 0.1.0
 * @category models
 */
export const expectFor = Shared.expectFor

/**
 * The text of a payload as written.
 *
 * @since 0.1.0
 * @category encoding
 */
export const payloadText = Shared.payloadText

/**
 * The bytes a write sends; `undefined` for the markers.
 *
 * @since 0.1.0
 * @category encoding
 */
export const writeBytes = Shared.writeBytes

/**
 * The network writes of a fixture as bytes, markers left out.
 *
 * @since 0.1.0
 * @category encoding
 */
export const chunks = Shared.chunks

/**
 * All the bytes of a fixture's body, concatenated.
 *
 * @since 0.1.0
 * @category encoding
 */
export const body = Shared.body

/**
 * A `data:` write.
 *
 * @since 0.1.0
 * @category builders
 */
export const data = Shared.data

/**
 * The `data: [DONE]` that ends a stream.
 *
 * @since 0.1.0
 * @category builders
 */
export const done = Shared.done

/**
 * A chat completion chunk in DeepSeek's envelope.
 *
 * @since 0.1.0
 * @category builders
 */
export const chunk = Shared.chunk

/**
 * The usage-only chunk that ends a stream with `stream_options.include_usage`.
 *
 * @since 0.1.0
 * @category builders
 */
export const usageChunk = Shared.usageChunk

/**
 * DeepSeek's usage object: `prompt_tokens` = cache hits + misses.
 *
 * @since 0.1.0
 * @category builders
 */
export const usage = Shared.usage

/**
 * OpenAI's usage object.
 *
 * @since 0.1.0
 * @category builders
 */
export const openAiUsage = Shared.openAiUsage

/**
 * An error response: a status and a JSON error body.
 *
 * @since 0.1.0
 * @category builders
 */
export const errorResponse = Shared.errorResponse

/**
 * A streamed answer whose text arrives in the given pieces, with usage and `[DONE]`.
 *
 * @since 0.1.0
 * @category builders
 */
export const text = Shared.text

/**
 * Reads fixture files from directories.
 *
 * @since 0.1.0
 * @category models
 */
export type Loader = Shared.Loader

/**
 * A loader over directories of fixture files.
 *
 * @since 0.1.0
 * @category files
 */
export const loader = Shared.loader

/**
 * The directory of DeepSeek's own fixture files.
 *
 * @since 0.1.0
 * @category files
 */
export const directory: URL = new URL("./fixtures/", import.meta.url)

const files = Shared.loader(directory, Shared.directory)

/**
 * The names of the fixture files (DeepSeek's and the shared ones, without `.json`), sorted.
 *
 * @since 0.1.0
 * @category files
 */
export const names = (): ReadonlyArray<string> => files.names()

/**
 * Reads and validates a fixture file. Throws (with the file's name) when it is missing or
 * malformed.
 *
 * @since 0.1.0
 * @category files
 */
export const load = (name: string): Fixture => files.load(name)
