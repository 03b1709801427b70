/**
 * The schema of `traces.db` (src/store/sqlite/trace-store.ts) as migrations
 * (src/store/sqlite/schema.ts): version 6 creates it, or moves a file of
 * versions 1-5 to it; version 7 adds the runs' caller; the agent and
 * session indexes are built in place.
 */
import type Database from "better-sqlite3";
import { hasMeta, latestVersion, setMeta, type Schema } from "./schema.js";

/** The file name of the run store inside the trace directory. */
export const TRACE_DB_FILE = "traces.db";

const SCHEMA = `
-- Version 6: a run's events are stored in batches, one row for the events of
-- a run that one commit writes (the seq range first_seq..last_seq, the events
-- as a JSON array in seq order), and one row of event_traces for each
-- recursion (trace_id) a batch holds events of. A row per event, with its two
-- indexes, cost ~80 inserts into three b-trees per 10-step task, about half
-- of the store's CPU (docs/design/journal.md#the-events-beside-it).
CREATE TABLE IF NOT EXISTS event_batches (
  id INTEGER PRIMARY KEY,
  task_id TEXT NOT NULL,
  first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  json TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS event_batches_task ON event_batches (task_id, last_seq);
-- A run's events are appended in seq order, each seq once: a batch starting
-- at or below a seq already stored (another writer of the same run) is
-- refused, as the unique (task_id, seq) of a row per event refused it.
CREATE TRIGGER IF NOT EXISTS event_batches_in_order BEFORE INSERT ON event_batches
WHEN EXISTS (SELECT 1 FROM event_batches WHERE task_id = NEW.task_id AND last_seq >= NEW.first_seq)
BEGIN
  SELECT RAISE(ABORT, 'UNIQUE constraint failed: event_batches.first_seq (the run already has events at or after it)');
END;
CREATE TABLE IF NOT EXISTS event_traces (
  trace_id TEXT NOT NULL,
  batch_id INTEGER NOT NULL,
  PRIMARY KEY (trace_id, batch_id)
) WITHOUT ROWID;
-- The table of versions 1-5 as a view, a row per event, that takes inserts as
-- one-event batches: a process of an older runtime that had the store open
-- when a newer one migrated it goes on reading and writing its runs (it
-- refuses to open the store again: its schema_version is newer). The agent
-- and session indexes are filled from it too, when a store first gains them.
CREATE VIEW IF NOT EXISTS events (task_id, seq, type, agent_id, step_id, parent_step_id, trace_id, ts, json) AS
  SELECT b.task_id, json_extract(e.value, '$.seq'), json_extract(e.value, '$.type'), json_extract(e.value, '$.agent_id'),
    json_extract(e.value, '$.step_id'), json_extract(e.value, '$.parent_step_id'), json_extract(e.value, '$.trace_id'),
    json_extract(e.value, '$.ts'), e.value
  FROM event_batches b, json_each(b.json) e;
CREATE TRIGGER IF NOT EXISTS events_insert INSTEAD OF INSERT ON events
BEGIN
  INSERT INTO event_batches (task_id, first_seq, last_seq, json) VALUES (NEW.task_id, NEW.seq, NEW.seq, '[' || NEW.json || ']');
  INSERT INTO event_traces (trace_id, batch_id) SELECT NEW.trace_id, last_insert_rowid() WHERE NEW.trace_id IS NOT NULL;
END;
CREATE TABLE IF NOT EXISTS runs (
  task_id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  input TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  result_type TEXT,
  answer TEXT,
  error TEXT,
  usage_json TEXT
);
CREATE INDEX IF NOT EXISTS runs_agent ON runs (agent_id, started_at);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at);
-- Version 5: journal is a rowid table, its rows appended at the end of the
-- table in the order written, with (task_id, key) as a unique index: a WITHOUT
-- ROWID table kept whole rows in task_id order, so every commit rewrote pages
-- all over the file.
CREATE TABLE IF NOT EXISTS journal (
  id INTEGER PRIMARY KEY,
  task_id TEXT NOT NULL,
  key TEXT NOT NULL,
  kind TEXT NOT NULL,
  ts TEXT NOT NULL,
  json TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS journal_key ON journal (task_id, key);
-- Version 4: a person's decisions on tool calls waiting for approval, by journal key.
CREATE TABLE IF NOT EXISTS approvals (
  task_id TEXT NOT NULL,
  key TEXT NOT NULL,
  decision TEXT NOT NULL,
  reason TEXT,
  ts TEXT NOT NULL,
  PRIMARY KEY (task_id, key)
) WITHOUT ROWID;
`;

