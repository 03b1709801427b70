/**
 * The durable side of the Plan Tool: plans in SQLite (`<traceDir>/plans.db`,
 * WAL). Every write runs in a `BEGIN IMMEDIATE` transaction, so a second
 * process writing the same file waits for the lock instead of interleaving
 * its read-check-write with ours.
 */
import Database from "better-sqlite3";
import { RuntimeError } from "../errors.js";
import type { PlanStorage, TaskUpdate, UpdateOutcome } from "./storage.js";
import { checkUpdate, derivePlanStatus } from "./transitions.js";
import type {
  PlanInstance,
  PlanStatus,
  PlanSummary,
  PlanTemplate,
  StepInfo,
  TaskInfo,
  TaskStatus,
} from "./types.js";

/**
 * Version of the tables below; bumped with a migration when they change.
 * 2: plans carry `unsettled` and `failed_required` counters, so an update
 * re-derives the plan status in O(1) instead of scanning every task.
 * 3: plans carry `run_task_id`, the run that created them (null for older plans).
 */
export const PLAN_SCHEMA_VERSION = 3;

const DDL = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plans (
  plan_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  description TEXT NOT NULL,
  workflow_template_source TEXT NOT NULL,
  status TEXT NOT NULL,
  revision INTEGER NOT NULL DEFAULT 0,
  unsettled INTEGER NOT NULL DEFAULT 0,
  failed_required INTEGER NOT NULL DEFAULT 0,
  run_task_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS plan_steps (
  plan_id TEXT NOT NULL REFERENCES plans(plan_id) ON DELETE CASCADE,
  step_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL,
  PRIMARY KEY (plan_id, step_id)
);
CREATE TABLE IF NOT EXISTS plan_tasks (
  plan_id TEXT NOT NULL REFERENCES plans(plan_id) ON DELETE CASCADE,
  task_id TEXT NOT NULL,
  step_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  name TEXT NOT NULL,
  assignee TEXT NOT NULL,
  description TEXT NOT NULL,
  optional INTEGER NOT NULL,
  status TEXT NOT NULL,
  result_summary TEXT,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (plan_id, task_id)
);
-- Without status, which every update changes (\`migrate\` replaces the index of older files that held it).
CREATE INDEX IF NOT EXISTS plan_tasks_by_assignee ON plan_tasks (plan_id, assignee);
`;

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

/** A row of the `plans` table, as SQLite and PostgreSQL (src/store/postgres/plan-store.ts) return it. */
export interface PlanRow {
  plan_id: string;
  name: string;
  description: string;
  workflow_template_source: string;
  status: PlanStatus;
  revision: number;
  unsettled: number;
  failed_required: number;
  run_task_id: string | null;
  created_at: string;
  updated_at: string;
}

export type { UpdateOutcome } from "./storage.js";

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
  private readonly update: Database.Transaction<(planId: string, taskId: string, status: TaskStatus, resultSummary: string | undefined, at: string) => UpdateOutcome>;
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
    this.migrate();
    this.updateRead = this.db.prepare(
      `SELECT p.status AS plan_status, p.unsettled, p.failed_required, t.status AS task_status, t.optional
         FROM plans p LEFT JOIN plan_tasks t ON t.plan_id = p.plan_id AND t.task_id = ?
        WHERE p.plan_id = ?`,
    );
    this.update = this.db.transaction((planId, taskId, status, resultSummary, at) => this.applyUpdate(planId, taskId, status, resultSummary, at));
    this.updateMany = this.db.transaction((planId, updates, at) =>
      updates.map((u) => this.applyUpdate(planId, u.taskId, u.status, u.resultSummary, at)),
    );
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
        )
        .run(
          planId,
          template.name,
          template.description,
          template.workflow_template_source,
          template.steps.reduce((n, s) => n + s.tasks.length, 0),
          runTaskId,
          at,
          at,
        );
      const step = this.stmt(
        "INSERT INTO plan_steps (plan_id, step_id, position, name, description) VALUES (?, ?, ?, ?, ?)",
      );
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
    const row = this.stmt(`SELECT ${TASK_COLUMNS} FROM plan_tasks WHERE plan_id = ? AND task_id = ?`)
      .get(planId, taskId) as TaskRow | undefined;
    return row ? toTask(row) : null;
  }

  /** Tasks of a plan in workflow order, optionally filtered; null when the plan is unknown. */
  listTasks(planId: string, filter: { status?: TaskStatus; assignee?: string } = {}): TaskInfo[] | null {
    if (!this.planRow(planId)) return null;
    const where = ["plan_id = ?"];
    const params: string[] = [planId];
    if (filter.status) where.push("status = ?"), params.push(filter.status);
    if (filter.assignee !== undefined) where.push("assignee = ?"), params.push(filter.assignee);
    const rows = this.stmt(`SELECT ${TASK_COLUMNS} FROM plan_tasks WHERE ${where.join(" AND ")} ORDER BY position`)
      .all(...params) as TaskRow[];
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
    this.stmt(
      "UPDATE plan_tasks SET status = ?, result_summary = COALESCE(?, result_summary), updated_at = ? WHERE plan_id = ? AND task_id = ?",
    )
      .run(status, resultSummary ?? null, at, planId, taskId);
    const { after } = checked;
    this.stmt(
      "UPDATE plans SET status = ?, revision = revision + 1, unsettled = ?, failed_required = ?, updated_at = ? WHERE plan_id = ?",
    )
      .run(after.status, after.unsettled, after.failed_required, at, planId);
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
      const steps = this.stmt("SELECT step_id, name, description FROM plan_steps WHERE plan_id = ? ORDER BY position")
        .all(planId) as { step_id: string; name: string; description: string }[];
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
      )
      .all() as PlanSummary[];
  }

  /** The revision counter: the number of accepted status changes. */
  getRevision(planId: string): number | null {
    return this.planRow(planId)?.revision ?? null;
  }

  private planRow(planId: string): PlanRow | undefined {
    return this.stmt("SELECT * FROM plans WHERE plan_id = ?").get(planId) as PlanRow | undefined;
  }

  private migrate(): void {
    const upgrade = this.db.transaction(() => {
      this.db.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      const row = this.stmt("SELECT value FROM meta WHERE key = 'schema_version'").get() as
        | { value: string }
        | undefined;
      const version = row ? Number(row.value) : undefined;
      if (version !== undefined && version > PLAN_SCHEMA_VERSION) {
        throw new RuntimeError(
          "USAGE",
          `${this.file} holds plans of schema_version ${row?.value}; this runtime reads up to ${PLAN_SCHEMA_VERSION}`,
        );
      }
      if (version === 1) migrateV1toV2(this.db);
      if (version !== undefined && version < 3) this.db.exec("ALTER TABLE plans ADD COLUMN run_task_id TEXT");
      dropAssigneeIndexWithStatus(this.db);
      this.db.exec(DDL);
      this.stmt("INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
        .run(String(PLAN_SCHEMA_VERSION));
    });
    upgrade.immediate();
  }
}

