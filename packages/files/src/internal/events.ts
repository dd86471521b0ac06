/**
 * What the file tools record in the agent's session: each file they change, as a
 * `files:changed` event, so a UI can show what changed and where without parsing tool results.
 */
import { SessionEvent } from "@dsh/session"
import { ToolContext } from "@dsh/tools"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** The data of a `files:changed` event. */
export interface ChangedData {
  /** The call that changed the file. */
  readonly callId: string
  readonly tool: "write" | "edit"
  /** Root-relative, symbolic links resolved. */
  readonly path: string
  readonly change: "created" | "replaced" | "edited"
  /** The file's size afterwards. */
  readonly bytes: number
}

/** The `files:changed` extension event. */
export const Changed: SessionEvent.Definition<"files:changed", ChangedData> = SessionEvent.define(
  "files:changed",
  Schema.Struct({
    /** The call that changed the file. */
    callId: Schema.String,
    tool: Schema.Literals(["write", "edit"]),
    /** Root-relative, symbolic links resolved. */
    path: Schema.String,
    change: Schema.Literals(["created", "replaced", "edited"]),
    /** The file's size afterwards. */
    bytes: Schema.Int
  })
)

/** Records a change in the session of the agent whose call made it (nothing outside an agent). */
export const recordChange = (change: Omit<ChangedData, "callId">): Effect.Effect<void> =>
  Effect.flatMap(ToolContext.current, (call) =>
    Option.match(call, {
      onNone: () => Effect.void,
      // the change is built by the tool itself: data that did not fit its definition is a bug
      onSome: (call) => Effect.asVoid(Effect.orDie(call.session.append(Changed, { ...change, callId: call.callId })))
    }))
