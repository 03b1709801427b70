/**
 * The valid task transitions and how a plan's status follows from its tasks.
 * Pure functions: the store and the PlanTool apply them, tests enumerate them.
 *
 * ```
 * ready      → inprogress | skipped
 * inprogress → completed | error | ready   (ready: hand the task back unstarted)
 * error      → inprogress (retry) | skipped
 * completed, skipped: terminal
 * ```
 * A same-status "update" is not a transition and is refused.
 */
import type { PlanStatus, TaskChange, TaskStatus } from "./types.js";

export const TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  ready: ["inprogress", "skipped"],
  inprogress: ["completed", "error", "ready"],
  error: ["inprogress", "skipped"],
  completed: [],
  skipped: [],
};

/** True when a task may move from `from` to `to`. */
export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Statuses a task ends in; `error` ends a task but may still be retried. */
export function isSettled(status: TaskStatus): boolean {
  return status === "completed" || status === "skipped" || status === "error";
}

/**
 * A plan (or step) status derived from its tasks:
 * - `error` when every task has settled and some required task is in error;
 * - `completed` when every required task is completed or skipped and every
 *   optional task has settled (an optional task in error is tolerated);
 * - `running` otherwise. An empty set of tasks is `completed`.
 */
export function derivePlanStatus(tasks: readonly { status: TaskStatus; optional: boolean }[]): PlanStatus {
  return planStatusFromCounts(tasks.filter((t) => !isSettled(t.status)).length, tasks.filter((t) => !t.optional && t.status === "error").length);
}

/** The same rule from two counts, so a store can aggregate them in SQL. */
export function planStatusFromCounts(unsettled: number, requiredInError: number): PlanStatus {
  if (unsettled > 0) return "running";
  return requiredInError > 0 ? "error" : "completed";
}

/** Why a transition is refused, in one line for a model to act on. */
export function describeRefusal(from: TaskStatus, to: TaskStatus): string {
  const allowed = TRANSITIONS[from];
  return `invalid transition ${from} → ${to}; from ${from} a task may go to ${allowed.length ? allowed.join(" or ") : "nothing (terminal)"}`;
}

/** What an update needs of its plan: the status and the two counters it is derived from. */
export interface PlanCounters {
  status: PlanStatus;
  unsettled: number;
  failed_required: number;
}

/**
 * One update checked against its plan and task (undefined: no such task),
 * with the plan's counters after it when accepted: the rule both plan stores
 * apply (src/store/sqlite/plan-store.ts, src/store/postgres/plan-store.ts).
 */
export function checkUpdate(
  planId: string,
  plan: PlanCounters,
  taskId: string,
  task: { status: TaskStatus; optional: boolean } | undefined,
  to: TaskStatus,
): { ok: false; error: string } | { ok: true; change: TaskChange; after: PlanCounters } {
  if (!task) return { ok: false, error: `unknown task ${taskId} in plan ${planId}` };
  if (plan.status === "completed") return { ok: false, error: `plan ${planId} is completed and takes no more updates` };
  if (!canTransition(task.status, to)) return { ok: false, error: `task ${taskId}: ${describeRefusal(task.status, to)}` };
  const unsettled = plan.unsettled + Number(!isSettled(to)) - Number(!isSettled(task.status));
  const failed_required = plan.failed_required + (task.optional ? 0 : Number(to === "error") - Number(task.status === "error"));
  const status = planStatusFromCounts(unsettled, failed_required);
  return {
    ok: true,
    change: { plan_id: planId, task_id: taskId, from: task.status, status: to, plan_status: status },
    after: { status, unsettled, failed_required },
  };
}
