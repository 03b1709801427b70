import type { RunOptions } from "../../src/engine/run-team.js";
import type { RunEvent } from "../../src/events/types.js";
import { createChatClient } from "../../src/models/factory.js";
import type { JournalEntry } from "../../src/store/runs.js";
import { TraceStore } from "../../src/store/sqlite/trace-store.js";

/**
 * Run options that read a run's journal through a connection of their own
 * (what is committed, not what is pending) as each model request leaves,
 * for the write-ahead checks (docs/design/journal.md#when-it-is-written).
 * A sink records every event of the run in `seen`; `close()` closes the
 * reading connection.
 */
export function journalAtRequests(traceDir: string, atRequest: (journal: JournalEntry[], seen: RunEvent[]) => void) {
  const seen: RunEvent[] = [];
  let store: TraceStore | undefined;
  const options: Pick<RunOptions, "sinks" | "createClient"> = {
    sinks: [(event) => seen.push(event)],
    createClient: (config) => {
      const client = createChatClient(config);
      return {
        model: client.model,
        chat: (request) => {
          store ??= TraceStore.open(traceDir, { create: false });
          atRequest(store.journalOf(seen[0]!.task_id), seen);
          return client.chat(request);
        },
      };
    },
  };
  return {
    options,
    seen,
    /** The run's journal as committed now. */
    journal: (taskId: string) => (store ??= TraceStore.open(traceDir, { create: false })).journalOf(taskId),
    close: () => store?.close(),
  };
}
