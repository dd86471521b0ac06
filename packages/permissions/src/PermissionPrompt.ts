/**
 * Who answers when the policy asks: a service the application provides. The dsh command asks
 * in the terminal (y / n / always); tests provide scripted answers ({@link scripted}).
 *
 * The policy asks one question at a time (a second call that needs an answer waits for the
 * first), so a prompt never sees two questions at once, and an "always" answer already
 * covers the calls that were waiting behind it. Without a prompt, asking is a denial, and the
 * reason says so; a prompt that fails or dies is a denial too, with its failure as the
 * reason, and so is one whose `ask` throws or gives back something that is not an Effect (a
 * Promise, a plain `"yes"`: an untyped application's mistake). Interrupting the call (an
 * abort) interrupts the question.
 *
 * @since 0.1.0
 */
import type { HarnessError } from "@dsh/llm"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Rule } from "./Policy.ts"

/**
 * An answer: run the call (`yes`), refuse it (`no`), or run it and allow the same for the
 * rest of the session (`always`: the request's `always` rule is added).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Answer = Schema.Literals(["yes", "no", "always"])

/**
 * @since 0.1.0
 * @category models
 */
export type Answer = typeof Answer.Type

/**
 * A question: the call, why the policy asks, and what "always" would allow.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  readonly callId: string
  readonly tool: string
  /** The call's raw arguments (JSON text, as the model wrote them). */
  readonly arguments: string
  /** The asking rule's index in the policy, or `"default"`. */
  readonly rule: number | "default"
  /** Why the policy asks, in words (the asking rule and its reason). */
  readonly reason: string
  /**
   * The allow rule an `always` answer adds for the rest of the session: the tool, narrowed to
   * the call's exact commands and its path when it has them, and to the directory its command
   * runs in when the tool takes a `cwd`. Absent when the call has no session (outside an
   * agent) or when no rule could allow exactly this call again (a command with expansions or
   * redirections, a call that sets environment variables): then `always` allows this call only.
   */
  readonly always?: Rule
  /** The agent and session of the call (absent outside an agent). */
  readonly agentId?: string
  readonly sessionId?: string
}

/**
 * The prompt service.
 *
 * @since 0.1.0
 * @category services
 */
export class PermissionPrompt extends Context.Service<PermissionPrompt, {
  readonly ask: (request: Request) => Effect.Effect<Answer, HarnessError.HarnessError>
}>()("@dsh/permissions/PermissionPrompt") {}

/**
 * A prompt from a function.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  ask: (request: Request) => Effect.Effect<Answer, HarnessError.HarnessError>
): Layer.Layer<PermissionPrompt> => Layer.succeed(PermissionPrompt, PermissionPrompt.of({ ask }))

/**
 * What a scripted prompt was asked, for tests.
 *
 * @since 0.1.0
 * @category services
 */
export class Scripted extends Context.Service<Scripted, {
  /** Every question asked so far, in order. */
  readonly asked: Effect.Effect<ReadonlyArray<Request>>
}>()("@dsh/permissions/PermissionPrompt/Scripted") {}

/**
 * A prompt for tests: the k-th question gets the k-th answer (or `answer(request)`), and
 * every question is recorded ({@link Scripted}). A question beyond the script is a defect of
 * the prompt, which the policy turns into a denial naming it.
 *
 * @example
 * ```ts
 * import { PermissionPrompt } from "@dsh/permissions"
 *
 * const Answers = PermissionPrompt.scripted(["yes", "always", "no"])
 * const ByCommand = PermissionPrompt.scripted((request) => (request.arguments.includes("npm test") ? "yes" : "no"))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const scripted = (
  answers: ReadonlyArray<Answer> | ((request: Request) => Answer)
): Layer.Layer<PermissionPrompt | Scripted> =>
  Layer.effectContext(Effect.sync(() => {
    const asked: Array<Request> = []
    const ask = (request: Request): Effect.Effect<Answer> =>
      Effect.suspend(() => {
        asked.push(request)
        if (typeof answers === "function") return Effect.succeed(answers(request))
        const answer = answers[asked.length - 1]
        return answer === undefined
          ? Effect.die(
            new Error(`the scripted permission prompt has no answer for question ${asked.length} (tool ${request.tool})`)
          )
          : Effect.succeed(answer)
      })
    return Context.make(PermissionPrompt, PermissionPrompt.of({ ask })).pipe(
      Context.add(Scripted, Scripted.of({ asked: Effect.sync(() => asked.slice()) }))
    )
  }))
