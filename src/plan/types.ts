/**
 * The Plan Tool's data (docs/design/plan-tool-design.md): a plan instantiated from a `workflows`
 * template, its steps, and its tasks. These are the shapes the API returns.
 */
import type { PlanTaskStatus } from "../events/types.js";

export type TaskStatus = PlanTaskStatus;
export type PlanStatus = "running" | "completed" | "error";

export const TASK_STATUSES: readonly TaskStatus[] = ["ready", "inprogress", "completed", "error", "skipped"];

/** One unit of work, as `get_task` returns it. */
export interface TaskInfo {
  task_id: string;
  step_id: string;
  name: string;
  assignee: string;
  description: string;
  /** An optional task in error does not make the plan fail. */
  optional: boolean;
  status: TaskStatus;
  result_summary: string | null;
  updated_at: string;
}

/** A step groups tasks; its status is derived from them like the plan's. */
export interface StepInfo {
  step_id: string;
  name: string;
  description: string;
  status: PlanStatus;
  tasks: TaskInfo[];
}

/** A whole plan, as `get_plan_structure` returns it. */
export interface PlanInstance {
  plan_id: string;
  name: string;
  description: string;
  /** The workflow key the plan came from, e.g. `SAFE_SOP_v9`. */
  workflow_template_source: string;
  status: PlanStatus;
  /** Incremented by every accepted change; lets readers detect lost updates. */
  revision: number;
  /** The run (its task_id) whose `sop` step created the plan; null when created otherwise. */
  run_task_id: string | null;
  created_at: string;
  updated_at: string;
  steps: StepInfo[];
}

/** One row of `plan list`. */
export interface PlanSummary {
  plan_id: string;
  name: string;
  workflow_template_source: string;
  status: PlanStatus;
  tasks_total: number;
  tasks_done: number;
  run_task_id: string | null;
  created_at: string;
  updated_at: string;
}

/** A structure_data task after validation, with defaults filled. */
export interface TaskTemplate {
  task_id: string;
  name: string;
  assignee: string;
  description: string;
  optional: boolean;
}

export interface StepTemplate {
  step_id: string;
  name: string;
  description: string;
  tasks: TaskTemplate[];
}

/** structure_data after validation: what a plan is created from. */
export interface PlanTemplate {
  name: string;
  description: string;
  workflow_template_source: string;
  steps: StepTemplate[];
}

/** An accepted status change: what a `task.status` event reports. */
export interface TaskChange {
  plan_id: string;
  task_id: string;
  from: TaskStatus;
  status: TaskStatus;
  plan_status: PlanStatus;
}

/**
 * Rules the driver of a plan (the `sop` kind, src/kinds/sop/rules.ts) applies
 * to the agents working on it. The Plan Tool applies none itself (docs/design/plan-tool-design.md:
 * it stays a passive store); its tools only hand the bound step's calls to
 * these guards, whose refusal (a thrown Error) becomes the call's error.
 */
export interface PlanRules {
  /** The plan the rules are for; calls on other plans pass unguarded. */
  readonly plan_id: string;
  /** A status change by `caller`: `apply` runs when the rules allow it, else the reason is thrown. */
  guardUpdate<T extends { ok: boolean }>(change: { task_id: string; status: TaskStatus; caller: string }, apply: () => Promise<T>): Promise<T>;
  /** A call of the agent `agent` by `caller` with `query`: `call` runs when the rules allow it, else the reason is thrown. */
  guardAgentCall<T>(agent: string, caller: string, query: string, call: () => Promise<T>): Promise<T>;
}
