/**
 * Sessions keyed by caller (docs/sessions.md#whose-session): the
 * conversation and the todo list of a session named by a server's caller are
 * kept under `CALLER/SESSION`, so two callers naming the same session
 * (`support-chat-1`) have two conversations, and no caller reads or joins
 * another's. Runs without a caller (the command line, the library) keep
 * the session id as it is.
 */
import type { RunStores } from "./store.js";

/** `stores` with every session of its conversations and todo lists kept under `CALLER/SESSION`. */
export function callerSessions(stores: RunStores, caller: string | undefined): RunStores {
  if (caller === undefined) return stores;
  const key = (sessionId: string) => `${caller}/${sessionId}`;
  return {
    planTool: () => stores.planTool(),
    conversations() {
      const inner = stores.conversations();
      return {
        load: (id) => inner.load(key(id)),
        append: (id, turn) => inner.append(key(id), turn),
        saveSummary: (id, summary, through, now) => inner.saveSummary(key(id), summary, through, now),
        close: () => inner.close(),
      };
    },
    todoSessions() {
      const inner = stores.todoSessions();
      return {
        load: (id) => inner.load(key(id)),
        nextVersion: (id, floor, now) => inner.nextVersion(key(id), floor, now),
        save: (id, state, now) => inner.save(key(id), state, now),
        close: () => inner.close(),
      };
    },
  };
}
