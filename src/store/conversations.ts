/**
 * The port of conversations (docs/sessions.md, docs/scale-out.md#stores):
 * each answered run of a named session is a turn; the summary of the older
 * turns is kept with the position it covers up to. Adapters: SQLite
 * (src/store/sqlite/conversations.ts) and PostgreSQL
 * (src/store/postgres/conversations.ts).
 */

/** What was asked and what was answered, once. */
export interface Exchange {
  input: string;
  answer: string;
}

/** One finished run of a session. */
export interface Turn extends Exchange {
  task_id: string;
  ts: string;
}

/**
 * A conversation as a run reads it: turns [0, through) are in `summary`. The
 * stores give a session's turns; a caller may give its own exchanges instead
 * (`RunOptions.history`).
 */
export interface ConversationState<T extends Exchange = Turn> {
  turns: T[];
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
