/**
 * What a `sop` run ends with: the strategist's summary and the plan as a tree
 * of tasks, after the one-line reason when the run failed.
 */
import { renderPlanTree } from "../../plan/tree.js";
import type { PlanInstance } from "../../plan/types.js";

/** The answer of a run: the strategist's summary, then every task's status and result. */
export function report(plan: PlanInstance, strategistAnswer: string): string {
  const summary = strategistAnswer.trim() ? `${strategistAnswer.trim()}\n\n` : "";
  return `${summary}${renderPlanTree(plan)}`;
}

/** A failed run's error: the reason on the first line (what one-line error displays show), the report after. */
export function failureReport(reason: string, plan: PlanInstance, strategistAnswer = ""): string {
  return `${reason}\n\n${report(plan, strategistAnswer)}`;
}

/** Why a plan ended in error: its required tasks in error, each with the first line of its summary. */
export function planErrorReason(plan: PlanInstance): string {
  const failed = plan.steps
    .flatMap((s) => s.tasks)
    .filter((t) => t.status === "error" && !t.optional)
    .map((t) => `${t.task_id}${t.result_summary ? ` (${oneLine(t.result_summary)})` : ""}`);
  return `plan ${plan.plan_id} ended in error: task ${failed.join(", ")} failed`;
}

function oneLine(text: string): string {
  const line = text.trim().split(/\r?\n/)[0] ?? "";
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}
