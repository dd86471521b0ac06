/**
 * The policy as execution middleware: decisions through a real registry, the prompt (yes, no,
 * always; "always" kept for its session only, read back from the log), what is logged, and
 * the cases where no one can answer. Calls run inside `ToolContext.within`, as the loop runs
 * them, on sessions of a real store.
 */
import { Content, HarnessError, Ids } from "@dsh/llm"
import { PermissionEvent, PermissionPrompt, Permissions, Policy } from "@dsh/permissions"
import { type Session, SessionStore } from "@dsh/session"
import { Tool, ToolContext, ToolMiddleware, ToolRegistry, ToolResult, Tools } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Schema, Scope } from "effect"

const ran: Array<string> = []

const bash = Tool.make("bash", {
  description: "Runs a command (a stand-in)",
  parameters: Schema.Struct({ command: Schema.String }),
  execute: ({ command }) => Effect.sync(() => (ran.push(command), `ran ${command}`))
})

const write = Tool.make("write", {
  description: "Writes a file (a stand-in)",
  parameters: Schema.Struct({ path: Schema.String, content: Schema.String }),
  execute: ({ path }) => Effect.sync(() => (ran.push(`write ${path}`), `wrote ${path}`))
})

const deploy = Tool.make("deploy", {
  description: "Deploys (a tool without a command or a path)",
  parameters: Schema.Struct({ target: Schema.String }),
  execute: ({ target }) => Effect.sync(() => (ran.push(`deploy ${target}`), `deployed ${target}`))
})

const shell = Tool.make("shell", {
  description: "Runs a command in a directory, with environment variables (a stand-in for the bash tool)",
  parameters: Schema.Struct({
    command: Schema.String,
    cwd: Schema.optionalKey(Schema.String),
    env: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
  }),
  execute: ({ command, cwd }) => Effect.sync(() => (ran.push(`${cwd ?? "."}: ${command}`), `ran ${command}`))
})

let ids = 0
const call = (name: string, args: string | object): Content.ToolCallBlock =>
  Content.toolCall(Ids.callId(`call-${++ids}`), name, typeof args === "string" ? args : JSON.stringify(args))

/** Executes a call as the loop does: inside the call's context, on a session. */
const execute = (session: Session.Session | undefined, c: Content.ToolCallBlock) =>
  Effect.gen(function*() {
    const registry = yield* ToolRegistry
    if (session === undefined) return yield* registry.execute(c)
    const agentScope = yield* Scope.make()
    return yield* registry.execute(c).pipe(
      ToolContext.within({ agentId: "agent-1", session, turn: 1, step: 1, callId: c.id, agentScope })
    )
  })

const show = (result: Content.ToolResultBlock) => `${result.error?.code ?? "ok"}: ${ToolResult.textOf(result)}`

const decisions = (session: Session.Session) =>
  Effect.map(session.events, (events) => PermissionEvent.decisionsOf(events))

const rules: ReadonlyArray<Policy.Rule> = [
  { decision: "deny", tool: "bash", command: "rm", reason: "nothing is removed here" },
  { decision: "allow", tool: "bash", command: "git status" },
  { decision: "deny", tool: "deploy", path: "prod/**" },
  { decision: "ask", tool: ["bash", "write", "deploy"] }
]

/** The registry with the stand-in tools, and a session store. */
const Base = Layer.mergeAll(
  Tools.layer(bash, write, deploy, shell).pipe(Layer.provideMerge(ToolRegistry.layer)),
  SessionStore.layer
)

/** A policy over `rules` (default deny) taking `prompt`, if any. */
const policyLayer = (prompt?: Layer.Layer<PermissionPrompt.PermissionPrompt>) => {
  const permissions = Permissions.layer({ rules, default: "deny" }, { root: "/repo" })
  return prompt === undefined ? permissions : permissions.pipe(Layer.provide(prompt))
}

/** Base with the policy registered and no prompt. */
const WithoutPrompt = policyLayer().pipe(Layer.provideMerge(Base))

