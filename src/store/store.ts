/**
 * A store: everything durable about runs in one place (docs/scale-out.md#stores).
 * `createStore` (src/store/create.ts) opens the embedded one (SQLite files
 * under a trace directory) or PostgreSQL (a `postgres://` URL); a run given
 * a store (`RunOptions.store`) keeps its events, journal, plans and todo
 * sessions there.
 */
import type { RunStores } from "../kinds/types.js";
import type pg from "pg";
import type { RunStore } from "./run-store.js";

/** The PostgreSQL database behind a store: what the job queue (src/queue/) shares. */
export interface Database {
  readonly pool: pg.Pool;
  /** The URL, with its password: only for opening connections, never for messages. */
  readonly url: string;
}

export interface Store extends RunStores {
  readonly kind: "sqlite" | "postgres";
  /** Where it is, for messages: a directory, or the URL without its password. */
  readonly location: string;
  /** Events, journal, approvals, run summaries. */
  readonly runs: RunStore;
  /** The database, for a PostgreSQL store. */
  readonly database?: Database;
  /** Whether the database answers now (readiness probes). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
