/**
 * Context management: the size of the next request, and compaction. The size is what the
 * provider reported for the last request (its usage) plus an estimate of what was appended
 * since, or, with no report since the last compaction, an estimate of the whole history and
 * settings; so every step knows it without walking the history. A compaction is planned from
 * the log (`Compaction` of `@dsh/session`) and recorded in it: a prune first (model-free), then,
 * when that is not enough, a summary written by a model call. A summarizing call that fails or
 * is interrupted is recorded as `compaction/failed` and changes nothing.
 *
 * @internal
 */
import type { Agent } from "@dsh/agent"
import { HarnessError, LlmError, type ModelInfo, type Usage } from "@dsh/llm"
import { Compaction, Derivation, type SessionEvent } from "@dsh/session"
import { ToolErrors } from "@dsh/tools"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { describeCause, modelCode, typedError } from "./failure.ts"
import type { AgentState, Budget, Env } from "./state.ts"

const DEFAULT_THRESHOLD = 0.8
const DEFAULT_KEEP_TURNS = 2
const DEFAULT_PRUNE_MIN_CHARS = 2_000
const DEFAULT_SUMMARY_TOKENS = 1_500

/** Appends a compaction's event where it belongs (inside a turn, or between turns). */
export type Log = <T extends "compaction/applied" | "compaction/failed">(
  type: T,
  data: SessionEvent.DataOf<T>
) => Effect.Effect<void, HarnessError.HarnessError>

/** What a compaction did, and the summarizer's failure when it failed (recorded already). */
export interface Outcome {
  readonly report: Agent.CompactionReport
  readonly failure: HarnessError.HarnessError | undefined
}

/**
 * Why compaction options are unusable, if they are: each setting must be in its range. Checked
 * when the agent is created, so a mistake is an `INVALID_INPUT` there and not a surprise later.
 */
export const problemsOf = (options: Agent.CompactionOptions | undefined): ReadonlyArray<string> => {
  if (options === undefined) return []
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    return [`compaction must be an object of compaction settings, got ${HarnessError.describe(options)}`]
  }
  const out: Array<string> = []
  const known = new Set(["threshold", "contextWindow", "keepTurns", "prune", "model", "prompt", "maxSummaryTokens"])
  for (const key of Object.keys(options)) if (!known.has(key)) out.push(`compaction.${key} is not a compaction setting`)
  const { contextWindow, keepTurns, maxSummaryTokens, model, prompt, prune, threshold } = options
  if (threshold !== undefined && threshold !== false && !(typeof threshold === "number" && threshold > 0 && threshold <= 1)) {
    out.push(`compaction.threshold must be a number in (0, 1] or false, got ${HarnessError.describe(threshold)}`)
  }
  const positive = (name: string, value: unknown, min: number) => {
    if (value !== undefined && !(Number.isSafeInteger(value) && (value as number) >= min)) {
      out.push(`compaction.${name} must be an integer ≥ ${min}, got ${HarnessError.describe(value)}`)
    }
  }
  positive("contextWindow", contextWindow, 1)
  positive("keepTurns", keepTurns, 0)
  positive("maxSummaryTokens", maxSummaryTokens, 1)
  if (prune !== undefined && prune !== false) {
    if (typeof prune !== "object" || prune === null || Array.isArray(prune)) out.push(`compaction.prune must be false or { minChars }, got ${HarnessError.describe(prune)}`)
    else {
      for (const key of Object.keys(prune)) if (key !== "minChars") out.push(`compaction.prune.${key} is not a prune setting (only minChars is)`)
      positive("prune.minChars", prune.minChars, 0)
    }
  }
  // with the window given, a summary budget that fills it could never make room
  if (Number.isSafeInteger(contextWindow) && Number.isSafeInteger(maxSummaryTokens) && maxSummaryTokens! >= contextWindow!) {
    out.push(`compaction.maxSummaryTokens (${maxSummaryTokens}) must be below compaction.contextWindow (${contextWindow})`)
  }
  if (model !== undefined && (typeof model !== "string" || model === "")) out.push("compaction.model must be a model name")
  if (prompt !== undefined && (typeof prompt !== "string" || prompt.trim() === "")) out.push("compaction.prompt must be non-empty text")
  return out
}

/** The resolved compaction settings of an agent; the window from the options, else the model registry. */
export const budgetOf = (options: Agent.Options, info: Option.Option<ModelInfo.ModelInfo>): Budget => {
  const compaction = options.compaction ?? {}
  const prune = compaction.prune
  const window = compaction.contextWindow ?? Option.getOrUndefined(Option.map(info, (entry) => entry.contextWindow))
  return {
    window,
    threshold: compaction.threshold ?? DEFAULT_THRESHOLD,
    keepTurns: compaction.keepTurns ?? DEFAULT_KEEP_TURNS,
    pruneMinChars: prune === false || prune === undefined ? undefined : prune.minChars ?? DEFAULT_PRUNE_MIN_CHARS,
    summarizer: {
      model: compaction.model ?? options.model,
      prompt: compaction.prompt ?? Compaction.defaultPrompt,
      maxTokens: compaction.maxSummaryTokens ?? defaultSummaryTokens(window)
    }
  }
}

