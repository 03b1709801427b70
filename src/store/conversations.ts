/**
 * The port of conversations (docs/sessions.md, docs/scale-out.md#stores):
 * each answered run of a named session is a turn; the summary of the older
 * turns is kept with the position it covers up to. Adapters: SQLite
 * (src/store/sqlite/conversations.ts) and PostgreSQL
 * (src/store/postgres/conversations.ts).
 */

/** One finished run of a session: what was asked, what was answered. */
export interface Turn {
  task_id: string;
  input: string;
  answer: string;
  ts: string;
}

/** A session's conversation as stored: turns [0, through) are in `summary`. */
export interface ConversationState {
  turns: Turn[];
  summary: string;
  through: number;
}

export interface Conversations {
  load(sessionId: string): ConversationState | Promise<ConversationState>;
  /** Add a turn at the session's next position. */
  append(sessionId: string, turn: Turn): void | Promise<void>;
  /** Keep a summary of turns [0, through); one covering fewer turns than the stored one is ignored. */
  saveSummary(sessionId: string, summary: string, through: number, now: Date): void | Promise<void>;
  close(): void | Promise<void>;
}
