/**
 * System failures as data: the system's code (`ENOENT`, `EACCES`, …) of a failed call, whether
 * it came from `node:fs` or from effect's FileSystem, and how it reaches the model — a
 * `FileNotFoundError` or a `FileIoError` naming the path the model gave.
 */
import { SystemCode } from "@dsh/llm"
import * as Data from "effect/Data"
import { FileIoError, FileNotFoundError } from "../FileError.ts"

/** A failed system call: its code (`EACCES`) and the original failure. */
export class SystemFailure extends Data.TaggedError("SystemFailure")<{
  readonly systemCode: string
  readonly cause?: unknown
}> {}

/** The system code of a failure (see `SystemCode.of`), `EUNKNOWN` when it carries none. */
export const codeOf = (cause: unknown): string => SystemCode.of(cause) ?? "EUNKNOWN"

/** Any failure of a system call as a {@link SystemFailure}. */
export const failure = (cause: unknown): SystemFailure =>
  cause instanceof SystemFailure ? cause : new SystemFailure({ systemCode: codeOf(cause), cause })

/** A failure made here, with a code of the system's vocabulary. */
export const make = (systemCode: string): SystemFailure => new SystemFailure({ systemCode })

const words: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EISDIR: "it is a directory",
  ENOTDIR: "a part of the path is not a directory",
  ENOSPC: "no space left on the device",
  EDQUOT: "disk quota exceeded",
  EROFS: "the file system is read-only",
  ELOOP: "too many symbolic links",
  ENAMETOOLONG: "a name is too long",
  EMFILE: "too many open files",
  ENFILE: "too many open files in the system",
  EEXIST: "it already exists",
  EBUSY: "it is busy",
  ENOTEMPTY: "the directory is not empty",
  EXDEV: "it is on another device",
  EIO: "an input/output error",
  EINVAL: "an invalid argument",
  ENXIO: "no such device (a socket or a device file)",
  EAGAIN: "it kept changing while it was being used; try again"
}

/** The code in words, for the model: `EACCES (permission denied)`. */
export const explain = (systemCode: string): string => {
  const said = words[systemCode]
  return said === undefined ? systemCode : `${systemCode} (${said})`
}

/**
 * A system failure of an operation on the path the model gave: `ENOENT` is a missing path,
 * anything else a `FileIoError` carrying the code.
 */
export const toFileError = (
  verb: string,
  path: string,
  cause: SystemFailure
): FileNotFoundError | FileIoError =>
  cause.systemCode === "ENOENT"
    ? new FileNotFoundError({ path, message: `${show(path)} does not exist`, cause })
    : new FileIoError({
      path,
      systemCode: cause.systemCode,
      message: `Cannot ${verb} ${show(path)}: ${explain(cause.systemCode)}`,
      cause
    })

/** A path as messages show it: quoted, `.` for the root. */
export const show = (path: string): string => JSON.stringify(path === "" ? "." : path)
