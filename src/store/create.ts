/**
 * Open a store (docs/scale-out.md#stores): a `postgres://` URL opens
 * PostgreSQL (the schema migrated on open), anything else is a trace
 * directory holding the embedded SQLite files. Each adapter is loaded only
 * when chosen: a PostgreSQL store loads nothing of SQLite, and the other way.
 */
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
  const { sqliteStore } = await import("./sqlite/store.js");
  const store = sqliteStore(location);
  await store.ping();
  return store;
}
