/**
 * What a turn reports when something inside it failed: the stable code and the message of a
 * typed failure, a harness-error defect (a throwing middleware), or any other defect (a bug,
 * reported as `DEFECT`).
 */
import { HarnessError } from "@dsh/llm"
import { Cause, Option } from "effect"
import { TurnDefectError } from "../LoopError.ts"

/** The code and message of a defect: its own for a harness error, `DEFECT` for anything else. */
export const describeDefect = (defect: unknown): { code: string; message: string } => {
  if (HarnessError.isHarnessError(defect)) return { code: defect.code, message: defect.message }
  const message = defect instanceof Error ? defect.message : String(defect)
  return { code: TurnDefectError.fields.code.schema.literal, message: `unexpected failure: ${message}` }
}

/** The code and message of a failed step's cause (typed failure or defect). */
export const describeCause = (cause: Cause.Cause<unknown>): { code: string; message: string } => {
  const failure = Cause.findErrorOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (HarnessError.isHarnessError(error)) return { code: error.code, message: error.message }
    return describeDefect(error)
  }
  const defect = Cause.findDefect(cause)
  if (defect._tag === "Success") return describeDefect(defect.success)
  return describeDefect(Cause.squash(cause))
}
