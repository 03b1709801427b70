/**
 * The embedded TraceStore as the RunStore port (src/store/runs.ts): its
 * writes complete before they return, so the engine's hot path pays no
 * promise for them; reads answer as promises, as PostgreSQL's do. Its
 * commits are heard in this process (stored.ts).
 * Its writers share one committer (src/store/committer.ts): what every run of
 * the process appends in one turn of the event loop is one transaction.
 */
import { Committer } from "../committer.js";
import type { RunStore } from "../runs.js";
import { watchFile } from "./stored.js";
import type { TraceStore } from "./trace-store.js";

/** `trace` as a RunStore; closing the RunStore commits what its writers queued, and closes `trace` when `owned`. */
export function sqliteRunStore(trace: TraceStore, options: { owned?: boolean } = {}): RunStore {
  const committer = new Committer(trace.file, (batches) => trace.appendAll(batches));
  return {
    location: trace.file,
    appendMany: (events, journal) => trace.appendMany(events, journal),
    decide: (taskId, record) => trace.decide(taskId, record),
    journalOf: async (taskId) => trace.journalOf(taskId),
    approvalsOf: async (taskId) => trace.approvalsOf(taskId),
    lastSeq: async (taskId) => trace.lastSeq(taskId),
    eventsOfTask: async (taskId, afterSeq = 0, limit) => trace.eventsOfTask(taskId, afterSeq, limit),
    eventsOfTrace: async (traceId) => trace.eventsOfTrace(traceId),
    run: async (taskId) => trace.run(taskId),
    listRuns: async (query = {}) => trace.listRuns(query),
    resolveTaskId: async (given) => trace.resolveTaskId(given),
    watch: async (taskId, onStored) => watchFile(trace.file, taskId, onStored),
    close: async () => {
      committer.flush();
      if (options.owned) trace.close();
    },
    writer: (stored) => committer.writer(stored),
  };
}