/** The default summary budget: a small window's whole budget would leave no room for what the summary replaces. */
const defaultSummaryTokens = (window: number | undefined): number =>
  window === undefined ? DEFAULT_SUMMARY_TOKENS : Math.min(DEFAULT_SUMMARY_TOKENS, Math.max(1, Math.floor(window / 4)))

/** The most tokens a request may have before it is compacted automatically; `undefined`: no limit. */
export const limitOf = (budget: Budget): number | undefined =>
  budget.window === undefined || budget.threshold === false ? undefined : Math.floor(budget.window * budget.threshold)

/** Takes the provider's count as the size of the next request as of `seq` (its `usage` event). */
export const reported = (state: AgentState, seq: number, usage: Usage.Usage): void => {
  state.size = {
    seq,
    tokens: usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens + usage.outputTokens,
    settings: settingsChars(state)
  }
}

/** What the settings (system prompt, tool schemas, options) add, in characters: their JSON. */
const settingsChars = (state: AgentState): number => state.lastSettings?.length ?? 0

/**
 * The estimated size of the next request, in tokens: the last size known plus what the events
 * since add; with none known (the first step, after a compaction), the whole history's.
 */
export const estimate = Effect.fnUntraced(function*(env: Env, state: AgentState): Effect.fn.Return<number> {
  const known = state.size
  const settings = settingsChars(state)
  if (known !== undefined) {
    const since = yield* env.session.eventsFrom(known.seq + 1)
    if (!since.some((event) => event.type === "compaction/applied")) {
      return known.tokens + Compaction.tokensOf(Compaction.charsOfEvents(since) + Math.max(0, settings - known.settings))
    }
  }
  const history = yield* env.session.messages
  const seq = (yield* env.session.seq) - 1
  const tokens = Compaction.tokensOf(Compaction.charsOfHistory(history) + settings)
  state.size = { seq, tokens, settings }
  return tokens
})

/**
 * Compacts before a step when the next request would pass the limit: prunes, then summarizes.
 * A summarizer's failure is recorded and the step goes on with the history as it is (no
 * second attempt in the same turn); what else fails (a listener of the events) is the turn's.
 */
export const compactIfNeeded = Effect.fnUntraced(function*(
  env: Env,
  state: AgentState,
  log: Log,
  turn: { compactionFailed: boolean; readonly number: number }
): Effect.fn.Return<void, HarnessError.HarnessError> {
  const limit = limitOf(env.budget)
  if (limit === undefined || turn.compactionFailed || state.nothingToCompactAt === state.lastTurn) return
  const tokens = yield* estimate(env, state)
  if (tokens <= limit) return
  const { failure, report } = yield* compact(env, state, log, "auto")
  if (failure !== undefined) turn.compactionFailed = true
  else if (report.applied.length === 0) state.nothingToCompactAt = state.lastTurn
})

/**
 * Compacts now, for `reason`: prunes (when pruning is on), then — unless the prune brought an
 * automatic compaction under the limit — summarizes what may be summarized. Never fails for the
 * summarizer: its failure is recorded in the log and returned.
 */
export const compact = Effect.fnUntraced(function*(
  env: Env,
  state: AgentState,
  log: Log,
  reason: typeof SessionEvent.CompactionReason.Type
): Effect.fn.Return<Outcome, HarnessError.HarnessError> {
  const tokensBefore = yield* estimate(env, state)
  const applied: Array<SessionEvent.Compaction> = []
  const events = yield* env.session.eventsFrom(state.summarizedThrough + 1)
  let tokens = tokensBefore
  const prune = pruneOf(env.budget, events, reason, tokens)
  if (prune !== undefined) {
    yield* log("compaction/applied", prune)
    applied.push(prune)
    tokens = prune.tokensAfter
    state.size = undefined
  }
  const limit = limitOf(env.budget)
  const enough = reason === "auto" && limit !== undefined && tokens <= limit
  const range = enough ? undefined : Compaction.summaryRange(events, env.budget.keepTurns)
  if (range === undefined) return { report: { applied, tokensBefore, tokensAfter: tokens }, failure: undefined }
  const summarized = yield* summarize(env, state, log, reason, range, tokens)
  if (summarized._tag === "Failed") {
    return { report: { applied, tokensBefore, tokensAfter: tokens }, failure: summarized.failure }
  }
  applied.push(summarized.compaction)
  return { report: { applied, tokensBefore, tokensAfter: summarized.compaction.tokensAfter }, failure: undefined }
})

