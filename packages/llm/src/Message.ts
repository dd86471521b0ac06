/**
 * Messages: a role and its content blocks.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { ContentBlock, text as textBlock } from "./Content.ts"

/**
 * Who wrote a message. Tool results travel in `user` messages holding `tool-result` blocks.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Role = Schema.Literals(["system", "user", "assistant"])

/**
 * @since 0.1.0
 * @category models
 */
export type Role = typeof Role.Type

/**
 * @since 0.1.0
 * @category schemas
 */
export const Message = Schema.Struct({
  role: Role,
  content: Schema.Array(ContentBlock)
}).annotate({ identifier: "Message" })

/**
 * @since 0.1.0
 * @category models
 */
export interface Message extends Schema.Schema.Type<typeof Message> {}

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = (role: Role, content: ReadonlyArray<ContentBlock>): Message => ({ role, content })

/**
 * A user message holding one text block.
 *
 * @since 0.1.0
 * @category constructors
 */
export const user = (text: string): Message => ({ role: "user", content: [textBlock(text)] })

/**
 * An assistant message holding one text block.
 *
 * @since 0.1.0
 * @category constructors
 */
export const assistant = (text: string): Message => ({ role: "assistant", content: [textBlock(text)] })

/**
 * The concatenated text of a message's text blocks.
 *
 * @since 0.1.0
 * @category getters
 */
export const textOf = (message: Message): string => {
  let out = ""
  for (const block of message.content) if (block.type === "text") out += block.text
  return out
}
