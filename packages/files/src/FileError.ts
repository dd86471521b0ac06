/**
 * The typed failures of the file tools. Each carries a catalog code from `@dsh/llm`, so the
 * tool result the model reads has `error: {tag, code}` and a message written for the model:
 * what went wrong, on which path (as the model gave it), and what to do instead.
 *
 * A path outside the workspace root is not among them: it is refused with the tools layer's
 * `ToolDeniedError` (`TOOL_DENIED`), like any other refusal to run a call.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@dsh/llm"
import * as Schema from "effect/Schema"

/**
 * A path that does not exist (`ENOENT`): the file, or a directory on the way to it.
 *
 * @since 0.1.0
 * @category errors
 */
export class FileNotFoundError extends Schema.TaggedError<FileNotFoundError>()("FileNotFoundError", {
  ...HarnessError.fields("FILE_NOT_FOUND"),
  /** The path as the model gave it. */
  path: Schema.String
}) {}

/**
 * A file operation the system refused or could not complete: permission denied (`EACCES`),
 * a directory where a file was expected (`EISDIR`), a full disk (`ENOSPC`), … `systemCode`
 * is the system's code, `path` the path as the model gave it.
 *
 * @since 0.1.0
 * @category errors
 */
export class FileIoError extends Schema.TaggedError<FileIoError>()("FileIoError", {
  ...HarnessError.fields("FILE_IO"),
  path: Schema.String,
  systemCode: Schema.String
}) {}

/**
 * What made a file binary: it holds a NUL byte, or its bytes are not valid UTF-8.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BinaryReason = Schema.Literals(["nul-byte", "invalid-utf8"])

/**
 * @since 0.1.0
 * @category models
 */
export type BinaryReason = typeof BinaryReason.Type

/**
 * A file the text tools refuse because it is binary (`reason`), with its size in bytes.
 *
 * @since 0.1.0
 * @category errors
 */
export class FileBinaryError extends Schema.TaggedError<FileBinaryError>()("FileBinaryError", {
  ...HarnessError.fields("FILE_BINARY"),
  path: Schema.String,
  size: Schema.Number,
  reason: BinaryReason
}) {}

/**
 * A file larger than what the tool handles at once: `size` and `limit` in bytes. The message
 * says how to read it in ranges of lines.
 *
 * @since 0.1.0
 * @category errors
 */
export class FileTooLargeError extends Schema.TaggedError<FileTooLargeError>()("FileTooLargeError", {
  ...HarnessError.fields("FILE_TOO_LARGE"),
  path: Schema.String,
  size: Schema.Number,
  limit: Schema.Number
}) {}

/**
 * A line of a file, 1-based, with its text (cut when long).
 *
 * @since 0.1.0
 * @category schemas
 */
export const NumberedLine = Schema.Struct({
  line: Schema.Int,
  text: Schema.String
})

/**
 * @since 0.1.0
 * @category models
 */
export interface NumberedLine extends Schema.Schema.Type<typeof NumberedLine> {}

/**
 * An edit whose old text does not occur in the file. `closest` is the line of the file to look
 * at: where the longest start of the old text that the file holds stops matching it (the file's
 * last line when the old text goes on past its end), or, when not even the old text's first
 * line is in the file, the line most like it, when one is close enough to be worth showing.
 *
 * @since 0.1.0
 * @category errors
 */
export class EditNotFoundError extends Schema.TaggedError<EditNotFoundError>()("EditNotFoundError", {
  ...HarnessError.fields("EDIT_NOT_FOUND"),
  path: Schema.String,
  closest: Schema.optionalKey(NumberedLine)
}) {}

/**
 * An edit whose old text occurs `count` times (starting on `lines`, the first ones), so which
 * one to replace is ambiguous.
 *
 * @since 0.1.0
 * @category errors
 */
export class EditAmbiguousError extends Schema.TaggedError<EditAmbiguousError>()("EditAmbiguousError", {
  ...HarnessError.fields("EDIT_AMBIGUOUS"),
  path: Schema.String,
  count: Schema.Int,
  lines: Schema.Array(Schema.Int)
}) {}

/**
 * Any failure of the file tools' own (a refusal is the tools layer's `ToolDeniedError`).
 *
 * @since 0.1.0
 * @category models
 */
export type FileError =
  | FileNotFoundError
  | FileIoError
  | FileBinaryError
  | FileTooLargeError
  | EditNotFoundError
  | EditAmbiguousError

/**
 * The classes of this module, for code that enumerates them (the error-code table test).
 *
 * @since 0.1.0
 * @category schemas
 */
export const classes = [
  FileNotFoundError,
  FileIoError,
  FileBinaryError,
  FileTooLargeError,
  EditNotFoundError,
  EditAmbiguousError
] as const
