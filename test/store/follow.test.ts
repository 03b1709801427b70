/**
 * Following a run (src/store/follow.ts) on every adapter: the backlog after
 * a seq, then each event as it is stored, heard in this process (SQLite) or
 * over LISTEN/NOTIFY (PostgreSQL, written through a second store as another
 * process would); no seq lost or repeated while commits race the first read;
 * the end at run.finished or when `more` says so; a cancel.
 */
import { describe, expect, it } from "vitest";
import type { RunEvent, RunEventBody } from "../../src/events/types.js";
import { createStore } from "../../src/store/create.js";
import { follow, type Followed } from "../../src/store/follow.js";
import { adapters } from "../support/store-adapters.js";

const USAGE = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };

function event(task: string, seq: number, body: RunEventBody = { type: "agent.started", kind: "react", input: "" }): RunEvent {
  return { ...body, seq, ts: "2026-01-01T00:00:00.000Z", task_id: task, agent_id: "solver" } as RunEvent;
}
const started = (task: string) => event(task, 1, { type: "run.started", input: "go" });
const finished = (task: string, seq: number) => event(task, seq, { type: "run.finished", result_type: "answer", answer: "done", usage: USAGE });

/** Read a follow to its end (or until `stopAt` events), as the SSE routes do. */
async function collect(items: AsyncIterable<Followed>, stopAt = Infinity): Promise<Followed[]> {
  const got: Followed[] = [];
  for await (const item of items) {
    got.push(item);
    if (got.length >= stopAt) break;
  }
  return got;
}

const seqs = (got: Followed[]) => got.map((g) => g.event.seq);
const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

describe.each(adapters())("follow on $name", (adapter) => {
  it("gives the backlog after a seq, then each event as it is stored, and ends at run.finished", async () => {
    const { runs } = await adapter.open();
    await runs.appendMany([started("t1"), event("t1", 2), event("t1", 3)]);
    const following = follow(runs, "t1", 1);
    // The backlog, read before anything more is stored.
    const got = [(await following.next()).value as Followed, (await following.next()).value as Followed];
    await runs.appendMany([event("t1", 4)]);
    const reading = collect(following);
    await tick();
    // Another run's commits wake nobody here and are not given.
    await runs.appendMany([started("other"), event("other", 2)]);
    await runs.appendMany([event("t1", 5), finished("t1", 6)]);
    got.push(...(await reading));
    expect(seqs(got)).toEqual([2, 3, 4, 5, 6]);
    expect(got.map((g) => g.live)).toEqual([false, false, true, true, true]);
    expect(got.every((g) => g.event.task_id === "t1")).toBe(true);
  });

  it("loses and repeats no seq while commits race the first read, for followers that join at different points", async () => {
    const { runs } = await adapter.open();
    await runs.appendMany([started("t2")]);
    const readers: Promise<Followed[]>[] = [];
    for (let seq = 2; seq <= 60; seq++) {
      if (seq % 10 === 0) readers.push(collect(follow(runs, "t2", seq % 20 === 0 ? 0 : 3)));
      await runs.appendMany(seq === 60 ? [finished("t2", 60)] : [event("t2", seq)]);
    }
    const all = await Promise.all(readers);
    for (const got of all) {
      const first = seqs(got)[0]!;
      expect(seqs(got)).toEqual(Array.from({ length: 61 - first }, (_, i) => first + i));
    }
  });

  it("hears commits of another handle on the same store", async () => {
    const store = await adapter.open();
    // A second handle, as a run's writer beside a server's reader (SQLite) or another process (PostgreSQL).
    const writer = await createStore(store.database?.url ?? store.location);
    try {
      await writer.runs.appendMany([started("t3")]);
      const reading = collect(follow(store.runs, "t3", 0));
      await tick();
      await writer.runs.appendMany([event("t3", 2), finished("t3", 3)]);
      expect(seqs(await reading)).toEqual([1, 2, 3]);
    } finally {
      await writer.close();
    }
  });

  it("ends when `more` says no more can come, after one last read", async () => {
    const { runs } = await adapter.open();
    await runs.appendMany([started("t4"), event("t4", 2)]);
    const asked: number[] = [];
    const got = await collect(
      follow(runs, "t4", 0, {
        more: (seq) => {
          asked.push(seq);
          return false;
        },
      }),
    );
    expect(seqs(got)).toEqual([1, 2]);
    expect(asked).toEqual([2]);
    // A run with no events after the seq asked: nothing, and the end.
    expect(await collect(follow(runs, "t4", 2, { more: () => false }))).toEqual([]);
  });

  it("stops when cancelled while it waits for the next commit", async () => {
    const { runs } = await adapter.open();
    await runs.appendMany([started("t5")]);
    const cancel = new AbortController();
    const following = follow(runs, "t5", 0, { signal: cancel.signal });
    expect((await following.next()).value?.event.seq).toBe(1);
    const waiting = following.next();
    await tick();
    cancel.abort();
    expect(await waiting).toEqual({ done: true, value: undefined });
    // Nothing is left listening for it: a later commit reaches no one (and breaks nothing).
    await runs.appendMany([event("t5", 2)]);
  });
});
