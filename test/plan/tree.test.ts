import { describe, expect, it } from "vitest";
import { openPlanFile } from "../../src/store/sqlite/store.js";
import { describeOpenTasks, renderPlanList, renderPlanTree } from "../../src/plan/tree.js";
import { SAFETY_WORKFLOW } from "../support/workflows.js";

describe("plan tree", () => {
  it("draws steps and tasks with statuses, optional marks and indented multi-line summaries", async () => {
    const tool = openPlanFile(":memory:", { now: () => new Date("2025-01-02T03:04:05.000Z") });
    await tool.create_plan_from_structure("p1", SAFETY_WORKFLOW);
    await tool.update_task_status("p1", "t1", "inprogress");
    await tool.update_task_status("p1", "t1", "completed", "line one\nline two");
    await tool.update_task_status("p1", "t4", "skipped", "not needed");
    const plan = await tool.get_plan_structure("p1");
    if (!plan) throw new Error("no plan");
    expect(renderPlanTree(plan)).toBe(
      [
        'plan p1 "Safety review" (SAFE_SOP_v9) [running]',
        "├─ step s1 Analyze [running]",
        "│  ├─ [completed] t1 Gather facts → analyst",
        "│  │     ↳ line one",
        "│  │       line two",
        "│  └─ [ready] t2 List hazards → analyst",
        "└─ step s2 Decide [running]",
        "   ├─ [ready] t3 Assess risk → reviewer",
        "   └─ [skipped] t4 Extra notes → reviewer (optional)",
        "         ↳ not needed",
      ].join("\n"),
    );
    expect(describeOpenTasks(plan)).toBe("t2 (ready), t3 (ready)");
    expect(renderPlanList(await tool.list_plans())).toBe("p1\trunning\t2/4 done\tSAFE_SOP_v9\t2025-01-02T03:04:05.000Z\t-\tSafety review");
    await tool.close();
  });
});
