/**
 * Runs waiting for a worker, on PostgreSQL (docs/scale-out.md#the-queue).
 *
 * Two parts, each doing what it is good at. pg-boss (a well-kept PostgreSQL
 * job queue) carries a job per run to be taken: it hands each job to one
 * fetcher (`FOR UPDATE SKIP LOCKED`), keeps its own tables and cleans them.
 * The `runtime.run_requests` row is the run's lease: a worker owns a run
 * while its lease is fresh and renews it as the run goes; a lease left to
 * expire (a worker killed, a machine gone) makes the run take-able again,
 * and the next worker resumes it from its journal. A job is fetched, its
 * run claimed and the job completed in one transaction, so a run is never
 * lost between the two and never taken twice.
 *
 * Enqueueing notifies `runtime_runs`, so idle workers take a new run at once
 * rather than at their next poll.
 */
import PgBoss from "pg-boss";
import type pg from "pg";
import { RuntimeError } from "../errors.js";
import type { Budget } from "../config/types.js";
import type { Database, Store } from "../store/store.js";
import { SCHEMA as S, storeError, transaction } from "../store/postgres/connect.js";
import { EVENTS_CHANNEL } from "../store/postgres/run-store.js";

/** The pg-boss queue of runs, in pg-boss's own schema. */
const QUEUE = "runs";
const QUEUE_SCHEMA = "runtime_queue";
/** The channel an enqueue notifies: workers wake up and fetch. */
export const RUNS_CHANNEL = "runtime_runs";
/** A job of a team this worker does not run goes back, visible again after this long, for another worker. */
const FOREIGN_DELAY_S = 2;
/** An arbitrary constant: the advisory lock held while pg-boss starts (see `open`). */
const START_LOCK = 727_113_002;

/** What a server asks a worker to run. */
export interface RunRequest {
  task_id: string;
  /** The team's `name`: a worker runs only teams it has loaded. */
  team: string;
  input: string;
  agent?: string;
  session_id?: string;
  /** Limits replacing the team's budget (a resume with a larger budget). */
  budget?: Budget;
}

/** A run a worker has claimed: its request and how many times it was claimed (1 the first time). */
export interface ClaimedRun {
  request: RunRequest;
  attempts: number;
}

export type RequestState = "queued" | "running" | "done";

export interface QueueCounts {
  queued: number;
  running: number;
  done: number;
}

export class RunQueue {
  private constructor(
    private readonly db: Database,
    private readonly boss: PgBoss,
  ) {}

  /** The queue in `store`'s database (a PostgreSQL store). Creates pg-boss's schema on first use. */
  static async open(store: Store): Promise<RunQueue> {
    const db = store.database;
    if (!db) throw new RuntimeError("USAGE", `a job queue needs a PostgreSQL store (--store postgres://...), not ${store.location}`);
    const boss = new PgBoss({
      db: { executeSql: (text, values) => db.pool.query(text, values) },
      schema: QUEUE_SCHEMA,
      // No cron schedules; maintenance (expiry, archiving) stays on.
      schedule: false,
    });
    boss.on("error", () => {
      // Maintenance errors (a database restarting) are retried by pg-boss; the next call reports a lasting one.
    });
    try {
      // Processes starting together would race to create pg-boss's schema: one at a time.
      const lock = await db.pool.connect();
      try {
        await lock.query("SELECT pg_advisory_lock($1)", [START_LOCK]);
        await boss.start();
        if (!(await boss.getQueue(QUEUE))) await boss.createQueue(QUEUE, { name: QUEUE, retryLimit: 0 });
      } finally {
        await lock.query("SELECT pg_advisory_unlock($1)", [START_LOCK]).catch(() => {});
        lock.release();
      }
    } catch (err) {
      await boss.stop({ graceful: false, wait: false }).catch(() => {});
      throw storeError(db.url, "cannot open the job queue", err);
    }
    return new RunQueue(db, boss);
  }

