/**
 * The port of runs (docs/scale-out.md#stores): every event of a run, its
 * journal (docs/design/journal.md), a person's decisions on its calls, and
 * the run summaries. Adapters: SQLite under a trace directory
 * (src/store/sqlite/) and PostgreSQL (src/store/postgres/), held to the same
 * answers by one suite (test/store/runs.test.ts).
 */
import type { RunEvent, Usage } from "../events/types.js";

/** A run's summary, kept up to date from run.started / run.finished (and reopened by run.resumed). */
export interface RunSummary {
  task_id: string;
  agent_id: string;
  input: string;
  started_at: string;
  /** Unset while the run is going on, or when its process died before it finished. */
  finished_at?: string;
  result_type?: "answer" | "error" | "paused" | "blocked";
  answer?: string;
  error?: string;
  usage?: Usage;
  /** The caller of `runtime serve` who started it (`run.started.caller`, docs/security.md); unset for runs started otherwise. */
  caller?: string;
}

/** How a run stands: ended so (`answer`, `error`, `paused`), or not finished (`running`: going on, or its process died). */
export type RunStatus = "answer" | "error" | "paused" | "blocked" | "running";
export const RUN_STATUSES: readonly RunStatus[] = ["answer", "error", "paused", "blocked", "running"];

/** Filters of a run listing; every one given must hold. */
export interface RunQuery {
  /** Runs in which this agent ran, as the entry agent or at any depth below it. */
  agent?: string;
  /** Runs of this conversation (docs/sessions.md). */
  session?: string;
  /** Runs with this status. */
  status?: RunStatus;
  /** Runs this caller started (`RunSummary.caller`). */
  caller?: string;
  /** @default 20 */
  limit?: number;
}

/**
 * One entry of a run's journal (src/engine/journal.ts): a model reply or a
 * tool call's start or result, under a key that names it within the run.
 */
export interface JournalEntry {
  task_id: string;
  /**
   * `run` (how the run was started), `<step key>` (a step and its step_id),
   * `<step key>/m<k>` (model call k of a step), `<step key>/t<n>` (its tool
   * call n), `<step key>/v<n>` (a value the step read from outside the run).
   */
  key: string;
  kind: JournalKind;
  ts: string;
  /** The entry's value as JSON (masked like events). */
  json: string;
}

export type JournalKind = "run" | "step" | "model.reply" | "tool.started" | "tool.result" | "value";

/** Events and journal entries written together. */
export type AppendBatch = readonly [events: readonly RunEvent[], journal: readonly JournalEntry[]];

/** A person's decision on a call waiting for approval. */
export interface ApprovalRecord {
  /** The call's journal key (the `approval_id` of its events). */
  key: string;
  decision: "approve" | "deny";
  reason?: string;
  ts: string;
}

export interface RunStore {
  /** Where the store is, for messages (a file, or a URL without its password). */
  readonly location: string;
  /** Store events and journal entries in one transaction: all or none. */
  appendMany(events: readonly RunEvent[], journal?: readonly JournalEntry[]): void | Promise<void>;
  /** Record (or replace) a decision on one call of a run. */
  decide(taskId: string, record: ApprovalRecord): void | Promise<void>;
  /** A run's journal, in key order (binary comparison). */
  journalOf(taskId: string): Promise<JournalEntry[]>;
  approvalsOf(taskId: string): Promise<Map<string, ApprovalRecord>>;
  /** The highest `seq` stored for a run (0 when none). */
  lastSeq(taskId: string): Promise<number>;
  /** The events of one run after `afterSeq` (default 0), in `seq` order: every one, or the first `limit` (a page, docs/server.md#slow-readers). */
  eventsOfTask(taskId: string, afterSeq?: number, limit?: number): Promise<RunEvent[]>;
  /** Every event of one recursion, by run then `seq`. */
  eventsOfTrace(traceId: string): Promise<RunEvent[]>;
  run(taskId: string): Promise<RunSummary | undefined>;
  /** The most recent runs that pass every filter given, newest first. */
  listRuns(query?: RunQuery): Promise<RunSummary[]>;
  /** The task id `given` names: itself when stored, else the one stored run's id it begins or ends. Throws NOT_FOUND otherwise. */
  resolveTaskId(given: string): Promise<string>;
  close(): Promise<void>;
  // follow
  /**
   * Hear of events stored for `taskId` (for any run with `"*"`): `onStored`
   * gets the run's id after each commit that wrote some, or `taskId` itself
   * when notifications may have been missed (a reconnection). Resolves once
   * listening, so a read after it misses nothing. Read through `follow`
   * (src/store/follow.ts), which is how every stream reaches events.
   */
  watch(taskId: string, onStored: (taskId: string) => void): Promise<Watch>;
  // writer
  /**
   * The one writer of a run's events and journal entries, with group commit
   * inside the adapter (docs/design/journal.md#when-it-is-written).
   * `stored` hears the last `seq` of each batch of events once it is durable.
   */
  writer(stored?: (seq: number) => void): RunWriter;
}

/** A `RunStore.watch` in place. */
export interface Watch {
  /** Whether notifications arrive now (PostgreSQL: the LISTEN connection is up). */
  readonly up: boolean;
  close(): void;
}

/**
 * How the engine writes a run: `append` queues, the adapter commits (SQLite:
 * what arrives in one turn of the event loop, every run's, in one
 * transaction; PostgreSQL: one transaction after the other, in order), and
 * `durable()` settles once everything appended so far is committed. The
 * engine awaits it at its write-ahead points. A failing write is a process
 * warning (`TraceStoreWarning`), never an exception: no call here throws or rejects.
 */
export interface RunWriter {
  append(events: readonly RunEvent[], journal?: readonly JournalEntry[]): void;
  durable(): Promise<void>;
  /** Everything appended is durable, and the writer is done. */
  close(): Promise<void>;
}
