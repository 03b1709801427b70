/**
 * Runs waiting for a worker, on PostgreSQL (docs/scale-out.md#the-queue).
 *
 * Two parts, each doing what it is good at. pg-boss (a well-kept PostgreSQL
 * job queue) carries a job per run to be taken, in one queue per team (a
 * worker fetches only from the queues of the teams it runs): it hands each
 * job to one fetcher (`FOR UPDATE SKIP LOCKED`), keeps its own tables and
 * cleans them.
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
import { createHash } from "node:crypto";
import PgBoss from "pg-boss";
import type pg from "pg";
import { RuntimeError } from "../errors.js";
import type { Budget } from "../config/types.js";
import type { Database, Store } from "../store/store.js";
import type { Exchange } from "../store/conversations.js";
import type { AttachmentRef } from "../models/attachment.js";
import { SCHEMA as S, reading, storeError, transaction } from "../store/postgres/connect.js";
import { EVENTS_CHANNEL } from "../store/postgres/run-store.js";
import { retry, retryPolicies } from "../retry.js";

/** pg-boss's schema. */
const QUEUE_SCHEMA = "runtime_queue";

/** The pg-boss queue of a team's runs: its name made safe for pg-boss, and a hash that keeps names apart. */
export function queueOf(team: string): string {
  const slug = team.replace(/[^\w-]/g, "_").slice(0, 40);
  return `runs-${slug}-${createHash("sha256").update(team).digest("hex").slice(0, 10)}`;
}
/** The channel an enqueue notifies: workers wake up and fetch. */
export const RUNS_CHANNEL = "runtime_runs";
/** An arbitrary constant: the advisory lock held while pg-boss starts (see `open`). */
const START_LOCK = 727_113_002;

/** The schema lock is held by another process: tried again (`retryPolicies.queueLock`). */
class LockBusy extends RuntimeError {
  constructor() {
    super("STORE", "the job queue's schema lock is held by another process");
  }
}

/** What a server asks a worker to run. */
export interface RunRequest {
  task_id: string;
  /** The team's `name`: a worker runs only teams it has loaded. */
  team: string;
  input: string;
  agent?: string;
  session_id?: string;
  /** The conversation the caller gave with the input (`RunOptions.history`). */
  history?: Exchange[];
  /** Limits replacing the team's budget (a resume with a larger budget). */
  budget?: Budget;
  /** The server's caller who asked for it, its owner (`RunOptions.caller`). */
  caller?: string;
  /** The run's files, by hash: the server stored their bytes in the store's attachments before queueing (docs/attachments.md). */
  attachments?: AttachmentRef[];
  /**
   * Times the run went back to the queue because its store failed: the
   * budget of those retries (docs/scale-out.md#workers), apart from the
   * claims after a worker died, which are not failures of the run.
   */
  store_failures?: number;
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
  /** Teams whose pg-boss queue exists (this process made sure of it). */
  private readonly queues = new Set<string>();

  private constructor(
    private readonly db: Database,
    private readonly boss: PgBoss,
  ) {}

