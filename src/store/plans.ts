/**
 * The plans of a store: the rows both adapters keep (SQLite,
 * src/store/sqlite/plan-store.ts; PostgreSQL, src/store/postgres/plan-store.ts),
 * behind the port the Plan Tool declares (src/plan/storage.ts).
 */
import type { PlanStatus } from "../plan/types.js";

export type { PlanStorage, TaskUpdate, UpdateOutcome } from "../plan/storage.js";

/** A row of the `plans` table, as SQLite and PostgreSQL return it. */
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
