/**
 * Open a store (docs/scale-out.md#stores): a `postgres://` URL opens
 * PostgreSQL (the schema migrated on open), anything else is a trace
 * directory holding the embedded SQLite files.
 */
import { resolve } from "node:path";
import { TraceStore } from "../trace/store.js";
import { SessionStore } from "../kinds/plan-and-solve/session-store.js";
import { ConversationStore } from "../kinds/conversation-store.js";
import { openPlanTool } from "../plan/plan-tool.js";
import { sqliteRunStore } from "./run-store.js";
import type { Store } from "./store.js";

/** Whether `location` names a PostgreSQL database rather than a directory. */
export function isPostgresUrl(location: string | undefined): location is string {
  return location !== undefined && /^postgres(ql)?:\/\//i.test(location);
}

export interface StoreOptions {
  /** PostgreSQL connections this process may hold. @default 10 */
  maxConnections?: number;
}

/** Open the store at `location`: a `postgres://` URL or a directory. Throws a one-line RuntimeError. */
export async function createStore(location: string, options: StoreOptions = {}): Promise<Store> {
  if (isPostgresUrl(location)) {
    const { openPostgresStore } = await import("./postgres/store.js");
    return openPostgresStore(location, options);
  }
  return openEmbeddedStore(resolve(location));
}

function openEmbeddedStore(dir: string): Store {
  const trace = TraceStore.open(dir);
  return {
    kind: "sqlite",
    location: dir,
    runs: sqliteRunStore(trace),
    planTool: () => openPlanTool(dir),
    todoSessions: () => new SessionStore(dir),
    conversations: () => new ConversationStore(dir),
    ping: async () => {},
    close: async () => trace.close(),
  };
}
