/**
 * The chat's input line as a value: its text, the cursor, the lines submitted before (recalled
 * with up and down), and what each key does to them. Pure: the chat feeds it keys and draws
 * what it returns.
 *
 * | key | does |
 * |---|---|
 * | a character | inserts it at the cursor |
 * | Enter | submits the line |
 * | Backspace, Delete | deletes before, at the cursor |
 * | ←, →, Home / Ctrl-A, End / Ctrl-E | moves the cursor |
 * | Ctrl-U, Ctrl-K | deletes to the start, to the end |
 * | Ctrl-W | deletes the word before the cursor |
 * | ↑, ↓ | recalls the lines submitted before |
 * | Ctrl-C | interrupts (the chat decides what that means) |
 * | Ctrl-D | ends the input when the line is empty, else deletes at the cursor |
 *
 * @since 0.1.0
 */

/**
 * A key as the terminal reports it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Key {
  /** The text the key types, if any. */
  readonly input: string | undefined
  readonly name: string
  readonly ctrl: boolean
  readonly meta: boolean
}

/**
 * @since 0.1.0
 * @category models
 */
export interface State {
  readonly text: string
  /** Position in UTF-16 code units, always at a code point boundary. */
  readonly cursor: number
  /** Submitted lines, oldest first. */
  readonly history: ReadonlyArray<string>
  /** Where ↑/↓ is in the history (history.length: the line being edited). */
  readonly recall: number
  /** The line being edited while the history is browsed. */
  readonly draft: string
}

/**
 * What a key did.
 *
 * @since 0.1.0
 * @category models
 */
export type Outcome =
  | { readonly _tag: "Edited"; readonly state: State }
  | { readonly _tag: "Submitted"; readonly line: string; readonly state: State }
  | { readonly _tag: "Interrupted"; readonly state: State }
  | { readonly _tag: "Ended"; readonly state: State }

/**
 * An empty line.
 *
 * @since 0.1.0
 * @category constructors
 */
export const empty: State = { text: "", cursor: 0, history: [], recall: 0, draft: "" }

const HISTORY = 500

const edited = (state: State): Outcome => ({ _tag: "Edited", state })

const withText = (state: State, text: string, cursor: number): State => ({ ...state, text, cursor, recall: state.history.length })

/** The code-point boundary before `at`. */
const previous = (text: string, at: number): number => {
  if (at <= 0) return 0
  const low = text.charCodeAt(at - 1)
  return at >= 2 && low >= 0xdc00 && low <= 0xdfff ? at - 2 : at - 1
}

/** The code-point boundary after `at`. */
const next = (text: string, at: number): number => {
  if (at >= text.length) return text.length
  const high = text.charCodeAt(at)
  return high >= 0xd800 && high <= 0xdbff && at + 1 < text.length ? at + 2 : at + 1
}

const wordStart = (text: string, at: number): number => {
  let i = at
  while (i > 0 && text[i - 1] === " ") i--
  while (i > 0 && text[i - 1] !== " ") i--
  return i
}

const insert = (state: State, typed: string): State =>
  withText(state, state.text.slice(0, state.cursor) + typed + state.text.slice(state.cursor), state.cursor + typed.length)

const browse = (state: State, to: number): State => {
  if (to < 0 || to > state.history.length || to === state.recall) return state
  const draft = state.recall === state.history.length ? state.text : state.draft
  const text = to === state.history.length ? draft : state.history[to]!
  return { ...state, text, cursor: text.length, recall: to, draft }
}

const submit = (state: State): Outcome => {
  const line = state.text
  const history = line.trim() === "" || state.history.at(-1) === line ? state.history : [...state.history, line].slice(-HISTORY)
  return { _tag: "Submitted", line, state: { text: "", cursor: 0, history, recall: history.length, draft: "" } }
}

const control = (state: State, name: string): Outcome => {
  switch (name) {
    case "c":
      return { _tag: "Interrupted", state }
    case "d":
      return state.text === "" ? { _tag: "Ended", state } : edited(withText(state, state.text.slice(0, state.cursor) + state.text.slice(next(state.text, state.cursor)), state.cursor))
    case "a":
      return edited({ ...state, cursor: 0 })
    case "e":
      return edited({ ...state, cursor: state.text.length })
    case "u":
      return edited(withText(state, state.text.slice(state.cursor), 0))
    case "k":
      return edited(withText(state, state.text.slice(0, state.cursor), state.cursor))
    case "w": {
      const from = wordStart(state.text, state.cursor)
      return edited(withText(state, state.text.slice(0, from) + state.text.slice(state.cursor), from))
    }
    case "b":
      return edited({ ...state, cursor: previous(state.text, state.cursor) })
    case "f":
      return edited({ ...state, cursor: next(state.text, state.cursor) })
    default:
      return edited(state)
  }
}

/**
 * What a key does to the line.
 *
 * @since 0.1.0
 * @category transitions
 */
export const press = (state: State, key: Key): Outcome => {
  if (key.ctrl) return control(state, key.name)
  switch (key.name) {
    case "return":
    case "enter":
      return submit(state)
    case "backspace": {
      const from = previous(state.text, state.cursor)
      return edited(withText(state, state.text.slice(0, from) + state.text.slice(state.cursor), from))
    }
    case "delete":
      return edited(withText(state, state.text.slice(0, state.cursor) + state.text.slice(next(state.text, state.cursor)), state.cursor))
    case "left":
      return edited({ ...state, cursor: previous(state.text, state.cursor) })
    case "right":
      return edited({ ...state, cursor: next(state.text, state.cursor) })
    case "home":
      return edited({ ...state, cursor: 0 })
    case "end":
      return edited({ ...state, cursor: state.text.length })
    case "up":
      return edited(browse(state, state.recall - 1))
    case "down":
      return edited(browse(state, state.recall + 1))
    case "escape":
    case "tab":
      return edited(state)
    default: {
      const typed = key.input ?? ""
      // a character, or several at once (a paste); control characters are not text
      // oxlint-disable-next-line no-control-regex
      const text = key.meta ? "" : typed.replace(/[\u0000-\u001f\u007f]/g, "")
      return text === "" ? edited(state) : edited(insert(state, text))
    }
  }
}
