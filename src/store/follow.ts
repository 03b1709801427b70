/**
 * Following a run: the one way every stream gets a run's events
 * (docs/server.md#where-an-event-reaches-the-stream). The events after a seq
 * are read from the store, then each commit of new ones is heard
 * (`RunStore.watch`: in this process for SQLite, LISTEN/NOTIFY for
 * PostgreSQL) and read in turn. Listening starts before the first read, and
 * every read asks for what comes after the last event given, so nothing is
 * lost or given twice between the backlog and the live events.
 *
 * Reads are pages of at most PAGE events (docs/server.md#slow-readers): a
 * follower behind the run holds one page while its client takes it, and
 * reads the next once it has sent it. The followers of one run in a process
 * share their reads: those on the same page get one query and the same event
 * objects (so the SSE frame each event makes is built once). Those pages are
 * the only events held here, and only while a follower is sending them: a
 * run waiting on its model no longer holds its last read until its next
 * commit (docs/performance.md#runs-waiting-on-a-slow-model measured ~2.4 KB a
 * run for it).
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

/**
 * The most events one read of the store gives a follower: what a follower
 * behind the run holds while its client takes them (docs/server.md#slow-readers).
 */
export const PAGE = 256;

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
    // `more` said no: the pages stored before it answered (a run's last events, committed as it ended), then the end.
    let ending = false;
    for (;;) {
      if (signal?.aborted) return;
      const heard = tail.heard;
      const read = ending ? undefined : tail.read(at);
      let page: RunEvent[];
      try {
        page = read ? await read.events : await runs.eventsOfTask(taskId, at, PAGE);
        // A full page that ends before the follower (a run whose seqs skip some): the page after its seq.
        if (page.length >= PAGE && page.at(-1)!.seq <= at) page = await runs.eventsOfTask(taskId, at, PAGE);
        for (const event of page) {
          if (event.seq <= at) continue;
          at = event.seq;
          last = event;
          yield { event, live };
          if (signal?.aborted) return;
        }
      } finally {
        if (read) tail.done(read);
      }
      // A full page: more is stored, read once this one is sent.
      if (page.length >= PAGE) continue;
      if (ending) {
        if (page.length === 0) return;
        ending = false;
        continue;
      }
      // What was stored when the follower began has been given: the rest is live.
      live = true;
      if (tail.heard !== heard) continue;
      if (!(await more(at, last))) {
        ending = true;
        continue;
      }
      if (tail.heard === heard) await tail.next(signal);
    }
  } finally {
    tail.release();
  }
}

/** A page of a run's events, read once for the followers on it. */
interface Read {
  /** The seq the page's events come after: a multiple of PAGE. */
  start: number;
  events: Promise<RunEvent[]>;
  /** The followers sending it. */
  takers: number;
}

/** The followers of one run in a process: the store's watch and the reads they share. */
class Tail {
  private static readonly tails = new WeakMap<RunStore, Map<string, Tail>>();

  /** Commits heard so far: a read made before the last one may miss events. */
  heard = 0;
  readonly listening: Promise<Watch>;
  private users = 0;
  private readonly reads = new Map<number, Read>();
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

  /**
   * A page with the events after `seq`: the page of PAGE events that holds
   * `seq + 1` (pages begin at multiples of PAGE, so followers a few events
   * apart share theirs), one query for every follower on it until the next
   * commit is heard. The follower gives it back with `done` once it has sent
   * it; a page is let go when no follower holds it.
   */
  read(seq: number): Read {
    const start = seq - (seq % PAGE);
    let read = this.reads.get(start);
    if (!read) {
      const events = this.runs.eventsOfTask(this.taskId, start, PAGE);
      read = { start, events, takers: 0 };
      this.reads.set(start, read);
      const mine = read;
      events.catch(() => this.forget(mine));
    }
    read.takers++;
    return read;
  }

  /** A follower has sent what it took of `read`. */
  done(read: Read): void {
    if (--read.takers <= 0) this.forget(read);
  }

  private forget(read: Read): void {
    if (this.reads.get(read.start) === read) this.reads.delete(read.start);
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
