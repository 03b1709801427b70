import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import Database from "better-sqlite3";
import { RuntimeError, describeError } from "../errors.js";
import type { RunEvent, Usage } from "../events/types.js";
import { takeEventJson } from "../events/bus.js";

/** The schema this code writes; a store with a newer one is refused, older ones are migrated. */
export const TRACE_SCHEMA_VERSION = 6;

/** The file name of the store inside the trace directory. */
export const TRACE_DB_FILE = "traces.db";

/** One row of the `runs` table: a run's summary, kept up to date from run.started / run.finished. */
export interface RunSummary {
  task_id: string;
  agent_id: string;
  input: string;
  started_at: string;
  /** Unset while the run is going on, or when its process died before it finished. */
  finished_at?: string;
  result_type?: "answer" | "error" | "paused";
  answer?: string;
  error?: string;
  usage?: Usage;
}

/** How a run stands: ended so (`answer`, `error`, `paused`), or not finished (`running`: going on, or its process died). */
export type RunStatus = "answer" | "error" | "paused" | "running";
export const RUN_STATUSES: readonly RunStatus[] = ["answer", "error", "paused", "running"];

/** Filters of a run listing; every one given must hold. */
export interface RunQuery {
  /** Runs in which this agent ran, as the entry agent or at any depth below it. */
  agent?: string;
  /** Runs of this conversation (docs/sessions.md). */
  session?: string;
  /** Runs with this status. */
  status?: RunStatus;
  /** @default 20 */
  limit?: number;
}

export interface TraceStoreOptions {
  /**
   * Create the directory and the database when missing. Readers (`runtime trace`)
   * pass false so that a wrong `--trace-dir` is reported rather than created.
   * @default true
   */
  create?: boolean;
  /**
   * How long a writer waits for another process's lock before failing.
   * @default 5000
   */
  busyTimeoutMs?: number;
}

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
 * One entry of a run's journal (src/engine/journal.ts): a model reply or a
 * tool call's start or result, under a key that names it within the run.
 */
export interface JournalEntry {
  task_id: string;
  /**
   * `run` (how the run was started), `<step key>` (a step and its step_id),
   * `<step key>/m<k>` (model call k of a step), `<step key>/t<n>` (its tool
   * call n), `<step key>/v<n>` (a value the step read from outside the run).
   */
  key: string;
  kind: JournalKind;
  ts: string;
  /** The entry's value as JSON (masked like events). */
  json: string;
}

export type JournalKind = "run" | "step" | "model.reply" | "tool.started" | "tool.result" | "value";

/** Events and journal entries written together. */
export type AppendBatch = readonly [events: readonly RunEvent[], journal: readonly JournalEntry[]];

/** A person's decision on a call waiting for approval. */
export interface ApprovalRecord {
  /** The call's journal key (the `approval_id` of its events). */
  key: string;
  decision: "approve" | "deny";
  reason?: string;
  ts: string;
}

/** A row of the `runs` table, as SQLite and PostgreSQL (src/store/postgres/run-store.ts) return it. */
export interface RunRow {
  task_id: string;
  agent_id: string;
  input: string;
  started_at: string;
  finished_at: string | null;
  result_type: string | null;
  answer: string | null;
  error: string | null;
  usage_json: string | null;
}

/**
 * Every event of every run, in SQLite (`<traceDir>/traces.db`). Each `append`
 * is its own committed transaction in WAL mode, so what was appended survives
 * a crash of the process. Many runs of one process may share a store, and
 * several processes may write the same file (they wait on `busy_timeout`).
 */
export class TraceStore {
  private readonly insertBatch: Database.Statement;
  private readonly insertTrace: Database.Statement;
  /** The one transaction of every append, made once (better-sqlite3 builds a wrapper per `db.transaction` call). */
  private readonly appendAllTx: (batches: readonly AppendBatch[]) => void;
  private readonly upsertStarted: Database.Statement;
  private readonly upsertFinished: Database.Statement;
  private readonly upsertJournal: Database.Statement;
  private readonly reopenRun: Database.Statement;
  private readonly insertRunAgent: Database.Statement;
  private readonly insertRunSession: Database.Statement;
  private closed = false;

