import { ErrorCode, LlmError, Middleware, ScopedList } from "@dsh/llm"
import { ModelErrors } from "@dsh/model"
import { AnthropicError } from "@dsh/anthropic"
import { Agent, TurnResult } from "@dsh/agent"
import { BashErrors } from "@dsh/bash"
import { ClusterErrors } from "@dsh/cluster"
import { DeepSeekError } from "@dsh/deepseek"
import { ConfigInvalidError } from "dsh"
import { OpenAiError } from "@dsh/openai"
import { FileErrors } from "@dsh/files"
import { InvariantErrors } from "@dsh/invariants"
import { McpErrors } from "@dsh/mcp"
import { PermissionErrors } from "@dsh/permissions"
import { Prompt } from "@dsh/prompt"
import { SessionErrors } from "@dsh/session"
import { Replay } from "@dsh/testing"
import { ToolErrors } from "@dsh/tools"
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { codesInSources, docPath, render, renderTable } from "../errors-doc.ts"

// Every error class the packages export; a new package adds its classes here.
const classes: ReadonlyArray<{ readonly fields: { readonly code: { readonly schema: { readonly literal: unknown } } } }> = [
  ...LlmError.classes,
  Middleware.MiddlewareError,
  ScopedList.ScopeClosedError,
  ...ModelErrors.classes,
  ...SessionErrors.classes,
  ...Prompt.classes,
  ...ToolErrors.classes,
  ...BashErrors.classes,
  ...FileErrors.classes,
  ...Agent.classes,
  ...TurnResult.classes,
  ...McpErrors.classes,
  ...PermissionErrors.classes,
  ...AnthropicError.classes,
  ...DeepSeekError.classes,
  ...OpenAiError.classes,
  ...InvariantErrors.classes,
  ...Replay.classes,
  ...ClusterErrors.classes,
  ConfigInvalidError
]

describe("docs/errors.md", () => {
  it("holds exactly the table the catalog renders", () => {
    const doc = readFileSync(docPath, "utf8")
    expect(doc).toContain(renderTable())
    expect(render(doc)).toBe(doc)
  })

  it("lists each code once", () => {
    const rows = readFileSync(docPath, "utf8").split("\n").filter((line) => /^\| `[A-Z_]+` \|/.test(line))
    const codes = rows.map((row) => /^\| `([A-Z_]+)`/.exec(row)![1])
    expect(codes).toStrictEqual([...ErrorCode.codes])
  })

  it("every error class in the sources uses a catalog code, and every catalog code has a class", () => {
    const used = codesInSources()
    const unknown = used.filter(({ code }) => !ErrorCode.codes.includes(code as ErrorCode.ErrorCode))
    expect(unknown).toStrictEqual([])
    const unused = ErrorCode.codes.filter((code) => !used.some((u) => u.code === code))
    expect(unused).toStrictEqual([])
  })

  it("the exported error classes carry the codes their sources declare", () => {
    const declared = new Set(codesInSources().map((u) => u.code))
    for (const errorClass of classes) {
      expect(declared.has(String(errorClass.fields.code.schema.literal))).toBe(true)
    }
    expect(new Set(classes.map((c) => c.fields.code.schema.literal))).toStrictEqual(declared)
  })
})
