/**
 * Events the run's store has written leave the bus's memory (EventBus.spillTo
 * and stored); a reader that comes late reads them back from the store, one
 * that is still reading keeps what it has not reached in memory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import { EventBus } from "../../src/events/bus.js";
import type { RunEvent } from "../../src/events/types.js";
import { TraceStore } from "../../src/store/sqlite/trace-store.js";
import { sqliteRunStore } from "../../src/store/sqlite/run-store.js";
import { circleReactRun, steppingClock } from "../support/trace-events.js";

const dirs: string[] = [];
const stores: TraceStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function storedBus(): { bus: EventBus; store: TraceStore; reads: number[] } {
  const dir = mkdtempSync(join(tmpdir(), "spill-"));
  dirs.push(dir);
  const store = TraceStore.open(dir);
  stores.push(store);
  const bus = new EventBus("task-s", steppingClock());
  const reads: number[] = [];
  bus.subscribe(store.append);
  bus.spillTo(async (afterSeq) => {
    reads.push(afterSeq);
    return store.eventsOfTask("task-s", afterSeq);
  });
  return { bus, store, reads };
}

async function readAll(bus: EventBus): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const e of bus.events()) out.push(e);
  return out;
}

describe("events leave memory once stored", () => {
  test("a late reader gets every event back from the store, the ones still in memory as they are", async () => {
    const { bus, reads } = storedBus();
    const emitted = circleReactRun("task-s", bus).slice(0, 6);
    // Not yet said to be stored: a reader gets the very objects emitted.
    const early = bus.events();
    const first = await early.next();
    expect(first.value).toBe(bus.mask(emitted[0]!));
    bus.stored(4);
    const late = bus.events();
    const got: RunEvent[] = [];
    for (let i = 0; i < 6; i++) got.push((await late.next()).value as RunEvent);
    expect(got.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    // Only event 1 was reached by the early reader; nothing it has not reached left memory.
    expect(reads).toEqual([0]);
    expect(got[0]).toEqual(first.value);
    expect(got[0]).not.toBe(first.value);
    // The early reader goes on from memory.
    const rest: RunEvent[] = [];
    for (let i = 0; i < 5; i++) rest.push((await early.next()).value as RunEvent);
    expect(rest.map((e) => e.seq)).toEqual([2, 3, 4, 5, 6]);
    expect(rest[0]).toBe(bus.mask(emitted[1]!));
    await early.return(undefined);
    await late.return(undefined);
  });

  test("with no reader, what is stored is read back, and the events after it come from memory", async () => {
    const { bus, reads } = storedBus();
    const emitted = circleReactRun("task-s", bus);
    bus.stored(emitted.length - 2);
    bus.close();
    const all = await readAll(bus);
    expect(all.map((e) => e.seq)).toEqual(emitted.map((_, i) => i + 1));
    expect(reads).toEqual([0]);
    expect(all.at(-1)).toBe(bus.mask(emitted.at(-1)!));
    expect(JSON.parse(JSON.stringify(all))).toEqual(JSON.parse(JSON.stringify(emitted.map((e) => bus.mask(e)))));
  });

  test("a run's events, read after it ended, are all there: from the store, then the last ones", async () => {
    const dir = mkdtempSync(join(tmpdir(), "spill-run-"));
    dirs.push(dir);
    const team = await loadTeam("teams/circle-react.yaml");
    const live: RunEvent[] = [];
    const run = runTeam(team, { input: "radius 2", traceDir: dir, sinks: [(e) => live.push(e)] });
    await run.result;
    const late: RunEvent[] = [];
    for await (const e of run.events) late.push(e);
    expect(late.map((e) => e.seq)).toEqual(live.map((_, i) => i + 1));
    expect(JSON.parse(JSON.stringify(late))).toEqual(JSON.parse(JSON.stringify(live)));
    // Most came back from the store: they are copies, not the objects the sinks were given.
    expect(late.filter((e, i) => e !== live[i]).length).toBeGreaterThan(live.length / 2);
  });

  test("after a batch failed to be stored, no later batch lets events go from memory", async () => {
    const dir = mkdtempSync(join(tmpdir(), "spill-fail-"));
    dirs.push(dir);
    const store = TraceStore.open(dir);
    stores.push(store);
    const event = (seq: number): RunEvent =>
      ({ type: "run.started", input: "x", seq, ts: "2026-01-01T00:00:00.000Z", task_id: "t", agent_id: "a" }) as RunEvent;
    const said: number[] = [];
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on("warning", onWarning);
    try {
      const writer = sqliteRunStore(store).writer((seq) => said.push(seq));
      writer.append([event(1)]);
      await writer.durable();
      // Another writer stores seq 2 meanwhile: the batch that brings it again fails.
      store.append(event(2));
      writer.append([event(2)]);
      await writer.durable();
      writer.append([event(3)]);
      await writer.durable();
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", onWarning);
    }
    expect(said).toEqual([1]);
    expect(warnings.join("\n")).toMatch(/UNIQUE/);
    expect(store.eventsOfTask("t").map((e) => e.seq)).toEqual([1, 2, 3]);
  });
});
