/**
 * The embedded run store: every event, journal entry and decision of every
 * run in SQLite (`<traceDir>/traces.db`, its schema in trace-schema.ts).
 * Its calls complete before they return (`sqliteRunStore` wraps it as the
 * RunStore port); the committer of its writers (src/store/committer.ts)
 * writes through `appendAll`.
 */
import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import Database from "better-sqlite3";
import { RuntimeError, describeError } from "../../errors.js";
import type { RunEvent } from "../../events/types.js";
import { takeEventJson } from "../../events/bus.js";
import { pickTaskId, toSummary, type RunRow } from "../run-rows.js";
import type { AppendBatch, ApprovalRecord, JournalEntry, RunQuery, RunSummary } from "../runs.js";
import { migrate } from "./schema.js";
import { stored } from "./stored.js";
import { TRACE_DB_FILE, TRACE_SCHEMA } from "./trace-schema.js";

export { TRACE_DB_FILE, TRACE_SCHEMA_VERSION } from "./trace-schema.js";

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
      `INSERT INTO runs (task_id, agent_id, input, started_at, caller) VALUES (@task_id, @agent_id, @input, @ts, @caller)
       ON CONFLICT (task_id) DO UPDATE SET agent_id = excluded.agent_id, input = excluded.input, started_at = excluded.started_at, caller = excluded.caller`,
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
    const appendAllTx = db.transaction((batches: readonly AppendBatch[]) => {
      for (const [events, journal] of batches) {
        this.writeEvents(events);
        for (const e of journal) this.upsertJournal.run(e.task_id, e.key, e.kind, e.ts, e.json);
      }
    });
    // Committed: whoever follows these runs in this process reads them now (src/store/follow.ts).
    this.appendAllTx = (batches) => {
      appendAllTx(batches);
      stored(file, batches);
    };
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
      migrate(db, file, TRACE_SCHEMA, busyTimeoutMs);
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

  /** Several batches (of several runs) in one transaction: all of them or none (src/store/committer.ts). */
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
        throw new RuntimeError(
          "STORE",
          `UNIQUE constraint failed: event_batches.first_seq (seq ${event.seq} of run ${first.task_id} after ${lastSeq} in one append)`,
        );
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
      this.upsertStarted.run({ task_id: safe.task_id, agent_id: safe.agent_id, input: safe.input, ts: safe.ts, caller: safe.caller ?? null });
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

  /** The events of one run after `afterSeq` (default 0), in `seq` order: the first `limit` of them when given. */
  eventsOfTask(taskId: string, afterSeq = 0, limit = Number.POSITIVE_INFINITY): RunEvent[] {
    const out: RunEvent[] = [];
    // Batches one at a time, until the page is full: a page of a long run reads only the batches it needs.
    const rows = this.db.prepare("SELECT json FROM event_batches WHERE task_id = ? AND last_seq > ? ORDER BY last_seq").iterate(taskId, afterSeq);
    for (const row of rows as Iterable<{ json: string }>) {
      for (const event of JSON.parse(row.json) as RunEvent[]) {
        if (out.length >= limit) break;
        if (event.seq > afterSeq) out.push(event);
      }
      if (out.length >= limit) break;
    }
    return out;
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
      .prepare(
        "SELECT task_id FROM runs WHERE substr(task_id, 1, length(@part)) = @part OR substr(task_id, -length(@part)) = @part ORDER BY task_id LIMIT @limit",
      )
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
    if (query.caller !== undefined) {
      params.caller = query.caller;
      where.push("caller = @caller");
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

/**
 * `mkdir -p`, one level at a time: Node's `mkdirSync(dir, { recursive: true })`
 * loops forever on some paths it cannot create (under /proc), where this fails.
 */
export function makeDirectory(dir: string): void {
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
