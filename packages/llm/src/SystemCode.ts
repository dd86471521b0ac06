/**
 * The system's code (`ENOENT`, `EACCES`, `EPIPE`, …) of a failed call, whether it came from
 * `node:fs` or a Node stream directly or from one of effect's platform services (a
 * `PlatformError`, which keeps the system's error as its reason's cause and normalizes its
 * kind into a tag). One reading for every package that reports a failed system call.
 *
 * @since 0.1.0
 */
import * as PlatformError from "effect/PlatformError"
import * as Predicate from "effect/Predicate"

// effect's normalized tags, for a PlatformError whose cause carries no code
const codeOfTag: Readonly<Record<string, string>> = {
  AlreadyExists: "EEXIST",
  BadResource: "EBADF",
  Busy: "EBUSY",
  NotFound: "ENOENT",
  PermissionDenied: "EACCES",
  TimedOut: "ETIMEDOUT",
  WouldBlock: "EAGAIN"
}

/**
 * The system code of a failure: a Node error's `code`, or the one behind a `PlatformError`
 * (its cause's, else the code its tag stands for; `EINVAL` for a bad argument); `undefined`
 * when the failure carries none.
 *
 * @since 0.1.0
 * @category accessors
 */
export const of = (cause: unknown): string | undefined => {
  if (PlatformError.isPlatformError(cause)) {
    const reason = cause.reason
    if (reason._tag === "BadArgument") return "EINVAL"
    return of(reason.cause) ?? codeOfTag[reason._tag]
  }
  if (Predicate.hasProperty(cause, "code") && typeof cause.code === "string" && /^E[A-Z0-9]+$/.test(cause.code)) {
    return cause.code
  }
  return undefined
}
