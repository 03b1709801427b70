/**
 * Todo sessions on PostgreSQL (docs/scale-out.md#stores): a run reads its
 * session's list once at its start and writes each change behind it, in
 * order; closing waits for the writes. A version is never lowered
 * (`GREATEST`), so a later run of the session counts on from the highest
 * version any run reached.
 */
import type pg from "pg";
import { TODO_SCHEMA_VERSION, type TodoSessions, type TodoSessionState } from "../todo-sessions.js";
import { SCHEMA as S, storeError } from "./connect.js";

export class PostgresTodoSessions implements TodoSessions {
  private writes: Promise<void> = Promise.resolve();
  private failure: unknown;
  private highest = new Map<string, number>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
  ) {}

  async load(sessionId: string): Promise<TodoSessionState | undefined> {
    try {
      const { rows } = await this.pool.query<{ version: number; state: string }>(`SELECT version, state FROM ${S}.todo_sessions WHERE session_id = $1`, [
        sessionId,
      ]);
      const row = rows[0];
      if (!row) return undefined;
      this.highest.set(sessionId, row.version);
      const state = JSON.parse(row.state) as Partial<TodoSessionState>;
      return { version: row.version, items: state.items ?? [], ...(state.active ? { active: state.active } : {}) };
    } catch (err) {
      throw storeError(this.url, `cannot read todo session ${sessionId}`, err);
    }
  }

  nextVersion(sessionId: string, floor: number): number {
    const next = Math.max(floor, this.highest.get(sessionId) ?? 0) + 1;
    this.highest.set(sessionId, next);
    return next;
  }

  save(sessionId: string, state: TodoSessionState, now: Date): void {
    const params = [sessionId, TODO_SCHEMA_VERSION, state.version, JSON.stringify({ items: state.items, active: state.active }), now.toISOString()];
    this.writes = this.writes.then(async () => {
      if (this.failure !== undefined) return;
      try {
        await this.pool.query(
          `INSERT INTO ${S}.todo_sessions (session_id, schema_version, version, state, updated_at) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (session_id) DO UPDATE SET schema_version = $2, version = GREATEST(${S}.todo_sessions.version, $3), state = $4, updated_at = $5`,
          params,
        );
      } catch (err) {
        this.failure = err;
      }
    });
  }

  /** Wait for the writes; a failed one is reported here, once. */
  async close(): Promise<void> {
    await this.writes;
    if (this.failure !== undefined) throw storeError(this.url, "cannot store todo session", this.failure);
  }
}
