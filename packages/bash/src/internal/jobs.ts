/**
 * Background jobs: who owns them, their state, the supervisor that reads a job's output and
 * records its end, and the coalesced session events of a job started in an agent.
 *
 * @internal
 */
import type { Session, SessionEvent } from "@dsh/session"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { ChildProcessSpawner } from "effect/process"
import type * as Bash from "../Bash.ts"
import * as BashEvents from "../BashEvents.ts"
import * as Output from "./output.ts"
import { type Chunk, chunksOf, exitStatusOf, type Settings } from "./process.ts"

/**
 * Who jobs belong to: an agent (its jobs end with its scope and log to its session) or the
 * layer (outside an agent: no session).
 */
export interface Owner {
  readonly label: string
  readonly scope: Scope.Scope
  readonly session: Session.Session | undefined
  readonly jobs: Map<string, JobState>
  /** Set when the owner's scope began closing: a job started now is killed at once. */
  closed: boolean
}

/** A job's session events, coalesced: segments of one stream each, logged together. */
export interface EventLog {
  readonly session: Session.Session
  readonly jobId: string
  readonly maxChars: number
  /** Characters the job may still log. */
  budget: number
  pending: Array<{ readonly stream: Chunk["stream"]; text: string }>
  pendingChars: number
}

export interface JobState {
  readonly id: string
  readonly command: string
  readonly cwd: string
  readonly pid: number
  readonly startedAt: number
  readonly handle: ChildProcessSpawner.ChildProcessHandle
  /** Everything it wrote (and the spill file). */
  readonly capture: Output.Capture
  /** What it wrote since the last read. */
  readonly unread: Output.Window
  readonly log: EventLog | undefined
  status: Bash.JobStatus
  /** Done once its exit is recorded: output drained, events logged, files closed. */
  readonly ended: Deferred.Deferred<void>
}

export const info = (job: JobState): Bash.Job => ({
  id: job.id,
  command: job.command,
  cwd: job.cwd,
  pid: job.pid,
  startedAt: job.startedAt,
  status: job.status
})

/** The job's output since the previous read, and the job as it is now. */
export const take = (job: JobState): Bash.JobOutput => {
  const output = Output.render(job.unread, Output.fileNote(job.capture))
  Output.reset(job.unread)
  return { job: info(job), output }
}

/** Appends an event unless there is no session or it has closed (a job never dies for its log). */
export const record = <Type extends SessionEvent.ExtensionType, A>(
  session: Session.Session | undefined,
  definition: SessionEvent.Definition<Type, A>,
  data: A
): Effect.Effect<void> =>
  session === undefined
    ? Effect.void
    // the data is built here from the job's own state: one that did not fit its definition is a bug
    : Effect.flatMap(session.closed, (closed) => (closed ? Effect.void : Effect.asVoid(Effect.orDie(session.append(definition, data)))))

export const makeEventLog = (settings: Settings, session: Session.Session, jobId: string): EventLog => ({
  session,
  jobId,
  maxChars: settings.eventChars,
  budget: settings.eventBudget,
  pending: [],
  pendingChars: 0
})

// An event's text never ends inside a surrogate pair.
const piecesOf = (text: string, size: number): Array<string> => {
  const pieces: Array<string> = []
  let from = 0
  while (from < text.length) {
    let to = Math.min(text.length, from + size)
    const last = text.charCodeAt(to - 1)
    if (to < text.length && to - from > 1 && last >= 0xd800 && last <= 0xdbff) to--
    pieces.push(text.slice(from, to))
    from = to
  }
  return pieces
}

/** Logs what is pending, one event per stream segment and piece. */
export const flush = (log: EventLog): Effect.Effect<void> =>
  Effect.suspend(() => {
    const segments = log.pending
    log.pending = []
    log.pendingChars = 0
    return Effect.forEach(
      segments.flatMap((segment) => piecesOf(segment.text, log.maxChars).map((text) => ({ stream: segment.stream, text }))),
      (piece) => record(log.session, BashEvents.JobOutput, { jobId: log.jobId, ...piece }),
      { discard: true }
    )
  })

/** At most `size` characters of the start of `text`, never ending inside a surrogate pair. */
const headOf = (text: string, size: number): string => {
  if (text.length <= size) return text
  const head = text.slice(0, size)
  const last = head.charCodeAt(head.length - 1)
  return last >= 0xd800 && last <= 0xdbff ? head.slice(0, -1) : head
}

