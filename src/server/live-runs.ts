import type { ResolvedTeam } from "../config/types.js";
import type { EventSink } from "../events/bus.js";
import type { RunEvent } from "../events/types.js";
import { runTeam, type RunOptions, type RunResult, type TeamRun } from "../engine/run-team.js";
import { resumeRun, type ResumeOptions } from "../engine/resume.js";
import type { Store } from "../store/store.js";

type Listener = (event: RunEvent) => void;

/** A run going on in this process: its events so far, and whoever follows it. */
export class LiveRun {
  readonly events: RunEvent[] = [];
  private readonly listeners = new Set<Listener>();
  private readonly controller = new AbortController();
  task_id = "";
  /** Set by `LiveRuns.start`, right after the run begins. */
  result!: Promise<RunResult>;

  /** Bound so it can be handed to `runTeam` as a sink. */
  readonly push = (event: RunEvent): void => {
    this.events.push(event);
    for (const listener of [...this.listeners]) listener(event);
  };

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get finished(): boolean {
    return this.events.at(-1)?.type === "run.finished";
  }

  /** Cancel the run; it ends with run.finished error "interrupted", its trace kept. */
  cancel(): void {
    this.controller.abort();
  }

  /**
   * Call `onEvent` with every event whose seq is above `after`: first those
   * already emitted, then each new one as it happens. Returns an unsubscribe.
   */
  follow(after: number, onEvent: Listener): () => void {
    for (const event of this.events) if (event.seq > after) onEvent(event);
    if (this.finished) return () => {};
    const listener: Listener = (event) => {
      if (event.seq > after) onEvent(event);
    };
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
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

  /** Start a run of `team`; it is forgotten here once it has finished (its trace stays in the store). */
  start(team: ResolvedTeam, options: Omit<RunOptions, "signal" | "sinks">): LiveRun {
    const live = new LiveRun();
    // A run emits its first event before it returns; the sink catches it all the same.
    return this.track(live, runTeam(team, { ...options, ...(this.store ? { store: this.store } : {}), signal: live.signal, sinks: [live.push, ...this.runSinks()] }));
  }

  /** Continue a stopped run of `team` from its journal (docs/durable-runs.md). */
  async resume(team: ResolvedTeam, options: Omit<ResumeOptions, "signal" | "sinks">): Promise<LiveRun> {
    const live = new LiveRun();
    return this.track(live, await resumeRun(team, { ...options, ...(this.store ? { store: this.store } : {}), signal: live.signal, sinks: [live.push, ...this.runSinks()] }));
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
