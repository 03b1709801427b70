import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RunEvent, RunEventBody, EventScope } from "../../src/events/types.js";
import type { PlanTool } from "../../src/plan/plan-tool.js";
import { openPlanFile } from "../../src/store/sqlite/store.js";
import { createPlanTools, PLAN_TOOL_NAMES } from "../../src/plan/tools.js";
import { createToolBox } from "../../src/tools/toolbox.js";
import type { ToolOutcome } from "../../src/tools/types.js";
import { SAFETY_WORKFLOW } from "../support/workflows.js";

let planTool: PlanTool;
let events: (RunEventBody & EventScope)[];

beforeEach(async () => {
  planTool = openPlanFile(":memory:");
  events = [];
  await planTool.create_plan_from_structure("p1", SAFETY_WORKFLOW);
});
afterEach(() => planTool.close());

/** A real ToolBox over the plan tools, as an agent step with this scope gets it. */
function box(scope: EventScope = { agent_id: "strategist", step_id: "step-2", parent_step_id: "step-1" }, allow: string[] = [...PLAN_TOOL_NAMES]) {
  const toolbox = createToolBox({
    tools: createPlanTools(planTool),
    allow,
    scope,
    emit: (body, s) => events.push({ ...body, ...s }),
    signal: new AbortController().signal,
  });
  let n = 0;
  return {
    toolbox,
    call: async (name: string, args: unknown): Promise<ToolOutcome> =>
      (await toolbox.run([{ id: `c${++n}`, name, arguments: typeof args === "string" ? args : JSON.stringify(args) }]))[0] as ToolOutcome,
  };
}

const statusEvents = () => events.filter((e): e is Extract<RunEvent, { type: "task.status" }> => e.type === "task.status");

