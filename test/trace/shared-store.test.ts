import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import { acquireTraceStore, groupAppend, openTraceStores, releaseTraceStore } from "../../src/engine/trace-stores.js";
import type { RunEvent } from "../../src/events/types.js";
import { TraceStore } from "../../src/trace/store.js";
import { runCli } from "../support/cli.js";
import { tempDir } from "../support/team.js";

describe("the trace store shared by the runs of a process", () => {
  it("stays open between sequential runs (no close and reopen per run) and keeps every run", async () => {
    const dir = tempDir();
    const team = await loadTeam("teams/circle-react.yaml");
    const first = await runTeam(team, { input: "radius 5", traceDir: dir }).result;
    expect(openTraceStores()).toContain(dir);
    const second = await runTeam(team, { input: "radius 5 again", traceDir: dir }).result;
    expect([first.result_type, second.result_type]).toEqual(["answer", "answer"]);
    const list = await runCli(["trace", "--trace-dir", dir, "--json"]);
    expect(list.stdout.trim().split("\n").map((l) => (JSON.parse(l) as { task_id: string }).task_id).sort()).toEqual(
      [first.task_id, second.task_id].sort(),
    );
  });

  it("is closed cleanly when the CLI exits (the WAL is checkpointed away)", async () => {
    const dir = tempDir();
    const r = await runCli(["exec", "teams/circle-react.yaml", "radius 5", "--trace-dir", dir]);
    expect(r.code).toBe(0);
    expect(existsSync(join(dir, "traces.db"))).toBe(true);
    expect(existsSync(join(dir, "traces.db-wal"))).toBe(false);
  });

  it("commits the batches of runs going on at once together (group commit), and every run's events are kept", async () => {
    const dir = tempDir();
    const team = await loadTeam("teams/circle-react.yaml");
    await runTeam(team, { input: "warm up", traceDir: dir }).result;
    const appendAll = vi.spyOn(TraceStore.prototype, "appendAll");
    try {
      const runs = Array.from({ length: 12 }, (_, i) => runTeam(team, { input: `radius ${i + 1}`, traceDir: dir }));
      const results = await Promise.all(runs.map((r) => r.result));
      expect(results.map((r) => r.result_type)).toEqual(Array(12).fill("answer"));
      const batches = appendAll.mock.calls.reduce((n, [b]) => n + b.length, 0);
      const biggest = Math.max(...appendAll.mock.calls.map(([b]) => b.length));
      // Twelve runs at once: transactions carry several runs' batches, so there are fewer of them.
      expect(biggest).toBeGreaterThanOrEqual(6);
      expect(appendAll.mock.calls.length).toBeLessThan(batches / 3);
    } finally {
      appendAll.mockRestore();
    }
    const store = TraceStore.open(dir, { create: false });
    try {
      const listed = store.listRuns({ limit: 50 });
      expect(listed).toHaveLength(13);
      for (const run of listed) {
        const events = store.eventsOfTask(run.task_id);
        expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
        expect(events.at(-1)?.type).toBe("run.finished");
      }
    } finally {
      store.close();
    }
  });

  it("the steps of one run going on at once share their write-ahead commits; a step alone commits before each request", async () => {
    const dir = tempDir();
    const team = await loadTeam("teams/plan-solver.yaml");
    await runTeam(team, { input: "warm up", traceDir: dir }).result;
    const order: string[] = [];
    const appendAll = TraceStore.prototype.appendAll;
    TraceStore.prototype.appendAll = function (this: TraceStore, batches) {
      order.push("commit");
      return appendAll.call(this, batches);
    };
    try {
      const result = await runTeam(team, { input: "go", traceDir: dir, sinks: [(e) => void (e.type === "llm.request" && order.push(e.agent_id))] }).result;
      expect(result.result_type).toBe("answer");
    } finally {
      TraceStore.prototype.appendAll = appendAll;
    }
    // The planner (alone) commits before its request; the solvers, 4 at once (its concurrency), once
    // for the 4 requests of a turn, where each had its own commit (8 for 8); the aggregator alone again.
    const runs = order.join(" ").split(" commit").map((s) => s.trim()).filter((s) => s !== "" && s !== "commit");
    expect(runs).toEqual(["planner", "solver solver solver solver", "solver solver solver solver", "aggregator"]);
    const store = TraceStore.open(dir, { create: false });
    try {
      expect(store.listRuns()).toHaveLength(2);
    } finally {
      store.close();
    }
  });

  it("a batch that cannot be written fails alone: the others of its transaction are kept; a run alone commits at once", async () => {
    const dir = tempDir();
    // Two users, as two runs going on at once: batches wait for the end of the turn.
    acquireTraceStore(dir);
    acquireTraceStore(dir);
    const event = (task_id: string, seq: number): RunEvent =>
      ({ type: "run.started", input: "x", seq, ts: "2026-01-01T00:00:00.000Z", task_id, agent_id: "a" }) as RunEvent;
    const reader = () => TraceStore.open(dir, { create: false });
    try {
      const append = groupAppend(dir);
      await append([event("first", 1)], []);
      // One turn: a good batch, a batch repeating a stored seq, another good one.
      const settled = await Promise.allSettled([append([event("good", 1)], []), append([event("first", 1)], []), append([event("also-good", 1)], [])]);
      expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
      expect(String((settled[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
      // One user left: its batch is committed before append returns, and a bad one throws there.
      releaseTraceStore(dir);
      expect(append([event("solo", 1)], [])).toBeUndefined();
      const store = reader();
      expect(store.lastSeq("solo")).toBe(1);
      store.close();
      expect(() => append([event("solo", 1)], [])).toThrow(/UNIQUE/);
    } finally {
      releaseTraceStore(dir);
    }
    const store = reader();
    try {
      expect(store.listRuns().map((r) => r.task_id).sort()).toEqual(["also-good", "first", "good", "solo"]);
    } finally {
      store.close();
    }
  });
});
