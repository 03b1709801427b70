/**
 * Every example team gives the same answer and the same events on
 * PostgreSQL as on the embedded SQLite store (docs/scale-out.md), and what
 * PostgreSQL holds afterwards (events, journal, run summary, plans, todo
 * lists) is what SQLite holds.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import type { RunEvent } from "../../src/events/types.js";
import { createStore } from "../../src/store/create.js";
import type { Store } from "../../src/store/store.js";
import { ROOT, runCli } from "../support/cli.js";
import { usePostgres } from "../support/postgres.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const CIRCLE = "What are the area and circumference of a circle with radius 5 meters?";
const EXAMPLES: Record<string, string> = {
  "circle-react": CIRCLE,
  "circle-plan": CIRCLE,
  "research-flow": CIRCLE,
  "plan-solver": "For a circle of radius 5 m, give its diameter, circumference and area, and the volume of a sphere of the same radius.",
  "safety-sop": "Review: raise the boiler pressure limit from 8 to 10 bar",
  "unit-convert": "How many kilometres is 26.2 miles?",
  "mcp-files": "What are the area and circumference of the circle in the data folder?",
};

const postgres = usePostgres();

/** A new plan's id: its workflow, the time and a random part. */
const PLAN_ID = /-\d{8}T\d{6}Z-[0-9a-f]{12}/g;
const answerOf = (r: { answer?: string }) => r.answer?.replace(PLAN_ID, "-PLAN");

/** An event without what differs between two runs of the same team: ids, times, durations. */
function shape(e: RunEvent): string {
  return JSON.stringify(e, (key, value: unknown) =>
    [
      "seq",
      "ts",
      "task_id",
      "step_id",
      "parent_step_id",
      "trace_id",
      "session_id",
      "duration_ms",
      "plan_id",
      "call_id",
      "approval_id",
      "latency_ms",
      "elapsed_ms",
      "id",
    ].includes(key)
      ? undefined
      : typeof value === "string"
        ? value.replace(PLAN_ID, "-PLAN")
        : value,
  );
}

async function runOn(store: Store, name: string) {
  const team = await loadTeam(join(ROOT, "teams", `${name}.yaml`));
  const run = runTeam(team, { input: EXAMPLES[name] ?? "", store, traceDir: mkdtempSync(join(tmpdir(), "pg-example-")) });
  const live: RunEvent[] = [];
  for await (const e of run.events) live.push(e);
  const result = await run.result;
  return {
    result,
    live,
    stored: await store.runs.eventsOfTask(run.task_id),
    journal: await store.runs.journalOf(run.task_id),
    summary: await store.runs.run(run.task_id),
  };
}

describe("the example teams on PostgreSQL", () => {
  for (const name of Object.keys(EXAMPLES)) {
    it(`${name}: the same answer, events, journal and summary as on SQLite`, async () => {
      const sqlite = await createStore(mkdtempSync(join(tmpdir(), "sqlite-example-")));
      const pg = await createStore(await postgres.createDatabase(name));
      try {
        expect(pg.kind).toBe("postgres");
        const a = await runOn(sqlite, name);
        const b = await runOn(pg, name);
        expect(b.result.result_type).toBe("answer");
        expect(answerOf(b.result)).toBe(answerOf(a.result));
        expect(b.result.usage).toEqual(a.result.usage);
        // Parallel solvers may interleave differently: the same events, as a multiset.
        expect(b.live.map(shape).sort()).toEqual(a.live.map(shape).sort());
        // PostgreSQL holds every event as it was emitted, in order, and the same journal as SQLite.
        expect(b.stored).toEqual(b.live);
        expect(a.stored).toEqual(a.live);
        expect(b.journal.map((j) => `${j.key} ${j.kind}`).sort()).toEqual(a.journal.map((j) => `${j.key} ${j.kind}`).sort());
        expect(b.summary).toMatchObject({ result_type: "answer", agent_id: a.summary?.agent_id, input: EXAMPLES[name] });
        expect(await pg.runs.listRuns()).toHaveLength(1);
      } finally {
        await sqlite.close();
        await pg.close();
      }
    });
  }

  it("keeps safety-sop's plan in PostgreSQL, completed, and circle-plan's todo list for the session", async () => {
    const store = await createStore(await postgres.createDatabase("kept"));
    try {
      await runOn(store, "safety-sop");
      const plans = await store.planTool().list_plans();
      expect(plans).toHaveLength(1);
      expect(plans[0]).toMatchObject({ status: "completed" });
      expect(plans[0]?.tasks_done).toBe(plans[0]?.tasks_total);

      const team = await loadTeam(join(ROOT, "teams", "circle-plan.yaml"));
      const run = runTeam(team, { input: CIRCLE, store, sessionId: "chat-1", traceDir: mkdtempSync(join(tmpdir(), "pg-example-")) });
      expect((await run.result).result_type).toBe("answer");
      const list = await store.todoSessions().load("chat-1");
      expect(list?.items.length).toBeGreaterThan(0);
      expect(list?.items.every((i) => i.status === "completed")).toBe(true);
    } finally {
      await store.close();
    }
  });

  it("runtime exec --store and runtime trace --store: a run kept in PostgreSQL, printed as a tree", async () => {
    const url = await postgres.createDatabase("cli");
    const exec = await runCli(["exec", "teams/circle-react.yaml", CIRCLE, "--store", url, "--no-progress"]);
    expect(exec.code).toBe(0);
    expect(exec.stdout).toContain("78.54");
    const list = await runCli(["trace", "--store", url, "--json"]);
    const [run] = list.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { task_id: string; result_type: string });
    expect(run?.result_type).toBe("answer");
    const tree = await runCli(["trace", run!.task_id.slice(0, 8), "--store", url]);
    expect(tree.code).toBe(0);
    expect(tree.stdout).toMatch(/calculator/);
    const missing = await runCli(["trace", "nope", "--store", url]);
    expect(missing.code).toBe(1);
    const bad = await runCli(["trace", "--store", "mysql://x"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--store must be a postgres:// URL");
  });

  it("a store that cannot be reached is a one-line error naming it without its password", async () => {
    const url = `postgres://runtime:s3cret-pw@127.0.0.1:${postgres.port + 1}/none`;
    const err = await createStore(url).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/cannot open the store \(postgres:\/\/runtime:\*\*\*@127\.0\.0\.1/);
    expect(err?.message).not.toContain("s3cret-pw");
    expect(err?.message.split("\n")).toHaveLength(1);
  });
});
