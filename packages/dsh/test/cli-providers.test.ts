/**
 * `dsh run --provider …` as a real process against each wire's fake server on 127.0.0.1:
 * OpenAI (its key and base-URL variables), Anthropic (its Messages API), a local Ollama without
 * a key, a profile written in the config file; the configuration errors (a missing key naming
 * the provider's variable, an unknown provider, a local server without a model); a session
 * recorded on one provider resumed on another; and the config file's relative paths, taken
 * from its own directory.
 */
import { FakeServer as AnthropicServer, Fixture as AnthropicFixture } from "@dsh/anthropic/testing"
import { FakeServer as OpenAiServer, Fixture as OpenAiFixture } from "@dsh/openai/testing"
import { describe, expect, it } from "@effect/vitest"
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { dsh, makeHome, messagesOf, server, text, writeConfig } from "./cli-helpers.ts"

// real processes on a shared machine: each test starts the command a few times
const slow = { timeout: 120_000 }

const sessionOf = (stderr: string): string => /session (\S+) \(dsh resume/.exec(stderr)![1]!

const lines = (file: string) => readFileSync(file, "utf8").split("\n").filter((line) => line !== "")

describe("dsh run --provider", slow, () => {
  it("openai: its key and base URL from OPENAI_API_KEY and OPENAI_BASE_URL (not DeepSeek's); the answer, usage and cost", async () => {
    const fake = await OpenAiServer.start(OpenAiFixture.load("openai-text"))
    // DeepSeek's variables point elsewhere: they are not the OpenAI provider's
    const home = makeHome({ OPENAI_API_KEY: "sk-openai", OPENAI_BASE_URL: fake.url, DEEPSEEK_BASE_URL: "http://127.0.0.1:9" })
    const result = await dsh(home, ["run", "--provider", "openai", "Say hello", "--tools", "none"])
    await fake.close()
    expect(result.stdout).toBe("Hello from OpenAI.\n")
    // gpt-5.5 at $5 / $0.50 cached / $30 per million: 128 × 5 + 1,920 × 0.5 + 6 × 30 = $0.00178
    expect(result.stderr).toMatch(
      /^dsh: completed · 1 step · in 2,048 \(cache hit 1,920\) · out 6 \(reasoning 0\) · \$0\.0018 · [\d.]+s · session (\S+) \(dsh resume \1\)\n$/
    )
    expect(result.status).toBe(0)
    const [request] = fake.requests()
    expect(request?.path).toBe("/chat/completions")
    expect(request?.headers["authorization"]).toBe("Bearer sk-openai")
    expect(request?.json).toMatchObject({ model: "gpt-5.5", messages: [{ role: "system" }, { role: "user", content: "Say hello" }] })
  })

  it("anthropic: the Messages API with ANTHROPIC_API_KEY, the catalog's first model and its prices", async () => {
    const fake = await AnthropicServer.start(AnthropicFixture.load("text"))
    const home = makeHome({ ANTHROPIC_API_KEY: "sk-ant-test" })
    const result = await dsh(home, ["run", "Say hello", "--provider", "anthropic", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(result.stdout).toBe("Hello, world!\n")
    expect(result.stderr).toMatch(/^dsh: completed · 1 step · in 12 \(cache hit 0\) · out 4 · \$0\.0001 · [\d.]+s · session \S+/)
    expect(result.status).toBe(0)
    const [request] = fake.requests()
    expect(request?.path).toBe("/v1/messages")
    expect(request?.headers["x-api-key"]).toBe("sk-ant-test")
    expect(request?.headers["authorization"]).toBeUndefined()
    expect(request?.json).toMatchObject({ model: "claude-opus-5-5", stream: true, messages: [{ role: "user" }] })
    expect(JSON.stringify((request?.json as { readonly messages?: unknown } | undefined)?.messages)).toContain("Say hello")
  })

  it("ollama: a local server needs no key, and a model named with --model; without one, CONFIG_INVALID saying to pass it", async () => {
    const fake = await OpenAiServer.start(OpenAiFixture.load("ollama-reasoning"))
    const home = makeHome()
    delete home.env["DEEPSEEK_API_KEY"]
    const missing = await dsh(home, ["run", "Why is the sky blue?", "--provider", "ollama", "--base-url", fake.url, "--tools", "none"])
    expect(missing.stderr).toContain("dsh: CONFIG_INVALID: no model: the ollama profile lists no models")
    expect(missing.stderr).toContain("pass --model <name>")
    expect(missing.status).toBe(2)
    expect(fake.requests()).toHaveLength(0)
    const result = await dsh(home, ["run", "Why is the sky blue?", "--provider", "ollama", "-m", "qwen3:8b", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    // `run` prints the answer, never the reasoning; no prices are known for a local model
    expect(result.stdout).toBe("Blue, by Rayleigh scattering.\n")
    expect(result.stderr).toMatch(/^dsh: completed · 1 step · in 26 \(cache hit 0\) · out 40 · [\d.]+s · session \S+/)
    expect(result.status).toBe(0)
    const [request] = fake.requests()
    expect(request?.headers["authorization"]).toBeUndefined()
    expect(request?.json).toMatchObject({ model: "qwen3:8b" })
  })

  it("no OPENAI_API_KEY: LLM_CONFIG naming the variable and the config file's field, exit 2, no request; a refused key's hint names them too", async () => {
    const fake = await OpenAiServer.start(OpenAiFixture.load("401"))
    const home = makeHome() // DEEPSEEK_API_KEY is set: it is not OpenAI's
    const config = join(home.config, "dsh", "config.json")
    const result = await dsh(home, ["run", "Hi", "--provider", "openai", "--base-url", fake.url])
    expect(fake.requests()).toHaveLength(0)
    expect(result.stderr).toBe(
      "dsh: LLM_CONFIG: No OpenAI API key is configured. Set the OPENAI_API_KEY environment variable (export OPENAI_API_KEY=sk-…), " +
        `or put "providers": { "openai": { "apiKey": "sk-…" } } in ${config}\n`
    )
    expect(result.status).toBe(2)
    const refused = await dsh({ ...home, env: { ...home.env, OPENAI_API_KEY: "sk-wrong" } }, ["run", "Hi", "--provider", "openai", "--base-url", fake.url, "--tools", "none"])
    await fake.close()
    expect(refused.stderr).toContain("dsh: LLM_AUTH: ")
    expect(refused.stderr).toContain(`  the provider refused the API key: check OPENAI_API_KEY (or "providers": { "openai": { "apiKey" } } in ${config})\n`)
    expect(refused.status).toBe(1)
  })

  it("an unknown provider (flag, DSH_PROVIDER): CONFIG_INVALID listing the providers, exit 2", async () => {
    const home = makeHome()
    const flag = await dsh(home, ["run", "Hi", "--provider", "openia"])
    expect(flag.stderr).toBe(
      "dsh: CONFIG_INVALID: --provider: there is no provider named \"openia\" " +
        "(the providers: openai, deepseek, ollama, vllm, llamacpp, lmstudio, openrouter, anthropic)\n"
    )
    expect(flag.status).toBe(2)
    const variable = await dsh({ ...home, env: { ...home.env, DSH_PROVIDER: "claude" } }, ["run", "Hi"])
    expect(variable.stderr).toContain("dsh: CONFIG_INVALID: DSH_PROVIDER: there is no provider named \"claude\"")
    expect(variable.status).toBe(2)
  })

  it("a profile written in the config file: its base URL, path, key variable and models; `provider` as an object", async () => {
    const fake = await server([text("From the gateway."), text("Inline.")])
    const home = makeHome({ MY_GATEWAY_KEY: "sk-gateway" })
    writeConfig(home, {
      provider: "my-gateway",
      tools: "none",
      profiles: [{
        name: "my-gateway",
        displayName: "My Gateway",
        baseUrl: `${fake.url}/api`,
        path: "/v2/chat",
        apiKeyEnv: "MY_GATEWAY_KEY",
        models: [{ name: "house-model", contextWindow: 65_536, pricing: { inputPerMillion: 1, outputPerMillion: 2 } }],
        quirks: { maxTokensField: "max_completion_tokens" }
      }]
    })
    const gateway = await dsh(home, ["run", "Hi"])
    expect(gateway.stdout).toBe("From the gateway.\n")
    expect(gateway.stderr).toMatch(/ · out 1 · <\$0\.0001 · /) // the profile's prices
    expect(gateway.status).toBe(0)
    const [request] = fake.requests()
    expect(request?.path).toBe("/api/v2/chat")
    expect(request?.headers["authorization"]).toBe("Bearer sk-gateway")
    expect(request?.json).toMatchObject({ model: "house-model" })

    const noKey = await dsh({ ...home, env: { ...home.env, MY_GATEWAY_KEY: "" } }, ["run", "Hi"])
    expect(noKey.stderr).toContain("dsh: LLM_CONFIG: No My Gateway API key is configured. Set the MY_GATEWAY_KEY environment variable")
    expect(noKey.stderr).toContain(`"providers": { "my-gateway": { "apiKey": "…" } }`)
    expect(noKey.status).toBe(2)

    // a profile as the provider itself, its key and model in its section of the file
    writeConfig(home, {
      provider: { name: "inline", baseUrl: fake.url, apiKeyRequired: true },
      providers: { inline: { apiKey: "sk-inline", model: "served-model" } },
      tools: "none"
    })
    const inline = await dsh(home, ["run", "Hi"])
    await fake.close()
    expect(inline.stdout).toBe("Inline.\n")
    expect(inline.status).toBe(0)
    expect(fake.requests()[1]?.headers["authorization"]).toBe("Bearer sk-inline")
    expect(fake.requests()[1]?.json).toMatchObject({ model: "served-model" })
  })
})

describe("dsh resume on another provider", slow, () => {
  it("a session recorded on DeepSeek continues on Anthropic: the whole history sent in Anthropic's format, the same file", async () => {
    const home = makeHome({ ANTHROPIC_API_KEY: "sk-ant-test" })
    const deepseek = await server(text("Nice to meet you, Ada."))
    const recorded = await dsh(home, ["run", "My name is Ada.", "--base-url", deepseek.url, "--tools", "none"])
    await deepseek.close()
    expect(recorded.status).toBe(0)
    expect(deepseek.requests()[0]?.json).toMatchObject({ model: "deepseek-v4-flash" })
    const id = sessionOf(recorded.stderr)

    const anthropic = await AnthropicServer.start(AnthropicFixture.text(["You are ", "Ada."]))
    const result = await dsh(home, ["resume", id, "What is my name?", "--provider", "anthropic", "--base-url", anthropic.url, "--tools", "none"])
    await anthropic.close()
    expect(result.stdout).toBe("You are Ada.\n")
    expect(result.stderr).toContain(`session ${id} (dsh resume ${id})`)
    expect(result.status).toBe(0)
    const request = anthropic.requests()[0]?.json as {
      readonly model: string
      readonly system: unknown
      readonly messages: ReadonlyArray<{ readonly role: string; readonly content: ReadonlyArray<{ readonly type: string; readonly text?: string }> }>
    }
    expect(request.model).toBe("claude-opus-5-5")
    expect(request.system).toBeDefined()
    expect(request.messages.map((m) => [m.role, m.content.filter((b) => b.type === "text").map((b) => b.text).join("")])).toStrictEqual([
      ["user", "My name is Ada."],
      ["assistant", "Nice to meet you, Ada."],
      ["user", "What is my name?"]
    ])
    const events = lines(join(home.sessions, `${id}.jsonl`)).map((line) => JSON.parse(line) as { type?: string; data?: { turn?: number } })
    expect(events.filter((e) => e.type === "turn/end").map((e) => e.data?.turn)).toStrictEqual([1, 2])

    // and back on DeepSeek, with the answer Anthropic gave in the history
    const back = await server(text("Still Ada."))
    const again = await dsh(home, ["resume", id, "Sure?", "--base-url", back.url, "--tools", "none"])
    await back.close()
    expect(again.stdout).toBe("Still Ada.\n")
    expect(messagesOf(back.requests()[0]).map((m) => [m.role, m.content])).toStrictEqual([
      ["system", expect.any(String)],
      ["user", "My name is Ada."],
      ["assistant", "Nice to meet you, Ada."],
      ["user", "What is my name?"],
      ["assistant", "You are Ada."],
      ["user", "Sure?"]
    ])
  })
})

describe("the config file's relative paths", slow, () => {
  it("sessions and mcp are taken from the config file's directory; a bad mcp file names the config file's field", async () => {
    const home = makeHome()
    const conf = join(home.root, "conf")
    mkdirSync(conf)
    const file = join(conf, "dsh.json")
    writeFileSync(file, JSON.stringify({ sessions: "kept", mcp: "servers.json", tools: "none" }))
    writeFileSync(join(conf, "servers.json"), JSON.stringify({ mcpServers: {} }))
    const fake = await server(text("Here."))
    // --config relative to the working directory; the file's own paths relative to the file
    const result = await dsh(home, ["run", "Hi", "--config", "../conf/dsh.json", "--base-url", fake.url])
    await fake.close()
    expect(result.stdout).toBe("Here.\n")
    expect(result.status).toBe(0)
    expect(readdirSync(join(conf, "kept")).filter((f) => f.endsWith(".jsonl"))).toStrictEqual([`${sessionOf(result.stderr)}.jsonl`])
    expect(existsSync(join(home.cwd, "kept"))).toBe(false)

    writeFileSync(join(conf, "servers.json"), JSON.stringify({ mcpServers: { broken: {} } }))
    const broken = await dsh(home, ["run", "Hi", "--config", file, "--base-url", "http://127.0.0.1:9"])
    expect(broken.stderr).toContain(`dsh: CONFIG_INVALID: ${file} (mcp): ${join(conf, "servers.json")}: mcpServers.broken`)
    expect(broken.stderr).not.toContain("--mcp")
    expect(broken.status).toBe(2)

    writeFileSync(file, JSON.stringify({ mcp: "missing.json", tools: "none" }))
    const missing = await dsh(home, ["run", "Hi", "--config", file, "--base-url", "http://127.0.0.1:9"])
    expect(missing.stderr).toContain(`dsh: CONFIG_INVALID: ${file} (mcp): ${join(conf, "missing.json")}: the file cannot be read`)
    expect(missing.status).toBe(2)
  })
})
