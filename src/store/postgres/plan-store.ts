/**
 * Plan Tool plans on PostgreSQL (docs/scale-out.md#stores): the tables of
 * the SQLite plan store (src/store/sqlite/plan-store.ts) in the `runtime` schema. An
 * update locks its plan's row (`SELECT ... FOR UPDATE`) for the length of
 * its transaction, so writers on any number of machines apply their checks
 * and changes one after the other and the plan's counters stay exact; the
 * updates a process queued together share one transaction of four statements.
 */
import type pg from "pg";
import { checkUpdate, derivePlanStatus, type PlanCounters } from "../../plan/transitions.js";
import type { PlanRow, PlanStorage, TaskUpdate, UpdateOutcome } from "../plans.js";
import type { PlanInstance, PlanStatus, PlanSummary, PlanTemplate, TaskInfo, TaskStatus } from "../../plan/types.js";
import { SCHEMA as S, safeUrl, storeError, transaction } from "./connect.js";

const TASK_COLUMNS = "task_id, step_id, name, assignee, description, optional, status, result_summary, updated_at";

export class PostgresPlanStore implements PlanStorage {
  readonly location: string;

  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.location = safeUrl(url);
  }

  insertPlan(planId: string, template: PlanTemplate, runTaskId: string | null = null): Promise<boolean> {
    const at = this.now().toISOString();
    return this.guard("cannot create plan", () =>
      transaction(this.pool, async (client) => {
        const total = template.steps.reduce((n, s) => n + s.tasks.length, 0);
        const inserted = await client.query(
          `INSERT INTO ${S}.plans (plan_id, name, description, workflow_template_source, status, revision, unsettled, failed_required, run_task_id, created_at, updated_at)
           VALUES ($1, $2, $3, $4, 'running', 0, $5, 0, $6, $7, $7) ON CONFLICT (plan_id) DO NOTHING`,
          [planId, template.name, template.description, template.workflow_template_source, total, runTaskId, at],
        );
        if (inserted.rowCount === 0) return false;
        const steps = template.steps;
        await client.query(
          `INSERT INTO ${S}.plan_steps (plan_id, step_id, position, name, description)
           SELECT $1, * FROM unnest($2::text[], $3::int[], $4::text[], $5::text[])`,
          [planId, steps.map((s) => s.step_id), steps.map((_, i) => i), steps.map((s) => s.name), steps.map((s) => s.description)],
        );
        const tasks = steps.flatMap((s) => s.tasks.map((t) => ({ ...t, step_id: s.step_id })));
        await client.query(
          `INSERT INTO ${S}.plan_tasks (plan_id, task_id, step_id, position, name, assignee, description, optional, status, result_summary, updated_at)
           SELECT $1, t.task_id, t.step_id, t.position, t.name, t.assignee, t.description, t.optional, 'ready', NULL, $9
             FROM unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::bool[])
                  AS t(task_id, step_id, position, name, assignee, description, optional)`,
          [
            planId,
            tasks.map((t) => t.task_id),
            tasks.map((t) => t.step_id),
            tasks.map((_, i) => i),
            tasks.map((t) => t.name),
            tasks.map((t) => t.assignee),
            tasks.map((t) => t.description),
            tasks.map((t) => t.optional === true),
            at,
          ],
        );
        return true;
      }),
    );
  }

  getTask(planId: string, taskId: string): Promise<TaskInfo | null> {
    return this.guard("cannot read plan", async () => {
      const { rows } = await this.pool.query<TaskInfo>(`SELECT ${TASK_COLUMNS} FROM ${S}.plan_tasks WHERE plan_id = $1 AND task_id = $2`, [planId, taskId]);
      return rows[0] ?? null;
    });
  }

  listTasks(planId: string, filter: { status?: TaskStatus; assignee?: string } = {}): Promise<TaskInfo[] | null> {
    return this.guard("cannot read plan", () => this.tasksOf(this.pool, planId, filter));
  }

  /** One update is a batch of one: the same four statements. */
  async updateTaskStatus(planId: string, taskId: string, status: TaskStatus, resultSummary?: string): Promise<UpdateOutcome> {
    const [outcome] = await this.updateTaskStatuses(planId, [{ taskId, status, resultSummary }]);
    return outcome!;
  }

  /**
   * Updates queued together (src/plan/plan-tool.ts), one commit: the plan's
   * row is locked, the tasks read, every update checked in order here as if
   * alone, and the accepted ones written in two statements, so the lock is
   * held for a fixed number of round trips whatever the batch's size.
   */
  updateTaskStatuses(planId: string, updates: readonly TaskUpdate[]): Promise<UpdateOutcome[]> {
    const at = this.now().toISOString();
    return this.guard("cannot update plan", () =>
      transaction(this.pool, async (client) => {
        const plan = (await client.query<PlanRow>(`SELECT * FROM ${S}.plans WHERE plan_id = $1 FOR UPDATE`, [planId])).rows[0];
        if (!plan) return updates.map((): UpdateOutcome => ({ ok: false, error: `unknown plan ${planId}` }));
        const ids = [...new Set(updates.map((u) => u.taskId))];
        const rows = (
          await client.query<{ task_id: string; status: TaskStatus; optional: boolean }>(
            `SELECT task_id, status, optional FROM ${S}.plan_tasks WHERE plan_id = $1 AND task_id = ANY($2::text[])`,
            [planId, ids],
          )
        ).rows;
        const tasks = new Map(rows.map((r) => [r.task_id, { status: r.status, optional: r.optional }]));
        const written = new Map<string, { status: TaskStatus; summary: string | undefined }>();
        let counters: PlanCounters = { status: plan.status, unsettled: plan.unsettled, failed_required: plan.failed_required };
        let accepted = 0;
        const outcomes = updates.map((u): UpdateOutcome => {
          const task = tasks.get(u.taskId);
          const checked = checkUpdate(planId, counters, u.taskId, task, u.status);
          if (!checked.ok) return checked;
          counters = checked.after;
          task!.status = u.status;
          written.set(u.taskId, { status: u.status, summary: u.resultSummary ?? written.get(u.taskId)?.summary });
          accepted++;
          return { ok: true, change: checked.change };
        });
        if (accepted === 0) return outcomes;
        const changed = [...written];
        await client.query(
          `UPDATE ${S}.plan_tasks AS t SET status = u.status, result_summary = COALESCE(u.summary, t.result_summary), updated_at = $5
             FROM unnest($2::text[], $3::text[], $4::text[]) AS u(task_id, status, summary)
            WHERE t.plan_id = $1 AND t.task_id = u.task_id`,
          [planId, changed.map(([id]) => id), changed.map(([, w]) => w.status), changed.map(([, w]) => w.summary ?? null), at],
        );
        await client.query(
          `UPDATE ${S}.plans SET status = $1, revision = revision + $2, unsettled = $3, failed_required = $4, updated_at = $5 WHERE plan_id = $6`,
          [counters.status, accepted, counters.unsettled, counters.failed_required, at, planId],
        );
        return outcomes;
      }),
    );
  }

  getPlanStatus(planId: string): Promise<PlanStatus | null> {
    return this.guard("cannot read plan", async () => {
      const { rows } = await this.pool.query<{ status: PlanStatus }>(`SELECT status FROM ${S}.plans WHERE plan_id = $1`, [planId]);
      return rows[0]?.status ?? null;
    });
  }

  getPlan(planId: string): Promise<PlanInstance | null> {
    return this.guard("cannot read plan", () =>
      // One snapshot: the plan, its steps and its tasks as of one instant.
      transaction(this.pool, async (client) => {
        await client.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY");
        const plan = (await client.query<PlanRow>(`SELECT * FROM ${S}.plans WHERE plan_id = $1`, [planId])).rows[0];
        if (!plan) return null;
        const steps = (
          await client.query<{ step_id: string; name: string; description: string }>(
            `SELECT step_id, name, description FROM ${S}.plan_steps WHERE plan_id = $1 ORDER BY position`,
            [planId],
          )
        ).rows;
        const tasks = (await this.tasksOf(client, planId, {})) ?? [];
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
          steps: steps.map((s) => {
            const own = tasks.filter((t) => t.step_id === s.step_id);
            return { ...s, status: derivePlanStatus(own), tasks: own };
          }),
        };
      }),
    );
  }

  deletePlan(planId: string): Promise<boolean> {
    return this.guard("cannot delete plan", async () => ((await this.pool.query(`DELETE FROM ${S}.plans WHERE plan_id = $1`, [planId])).rowCount ?? 0) > 0);
  }

  listPlans(): Promise<PlanSummary[]> {
    return this.guard("cannot list plans", async () => {
      const { rows } = await this.pool.query<PlanSummary>(
        `SELECT p.plan_id, p.name, p.workflow_template_source, p.status, p.run_task_id, p.created_at, p.updated_at,
                COUNT(t.task_id)::int AS tasks_total,
                COALESCE(SUM(CASE WHEN t.status IN ('completed', 'skipped') THEN 1 ELSE 0 END), 0)::int AS tasks_done
           FROM ${S}.plans p LEFT JOIN ${S}.plan_tasks t ON t.plan_id = p.plan_id
          GROUP BY p.plan_id ORDER BY p.created_at DESC, p.plan_id`,
      );
      return rows;
    });
  }

  /** The pool is the store's; closing it is the store's business. */
  close(): void {}

  private async tasksOf(db: pg.Pool | pg.PoolClient, planId: string, filter: { status?: TaskStatus; assignee?: string }): Promise<TaskInfo[] | null> {
    const where = ["plan_id = $1"];
    const params: string[] = [planId];
    if (filter.status) {
      params.push(filter.status);
      where.push(`status = $${params.length}`);
    }
    if (filter.assignee !== undefined) {
      params.push(filter.assignee);
      where.push(`assignee = $${params.length}`);
    }
    const [exists, tasks] = await Promise.all([
      db.query(`SELECT 1 FROM ${S}.plans WHERE plan_id = $1`, [planId]),
      db.query<TaskInfo>(`SELECT ${TASK_COLUMNS} FROM ${S}.plan_tasks WHERE ${where.join(" AND ")} ORDER BY position`, params),
    ]);
    return exists.rowCount ? tasks.rows : null;
  }

  private async guard<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw storeError(this.url, what, err);
    }
  }
}
