import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ROOT } from "../support/cli.js";
import { newPlanId, type PlanTool, type TaskStatusEvent } from "../../src/plan/plan-tool.js";
import { openPlanFile } from "../../src/store/sqlite/store.js";
import { canTransition } from "../../src/plan/transitions.js";
import { TASK_STATUSES, type TaskStatus } from "../../src/plan/types.js";
import { SAFETY_WORKFLOW } from "../support/workflows.js";

let tool: PlanTool;
let events: TaskStatusEvent[];

beforeEach(() => {
  events = [];
  tool = openPlanFile(":memory:", { emit: (e) => events.push(e), now: () => new Date("2025-01-02T03:04:05.000Z") });
});
afterEach(() => tool.close());

describe("create_plan_from_structure", () => {
  it("creates a plan with every task ready and emits one event per task", async () => {
    expect(await tool.create_plan_from_structure("p1", SAFETY_WORKFLOW)).toBe(true);
    const plan = await tool.get_plan_structure("p1");
    expect(plan?.status).toBe("running");
    expect(plan?.workflow_template_source).toBe("SAFE_SOP_v9");
    expect(plan?.steps.map((s) => s.step_id)).toEqual(["s1", "s2"]);
    expect(plan?.steps.flatMap((s) => s.tasks.map((t) => t.status))).toEqual(["ready", "ready", "ready", "ready"]);
    expect(events.map((e) => e.plan_task_id)).toEqual(["t1", "t2", "t3", "t4"]);
    expect(events.every((e) => e.status === "ready" && e.plan_status === "running" && e.plan_id === "p1")).toBe(true);
    expect(plan?.run_task_id).toBeNull();
  });

  it("records the run that created a plan, when one did", async () => {
    expect((await tool.createPlan("p2", SAFETY_WORKFLOW, { run_task_id: "run-42" })).ok).toBe(true);
    expect((await tool.get_plan_structure("p2"))?.run_task_id).toBe("run-42");
    expect(await tool.list_plans()).toEqual([expect.objectContaining({ plan_id: "p2", run_task_id: "run-42" })]);
  });

  it("refuses an existing plan_id and leaves the first plan untouched", async () => {
    expect(await tool.create_plan_from_structure("p1", SAFETY_WORKFLOW)).toBe(true);
    await tool.update_task_status("p1", "t1", "inprogress");
    expect(
      await tool.create_plan_from_structure("p1", {
        name: "Other",
        steps: [{ step_id: "x", name: "X", tasks: [{ task_id: "x1", name: "X", assignee: "a" }] }],
      }),
    ).toBe(false);
    expect((await tool.get_task("p1", "t1"))?.status).toBe("inprogress");
    expect(await tool.get_task("p1", "x1")).toBeNull();
  });

  it.each([
    ["not an object", "steps"],
    ["no steps", { name: "n" }],
    ["empty steps", { name: "n", steps: [] }],
    ["a step without tasks", { name: "n", steps: [{ step_id: "s", name: "S", tasks: [] }] }],
    ["a task without assignee", { name: "n", steps: [{ step_id: "s", name: "S", tasks: [{ task_id: "t", name: "T" }] }] }],
    ["an unknown key", { name: "n", steps: [{ step_id: "s", name: "S", tasks: [{ task_id: "t", name: "T", assignee: "a", status: "completed" }] }] }],
    [
      "duplicate task ids",
      {
        name: "n",
        steps: [
          { step_id: "s", name: "S", tasks: [{ task_id: "t", name: "T", assignee: "a" }] },
          { step_id: "s2", name: "S", tasks: [{ task_id: "t", name: "T", assignee: "a" }] },
        ],
      },
    ],
    [
      "duplicate step ids",
      {
        name: "n",
        steps: [
          { step_id: "s", name: "S", tasks: [{ task_id: "t", name: "T", assignee: "a" }] },
          { step_id: "s", name: "S", tasks: [{ task_id: "u", name: "T", assignee: "a" }] },
        ],
      },
    ],
  ])("refuses invalid structure data: %s", async (_label, data) => {
    expect(await tool.create_plan_from_structure("bad", data)).toBe(false);
    expect(await tool.get_plan_status("bad")).toBeNull();
    expect(events).toEqual([]);
  });

  it("accepts every step, task and workflow id a team file accepts (they may start with '_')", async () => {
    const schema = JSON.parse(readFileSync(join(ROOT, "schemas/team.schema.json"), "utf8")) as { $defs: { name: { pattern: string } } };
    const teamName = new RegExp(schema.$defs.name.pattern);
    const ids = ["_prep", "_", "a", "A-b_c", "_9"];
    expect(ids.every((id) => teamName.test(id))).toBe(true);
    const structure = {
      id: "_private_sop",
      name: "Underscores",
      steps: ids.map((id, i) => ({ step_id: `${id}`, name: `S${i}`, tasks: [{ task_id: `${id}_t`, name: "T", assignee: "_agent" }] })),
    };
    const outcome = await tool.createPlan(newPlanId("_private_sop"), structure);
    expect(outcome).toEqual({ ok: true, plan_status: "running" });
    expect(await tool.create_plan_from_structure("_p", structure)).toBe(true);
    expect(await tool.update_task_status("_p", "_prep_t", "inprogress")).toBe(true);
  });

  it("refuses an invalid plan_id", async () => {
    expect(await tool.create_plan_from_structure("has space", SAFETY_WORKFLOW)).toBe(false);
    expect(await tool.create_plan_from_structure("", SAFETY_WORKFLOW)).toBe(false);
    const outcome = await tool.createPlan("../x", SAFETY_WORKFLOW);
    expect(outcome).toEqual({ ok: false, error: 'invalid plan_id "../x"' });
  });
});

