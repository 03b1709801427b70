/**
 * The `sop` agent kind (docs/design/plan-tool-design.md): instantiate a plan from the team's
 * `workflow`, let the `strategist` agent drive it through the Plan Tool
 * tools and the assignee agents, and answer with a report of every task.
 * The loop lives in `sopMachine`; this file checks that the strategist can
 * drive the workflow at all, then binds the machine's actors to one step.
 */
import { fromPromise } from "../machine/kit.js";
import type { AgentConfig, SopAgentConfig, Workflow } from "../../config/types.js";
import { RuntimeError, prefixed, type RunError } from "../../errors.js";
import { newPlanId, type PlanTool } from "../../plan/plan-tool.js";
import { describeOpenTasks } from "../../plan/tree.js";
import type { PlanInstance } from "../../plan/types.js";
import { defaultTemplate } from "../../prompts/render.js";
import type { AgentContext, AgentRunner, Outcome } from "../types.js";
import { type ImplementationsOf, runMachine } from "../run-machine.js";
import { type Round, sopMachine } from "./machine.js";
import { sopRules } from "./rules.js";

/** Run a `sop` agent: one plan, driven by its strategist, reported task by task. */
export const runSop: AgentRunner<SopAgentConfig> = async (ctx, input) => {
  const agent = ctx.agent;
  const workflow = ctx.team.workflows[agent.workflow];
  if (!workflow) return failure(`unknown workflow '${agent.workflow}'`);
  const unreachable = missingTools(ctx.team.agents[agent.strategist], workflow);
  if (unreachable) return failure(`strategist ${agent.strategist} cannot drive workflow ${workflow.id}: its tools lack ${unreachable}`);

  const planTool = ctx.stores.planTool();
  // A resumed run works on the plan it created, as it read it then (docs/durable-runs.md).
  const planId = await ctx.remember("plan_id", () => newPlanId(workflow.id, ctx.now()));
  // The strategist is a child of this step: its plan tools find this plan without a plan_id,
  // and its plan changes and assignee calls pass through the workflow's rules (rules.ts).
  const unbind = ctx.scope.step_id !== undefined ? planTool.bindStep(ctx.scope.step_id, planId, sopRules(planTool, planId, workflow)) : () => {};
  try {
    return await runMachine(ctx, sopMachine, bindSop({ ctx, workflow, planTool, planId, request: input }), { strategist: agent.strategist });
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
  ctx: AgentContext<SopAgentConfig>;
  workflow: Workflow;
  planTool: PlanTool;
  planId: string;
  /** The user's request, passed on to the strategist. */
  request: string;
}

/** The machine's implementations for this step: the plan in the Plan Tool, the strategist. */
function bindSop({ ctx, workflow, planTool, planId, request }: SopRun) {
  const strategist = ctx.agent.strategist;

  const drive = async ({ plan, round }: { plan: PlanInstance; round: number }): Promise<Round> => {
    if (ctx.signal.aborted) return { outcome: "interrupted" };
    const result = await ctx.callAgent(strategist, strategistInput(workflow, plan, request, round > 1));
    if (ctx.signal.aborted) return { outcome: "interrupted" };
    return result.result_type === "error" ? { outcome: "failed", error: prefixed("", result.error) } : { outcome: "answered", answer: result.answer ?? "" };
  };

  return {
    actors: {
      createPlan: fromPromise(() =>
        ctx.remember("plan_created", async () => {
          // `order` is the sop kind's rule, not part of the Plan Tool's structure data.
          const { order: _order, ...structure } = workflow;
          const created = await planTool.createPlan(planId, structure, { emit: (body) => ctx.emit(body), run_task_id: ctx.task_id });
          return created.ok
            ? { ok: true as const }
            : {
                ok: false as const,
                error: { code: "CONFIG_INVALID", message: `cannot create plan from workflow '${workflow.id}': ${created.error}` } as RunError,
              };
        }),
      ),
      readPlan: fromPromise(() => ctx.remember("plan", () => readPlan(planTool, planId))),
      drive: fromPromise(({ input }: { input: { plan: PlanInstance; round: number } }) => drive(input)),
    },
    actions: {
      announcePlan: () =>
        ctx.emit({
          type: "plan.created",
          steps: workflow.steps.flatMap((s) => s.tasks.map((t) => `${s.step_id}/${t.task_id} ${t.name} → ${t.assignee}`)),
        }),
    },
  } satisfies ImplementationsOf<typeof sopMachine>;
}

function strategistInput(workflow: Workflow, plan: PlanInstance, request: string, reminder: boolean): string {
  return defaultTemplate("sop_strategist")({
    request,
    plan_id: plan.plan_id,
    workflow_id: plan.workflow_template_source,
    workflow_name: plan.name,
    workflow_description: workflow.description,
    steps: plan.steps.map((s, i) => ({ ...s, step_number: i + 1 })),
    free_order: workflow.order === "free",
    open_tasks: reminder ? describeOpenTasks(plan) : "",
  });
}

async function readPlan(planTool: PlanTool, planId: string): Promise<PlanInstance> {
  const plan = await planTool.get_plan_structure(planId);
  if (!plan) throw new RuntimeError("NOT_FOUND", `plan ${planId} disappeared while the run used it`);
  return plan;
}

/** A run that failed before it had a plan: the team file names what cannot be run. */
function failure(message: string): Outcome {
  return { result_type: "error", error: { code: "CONFIG_INVALID", message } };
}
