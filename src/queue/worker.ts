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
import { RuntimeError, codeOf, describeError, type ErrorCode } from "../errors.js";
import type { EventSink } from "../events/bus.js";
import { loadAttachments } from "../engine/attachments.js";
import { resumeRun } from "../engine/resume.js";
import { runTeam, type RunOptions, type RunResult, type TeamRun } from "../engine/run-team.js";
import type { Store } from "../store/store.js";
import { RunMetrics } from "../telemetry/metrics.js";
import { ChannelListener } from "../store/postgres/listener.js";
import { transient } from "../store/postgres/connect.js";
import { backoff } from "../store/committer.js";
import { RUNS_CHANNEL, RunQueue, type ClaimedRun } from "./run-queue.js";

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

interface Active {
  controller: AbortController;
  /** The lease was lost: another worker has the run now, this one must not touch it. */
  lost: boolean;
  /** Interrupted by `stop()`: handed back rather than finished. */
  handedBack: boolean;
  done: Promise<void>;
  /** When the last renewal that found the run still held was sent: the lease runs from no earlier. */
  renewed: number;
  /** Stop the run here: the lease is lost, or may be. */
  loseLease: () => void;
}

/**
 * The store as one run of this worker sees it: every commit first asks
 * whether the worker still holds the run's lease; once it does not (another
 * worker may be resuming the run), the run is stopped (its signal aborted,
 * so the model request or tool body the commit was for does not happen) and
 * its events and journal entries are dropped rather than interleaved with
 * the new owner's.
 */
function fenced(store: Store, holds: () => boolean): Store {
  const runs = Object.create(store.runs) as Store["runs"];
  runs.appendMany = (events, journal) => (holds() ? store.runs.appendMany(events, journal) : undefined);
  const view = Object.create(store) as Store & { runs: Store["runs"] };
  Object.defineProperty(view, "runs", { value: runs });
  return view;
}

/** Attempts a run gets when its store keeps failing (retried below). */
export const MAX_ATTEMPTS = 3;

/**
 * Whether a run that failed with `code` goes back to the queue rather than
 * ending: only a failure of the store (STORE), which a later attempt, here
 * or on another worker, may not meet; its journal lets it resume. Any other
 * code is the run's own end. Decided on the code and the store failures
 * before this one (`RunRequest.store_failures`), not on how often the run
 * was claimed: a run resumed after workers died keeps its whole budget
 * (docs/scale-out.md#workers).
 */
export function retried(code: ErrorCode | undefined, storeFailures: number): boolean {
  return code === "STORE" && storeFailures + 1 < MAX_ATTEMPTS;
}

