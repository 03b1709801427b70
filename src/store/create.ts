/**
 * The store's composition root (docs/scale-out.md#stores): the one place that
 * chooses and opens an adapter. A `postgres://` URL opens PostgreSQL (the
 * schema migrated on open), anything else is a trace directory holding the
 * embedded SQLite files. Each adapter is loaded only when chosen: a
 * PostgreSQL store loads nothing of SQLite, and the other way. The engine,
 * the CLI and the server get a `Store` from here and never name an adapter.
 */
import type { Store } from "./store.js";

/** Whether `location` names a PostgreSQL database rather than a directory. */
export function isPostgresUrl(location: string | undefined): location is string {
  return location !== undefined && /^postgres(ql)?:\/\//i.test(location);
}

export interface StoreOptions {
  /** PostgreSQL connections this process may hold. @default 10 */
  maxConnections?: number;
  /**
   * Make the embedded store's files when missing; false reads a stored run
   * only, and a directory without them is NOT_FOUND. @default true
   */
  create?: boolean;
}

/**
 * The store at `location`, unchecked: the embedded one opens its files on
 * first use (a run with tracing off makes none), PostgreSQL connects now.
 */
export async function openStore(location: string, options: StoreOptions = {}): Promise<Store> {
  if (isPostgresUrl(location)) {
    const { openPostgresStore } = await import("./postgres/store.js");
    return openPostgresStore(location, options);
  }
  const { sqliteStore } = await import("./sqlite/store.js");
  return sqliteStore(location, options);
}

/** Open the store at `location` and check it answers: a `postgres://` URL or a directory. Throws a one-line RuntimeError. */
export async function createStore(location: string, options: StoreOptions = {}): Promise<Store> {
  const store = await openStore(location, options);
  try {
    await store.ping();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}
