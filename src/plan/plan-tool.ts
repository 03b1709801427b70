/**
 * The Plan Tool (docs/design/plan-tool-design.md): a passive, durable state manager for
 * top-level plans instantiated from a team's `workflows`. It drives nothing;
 * agents read and update it. Method names and return contracts are the
 * spec's: false or null for unknown plans and tasks, false for an existing
 * plan_id, invalid structure data or an invalid transition.
 */
import { randomUUID } from "node:crypto";
import type { RunEventBody } from "../events/types.js";
import { KeyedMutex } from "./mutex.js";
import type { PlanStorage, TaskUpdate, UpdateOutcome } from "./storage.js";
import { isValidPlanId, parseStructure } from "./structure.js";
import { TASK_STATUSES } from "./types.js";
import type { PlanInstance, PlanRules, PlanStatus, PlanSummary, TaskInfo, TaskStatus } from "./types.js";
import { RuntimeError } from "../errors.js";

/** The `task.status` event body a change produces. */
export type TaskStatusEvent = Extract<RunEventBody, { type: "task.status" }>;

export interface PlanToolOptions {
  /** Called after every accepted change (creation: once per task, `ready`). */
  emit?: (body: TaskStatusEvent) => void;
  /** @default () => new Date() */
  now?: () => Date;
}

/** Per-call options: where this call's `task.status` events go (a tool passes its run's emitter). */
export interface CallOptions {
  emit?: (body: TaskStatusEvent) => void;
}

/** The result of a write, with the reason when it was refused; the tools report it to the model. */
export type WriteOutcome = { ok: true; plan_status: PlanStatus } | { ok: false; error: string };

/** The most updates one transaction applies: bounds how long a batch holds the database's write lock. */
const MAX_BATCH = 256;

interface QueuedUpdate extends TaskUpdate {
  options: CallOptions;
  resolve: (outcome: WriteOutcome) => void;
  reject: (err: unknown) => void;
}

export class PlanTool {
  private readonly mutex = new KeyedMutex();
  /** Per plan, the batch of updates queued behind the plan's mutex that later updates may still join. */
  private readonly openBatches = new Map<string, QueuedUpdate[]>();
  private readonly emit: ((body: TaskStatusEvent) => void) | undefined;
  /** Agent step id → the plan that step (a `sop` run) drives, and its rules; see `bindStep`. */
  private readonly boundSteps = new Map<string, { plan_id: string; rules?: PlanRules | undefined }>();

  constructor(
    readonly store: PlanStorage,
    options: PlanToolOptions = {},
  ) {
    this.emit = options.emit;
  }

  /** Create a plan with every task `ready`; false when plan_id exists or structure_data is invalid. */
  async create_plan_from_structure(plan_id: string, structure_data: unknown, options?: CallOptions): Promise<boolean> {
    return (await this.createPlan(plan_id, structure_data, options)).ok;
  }

  /** create_plan_from_structure, saying why when it refuses; `run_task_id` records the run that made the plan. */
  createPlan(plan_id: string, structure_data: unknown, options: CallOptions & { run_task_id?: string } = {}): Promise<WriteOutcome> {
    if (!isValidPlanId(plan_id)) return Promise.resolve({ ok: false, error: `invalid plan_id ${JSON.stringify(plan_id)}` });
    const parsed = parseStructure(structure_data);
    if (!parsed.ok) return Promise.resolve({ ok: false, error: parsed.error });
    this.closeBatch(plan_id);
    return this.mutex.run(plan_id, async (): Promise<WriteOutcome> => {
      if (!(await this.store.insertPlan(plan_id, parsed.template, options.run_task_id ?? null))) return { ok: false, error: `plan ${plan_id} already exists` };
      for (const step of parsed.template.steps) {
        for (const task of step.tasks) {
          this.notify(options, { type: "task.status", plan_id, plan_task_id: task.task_id, status: "ready", plan_status: "running" });
        }
      }
      return { ok: true, plan_status: "running" };
    });
  }

  async get_task(plan_id: string, task_id: string): Promise<TaskInfo | null> {
    return this.store.getTask(plan_id, task_id);
  }

  /** Move a task to `status`; false for an unknown plan or task or an invalid transition. */
  async update_task_status(plan_id: string, task_id: string, status: TaskStatus, result_summary?: string | null, options?: CallOptions): Promise<boolean> {
    return (await this.updateTask(plan_id, task_id, status, result_summary, options)).ok;
  }

  /** update_task_status, saying why when it refuses. */
  updateTask(plan_id: string, task_id: string, status: TaskStatus, result_summary?: string | null, options: CallOptions = {}): Promise<WriteOutcome> {
    if (!TASK_STATUSES.includes(status)) return Promise.resolve({ ok: false, error: `invalid status ${JSON.stringify(status)}` });
    return new Promise<WriteOutcome>((resolve, reject) => {
      let batch = this.openBatches.get(plan_id);
      if (!batch) {
        const opened: QueuedUpdate[] = [];
        batch = opened;
        this.openBatches.set(plan_id, opened);
        void this.mutex.run(plan_id, () => this.applyBatch(plan_id, opened));
      }
      batch.push({ taskId: task_id, status, resultSummary: result_summary ?? undefined, options, resolve, reject });
      if (batch.length >= MAX_BATCH) this.closeBatch(plan_id);
    });
  }

