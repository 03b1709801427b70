import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import { journalAtRequests } from "../support/journal-reader.js";
import type { RunEvent } from "../../src/events/types.js";
import { sqliteStore } from "../../src/store/sqlite/store.js";
import { TraceStore } from "../../src/store/sqlite/trace-store.js";
import { runCli } from "../support/cli.js";
import { tempDir } from "../support/team.js";

describe("the trace store shared by the runs of a process", () => {
  it("stays open between sequential runs while a handle holds it (no close and reopen per run) and keeps every run", async () => {
    const dir = tempDir();
    const team = await loadTeam("teams/circle-react.yaml");
    const held = sqliteStore(dir);
    await held.ping();
    const open = vi.spyOn(TraceStore, "open");
    let first: Awaited<ReturnType<typeof runTeam>["result"]>;
    let second: Awaited<ReturnType<typeof runTeam>["result"]>;
    try {
      first = await runTeam(team, { input: "radius 5", traceDir: dir }).result;
      second = await runTeam(team, { input: "radius 5 again", traceDir: dir }).result;
      expect(open).not.toHaveBeenCalled();
    } finally {
      open.mockRestore();
      await held.close();
    }
    expect([first.result_type, second.result_type]).toEqual(["answer", "answer"]);
    const list = await runCli(["trace", "--trace-dir", dir, "--json"]);
    expect(
      list.stdout
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as { task_id: string }).task_id)
        .sort(),
    ).toEqual([first.task_id, second.task_id].sort());
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

  it("the steps of one run going on at once share the write-ahead commits of a turn, and each request still leaves after what it is built from", async () => {
    const dir = tempDir();
    const team = await loadTeam("teams/plan-solver.yaml");
    await runTeam(team, { input: "warm up", traceDir: dir }).result;
    let commits = 0;
    const appendAll = TraceStore.prototype.appendAll;
    TraceStore.prototype.appendAll = function (this: TraceStore, batches) {
      commits++;
      return appendAll.call(this, batches);
    };
    // What each request finds when it leaves: the commits made so far, the replies committed (through another connection).
    const requests: { commits: number; replies: Set<string> }[] = [];
    const reader = journalAtRequests(dir, (journal) =>
      requests.push({ commits, replies: new Set(journal.filter((e) => e.kind === "model.reply").map((e) => e.key)) }),
    );
    try {
      expect((await runTeam(team, { input: "go", traceDir: dir, ...reader.options }).result).result_type).toBe("answer");
    } finally {
      TraceStore.prototype.appendAll = appendAll;
      reader.close();
    }
    // The planner (step 0.0), 4 solvers at once (0.1-0.4) with two calls each (a tool between), the aggregator.
    expect(requests).toHaveLength(10);
    const [planner, first, second, aggregator] = [requests[0]!, requests.slice(1, 5), requests.slice(5, 9), requests[9]!];
    expect(planner.replies.size).toBe(0);
    // Write-ahead: each request leaves after the replies it is built from are stored: the solvers' after
    // the planner's, each solver's second after its first (so all four by the last of them), the aggregator's
    // after every solver's.
    for (const request of first) expect(request.replies.has("0.0/m0")).toBe(true);
    const firstReplies = ["0.1/m0", "0.2/m0", "0.3/m0", "0.4/m0"];
    expect(firstReplies.every((key) => second[3]!.replies.has(key))).toBe(true);
    for (const key of [...firstReplies, "0.1/m1", "0.2/m1", "0.3/m1", "0.4/m1"]) expect(aggregator.replies.has(key), key).toBe(true);
    // Shared: the 4 solvers starting together leave after at most 2 commits (the first at once, the others
    // at the end of the turn), where each made its own before its request (4).
    expect(first[3]!.commits - first[0]!.commits).toBeLessThanOrEqual(1);
  });

  it("a batch that cannot be written fails alone (a warning): the others of its transaction are kept; a writer alone commits at once", async () => {
    const dir = tempDir();
    const handle = sqliteStore(dir);
    const runs = handle.runs;
    const event = (task_id: string, seq: number): RunEvent =>
      ({ type: "run.started", input: "x", seq, ts: "2026-01-01T00:00:00.000Z", task_id, agent_id: "a" }) as RunEvent;
    const reader = () => TraceStore.open(dir, { create: false });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on("warning", onWarning);
    const appendAll = vi.spyOn(TraceStore.prototype, "appendAll");
    try {
      // Writers open at once, as runs going on at once: their batches wait for the end of the turn, in one transaction.
      const [first, good, again, alsoGood] = [runs.writer(), runs.writer(), runs.writer(), runs.writer()];
      first.append([event("first", 1)]);
      await first.close();
      const stored: number[] = [];
      const told = runs.writer((seq) => stored.push(seq));
      good.append([event("good", 1)]);
      again.append([event("first", 1)]);
      alsoGood.append([event("also-good", 1)]);
      told.append([event("told", 1)]);
      await Promise.all([good.durable(), again.durable(), alsoGood.durable(), told.durable()]);
      // Tried together (4 batches), then each alone.
      expect(appendAll.mock.calls.map(([b]) => b.length)).toEqual([1, 4, 1, 1, 1, 1]);
      expect(stored).toEqual([1]);
      expect(warnings.join("\n")).toMatch(/UNIQUE/);
      expect(warnings).toHaveLength(1);
      await Promise.all([good.close(), again.close(), alsoGood.close(), told.close()]);
      // A writer alone: its batch is committed when durable() is asked, not a turn later.
      const solo = runs.writer();
      solo.append([event("solo", 1)]);
      const durable = solo.durable();
      const store = reader();
      expect(store.lastSeq("solo")).toBe(1);
      store.close();
      await durable;
      await solo.close();
    } finally {
      appendAll.mockRestore();
      process.off("warning", onWarning);
      await handle.close();
    }
    const store = reader();
    try {
      expect(
        store
          .listRuns()
          .map((r) => r.task_id)
          .sort(),
      ).toEqual(["also-good", "first", "good", "solo", "told"]);
    } finally {
      store.close();
    }
  });
});
