/**
 * The port the Plan Tool keeps its plans through (docs/plan-tool.md,
 * docs/scale-out.md#stores): SQLite under the trace directory
 * (src/store/sqlite/plan-store.ts) or PostgreSQL (src/store/postgres/plan-store.ts). Each
 * write checks and applies one change in one transaction, locked by the
 * database, so writers in other processes or on other machines never
 * interleave their read-check-write with ours. It is declared here, beside
 * the Plan Tool, and implemented by store/: the arrow points down.
 */
import type { PlanInstance, PlanStatus, PlanSummary, PlanTemplate, TaskChange, TaskInfo, TaskStatus } from "./types.js";

type Maybe<T> = T | Promise<T>;

/** One queued `update_task_status` (`resultSummary` undefined keeps the previous summary). */
export interface TaskUpdate {
  taskId: string;
  status: TaskStatus;
  resultSummary?: string | undefined;
}

export type UpdateOutcome = { ok: true; change: TaskChange } | { ok: false; error: string };

export interface PlanStorage {
  /** Where the plans are, for messages (a file, or a URL without its password). */
  readonly location: string;
  /** Insert a plan with every task `ready`; false when plan_id is taken. */
  insertPlan(planId: string, template: PlanTemplate, runTaskId?: string | null): Maybe<boolean>;
  getTask(planId: string, taskId: string): Maybe<TaskInfo | null>;
  /** Tasks of a plan in workflow order, optionally filtered; null when the plan is unknown. */
  listTasks(planId: string, filter?: { status?: TaskStatus; assignee?: string }): Maybe<TaskInfo[] | null>;
  /** Check and apply one transition and re-derive the plan status, atomically. */
  updateTaskStatus(planId: string, taskId: string, status: TaskStatus, resultSummary?: string): Maybe<UpdateOutcome>;
  /**
   * Several updates of one plan, in order, in one transaction (one commit):
   * each outcome is what `updateTaskStatus` would have answered had they run
   * one after the other. Optional; without it the Plan Tool runs them one by one.
   */
  updateTaskStatuses?(planId: string, updates: readonly TaskUpdate[]): Maybe<UpdateOutcome[]>;
  getPlanStatus(planId: string): Maybe<PlanStatus | null>;
  getPlan(planId: string): Maybe<PlanInstance | null>;
  deletePlan(planId: string): Maybe<boolean>;
  /** Every plan, newest first. */
  listPlans(): Maybe<PlanSummary[]>;
  close(): Maybe<void>;
}
