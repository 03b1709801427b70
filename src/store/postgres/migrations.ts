/**
 * The PostgreSQL schema, as numbered migrations applied in order on start
 * (docs/scale-out.md#migrations). Each runs in its own transaction under an
 * advisory lock, so processes starting together apply it once; a database
 * migrated by a newer runtime is refused rather than written wrongly.
 */
import type pg from "pg";
import { RuntimeError } from "../../errors.js";
import { SCHEMA, transaction } from "./connect.js";

interface Migration {
  version: number;
  name: string;
  sql: string;
}

const S = SCHEMA;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "runs, events, journal, approvals",
    sql: `
CREATE TABLE ${S}.events (
  task_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  step_id TEXT,
  parent_step_id TEXT,
  trace_id TEXT,
  ts TEXT NOT NULL,
  json TEXT NOT NULL,
  PRIMARY KEY (task_id, seq)
);
CREATE INDEX events_trace_id ON ${S}.events (trace_id) WHERE trace_id IS NOT NULL;
CREATE TABLE ${S}.runs (
  task_id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  input TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  result_type TEXT,
  answer TEXT,
  error TEXT,
  usage_json TEXT
);
CREATE INDEX runs_started ON ${S}.runs (started_at);
CREATE TABLE ${S}.run_agents (
  agent_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  started_at TEXT NOT NULL,
  PRIMARY KEY (agent_id, task_id)
);
CREATE TABLE ${S}.journal (
  task_id TEXT NOT NULL,
  key TEXT NOT NULL,
  kind TEXT NOT NULL,
  ts TEXT NOT NULL,
  json TEXT NOT NULL,
  PRIMARY KEY (task_id, key)
);
CREATE TABLE ${S}.approvals (
  task_id TEXT NOT NULL,
  key TEXT NOT NULL,
  decision TEXT NOT NULL,
  reason TEXT,
  ts TEXT NOT NULL,
  PRIMARY KEY (task_id, key)
);`,
  },
  {
    version: 2,
    name: "queued runs and their leases",
    sql: `
CREATE TABLE ${S}.run_requests (
  task_id TEXT PRIMARY KEY,
  team TEXT NOT NULL,
  request_json TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done')),
  worker_id TEXT,
  lease_until TIMESTAMPTZ,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  started_at TIMESTAMPTZ,
  finished_at TIMESTAMPTZ,
  result_type TEXT
);
CREATE INDEX run_requests_lease ON ${S}.run_requests (lease_until) WHERE state = 'running';
CREATE INDEX run_requests_state ON ${S}.run_requests (state);`,
  },
  {
    version: 3,
    name: "Plan Tool plans and todo sessions",
    sql: `
CREATE TABLE ${S}.plans (
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
CREATE TABLE ${S}.plan_steps (
  plan_id TEXT NOT NULL REFERENCES ${S}.plans(plan_id) ON DELETE CASCADE,
  step_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL,
  PRIMARY KEY (plan_id, step_id)
);
CREATE TABLE ${S}.plan_tasks (
  plan_id TEXT NOT NULL REFERENCES ${S}.plans(plan_id) ON DELETE CASCADE,
  task_id TEXT NOT NULL,
  step_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  name TEXT NOT NULL,
  assignee TEXT NOT NULL,
  description TEXT NOT NULL,
  optional BOOLEAN NOT NULL,
  status TEXT NOT NULL,
  result_summary TEXT,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (plan_id, task_id)
);
CREATE INDEX plan_tasks_by_assignee ON ${S}.plan_tasks (plan_id, assignee, status);
CREATE TABLE ${S}.todo_sessions (
  session_id TEXT PRIMARY KEY,
  schema_version INTEGER NOT NULL,
  version INTEGER NOT NULL,
  state TEXT NOT NULL,
  updated_at TEXT NOT NULL
);`,
  },
  {
    version: 4,
    name: "conversations: runs by session, their turns and summaries",
    sql: `
CREATE TABLE ${S}.run_sessions (
  session_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  started_at TEXT NOT NULL,
  PRIMARY KEY (session_id, task_id)
);
CREATE TABLE ${S}.session_turns (
  session_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  task_id TEXT NOT NULL,
  input TEXT NOT NULL,
  answer TEXT NOT NULL,
  ts TEXT NOT NULL,
  PRIMARY KEY (session_id, position)
);
CREATE TABLE ${S}.session_summaries (
  session_id TEXT PRIMARY KEY,
  summary TEXT NOT NULL,
  through INTEGER NOT NULL,
  updated_at TEXT NOT NULL
);`,
  },
  {
    version: 5,
    // Runs stored before it have none: only an admin caller sees them (docs/security.md#who-can-reach-what).
    name: "the caller who started a run (run.started.caller)",
    sql: `
ALTER TABLE ${S}.runs ADD COLUMN caller TEXT;
CREATE INDEX runs_caller ON ${S}.runs (caller, started_at);`,
  },
  {
    version: 6,
    name: "attachment bytes by hash (docs/attachments.md)",
    sql: `
CREATE TABLE ${S}.attachments (
  sha256 TEXT PRIMARY KEY,
  media_type TEXT NOT NULL,
  size INTEGER NOT NULL,
  data BYTEA NOT NULL
);`,
  },
];

export const LATEST_VERSION = MIGRATIONS.at(-1)?.version ?? 0;

/** An arbitrary constant: the advisory lock the migrating process holds. */
const LOCK = 727_113_001;

/** Bring the database to the latest schema; refuse one a newer runtime migrated. */
export async function migrate(pool: pg.Pool): Promise<void> {
  await transaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [LOCK]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${S}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${S}.migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ version: number | null }>(`SELECT MAX(version) AS version FROM ${S}.migrations`);
    const current = rows[0]?.version ?? 0;
    if (current > LATEST_VERSION) {
      throw new RuntimeError("STORE", `the database has schema version ${current}, newer than this runtime supports (${LATEST_VERSION}): upgrade the runtime`);
    }
    for (const m of MIGRATIONS) {
      if (m.version <= current) continue;
      await client.query(m.sql);
      await client.query(`INSERT INTO ${S}.migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
    }
    await indexAssigneesWithoutStatus(client);
  });
}

/**
 * Plan tasks are indexed by assignee without their status, which every update
 * changes (each update wrote a new index entry: docs/plan-tool.md#concurrency-and-durability).
 * Migration 1 made the index with status; it is replaced here, once, under the
 * migrations' lock. An index only, which older runtimes read as well, so no
 * numbered migration: a runtime of an earlier release still opens the database.
 */
async function indexAssigneesWithoutStatus(client: pg.PoolClient): Promise<void> {
  const { rows } = await client.query<{ indexdef: string }>("SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'plan_tasks_by_assignee'", [
    S,
  ]);
  const found = rows[0]?.indexdef;
  if (found !== undefined && !/\bstatus\b/.test(found)) return;
  await client.query(`DROP INDEX IF EXISTS ${S}.plan_tasks_by_assignee`);
  await client.query(`CREATE INDEX plan_tasks_by_assignee ON ${S}.plan_tasks (plan_id, assignee)`);
}