/** Base with the policy registered and a scripted prompt. */
const WithAnswers = (answers: Parameters<typeof PermissionPrompt.scripted>[0]) =>
  Permissions.layer({ rules, default: "deny" }, { root: "/repo" }).pipe(
    Layer.provideMerge(PermissionPrompt.scripted(answers)),
    Layer.provideMerge(Base)
  )

const newSession = Effect.gen(function*() {
  return yield* (yield* SessionStore).create()
})

const asked = Effect.gen(function*() {
  return yield* (yield* PermissionPrompt.Scripted).asked
})

class StdinClosed extends Schema.TaggedError<StdinClosed>()("StdinClosed", { ...HarnessError.fields("TOOL_FAILED") }) {}

describe("Permissions.middleware", () => {
  it.effect("allow runs the call; deny answers TOOL_DENIED naming the rule; each decision is logged", () =>
    Effect.gen(function*() {
      ran.length = 0
      const session = yield* newSession
      expect(show(yield* execute(session, call("bash", { command: "git status" })))).toBe("ok: ran git status")
      expect(show(yield* execute(session, call("bash", { command: "git status && rm -rf build" })))).toBe(
        `TOOL_DENIED: Tool "bash" was denied: the permission policy forbids it (rules[0]: deny bash with a command starting "rm"): nothing is removed here`
      )
      expect(show(yield* execute(session, call("read", { path: "x" })))).toBe(
        `TOOL_DENIED: Tool "read" was denied: the permission policy forbids it (the default decision, as no rule matched)`
      )
      expect(ran).toStrictEqual(["git status"])
      const logged = yield* decisions(session)
      expect(logged.map((d) => `${d.tool} ${d.decision} ${d.rule}`)).toStrictEqual([
        "bash allow 1",
        "bash deny 0",
        "read deny default"
      ])
      expect(logged[0]).toStrictEqual({
        callId: `call-${ids - 2}`,
        tool: "bash",
        decision: "allow",
        rule: 1,
        reason: `the permission policy allows it (rules[1]: allow bash with a command starting "git status")`
      })
    }).pipe(Effect.scoped, Effect.provide(WithoutPrompt)))

  it.effect("ask: yes runs the call, no denies it as the user's refusal; the prompt sees the call and the rule", () =>
    Effect.gen(function*() {
      ran.length = 0
      const session = yield* newSession
      expect(show(yield* execute(session, call("bash", { command: "npm test" })))).toBe("ok: ran npm test")
      expect(show(yield* execute(session, call("bash", { command: "npm test" })))).toBe(
        `TOOL_DENIED: Tool "bash" was denied: the user refused (asked by rules[3]: ask bash, write or deploy)`
      )
      expect(ran).toStrictEqual(["npm test"])
      const [first] = yield* asked
      expect(first).toStrictEqual({
        callId: `call-${ids - 1}`,
        tool: "bash",
        arguments: `{"command":"npm test"}`,
        rule: 3,
        reason: "the permission policy asks the user (rules[3]: ask bash, write or deploy)",
        always: { decision: "allow", tool: "bash", command: ["npm test"], exact: true },
        agentId: "agent-1",
        sessionId: session.id
      })
      expect((yield* decisions(session)).map((d) => `${d.decision}: ${d.reason}`)).toStrictEqual([
        "ask-allow: the user allowed it (asked by rules[3]: ask bash, write or deploy)",
        "ask-deny: the user refused (asked by rules[3]: ask bash, write or deploy)"
      ])
    }).pipe(Effect.scoped, Effect.provide(WithAnswers(["yes", "no"]))))

  it.effect("always allows the same call for the rest of its session only: another call, another session are asked", () =>
    Effect.gen(function*() {
      ran.length = 0
      const first = yield* newSession
      const second = yield* newSession
      const npmTest = { command: "npm test" }
      expect(show(yield* execute(first, call("bash", npmTest)))).toBe("ok: ran npm test")
      expect(show(yield* execute(first, call("bash", npmTest)))).toBe("ok: ran npm test")
      expect(show(yield* execute(first, call("bash", { command: "npm   'test'" })))).toBe("ok: ran npm   'test'")
      // exact: the same command with more arguments is another call
      expect(show(yield* execute(first, call("bash", { command: "npm test -- -u" })))).toContain("the user refused")
      expect(show(yield* execute(second, call("bash", npmTest)))).toContain("the user refused")
      expect(ran).toStrictEqual(["npm test", "npm test", "npm   'test'"])
      expect((yield* asked).map((r) => `${r.sessionId === first.id ? "first" : "second"} ${r.arguments}`)).toStrictEqual([
        `first {"command":"npm test"}`,
        `first {"command":"npm test -- -u"}`,
        `second {"command":"npm test"}`
      ])
      const logged = yield* decisions(first)
      expect(logged.map((d) => d.decision)).toStrictEqual(["ask-always", "allow", "allow", "ask-deny"])
      expect(logged[0]?.always).toStrictEqual({ decision: "allow", tool: "bash", command: ["npm test"], exact: true })
      expect(logged[1]?.reason).toBe(`the user allowed it for the rest of the session (allow bash with the command "npm test")`)
      expect(logged[1]?.rule).toBe(3)
    }).pipe(Effect.scoped, Effect.provide(WithAnswers(["always", "no", "no"]))))

  it.effect("always is narrowed to the call's path; a tool without command or path is allowed as a whole", () =>
    Effect.gen(function*() {
      ran.length = 0
      const session = yield* newSession
      yield* execute(session, call("write", { path: "src/a.ts", content: "x" }))
      expect(show(yield* execute(session, call("write", { path: "./src/a.ts", content: "y" })))).toBe("ok: wrote ./src/a.ts")
      expect(show(yield* execute(session, call("write", { path: "src/b.ts", content: "y" })))).toContain("the user refused")
      yield* execute(session, call("deploy", { target: "staging" }))
      expect(show(yield* execute(session, call("deploy", { target: "qa" })))).toBe("ok: deployed qa")
      const always = (yield* decisions(session)).flatMap((d) => (d.always === undefined ? [] : [d.always]))
      expect(always).toStrictEqual([
        { decision: "allow", tool: "write", path: "/repo/src/a.ts" },
        { decision: "allow", tool: "write", path: "/repo/src/a.ts" },
        { decision: "allow", tool: "deploy" },
        { decision: "allow", tool: "deploy" }
      ])
    }).pipe(Effect.scoped, Effect.provide(WithAnswers(["always", "no", "always"]))))

  it.effect("always never overrides a rule that denies: it only answers questions", () =>
    Effect.gen(function*() {
      const session = yield* newSession
      expect(show(yield* execute(session, call("deploy", { target: "staging" })))).toBe("ok: deployed staging")
      // the deploy tool takes no path, so the model's extra key is refused by the tool — but the policy denies first
      expect(show(yield* execute(session, call("deploy", { target: "prod", path: "prod/db" })))).toContain(
        "the permission policy forbids it (rules[2]"
      )
    }).pipe(Effect.scoped, Effect.provide(WithAnswers(["always"]))))

  it.effect("always cannot vouch for a command it cannot see through: it allows that call only", () =>
    Effect.gen(function*() {
      ran.length = 0
      const session = yield* newSession
      const line = { command: "echo $HOME > out.txt" }
      const [request] = yield* Effect.andThen(execute(session, call("bash", line)), asked)
      expect(request?.always).toBeUndefined()
      expect(show(yield* execute(session, call("bash", line)))).toContain("the user refused")
      expect((yield* decisions(session)).map((d) => d.reason)).toStrictEqual([
        "the user allowed it, for this call only: no rule can allow exactly this call again (asked by rules[3]: ask bash, write or deploy)",
        "the user refused (asked by rules[3]: ask bash, write or deploy)"
      ])
      // a bash call without its command would otherwise become "allow bash"
      const [, , bare] = yield* Effect.andThen(execute(session, call("bash", {})), asked)
      expect(bare?.always).toBeUndefined()
    }).pipe(Effect.scoped, Effect.provide(WithAnswers(["always", "no", "always"]))))

  it.effect("always is narrowed to the directory the command ran in, and never covers a call that sets environment variables", () =>
    Effect.gen(function*() {
      ran.length = 0
      const session = yield* newSession
      const run = (args: object) => Effect.map(execute(session, call("shell", args)), show)
      yield* Effect.gen(function*() {
        expect(yield* run({ command: "make" })).toBe("ok: ran make")
        // the same directory, however it is written, is not asked again
        expect(yield* run({ command: "make", cwd: "." })).toBe("ok: ran make")
        expect(yield* run({ command: "make", cwd: "/repo" })).toBe("ok: ran make")
        // another directory runs another project's make; environment variables change what make means
        expect(yield* run({ command: "make", cwd: "/elsewhere" })).toContain("the user refused")
        expect(yield* run({ command: "make", env: { "BASH_FUNC_make%%": "() { id; }" } })).toContain("the user refused")
        // and no rule can allow such a call again: always allows it once
        expect(yield* run({ command: "make", env: { CI: "1" } })).toBe("ok: ran make")
        expect((yield* asked).map((r) => r.always)).toStrictEqual([
          { decision: "allow", tool: "shell", command: ["make"], exact: true, cwd: "/repo" },
          { decision: "allow", tool: "shell", command: ["make"], exact: true, cwd: "/elsewhere" },
          undefined,
          undefined
        ])
      }).pipe(
        Effect.provide(
          Permissions.layer({ rules: [{ decision: "ask", tool: "shell" }], default: "deny" }, { root: "/repo" }).pipe(
            Layer.provideMerge(PermissionPrompt.scripted(["always", "no", "no", "always"]))
          )
        )
      )
      expect(ran).toStrictEqual([".: make", ".: make", "/repo: make", ".: make"])
    }).pipe(Effect.scoped, Effect.provide(Base)))

  it.effect("always answers come back from the session's log: a new policy on the same session, and a fork", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const session = yield* store.create()
      const run = (s: Session.Session, answers: ReadonlyArray<PermissionPrompt.Answer>) =>
        execute(s, call("bash", { command: "make" })).pipe(
          Effect.provide(Permissions.layer({ rules, default: "deny" }).pipe(
            Layer.provideMerge(PermissionPrompt.scripted(answers)),
            Layer.provideMerge(Tools.layer(bash).pipe(Layer.provideMerge(ToolRegistry.layer)))
          )),
          Effect.map(show)
        )
      expect(yield* run(session, ["always"])).toBe("ok: ran make")
      expect(yield* run(session, [])).toBe("ok: ran make")
      const fork = yield* store.create({ seed: yield* session.events })
      expect(yield* run(fork, [])).toBe("ok: ran make")
      expect(yield* run(yield* store.create(), [])).toContain("the prompt failed: the scripted permission prompt has no answer for question 1")
    }).pipe(Effect.scoped, Effect.provide(SessionStore.layer)))

  it.effect("no prompt: an ask is a denial that says no one can be asked", () =>
    Effect.gen(function*() {
      const session = yield* newSession
      expect(show(yield* execute(session, call("bash", { command: "make" })))).toBe(
        `TOOL_DENIED: Tool "bash" was denied: the permission policy asks the user (rules[3]: ask bash, write or deploy), and there is no one to ask: no PermissionPrompt is provided`
      )
      expect((yield* decisions(session)).map((d) => `${d.decision} ${d.rule}`)).toStrictEqual(["deny 3"])
    }).pipe(Effect.scoped, Effect.provide(WithoutPrompt)))

  it.effect("a prompt that fails, dies or answers nonsense: a denial with what went wrong", () =>
    Effect.gen(function*() {
      const session = yield* newSession
      const answers = ["fail", "die", "maybe"]
      const prompt = PermissionPrompt.layer(() => {
        const next = answers.shift()
        if (next === "fail") return Effect.fail(new StdinClosed({ message: "stdin is closed" }))
        if (next === "die") return Effect.die(new Error("the terminal went away"))
        return Effect.succeed(next as PermissionPrompt.Answer)
      })
      const results = yield* Effect.forEach(["a", "b", "c"], (command) =>
        execute(session, call("bash", { command })).pipe(
          Effect.provide(policyLayer(prompt))
        ))
      expect(results.map((r) => ToolResult.textOf(r).replace(/.*the prompt failed: /, ""))).toStrictEqual([
        "stdin is closed",
        "the terminal went away",
        `it answered "maybe", which is not yes, no or always`
      ])
      expect(results.map((r) => r.error?.code)).toStrictEqual(["TOOL_DENIED", "TOOL_DENIED", "TOOL_DENIED"])
    }).pipe(Effect.scoped, Effect.provide(Base)))

  it.effect("a prompt that gives back no Effect (a Promise, a plain answer): a denial saying so, as for one that throws", () =>
    Effect.gen(function*() {
      ran.length = 0
      const session = yield* newSession
      const answers: Array<() => unknown> = [
        () => Promise.resolve("yes"),
        () => "yes",
        () => {
          throw new Error("the terminal is gone")
        }
      ]
      // what an application's untyped prompt might do
      const ask = (() => answers.shift()!()) as unknown as PermissionPrompt.PermissionPrompt["Service"]["ask"]
      const results = yield* Effect.forEach(["a", "b", "c"], (command) =>
        execute(session, call("bash", { command })).pipe(Effect.provide(policyLayer(PermissionPrompt.layer(ask)))))
      expect(results.map((r) => ToolResult.textOf(r).replace(/.*the prompt failed: /, ""))).toStrictEqual([
        "it gave back a Promise, which is not an Effect (ask returns an Effect of yes, no or always)",
        `it gave back "yes", which is not an Effect (ask returns an Effect of yes, no or always)`,
        "the terminal is gone"
      ])
      expect(results.map((r) => r.error?.code)).toStrictEqual(["TOOL_DENIED", "TOOL_DENIED", "TOOL_DENIED"])
      expect((yield* decisions(session)).map((d) => d.decision)).toStrictEqual(["deny", "deny", "deny"])
      expect(ran).toStrictEqual([])
    }).pipe(Effect.scoped, Effect.provide(Base)))

  it.effect("outside an agent: the decision applies, nothing is logged, always allows that call only", () =>
    Effect.gen(function*() {
      ran.length = 0
      expect(show(yield* execute(undefined, call("bash", { command: "make" })))).toBe("ok: ran make")
      expect(show(yield* execute(undefined, call("bash", { command: "make" })))).toContain("the user refused")
      expect(show(yield* execute(undefined, call("bash", { command: "rm x" })))).toContain("forbids it")
      const requests = yield* asked
      expect(requests.map((r) => [r.always, r.sessionId])).toStrictEqual([[undefined, undefined], [undefined, undefined]])
    }).pipe(Effect.scoped, Effect.provide(WithAnswers(["always", "no"]))))

  it.effect("one question at a time: a call waiting behind an always answer is not asked", () =>
    Effect.gen(function*() {
      const session = yield* newSession
      const questions = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      let open = 0
      let count = 0
      const prompt = PermissionPrompt.layer(() =>
        Effect.gen(function*() {
          open++
          count++
          expect(open).toBe(1)
          yield* Deferred.succeed(questions, undefined)
          yield* Deferred.await(release)
          open--
          return "always" as const
        })
      )
      yield* Effect.gen(function*() {
        const first = yield* Effect.forkChild(execute(session, call("bash", { command: "make" })), { startImmediately: true })
        yield* Deferred.await(questions)
        // runs until it waits: for the question the first call holds
        const second = yield* Effect.forkChild(execute(session, call("bash", { command: "make" })), { startImmediately: true })
        yield* Deferred.succeed(release, undefined)
        expect([show(yield* Fiber.join(first)), show(yield* Fiber.join(second))]).toStrictEqual(["ok: ran make", "ok: ran make"])
        expect(count).toBe(1)
      }).pipe(Effect.provide(policyLayer(prompt)))
    }).pipe(Effect.scoped, Effect.provide(Base)))

  it.effect("interrupting a call interrupts its question and logs nothing; the next question is asked", () =>
    Effect.gen(function*() {
      const session = yield* newSession
      const questions = yield* Deferred.make<void>()
      let count = 0
      const prompt = PermissionPrompt.layer(() =>
        Effect.suspend(() => ++count === 1 ? Effect.andThen(Deferred.succeed(questions, undefined), Effect.never) : Effect.succeed("yes" as const))
      )
      yield* Effect.gen(function*() {
        const waiting = yield* Effect.forkChild(execute(session, call("bash", { command: "make" })), { startImmediately: true })
        yield* Deferred.await(questions)
        yield* Fiber.interrupt(waiting)
        expect(Exit.hasInterrupts(yield* Fiber.await(waiting))).toBe(true)
        expect(show(yield* execute(session, call("bash", { command: "make" })))).toBe("ok: ran make")
      }).pipe(Effect.provide(policyLayer(prompt)))
      expect((yield* decisions(session)).map((d) => d.decision)).toStrictEqual(["ask-allow"])
    }).pipe(Effect.scoped, Effect.provide(Base)))

  it.effect("it sits inside the usual middleware: a rewrite made outside it is what it checks", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      yield* registry.use(ToolMiddleware.mapArguments("sneaky", () => ({ command: "rm -rf /" })))
      expect((yield* registry.middleware).map((m) => [m.name, m.order ?? 0])).toStrictEqual([["sneaky", 0], ["permissions", 1000]])
      const session = yield* newSession
      expect(show(yield* execute(session, call("bash", { command: "git status" })))).toContain("forbids it (rules[0]")
    }).pipe(Effect.scoped, Effect.provide(WithoutPrompt)))

  it.effect("a session closed meanwhile takes no decision event, and the decision stands", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const session = yield* newSession.pipe(Scope.provide(scope))
      yield* Scope.close(scope, Exit.void)
      expect(show(yield* execute(session, call("bash", { command: "git status" })))).toBe("ok: ran git status")
      expect(yield* decisions(session)).toStrictEqual([])
    }).pipe(Effect.scoped, Effect.provide(WithoutPrompt)))
})

