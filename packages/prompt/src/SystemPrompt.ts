/**
 * The system prompt: ordered sections (static text, or text computed by an Effect at every
 * assembly) plus the tools the model may call, assembled once per step. Around-middleware over
 * the whole assembly may rewrite it (add a section, hide a tool, translate) or replace it.
 *
 * Sections and middleware are registered in a scope and removed when it closes; registering
 * into a scope that is closed already fails with `ScopeClosedError` and registers nothing. Sections are
 * ordered by `order` (lower first; equal orders in registration order); the agent's own
 * prompt comes after them. Sections are joined with a blank line; an empty section is left out.
 *
 * @since 0.1.0
 */
import { HarnessError, Middleware, type ModelRequest, ScopedList } from "@dsh/llm"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"

/**
 * A section of the system prompt.
 *
 * @since 0.1.0
 * @category models
 */
export interface Section {
  readonly name: string
  readonly order?: number
  /** The text, or an Effect computing it at each assembly (the date, the working directory…). */
  readonly content: string | Effect.Effect<string, HarnessError.HarnessError>
}

/**
 * What an assembly starts from: who is asking and the tools they may call.
 *
 * @since 0.1.0
 * @category models
 */
export interface AssemblyInput {
  /** The agent's own prompt, placed after the sections. */
  readonly agentPrompt?: string
  readonly tools: ReadonlyArray<ModelRequest.ToolSchema>
  /** Who the assembly is for, so middleware can vary by agent or turn. */
  readonly context: AssemblyContext
}

/**
 * @since 0.1.0
 * @category models
 */
export interface AssemblyContext {
  readonly agentId: string
  readonly sessionId: string
  readonly turn: number
  readonly step: number
}

/**
 * The result of an assembly: the system text, the sections it was made of, and the tools.
 *
 * @since 0.1.0
 * @category models
 */
export interface Assembly {
  readonly system: string
  readonly sections: ReadonlyArray<{ readonly name: string; readonly text: string }>
  readonly tools: ReadonlyArray<ModelRequest.ToolSchema>
}

/**
 * A section's Effect failed or died.
 *
 * @since 0.1.0
 * @category errors
 */