/**
 * Queues output for the log, within the job's budget (the budget ends at a whole character,
 * and once it cuts a chunk nothing more is logged); a full event's worth is logged at once.
 */
const queue = (log: EventLog, chunk: Chunk): Effect.Effect<void> => {
  if (log.budget <= 0 || chunk.text.length === 0) return Effect.void
  const text = headOf(chunk.text, log.budget)
  log.budget = text.length < chunk.text.length ? 0 : log.budget - text.length
  if (text.length === 0) return Effect.void
  const last = log.pending.at(-1)
  if (last !== undefined && last.stream === chunk.stream) last.text += text
  else log.pending.push({ stream: chunk.stream, text })
  log.pendingChars += text.length
  return log.pendingChars >= log.maxChars ? flush(log) : Effect.void
}

const onChunk = (job: JobState, chunk: Chunk): Effect.Effect<void> =>
  Effect.andThen(Output.append(job.capture, chunk.text), () => {
    Output.push(job.unread, chunk.text)
    return job.log === undefined ? Effect.void : queue(job.log, chunk)
  })

const tick = Symbol("tick")

/**
 * Reads the job's output to its end, one chunk at a time (the spill file's order is the
 * output's); with a log, a tick flushes what is pending every interval.
 */
const consume = (job: JobState, settings: Settings): Effect.Effect<void, unknown> => {
  const log = job.log
  const chunks = chunksOf(job.handle)
  if (log === undefined) return Stream.runForEach(chunks, (chunk) => onChunk(job, chunk))
  const ticks = Stream.map(Stream.tick(settings.eventInterval), (): typeof tick => tick)
  return Stream.merge(chunks, ticks, { haltStrategy: "left" }).pipe(
    Stream.runForEach((item) => (item === tick ? flush(log) : onChunk(job, item)))
  )
}

/**
 * Waits for a reader once the process group is gone: its pipes close at once, unless a
 * process that left the group (`setsid`) holds them, which the reader is not kept for.
 */
export const drain = (reader: Fiber.Fiber<unknown, unknown>, grace: Duration.Duration): Effect.Effect<void> =>
  Effect.flatMap(
    Effect.timeoutOption(Fiber.await(reader), grace),
    (done) => (Option.isSome(done) ? Effect.void : Fiber.interrupt(reader))
  )

const unknownStatus: Bash.ExitStatus = { exitCode: null, signal: null }

/**
 * A job's life after its start: read its output, wait for the shell, kill what it left in its
 * group, drain the pipes, then record the exit (status, last events, files closed).
 */
export const supervise = (
  job: JobState,
  settings: Settings,
  scopes: { readonly process: Scope.Closeable; readonly files: Scope.Closeable }
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const reader = yield* Effect.forkChild(consume(job, settings), { startImmediately: true })
    const status = yield* exitStatusOf(job.handle).pipe(Effect.orElseSucceed(() => unknownStatus))
    yield* Scope.close(scopes.process, Exit.void)
    yield* drain(reader, settings.drainGrace)
    if (job.log !== undefined) yield* flush(job.log)
    job.status = { _tag: "Exited", ...status }
    const file = Output.fileNote(job.capture)
    yield* record(job.log?.session, BashEvents.JobExited, {
      jobId: job.id,
      exitCode: status.exitCode,
      signal: status.signal,
      outputChars: job.capture.window.chars,
      ...(file._tag === "Saved" ? { outputFile: file.path } : {})
    })
  }).pipe(
    Effect.ensuring(
      Effect.all([Scope.close(scopes.process, Exit.void), Scope.close(scopes.files, Exit.void)], { discard: true }).pipe(
        Effect.andThen(Deferred.succeed(job.ended, undefined))
      )
    )
  )

/** Kills a running job's group (SIGTERM, SIGKILL after the grace) and waits until its exit is recorded. */
export const terminate = (job: JobState, settings: Settings): Effect.Effect<void> =>
  Effect.uninterruptible(
    Effect.gen(function*() {
      if (!(yield* Deferred.isDone(job.ended))) {
        yield* Effect.ignore(job.handle.kill({ killSignal: "SIGTERM", forceKillAfter: settings.killGrace }))
      }
      yield* Deferred.await(job.ended)
    })
  )

/** Ends an owner: its running jobs are killed, all at once. */
export const closeOwner = (owner: Owner, settings: Settings): Effect.Effect<void> =>
  Effect.suspend(() => {
    owner.closed = true
    return Effect.forEach([...owner.jobs.values()], (job) => terminate(job, settings), {
      concurrency: "unbounded",
      discard: true
    })
  })