  /** The queue in `store`'s database (a PostgreSQL store), for `teams`. Creates pg-boss's schema and the teams' queues on first use. */
  static async open(store: Store, teams: readonly string[]): Promise<RunQueue> {
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
      await RunQueue.locked(db, () => boss.start());
    } catch (err) {
      await boss.stop({ graceful: false, wait: false }).catch(() => {});
      throw storeError(db.url, "cannot open the job queue", err);
    }
    const queue = new RunQueue(db, boss);
    try {
      for (const team of teams) await queue.ensureQueue(team);
    } catch (err) {
      await queue.close();
      throw storeError(db.url, "cannot open the job queue", err);
    }
    return queue;
  }

  /**
   * Run `work` while holding the advisory lock that serialises pg-boss's schema changes across processes.
   * Held by a transaction (a session's lock would outlive it behind PgBouncer in transaction mode), and
   * waited for by trying again: a waiter blocked on the lock would hold a connection the holder's `work`
   * may need (100 workers starting at once behind a pooler of 40, docs/scale-out.md#100-workers-on-one-postgresql).
   */
  private static locked<T>(db: Database, work: () => Promise<T>): Promise<T> {
    const held = async () => {
      const done = await transaction(db.pool, async (client) => {
        const { rows } = await client.query<{ held: boolean }>("SELECT pg_try_advisory_xact_lock($1) AS held", [START_LOCK]);
        return rows[0]?.held ? { value: await work() } : undefined;
      });
      if (!done) throw new LockBusy();
      return done.value;
    };
    return retry(held, { policy: retryPolicies.queueLock, isRetryable: (err) => err instanceof LockBusy });
  }

  /** Create the team's queue unless it exists (once per process). */
  private async ensureQueue(team: string): Promise<void> {
    if (this.queues.has(team)) return;
    const name = queueOf(team);
    await RunQueue.locked(this.db, async () => {
      if (!(await this.boss.getQueue(name))) await this.boss.createQueue(name, { name, retryLimit: 0 });
    });
    this.queues.add(team);
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
        await this.sendJob(client, task_id, team);
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
        const { rows } = await client.query<{ request_json: string; team: string }>(
          `SELECT request_json, team FROM ${S}.run_requests WHERE task_id = $1 AND (state = 'done' OR (state = 'running' AND lease_until < now())) FOR UPDATE`,
          [taskId],
        );
        const row = rows[0];
        if (!row) return false;
        const request = { ...(JSON.parse(row.request_json) as Omit<RunRequest, "task_id" | "team">), ...(budget ? { budget } : {}) };
        await client.query(
          `UPDATE ${S}.run_requests SET state = 'queued', worker_id = NULL, lease_until = NULL, request_json = $2, result_type = NULL WHERE task_id = $1`,
          [taskId, JSON.stringify(request)],
        );
        await this.sendJob(client, taskId, row.team);
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
    for (const team of teams) await this.guard("cannot open the job queue", () => this.ensureQueue(team));
    // The teams' queues in a random order, so that one team's backlog does not starve another's.
    const order = [...teams].sort(() => Math.random() - 0.5);
    return this.guard("cannot take runs from the queue", () =>
      transaction(this.db.pool, async (client) => {
        const wrapped = { executeSql: (text: string, values: unknown[]) => client.query(text, values) };
        const claimed: ClaimedRun[] = [];
        for (const team of order) {
          if (claimed.length >= max) break;
          claimed.push(...(await this.claimFrom(client, wrapped, team, workerId, max - claimed.length, leaseMs)));
        }
        return claimed;
      }),
    );
  }

  /** Take up to `max` runs of one team's queue, in the caller's transaction. */
  private async claimFrom(
    client: pg.PoolClient,
    wrapped: { executeSql(text: string, values: unknown[]): Promise<pg.QueryResult> },
    team: string,
    workerId: string,
    max: number,
    leaseMs: number,
  ): Promise<ClaimedRun[]> {
    const queue = queueOf(team);
    const jobs = await this.boss.fetch<{ task_id: string }>(queue, { batchSize: max, db: wrapped });
    if (jobs.length === 0) return [];
    const claimed: ClaimedRun[] = [];
    for (const job of jobs) {
      const task_id = job.data.task_id;
      const { rows } = await client.query<{ team: string; takeable: boolean }>(
        `SELECT team, (state = 'queued' OR (state = 'running' AND lease_until < now())) AS takeable
           FROM ${S}.run_requests WHERE task_id = $1 FOR UPDATE`,
        [task_id],
      );
      const row = rows[0];
      // Done, or held by a live lease: the job is spent, the run stays with its holder.
      if (!row?.takeable || row.team !== team) continue;
      const taken = await client.query<{ request_json: string; attempts: number }>(
        `UPDATE ${S}.run_requests
            SET state = 'running', worker_id = $2, lease_until = now() + $3 * interval '1 millisecond',
                attempts = attempts + 1, started_at = COALESCE(started_at, now())
          WHERE task_id = $1
      RETURNING request_json, attempts`,
        [task_id, workerId, leaseMs],
      );
      const took = taken.rows[0];
      if (took) claimed.push({ request: { task_id, team: row.team, ...(JSON.parse(took.request_json) as object) } as RunRequest, attempts: took.attempts });
    }
    // pg-boss's complete(name, ids, data, options): no data, and in this transaction.
    await (this.boss.complete as unknown as (name: string, ids: string[], data: null, options: { db: typeof wrapped }) => Promise<void>)(
      queue,
      jobs.map((j) => j.id),
      null,
      { db: wrapped },
    );
    return claimed;
  }

  /** Extend the leases of `taskIds`; returns those the worker still holds (the others expired and were taken again). */
  async renew(taskIds: readonly string[], workerId: string, leaseMs: number): Promise<Set<string>> {
    const { rows } = await this.guard("cannot renew leases", () =>
      this.db.pool.query<{ task_id: string }>(
        `UPDATE ${S}.run_requests SET lease_until = now() + $3 * interval '1 millisecond'
          WHERE task_id = ANY($1) AND worker_id = $2 AND state = 'running' RETURNING task_id`,
        [taskIds, workerId, leaseMs],
      ),
    );
    return new Set(rows.map((r) => r.task_id));
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

  /**
   * Hand a run back (a worker stopping, or its store failed: `storeFailed`
   * counts it in the request's `store_failures`): queued again, for another
   * worker to resume.
   */
  async release(taskId: string, workerId: string, storeFailed = false): Promise<void> {
    await this.guard("cannot hand the run back", () =>
      transaction(this.db.pool, async (client) => {
        const { rows } = await client.query<{ team: string }>(
          `UPDATE ${S}.run_requests SET state = 'queued', worker_id = NULL, lease_until = NULL,
             request_json = CASE WHEN $3 THEN (request_json::jsonb || jsonb_build_object('store_failures',
               COALESCE((request_json::jsonb ->> 'store_failures')::int, 0) + 1))::text ELSE request_json END
           WHERE task_id = $1 AND worker_id = $2 AND state = 'running' RETURNING team`,
          [taskId, workerId, storeFailed],
        );
        if (rows[0]) await this.sendJob(client, taskId, rows[0].team);
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
        const { rows } = await client.query<{ task_id: string; team: string }>(
          `SELECT task_id, team FROM ${S}.run_requests WHERE state = 'running' AND lease_until < now() ORDER BY lease_until LIMIT 100 FOR UPDATE SKIP LOCKED`,
        );
        for (const { task_id, team } of rows) {
          await client.query(`UPDATE ${S}.run_requests SET state = 'queued', worker_id = NULL, lease_until = NULL WHERE task_id = $1`, [task_id]);
          await this.sendJob(client, task_id, team);
        }
        return rows.length;
      }),
    );
  }

  /** The state of a run's request; undefined when it was never queued. Waits for a database that is restarting (`reading`): a follower asks it. */
  async stateOf(taskId: string): Promise<RequestState | undefined> {
    const { rows } = await this.guard("cannot read the run's state", () =>
      reading(() => this.db.pool.query<{ state: RequestState }>(`SELECT state FROM ${S}.run_requests WHERE task_id = $1`, [taskId])),
    );
    return rows[0]?.state;
  }

  /** Who asked for a run (`RunRequest.caller`): its owner before its run.started is stored; undefined when never queued or asked by no caller. */
  async callerOf(taskId: string): Promise<string | undefined> {
    const { rows } = await this.guard("cannot read the run's state", () =>
      reading(() =>
        this.db.pool.query<{ caller: string | null }>(`SELECT request_json::jsonb->>'caller' AS caller FROM ${S}.run_requests WHERE task_id = $1`, [taskId]),
      ),
    );
    return rows[0]?.caller ?? undefined;
  }

  /** How many runs `caller` asked for are queued or running, on any server of the store (its `runs_max`, docs/security.md). */
  async liveOf(caller: string): Promise<number> {
    const { rows } = await this.guard("cannot count runs", () =>
      this.db.pool.query<{ n: number }>(
        `SELECT COUNT(*)::int AS n FROM ${S}.run_requests WHERE state IN ('queued', 'running') AND request_json::jsonb->>'caller' = $1`,
        [caller],
      ),
    );
    return rows[0]?.n ?? 0;
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

  private async sendJob(client: pg.PoolClient, taskId: string, team: string): Promise<void> {
    await this.ensureQueue(team);
    const db = { executeSql: (text: string, values: unknown[]) => client.query(text, values) };
    await this.boss.send(queueOf(team), { task_id: taskId }, { db });
    await client.query("SELECT pg_notify($1, $2)", [RUNS_CHANNEL, taskId]);
  }

  private async guard<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw storeError(this.db.url, what, err);
    }
  }
}
