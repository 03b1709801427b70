/**
 * The todo sessions port (src/store/todo-sessions.ts) on SQLite, in the
 * trace directory's sessions.db (sessions-db.ts).
 */
import type Database from "better-sqlite3";
import { TODO_SCHEMA_VERSION, type TodoSessionState, type TodoSessions } from "../todo-sessions.js";
import { openSessionsDb } from "./sessions-db.js";

const SCHEMA_VERSION = TODO_SCHEMA_VERSION;

/**
 * Todo lists keyed by session, in SQLite, so a follow-up run in the same
 * session continues the same list and keeps counting versions upwards.
 * WAL and a busy timeout let concurrent runs share the file.
 */
export class SqliteTodoSessions implements TodoSessions {
  private readonly db: Database.Database;

  constructor(traceDir: string) {
    this.db = openSessionsDb(traceDir);
  }

  load(sessionId: string): TodoSessionState | undefined {
    const row = this.db.prepare("SELECT schema_version, version, state FROM todo_sessions WHERE session_id = ?").get(sessionId) as
      | { schema_version: number; version: number; state: string }
      | undefined;
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
