/**
 * The write path of runs (docs/design/journal.md#when-it-is-written): the
 * writers of one store queue their events and journal entries, and what
 * they queue in one turn of the event loop is one transaction at its end,
 * one after the other, in order. `durable()` settles once a writer's
 * queue so far is committed; the engine awaits it before a model request
 * and before a write tool's body. Each adapter gives its writers one
 * `Committer`: SQLite one per open database, shared by every run of the
 * process; PostgreSQL one per run.
 *
 * A write that fails because the store is away for now (PostgreSQL
 * restarting: the adapter's `retry` says which failures are) is kept and
 * tried again with a growing pause until it is written, for up to two
 * minutes (`retryPolicies.storeWrite`); `durable()` waits for it, so a run does not act on what
 * is not stored, and a tool's result is not lost to a restart
 * (docs/scale-out.md#when-the-database-goes-away). A worker's writes stop
 * sooner, fenced by its lease (src/queue/worker.ts).
 */
import { describeError } from "../errors.js";
import type { RunEvent } from "../events/types.js";
import { retry, retryPolicies } from "../retry.js";
import type { AppendBatch, JournalEntry, RunWriter } from "./runs.js";

/** Writes batches in one transaction, all or none: done when it returns (SQLite) or when its promise settles (PostgreSQL). */
export type WriteBatches = (batches: readonly AppendBatch[]) => void | Promise<void>;

/** What one writer has queued, and what it is told. */
interface Queue {
  events: RunEvent[];
  /** By key: a call's result replaces its start queued in the same commit (one row written, not two). */
  entries: Map<string, JournalEntry>;
  /** Settles when the commit that takes (or took) the writer's last append is done. */
  round: Promise<void> | undefined;
  stored: ((seq: number) => void) | undefined;
  /** A write failed: said once, and nothing later is reported stored (what failed is not). */
  warned: boolean;
}

interface Round {
  done: Promise<void>;
  settle: () => void;
}

function newRound(): Round {
  let settle!: () => void;
  const done = new Promise<void>((resolve) => {
    settle = resolve;
  });
  return { done, settle };
}

export class Committer {
  private readonly queued = new Set<Queue>();
  /** Writers not closed: one alone has nobody to share a transaction with. */
  private open = 0;
  /** The commit that takes what is queued now. */
  private next: Round | undefined;
  private turn: NodeJS.Immediate | undefined;
  /** A writer alone was committed at once in this turn: the next `durable()` of the turn waits for its end. */
  private committedNow = false;
  /** A commit is in flight (an asynchronous store): the next one starts when it is done. */
  private busy = false;
  private again = false;

  constructor(
    /** Where the store is, for warnings. */
    private readonly location: string,
    private readonly write: WriteBatches,
    /** Whether a failed write is worth trying again (the store is away for now). @default never */
    private readonly retry: (err: unknown) => boolean = () => false,
    /**
     * Whether a try that failed so, after one whose answer was lost with the
     * connection, failed because that one was committed (its rows are there). @default never
     */
    private readonly committedBefore: (err: unknown) => boolean = () => false,
  ) {}

  writer(stored?: (seq: number) => void): RunWriter {
    const queue: Queue = { events: [], entries: new Map(), round: undefined, stored, warned: false };
    this.open++;
    let closed = false;
    return {
      append: (events, journal = []) => {
        if (events.length === 0 && journal.length === 0) return;
        for (const event of events) queue.events.push(event);
        for (const entry of journal) queue.entries.set(entry.key, entry);
        this.queued.add(queue);
        this.next ??= newRound();
        queue.round = this.next.done;
        this.turn ??= setImmediate(() => {
          this.turn = undefined;
          this.committedNow = false;
          this.commit();
        });
      },
      durable: () => this.durable(queue),
      close: () => {
        if (!closed) this.open--;
        closed = true;
        return this.durable(queue);
      },
    };
  }

  /** Commit what is queued now (before the store closes). */
  flush(): void {
    if (this.turn) clearImmediate(this.turn);
    this.turn = undefined;
    this.committedNow = false;
    this.commit();
  }

  /**
   * A writer alone is committed at once: a turn's wait would cost it a turn
   * of the loop per commit. Else, and for a second call in one turn (the
   * solvers of one plan_solver run asking together), the commit at the end
   * of the turn takes everyone's: 16 solvers' first requests waited for 16
   * transactions one after the other and left over 3-6 ms, instead of ~0.5
   * (docs/design/journal.md#when-it-is-written).
   */
  private durable(queue: Queue): Promise<void> {
    if (this.queued.has(queue) && this.open <= 1 && !this.committedNow) {
      this.committedNow = true;
      this.commit();
    }
    return queue.round ?? Promise.resolve();
  }

  private commit(): void {
    if (this.busy) {
      this.again = true;
      return;
    }
    const round = this.next;
    if (this.queued.size === 0 || !round) return;
    const writers = [...this.queued];
    this.queued.clear();
    this.next = undefined;
    const batches = writers.map((q): AppendBatch => {
      const batch: AppendBatch = [q.events, [...q.entries.values()]];
      q.events = [];
      q.entries = new Map();
      return batch;
    });
    const written = this.tryWrite(writers, batches);
    if (!written) {
      round.settle();
      return;
    }
    this.busy = true;
    const done = () => {
      this.busy = false;
      round.settle();
      if (this.again || (this.queued.size > 0 && !this.turn)) {
        this.again = false;
        this.commit();
      }
    };
    void written.then(done, done);
  }

  /**
   * The batches in one transaction; when the store is away, the same again
   * after a pause (`retryPolicies.storeWrite`); when that fails otherwise,
   * each alone, so that one that cannot be written fails alone.
   */
  private tryWrite(writers: readonly Queue[], batches: readonly AppendBatch[]): void | Promise<void> {
    let written: void | Promise<void>;
    try {
      written = this.write(batches);
    } catch (err) {
      return this.failed(writers, batches, err);
    }
    if (!written) return this.stored(writers, batches);
    return written.then(
      () => this.stored(writers, batches),
      (err: unknown) => this.failed(writers, batches, err),
    );
  }

  private failed(writers: readonly Queue[], batches: readonly AppendBatch[], err: unknown): void | Promise<void> {
    const alone = (error: unknown) => (batches.length === 1 ? this.warn(writers[0]!, error) : this.oneByOne(writers, batches, 0));
    if (!this.retry(err)) return alone(err);
    const again = async () => {
      try {
        await this.write(batches);
      } catch (error) {
        // The try before was committed, its answer lost with the connection: the rows are there.
        if (!this.committedBefore(error)) throw error;
      }
    };
    return retry(again, { policy: retryPolicies.storeWrite, isRetryable: this.retry, after: err }).then(() => this.stored(writers, batches), alone);
  }

  private oneByOne(writers: readonly Queue[], batches: readonly AppendBatch[], from: number): void | Promise<void> {
    for (let i = from; i < batches.length; i++) {
      const written = this.tryWrite([writers[i]!], [batches[i]!]);
      if (written) return written.then(() => this.oneByOne(writers, batches, i + 1));
    }
  }

  private stored(writers: readonly Queue[], batches: readonly AppendBatch[]): void {
    writers.forEach((q, i) => {
      const last = batches[i]![0].at(-1)?.seq;
      if (last !== undefined && !q.warned) q.stored?.(last);
    });
  }

  private warn(queue: Queue, err: unknown): void {
    if (!queue.warned) process.emitWarning(`trace store ${this.location}: ${describeError(err)}`, "TraceStoreWarning");
    queue.warned = true;
  }
}
