/**
 * The plans port (src/store/plans.ts) on every adapter: a plan inserted
 * once, its tasks read in workflow order and filtered, each status change
 * checked and applied with the plan's status re-derived, updates queued
 * together applied in order as if alone, plans listed and deleted
 * (docs/plan-tool.md). The same answers from SQLite and PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import { parseStructure } from "../../src/plan/structure.js";
import type { PlanTemplate } from "../../src/plan/types.js";
import type { PlanStorage } from "../../src/store/plans.js";
import { SAFETY_WORKFLOW, wideWorkflow } from "../support/workflows.js";
import { adapters } from "../support/store-adapters.js";

function template(structure: unknown): PlanTemplate {
  const parsed = parseStructure(structure);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.template;
}

const outcome = (o: { ok: true; change: { plan_status: string } } | { ok: false; error: string }) => (o.ok ? o.change.plan_status : o.error);

describe.each(adapters())("plans on $name", (adapter) => {
  const open = async (): Promise<PlanStorage> => (await adapter.open()).planTool().store;

  it("inserts a plan once, every task ready, and reads its tasks in workflow order, filtered by status and assignee", async () => {
    const plans = await open();
    expect(await plans.insertPlan("p", template(SAFETY_WORKFLOW), "task-run")).toBe(true);
    expect(await plans.insertPlan("p", template(wideWorkflow(1)))).toBe(false);
    expect((await plans.listTasks("p"))?.map((t) => `${t.task_id} ${t.step_id} ${t.assignee} ${t.status} ${t.optional}`)).toEqual([
      "t1 s1 analyst ready false",
      "t2 s1 analyst ready false",
      "t3 s2 reviewer ready false",
      "t4 s2 reviewer ready true",
    ]);
    expect(await plans.getTask("p", "t1")).toMatchObject({ task_id: "t1", name: "Gather facts", description: "Collect the facts.", result_summary: null });
    expect(await plans.getTask("p", "nope")).toBeNull();
    expect(await plans.getTask("nope", "t1")).toBeNull();
    expect(await plans.listTasks("nope")).toBeNull();
    expect(outcome(await plans.updateTaskStatus("p", "t1", "inprogress", "looking"))).toBe("running");
    expect((await plans.listTasks("p", { status: "ready" }))?.map((t) => t.task_id)).toEqual(["t2", "t3", "t4"]);
    expect((await plans.listTasks("p", { assignee: "reviewer" }))?.map((t) => t.task_id)).toEqual(["t3", "t4"]);
    expect((await plans.listTasks("p", { assignee: "analyst", status: "inprogress" }))?.map((t) => t.task_id)).toEqual(["t1"]);
    expect(await plans.listTasks("p", { assignee: "nobody" })).toEqual([]);
  });

  it("checks each change, keeps a summary unless a new one is given, and derives the plan's status; a completed plan takes no more", async () => {
    const plans = await open();
    await plans.insertPlan("p", template(SAFETY_WORKFLOW));
    expect(outcome(await plans.updateTaskStatus("p", "t1", "completed"))).toBe(
      "task t1: invalid transition ready → completed; from ready a task may go to inprogress or skipped",
    );
    expect(outcome(await plans.updateTaskStatus("p", "nope", "inprogress"))).toBe("unknown task nope in plan p");
    expect(outcome(await plans.updateTaskStatus("q", "t1", "inprogress"))).toBe("unknown plan q");
    expect(outcome(await plans.updateTaskStatus("p", "t1", "inprogress", "started"))).toBe("running");
    expect(outcome(await plans.updateTaskStatus("p", "t1", "completed"))).toBe("running");
    expect((await plans.getTask("p", "t1"))?.result_summary).toBe("started");
    for (const [task, status] of [
      ["t2", "inprogress"],
      ["t2", "error"],
      ["t3", "skipped"],
      ["t4", "skipped"],
    ] as const)
      await plans.updateTaskStatus("p", task, status);
    // A required task in error settles the plan in error; it may still be retried.
    expect(await plans.getPlanStatus("p")).toBe("error");
    expect(outcome(await plans.updateTaskStatus("p", "t2", "inprogress"))).toBe("running");
    expect(outcome(await plans.updateTaskStatus("p", "t2", "completed", "fixed"))).toBe("completed");
    expect(outcome(await plans.updateTaskStatus("p", "t2", "inprogress"))).toBe("plan p is completed and takes no more updates");
    expect(await plans.getPlanStatus("nope")).toBeNull();
    const plan = await plans.getPlan("p");
    expect(plan).toMatchObject({ plan_id: "p", name: "Safety review", status: "completed", revision: 8, run_task_id: null });
    expect(plan?.steps.map((s) => `${s.step_id} ${s.status} ${s.tasks.map((t) => `${t.task_id}:${t.status}:${t.result_summary}`).join(",")}`)).toEqual([
      "s1 completed t1:completed:started,t2:completed:fixed",
      "s2 completed t3:skipped:null,t4:skipped:null",
    ]);
    expect(await plans.getPlan("nope")).toBeNull();
  });

  it("updates queued together: in order, each answered as if alone, the same task twice seeing the first", async () => {
    const plans = await open();
    await plans.insertPlan("p", template(wideWorkflow(2)));
    const updates = [
      { taskId: "t1", status: "inprogress" as const, resultSummary: "started" },
      { taskId: "t1", status: "completed" as const },
      { taskId: "t1", status: "inprogress" as const },
      { taskId: "nope", status: "inprogress" as const },
      { taskId: "t2", status: "skipped" as const },
    ];
    // Without a batch method the Plan Tool applies them one by one: the same answers.
    const outcomes = plans.updateTaskStatuses
      ? await plans.updateTaskStatuses("p", updates)
      : await Promise.all(updates.map((u) => plans.updateTaskStatus("p", u.taskId, u.status, u.resultSummary)));
    expect(outcomes.map(outcome)).toEqual(["running", "running", expect.stringMatching(/^task t1: /), "unknown task nope in plan p", "completed"]);
    const plan = await plans.getPlan("p");
    expect(plan).toMatchObject({ status: "completed", revision: 3 });
    expect(plan?.steps[0]?.tasks.map((t) => `${t.task_id} ${t.status} ${t.result_summary}`)).toEqual(["t1 completed started", "t2 skipped null"]);
  });

  it("lists plans newest first with their counts, and deletes a plan with its steps and tasks", async () => {
    const plans = await open();
    await plans.insertPlan("x-older", template(SAFETY_WORKFLOW), "task-1");
    // A later creation time (they are kept to the millisecond).
    await new Promise((r) => setTimeout(r, 5));
    await plans.insertPlan("y-newer", template(wideWorkflow(3)));
    await new Promise((r) => setTimeout(r, 5));
    await plans.updateTaskStatus("x-older", "t3", "skipped");
    await plans.updateTaskStatus("x-older", "t1", "inprogress");
    const listed = await plans.listPlans();
    expect(listed.map((p) => ({ id: p.plan_id, status: p.status, total: Number(p.tasks_total), done: Number(p.tasks_done), run: p.run_task_id }))).toEqual([
      { id: "y-newer", status: "running", total: 3, done: 0, run: null },
      { id: "x-older", status: "running", total: 4, done: 1, run: "task-1" },
    ]);
    expect(await plans.deletePlan("x-older")).toBe(true);
    expect(await plans.deletePlan("x-older")).toBe(false);
    expect(await plans.getPlan("x-older")).toBeNull();
    expect(await plans.listTasks("x-older")).toBeNull();
    expect((await plans.listPlans()).map((p) => p.plan_id)).toEqual(["y-newer"]);
    // Its id is free again.
    expect(await plans.insertPlan("x-older", template(wideWorkflow(1)))).toBe(true);
  });
});