export async function startWorker(options: WorkerOptions): Promise<RunWorker> {
  const { store } = options;
  if (!store.database) throw new RuntimeError("USAGE", `a worker needs a PostgreSQL store (--store postgres://...), not ${store.location}`);
  const id = options.workerId ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const concurrency = options.concurrency ?? 4;
  const leaseMs = options.leaseMs ?? 30_000;
  const pollMs = options.pollMs ?? 1_000;
  const log = options.log ?? (() => {});
  const teams = new Map(options.teams.map((t) => [t.name, t]));
  const metrics = new RunMetrics();
  const queue = await RunQueue.open(store, [...teams.keys()]);
  const listener = options.listen === false ? undefined : new ChannelListener(store.database.url);
  const active = new Map<string, Active>();
  let stopping = false;

  // Woken by a new run, a freed slot, a reconnection, or the poll timer.
  let wake: (() => void) | undefined;
  const poke = () => wake?.();
  if (listener) {
    listener.on(RUNS_CHANNEL, poke);
    listener.onReconnect(poke);
    try {
      await listener.start();
    } catch (err) {
      await queue.close();
      throw new RuntimeError("STORE", `cannot listen for new runs (${store.location}): ${describeError(err)}`, { cause: err });
    }
  }

  // Every run's lease renewed in one statement, every third of the lease; one renewal at a time (under
  // load, 100 workers' renewals queued behind their commits: docs/scale-out.md#100-workers-on-one-postgresql).
  let renewing = false;
  const heartbeat = setInterval(
    () => {
      const held = [...active].filter(([, a]) => !a.lost);
      if (renewing || held.length === 0) return;
      renewing = true;
      const sent = Date.now();
      queue
        .renew(
          held.map(([taskId]) => taskId),
          id,
          leaseMs,
        )
        .then(
          (still) => {
            for (const [taskId, a] of held) {
              if (still.has(taskId)) a.renewed = sent;
              else a.loseLease();
            }
          },
          () => {
            // The database is away; past the lease another worker may take a run: stop before that.
            for (const [, a] of held) if (Date.now() - a.renewed > leaseMs * 0.8) a.loseLease();
          },
        )
        .finally(() => {
          renewing = false;
        });
    },
    Math.max(50, Math.floor(leaseMs / 3)),
  );

  const launch = (claimed: ClaimedRun): void => {
    const { request, attempts } = claimed;
    const team = teams.get(request.team);
    const controller = new AbortController();
    const loseLease = () => {
      if (entry.lost) return;
      entry.lost = true;
      log(`lost the lease of run ${request.task_id}: stopping it here`);
      controller.abort();
    };
    const entry: Active = { controller, lost: false, handedBack: false, done: Promise.resolve(), renewed: Date.now(), loseLease };
    active.set(request.task_id, entry);
    // Asked at every commit, before the run acts (a model request, a tool's body): a worker that was
    // frozen (a long pause, a suspended process) past most of its lease may have lost the run, and stops.
    const holds = (): boolean => {
      if (!entry.lost && Date.now() - entry.renewed > leaseMs * 0.8) loseLease();
      return !entry.lost;
    };
    entry.done = (async () => {
      let result: RunResult | undefined;
      // Why the run failed to start, when it did not.
      let failure: ErrorCode | undefined;
      try {
        if (!team) throw new RuntimeError("USAGE", `this worker has no team named ${request.team}`);
        const runOptions: RunOptions = {
          ...options.runOptions,
          input: request.input,
          store: fenced(store, holds),
          taskId: request.task_id,
          signal: controller.signal,
          sinks: [metrics.sink, ...(options.runSinks?.() ?? [])],
          ...(request.agent !== undefined ? { agent: request.agent } : {}),
          ...(request.session_id !== undefined ? { sessionId: request.session_id } : {}),
          ...(request.history ? { history: request.history } : {}),
          ...(request.caller !== undefined ? { caller: request.caller } : {}),
          ...(request.budget ? { budget: { ...team.budget, ...request.budget } } : {}),
        };
        let run: TeamRun | undefined;
        if (attempts > 1) {
          log(`resuming run ${request.task_id} (attempt ${attempts})`);
          run = await resumeRun(team, { ...runOptions, taskId: request.task_id }).catch((err: unknown) => {
            // Taken before it wrote anything: it starts afresh.
            if (err instanceof RuntimeError && err.code === "NOT_FOUND") return undefined;
            throw err;
          });
        } else log(`running run ${request.task_id}`);
        // The files the server stored by hash before queueing the run: the same bytes go to the model.
        const files = request.attachments?.length ? await loadAttachments(() => store.attachments(), request.attachments, request.task_id) : [];
        run ??= runTeam(team, { ...runOptions, ...(files.length ? { attachments: files } : {}) });
        result = await run.result;
      } catch (err) {
        failure = codeOf(err);
        log(`run ${request.task_id} failed to start: ${describeError(err)}`);
      }
      // The database may be away (a restart): the end is recorded when it is back, while the lease holds.
      const record = async (what: () => Promise<unknown>): Promise<void> => {
        for (let attempt = 0; ; attempt++) {
          try {
            await what();
            return;
          } catch (err) {
            if (!transient(err) || !holds()) throw err;
            await new Promise((r) => setTimeout(r, backoff(attempt)));
          }
        }
      };
      try {
        if (entry.lost) return;
        if (entry.handedBack) {
          await record(() => queue.release(request.task_id, id));
          log(`handed run ${request.task_id} back to the queue`);
        } else if (retried(result?.error?.code ?? failure, request.store_failures ?? 0)) {
          await record(() => queue.release(request.task_id, id, true));
          log(`run ${request.task_id} failed on its store (attempt ${attempts}): queued again, to resume from its journal`);
        } else {
          await record(() => queue.finish(request.task_id, id, result?.result_type ?? "error"));
          log(`run ${request.task_id} ${result?.result_type ?? "error"}`);
        }
      } catch (err) {
        // Its lease runs out and another worker resumes it.
        log(`cannot record the end of run ${request.task_id}: ${describeError(err)}`);
      }
    })().finally(() => {
      active.delete(request.task_id);
      poke();
    });
  };

  const loop = (async () => {
    let lastSweep = 0;
    // Looks at the queue that failed in a row: the database is away; one line says so, one that it is back.
    let failures = 0;
    while (!stopping) {
      const free = concurrency - active.size;
      let full = false;
      try {
        if (Date.now() - lastSweep > leaseMs / 2) {
          lastSweep = Date.now();
          const swept = await queue.sweep();
          if (swept) log(`queued ${swept} run(s) whose worker stopped renewing`);
        }
        if (free > 0) {
          const claimed = await queue.claim(id, free, leaseMs, new Set(teams.keys()));
          for (const c of claimed) launch(c);
          full = claimed.length === free;
        }
        if (failures > 0) log(`the store answers again after ${failures} failed look(s) at the queue`);
        failures = 0;
      } catch (err) {
        if (failures === 0) log(`${describeError(err)}: trying again with a growing pause`);
        failures++;
      }
      if (full && !stopping) continue;
      await new Promise<void>((resolve) => {
        // Woken at once by the listener's reconnection when the database is back. A random part spreads
        // the polls of a fleet (they fall in step after a restart): N idle workers look every pollMs/N or so.
        const pause = failures > 0 ? Math.max(pollMs, backoff(failures + 3)) : pollMs;
        const timer = setTimeout(resolve, pause * (0.5 + Math.random() / 2));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  })();

  return {
    id,
    metrics,
    get running() {
      return active.size;
    },
    async ready() {
      if (stopping || (listener && !listener.up)) return false;
      return store.ping().then(
        () => true,
        () => false,
      );
    },
    async stop(stopOptions = {}) {
      stopping = true;
      poke();
      await loop;
      const graceMs = stopOptions.graceMs ?? 30_000;
      const all = () => Promise.all([...active.values()].map((a) => a.done));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([all().then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs)))]);
      clearTimeout(timer);
      if (timedOut) {
        for (const entry of active.values()) {
          entry.handedBack = true;
          entry.controller.abort();
        }
        await all();
      }
      clearInterval(heartbeat);
      await listener?.close();
      await queue.close();
    },
  };
}