  private constructor(
    private readonly db: Database.Database,
    /** The database file. */
    readonly file: string,
  ) {
    this.insertBatch = db.prepare("INSERT INTO event_batches (task_id, first_seq, last_seq, json) VALUES (?, ?, ?, ?)");
    this.insertTrace = db.prepare("INSERT OR IGNORE INTO event_traces (trace_id, batch_id) VALUES (?, ?)");
    this.upsertStarted = db.prepare(
      `INSERT INTO runs (task_id, agent_id, input, started_at) VALUES (@task_id, @agent_id, @input, @ts)
       ON CONFLICT (task_id) DO UPDATE SET agent_id = excluded.agent_id, input = excluded.input, started_at = excluded.started_at`,
    );
    this.upsertFinished = db.prepare(
      `INSERT INTO runs (task_id, agent_id, input, started_at, finished_at, result_type, answer, error, usage_json)
       VALUES (@task_id, @agent_id, '', @ts, @ts, @result_type, @answer, @error, @usage_json)
       ON CONFLICT (task_id) DO UPDATE SET finished_at = excluded.finished_at, result_type = excluded.result_type,
         answer = excluded.answer, error = excluded.error, usage_json = excluded.usage_json`,
    );
    this.upsertJournal = db.prepare(
      `INSERT INTO journal (task_id, key, kind, ts, json) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (task_id, key) DO UPDATE SET kind = excluded.kind, ts = excluded.ts, json = excluded.json`,
    );
    this.reopenRun = db.prepare("UPDATE runs SET finished_at = NULL, result_type = NULL, answer = NULL, error = NULL WHERE task_id = ?");
    this.insertRunAgent = db.prepare("INSERT OR IGNORE INTO run_agents (agent_id, task_id, started_at) VALUES (@agent_id, @task_id, @ts)");
    this.insertRunSession = db.prepare("INSERT OR IGNORE INTO run_sessions (session_id, task_id, started_at) VALUES (@session_id, @task_id, @ts)");
    this.appendAllTx = db.transaction((batches: readonly AppendBatch[]) => {
      for (const [events, journal] of batches) {
        this.writeEvents(events);
        for (const e of journal) this.upsertJournal.run(e.task_id, e.key, e.kind, e.ts, e.json);
      }
    });
    // Bound so it can be handed to `EventBus.subscribe` as it is.
    this.append = this.append.bind(this);
  }

  /** Open (by default create) the store in `dir`. Throws a one-line RuntimeError on any problem. */
  static open(dir: string, options: TraceStoreOptions = {}): TraceStore {
    const file = join(dir, TRACE_DB_FILE);
    const create = options.create ?? true;
    if (!create && !existsSync(file)) throw new RuntimeError("NOT_FOUND", `no trace store in ${dir} (expected ${file})`);
    // Else mkdir reports EEXIST for a file where the directory should be, which reads as nonsense.
    if (existsSync(dir) && !statSync(dir).isDirectory()) throw new RuntimeError("USAGE", `trace directory ${dir} is not a directory`);
    let db: Database.Database | undefined;
    try {
      if (create) makeDirectory(dir);
      db = new Database(file, { fileMustExist: !create });
      const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
      db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      db.pragma("journal_mode = WAL");
      // NORMAL in WAL mode: every commit is in the WAL before append returns, so a killed
      // process loses nothing; only a power cut may lose the last commits.
      db.pragma("synchronous = NORMAL");
      migrate(db, file, busyTimeoutMs);
      indexAgents(db);
      indexSessions(db);
      return new TraceStore(db, file);
    } catch (err) {
      db?.close();
      if (err instanceof RuntimeError) throw err;
      throw new RuntimeError("USAGE", `cannot open trace store ${file}: ${describeError(err)}`, { cause: err });
    }
  }

  /**
   * Store one event, committed before returning. Usable directly as an
   * `EventSink`; events are masked by the bus they come from (src/events/bus.ts).
   */
  append(event: RunEvent): void {
    this.appendAllTx([[[event], []]]);
  }

  /**
   * Store several events (and journal entries) in one transaction: all of
   * them or none. One commit for a burst of events costs about a quarter of
   * one commit per event.
   */
  appendMany(events: readonly RunEvent[], journal: readonly JournalEntry[] = []): void {
    if (events.length === 0 && journal.length === 0) return;
    this.appendAllTx([[events, journal]]);
  }

  /** Several batches (of several runs) in one transaction: all of them or none (src/engine/trace-stores.ts). */
  appendAll(batches: readonly AppendBatch[]): void {
    if (batches.length > 0) this.appendAllTx(batches);
  }

  /** Events (masked by the bus they come from) as one batch row per run among them, and what they change of the runs' rows. */
  private writeEvents(events: readonly RunEvent[]): void {
    let from = 0;
    for (let i = 1; i <= events.length; i++) {
      if (i === events.length || events[i]!.task_id !== events[from]!.task_id) {
        this.writeBatch(events, from, i);
        from = i;
      }
    }
    for (const event of events) this.index(event);
  }

