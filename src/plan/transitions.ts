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
import type { PlanStatus, TaskStatus } from "./types.js";

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
  return planStatusFromCounts(
    tasks.filter((t) => !isSettled(t.status)).length,
    tasks.filter((t) => !t.optional && t.status === "error").length,
  );
}

/** The same rule from two counts, so a store can aggregate them in SQL. */
export function planStatusFromCounts(unsettled: number, requiredInError: number): PlanStatus {
  if (unsettled > 0) return "running";
  return requiredInError > 0 ? "error" : "completed";
}

/** Why a transition is refused, in one line for a model to act on. */
export function describeRefusal(from: TaskStatus, to: TaskStatus): string {
  const allowed = TRANSITIONS[from];
  return `invalid transition ${from} → ${to}; from ${from} a task may go to ${
    allowed.length ? allowed.join(" or ") : "nothing (terminal)"
  }`;
}
