import type { ResolvedTeam } from "../config/types.js";
import type { EventSink } from "../events/bus.js";
import type { RunEvent } from "../events/types.js";
import { runTeam, type RunOptions, type RunResult, type TeamRun } from "../engine/run-team.js";
import { resumeRun, type ResumeOptions } from "../engine/resume.js";
import type { Store } from "../store/store.js";

/**
 * A run going on in this process: its cancel, its result, and whether it
 * has emitted its run.finished. Its events are not kept here: whoever
 * follows it reads them from the store (src/store/follow.ts).
 */
export class LiveRun {
  private readonly controller = new AbortController();
  task_id = "";
  /** Set by `LiveRuns.start`, right after the run begins. */
  result!: Promise<RunResult>;
  /** The seq of this run's run.finished, once emitted. */
  finishedSeq: number | undefined;
  /** The caller who started it (`RunOptions.caller`): its owner until its run.started is stored, and its share of `runs_max`. */
  caller: string | undefined;

  /** Bound so it can be handed to `runTeam` as a sink. */
  readonly sink = (event: RunEvent): void => {
    if (event.type === "run.finished") this.finishedSeq = event.seq;
  };

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get finished(): boolean {
    return this.finishedSeq !== undefined;
  }

  /** Cancel the run; it ends with run.finished error "interrupted", its trace kept. */
  cancel(): void {
    this.controller.abort();
  }
}

/** The runs this server started and that have not finished yet, by task_id. */
export class LiveRuns {
  private readonly runs = new Map<string, LiveRun>();

  /** `runSinks` makes further sinks for each run (OpenTelemetry's, say). */
  constructor(
    private readonly runSinks: () => EventSink[] = () => [],
    /** Where runs are kept. @default the SQLite files under each run's trace directory */
    private readonly store?: Store,
  ) {}

  get size(): number {
    return this.runs.size;
  }

  get(taskId: string): LiveRun | undefined {
    return this.runs.get(taskId);
  }

  /** How many of the live runs `caller` started. */
  countOf(caller: string): number {
    let n = 0;
    for (const run of this.runs.values()) if (run.caller === caller) n++;
    return n;
  }

  /** Start a run of `team`; it is forgotten here once it has finished (its trace stays in the store). */
  start(team: ResolvedTeam, options: Omit<RunOptions, "signal" | "sinks">): LiveRun {
    const live = new LiveRun();
    live.caller = options.caller;
    // A run emits its first event before it returns; the sink catches it all the same.
    return this.track(
      live,
      runTeam(team, { ...options, ...(this.store ? { store: this.store } : {}), signal: live.signal, sinks: [live.sink, ...this.runSinks()] }),
    );
  }

  /** Continue a stopped run of `team` from its journal (docs/durable-runs.md). */
  async resume(team: ResolvedTeam, options: Omit<ResumeOptions, "signal" | "sinks">): Promise<LiveRun> {
    const live = new LiveRun();
    return this.track(
      live,
      await resumeRun(team, { ...options, ...(this.store ? { store: this.store } : {}), signal: live.signal, sinks: [live.sink, ...this.runSinks()] }),
    );
  }

  private track(live: LiveRun, run: TeamRun): LiveRun {
    live.task_id = run.task_id;
    live.result = run.result.finally(() => this.runs.delete(run.task_id));
    this.runs.set(run.task_id, live);
    return live;
  }

  /** Cancel every live run and wait until each has stored its run.finished. */
  async cancelAll(): Promise<void> {
    const runs = [...this.runs.values()];
    for (const run of runs) run.cancel();
    await Promise.allSettled(runs.map((r) => r.result));
  }
}
