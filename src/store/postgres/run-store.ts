/**
 * The run store on PostgreSQL (docs/scale-out.md#stores): the same tables
 * and answers as the embedded SQLite store (src/store/sqlite/trace-store.ts), in the
 * `runtime` schema. Each `appendMany` is one transaction that also notifies
 * `runtime_events` with the task ids it wrote, so every server following a
 * run hears of its new events (`watch`, read through src/store/follow.ts). A run writes
 * through `writer()` (src/store/committer.ts).
 */
import type pg from "pg";
import { takeEventJson } from "../../events/bus.js";
import type { RunEvent } from "../../events/types.js";
import { Committer } from "../committer.js";
import type { AppendBatch, ApprovalRecord, JournalEntry, RunQuery, RunStore, RunSummary, RunWriter, Watch } from "../runs.js";
import { pickTaskId, toSummary, type RunRow } from "../run-rows.js";
import { SCHEMA as S, isUniqueViolation, reading, safeUrl, storeError, transaction, transient } from "./connect.js";
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
    try {
      await transaction(this.pool, async (client) => {
        if (events.length) await this.writeEvents(client, events);
        if (journal.length) {
          await client.query(
            `INSERT INTO ${S}.journal (task_id, key, kind, ts, json)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
             ON CONFLICT (task_id, key) DO UPDATE SET kind = excluded.kind, ts = excluded.ts, json = excluded.json`,
            [journal.map((j) => j.task_id), journal.map((j) => j.key), journal.map((j) => j.kind), journal.map((j) => j.ts), journal.map((j) => j.json)],
          );
        }
        const last = new Map<string, number>();
        for (const e of events) last.set(e.task_id, Math.max(last.get(e.task_id) ?? 0, e.seq));
        for (const [task, seq] of last) await client.query("SELECT pg_notify($1, $2)", [EVENTS_CHANNEL, `${task} ${seq}`]);
      });
    } catch (err) {
      throw storeError(this.url, "cannot store events", err);
    }
  }

  private async writeEvents(client: pg.PoolClient, events: readonly RunEvent[]): Promise<void> {
    await client.query(
      `INSERT INTO ${S}.events (task_id, seq, type, agent_id, step_id, parent_step_id, trace_id, ts, json)
       SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])`,
      [
        events.map((e) => e.task_id),
        events.map((e) => e.seq),
        events.map((e) => e.type),
        events.map((e) => e.agent_id),
        events.map((e) => e.step_id ?? null),
        events.map((e) => e.parent_step_id ?? null),
        events.map((e) => e.trace_id ?? null),
        events.map((e) => e.ts),
        events.map((e) => takeEventJson(e)),
      ],
    );
    for (const e of events) {
      if (e.type === "run.resumed") {
        await client.query(`UPDATE ${S}.runs SET finished_at = NULL, result_type = NULL, answer = NULL, error = NULL WHERE task_id = $1`, [e.task_id]);
      } else if (e.type === "agent.started") {
        await client.query(`INSERT INTO ${S}.run_agents (agent_id, task_id, started_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [
          e.agent_id,
          e.task_id,
          e.ts,
        ]);
      } else if (e.type === "run.started") {
        await client.query(
          `INSERT INTO ${S}.runs (task_id, agent_id, input, started_at, caller) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (task_id) DO UPDATE SET agent_id = excluded.agent_id, input = excluded.input, started_at = excluded.started_at, caller = excluded.caller`,
          [e.task_id, e.agent_id, e.input, e.ts, e.caller ?? null],
        );
        if (e.session_id !== undefined) {
          await client.query(`INSERT INTO ${S}.run_sessions (session_id, task_id, started_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [
            e.session_id,
            e.task_id,
            e.ts,
          ]);
        }
      } else if (e.type === "run.finished") {
        await client.query(
          `INSERT INTO ${S}.runs (task_id, agent_id, input, started_at, finished_at, result_type, answer, error, usage_json)
           VALUES ($1, $2, '', $3, $3, $4, $5, $6, $7)
           ON CONFLICT (task_id) DO UPDATE SET finished_at = excluded.finished_at, result_type = excluded.result_type,
             answer = excluded.answer, error = excluded.error, usage_json = excluded.usage_json`,
          [e.task_id, e.agent_id, e.ts, e.result_type, e.answer ?? null, e.error ?? null, JSON.stringify(e.usage)],
        );
      }
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

  async eventsOfTask(taskId: string, afterSeq = 0): Promise<RunEvent[]> {
    const rows = await this.query<{ json: string }>("cannot read events", `SELECT json FROM ${S}.events WHERE task_id = $1 AND seq > $2 ORDER BY seq`, [
      taskId,
      afterSeq,
    ]);
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
