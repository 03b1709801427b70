/**
 * A worker (docs/scale-out.md#workers): takes queued runs of the teams it
 * has loaded, up to `concurrency` at once, and runs them with the store as
 * their store, so their events reach every server and their journal lets
 * another worker go on with them. Each run is held under a lease renewed
 * while it goes; a worker that cannot renew (its run was taken over, or the
 * database is unreachable for longer than the lease) stops the run at once.
 *
 * `stop()` is the graceful shutdown: take nothing new, let the runs in
 * progress finish for `graceMs`, then interrupt the rest and hand them back
 * to the queue, where another worker resumes them from their journal.
 */
import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import type { ResolvedTeam } from "../config/types.js";
import { RuntimeError, describeError } from "../errors.js";
import type { EventSink } from "../events/bus.js";
import type { RunOptions } from "../engine/run-team.js";
import { pauseBefore, retryPolicies, sleep } from "../retry.js";
import type { Store } from "../store/store.js";
import { RunMetrics } from "../telemetry/metrics.js";
import { ChannelListener } from "../store/postgres/listener.js";
import { RUNS_CHANNEL, RunQueue } from "./run-queue.js";
import { launch, type WorkerContext } from "./worker-run.js";

export { MAX_ATTEMPTS, retried } from "./worker-run.js";

export interface WorkerOptions {
  /** A PostgreSQL store (`createStore("postgres://...")`); the worker does not close it. */
  store: Store;
  /** The teams this worker runs, by their `name`. */
  teams: readonly ResolvedTeam[];
  /** Runs at once. @default 4 */
  concurrency?: number;
  /** How long a run stays this worker's without a renewal. @default 30000 */
  leaseMs?: number;
  /** Longest wait between two looks at the queue when no notification came. @default 1000 */
  pollMs?: number;
  /**
   * Hear of new runs at once over LISTEN (a connection of its own). Off, the
   * worker only polls: for a large fleet (its polls spread over `pollMs`, no
   * wake-up of every idle worker per run) or behind PgBouncer in transaction
   * mode, where LISTEN does not work (docs/scale-out.md#100-workers-on-one-postgresql). @default true
   */
  listen?: boolean;
  /** @default `<hostname>-<pid>-<random>` */
  workerId?: string;
  /** What every run gets besides its request (model clients, tools given in code). */
  runOptions?: Pick<RunOptions, "createClient" | "tools" | "traceDir">;
  /** Further sinks for each run (OpenTelemetry's, say). */
  runSinks?: () => EventSink[];
  /** One line per thing worth telling an operator (runs taken, finished, handed back). @default none */
  log?: (line: string) => void;
}

export interface RunWorker {
  readonly id: string;
  readonly metrics: RunMetrics;
  /** Runs in progress now. */
  readonly running: number;
  /** Whether the worker can take runs: its database answers and it hears of new runs. */
  ready(): Promise<boolean>;
  /** Graceful shutdown (see above); resolves once every run finished or was handed back. */
  stop(options?: { graceMs?: number }): Promise<void>;
}

/** A worker's state besides its runs'. */
interface Worker extends WorkerContext {
  readonly concurrency: number;
  readonly pollMs: number;
  stopping: boolean;
  /** Ends the poll loop's pause: a new run, a freed slot, a reconnection, a stop. */
  wake: (() => void) | undefined;
}

export async function startWorker(options: WorkerOptions): Promise<RunWorker> {
  const { store } = options;
  if (!store.database) throw new RuntimeError("USAGE", `a worker needs a PostgreSQL store (--store postgres://...), not ${store.location}`);
  const teams = new Map(options.teams.map((t) => [t.name, t]));
  const queue = await RunQueue.open(store, [...teams.keys()]);
  const worker: Worker = {
    id: options.workerId ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
    store,
    queue,
    teams,
    leaseMs: options.leaseMs ?? 30_000,
    metrics: new RunMetrics(),
    active: new Map(),
    runOptions: options.runOptions,
    runSinks: options.runSinks,
    log: options.log ?? (() => {}),
    poke: () => worker.wake?.(),
    concurrency: options.concurrency ?? 4,
    pollMs: options.pollMs ?? 1_000,
    stopping: false,
    wake: undefined,
  };
  const listener = options.listen === false ? undefined : await listenForRuns(worker, store.database.url);
  const heartbeat = renewLeases(worker);
  const loop = pollQueue(worker);
  return {
    id: worker.id,
    metrics: worker.metrics,
    get running() {
      return worker.active.size;
    },
    async ready() {
      if (worker.stopping || (listener && !listener.up)) return false;
      return store.ping().then(
        () => true,
        () => false,
      );
    },
    async stop(stopOptions = {}) {
      worker.stopping = true;
      worker.poke();
      await loop;
      await endRuns(worker, stopOptions.graceMs ?? 30_000);
      clearInterval(heartbeat);
      await listener?.close();
      await queue.close();
    },
  };
}

