/**
 * Following a run: the one way every stream gets a run's events
 * (docs/server.md#where-an-event-reaches-the-stream). The events after a seq
 * are read from the store, then each commit of new ones is heard
 * (`RunStore.watch`: in this process for SQLite, LISTEN/NOTIFY for
 * PostgreSQL) and read in turn. Listening starts before the first read, and
 * every read asks for what comes after the last event given, so nothing is
 * lost or given twice between the backlog and the live events.
 *
 * The followers of one run in a process share their reads: those at the
 * same seq when a commit is heard get one query and the same event objects
 * (so the SSE frame each event makes is built once). Those reads are the
 * only events held here, and only until every follower has taken them: a
 * run waiting on its model held its last read and their frames (~2.4 KB a
 * run, docs/performance.md#runs-waiting-on-a-slow-model) until its next commit.
 */
import type { RunEvent } from "../events/types.js";
import type { RunStore, Watch } from "./runs.js";

export interface FollowOptions {
  /**
   * Whether more events may come, asked whenever the follower has read all
   * there is: `seq` is the last one it gave (or the one it started after),
   * `last` that event when it read one. On false, one last read, then the end.
   * @default until run.finished is read
   */
  more?: (seq: number, last: RunEvent | undefined) => boolean | Promise<boolean>;
  /** Ends the follow (the iterator returns) when aborted. */
  signal?: AbortSignal;
}

/** An event of the run; `live` once the follower had caught up with what was stored when it began. */
export interface Followed {
  event: RunEvent;
  live: boolean;
}

const untilFinished = (_seq: number, last: RunEvent | undefined): boolean => last?.type !== "run.finished";

/**
 * The events of `taskId` after `afterSeq`: those stored, then each new one
 * as it is stored, in `seq` order, each once. Rejects when the store cannot
 * be read or listened to.
 */
export async function* follow(runs: RunStore, taskId: string, afterSeq: number, options: FollowOptions = {}): AsyncGenerator<Followed> {
  const more = options.more ?? untilFinished;
  const signal = options.signal;
  const tail = Tail.of(runs, taskId);
  try {
    await tail.listening;
    let at = afterSeq;
    let last: RunEvent | undefined;
    let live = false;
    for (;;) {
      if (signal?.aborted) return;
      const heard = tail.heard;
      for (const event of await tail.read(at)) {
        if (event.seq <= at) continue;
        at = event.seq;
        last = event;
        yield { event, live };
        if (signal?.aborted) return;
      }
      // What was stored when the follower began has been given: the rest is live.
      live = true;
      if (tail.heard !== heard) continue;
      if (!(await more(at, last))) {
        // What was stored before `more` answered (a run's last events, committed as it ended).
        const rest = (await runs.eventsOfTask(taskId, at)).filter((e) => e.seq > at);
        if (rest.length === 0) return;
        for (const event of rest) {
          at = event.seq;
          last = event;
          yield { event, live };
          if (signal?.aborted) return;
        }
        continue;
      }
      if (tail.heard === heard) await tail.next(signal);
    }
  } finally {
    tail.release();
  }
}

/** The followers of one run in a process: the store's watch and the reads they share. */
class Tail {
  private static readonly tails = new WeakMap<RunStore, Map<string, Tail>>();

  /** Commits heard so far: a read made before the last one may miss events. */
  heard = 0;
  readonly listening: Promise<Watch>;
  private users = 0;
  private readonly reads = new Map<number, Promise<RunEvent[]>>();
  private wakers = new Set<() => void>();

  private constructor(
    private readonly runs: RunStore,
    private readonly taskId: string,
    private readonly byTask: Map<string, Tail>,
  ) {
    this.listening = runs.watch(taskId, () => this.wake());
    // A follower that never reads it still must not leave a rejection unhandled.
    this.listening.catch(() => {});
  }

  static of(runs: RunStore, taskId: string): Tail {
    let byTask = Tail.tails.get(runs);
    if (!byTask) Tail.tails.set(runs, (byTask = new Map()));
    let tail = byTask.get(taskId);
    if (!tail) byTask.set(taskId, (tail = new Tail(runs, taskId, byTask)));
    tail.users++;
    return tail;
  }

  /** The events after `seq`, one query for every follower at `seq` until the next commit is heard. */
  read(seq: number): Promise<RunEvent[]> {
    let read = this.reads.get(seq);
    if (!read) {
      read = this.runs.eventsOfTask(this.taskId, seq);
      this.reads.set(seq, read);
      const mine = read;
      read.catch(() => {
        if (this.reads.get(seq) === mine) this.reads.delete(seq);
      });
    }
    return read;
  }

  /** Until the next commit is heard, or `signal` aborts. */
  next(signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        signal?.removeEventListener("abort", done);
        this.wakers.delete(done);
        resolve();
      };
      this.wakers.add(done);
      // Every follower waits for the next commit: none will take what was read.
      if (this.wakers.size >= this.users) this.reads.clear();
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  release(): void {
    if (--this.users > 0) return;
    if (this.byTask.get(this.taskId) === this) this.byTask.delete(this.taskId);
    this.listening.then(
      (w) => w.close(),
      () => {},
    );
  }

  private wake(): void {
    this.heard++;
    this.reads.clear();
    const wakers = this.wakers;
    this.wakers = new Set();
    for (const w of wakers) w();
  }
}