/**
 * A store of an older schema_version moves to this one (SCHEMA says what
 * each version changed), in the migration's transaction: its events table
 * (one row per event, in every older version) and, before version 5, its
 * WITHOUT ROWID journal are renamed aside, SCHEMA creates the new tables,
 * each event becomes a batch of its own (with its recursion's row), the
 * journal's rows are copied in key order, and the old tables are dropped.
 */
function fromOlderSchema(db: Database.Database, found: number): void {
  const moveJournal = found < 5 && db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'journal'").get() !== undefined;
  db.exec(`ALTER TABLE events RENAME TO events_old;${moveJournal ? " ALTER TABLE journal RENAME TO journal_old;" : ""}`);
  db.exec(SCHEMA);
  db.exec(`INSERT INTO event_batches (task_id, first_seq, last_seq, json)
      SELECT task_id, seq, seq, '[' || json || ']' FROM events_old ORDER BY task_id, seq;
    INSERT INTO event_traces (trace_id, batch_id)
      SELECT o.trace_id, b.id FROM events_old o JOIN event_batches b ON b.task_id = o.task_id AND b.last_seq = o.seq WHERE o.trace_id IS NOT NULL;
    DROP TABLE events_old;`);
  if (moveJournal) {
    db.exec(`INSERT INTO journal (task_id, key, kind, ts, json) SELECT task_id, key, kind, ts, json FROM journal_old ORDER BY task_id, key;
      DROP TABLE journal_old;`);
  }
}

/**
 * Which agents ran in which run (every `agent.started`, at any depth), for
 * `listRuns({ agent })`; a file without it gets the table and is filled
 * from the events it holds, once.
 */
const AGENT_INDEX = {
  name: "agents",
  needed: (db: Database.Database) => !hasMeta(db, "agent_index_version", "1"),
  build(db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS run_agents (
      agent_id TEXT NOT NULL,
      task_id TEXT NOT NULL,
      started_at TEXT NOT NULL,
      PRIMARY KEY (agent_id, task_id)
    ) WITHOUT ROWID;
    INSERT OR IGNORE INTO run_agents (agent_id, task_id, started_at)
      SELECT agent_id, task_id, MIN(ts) FROM events WHERE type = 'agent.started' GROUP BY agent_id, task_id;`);
    setMeta(db, "agent_index_version", "1");
  },
};

/**
 * Which runs belong to which conversation (`run.started.session_id`), for
 * `listRuns({ session })` (docs/sessions.md); built like the agent index.
 */
const SESSION_INDEX = {
  name: "sessions",
  needed: (db: Database.Database) => !hasMeta(db, "session_index_version", "1"),
  build(db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS run_sessions (
      session_id TEXT NOT NULL,
      task_id TEXT NOT NULL,
      started_at TEXT NOT NULL,
      PRIMARY KEY (session_id, task_id)
    ) WITHOUT ROWID;
    INSERT OR IGNORE INTO run_sessions (session_id, task_id, started_at)
      SELECT json_extract(json, '$.session_id'), task_id, ts FROM events
       WHERE type = 'run.started' AND json_extract(json, '$.session_id') IS NOT NULL;`);
    setMeta(db, "session_index_version", "1");
  },
};

export const TRACE_SCHEMA: Schema = {
  migrations: [
    {
      version: 6,
      name: "events in batches, a rowid journal, approvals (from versions 1-5 too)",
      up: (db, from) => (from === 0 ? db.exec(SCHEMA) : fromOlderSchema(db, from)),
    },
    {
      version: 7,
      // Runs stored before it have none: only an admin caller sees them (docs/security.md#who-can-reach-what).
      name: "the caller who started a run (run.started.caller)",
      up: (db) => db.exec("ALTER TABLE runs ADD COLUMN caller TEXT; CREATE INDEX IF NOT EXISTS runs_caller ON runs (caller, started_at);"),
    },
  ],
  indexes: [AGENT_INDEX, SESSION_INDEX],
  tooNew: (file, found, supported) =>
    `trace store ${file} has schema_version ${found}, newer than this runtime supports (${supported}); upgrade the runtime or use another --trace-dir`,
};

/** The schema this code writes; a store with a newer one is refused, older ones are migrated. */
export const TRACE_SCHEMA_VERSION = latestVersion(TRACE_SCHEMA);