  /** events[from..to), all of one run, as one row of event_batches and a row of event_traces per recursion among them. */
  private writeBatch(events: readonly RunEvent[], from: number, to: number): void {
    const first = events[from]!;
    let json = `[${takeEventJson(first)}`;
    let lastSeq = first.seq;
    for (let i = from + 1; i < to; i++) {
      const event = events[i]!;
      // As the trigger holds batches to: a run's events in seq order, each once (the append is undone).
      if (!(event.seq > lastSeq)) {
        throw new Error(`UNIQUE constraint failed: event_batches.first_seq (seq ${event.seq} of run ${first.task_id} after ${lastSeq} in one append)`);
      }
      json += `,${takeEventJson(event)}`;
      lastSeq = event.seq;
    }
    const batch = this.insertBatch.run(first.task_id, first.seq, lastSeq, `${json}]`).lastInsertRowid;
    let traceId: string | undefined;
    for (let i = from; i < to; i++) {
      const next = events[i]!.trace_id;
      if (next === undefined || next === traceId) continue;
      this.insertTrace.run(next, batch);
      traceId = next;
    }
  }

  /** What an event changes of the runs' rows and their indexes. */
  private index(safe: RunEvent): void {
    if (safe.type === "run.resumed") {
      this.reopenRun.run(safe.task_id);
    } else if (safe.type === "agent.started") {
      this.insertRunAgent.run({ agent_id: safe.agent_id, task_id: safe.task_id, ts: safe.ts });
    } else if (safe.type === "run.started") {
      this.upsertStarted.run({ task_id: safe.task_id, agent_id: safe.agent_id, input: safe.input, ts: safe.ts });
      if (safe.session_id !== undefined) this.insertRunSession.run({ session_id: safe.session_id, task_id: safe.task_id, ts: safe.ts });
    } else if (safe.type === "run.finished") {
      this.upsertFinished.run({
        task_id: safe.task_id,
        agent_id: safe.agent_id,
        ts: safe.ts,
        result_type: safe.result_type,
        answer: safe.answer ?? null,
        error: safe.error ?? null,
        usage_json: JSON.stringify(safe.usage),
      });
    }
  }

  /** A run's journal, in key order. */
  journalOf(taskId: string): JournalEntry[] {
    return this.db.prepare("SELECT task_id, key, kind, ts, json FROM journal WHERE task_id = ? ORDER BY key").all(taskId) as JournalEntry[];
  }

  /** The highest `seq` stored for a run (0 when none). */
  lastSeq(taskId: string): number {
    const row = this.db.prepare("SELECT MAX(last_seq) AS seq FROM event_batches WHERE task_id = ?").get(taskId) as { seq: number | null };
    return row.seq ?? 0;
  }

  /** The decisions recorded for a run's calls, by journal key. */
  approvalsOf(taskId: string): Map<string, ApprovalRecord> {
    const rows = this.db.prepare("SELECT key, decision, reason, ts FROM approvals WHERE task_id = ?").all(taskId) as {
      key: string;
      decision: "approve" | "deny";
      reason: string | null;
      ts: string;
    }[];
    return new Map(rows.map((r) => [r.key, { key: r.key, decision: r.decision, ts: r.ts, ...(r.reason !== null ? { reason: r.reason } : {}) }]));
  }

  /** Record (or replace) a decision on one call of a run. */
  decide(taskId: string, record: ApprovalRecord): void {
    this.db
      .prepare(
        `INSERT INTO approvals (task_id, key, decision, reason, ts) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (task_id, key) DO UPDATE SET decision = excluded.decision, reason = excluded.reason, ts = excluded.ts`,
      )
      .run(taskId, record.key, record.decision, record.reason ?? null, record.ts);
  }

  /** Every event of one run (after `afterSeq`, default 0), in `seq` order. */
  eventsOfTask(taskId: string, afterSeq = 0): RunEvent[] {
    const rows = this.db.prepare("SELECT json FROM event_batches WHERE task_id = ? AND last_seq > ? ORDER BY last_seq").all(taskId, afterSeq);
    return eventsOf(rows, (event) => event.seq > afterSeq);
  }

  /** Every event of one recursion, in order. */
  eventsOfTrace(traceId: string): RunEvent[] {
    const rows = this.db
      .prepare("SELECT b.json FROM event_traces t JOIN event_batches b ON b.id = t.batch_id WHERE t.trace_id = ? ORDER BY b.task_id, b.last_seq")
      .all(traceId);
    return eventsOf(rows, (event) => event.trace_id === traceId);
  }