/** Hear of new runs at once over LISTEN, and after a reconnection (what was missed meanwhile). */
async function listenForRuns(worker: Worker, url: string): Promise<ChannelListener> {
  const listener = new ChannelListener(url);
  listener.on(RUNS_CHANNEL, worker.poke);
  listener.onReconnect(worker.poke);
  try {
    await listener.start();
  } catch (err) {
    await worker.queue.close();
    throw new RuntimeError("STORE", `cannot listen for new runs (${worker.store.location}): ${describeError(err)}`, { cause: err });
  }
  return listener;
}

/**
 * Every run's lease renewed in one statement, every third of the lease; one renewal at a time (under
 * load, 100 workers' renewals queued behind their commits: docs/scale-out.md#100-workers-on-one-postgresql).
 */
function renewLeases(worker: Worker): NodeJS.Timeout {
  const { queue, id, leaseMs } = worker;
  let renewing = false;
  const renew = () => {
    const held = [...worker.active].filter(([, a]) => !a.lost);
    if (renewing || held.length === 0) return;
    renewing = true;
    const sent = Date.now();
    const renewed = (still: Set<string>) => {
      for (const [taskId, a] of held) {
        if (still.has(taskId)) a.renewed = sent;
        else a.loseLease();
      }
    };
    // The database is away; past the lease another worker may take a run: stop before that.
    const unknown = () => {
      for (const [, a] of held) if (Date.now() - a.renewed > leaseMs * 0.8) a.loseLease();
    };
    queue
      .renew(
        held.map(([taskId]) => taskId),
        id,
        leaseMs,
      )
      .then(renewed, unknown)
      .finally(() => {
        renewing = false;
      });
  };
  return setInterval(renew, Math.max(50, Math.floor(leaseMs / 3)));
}

/**
 * Look at the queue until the worker stops: runs whose worker stopped
 * renewing queued again, then as many runs claimed as there are free
 * slots; between looks, a pause that `wake` ends.
 */
async function pollQueue(worker: Worker): Promise<void> {
  const { queue, id, leaseMs, log } = worker;
  let lastSweep = 0;
  // Looks at the queue that failed in a row: the database is away; one line says so, one that it is back.
  let failures = 0;
  while (!worker.stopping) {
    const free = worker.concurrency - worker.active.size;
    let full = false;
    try {
      if (Date.now() - lastSweep > leaseMs / 2) {
        lastSweep = Date.now();
        const swept = await queue.sweep();
        if (swept) log(`queued ${swept} run(s) whose worker stopped renewing`);
      }
      if (free > 0) {
        const claimed = await queue.claim(id, free, leaseMs, new Set(worker.teams.keys()));
        for (const c of claimed) launch(worker, c);
        full = claimed.length === free;
      }
      if (failures > 0) log(`the store answers again after ${failures} failed look(s) at the queue`);
      failures = 0;
    } catch (err) {
      if (failures === 0) log(`${describeError(err)}: trying again with a growing pause`);
      failures++;
    }
    if (worker.stopping) break;
    if (full) continue;
    // Woken at once by the listener's reconnection when the database is back. The random part spreads
    // the polls of a fleet (they fall in step after a restart): N idle workers look every pollMs/N or so.
    const woken = new AbortController();
    worker.wake = () => woken.abort();
    await sleep(pauseBefore(retryPolicies.queuePoll(worker.pollMs), failures), woken.signal);
    worker.wake = undefined;
  }
}

/** `stop()`'s end: the runs in progress finish for `graceMs`, then the rest are interrupted and handed back. */
async function endRuns(worker: Worker, graceMs: number): Promise<void> {
  const all = () => Promise.all([...worker.active.values()].map((a) => a.done));
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([all().then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs)))]);
  clearTimeout(timer);
  if (!timedOut) return;
  for (const entry of worker.active.values()) {
    entry.handedBack = true;
    entry.controller.abort();
  }
  await all();
}
