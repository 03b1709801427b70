/**
 * A store: everything durable about runs in one place (docs/scale-out.md#stores),
 * one port per domain: runs (src/store/runs.ts), plans (plans.ts), todo
 * sessions (todo-sessions.ts), conversations (conversations.ts) and
 * attachments (attachments.ts).
 * `createStore` (src/store/create.ts) opens the embedded adapter (SQLite
 * files under a trace directory, src/store/sqlite/) or PostgreSQL (a
 * `postgres://` URL, src/store/postgres/); a run given a store
 * (`RunOptions.store`) keeps all of it there.
 */
import type pg from "pg";
import type { PlanTool } from "../plan/plan-tool.js";
import type { AttachmentStore } from "./attachments.js";
import type { Conversations } from "./conversations.js";
import type { RunStore } from "./runs.js";
import type { TodoSessions } from "./todo-sessions.js";

/**
 * The durable state a run shares with other runs, wherever the run's store
 * keeps it: what an agent step is given (`AgentContext.stores`).
 */
export interface RunStores {
  /** The Plan Tool over the store's plans: one per store, so every run of a process shares its lock. */
  planTool(): PlanTool;
  /** A handle on the todo sessions for one run; close it at the run's end. */
  todoSessions(): TodoSessions;
  /** A handle on the conversations of sessions (docs/sessions.md); close it after use. */
  conversations(): Conversations;
}

/**
 * The PostgreSQL database behind a store: what the job queue (src/queue/) shares.
 * @internal Left out of the published types (tsconfig.build.json's stripInternal), which need no `@types/pg`.
 */
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
  /** A handle on the bytes of runs' attachments, by hash (docs/attachments.md); close it after use. */
  attachments(): AttachmentStore;
  /** The database, for a PostgreSQL store. @internal (the job queue's, see Database) */
  readonly database?: Database;
  /** Whether the database answers now (readiness probes); the embedded store opens its file. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
