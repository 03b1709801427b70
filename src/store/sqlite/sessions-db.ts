/**
 * `<traceDir>/sessions.db`: the todo lists (todo-sessions.ts) and the
 * conversations (conversations.ts) of sessions, with its migrations
 * (src/store/sqlite/schema.ts). WAL and a busy timeout let concurrent runs
 * share the file.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { migrate, type Schema } from "./schema.js";
import { makeDirectory } from "./trace-store.js";

/** The file, under a trace directory, where sessions live. */
export function sessionDbPath(traceDir: string): string {
  return join(traceDir, "sessions.db");
}

/** Files of earlier runtimes have these tables without a schema_version: IF NOT EXISTS takes them as they are. */
const SESSIONS_SCHEMA: Schema = {
  migrations: [
    {
      version: 1,
      name: "todo sessions, conversation turns and summaries",
      up: (db) =>
        db.exec(`
CREATE TABLE IF NOT EXISTS todo_sessions (
  session_id TEXT PRIMARY KEY,
  schema_version INTEGER NOT NULL,
  version INTEGER NOT NULL,
  state TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_turns (
  session_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  task_id TEXT NOT NULL,
  input TEXT NOT NULL,
  answer TEXT NOT NULL,
  ts TEXT NOT NULL,
  PRIMARY KEY (session_id, position)
);
CREATE TABLE IF NOT EXISTS session_summaries (
  session_id TEXT PRIMARY KEY,
  summary TEXT NOT NULL,
  through INTEGER NOT NULL,
  updated_at TEXT NOT NULL
);`),
    },
  ],
  tooNew: (file, found, supported) => `${file} holds sessions of schema_version ${found}; this runtime reads up to ${supported}`,
};

const BUSY_TIMEOUT_MS = 5000;

/** Open (creating the directory and file when missing) the sessions file of `traceDir`. */
export function openSessionsDb(traceDir: string): Database.Database {
  makeDirectory(traceDir);
  const file = sessionDbPath(traceDir);
  const db = new Database(file);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    migrate(db, file, SESSIONS_SCHEMA, BUSY_TIMEOUT_MS);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}
