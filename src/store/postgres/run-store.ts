/**
 * The run store on PostgreSQL (docs/scale-out.md#stores): the same tables
 * and answers as the embedded SQLite store (src/store/sqlite/trace-store.ts), in the
 * `runtime` schema. Each `appendMany` is one transaction that also notifies
 * `runtime_events` with the task ids it wrote, so every server following a
 * run hears of its new events (`watch`, read through src/store/follow.ts). A run writes
 * through `writer()` (src/store/committer.ts).
 */
import pg from "pg";
import { takeEventJson } from "../../events/bus.js";
import type { RunEvent } from "../../events/types.js";
import { Committer } from "../committer.js";
import type { AppendBatch, ApprovalRecord, JournalEntry, RunQuery, RunStore, RunSummary, RunWriter, Watch } from "../runs.js";
import { pickTaskId, toSummary, type RunRow } from "../run-rows.js";
import { SCHEMA as S, isUniqueViolation, reading, safeUrl, storeError, transient } from "./connect.js";
import { ChannelListener } from "./listener.js";

/** The channel a store notifies on commit: payload `<task_id> <last seq>` (or `<task_id> done` from the queue). */
export const EVENTS_CHANNEL = "runtime_events";

export class PostgresRunStore implements RunStore {
  readonly location: string;
  /** The LISTEN connection on EVENTS_CHANNEL, opened by the first `watch`. */
  private listener: Promise<ChannelListener> | undefined;
  /** Who watches which run (`"*"`: every run). */
  private readonly watchers = new Map<string, Set<(taskId: string) => void>>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
  ) {
    this.location = safeUrl(url);
  }

  async appendMany(events: readonly RunEvent[], entries: readonly JournalEntry[] = []): Promise<void> {
    if (events.length === 0 && entries.length === 0) return;
    // One statement may not upsert a row twice: a call's start and its result in one batch keep the result.
    const latest = new Map<string, JournalEntry>();
    for (const entry of entries) latest.set(`${entry.task_id}\u0000${entry.key}`, entry);
    const journal = [...latest.values()];
    // One round trip: the statements go as one query text, which PostgreSQL runs as one transaction. A
    // connection is held for the statements alone, not for the writer's turns between them: behind
    // PgBouncer (transaction mode) 100 busy workers' commits held its server connections idle in
    // transaction while each waited for its turn of the CPU (docs/scale-out.md#100-workers-on-one-postgresql).
    const statements: string[] = [];
    if (events.length) statements.push(...eventStatements(events));
    if (journal.length) {
      statements.push(
        `INSERT INTO ${S}.journal (task_id, key, kind, ts, json) VALUES ${journal.map((j) => row([j.task_id, j.key, j.kind, j.ts, j.json])).join(", ")}
         ON CONFLICT (task_id, key) DO UPDATE SET kind = excluded.kind, ts = excluded.ts, json = excluded.json`,
      );
    }
    const last = new Map<string, number>();
    for (const e of events) last.set(e.task_id, Math.max(last.get(e.task_id) ?? 0, e.seq));
    for (const [task, seq] of last) statements.push(`SELECT pg_notify(${literal(EVENTS_CHANNEL)}, ${literal(`${task} ${seq}`)})`);
    try {
      await this.pool.query(statements.join(";\n"));
    } catch (err) {
      throw storeError(this.url, "cannot store events", err);
    }
  }

  async decide(taskId: string, record: ApprovalRecord): Promise<void> {
    await this.query(
      "cannot record a decision",
      `INSERT INTO ${S}.approvals (task_id, key, decision, reason, ts) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (task_id, key) DO UPDATE SET decision = excluded.decision, reason = excluded.reason, ts = excluded.ts`,
      [taskId, record.key, record.decision, record.reason ?? null, record.ts],
    );
  }

  async journalOf(taskId: string): Promise<JournalEntry[]> {
    // COLLATE "C": the same key order as SQLite's binary comparison.
    return this.query<JournalEntry>(
      "cannot read a journal",
      `SELECT task_id, key, kind, ts, json FROM ${S}.journal WHERE task_id = $1 ORDER BY key COLLATE "C"`,
      [taskId],
    );
  }

  async approvalsOf(taskId: string): Promise<Map<string, ApprovalRecord>> {
    const rows = await this.query<{ key: string; decision: "approve" | "deny"; reason: string | null; ts: string }>(
      "cannot read decisions",
      `SELECT key, decision, reason, ts FROM ${S}.approvals WHERE task_id = $1`,
      [taskId],
    );
    return new Map(rows.map((r) => [r.key, { key: r.key, decision: r.decision, ts: r.ts, ...(r.reason !== null ? { reason: r.reason } : {}) }]));
  }

  async lastSeq(taskId: string): Promise<number> {
    const rows = await this.query<{ seq: number | null }>("cannot read a run", `SELECT MAX(seq) AS seq FROM ${S}.events WHERE task_id = $1`, [taskId]);
    return rows[0]?.seq ?? 0;
  }

  async eventsOfTask(taskId: string, afterSeq = 0, limit?: number): Promise<RunEvent[]> {
    const rows = await this.query<{ json: string }>(
      "cannot read events",
      `SELECT json FROM ${S}.events WHERE task_id = $1 AND seq > $2 ORDER BY seq${limit === undefined ? "" : " LIMIT $3"}`,
      limit === undefined ? [taskId, afterSeq] : [taskId, afterSeq, limit],
    );
    return rows.map((r) => JSON.parse(r.json) as RunEvent);
  }

  async eventsOfTrace(traceId: string): Promise<RunEvent[]> {
    const rows = await this.query<{ json: string }>(
      "cannot read events",
      `SELECT json FROM ${S}.events WHERE trace_id = $1 ORDER BY task_id COLLATE "C", seq`,
      [traceId],
    );
    return rows.map((r) => JSON.parse(r.json) as RunEvent);
  }

  async run(taskId: string): Promise<RunSummary | undefined> {
    const rows = await this.query<RunRow>("cannot read a run", `SELECT * FROM ${S}.runs WHERE task_id = $1`, [taskId]);
    return rows[0] && toSummary(rows[0]);
  }

  async listRuns(query: RunQuery = {}): Promise<RunSummary[]> {
    const params: unknown[] = [];
    const where: string[] = [];
    if (query.agent !== undefined) {
      params.push(query.agent);
      where.push(
        `task_id IN (SELECT task_id FROM ${S}.run_agents WHERE agent_id = $${params.length} UNION SELECT task_id FROM ${S}.runs WHERE agent_id = $${params.length})`,
      );
    }
    if (query.session !== undefined) {
      params.push(query.session);
      where.push(`task_id IN (SELECT task_id FROM ${S}.run_sessions WHERE session_id = $${params.length})`);
    }
    if (query.status === "running") where.push("finished_at IS NULL");
    else if (query.status !== undefined) {
      params.push(query.status);
      where.push(`result_type = $${params.length}`);
    }
    if (query.caller !== undefined) {
      params.push(query.caller);
      where.push(`caller = $${params.length}`);
    }
    params.push(query.limit ?? 20);
    const rows = await this.query<RunRow>(
      "cannot list runs",
      `SELECT * FROM ${S}.runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY started_at DESC, task_id COLLATE "C" LIMIT $${params.length}`,
      params,
    );
    return rows.map(toSummary);
  }

  async resolveTaskId(given: string): Promise<string> {
    if ((await this.lastSeq(given)) > 0) return given;
    // The rule of the SQLite store (TraceStore.taskIdsMatching, src/store/sqlite/trace-store.ts): begins or ends an id, compared exactly.
    const rows = await this.query<{ task_id: string }>(
      "cannot read runs",
      `SELECT task_id FROM ${S}.runs WHERE left(task_id, length($1)) = $1 OR right(task_id, length($1)) = $1 ORDER BY task_id COLLATE "C" LIMIT 6`,
      [given],
    );
    return pickTaskId(
      given,
      rows.map((r) => r.task_id),
      this.location,
    );
  }

  /** The pool is the Store's (src/store/store.ts), which closes it; the LISTEN connection is this one's. */
  async close(): Promise<void> {
    const listener = this.listener;
    this.listener = undefined;
    await listener?.then(
      (l) => l.close(),
      () => {},
    );
  }

  async watch(taskId: string, onStored: (taskId: string) => void): Promise<Watch> {
    let set = this.watchers.get(taskId);
    if (!set) this.watchers.set(taskId, (set = new Set()));
    set.add(onStored);
    const close = () => {
      set.delete(onStored);
      if (set.size === 0 && this.watchers.get(taskId) === set) this.watchers.delete(taskId);
    };
    try {
      const listener = await (this.listener ??= this.listen());
      return {
        get up() {
          return listener.up;
        },
        close,
      };
    } catch (err) {
      close();
      throw storeError(this.url, "cannot listen for events", err);
    }
  }

  private async listen(): Promise<ChannelListener> {
    const listener = new ChannelListener(this.url);
    const tell = (task: string, as = task) => {
      for (const fn of this.watchers.get(task) ?? []) fn(as);
    };
    listener.on(EVENTS_CHANNEL, (payload) => {
      const task = payload.slice(0, payload.lastIndexOf(" "));
      tell(task);
      tell("*", task);
    });
    // Notifications may have been lost with the connection: every watcher reads again.
    listener.onReconnect(() => {
      for (const task of [...this.watchers.keys()]) tell(task);
    });
    try {
      await listener.start();
    } catch (err) {
      this.listener = undefined;
      await listener.close();
      throw err;
    }
    return listener;
  }

  /**
   * A committer per run: its transactions one after the other, in order,
   * each through `appendMany`, so that a view of this store that fences
   * `appendMany` (a worker's lease, src/queue/worker.ts) fences them all,
   * the tries again of a write made while the database was away included.
   */
  writer(stored?: (seq: number) => void): RunWriter {
    const append = (batches: readonly AppendBatch[]) =>
      this.appendMany(
        batches.flatMap(([events]) => events),
        batches.flatMap(([, journal]) => journal),
      );
    return new Committer(this.location, append, transient, isUniqueViolation).writer(stored);
  }

  private async query<T extends pg.QueryResultRow>(what: string, text: string, values: unknown[]): Promise<T[]> {
    try {
      // Every statement here reads, or upserts a decision: safe to make again once the database is back.
      return (await reading(() => this.pool.query<T>(text, values))).rows;
    } catch (err) {
      throw storeError(this.url, what, err);
    }
  }
}

