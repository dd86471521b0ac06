/**
 * The chunk contract as a checker: given the chunks a model emitted, the rules they break.
 * The conformance kit runs it over adapters; tests can run it over any recorded stream.
 *
 * Each rule has a stable name:
 *
 * | rule | the chunks must… |
 * |---|---|
 * | `finish-once` | end with exactly one `finish` |
 * | `nothing-after-finish` | have nothing after `finish` |
 * | `usage-before-finish` | put every `usage` before `finish` (a special case of the rule above, named for its frequency) |
 * | `delta-inside-block` | put each delta between its block's `block-start` and `block-end`, in a block of its kind |
 * | `block-start-once` | start each index once |
 * | `block-end-once` | end every started block exactly once, and only started ones |
 * | `block-end-agrees` | carry in `block-end` the block its deltas built |
 * | `tool-call-identity` | give every tool-call delta a non-empty id, one id and one name per call, and every call a name |
 * | `chunk-shape` | be stream chunks: objects of a chunk type, with the fields of their type (`StreamChunk.problem`) |
 *
 * @since 0.1.0
 */
import { Assembler, StreamChunk } from "@dsh/llm"

/**
 * @since 0.1.0
 * @category models
 */
export type Rule =
  | "finish-once"
  | "nothing-after-finish"
  | "usage-before-finish"
  | "delta-inside-block"
  | "block-start-once"
  | "block-end-once"
  | "block-end-agrees"
  | "tool-call-identity"
  | "chunk-shape"

/**
 * All rules, in the order of the table above.
 *
 * @since 0.1.0
 * @category models
 */
export const rules: ReadonlyArray<Rule> = [
  "finish-once",
  "nothing-after-finish",
  "usage-before-finish",
  "delta-inside-block",
  "block-start-once",
  "block-end-once",
  "block-end-agrees",
  "tool-call-identity",
  "chunk-shape"
]

/**
 * A broken rule: which, at which chunk (its position in the sequence; the length of the
 * sequence for a rule broken by its end), and how.
 *
 * @since 0.1.0
 * @category models
 */
export interface Violation {
  readonly rule: Rule
  readonly position: number
  readonly message: string
}

const ruleOf: Record<Assembler.AnomalyKind, Rule> = {
  "duplicate-block-start": "block-start-once",
  "index-reused": "block-start-once",
  "delta-without-start": "delta-inside-block",
  "delta-after-end": "delta-inside-block",
  "delta-type-mismatch": "delta-inside-block",
  "tool-call-conflict": "tool-call-identity",
  "end-without-start": "block-end-once",
  "duplicate-block-end": "block-end-once",
  "block-end-mismatch": "block-end-agrees",
  "unclosed-block": "block-end-once",
  "duplicate-finish": "finish-once",
  "chunk-after-finish": "nothing-after-finish",
  "missing-finish": "finish-once",
  "malformed-chunk": "chunk-shape"
}

// What is wrong with a tool-call delta's id, if anything. Every delta carries it, not only the
// first (OpenAI's wire sends it once per call, so an adapter forwarding it as is leaves the
// rest without one): the assembler takes a later id as the call's, so it would not notice.
const missingId = (chunk: StreamChunk.ToolCallDelta): string | undefined => {
  const id: unknown = chunk.id
  if (typeof id !== "string") return `tool-call-delta for block ${chunk.index} has no id (${id === null ? "null" : typeof id})`
  return id === "" ? `tool-call-delta for block ${chunk.index} has an empty id` : undefined
}

/**
 * The violations of a chunk sequence, in order; empty when it obeys the contract.
 *
 * @since 0.1.0
 * @category checks
 */
export const check = (chunks: ReadonlyArray<StreamChunk.StreamChunk>): ReadonlyArray<Violation> => {
  const violations: Array<Violation> = []
  const assembler = Assembler.make()
  let repaired = 0
  let finished = false
  chunks.forEach((chunk, position) => {
    // a value that is no chunk is the assembler's to report (malformed-chunk), not to read here
    const shaped = StreamChunk.problem(chunk) === undefined
    if (shaped && chunk.type === "usage" && finished) {
      violations.push({ rule: "usage-before-finish", position, message: "usage after finish" })
    }
    const unidentified = shaped && chunk.type === "tool-call-delta" ? missingId(chunk) : undefined
    if (unidentified !== undefined) {
      violations.push({ rule: "tool-call-identity", position, message: unidentified })
    }
    const anomalies = assembler.push(chunk)
    repaired += anomalies.length
    for (const anomaly of anomalies) violations.push({ rule: ruleOf[anomaly.kind], position, message: anomaly.message })
    if (shaped && chunk.type === "finish") finished = true
  })
  const assembled = assembler.done()
  // what closing the input repaired (blocks left open, no finish) belongs to its end
  for (const anomaly of assembled.anomalies.slice(repaired)) {
    violations.push({ rule: ruleOf[anomaly.kind], position: chunks.length, message: anomaly.message })
  }
  for (const block of assembled.message.content) {
    if (block.type === "tool-call" && block.name === "") {
      violations.push({
        rule: "tool-call-identity",
        position: chunks.length,
        message: `tool call ${block.id} never got a name`
      })
    }
  }
  return violations
}
