/**
 * The plans port (src/store/plans.ts) on SQLite (`<traceDir>/plans.db`,
 * WAL). Every write runs in a `BEGIN IMMEDIATE` transaction, so a second
 * process writing the same file waits for the lock instead of interleaving
 * its read-check-write with ours.
 */
import Database from "better-sqlite3";
import type { PlanRow, PlanStorage, TaskUpdate, UpdateOutcome } from "../plans.js";
import { checkUpdate, derivePlanStatus } from "../../plan/transitions.js";
import { PLAN_SCHEMA } from "./plan-schema.js";
import { migrate } from "./schema.js";
import type { PlanInstance, PlanStatus, PlanSummary, PlanTemplate, StepInfo, TaskInfo, TaskStatus } from "../../plan/types.js";

/** What an update reads: the plan's status counters and the task's state (null when the task is unknown). */
interface UpdateRead {
  plan_status: PlanStatus;
  unsettled: number;
  failed_required: number;
  task_status: TaskStatus | null;
  optional: number | null;
}

interface TaskRow {
  task_id: string;
  step_id: string;
  name: string;
  assignee: string;
  description: string;
  optional: number;
  status: TaskStatus;
  result_summary: string | null;
  updated_at: string;
}

export type { UpdateOutcome } from "../plans.js";

const TASK_COLUMNS = "task_id, step_id, name, assignee, description, optional, status, result_summary, updated_at";

/** Synchronous SQLite access to plans; the PlanTool serialises callers above it. */
export class PlanStore implements PlanStorage {
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  /**
   * One status update, as a transaction made once: better-sqlite3 builds a
   * wrapper (four of them) for every `db.transaction` call, ~8 µs of an
   * update's ~45 µs (bench/plan-tool.mjs).
   */
  private readonly updateRead: Database.Statement;
  private readonly updateMany: Database.Transaction<(planId: string, updates: readonly TaskUpdate[], at: string) => UpdateOutcome[]>;
  private readonly update: Database.Transaction<
    (planId: string, taskId: string, status: TaskStatus, resultSummary: string | undefined, at: string) => UpdateOutcome
  >;
  readonly location: string;

  /** Open (creating if needed, unless `create` is false) a plan database; `:memory:` for a private one. */
  constructor(
    readonly file: string,
    private readonly now: () => Date = () => new Date(),
    options: { create?: boolean } = {},
  ) {
    this.location = file;
    // A long busy timeout: under contention another process may hold the write lock for a while.
    this.db = new Database(file, { timeout: 30_000, fileMustExist: options.create === false });
    this.db.pragma("journal_mode = WAL");
    // NORMAL in WAL mode: a committed change survives a process crash, without an fsync per commit.
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("foreign_keys = ON");
    migrate(this.db, file, PLAN_SCHEMA, 30_000);
    this.updateRead = this.db.prepare(
      `SELECT p.status AS plan_status, p.unsettled, p.failed_required, t.status AS task_status, t.optional
         FROM plans p LEFT JOIN plan_tasks t ON t.plan_id = p.plan_id AND t.task_id = ?
        WHERE p.plan_id = ?`,
    );
    this.update = this.db.transaction((planId, taskId, status, resultSummary, at) => this.applyUpdate(planId, taskId, status, resultSummary, at));
    this.updateMany = this.db.transaction((planId, updates, at) => updates.map((u) => this.applyUpdate(planId, u.taskId, u.status, u.resultSummary, at)));
  }

  close(): void {
    this.db.close();
  }