describe("get_task", () => {
  it("returns the task or null", async () => {
    await tool.create_plan_from_structure("p1", SAFETY_WORKFLOW);
    expect(await tool.get_task("p1", "t1")).toEqual({
      task_id: "t1",
      step_id: "s1",
      name: "Gather facts",
      assignee: "analyst",
      description: "Collect the facts.",
      optional: false,
      status: "ready",
      result_summary: null,
      updated_at: "2025-01-02T03:04:05.000Z",
    });
    expect((await tool.get_task("p1", "t4"))?.optional).toBe(true);
    expect(await tool.get_task("p1", "nope")).toBeNull();
    expect(await tool.get_task("nope", "t1")).toBeNull();
  });
});

describe("update_task_status", () => {
  beforeEach(async () => {
    await tool.create_plan_from_structure("p1", SAFETY_WORKFLOW);
    events.length = 0;
  });

  it("applies a transition, records the summary and emits task.status", async () => {
    expect(await tool.update_task_status("p1", "t1", "inprogress")).toBe(true);
    expect(await tool.update_task_status("p1", "t1", "completed", "3 facts")).toBe(true);
    expect(await tool.get_task("p1", "t1")).toMatchObject({ status: "completed", result_summary: "3 facts" });
    expect(events).toEqual([
      { type: "task.status", plan_id: "p1", plan_task_id: "t1", status: "inprogress", plan_status: "running" },
      { type: "task.status", plan_id: "p1", plan_task_id: "t1", status: "completed", plan_status: "running" },
    ]);
  });

  it("keeps the previous summary when none is given", async () => {
    await tool.update_task_status("p1", "t1", "inprogress");
    await tool.update_task_status("p1", "t1", "error", "timeout");
    await tool.update_task_status("p1", "t1", "inprogress");
    expect((await tool.get_task("p1", "t1"))?.result_summary).toBe("timeout");
  });

  it("returns false for unknown plans, tasks and statuses without emitting", async () => {
    expect(await tool.update_task_status("nope", "t1", "inprogress")).toBe(false);
    expect(await tool.update_task_status("p1", "nope", "inprogress")).toBe(false);
    expect(await tool.update_task_status("p1", "t1", "done" as TaskStatus)).toBe(false);
    expect(events).toEqual([]);
  });

  it("checks every transition from every status against the table", async () => {
    // Walk each task to each status, then try every target; only the table's pairs pass.
    const pathTo: Record<TaskStatus, TaskStatus[]> = {
      ready: [],
      inprogress: ["inprogress"],
      completed: ["inprogress", "completed"],
      error: ["inprogress", "error"],
      skipped: ["skipped"],
    };
    let n = 0;
    for (const from of TASK_STATUSES) {
      for (const to of TASK_STATUSES) {
        const id = `m${n++}`;
        await tool.create_plan_from_structure(id, {
          name: "m",
          steps: [
            {
              step_id: "s",
              name: "S",
              tasks: [
                { task_id: "a", name: "A", assignee: "x" },
                { task_id: "b", name: "B", assignee: "x" },
              ],
            },
          ],
        });
        for (const s of pathTo[from]) expect(await tool.update_task_status(id, "a", s)).toBe(true);
        expect((await tool.get_task(id, "a"))?.status).toBe(from);
        const outcome = await tool.updateTask(id, "a", to);
        expect(outcome.ok, `${from} → ${to}`).toBe(canTransition(from, to));
        expect((await tool.get_task(id, "a"))?.status).toBe(outcome.ok ? to : from);
        if (!outcome.ok) expect(outcome.error).toMatch(/invalid transition/);
      }
    }
  });

  it("derives the plan status: optional error tolerated, required error fails, retry revives", async () => {
    const run = async (task: string, ...path: TaskStatus[]) => {
      for (const s of path) expect(await tool.update_task_status("p1", task, s), `${task} → ${s}`).toBe(true);
    };
    await run("t1", "inprogress", "completed");
    await run("t2", "skipped");
    await run("t3", "inprogress", "error");
    expect(await tool.get_plan_status("p1")).toBe("running");
    await run("t4", "inprogress", "error");
    expect(await tool.get_plan_status("p1")).toBe("error");
    expect(events.at(-1)?.plan_status).toBe("error");
    await run("t3", "inprogress");
    expect(await tool.get_plan_status("p1")).toBe("running");
    await run("t3", "completed");
    expect(await tool.get_plan_status("p1")).toBe("completed");
    const plan = await tool.get_plan_structure("p1");
    expect(plan?.steps.map((s) => s.status)).toEqual(["completed", "completed"]);
    expect(plan?.revision).toBe(9);
  });

  it("closes a completed plan: even an optional task in error takes no retry", async () => {
    for (const t of ["t1", "t2", "t3"]) {
      await tool.update_task_status("p1", t, "inprogress");
      await tool.update_task_status("p1", t, "completed");
    }
    await tool.update_task_status("p1", "t4", "inprogress");
    await tool.update_task_status("p1", "t4", "error");
    expect(await tool.get_plan_status("p1")).toBe("completed");
    const outcome = await tool.updateTask("p1", "t4", "inprogress");
    expect(outcome).toEqual({ ok: false, error: "plan p1 is completed and takes no more updates" });
  });

  it("sends events to a per-call emitter instead of the default one", async () => {
    const mine: TaskStatusEvent[] = [];
    await tool.update_task_status("p1", "t1", "inprogress", undefined, { emit: (e) => mine.push(e) });
    expect(mine).toHaveLength(1);
    expect(events).toHaveLength(0);
  });
});