describe("plan tools", () => {
  it("are the spec's eight methods, each with an object schema that refuses unknown keys", () => {
    const tools = createPlanTools(planTool);
    expect(tools.map((t) => t.name)).toEqual([...PLAN_TOOL_NAMES]);
    expect(PLAN_TOOL_NAMES).toHaveLength(8);
    for (const tool of tools) {
      expect(tool.parameters).toMatchObject({ type: "object", additionalProperties: false });
      expect(tool.timeout_ms).toBeGreaterThan(0);
      expect(tool.max_output_bytes).toBeGreaterThan(0);
    }
  });

  it("are offered only as far as the allow-list names them", async () => {
    const { toolbox, call } = box(undefined, ["get_task", "get_plan_status"]);
    expect(toolbox.specs.map((s) => s.name)).toEqual(["get_task", "get_plan_status"]);
    const refused = await call("update_task_status", { plan_id: "p1", task_id: "t1", status: "inprogress" });
    expect(refused.ok).toBe(false);
    expect((await planTool.get_task("p1", "t1"))?.status).toBe("ready");
  });

  it.each([
    ["update_task_status", { plan_id: "p1", task_id: "t1", status: "done" }],
    ["update_task_status", { plan_id: "p1", status: "inprogress" }],
    ["update_task_status", { plan_id: "p1", task_id: "t1", status: "inprogress", extra: 1 }],
    ["update_task_status", { plan_id: "p1", task_id: "t1", status: "inprogress", result_summary: 7 }],
    ["get_tasks_for_role", { plan_id: "p1" }],
    ["get_task", { plan_id: "has space", task_id: "t1" }],
    ["create_plan_from_structure", { plan_id: "p2", structure_data: { name: "x", steps: [] } }],
    ["create_plan_from_structure", { structure_data: SAFETY_WORKFLOW }],
    ["delete_plan", {}],
    ["get_plan_status", "{not json"],
  ])("%s refuses bad arguments %j before running", async (name, args) => {
    const { call } = box();
    const outcome = await call(name, args);
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toBeTruthy();
    expect((await planTool.get_task("p1", "t1"))?.status).toBe("ready");
    expect(await planTool.get_plan_status("p2")).toBeNull();
    expect(statusEvents()).toEqual([]);
  });

  it("run the methods and emit task.status from the calling agent's scope", async () => {
    const { call } = box({ agent_id: "strategist", step_id: "step-9" });
    expect((await call("update_task_status", { plan_id: "p1", task_id: "t1", status: "inprogress" })).result).toEqual({ ok: true, plan_status: "running" });
    const refused = await call("update_task_status", { plan_id: "p1", task_id: "t1", status: "skipped" });
    expect(refused.result).toEqual({
      ok: false,
      error: "task t1: invalid transition inprogress → skipped; from inprogress a task may go to completed or error or ready",
    });
    expect((await call("get_task", { plan_id: "p1", task_id: "t1" })).result).toMatchObject({ task_id: "t1", status: "inprogress" });
    expect((await call("get_task", { plan_id: "p1", task_id: "zz" })).result).toBeNull();
    expect((await call("get_ready_tasks", { plan_id: "p1" })).result).toHaveLength(3);
    expect((await call("get_tasks_for_role", { plan_id: "p1", role_id: "analyst", status: "inprogress" })).result).toMatchObject([{ task_id: "t1" }]);
    expect((await call("get_plan_status", { plan_id: "p1" })).result).toBe("running");
    expect((await call("get_plan_structure", { plan_id: "p1" })).result).toMatchObject({ plan_id: "p1", steps: [{ step_id: "s1" }, { step_id: "s2" }] });
    expect((await call("create_plan_from_structure", { plan_id: "p1", structure_data: SAFETY_WORKFLOW })).result).toEqual({
      ok: false,
      error: "plan p1 already exists",
    });
    expect((await call("create_plan_from_structure", { plan_id: "p2", structure_data: SAFETY_WORKFLOW })).result).toEqual({ ok: true, plan_status: "running" });
    expect((await call("delete_plan", { plan_id: "p2" })).result).toBe(true);
    expect(statusEvents().map((e) => [e.agent_id, e.step_id, e.plan_id, e.plan_task_id, e.status])).toEqual([
      ["strategist", "step-9", "p1", "t1", "inprogress"],
      ...["t1", "t2", "t3", "t4"].map((t) => ["strategist", "step-9", "p2", t, "ready"]),
    ]);
  });

  it("take null for an optional argument as omitted (the spec's default is None; models send null)", async () => {
    const unbind = planTool.bindStep("step-1", "p1");
    const { call } = box({ agent_id: "strategist", step_id: "step-2", parent_step_id: "step-1" });
    const started = await call("update_task_status", { plan_id: null, task_id: "t1", status: "inprogress", result_summary: null });
    expect(started.error).toBeUndefined();
    expect(started.result).toEqual({ ok: true, plan_status: "running" });
    await call("update_task_status", { plan_id: "p1", task_id: "t1", status: "error", result_summary: "timeout" });
    await call("update_task_status", { task_id: "t1", status: "inprogress", result_summary: null });
    expect(await planTool.get_task("p1", "t1")).toMatchObject({ status: "inprogress", result_summary: "timeout" });
    expect((await call("get_tasks_for_role", { plan_id: null, role_id: "analyst", status: null })).result).toMatchObject([{ task_id: "t2" }]);
    expect((await call("get_plan_status", { plan_id: null })).result).toBe("running");
    unbind();
  });

  it("say so when a list tool is given an unknown plan, naming the run's own plan, instead of an empty list", async () => {
    const unbind = planTool.bindStep("step-1", "p1");
    const { call } = box({ agent_id: "strategist", step_id: "step-2", parent_step_id: "step-1" });
    // A model often passes the workflow's key as the plan_id; [] would read as "nothing left to do".
    for (const [name, args] of [
      ["get_ready_tasks", { plan_id: "SAFE_SOP_v9" }],
      ["get_tasks_for_role", { plan_id: "SAFE_SOP_v9", role_id: "analyst" }],
    ] as const) {
      const outcome = await call(name, args);
      expect(outcome.ok, name).toBe(false);
      expect(outcome.error).toMatch(/unknown plan SAFE_SOP_v9; the plan of this run is p1/);
    }
    const refused = await call("update_task_status", { plan_id: "SAFE_SOP_v9", task_id: "t1", status: "inprogress" });
    expect(refused.result).toEqual({ ok: false, error: "unknown plan SAFE_SOP_v9; the plan of this run is p1 (omit plan_id to use it)" });
    unbind();
    // Outside a sop run there is no plan to point to.
    const outside = await box({ agent_id: "other", step_id: "step-7" }).call("get_ready_tasks", { plan_id: "nope" });
    expect(outside.error).toMatch(/unknown plan nope$/);
  });

  it("answer an unknown task_id with the plan's task ids (models pass a task's name instead)", async () => {
    const { call } = box();
    const refused = await call("update_task_status", { plan_id: "p1", task_id: "Gather facts", status: "inprogress" });
    expect(refused.result).toEqual({ ok: false, error: "unknown task Gather facts in plan p1; its task ids: t1, t2, t3, t4" });
  });

  it("default plan_id to the plan bound to the caller's parent step (the sop run)", async () => {
    const unbind = planTool.bindStep("step-1", "p1");
    const { call } = box({ agent_id: "strategist", step_id: "step-2", parent_step_id: "step-1" });
    expect((await call("update_task_status", { task_id: "t2", status: "skipped", result_summary: "not needed" })).result).toEqual({
      ok: true,
      plan_status: "running",
    });
    expect((await planTool.get_task("p1", "t2"))?.result_summary).toBe("not needed");
    unbind();
    const outcome = await call("get_ready_tasks", {});
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toMatch(/plan_id is required/);
  });
});
