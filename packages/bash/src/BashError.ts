/**
 * The typed failures of the bash capability. A command that runs and exits non-zero is not
 * one of them: its exit status is part of its result, for the model to read. A command that
 * outlives its timeout fails with `@dsh/tools`' `ToolTimeoutError` (`TOOL_TIMEOUT`), after its
 * process group was killed.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import * as Schema from "effect/Schema"

/**
 * A command could not be started or watched: the shell is missing, the working directory does
 * not exist or is not a directory, the command or a variable holds a NUL character, a variable's
 * name is empty or holds `=`, an option got past the types (a command that is not a string, a
 * timeout that is no duration above zero), spawning failed. The message says which, naming the
 * command's working directory. `BashLocal`'s Layer fails with it too, for settings that cannot
 * be used (`command` is then empty).
 *
 * @since 0.1.0
 * @category errors
 */
export class CommandFailedError extends Schema.TaggedError<CommandFailedError>()("CommandFailedError", {
  ...HarnessError.fields("COMMAND_FAILED"),
  command: Schema.String,
  cwd: Schema.String
}) {}

/**
 * No background job of the caller (the agent whose call asks, or the layer outside an agent)
 * has this id. `known` lists the ids the caller has.
 *
 * @since 0.1.0
 * @category errors
 */
export class JobNotFoundError extends Schema.TaggedError<JobNotFoundError>()("JobNotFoundError", {
  ...HarnessError.fields("JOB_NOT_FOUND"),
  jobId: Schema.String,
  known: Schema.Array(Schema.String)
}) {}

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [CommandFailedError, JobNotFoundError] as const