  /** Queue a new run: its request and its job commit together. */
  async enqueue(request: RunRequest): Promise<void> {
    await this.guard("cannot queue the run", () =>
      transaction(this.db.pool, async (client) => {
        const { task_id, team, ...rest } = request;
        await client.query(`INSERT INTO ${S}.run_requests (task_id, team, request_json, state) VALUES ($1, $2, $3, 'queued')`, [
          task_id,
          team,
          JSON.stringify(rest),
        ]);
        await this.sendJob(client, task_id);
      }),
    );
  }

  /**
   * Queue a stored run again (resume, approvals decided): it goes on from its
   * journal on whichever worker takes it. False when the run is unknown or
   * still held by a worker.
   */
  async requeue(taskId: string, budget?: Budget): Promise<boolean> {
    return this.guard("cannot queue the run", () =>
      transaction(this.db.pool, async (client) => {
        const { rows } = await client.query<{ request_json: string }>(
          `SELECT request_json FROM ${S}.run_requests WHERE task_id = $1 AND (state = 'done' OR (state = 'running' AND lease_until < now())) FOR UPDATE`,
          [taskId],
        );
        const row = rows[0];
        if (!row) return false;
        const request = { ...(JSON.parse(row.request_json) as Omit<RunRequest, "task_id" | "team">), ...(budget ? { budget } : {}) };
        await client.query(`UPDATE ${S}.run_requests SET state = 'queued', worker_id = NULL, lease_until = NULL, request_json = $2, result_type = NULL WHERE task_id = $1`, [
          taskId,
          JSON.stringify(request),
        ]);
        await this.sendJob(client, taskId);
        return true;
      }),
    );
  }

  /**
   * Take up to `max` runs for `workerId`, each under a lease of `leaseMs`.
   * A job whose run is done or held by a live lease is completed and
   * skipped; the run stays with its holder.
   */
  async claim(workerId: string, max: number, leaseMs: number, teams: ReadonlySet<string>): Promise<ClaimedRun[]> {
    if (max <= 0) return [];
    return this.guard("cannot take runs from the queue", () =>
      transaction(this.db.pool, async (client) => {
        const wrapped = { executeSql: (text: string, values: unknown[]) => client.query(text, values) };
        const jobs = await this.boss.fetch<{ task_id: string }>(QUEUE, { batchSize: max, db: wrapped });
        if (jobs.length === 0) return [];
        const claimed: ClaimedRun[] = [];
        const skipped: string[] = [];
        for (const job of jobs) {
          const { rows } = await client.query<{ team: string; request_json: string; attempts: number }>(
            `UPDATE ${S}.run_requests
                SET state = 'running', worker_id = $2, lease_until = now() + $3 * interval '1 millisecond',
                    attempts = attempts + 1, started_at = COALESCE(started_at, now())
              WHERE task_id = $1 AND team = ANY($4::text[])
                AND (state = 'queued' OR (state = 'running' AND lease_until < now()))
          RETURNING team, request_json, attempts`,
            [job.data.task_id, workerId, leaseMs, [...teams]],
          );
          const row = rows[0];
          if (!row) {
            skipped.push(job.id);
            continue;
          }
          claimed.push({ request: { task_id: job.data.task_id, team: row.team, ...(JSON.parse(row.request_json) as object) } as RunRequest, attempts: row.attempts });
        }
        // A job whose run this worker cannot take (another team) goes back for another worker.
        const foreign = jobs.filter((j) => !claimed.some((c) => c.request.task_id === j.data.task_id) && !skipped.includes(j.id));
        for (const job of foreign) await this.sendJob(client, job.data.task_id, FOREIGN_DELAY_S);
        await this.boss.complete(QUEUE, jobs.map((j) => j.id), { db: wrapped });
        return claimed;
      }),
    );
  }

  /** Extend the lease; false when the worker no longer holds the run (it expired and another took it). */
  async renew(taskId: string, workerId: string, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.guard("cannot renew a lease", () =>
      this.db.pool.query(
        `UPDATE ${S}.run_requests SET lease_until = now() + $3 * interval '1 millisecond' WHERE task_id = $1 AND worker_id = $2 AND state = 'running'`,
        [taskId, workerId, leaseMs],
      ),
    );
    return (rowCount ?? 0) > 0;
  }

