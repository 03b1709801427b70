/**
 * The schema of `plans.db` (src/store/sqlite/plan-store.ts) as migrations
 * (src/store/sqlite/schema.ts); PostgreSQL has the same tables
 * (src/store/postgres/migrations.ts).
 */
import type Database from "better-sqlite3";
import { latestVersion, type Schema } from "./schema.js";

export const PLAN_SCHEMA: Schema = {
  migrations: [
    {
      version: 1,
      name: "plans, their steps and tasks",
      up: (db) =>
        db.exec(`
CREATE TABLE plans (
  plan_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  description TEXT NOT NULL,
  workflow_template_source TEXT NOT NULL,
  status TEXT NOT NULL,
  revision INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE plan_steps (
  plan_id TEXT NOT NULL REFERENCES plans(plan_id) ON DELETE CASCADE,
  step_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL,
  PRIMARY KEY (plan_id, step_id)
);
CREATE TABLE plan_tasks (
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
CREATE INDEX plan_tasks_by_assignee ON plan_tasks (plan_id, assignee);`),
    },
    {
      // An update re-derives the plan status in O(1) from the counters instead of scanning every task.
      version: 2,
      name: "plan status counters",
      up: (db) =>
        db.exec(`
ALTER TABLE plans ADD COLUMN unsettled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE plans ADD COLUMN failed_required INTEGER NOT NULL DEFAULT 0;
UPDATE plans SET
  unsettled = (SELECT COUNT(*) FROM plan_tasks t WHERE t.plan_id = plans.plan_id AND t.status IN ('ready', 'inprogress')),
  failed_required = (SELECT COUNT(*) FROM plan_tasks t WHERE t.plan_id = plans.plan_id AND t.status = 'error' AND t.optional = 0);`),
    },
    {
      version: 3,
      name: "the run that created a plan (null for older plans)",
      up: (db) => db.exec("ALTER TABLE plans ADD COLUMN run_task_id TEXT"),
    },
  ],
  indexes: [
    {
      /**
       * The index of tasks by assignee used to hold their status too, which
       * every update changes: each update rewrote the task's entry in the index
       * as well, three pages a commit instead of two
       * (docs/plan-tool.md#concurrency-and-durability). An index only, which
       * older runtimes read as well: no schema version for it.
       */
      name: "tasks by assignee, without status",
      needed: (db: Database.Database) => {
        const index = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'plan_tasks_by_assignee'").get() as
          | { sql: string | null }
          | undefined;
        return index?.sql != null && /\bstatus\b/.test(index.sql);
      },
      build: (db: Database.Database) => db.exec("DROP INDEX plan_tasks_by_assignee; CREATE INDEX plan_tasks_by_assignee ON plan_tasks (plan_id, assignee);"),
    },
  ],
  tooNew: (file, found, supported) => `${file} holds plans of schema_version ${found}; this runtime reads up to ${supported}`,
};

/** The version of the tables this code writes. */
export const PLAN_SCHEMA_VERSION = latestVersion(PLAN_SCHEMA);
