import type { RunStores } from "../kinds/types.js";
import { SessionStore } from "../kinds/plan-and-solve/session-store.js";
import { ConversationStore } from "../kinds/conversation-store.js";
import { openPlanTool } from "../plan/plan-tool.js";

/**
 * Plans and todo sessions in SQLite files under a trace directory: the
 * embedded default (docs/scale-out.md#stores); each file is opened when a
 * run first needs it.
 */
export function embeddedStores(traceDir: string): RunStores {
  return {
    planTool: () => openPlanTool(traceDir),
    todoSessions: () => new SessionStore(traceDir),
    conversations: () => new ConversationStore(traceDir),
  };
}