  /** The run ended (answer, error, paused): done, unless the worker lost it meanwhile. Followers are told. */
  async finish(taskId: string, workerId: string, resultType: string): Promise<boolean> {
    return this.guard("cannot mark the run done", () =>
      transaction(this.db.pool, async (client) => {
        const { rowCount } = await client.query(
          `UPDATE ${S}.run_requests SET state = 'done', result_type = $3, finished_at = now(), lease_until = NULL WHERE task_id = $1 AND worker_id = $2 AND state = 'running'`,
          [taskId, workerId, resultType],
        );
        await client.query("SELECT pg_notify($1, $2)", [EVENTS_CHANNEL, `${taskId} done`]);
        return (rowCount ?? 0) > 0;
      }),
    );
  }

  /** Hand a run back (a worker stopping): queued again, for another worker to resume. */
  async release(taskId: string, workerId: string): Promise<void> {
    await this.guard("cannot hand the run back", () =>
      transaction(this.db.pool, async (client) => {
        const { rowCount } = await client.query(
          `UPDATE ${S}.run_requests SET state = 'queued', worker_id = NULL, lease_until = NULL WHERE task_id = $1 AND worker_id = $2 AND state = 'running'`,
          [taskId, workerId],
        );
        if (rowCount) await this.sendJob(client, taskId);
      }),
    );
  }

  /**
   * Queue again every run whose lease expired (its worker died): one job
   * each, taken by whichever worker fetches next. Returns how many.
   */
  async sweep(): Promise<number> {
    return this.guard("cannot sweep expired leases", () =>
      transaction(this.db.pool, async (client) => {
        const { rows } = await client.query<{ task_id: string }>(
          `SELECT task_id FROM ${S}.run_requests WHERE state = 'running' AND lease_until < now() ORDER BY lease_until LIMIT 100 FOR UPDATE SKIP LOCKED`,
        );
        for (const { task_id } of rows) {
          await client.query(`UPDATE ${S}.run_requests SET state = 'queued', worker_id = NULL, lease_until = NULL WHERE task_id = $1`, [task_id]);
          await this.sendJob(client, task_id);
        }
        return rows.length;
      }),
    );
  }

  /** The state of a run's request; undefined when it was never queued. */
  async stateOf(taskId: string): Promise<RequestState | undefined> {
    const { rows } = await this.guard("cannot read the run's state", () =>
      this.db.pool.query<{ state: RequestState }>(`SELECT state FROM ${S}.run_requests WHERE task_id = $1`, [taskId]),
    );
    return rows[0]?.state;
  }

  /** Runs queued, running and done (for metrics). */
  async counts(): Promise<QueueCounts> {
    const { rows } = await this.guard("cannot count runs", () =>
      this.db.pool.query<{ state: RequestState; n: number }>(`SELECT state, COUNT(*)::int AS n FROM ${S}.run_requests GROUP BY state`),
    );
    const counts: QueueCounts = { queued: 0, running: 0, done: 0 };
    for (const row of rows) counts[row.state] = row.n;
    return counts;
  }

  async close(): Promise<void> {
    await this.boss.stop({ graceful: false, wait: true, close: false }).catch(() => {});
  }

  private async sendJob(client: pg.PoolClient, taskId: string, delaySeconds = 0): Promise<void> {
    const db = { executeSql: (text: string, values: unknown[]) => client.query(text, values) };
    await this.boss.send(QUEUE, { task_id: taskId }, { db, ...(delaySeconds > 0 ? { startAfter: delaySeconds } : {}) });
    if (delaySeconds === 0) await client.query("SELECT pg_notify($1, $2)", [RUNS_CHANNEL, taskId]);
  }

  private async guard<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw storeError(this.db.url, what, err);
    }
  }
}
