import { describeError, unreachable } from "../errors.js";
import type { EventSink } from "../events/bus.js";
import type { RunEvent } from "../events/types.js";
import type { AppendBatch, JournalEntry, RunStore } from "../store/runs.js";
import { TraceStore } from "../store/sqlite/trace-store.js";

/**
 * One TraceStore per trace directory, shared by the runs of a process.
 * Opening SQLite per run cost ~2.4 ms and leaked a connection per run
 * (bench/react-loop.mjs); closing it after every run (a checkpoint of the WAL)
 * cost ~9 ms per sequential task. So the last run out leaves the store open
 * for a short idle time, on an unref'd timer that never keeps the process
 * alive, and whatever is still open is closed when the process exits.
 */
const stores = new Map<string, { store: TraceStore; group: GroupCommit; users: number; idle?: NodeJS.Timeout }>();

/** How long a store nobody uses stays open for the next run. */
const IDLE_CLOSE_MS = 5_000;

let exitHook = false;
function closeAll(): void {
  for (const [dir, entry] of stores) {
    stores.delete(dir);
    if (entry.idle) clearTimeout(entry.idle);
    entry.group.flush();
    entry.store.close();
  }
}

/** The store of `dir` (an absolute path), opened on first use. Throws like `TraceStore.open`. */
export function acquireTraceStore(dir: string): TraceStore {
  let entry = stores.get(dir);
  if (!entry) {
    const store = TraceStore.open(dir);
    const shared = { store, users: 0 };
    entry = Object.assign(shared, { group: new GroupCommit(store, () => shared.users > 1) });
    stores.set(dir, entry);
    if (!exitHook) {
      exitHook = true;
      process.once("exit", closeAll);
    }
  }
  if (entry.idle) {
    clearTimeout(entry.idle);
    delete entry.idle;
  }
  entry.users++;
  return entry.store;
}

/** A run is done with the store of `dir`; once nobody uses it for a while, it is closed. */
export function releaseTraceStore(dir: string): void {
  const entry = stores.get(dir);
  if (!entry || --entry.users > 0) return;
  entry.idle = setTimeout(() => {
    if (stores.get(dir) !== entry || entry.users > 0) return;
    stores.delete(dir);
    entry.group.flush();
    entry.store.close();
  }, IDLE_CLOSE_MS);
  entry.idle.unref();
}

/**
 * Where the runs of a process append to the store of `dir` (acquired): their
 * batches are committed together, one transaction per turn of the event loop
 * (src/store/sqlite/trace-store.ts `appendAll`), and each append's promise settles when
 * its batch is durable. The engine awaits it at its write-ahead points
 * (docs/design/journal.md#when-it-is-written), so a model request or a write
 * tool's body still waits for what it is built from.
 */
export function groupAppend(dir: string): (events: readonly RunEvent[], journal: readonly JournalEntry[]) => void | Promise<void> {
  const entry = stores.get(dir);
  if (!entry) unreachable(`trace store of ${dir} is not acquired`);
  return (events, journal) => entry.group.append([events, journal]);
}

/**
 * Group commit: 50 runs at once each commit before every model request, and
 * one transaction per run and request rewrote the same pages of the file
 * for each (bench/react-loop.mjs, 50 concurrent tasks). While several runs
 * use the store, batches that arrive in one turn of the event loop share one
 * transaction at its end (`setImmediate`); when that fails, each batch is
 * written on its own, so one that cannot be written fails alone. A run alone
 * has nobody to share with: its batches are committed at once, as a turn's
 * wait would cost it a turn of the loop per commit (~1 ms CPU per 10-step task).
 */
class GroupCommit {
  private queue: { batch: AppendBatch; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private timer: NodeJS.Immediate | undefined;

  constructor(
    private readonly store: TraceStore,
    /** Whether several runs use the store now. */
    private readonly shared: () => boolean,
  ) {}

  append(batch: AppendBatch): void | Promise<void> {
    if (!this.shared()) {
      this.flush();
      this.store.appendAll([batch]);
      return;
    }
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ batch, resolve, reject });
      this.timer ??= setImmediate(() => this.flush());
    });
  }

  /** Commit what is queued now (also before the store closes). */
  flush(): void {
    if (this.timer) clearImmediate(this.timer);
    this.timer = undefined;
    const queue = this.queue;
    if (queue.length === 0) return;
    this.queue = [];
    try {
      this.store.appendAll(queue.map((q) => q.batch));
      for (const q of queue) q.resolve();
    } catch {
      for (const q of queue) {
        try {
          this.store.appendAll([q.batch]);
          q.resolve();
        } catch (err) {
          q.reject(err);
        }
      }
    }
  }
}