  /**
   * Ids of stored runs that `part` begins or ends (at most `limit`, in id
   * order), so a shortened id can be typed: ids made by the runtime begin
   * with the time, so runs made close together share their first digits
   * and differ in their last (docs/design/journal.md#ids). Compared exactly,
   * case and all, over the `runs` table (one row per run).
   */
  taskIdsMatching(part: string, limit = 10): string[] {
    const rows = this.db
      .prepare("SELECT task_id FROM runs WHERE substr(task_id, 1, length(@part)) = @part OR substr(task_id, -length(@part)) = @part ORDER BY task_id LIMIT @limit")
      .all({ part, limit }) as { task_id: string }[];
    return rows.map((r) => r.task_id);
  }

  /** The task id `given` names: itself when stored, else the one stored run's id it begins or ends. Throws NOT_FOUND otherwise. */
  resolveTaskId(given: string): string {
    if (this.lastSeq(given) > 0) return given;
    return pickTaskId(given, this.taskIdsMatching(given, 6), dirname(this.file));
  }

  /** One run's summary, if it was stored. */
  run(taskId: string): RunSummary | undefined {
    const row = this.db.prepare("SELECT * FROM runs WHERE task_id = ?").get(taskId) as RunRow | undefined;
    return row && toSummary(row);
  }

  /**
   * The runs in which an agent ran, as the entry agent or at any depth below
   * it (a planner a flow called), newest first. `limit` defaults to 20.
   */
  runsOfAgent(agentId: string, options: { limit?: number } = {}): RunSummary[] {
    return this.listRuns({ ...options, agent: agentId });
  }

  /** The runs of one conversation (docs/sessions.md), newest first. `limit` defaults to 20. */
  runsOfSession(sessionId: string, options: { limit?: number } = {}): RunSummary[] {
    return this.listRuns({ ...options, session: sessionId });
  }

  /** The most recent runs that pass every filter given, newest first. `limit` defaults to 20. */
  listRuns(query: RunQuery = {}): RunSummary[] {
    const where: string[] = [];
    const params: Record<string, string | number> = { limit: query.limit ?? 20 };
    if (query.agent !== undefined) {
      params.agent = query.agent;
      where.push("task_id IN (SELECT task_id FROM run_agents WHERE agent_id = @agent UNION SELECT task_id FROM runs WHERE agent_id = @agent)");
    }
    if (query.session !== undefined) {
      params.session = query.session;
      where.push("task_id IN (SELECT task_id FROM run_sessions WHERE session_id = @session)");
    }
    if (query.status === "running") where.push("finished_at IS NULL");
    else if (query.status !== undefined) {
      params.status = query.status;
      where.push("result_type = @status");
    }
    const rows = this.db
      .prepare(`SELECT * FROM runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY started_at DESC, task_id LIMIT @limit`)
      .all(params) as RunRow[];
    return rows.map(toSummary);
  }

  /** Close the database; idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}

/** The events of batch rows, in order, that `keep` holds for. */
function eventsOf(rows: unknown[], keep: (event: RunEvent) => boolean): RunEvent[] {
  const out: RunEvent[] = [];
  for (const row of rows as { json: string }[]) {
    for (const event of JSON.parse(row.json) as RunEvent[]) if (keep(event)) out.push(event);
  }
  return out;
}

/** How long opening a store waits for another process migrating it (a large store takes seconds). */
const MIGRATION_WAIT_MS = 120_000;

/**
 * Create the schema, or move an older store to it, or refuse a store written
 * by a newer runtime. Processes opening one store at once (a server and its
 * workers starting together) migrate it once: the migration takes the write
 * lock first and reads the version again under it.
 */
function migrate(db: Database.Database, file: string, busyTimeoutMs: number): void {
  db.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  if (schemaVersion(db, file) === TRACE_SCHEMA_VERSION) return;
  db.pragma(`busy_timeout = ${Math.max(busyTimeoutMs, MIGRATION_WAIT_MS)}`);
  try {
    db.transaction(() => {
      const found = schemaVersion(db, file);
      if (found === TRACE_SCHEMA_VERSION) return;
      if (found === undefined) db.exec(SCHEMA);
      else fromOlderSchema(db, found);
      db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)").run(String(TRACE_SCHEMA_VERSION));
    }).immediate();
  } finally {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  }
}

