import { TraceStore } from "../trace/store.js";

/**
 * One TraceStore per trace directory, shared by the concurrent runs of a
 * process and closed when the last of them ends. Opening SQLite per run cost
 * ~2.4 ms and leaked a connection per run (bench/react-loop.mjs).
 */
const stores = new Map<string, { store: TraceStore; users: number }>();

/** The store of `dir` (an absolute path), opened on first use. Throws like `TraceStore.open`. */
export function acquireTraceStore(dir: string): TraceStore {
  let entry = stores.get(dir);
  if (!entry) {
    entry = { store: TraceStore.open(dir), users: 0 };
    stores.set(dir, entry);
  }
  entry.users++;
  return entry.store;
}

/** A run is done with the store of `dir`; the last one out closes it. */
export function releaseTraceStore(dir: string): void {
  const entry = stores.get(dir);
  if (!entry || --entry.users > 0) return;
  stores.delete(dir);
  entry.store.close();
}