/**
 * A run's write-ahead commit (`commit` of `batchedTraceSink`), shared by the
 * steps of the run that ask for one in the same turn of the event loop
 * (plan_solver's solvers): the first of a turn commits at once, the others
 * of that turn share one commit at its end (`setImmediate`), and each
 * caller's promise settles once it is durable. Asked for one after the
 * other, 16 solvers' first requests waited for 16 transactions and left
 * over 3-6 ms, instead of ~0.5 (docs/performance.md). A step alone (a
 * react loop, an agent called as a tool while its caller waits) asks for
 * one commit a turn, before its request, and gets it at once.
 */
export function commitPerTurn(commit: () => void | Promise<void>): () => void | Promise<void> {
  /** A commit was made in this turn; the next ones wait for its end. */
  let turn = false;
  let due: Promise<void> | undefined;
  let resolveDue: ((written: void | Promise<void>) => void) | undefined;
  return () => {
    if (turn) {
      return (due ??= new Promise<void>((resolve) => {
        resolveDue = resolve;
      }));
    }
    turn = true;
    setImmediate(() => {
      turn = false;
      const waiting = resolveDue;
      due = resolveDue = undefined;
      if (!waiting) return;
      let written: void | Promise<void>;
      try {
        written = commit();
      } catch {
        // batchedTraceSink's commit warns and never throws; a caller must not hang if one did.
        written = undefined;
      }
      waiting(written);
    });
    return commit();
  };
}

/** Directories whose store is open in this process (for diagnostics and tests). */
export function openTraceStores(): string[] {
  return [...stores.keys()];
}

/**
 * A sink that stores a run's events and journal entries
 * (docs/design/journal.md#when-it-is-written). A synchronous burst of events
 * is committed in one transaction at the end of its microtask, so a killed
 * process loses at most the events of the instant it died in, and a write
 * tool's result is durable as soon as the tool is done. One window is held
 * open longer: from a model reply until the run acts on it (`commit()`,
 * called before a write tool's body runs and before the next request is
 * sent) or the next turn of the event loop. Nothing irreversible happens in
 * that window (a reply lost there is asked for again, a read tool run
 * again), and the reply, the state it moves the machine to, the read tools it
 * runs and the next request become one commit. A failing write becomes a process warning, never an exception inside
 * the run.
 *
 * An asynchronous store (the embedded one through `groupAppend`, PostgreSQL:
 * docs/scale-out.md) commits in order, one transaction after the other;
 * `commit()` then returns the promise of everything so far being durable,
 * which the engine awaits at its two write-ahead points.
 */
export function batchedTraceSink(
  store: Pick<RunStore, "appendMany" | "location">,
  /** Called with the last `seq` of each batch of events once it is durable. */
  onStored?: (seq: number) => void,
): {
  sink: EventSink;
  commit(): void | Promise<void>;
  journal(entry: JournalEntry): void;
} {
  let pending: RunEvent[] = [];
  /** By key: a call's result replaces its start written in the same batch (one row written, not two). */
  let entries = new Map<string, JournalEntry>();
  let microtask = false;
  let held: NodeJS.Immediate | undefined;
  let warned = false;
  /** The last asynchronous commit, while one is in flight. */
  let tail: Promise<void> | undefined;
  const warn = (err: unknown) => {
    if (!warned) process.emitWarning(`trace store ${store.location}: ${describeError(err)}`, "TraceStoreWarning");
    warned = true;
  };
  const settle = (written: Promise<void>): Promise<void> => {
    const done: Promise<void> = written.catch(warn).finally(() => {
      if (tail === done) tail = undefined;
    });
    tail = done;
    return done;
  };
  const commit = (): void | Promise<void> => {
    if (held) clearImmediate(held);
    held = undefined;
    if (pending.length === 0 && entries.size === 0) return tail;
    const batch = pending;
    const journal = [...entries.values()];
    pending = [];
    entries = new Map();
    const last = batch.at(-1)?.seq;
    // After a batch failed, nothing more is said to be stored: its events are not, and a later
    // batch's success must not let them go from memory too.
    const done =
      last === undefined || !onStored
        ? undefined
        : () => {
            if (!warned) onStored(last);
          };
    if (tail) return settle(tail.then(() => store.appendMany(batch, journal)).then(done));
    try {
      const written = store.appendMany(batch, journal);
      if (written) return settle(written.then(done));
      done?.();
    } catch (err) {
      warn(err);
    }
  };
  const schedule = () => {
    if (held || microtask) return;
    microtask = true;
    queueMicrotask(() => {
      microtask = false;
      if (!held) commit();
    });
  };
  const sink: EventSink = (event) => {
    pending.push(event);
    schedule();
  };
  const journal = (entry: JournalEntry) => {
    entries.set(entry.key, entry);
    if (entry.kind === "model.reply") {
      held ??= setImmediate(commit);
      return;
    }
    // A result inside the window a reply opened is a read or idempotent tool's (a write tool's body
    // commits first, which closes the window): it joins the window, and the reply, the call's start
    // and result and the next request go out in one commit (a resume that lost them asks and runs
    // again, changing nothing). A write tool's result is committed at the end of its microtask.
    if (entry.kind === "tool.result" && held) return;
    schedule();
  };
  return { sink, commit, journal };
}
