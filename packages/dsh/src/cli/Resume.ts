/**
 * `dsh resume [<id>] [<prompt>]`: continues a persisted session, through
 * `JsonlSessions.resume(id)` and `Dsh.agent({ session: { resume: session } })` — in chat, or for
 * one headless turn when a prompt is given. What resuming repaired (a torn last line, a turn a
 * crash left open) is printed on stderr. `dsh resume "<prompt>"` — one argument, with a space,
 * that names no session — is a headless turn on the latest session.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Config from "./Config.ts"
import * as Report from "./Report.ts"
import * as Run from "./Run.ts"
import * as Runtime from "./Runtime.ts"
import * as Store from "./Store.ts"

/**
 * What `dsh resume` takes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Input {
  readonly id: string | undefined
  readonly prompt: string | undefined
  readonly json: boolean
  readonly flags: Config.Flags
}

/**
 * The session and the prompt the arguments name. A lone argument with whitespace in it that is
 * no session's id, nor the start of one, is a prompt for the latest session: the ids dsh makes
 * have no spaces, and a user who types `dsh resume "and in French?"` means the latest.
 *
 * @since 0.1.0
 * @category utils
 */
export const promptForLatest = (directory: string, input: Pick<Input, "id" | "prompt">) =>
  Effect.gen(function*() {
    const { id, prompt } = input
    if (prompt !== undefined || id === undefined || !/\s/.test(id)) return { id, prompt }
    return (yield* Store.names(directory, id)) ? { id, prompt } : { id: undefined, prompt: id }
  })

/**
 * `dsh resume`.
 *
 * @since 0.1.0
 * @category commands
 */
export const command = (input: Input, env: Config.Environment) =>
  Effect.gen(function*() {
    const settings = yield* Config.load(input.flags, env)
    const directory = yield* Store.directoryOf(settings, "dsh resume")
    const args = yield* promptForLatest(directory, input).pipe(Report.reported({ configFile: settings.configFile }))
    const prompt = args.prompt === undefined ? undefined : yield* Run.readPrompt(args.prompt)
    const id = yield* Store.resolveId(directory, args.id).pipe(Report.reported({ configFile: settings.configFile }))
    if (prompt === undefined) {
      const Chat = yield* Effect.promise(() => import("./Chat.ts"))
      return yield* Chat.command({ flags: input.flags, resume: id }, env)
    }
    const apiKey = yield* Config.apiKey(settings)
    yield* Effect.gen(function*() {
      const resumed = yield* Store.open(id)
      const agent = yield* Runtime.agent(settings, { resume: resumed.session })
      const pricing = yield* Runtime.pricing(settings)
      yield* Run.turn(agent, prompt, { json: input.json, from: input.json ? resumed.firstRepair : resumed.end, session: id, pricing })
    }).pipe(
      Effect.scoped,
      Effect.provide(Runtime.layer(settings, Runtime.model(settings, apiKey))),
      Report.reported({ configFile: settings.configFile, baseUrl: settings.baseUrl, model: settings.model, provider: settings.provider })
    )
  })