describe("queries", () => {
  beforeEach(async () => {
    await tool.create_plan_from_structure("p1", SAFETY_WORKFLOW);
  });

  it("get_ready_tasks lists ready tasks in workflow order", async () => {
    expect((await tool.get_ready_tasks("p1")).map((t) => t.task_id)).toEqual(["t1", "t2", "t3", "t4"]);
    await tool.update_task_status("p1", "t2", "inprogress");
    expect((await tool.get_ready_tasks("p1")).map((t) => t.task_id)).toEqual(["t1", "t3", "t4"]);
    expect(await tool.get_ready_tasks("nope")).toEqual([]);
  });

  it("get_tasks_for_role filters by assignee and status (default ready)", async () => {
    expect((await tool.get_tasks_for_role("p1", "analyst")).map((t) => t.task_id)).toEqual(["t1", "t2"]);
    await tool.update_task_status("p1", "t1", "inprogress");
    expect((await tool.get_tasks_for_role("p1", "analyst")).map((t) => t.task_id)).toEqual(["t2"]);
    expect((await tool.get_tasks_for_role("p1", "analyst", "inprogress")).map((t) => t.task_id)).toEqual(["t1"]);
    expect(await tool.get_tasks_for_role("p1", "nobody")).toEqual([]);
    expect(await tool.get_tasks_for_role("nope", "analyst")).toEqual([]);
  });

  it("get_plan_status and get_plan_structure return null for unknown plans", async () => {
    expect(await tool.get_plan_status("p1")).toBe("running");
    expect(await tool.get_plan_status("nope")).toBeNull();
    expect(await tool.get_plan_structure("nope")).toBeNull();
  });

  it("delete_plan removes the plan and its tasks once", async () => {
    expect(await tool.delete_plan("p1")).toBe(true);
    expect(await tool.get_plan_structure("p1")).toBeNull();
    expect(await tool.get_task("p1", "t1")).toBeNull();
    expect(await tool.delete_plan("p1")).toBe(false);
    // The id is free again.
    expect(await tool.create_plan_from_structure("p1", SAFETY_WORKFLOW)).toBe(true);
  });

  it("list_plans summarises progress", async () => {
    await tool.update_task_status("p1", "t2", "skipped");
    expect(await tool.list_plans()).toEqual([
      expect.objectContaining({ plan_id: "p1", status: "running", tasks_total: 4, tasks_done: 1, name: "Safety review" }),
    ]);
  });
});

describe("newPlanId", () => {
  it("is the workflow key, a timestamp and a random part, and never repeats", () => {
    const at = new Date("2025-01-02T03:04:05.678Z");
    expect(newPlanId("SAFE SOP/v9", at, () => "0123abcd-4567-89ef-0000-000000000000")).toBe("SAFE_SOP_v9-20250102T030405Z-0123abcd4567");
    const ids = new Set(Array.from({ length: 10_000 }, () => newPlanId("w", at)));
    expect(ids.size).toBe(10_000);
  });
});