/** The prune of what may be pruned, if pruning is on and anything may. */
const pruneOf = (
  budget: Budget,
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  reason: typeof SessionEvent.CompactionReason.Type,
  tokensBefore: number
): Extract<SessionEvent.Compaction, { readonly kind: "prune" }> | undefined => {
  if (budget.pruneMinChars === undefined) return undefined
  const results = Compaction.prunable(events, { keepTurns: budget.keepTurns, minChars: budget.pruneMinChars })
  if (results.length === 0) return undefined
  let saved = 0
  for (const result of results) saved += result.chars - Derivation.prunedText(result).length
  const tokensAfter = Math.max(0, tokensBefore - Compaction.tokensOf(Math.max(0, saved)))
  return { kind: "prune", reason, results, tokensBefore, tokensAfter }
}

type Summarized =
  | { readonly _tag: "Applied"; readonly compaction: Extract<SessionEvent.Compaction, { readonly kind: "summary" }> }
  | { readonly _tag: "Failed"; readonly failure: HarnessError.HarnessError }

/**
 * Asks the summarizer for a summary of `range` and records it; a failure or an interruption
 * of the call is recorded as `compaction/failed`, and the history stays as it was.
 */
const summarize = Effect.fnUntraced(function*(
  env: Env,
  state: AgentState,
  log: Log,
  reason: typeof SessionEvent.CompactionReason.Type,
  range: { readonly from: number; readonly through: number },
  tokensBefore: number
): Effect.fn.Return<Summarized, HarnessError.HarnessError> {
  const { summarizer } = env.budget
  const history = yield* env.session.messages
  const after = yield* env.session.eventsFrom(range.through + 1)
  const input = Compaction.summarized(history, after)
  const asked = { from: range.from, through: range.through, ...summarizer }
  const failed = (code: string, message: string): SessionEvent.DataOf<"compaction/failed"> => ({
    kind: "summary",
    reason,
    message,
    code,
    ...asked
  })
  const answer = yield* Effect.exit(
    callSummarizer(env, Compaction.summaryRequest(input, summarizer)).pipe(
      Effect.onInterrupt(() =>
        Effect.ignore(log("compaction/failed", failed("ABORTED", "the summarizing call was interrupted (an abort)")))
      )
    )
  )
  if (answer._tag === "Failure") {
    if (Cause.hasInterruptsOnly(answer.cause)) return yield* Effect.interrupt
    const failure = describeCause(answer.cause)
    yield* log("compaction/failed", failed(failure.code, failure.message))
    return { _tag: "Failed", failure: failure.error } as const
  }
  const { summary, usage } = answer.value
  // measured against the estimate before, as a prune is: what the summary saves of the
  // messages it replaces (an estimate from the provider's usage and one from characters
  // would not compare)
  const saved = Compaction.charsOfHistory(input) - (Derivation.summaryText(summary).length + 8)
  const tokensAfter = Math.max(0, tokensBefore - Math.trunc(saved / Compaction.charsPerToken))
  const compaction = {
    kind: "summary" as const,
    reason,
    from: range.from,
    through: range.through,
    summary,
    model: summarizer.model,
    prompt: summarizer.prompt,
    maxTokens: summarizer.maxTokens,
    ...(usage === undefined ? {} : { usage }),
    tokensBefore,
    tokensAfter
  }
  yield* log("compaction/applied", compaction)
  state.summarizedThrough = range.through
  state.size = undefined
  return { _tag: "Applied", compaction } as const
})

/** The summary the summarizer wrote, or why it wrote none, as a typed error. */
const callSummarizer = (
  env: Env,
  request: Parameters<Env["model"]["generate"]>[0]
): Effect.Effect<{ readonly summary: string; readonly usage: Usage.Usage | undefined }, HarnessError.HarnessError> =>
  Effect.flatMap(env.model.generate(request), (assembled) => {
    const finish = assembled.finishReason
    if (finish?.kind === "error") {
      const { code } = modelCode(finish.code)
      return Effect.fail(typedError(code, `the summarizer reported an error: ${finish.message}`))
    }
    if (finish?.kind === "aborted") return Effect.fail(new ToolErrors.AbortedError({ message: "the summarizer aborted its answer" }))
    const summary = assembled.message.content
      .flatMap((block) => (block.type === "text" ? [block.text] : []))
      .join("")
      .trim()
    if (summary === "") {
      return Effect.fail(new LlmError.LlmProtocolError({ message: `the summarizer (model "${request.model}") answered with no text` }))
    }
    return Effect.succeed({ summary, usage: assembled.usage })
  })

/** Whether a step's failure is the provider's refusal of a request too long for the window. */
export const isOverflow = (error: unknown): boolean =>
  HarnessError.isHarnessError(error) && error.code === "LLM_CONTEXT_OVERFLOW"