/** The store's schema_version (undefined for a new store); a newer one than this code's is refused. */
function schemaVersion(db: Database.Database, file: string): number | undefined {
  const row = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | undefined;
  const found = row === undefined ? undefined : Number(row.value);
  if (found !== undefined && !(found <= TRACE_SCHEMA_VERSION)) {
    throw new RuntimeError(
      "USAGE",
      `trace store ${file} has schema_version ${row?.value}, newer than this runtime supports (${TRACE_SCHEMA_VERSION}); upgrade the runtime or use another --trace-dir`,
    );
  }
  return found;
}

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

/** Version of the session index below; kept apart from schema_version so older stores gain it in place. */
const SESSION_INDEX_VERSION = "1";

/**
 * Which runs belong to which conversation (`run.started.session_id`), for
 * `runsOfSession` (docs/sessions.md). A store without it gets the table and
 * is filled from the events it holds, once.
 */
function indexSessions(db: Database.Database): void {
  const row = db.prepare("SELECT value FROM meta WHERE key = 'session_index_version'").get() as { value: string } | undefined;
  if (row?.value === SESSION_INDEX_VERSION) return;
  db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS run_sessions (
      session_id TEXT NOT NULL,
      task_id TEXT NOT NULL,
      started_at TEXT NOT NULL,
      PRIMARY KEY (session_id, task_id)
    ) WITHOUT ROWID;
    INSERT OR IGNORE INTO run_sessions (session_id, task_id, started_at)
      SELECT json_extract(json, '$.session_id'), task_id, ts FROM events
       WHERE type = 'run.started' AND json_extract(json, '$.session_id') IS NOT NULL;`);
    db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('session_index_version', ?)").run(SESSION_INDEX_VERSION);
  })();
}

/** Version of the agent index below; kept apart from schema_version so older stores gain it in place. */
const AGENT_INDEX_VERSION = "1";

/**
 * Which agents ran in which run (every `agent.started`, at any depth), for
 * `runsOfAgent`. A store without it gets the table and is filled from the
 * events it holds, once.
 */
function indexAgents(db: Database.Database): void {
  const row = db.prepare("SELECT value FROM meta WHERE key = 'agent_index_version'").get() as { value: string } | undefined;
  if (row?.value === AGENT_INDEX_VERSION) return;
  db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS run_agents (
      agent_id TEXT NOT NULL,
      task_id TEXT NOT NULL,
      started_at TEXT NOT NULL,
      PRIMARY KEY (agent_id, task_id)
    ) WITHOUT ROWID;
    INSERT OR IGNORE INTO run_agents (agent_id, task_id, started_at)
      SELECT agent_id, task_id, MIN(ts) FROM events WHERE type = 'agent.started' GROUP BY agent_id, task_id;`);
    db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('agent_index_version', ?)").run(AGENT_INDEX_VERSION);
  })();
}

/** A run's summary from its row. */
export function toSummary(row: RunRow): RunSummary {
  const summary: RunSummary = {
    task_id: row.task_id,
    agent_id: row.agent_id,
    input: row.input,
    started_at: row.started_at,
  };
  if (row.finished_at !== null) summary.finished_at = row.finished_at;
  if (row.result_type === "answer" || row.result_type === "error" || row.result_type === "paused") summary.result_type = row.result_type;
  if (row.answer !== null) summary.answer = row.answer;
  if (row.error !== null) summary.error = row.error;
  if (row.usage_json !== null) summary.usage = JSON.parse(row.usage_json) as Usage;
  return summary;
}

/**
 * `mkdir -p`, one level at a time: Node's `mkdirSync(dir, { recursive: true })`
 * loops forever on some paths it cannot create (under /proc), where this fails.
 */
function makeDirectory(dir: string): void {
  const missing: string[] = [];
  let current = resolve(dir);
  while (!existsSync(current)) {
    missing.push(current);
    const parent = dirname(current);
    if (parent === current) break;
    current = parent;
  }
  for (const path of missing.reverse()) {
    try {
      mkdirSync(path);
    } catch (err) {
      // Another process (or run) created it in the meantime.
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
}

/**
 * The one id a shortened `given` names among the stored ids it begins or
 * ends (`matches`, in id order): the rule of both stores (PostgreSQL:
 * src/store/postgres/run-store.ts).
 */
export function pickTaskId(given: string, matches: readonly string[], where: string): string {
  // An empty part begins every id: it names none.
  if (given === "") matches = [];
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) {
    throw new RuntimeError(
      "NOT_FOUND",
      `task_id ${given} is ambiguous: it begins or ends ${matches.slice(0, 5).join(", ")}${matches.length > 5 ? ", ..." : ""}`,
    );
  }
  throw new RuntimeError("NOT_FOUND", `no run with task_id ${given} in ${where}`);
}
