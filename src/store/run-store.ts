/**
 * Where runs are kept (docs/scale-out.md#stores): every event, the journal,
 * approval decisions and the run summaries. Two implementations: SQLite
 * under the trace directory (embedded, the default: `sqliteRunStore`) and
 * PostgreSQL (src/store/postgres/run-store.ts). Writes of the embedded store
 * complete before they return, so the engine's hot path pays no promise for
 * them; reads are asynchronous for both.
 */
import type { RunEvent } from "../events/types.js";
import type { ApprovalRecord, JournalEntry, RunSummary, TraceStore } from "../trace/store.js";

export type { ApprovalRecord, JournalEntry, RunSummary };

/** Filters of a run listing. */
export interface RunQuery {
  /** Runs in which this agent ran, as the entry agent or at any depth below it. */
  agent?: string;
  /** Runs of this conversation (docs/sessions.md). */
  session?: string;
  /** Runs that ended so (`answer`, `error`, `paused`), or are not finished (`running`: going on, or their process died). */
  status?: RunStatus;
  /** @default 20 */
  limit?: number;
}

export type RunStatus = "answer" | "error" | "paused" | "running";
export const RUN_STATUSES: readonly RunStatus[] = ["answer", "error", "paused", "running"];

/** Whether a run's summary has `status`. */
export function hasStatus(run: RunSummary, status: RunStatus): boolean {
  return status === "running" ? run.finished_at === undefined : run.result_type === status;
}

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
  /** The task id `given` names: itself when stored, else the one stored id it starts. Throws NOT_FOUND otherwise. */
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
    eventsOfTask: async (taskId, afterSeq = 0) => trace.eventsOfTask(taskId).filter((e) => e.seq > afterSeq),
    eventsOfTrace: async (traceId) => trace.eventsOfTrace(traceId),
    run: async (taskId) => trace.run(taskId),
    listRuns: async (query = {}) => {
      if (query.status !== undefined) {
        // Filtered here: the embedded store's runs of one machine are few enough to read a thousand.
        const { status, limit = 20, ...rest } = query;
        const runs = await sqliteRunStore(trace).listRuns({ ...rest, limit: 1000 });
        return runs.filter((r) => hasStatus(r, status)).slice(0, limit);
      }
      const limit = query.limit ?? 20;
      if (query.session !== undefined) {
        // Both filters: the session's runs in which the agent ran.
        const runs = trace.runsOfSession(query.session, { limit: query.agent !== undefined ? 1000 : limit });
        if (query.agent === undefined) return runs;
        const ofAgent = new Set(trace.runsOfAgent(query.agent, { limit: 100_000 }).map((r) => r.task_id));
        return runs.filter((r) => ofAgent.has(r.task_id)).slice(0, limit);
      }
      return query.agent !== undefined ? trace.runsOfAgent(query.agent, { limit }) : trace.listRuns({ limit });
    },
    resolveTaskId: async (given) => trace.resolveTaskId(given),
    close: async () => {},
  };
}