  /**
   * Group commit: the updates of one plan that arrive while it is busy are
   * applied together, in arrival order, in one transaction, when their turn
   * comes (docs/plan-tool.md#concurrency-and-durability). Each answers as if
   * it had run alone, and only once the transaction holding it has
   * committed. When that transaction fails (a value the database refuses),
   * nothing of it stays and the batch runs again one update per transaction,
   * so only the update at fault fails, as it would have alone.
   */
  private async applyBatch(plan_id: string, batch: QueuedUpdate[]): Promise<void> {
    if (this.openBatches.get(plan_id) === batch) this.openBatches.delete(plan_id);
    try {
      if (this.store.updateTaskStatuses && batch.length > 1) {
        let outcomes: UpdateOutcome[] | undefined;
        try {
          outcomes = await this.store.updateTaskStatuses(plan_id, batch);
        } catch {
          // The transaction rolled back: one update per transaction below, so that only the one at fault fails.
        }
        if (outcomes) {
          if (outcomes.length !== batch.length) {
            throw new RuntimeError("STORE", `the plan store answered ${outcomes.length} outcomes for ${batch.length} updates`);
          }
          batch.forEach((u, i) => {
            this.settle(plan_id, u, outcomes[i]!);
          });
          return;
        }
      }
      for (const u of batch) {
        let outcome: UpdateOutcome;
        try {
          outcome = await this.store.updateTaskStatus(plan_id, u.taskId, u.status, u.resultSummary);
        } catch (err) {
          u.reject(err);
          continue;
        }
        this.settle(plan_id, u, outcome);
      }
    } catch (err) {
      // Whatever went wrong, no caller is left waiting (a settled promise ignores this).
      for (const u of batch) u.reject(err);
    }
  }

  /** Answer one caller: its event first (a sink that throws fails this call only), then its outcome. */
  private settle(plan_id: string, u: QueuedUpdate, outcome: UpdateOutcome): void {
    if (!outcome.ok) {
      u.resolve(outcome);
      return;
    }
    const { change } = outcome;
    try {
      this.notify(u.options, { type: "task.status", plan_id, plan_task_id: u.taskId, status: change.status, plan_status: change.plan_status });
      u.resolve({ ok: true, plan_status: change.plan_status });
    } catch (err) {
      u.reject(err);
    }
  }

  /** No more updates join the plan's queued batch: a write queued after it (or a full batch) comes first. */
  private closeBatch(plan_id: string): void {
    this.openBatches.delete(plan_id);
  }

  /** Tasks `ready` now, in workflow order (which the spec does not promise; callers follow the workflow). */
  async get_ready_tasks(plan_id: string): Promise<TaskInfo[]> {
    return (await this.store.listTasks(plan_id, { status: "ready" })) ?? [];
  }

  /** Tasks assigned to `role_id` in `status` (default `ready`). */
  async get_tasks_for_role(plan_id: string, role_id: string, status: TaskStatus = "ready"): Promise<TaskInfo[]> {
    return (await this.store.listTasks(plan_id, { assignee: role_id, status })) ?? [];
  }

  async get_plan_status(plan_id: string): Promise<PlanStatus | null> {
    return this.store.getPlanStatus(plan_id);
  }

  async get_plan_structure(plan_id: string): Promise<PlanInstance | null> {
    return this.store.getPlan(plan_id);
  }

  /** Delete a plan; false when it does not exist. Queued behind the plan's pending updates. */
  delete_plan(plan_id: string): Promise<boolean> {
    this.closeBatch(plan_id);
    return this.mutex.run(plan_id, () => this.store.deletePlan(plan_id));
  }

  /** Every stored plan, newest first (for `runtime plan list`). */
  async list_plans(): Promise<PlanSummary[]> {
    return this.store.listPlans();
  }

  /**
   * Bind a plan to an agent step (a `sop` run binds its own step). A Plan
   * Tool tool called without `plan_id` by that step or one of its direct
   * children (the strategist) then works on this plan, under `rules` when
   * given (the tools hand them their calls; the Plan Tool applies none).
   * Returns the unbinder.
   */
  bindStep(step_id: string, plan_id: string, rules?: PlanRules): () => void {
    const binding = { plan_id, rules };
    this.boundSteps.set(step_id, binding);
    return () => {
      if (this.boundSteps.get(step_id) === binding) this.boundSteps.delete(step_id);
    };
  }

  /** The plan bound to a step or to its parent step, if any. */
  boundPlan(scope: { step_id?: string; parent_step_id?: string }): string | undefined {
    return this.binding(scope)?.plan_id;
  }

  /** The rules of the plan bound to a step or to its parent step, if any. */
  rulesFor(scope: { step_id?: string; parent_step_id?: string }): PlanRules | undefined {
    return this.binding(scope)?.rules;
  }

  private binding(scope: { step_id?: string; parent_step_id?: string }) {
    return (
      (scope.step_id !== undefined ? this.boundSteps.get(scope.step_id) : undefined) ??
      (scope.parent_step_id !== undefined ? this.boundSteps.get(scope.parent_step_id) : undefined)
    );
  }

  close(): void | Promise<void> {
    return this.store.close();
  }

  private notify(options: CallOptions, body: TaskStatusEvent): void {
    (options.emit ?? this.emit)?.(body);
  }
}

/**
 * A fresh plan_id that cannot collide: the workflow key, a UTC timestamp and
 * a random UUID fragment, e.g. `SAFE_SOP_v9-20250101T120000Z-1f3a9c2e`.
 */
export function newPlanId(workflowId: string, now: Date = new Date(), random: () => string = randomUUID): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  const prefix = workflowId.replace(/[^A-Za-z0-9_.:-]/g, "_").slice(0, 80) || "plan";
  return `${prefix}-${stamp}-${random().replace(/-/g, "").slice(0, 12)}`;
}
