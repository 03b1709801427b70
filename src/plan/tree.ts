/**
 * A plan as a text tree (steps → tasks, with statuses and result summaries):
 * what `runtime plan show` prints and what a `sop` run answers with.
 */
import type { PlanInstance, PlanSummary, TaskInfo } from "./types.js";

/** The whole plan as a tree; result summaries keep their lines, indented under their task. */
export function renderPlanTree(plan: PlanInstance): string {
  const lines = [`plan ${plan.plan_id} "${plan.name}" (${plan.workflow_template_source}) [${plan.status}]`];
  plan.steps.forEach((step, i) => {
    const lastStep = i === plan.steps.length - 1;
    lines.push(`${lastStep ? "└─" : "├─"} step ${step.step_id} ${step.name} [${step.status}]`);
    const stem = lastStep ? "   " : "│  ";
    step.tasks.forEach((task, j) => {
      const lastTask = j === step.tasks.length - 1;
      lines.push(`${stem}${lastTask ? "└─" : "├─"} ${taskLine(task)}`);
      const pad = `${stem}${lastTask ? "   " : "│  "}   `;
      for (const line of summaryLines(task)) lines.push(`${pad}${line}`);
    });
  });
  return lines.join("\n");
}

/** One line per plan, for `runtime plan list`: id, status, progress, workflow, created, run, name. */
export function renderPlanList(plans: PlanSummary[]): string {
  return plans
    .map(
      (p) =>
        `${p.plan_id}\t${p.status}\t${p.tasks_done}/${p.tasks_total} done\t${p.workflow_template_source}\t${p.created_at}\t${p.run_task_id ?? "-"}\t${p.name}`,
    )
    .join("\n");
}

/** Tasks that have not settled, as `t2 (ready), t3 (inprogress)`. */
export function describeOpenTasks(plan: PlanInstance): string {
  return openTasks(plan)
    .map((t) => `${t.task_id} (${t.status})`)
    .join(", ");
}

export function openTasks(plan: PlanInstance): TaskInfo[] {
  return plan.steps.flatMap((s) => s.tasks).filter((t) => t.status === "ready" || t.status === "inprogress");
}

function taskLine(task: TaskInfo): string {
  const optional = task.optional ? " (optional)" : "";
  return `[${task.status}] ${task.task_id} ${task.name} → ${task.assignee}${optional}`;
}

function summaryLines(task: TaskInfo): string[] {
  if (!task.result_summary) return [];
  const lines = task.result_summary.trim().split(/\r?\n/);
  return lines.map((line, i) => (i === 0 ? `↳ ${line}` : `  ${line}`));
}
