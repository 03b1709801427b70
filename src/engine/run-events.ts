/**
 * `TeamRun.events`: a run's events as its store keeps them, read through the
 * store's one follow (src/store/follow.ts), the way every stream of the
 * server reads them. Nothing is held in memory for a reader: one that comes
 * late, or reads slower than the run writes, reads on from the store.
 */
import type { RunEvent } from "../events/types.js";
import { openStore } from "../store/create.js";
import { follow } from "../store/follow.js";
import type { Store } from "../store/store.js";

/**
 * The events of `taskId` after `afterSeq` in `from` (a store, or the trace
 * directory whose default store each reader opens for itself and closes when
 * done), until the run has read `run.finished` or `ended` has settled: the
 * run's writer has committed everything by then, and what it stored is read
 * once more. Nothing, with no store (tracing off).
 */
export function runEvents(from: Store | string | undefined, taskId: string, afterSeq: number, ended: Promise<unknown>): AsyncIterable<RunEvent> {
  return {
    async *[Symbol.asyncIterator]() {
      if (from === undefined) return;
      const store = typeof from === "string" ? await openStore(from) : from;
      const over = new AbortController();
      const stop = () => over.abort();
      void ended.then(stop, stop);
      try {
        let at = afterSeq;
        for await (const { event } of follow(store.runs, taskId, afterSeq, { signal: over.signal })) {
          at = event.seq;
          yield event;
        }
        // The run ended without a commit heard after the follower's last read (a store that failed, say).
        if (over.signal.aborted) for (const event of await store.runs.eventsOfTask(taskId, at)) if (event.seq > at) yield event;
      } finally {
        if (store !== from) await store.close();
      }
    },
  };
}