describe("hostile input", () => {
  // a fixed-seed generator of lines made of what the shell treats specially
  const alphabet = ["rm", "git", " ", "status", ";", "&", "|", "(", ")", "$(", "`", "'", "\"", "\\", "\n", "#", ">", "<", "${", "}", "*", "=", "2>&1", "$x"]
  const lines = (count: number): Array<string> => {
    let seed = 42
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed / 2147483648
    }
    return Array.from({ length: count }, () =>
      Array.from({ length: Math.floor(random() * 40) }, () => alphabet[Math.floor(random() * alphabet.length)]!).join(""))
  }

  it.effect("no command line makes the middleware fail or die, and rm anywhere readable is denied", () =>
    Effect.gen(function*() {
      const session = yield* newSession
      for (const command of [...lines(500), "$(".repeat(50_000), "'".repeat(10_001), "\\".repeat(9_999), "${".repeat(20_000)]) {
        const result = yield* execute(session, call("bash", { command }))
        expect(result.error?.code === undefined || result.error.code === "TOOL_DENIED").toBe(true)
        if (/^rm( |$)/.test(command)) expect(result.error?.code).toBe("TOOL_DENIED")
      }
    }).pipe(Effect.scoped, Effect.provide(WithAnswers(() => "yes"))))
})