/** A value as an SQL literal (the statements of a commit go as one query text, which takes no parameters). */
function literal(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return "NULL";
  return typeof value === "number" ? String(value) : pg.escapeLiteral(value);
}

const row = (values: (string | number | null | undefined)[]): string => `(${values.map(literal).join(", ")})`;

/** The statements that store `events`: their rows, and the run summaries and indexes some of them change. */
function eventStatements(events: readonly RunEvent[]): string[] {
  const statements = [
    `INSERT INTO ${S}.events (task_id, seq, type, agent_id, step_id, parent_step_id, trace_id, ts, json) VALUES ${events
      .map((e) => row([e.task_id, e.seq, e.type, e.agent_id, e.step_id, e.parent_step_id, e.trace_id, e.ts, takeEventJson(e)]))
      .join(", ")}`,
  ];
  for (const e of events) {
    if (e.type === "run.resumed") {
      statements.push(`UPDATE ${S}.runs SET finished_at = NULL, result_type = NULL, answer = NULL, error = NULL WHERE task_id = ${literal(e.task_id)}`);
    } else if (e.type === "agent.started") {
      statements.push(`INSERT INTO ${S}.run_agents (agent_id, task_id, started_at) VALUES ${row([e.agent_id, e.task_id, e.ts])} ON CONFLICT DO NOTHING`);
    } else if (e.type === "run.started") {
      statements.push(
        `INSERT INTO ${S}.runs (task_id, agent_id, input, started_at, caller) VALUES ${row([e.task_id, e.agent_id, e.input, e.ts, e.caller])}
         ON CONFLICT (task_id) DO UPDATE SET agent_id = excluded.agent_id, input = excluded.input, started_at = excluded.started_at, caller = excluded.caller`,
      );
      if (e.session_id !== undefined) {
        statements.push(
          `INSERT INTO ${S}.run_sessions (session_id, task_id, started_at) VALUES ${row([e.session_id, e.task_id, e.ts])} ON CONFLICT DO NOTHING`,
        );
      }
    } else if (e.type === "run.finished") {
      statements.push(
        `INSERT INTO ${S}.runs (task_id, agent_id, input, started_at, finished_at, result_type, answer, error, usage_json)
         VALUES ${row([e.task_id, e.agent_id, "", e.ts, e.ts, e.result_type, e.answer, e.error, JSON.stringify(e.usage)])}
         ON CONFLICT (task_id) DO UPDATE SET finished_at = excluded.finished_at, result_type = excluded.result_type,
           answer = excluded.answer, error = excluded.error, usage_json = excluded.usage_json`,
      );
    }
  }
  return statements;
}
