/**
 * A store: everything durable about runs in one place (docs/scale-out.md#stores).
 * `createStore` (src/store/create.ts) opens the embedded one (SQLite files
 * under a trace directory) or PostgreSQL (a `postgres://` URL); a run given
 * a store (`RunOptions.store`) keeps its events, journal, plans and todo
 * sessions there.
 */
import type { RunStores } from "../kinds/types.js";
import type { RunStore } from "./run-store.js";

export interface Store extends RunStores {
  readonly kind: "sqlite" | "postgres";
  /** Where it is, for messages: a directory, or the URL without its password. */
  readonly location: string;
  /** Events, journal, approvals, run summaries. */
  readonly runs: RunStore;
  /** Whether the database answers now (readiness probes). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
