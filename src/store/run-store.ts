/**
 * Where runs are kept (docs/scale-out.md#stores): every event, the journal,
 * approval decisions and the run summaries. Two implementations: SQLite
 * under the trace directory (embedded, the default: `sqliteRunStore`) and
 * PostgreSQL (src/store/postgres/run-store.ts). Writes of the embedded store
 * complete before they return, so the engine's hot path pays no promise for
 * them; reads are asynchronous for both.
 */
import type { RunEvent } from "../events/types.js";
import { RUN_STATUSES, type ApprovalRecord, type JournalEntry, type RunQuery, type RunStatus, type RunSummary, type TraceStore } from "../trace/store.js";

export type { ApprovalRecord, JournalEntry, RunQuery, RunStatus, RunSummary };
export { RUN_STATUSES };

export interface RunStore {
  /** Where the store is, for messages (a directory, or a URL without its password). */
  readonly location: string;
  /** Store events and journal entries in one transaction: all or none. */
  appendMany(events: readonly RunEvent[], journal?: readonly JournalEntry[]): void | Promise<void>;
  /** Record (or replace) a decision on one call of a run. */
  decide(taskId: string, record: ApprovalRecord): void | Promise<void>;
  journalOf(taskId: string): Promise<JournalEntry[]>;
  approvalsOf(taskId: string): Promise<Map<string, ApprovalRecord>>;
  /** The highest `seq` stored for a run (0 when none). */
  lastSeq(taskId: string): Promise<number>;
  /** Every event of one run after `afterSeq` (default 0), in `seq` order. */
  eventsOfTask(taskId: string, afterSeq?: number): Promise<RunEvent[]>;
  eventsOfTrace(traceId: string): Promise<RunEvent[]>;
  run(taskId: string): Promise<RunSummary | undefined>;
  listRuns(query?: RunQuery): Promise<RunSummary[]>;
  /** The task id `given` names: itself when stored, else the one stored run's id it begins or ends. Throws NOT_FOUND otherwise. */
  resolveTaskId(given: string): Promise<string>;
  close(): Promise<void>;
}

/** The embedded SQLite trace store as a RunStore; closing it is the owner's business. */
export function sqliteRunStore(trace: TraceStore): RunStore {
  return {
    location: trace.file,
    appendMany: (events, journal) => trace.appendMany(events, journal),
    decide: (taskId, record) => trace.decide(taskId, record),
    journalOf: async (taskId) => trace.journalOf(taskId),
    approvalsOf: async (taskId) => trace.approvalsOf(taskId),
    lastSeq: async (taskId) => trace.lastSeq(taskId),
    eventsOfTask: async (taskId, afterSeq = 0) => trace.eventsOfTask(taskId, afterSeq),
    eventsOfTrace: async (traceId) => trace.eventsOfTrace(traceId),
    run: async (taskId) => trace.run(taskId),
    listRuns: async (query = {}) => trace.listRuns(query),
    resolveTaskId: async (given) => trace.resolveTaskId(given),
    close: async () => {},
  };
}
