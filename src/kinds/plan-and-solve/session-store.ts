import { mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { TodoItem } from "../../events/types.js";

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
 * Where todo lists are kept between runs (docs/scale-out.md#stores): SQLite
 * under the trace directory (`SessionStore` below) or PostgreSQL
 * (src/store/postgres/todo-sessions.ts). A run opens one, loads its
 * session's list once, and closes it at its end (which waits for its writes).
 */
export interface TodoSessions {
  load(sessionId: string): TodoSessionState | undefined | Promise<TodoSessionState | undefined>;
  /** The session's next list version, above `floor`. */
  nextVersion(sessionId: string, floor: number, now: Date): number;
  save(sessionId: string, state: TodoSessionState, now: Date): void;
  close(): void | Promise<void>;
}

/** Bump when the stored shape changes; older rows are migrated on load. */
export const TODO_SCHEMA_VERSION = 1;
const SCHEMA_VERSION = TODO_SCHEMA_VERSION;

/** The file, under the run's trace directory, where todo sessions live. */
export function sessionDbPath(traceDir: string): string {
  return join(traceDir, "sessions.db");
}

/**
 * Todo lists keyed by session, in SQLite, so a follow-up run in the same
 * session continues the same list and keeps counting versions upwards.
 * WAL and a busy timeout let concurrent runs share the file.
 */
export class SessionStore implements TodoSessions {
  private readonly db: Database.Database;

  constructor(traceDir: string) {
    mkdirSync(traceDir, { recursive: true });
    this.db = new Database(sessionDbPath(traceDir));
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("busy_timeout = 5000");
    this.db.exec(`CREATE TABLE IF NOT EXISTS todo_sessions (
      session_id TEXT PRIMARY KEY,
      schema_version INTEGER NOT NULL,
      version INTEGER NOT NULL,
      state TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`);
  }

  load(sessionId: string): TodoSessionState | undefined {
    const row = this.db
      .prepare("SELECT schema_version, version, state FROM todo_sessions WHERE session_id = ?")
      .get(sessionId) as { schema_version: number; version: number; state: string } | undefined;
    if (!row) return undefined;
    const state = JSON.parse(row.state) as Partial<TodoSessionState>;
    return { version: row.version, items: state.items ?? [], ...(state.active ? { active: state.active } : {}) };
  }

  /**
   * The session's next version, allocated atomically: runs of the same
   * session in parallel (two processes, say) never hand out the same version.
   */
  nextVersion(sessionId: string, floor: number, now: Date): number {
    const row = this.db
      .prepare(
        `INSERT INTO todo_sessions (session_id, schema_version, version, state, updated_at)
         VALUES (@id, @schema, @floor + 1, '{"items":[]}', @at)
         ON CONFLICT(session_id) DO UPDATE SET version = max(version, @floor) + 1
         RETURNING version`,
      )
      .get({ id: sessionId, schema: SCHEMA_VERSION, floor, at: now.toISOString() }) as { version: number };
    return row.version;
  }

  save(sessionId: string, state: TodoSessionState, now: Date): void {
    this.db
      .prepare(
        `INSERT INTO todo_sessions (session_id, schema_version, version, state, updated_at)
         VALUES (@id, @schema, @version, @state, @at)
         ON CONFLICT(session_id) DO UPDATE SET schema_version = @schema, version = max(version, @version),
           state = @state, updated_at = @at`,
      )
      .run({
        id: sessionId,
        schema: SCHEMA_VERSION,
        version: state.version,
        state: JSON.stringify({ items: state.items, active: state.active }),
        at: now.toISOString(),
      });
  }

  close(): void {
    this.db.close();
  }
}
