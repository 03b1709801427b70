import type Database from "better-sqlite3";
import type { ConversationState, Conversations, Turn } from "../conversations.js";
import { openSessionsDb } from "./sessions-db.js";

/**
 * Conversations of sessions in SQLite, beside the todo lists
 * (`<trace_dir>/sessions.db`, docs/sessions.md): each answered run of a named
 * session is a turn; the summary of the older turns is kept with the
 * position it covers up to.
 */
export class SqliteConversations implements Conversations {
  private readonly db: Database.Database;

  constructor(traceDir: string) {
    this.db = openSessionsDb(traceDir);
  }

  load(sessionId: string): ConversationState {
    const turns = this.db.prepare("SELECT task_id, input, answer, ts FROM session_turns WHERE session_id = ? ORDER BY position").all(sessionId) as Turn[];
    const summary = this.db.prepare("SELECT summary, through FROM session_summaries WHERE session_id = ?").get(sessionId) as
      | { summary: string; through: number }
      | undefined;
    return { turns, summary: summary?.summary ?? "", through: summary?.through ?? 0 };
  }

  append(sessionId: string, turn: Turn): void {
    this.db
      .prepare(
        `INSERT INTO session_turns (session_id, position, task_id, input, answer, ts)
         VALUES (@session, (SELECT COALESCE(MAX(position), -1) + 1 FROM session_turns WHERE session_id = @session), @task_id, @input, @answer, @ts)`,
      )
      .run({ session: sessionId, ...turn });
  }

  saveSummary(sessionId: string, summary: string, through: number, now: Date): void {
    this.db
      .prepare(
        `INSERT INTO session_summaries (session_id, summary, through, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (session_id) DO UPDATE SET summary = excluded.summary, through = excluded.through, updated_at = excluded.updated_at
         WHERE excluded.through > session_summaries.through`,
      )
      .run(sessionId, summary, through, now.toISOString());
  }

  close(): void {
    this.db.close();
  }
}
