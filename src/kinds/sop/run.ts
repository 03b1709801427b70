/**
 * The `sop` agent kind (seed 003): instantiate a plan from the team's
 * `workflow`, let the `strategist` agent drive it through the Plan Tool
 * tools and the assignee agents, and answer with a report of every task.
 *
 * The plan, not the strategist's prose, decides how the run ends: completed
 * → answer; error → error; still running when the strategist answers → the
 * strategist is asked again (up to MAX_STRATEGIST_ROUNDS in all) with the
 * open tasks listed, then the run ends in error naming them.
 */
import type { AgentConfig, SopAgentConfig, Workflow } from "../config/types.js";
import { RuntimeError } from "../errors.js";
import { addUsage, ZERO_USAGE, type Usage } from "../events/types.js";
import { newPlanId, openPlanTool, type PlanTool } from "../plan/plan-tool.js";
import { describeOpenTasks, renderPlanTree } from "../plan/tree.js";
import type { PlanInstance } from "../plan/types.js";
import { defaultTemplate } from "../prompts/render.js";
import type { AgentContext, AgentResult, AgentRunner } from "../runtime/types.js";

/** The strategist's first call plus the reminders it may get when it answers too early. */
export const MAX_STRATEGIST_ROUNDS = 3;

/** Run a `sop` agent: one plan, driven by its strategist, reported task by task. */
export const runSop: AgentRunner = async (ctx, input) => {
  const agent = ctx.agent;
  if (agent.kind !== "sop") return failure(`agent ${agent.name} is not of kind sop`, ZERO_USAGE);
  const workflow = ctx.team.workflows[agent.workflow];
  if (!workflow) return failure(`unknown workflow '${agent.workflow}'`, ZERO_USAGE);

  const unreachable = missingTools(ctx.team.agents[agent.strategist], workflow);
  if (unreachable) return failure(`strategist ${agent.strategist} cannot drive workflow ${workflow.id}: its tools lack ${unreachable}`, ZERO_USAGE);

  const planTool = openPlanTool(ctx.trace_dir);
  const planId = newPlanId(workflow.id, ctx.now());
  const created = await planTool.createPlan(planId, workflow, { emit: (body) => ctx.emit(body), run_task_id: ctx.task_id });
  if (!created.ok) return failure(`cannot create plan from workflow '${workflow.id}': ${created.error}`, ZERO_USAGE);
  ctx.emit({
    type: "plan.created",
    steps: workflow.steps.flatMap((s) => s.tasks.map((t) => `${s.step_id}/${t.task_id} ${t.name} → ${t.assignee}`)),
  });

  // The strategist is a child of this step: its plan tools find this plan without a plan_id.
  const unbind = ctx.scope.step_id !== undefined ? planTool.bindStep(ctx.scope.step_id, planId) : () => {};
  try {
    return await drive({ ctx, agent, workflow, planTool, planId }, input);
  } finally {
    unbind();
  }
};

/**
 * What a strategist that calls tools itself (react, plan_and_solve) would
 * need but is not allowed: update_task_status, or an assignee agent. Without
 * them the plan can never finish, and the model would spin until its limits.
 * Other kinds reach tools through their own agents, so they are not checked.
 */
function missingTools(strategist: AgentConfig | undefined, workflow: Workflow): string | undefined {
  if (!strategist || (strategist.kind !== "react" && strategist.kind !== "plan_and_solve")) return undefined;
  const allowed = new Set(strategist.tools);
  const missing: string[] = [];
  if (!allowed.has("update_task_status")) missing.push("update_task_status");
  const tasksOf = new Map<string, string[]>();
  for (const task of workflow.steps.flatMap((s) => s.tasks)) {
    if (!allowed.has(task.assignee)) tasksOf.set(task.assignee, [...(tasksOf.get(task.assignee) ?? []), task.task_id]);
  }
  for (const [assignee, tasks] of tasksOf) missing.push(`${assignee} (the assignee of ${tasks.join(", ")})`);
  return missing.length ? missing.join(", ") : undefined;
}

interface SopRun {
  ctx: AgentContext;
  agent: SopAgentConfig;
  workflow: Workflow;
  planTool: PlanTool;
  planId: string;
}

async function drive({ ctx, agent, workflow, planTool, planId }: SopRun, input: string): Promise<AgentResult> {
  let usage: Usage = ZERO_USAGE;
  let strategistAnswer = "";
  for (let round = 1; round <= MAX_STRATEGIST_ROUNDS; round++) {
    const plan = await readPlan(planTool, planId);
    if (plan.status !== "running") break;
    if (ctx.signal.aborted) return failure("interrupted", usage, plan);
    const result = await ctx.callAgent(agent.strategist, strategistInput(workflow, plan, input, round > 1));
    usage = addUsage(usage, result.usage);
    if (ctx.signal.aborted) return failure("interrupted", usage, await readPlan(planTool, planId));
    if (result.result_type === "error") {
      const after = await readPlan(planTool, planId);
      if (after.status === "completed") break;
      return failure(`strategist ${agent.strategist} failed: ${result.error ?? "unknown error"}`, usage, after);
    }
    strategistAnswer = result.answer ?? "";
  }

  const plan = await readPlan(planTool, planId);
  if (plan.status === "completed") {
    return { result_type: "answer", answer: report(plan, strategistAnswer), usage };
  }
  if (plan.status === "error") {
    const failed = plan.steps
      .flatMap((s) => s.tasks)
      .filter((t) => t.status === "error" && !t.optional)
      .map((t) => `${t.task_id}${t.result_summary ? ` (${oneLine(t.result_summary)})` : ""}`);
    return failure(`plan ${plan.plan_id} ended in error: task ${failed.join(", ")} failed`, usage, plan, strategistAnswer);
  }
  return failure(
    `strategist ${agent.strategist} answered ${MAX_STRATEGIST_ROUNDS} times while plan ${plan.plan_id} was still running; open tasks: ${describeOpenTasks(plan)}`,
    usage,
    plan,
    strategistAnswer,
  );
}

function strategistInput(workflow: Workflow, plan: PlanInstance, request: string, reminder: boolean): string {
  return defaultTemplate("sop_strategist")({
    request,
    plan_id: plan.plan_id,
    workflow_id: plan.workflow_template_source,
    workflow_name: plan.name,
    workflow_description: workflow.description,
    steps: plan.steps.map((s, i) => ({ ...s, step_number: i + 1 })),
    open_tasks: reminder ? describeOpenTasks(plan) : "",
  });
}

async function readPlan(planTool: PlanTool, planId: string): Promise<PlanInstance> {
  const plan = await planTool.get_plan_structure(planId);
  if (!plan) throw new RuntimeError("NOT_FOUND", `plan ${planId} disappeared while the run used it`);
  return plan;
}

/** The answer of a run: the strategist's summary, then every task's status and result. */
function report(plan: PlanInstance, strategistAnswer: string): string {
  const summary = strategistAnswer.trim() ? `${strategistAnswer.trim()}\n\n` : "";
  return `${summary}${renderPlanTree(plan)}`;
}

function failure(error: string, usage: Usage, plan?: PlanInstance, strategistAnswer = ""): AgentResult {
  if (!plan) return { result_type: "error", error, usage };
  // The first line is the reason (what one-line error displays show); the report follows.
  return { result_type: "error", error: `${error}\n\n${report(plan, strategistAnswer)}`, usage };
}

function oneLine(text: string): string {
  const line = text.trim().split(/\r?\n/)[0] ?? "";
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}