export class PromptSectionError extends Schema.TaggedError<PromptSectionError>()("PromptSectionError", {
  ...HarnessError.fields("PROMPT_SECTION"),
  section: Schema.String
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [PromptSectionError] as const

/**
 * The output of an assembly, as middleware sees it.
 *
 * @since 0.1.0
 * @category models
 */
export type AssemblyEffect = Effect.Effect<Assembly, PromptSectionError>

/**
 * A middleware around the assembly.
 *
 * @since 0.1.0
 * @category models
 */
export type AssemblyMiddleware = Middleware.Middleware<AssemblyInput, AssemblyEffect>

// What a section is called in a failure: its name, or what stands in its place.
const nameOf = (section: unknown): string => {
  const name: unknown = typeof section === "object" && section !== null ? (section as { name?: unknown }).name : undefined
  return typeof name === "string" ? name : HarnessError.describe(name ?? section)
}

// Why a section is not `{ name, content }`, if it is not (possible past the types).
const shapeProblem = (section: unknown): string | undefined => {
  if (typeof section !== "object" || section === null) {
    const shown = typeof section === "string" ? JSON.stringify(section) : HarnessError.describe(section)
    return `it is ${shown}, not a section { name, content }`
  }
  const { name } = section as { name?: unknown }
  return typeof name === "string" ? undefined : `its name is ${HarnessError.describe(name)}, not a string`
}

// A well-formed section whose content is text: it renders as itself.
const isPlainText = (section: Section): boolean => {
  try {
    return shapeProblem(section) === undefined && typeof section.content === "string"
  } catch {
    // a `content` getter that throws: rendering the section reports it
    return false
  }
}
const plainText = (section: Section): RenderedSection => ({ name: section.name, text: section.content as string })

type RenderedSection = Assembly["sections"][number]

// A section's place: its order when that is a number, else 0 (a malformed one fails at assembly).
const orderOf = (section: unknown): number | undefined => {
  const order: unknown = typeof section === "object" && section !== null ? (section as { order?: unknown }).order : undefined
  return typeof order === "number" && !Number.isNaN(order) ? order : undefined
}

/**
 * @since 0.1.0
 * @category services
 */
export class SystemPrompt extends Context.Service<SystemPrompt, {
  /**
   * Adds a section until the current scope closes. Fails with `ScopeClosedError`, adding
   * nothing, when the current scope is closed already.
   */
  readonly addSection: (section: Section) => Effect.Effect<void, ScopedList.ScopeClosedError, Scope.Scope>
  /**
   * Registers a middleware around the assembly until the current scope closes. Fails with
   * `ScopeClosedError`, registering nothing, when the current scope is closed already.
   */
  readonly use: (middleware: AssemblyMiddleware) => Effect.Effect<void, ScopedList.ScopeClosedError, Scope.Scope>
  /** Assembles the system prompt for one step. */
  readonly assemble: (input: AssemblyInput) => AssemblyEffect
  /** The assembly middleware registered now, outermost first (errors name them). */
  readonly middleware: () => ReadonlyArray<AssemblyMiddleware>
}>()("@dsh/prompt/SystemPrompt") {
  /**
   * An empty system prompt.
   *
   * @since 0.1.0
   */
  static readonly layer: Layer.Layer<SystemPrompt> = Layer.sync(SystemPrompt, () => {
    const sections = ScopedList.make<Section>({ describe: (section) => `prompt section ${JSON.stringify(nameOf(section))}` })
    const chain = Middleware.makeEffect<AssemblyInput, Assembly, PromptSectionError>({ seam: "prompt assembly" })

    const misbehaved = (section: Section, why: string, cause?: unknown) =>
      new PromptSectionError({
        message: `prompt section ${JSON.stringify(nameOf(section))} failed: ${why}`,
        section: nameOf(section),
        ...(cause === undefined ? {} : { cause })
      })

    // A section comes from outside the types (a config, a plugin): a section that is no
    // `{ name, content }`, or content that is neither a string nor an Effect of one, is the
    // section's failure, not a dead assembly.
    const render = (section: Section): Effect.Effect<string, PromptSectionError> => {
      const shape = shapeProblem(section)
      if (shape !== undefined) return Effect.fail(misbehaved(section, shape))
      let content: unknown
      try {
        content = section.content
      } catch (error) {
        return Effect.fail(misbehaved(section, `reading its content threw: ${HarnessError.describe(error)}`, error))
      }
      if (typeof content === "string") return Effect.succeed(content)
      if (!Effect.isEffect(content)) {
        return Effect.fail(misbehaved(section, `its content is ${HarnessError.describe(content)}, neither a string nor an Effect`))
      }
      return (content as Effect.Effect<unknown, unknown>).pipe(
        Effect.catchCause((cause) =>
          // an interruption (an abort of the step) is not the section's failure
          Cause.hasInterruptsOnly(cause)
            ? Effect.interrupt
            : Effect.fail(misbehaved(section, HarnessError.describe(Cause.squash(cause)), cause))
        ),
        Effect.flatMap((text) =>
          typeof text === "string"
            ? Effect.succeed(text)
            : Effect.fail(misbehaved(section, `its Effect produced ${HarnessError.describe(text)}, not a string`))
        )
      )
    }

    const join = (input: AssemblyInput, rendered: ReadonlyArray<RenderedSection>): Assembly => {
      const parts = input.agentPrompt === undefined ? rendered : [...rendered, { name: "agent", text: input.agentPrompt }]
      const kept = parts.filter((p) => p.text.trim() !== "")
      return { system: kept.map((p) => p.text).join("\n\n"), sections: kept, tools: input.tools }
    }

    // Sections of plain text (the usual case) are joined at once, without an Effect per section.
    const base = (input: AssemblyInput): AssemblyEffect =>
      Effect.suspend(() => {
        const current = sections.current()
        if (current.every(isPlainText)) return Effect.succeed(join(input, current.map(plainText)))
        return Effect.map(
          Effect.forEach(current, (section) => Effect.map(render(section), (text) => ({ name: section.name, text }))),
          (rendered) => join(input, rendered)
        )
      })

    return SystemPrompt.of({
      addSection: (section) => sections.add(section, orderOf(section)),
      use: chain.register,
      middleware: chain.current,
      assemble: (input) =>
        chain.apply(input, base).pipe(
          Effect.withSpan(
            "SystemPrompt.assemble",
            { attributes: { "dsh.session": input.context.sessionId, "dsh.turn": input.context.turn, "dsh.step": input.context.step } },
            // the caller is the agent loop's step, whose span says where: not worth an Error per step
            { captureStackTrace: false }
          )
        )
    })
  })
}