  /** A prepared statement, compiled once per SQL text: preparing on every call cost more than the write. */
  private stmt(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** Insert a plan with every task `ready`; false when plan_id is taken. */
  insertPlan(planId: string, template: PlanTemplate, runTaskId: string | null = null): boolean {
    const at = this.now().toISOString();
    const insert = this.db.transaction(() => {
      if (this.stmt("SELECT 1 FROM plans WHERE plan_id = ?").get(planId)) return false;
      this.stmt(
        "INSERT INTO plans (plan_id, name, description, workflow_template_source, status, revision, unsettled, failed_required, run_task_id, created_at, updated_at) VALUES (?, ?, ?, ?, 'running', 0, ?, 0, ?, ?, ?)",
      ).run(
        planId,
        template.name,
        template.description,
        template.workflow_template_source,
        template.steps.reduce((n, s) => n + s.tasks.length, 0),
        runTaskId,
        at,
        at,
      );
      const step = this.stmt("INSERT INTO plan_steps (plan_id, step_id, position, name, description) VALUES (?, ?, ?, ?, ?)");
      const task = this.stmt(
        "INSERT INTO plan_tasks (plan_id, task_id, step_id, position, name, assignee, description, optional, status, result_summary, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'ready', NULL, ?)",
      );
      let position = 0;
      template.steps.forEach((s, i) => {
        step.run(planId, s.step_id, i, s.name, s.description);
        for (const t of s.tasks) {
          task.run(planId, t.task_id, s.step_id, position++, t.name, t.assignee, t.description, t.optional ? 1 : 0, at);
        }
      });
      return true;
    });
    return insert.immediate();
  }

  getTask(planId: string, taskId: string): TaskInfo | null {
    const row = this.stmt(`SELECT ${TASK_COLUMNS} FROM plan_tasks WHERE plan_id = ? AND task_id = ?`).get(planId, taskId) as TaskRow | undefined;
    return row ? toTask(row) : null;
  }

  /** Tasks of a plan in workflow order, optionally filtered; null when the plan is unknown. */
  listTasks(planId: string, filter: { status?: TaskStatus; assignee?: string } = {}): TaskInfo[] | null {
    if (!this.planRow(planId)) return null;
    const where = ["plan_id = ?"];
    const params: string[] = [planId];
    if (filter.status) {
      where.push("status = ?");
      params.push(filter.status);
    }
    if (filter.assignee !== undefined) {
      where.push("assignee = ?");
      params.push(filter.assignee);
    }
    const rows = this.stmt(`SELECT ${TASK_COLUMNS} FROM plan_tasks WHERE ${where.join(" AND ")} ORDER BY position`).all(...params) as TaskRow[];
    return rows.map(toTask);
  }

  /**
   * Check and apply one transition, then re-derive the plan status, all in
   * one immediate transaction. A completed plan is closed: it takes no more
   * updates. `result_summary` undefined keeps the previous summary.
   */
  updateTaskStatus(planId: string, taskId: string, status: TaskStatus, resultSummary?: string): UpdateOutcome {
    return this.update.immediate(planId, taskId, status, resultSummary, this.now().toISOString());
  }

  /** Updates queued together (src/plan/plan-tool.ts), applied in order in one immediate transaction: one commit. */
  updateTaskStatuses(planId: string, updates: readonly TaskUpdate[]): UpdateOutcome[] {
    return this.updateMany.immediate(planId, updates, this.now().toISOString());
  }

  private applyUpdate(planId: string, taskId: string, status: TaskStatus, resultSummary: string | undefined, at: string): UpdateOutcome {
    // The plan's counters and the task's state in one read: a fifth of an update's time was the whole plan row.
    const row = this.updateRead.get(taskId, planId) as UpdateRead | undefined;
    if (!row) return { ok: false, error: `unknown plan ${planId}` };
    const plan = { status: row.plan_status, unsettled: row.unsettled, failed_required: row.failed_required };
    const task = row.task_status === null ? undefined : { status: row.task_status, optional: row.optional === 1 };
    const checked = checkUpdate(planId, plan, taskId, task, status);
    if (!checked.ok) return checked;
    this.stmt("UPDATE plan_tasks SET status = ?, result_summary = COALESCE(?, result_summary), updated_at = ? WHERE plan_id = ? AND task_id = ?").run(
      status,
      resultSummary ?? null,
      at,
      planId,
      taskId,
    );
    const { after } = checked;
    this.stmt("UPDATE plans SET status = ?, revision = revision + 1, unsettled = ?, failed_required = ?, updated_at = ? WHERE plan_id = ?").run(
      after.status,
      after.unsettled,
      after.failed_required,
      at,
      planId,
    );
    return { ok: true, change: checked.change };
  }

  getPlanStatus(planId: string): PlanStatus | null {
    return this.planRow(planId)?.status ?? null;
  }

  /** The whole plan with step statuses derived from their tasks; null when unknown. */
  getPlan(planId: string): PlanInstance | null {
    const read = this.db.transaction((): PlanInstance | null => {
      const plan = this.planRow(planId);
      if (!plan) return null;
      const steps = this.stmt("SELECT step_id, name, description FROM plan_steps WHERE plan_id = ? ORDER BY position").all(planId) as {
        step_id: string;
        name: string;
        description: string;
      }[];
      const tasks = this.listTasks(planId) ?? [];
      const stepInfos: StepInfo[] = steps.map((s) => {
        const own = tasks.filter((t) => t.step_id === s.step_id);
        return { ...s, status: derivePlanStatus(own), tasks: own };
      });
      return {
        plan_id: plan.plan_id,
        name: plan.name,
        description: plan.description,
        workflow_template_source: plan.workflow_template_source,
        status: plan.status,
        revision: plan.revision,
        run_task_id: plan.run_task_id,
        created_at: plan.created_at,
        updated_at: plan.updated_at,
        steps: stepInfos,
      };
    });
    return read.deferred();
  }

  deletePlan(planId: string): boolean {
    return this.stmt("DELETE FROM plans WHERE plan_id = ?").run(planId).changes > 0;
  }

  /** Every plan, newest first. */
  listPlans(): PlanSummary[] {
    return this.stmt(
      `SELECT p.plan_id, p.name, p.workflow_template_source, p.status, p.run_task_id, p.created_at, p.updated_at,
                COUNT(t.task_id) AS tasks_total,
                COALESCE(SUM(t.status IN ('completed', 'skipped')), 0) AS tasks_done
           FROM plans p LEFT JOIN plan_tasks t ON t.plan_id = p.plan_id
          GROUP BY p.plan_id ORDER BY p.created_at DESC, p.plan_id`,
    ).all() as PlanSummary[];
  }

  /** The revision counter: the number of accepted status changes. */
  getRevision(planId: string): number | null {
    return this.planRow(planId)?.revision ?? null;
  }

  private planRow(planId: string): PlanRow | undefined {
    return this.stmt("SELECT * FROM plans WHERE plan_id = ?").get(planId) as PlanRow | undefined;
  }
}

function toTask(row: TaskRow): TaskInfo {
  return { ...row, optional: row.optional === 1 };
}
