/**
 * Conversations of sessions on PostgreSQL (docs/sessions.md,
 * docs/scale-out.md#stores): the tables of the SQLite store
 * (src/store/sqlite/conversations.ts) in the `runtime` schema. A turn takes
 * the next position under a lock of its session's first row, so two runs
 * of one session ending together on two machines both keep their turn.
 */
import type pg from "pg";
import type { ConversationState, Conversations, Turn } from "../conversations.js";
import { SCHEMA as S, storeError, transaction } from "./connect.js";

export class PostgresConversations implements Conversations {
  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
  ) {}

  async load(sessionId: string): Promise<ConversationState> {
    try {
      const [turns, summary] = await Promise.all([
        this.pool.query<Turn>(`SELECT task_id, input, answer, ts FROM ${S}.session_turns WHERE session_id = $1 ORDER BY position`, [sessionId]),
        this.pool.query<{ summary: string; through: number }>(`SELECT summary, through FROM ${S}.session_summaries WHERE session_id = $1`, [sessionId]),
      ]);
      return { turns: turns.rows, summary: summary.rows[0]?.summary ?? "", through: summary.rows[0]?.through ?? 0 };
    } catch (err) {
      throw storeError(this.url, `cannot read session ${sessionId}`, err);
    }
  }

  async append(sessionId: string, turn: Turn): Promise<void> {
    try {
      await transaction(this.pool, async (client) => {
        await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`session:${sessionId}`]);
        await client.query(
          `INSERT INTO ${S}.session_turns (session_id, position, task_id, input, answer, ts)
           VALUES ($1, (SELECT COALESCE(MAX(position), -1) + 1 FROM ${S}.session_turns WHERE session_id = $1), $2, $3, $4, $5)`,
          [sessionId, turn.task_id, turn.input, turn.answer, turn.ts],
        );
      });
    } catch (err) {
      throw storeError(this.url, `cannot store a turn of session ${sessionId}`, err);
    }
  }

  async saveSummary(sessionId: string, summary: string, through: number, now: Date): Promise<void> {
    try {
      await this.pool.query(
        `INSERT INTO ${S}.session_summaries (session_id, summary, through, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (session_id) DO UPDATE SET summary = excluded.summary, through = excluded.through, updated_at = excluded.updated_at
         WHERE excluded.through > ${S}.session_summaries.through`,
        [sessionId, summary, through, now.toISOString()],
      );
    } catch (err) {
      throw storeError(this.url, `cannot store the summary of session ${sessionId}`, err);
    }
  }

  /** The pool is the store's. */
  close(): void {}
}
