/**
 * One run a worker took from the queue (docs/scale-out.md#workers): run, or
 * resumed from its journal when an earlier attempt was cut short, on a view
 * of the store fenced by the run's lease, and its end recorded in the queue.
 */
import type { ResolvedTeam } from "../config/types.js";
import { RuntimeError, codeOf, describeError, type ErrorCode } from "../errors.js";
import type { EventSink } from "../events/bus.js";
import { loadAttachments } from "../engine/attachments.js";
import { resumeRun } from "../engine/resume.js";
import { runTeam, type RunOptions, type RunResult, type TeamRun } from "../engine/run-team.js";
import { retry, retryPolicies } from "../retry.js";
import type { Store } from "../store/store.js";
import { transient } from "../store/postgres/connect.js";
import type { RunMetrics } from "../telemetry/metrics.js";
import type { ClaimedRun, RunQueue } from "./run-queue.js";

/** What the runs of one worker share. */
export interface WorkerContext {
  readonly id: string;
  readonly store: Store;
  readonly queue: RunQueue;
  readonly teams: ReadonlyMap<string, ResolvedTeam>;
  readonly leaseMs: number;
  readonly metrics: RunMetrics;
  /** Runs in progress, by task id. */
  readonly active: Map<string, Active>;
  readonly runOptions: Pick<RunOptions, "createClient" | "tools" | "traceDir"> | undefined;
  readonly runSinks: (() => EventSink[]) | undefined;
  readonly log: (line: string) => void;
  /** A slot is free: the worker looks at the queue. */
  readonly poke: () => void;
}

export interface Active {
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

/** Start a claimed run; it leaves `worker.active` when it has ended and its end is recorded. */
export function launch(worker: WorkerContext, claimed: ClaimedRun): void {
  const taskId = claimed.request.task_id;
  const controller = new AbortController();
  const entry: Active = {
    controller,
    lost: false,
    handedBack: false,
    done: Promise.resolve(),
    renewed: Date.now(),
    loseLease: () => {
      if (entry.lost) return;
      entry.lost = true;
      worker.log(`lost the lease of run ${taskId}: stopping it here`);
      controller.abort();
    },
  };
  worker.active.set(taskId, entry);
  // Asked at every commit, before the run acts (a model request, a tool's body): a worker that was
  // frozen (a long pause, a suspended process) past most of its lease may have lost the run, and stops.
  const holds = (): boolean => {
    if (!entry.lost && Date.now() - entry.renewed > worker.leaseMs * 0.8) entry.loseLease();
    return !entry.lost;
  };
  entry.done = (async () => {
    const ended = await runOrResume(worker, claimed, controller.signal, holds);
    await recordEnd(worker, claimed, entry, ended, holds);
  })().finally(() => {
    worker.active.delete(taskId);
    worker.poke();
  });
}

/** How a run ended: its result, or why it failed to start. */
interface Ended {
  result?: RunResult;
  failure?: ErrorCode;
}

async function runOrResume(worker: WorkerContext, claimed: ClaimedRun, signal: AbortSignal, holds: () => boolean): Promise<Ended> {
  const { request, attempts } = claimed;
  try {
    const team = worker.teams.get(request.team);
    if (!team) throw new RuntimeError("USAGE", `this worker has no team named ${request.team}`);
    const runOptions: RunOptions = {
      ...worker.runOptions,
      input: request.input,
      store: fenced(worker.store, holds),
      taskId: request.task_id,
      signal,
      sinks: [worker.metrics.sink, ...(worker.runSinks?.() ?? [])],
      ...(request.agent !== undefined ? { agent: request.agent } : {}),
      ...(request.session_id !== undefined ? { sessionId: request.session_id } : {}),
      ...(request.history ? { history: request.history } : {}),
      ...(request.caller !== undefined ? { caller: request.caller } : {}),
      ...(request.budget ? { budget: { ...team.budget, ...request.budget } } : {}),
    };
    let run: TeamRun | undefined;
    if (attempts > 1) {
      worker.log(`resuming run ${request.task_id} (attempt ${attempts})`);
      run = await resumeRun(team, { ...runOptions, taskId: request.task_id }).catch((err: unknown) => {
        // Taken before it wrote anything: it starts afresh.
        if (err instanceof RuntimeError && err.code === "NOT_FOUND") return undefined;
        throw err;
      });
    } else worker.log(`running run ${request.task_id}`);
    // The files the server stored by hash before queueing the run: the same bytes go to the model.
    const files = request.attachments?.length ? await loadAttachments(() => worker.store.attachments(), request.attachments, request.task_id) : [];
    run ??= runTeam(team, { ...runOptions, ...(files.length ? { attachments: files } : {}) });
    return { result: await run.result };
  } catch (err) {
    worker.log(`run ${request.task_id} failed to start: ${describeError(err)}`);
    return { failure: codeOf(err) };
  }
}

/**
 * The run's end in the queue: handed back, queued again after a store
 * failure, or finished. The database may be away (a restart): recorded
 * when it is back (`retryPolicies.leaseWrite`), while the lease holds;
 * else its lease runs out and another worker resumes it.
 */
async function recordEnd(worker: WorkerContext, claimed: ClaimedRun, entry: Active, ended: Ended, holds: () => boolean): Promise<void> {
  const { request, attempts } = claimed;
  const { queue, id, log } = worker;
  const record = (what: () => Promise<unknown>) => retry(what, { policy: retryPolicies.leaseWrite, isRetryable: (err) => transient(err) && holds() });
  try {
    if (entry.lost) return;
    if (entry.handedBack) {
      await record(() => queue.release(request.task_id, id));
      log(`handed run ${request.task_id} back to the queue`);
    } else if (retried(ended.result?.error?.code ?? ended.failure, request.store_failures ?? 0)) {
      await record(() => queue.release(request.task_id, id, true));
      log(`run ${request.task_id} failed on its store (attempt ${attempts}): queued again, to resume from its journal`);
    } else {
      const type = ended.result?.result_type ?? "error";
      await record(() => queue.finish(request.task_id, id, type));
      log(`run ${request.task_id} ${type}`);
    }
  } catch (err) {
    log(`cannot record the end of run ${request.task_id}: ${describeError(err)}`);
  }
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
