/**
 * The port of todo sessions (docs/scale-out.md#stores): the todo list of a
 * plan_and_solve session, kept between its runs. Adapters: SQLite
 * (src/store/sqlite/todo-sessions.ts) and PostgreSQL
 * (src/store/postgres/todo-sessions.ts).
 */
import type { TodoItem } from "../events/types.js";

/** A todo item with the counters the automatic status tracking keeps. */
export interface TrackedItem extends TodoItem {
  /** Successful tool calls since the item last became in_progress. */
  successes: number;
  /** Failed tool calls in a row since the item last became in_progress. */
  recent_failures: number;
}

/** Everything a session remembers between runs. */
export interface TodoSessionState {
  /** The last version emitted; the next event carries a larger one. */
  version: number;
  items: TrackedItem[];
  /** 1-based index of the item tool calls are attributed to, if any. */
  active?: number;
}

/**
 * A run opens one, loads its session's list once, and closes it at its end
 * (which waits for its writes).
 */
export interface TodoSessions {
  load(sessionId: string): TodoSessionState | undefined | Promise<TodoSessionState | undefined>;
  /** The session's next list version, above `floor` (and above any version handed out before). */
  nextVersion(sessionId: string, floor: number, now: Date): number;
  save(sessionId: string, state: TodoSessionState, now: Date): void;
  close(): void | Promise<void>;
}

/** Bump when the stored shape of a session's state changes; older rows are migrated on load. */
export const TODO_SCHEMA_VERSION = 1;