/**
 * The index of tasks by assignee used to hold their status too, which every
 * update changes: each update rewrote the task's entry in the index as well,
 * three pages a commit instead of two
 * (docs/plan-tool.md#concurrency-and-durability). Dropped here so that the
 * DDL makes it anew without status. An index only, which older runtimes read
 * as well: the schema version stays, and a file upgraded so still opens with
 * them.
 */
function dropAssigneeIndexWithStatus(db: Database.Database): void {
  const index = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'plan_tasks_by_assignee'").get() as
    | { sql: string | null }
    | undefined;
  if (index?.sql && /\bstatus\b/.test(index.sql)) db.exec("DROP INDEX plan_tasks_by_assignee");
}

/** v1 → v2: add the status counters and fill them from the tasks. */
function migrateV1toV2(db: Database.Database): void {
  db.exec(`
    ALTER TABLE plans ADD COLUMN unsettled INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE plans ADD COLUMN failed_required INTEGER NOT NULL DEFAULT 0;
    UPDATE plans SET
      unsettled = (SELECT COUNT(*) FROM plan_tasks t WHERE t.plan_id = plans.plan_id AND t.status IN ('ready', 'inprogress')),
      failed_required = (SELECT COUNT(*) FROM plan_tasks t WHERE t.plan_id = plans.plan_id AND t.status = 'error' AND t.optional = 0);
  `);
}

function toTask(row: TaskRow): TaskInfo {
  return { ...row, optional: row.optional === 1 };
}
