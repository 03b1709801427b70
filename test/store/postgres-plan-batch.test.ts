/**
 * Group commit on PostgreSQL (src/store/postgres/plan-store.ts): the Plan
 * Tool's updates that arrive together are applied in one transaction under
 * one lock of the plan's row, each answered as if it had run alone.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TaskStatusEvent } from "../../src/plan/plan-tool.js";
import { createStore } from "../../src/store/create.js";
import { SAFETY_WORKFLOW, wideWorkflow } from "../support/workflows.js";
import { startPostgres, type TestPostgres } from "../support/postgres.js";

let postgres: TestPostgres;
beforeAll(async () => {
  postgres = await startPostgres();
}, 120_000);
afterAll(() => postgres?.stop());

describe("PostgreSQL Plan Tool, updates arriving together", () => {
  it("commits 900 concurrent calls in batches of at most 256, none lost, refusals as if alone", async () => {
    const store = await createStore(await postgres.createDatabase("batch"));
    try {
      const events: TaskStatusEvent[] = [];
      const tool = store.planTool();
      const storage = tool.store;
      const batches: number[] = [];
      const apply = storage.updateTaskStatuses!.bind(storage);
      storage.updateTaskStatuses = (planId, updates) => {
        batches.push(updates.length);
        return apply(planId, updates);
      };
      expect((await tool.createPlan("p", wideWorkflow(300))).ok).toBe(true);
      const calls = Array.from({ length: 300 }, (_, i) => [
        tool.updateTask("p", `t${i + 1}`, "inprogress", undefined, { emit: (e) => events.push(e) }),
        tool.updateTask("p", `t${i + 1}`, "completed", `r${i + 1}`, { emit: (e) => events.push(e) }),
        tool.updateTask("p", `t${i + 1}`, "inprogress"), // completed → inprogress: refused, the others stand
      ]).flat();
      const outcomes = await Promise.all(calls);
      expect(outcomes.filter((_, i) => i % 3 !== 2).every((o) => o.ok)).toBe(true);
      const refused = outcomes.filter((_, i) => i % 3 === 2);
      // The last comes after the plan completed, which takes no more updates.
      expect(refused.map((o, i) => (o.ok ? "accepted" : o.error.startsWith(`task t${i + 1}: `) ? "refused" : o.error))).toEqual([
        ...Array.from({ length: 299 }, () => "refused"),
        "plan p is completed and takes no more updates",
      ]);
      expect(batches).toEqual([256, 256, 256, 132]);
      const plan = await tool.get_plan_structure("p");
      expect(plan).toMatchObject({ status: "completed", revision: 600 });
      expect(plan?.steps[0]?.tasks.every((t, i) => t.status === "completed" && t.result_summary === `r${i + 1}`)).toBe(true);
      expect(events).toHaveLength(600);
      expect(events.filter((e) => e.plan_status === "completed")).toHaveLength(1);
    } finally {
      await store.close();
    }
  }, 60_000);

  it("a batch the database refuses runs again one update at a time: only the update at fault fails", async () => {
    const store = await createStore(await postgres.createDatabase("poison"));
    try {
      const tool = store.planTool();
      expect((await tool.createPlan("p", wideWorkflow(5))).ok).toBe(true);
      // PostgreSQL text takes no NUL byte; the tool's schema lets any string through.
      const results = await Promise.allSettled(
        [1, 2, 3, 4, 5].map((i) => tool.update_task_status("p", `t${i}`, "inprogress", i === 3 ? "bad \u0000 byte" : `r${i}`)),
      );
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled"]);
      const plan = await tool.get_plan_structure("p");
      expect(plan?.revision).toBe(4);
      expect(plan?.steps[0]?.tasks.map((t) => `${t.task_id} ${t.status} ${t.result_summary}`)).toEqual([
        "t1 inprogress r1",
        "t2 inprogress r2",
        "t3 ready null",
        "t4 inprogress r4",
        "t5 inprogress r5",
      ]);
    } finally {
      await store.close();
    }
  }, 60_000);

  it("replaces the assignee index of a database an earlier release made, which held the status; no schema version is added", async () => {
    const url = await postgres.createDatabase("assignee");
    const indexDef = async (client: pg.Client) =>
      (await client.query<{ indexdef: string }>("SELECT indexdef FROM pg_indexes WHERE schemaname = 'runtime' AND indexname = 'plan_tasks_by_assignee'"))
        .rows[0]?.indexdef;
    const first = await createStore(url);
    await first.planTool().create_plan_from_structure("p", SAFETY_WORKFLOW);
    await first.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      expect(await indexDef(client)).toMatch(/\(plan_id, assignee\)$/);
      const version = (await client.query("SELECT MAX(version) AS v FROM runtime.migrations")).rows[0].v;
      // The index as migration 1 of earlier releases left it.
      await client.query(`DROP INDEX runtime.plan_tasks_by_assignee;
        CREATE INDEX plan_tasks_by_assignee ON runtime.plan_tasks (plan_id, assignee, status);`);
      const store = await createStore(url);
      try {
        const tool = store.planTool();
        expect(await tool.update_task_status("p", "t1", "inprogress")).toBe(true);
        expect((await tool.get_tasks_for_role("p", "analyst")).map((t) => t.task_id)).toEqual(["t2"]);
        expect((await tool.get_tasks_for_role("p", "analyst", "inprogress")).map((t) => t.task_id)).toEqual(["t1"]);
      } finally {
        await store.close();
      }
      expect(await indexDef(client)).toMatch(/\(plan_id, assignee\)$/);
      expect((await client.query("SELECT MAX(version) AS v FROM runtime.migrations")).rows[0].v).toBe(version);
    } finally {
      await client.end();
    }
  }, 60_000);
});
