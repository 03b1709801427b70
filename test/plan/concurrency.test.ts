import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlanTool, type TaskStatusEvent } from "../../src/plan/plan-tool.js";
import { openPlanFile } from "../../src/store/sqlite/store.js";
import { PlanStore } from "../../src/store/sqlite/plan-store.js";
import type { TaskStatus } from "../../src/plan/types.js";
import { child, compilePlanTool } from "../support/compile-plan-tool.js";
import { SAFETY_WORKFLOW, wideWorkflow } from "../support/workflows.js";

const run = promisify(execFile);

/** A child process that says "ready" on stderr once it has opened the plan, and prints its counts on stdout. */
function contender(args: string[], env: NodeJS.ProcessEnv): { ready: Promise<void>; done: Promise<{ stdout: string }> } {
  const proc = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  const ready = new Promise<void>((resolve, reject) => {
    proc.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes("ready\n")) resolve();
    });
    proc.once("exit", (code) => reject(new Error(`contender exited ${code} before it was ready: ${stderr}`)));
  });
  const done = new Promise<{ stdout: string }>((resolve, reject) =>
    proc.once("close", (code) => (code === 0 ? resolve({ stdout }) : reject(new Error(`contender exited ${code}: ${stderr}`)))),
  );
  return { ready, done };
}
let modulePath: string;
let buildDir: string;
let dir: string;

beforeAll(() => {
  ({ module: modulePath, dir: buildDir } = compilePlanTool());
  dir = mkdtempSync(join(tmpdir(), "plan-conc-"));
}, 60_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(buildDir, { recursive: true, force: true });
});

describe("1,000 concurrent update_task_status calls in one process", () => {
  it("lose no update across 1,000 tasks and leave the plan completed", async () => {
    const events: TaskStatusEvent[] = [];
    const tool = openPlanFile(join(dir, "wide.db"), { emit: (e) => events.push(e) });
    await tool.create_plan_from_structure("p", wideWorkflow(1000));
    events.length = 0;
    // Both transitions of every task are issued before any resolves: the per-plan queue keeps their order.
    const calls = Array.from({ length: 1000 }, (_, i) => [
      tool.update_task_status("p", `t${i + 1}`, "inprogress"),
      tool.update_task_status("p", `t${i + 1}`, "completed", `r${i + 1}`),
    ]).flat();
    const results = await Promise.all(calls);
    expect(results.filter(Boolean)).toHaveLength(2000);
    const plan = await tool.get_plan_structure("p");
    expect(plan?.revision).toBe(2000);
    expect(plan?.status).toBe("completed");
    const tasks = plan?.steps[0]?.tasks ?? [];
    expect(tasks.every((t, i) => t.status === "completed" && t.result_summary === `r${i + 1}`)).toBe(true);
    expect(events).toHaveLength(2000);
    expect(events.filter((e) => e.plan_status === "completed")).toHaveLength(1);
    expect(events.at(-1)?.plan_status).toBe("completed");
    await tool.close();
  });

  it("let exactly one of 1,000 racing calls win the same transition", async () => {
    const tool = openPlanFile(":memory:");
    await tool.create_plan_from_structure("p", SAFETY_WORKFLOW);
    const results = await Promise.all(Array.from({ length: 1000 }, (_, i) => tool.update_task_status("p", "t1", "inprogress", `claim ${i}`)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results.indexOf(true);
    expect(await tool.get_task("p", "t1")).toMatchObject({ status: "inprogress", result_summary: `claim ${winner}` });
    expect((await tool.get_plan_structure("p"))?.revision).toBe(1);
    await tool.close();
  });
});

describe("group commit", () => {
  /** A real store whose batches are counted. */
  function countingTool(file: string, options: { emit?: (e: TaskStatusEvent) => void } = {}) {
    const store = new PlanStore(file);
    const batches: number[] = [];
    const apply = store.updateTaskStatuses.bind(store);
    store.updateTaskStatuses = (planId, updates) => {
      batches.push(updates.length);
      return apply(planId, updates);
    };
    return { tool: new PlanTool(store, options), batches };
  }

  it("applies updates that arrive together in a few transactions of at most 256, each answered as if alone", async () => {
    const { tool, batches } = countingTool(join(dir, "group.db"));
    await tool.create_plan_from_structure("p", wideWorkflow(600));
    const calls = Array.from({ length: 600 }, (_, i) => [
      tool.update_task_status("p", `t${i + 1}`, "inprogress"),
      tool.update_task_status("p", `t${i + 1}`, "completed", `r${i + 1}`),
      tool.update_task_status("p", `t${i + 1}`, "ready"), // completed → ready is refused, the others stand
    ]).flat();
    const results = await Promise.all(calls);
    expect(results.filter((_, i) => i % 3 !== 2).every(Boolean)).toBe(true);
    expect(results.filter((_, i) => i % 3 === 2).some(Boolean)).toBe(false);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(1800);
    expect(Math.max(...batches)).toBe(256);
    expect(batches.length).toBe(Math.ceil(1800 / 256));
    const plan = await tool.get_plan_structure("p");
    expect(plan).toMatchObject({ status: "completed", revision: 1200 });
    // One at a time, each its own transaction (through updateTaskStatus: no batch).
    await tool.create_plan_from_structure("q", wideWorkflow(2));
    batches.length = 0;
    expect(await tool.update_task_status("q", "t1", "inprogress")).toBe(true);
    expect(await tool.update_task_status("q", "t1", "completed")).toBe(true);
    expect(batches).toEqual([]);
    expect((await tool.get_plan_structure("q"))?.revision).toBe(2);
    await tool.close();
  });

  it("keeps a deletion queued between updates in its place: the updates after it find no plan", async () => {
    const { tool } = countingTool(":memory:");
    await tool.create_plan_from_structure("p", wideWorkflow(3));
    const before = tool.update_task_status("p", "t1", "inprogress");
    const deleted = tool.delete_plan("p");
    const after = tool.updateTask("p", "t2", "inprogress");
    expect(await before).toBe(true);
    expect(await deleted).toBe(true);
    expect(await after).toEqual({ ok: false, error: "unknown plan p" });
    await tool.close();
  });

  it("a batch whose transaction fails runs again one update at a time: only the update at fault fails", async () => {
    const events: TaskStatusEvent[] = [];
    const { tool, batches } = countingTool(":memory:", { emit: (e) => events.push(e) });
    await tool.create_plan_from_structure("p", wideWorkflow(5));
    events.length = 0;
    // A summary SQLite cannot bind (the tools pass strings; a caller of the API might not).
    const poison = { not: "a string" } as unknown as string;
    const results = await Promise.allSettled([1, 2, 3, 4, 5].map((i) => tool.update_task_status("p", `t${i}`, "inprogress", i === 3 ? poison : `r${i}`)));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect(batches).toEqual([5]);
    expect(events.map((e) => e.plan_task_id)).toEqual(["t1", "t2", "t4", "t5"]);
    expect((await tool.get_task("p", "t3"))?.status).toBe("ready");
    expect((await tool.get_plan_structure("p"))?.revision).toBe(4);
    await tool.close();
  });

  it("no caller waits forever: a store answering the wrong number of outcomes, or throwing one by one", async () => {
    const store = new PlanStore(":memory:");
    const apply = store.updateTaskStatuses.bind(store);
    store.updateTaskStatuses = (planId, updates) => apply(planId, updates).slice(1);
    const tool = new PlanTool(store);
    await tool.create_plan_from_structure("p", wideWorkflow(3));
    const short = await Promise.allSettled([1, 2, 3].map((i) => tool.update_task_status("p", `t${i}`, "inprogress")));
    expect(short.map((r) => (r.status === "rejected" ? String(r.reason) : "fulfilled"))).toEqual(
      Array.from({ length: 3 }, () => "RuntimeError: the plan store answered 2 outcomes for 3 updates"),
    );
    // Without updateTaskStatuses, one transaction each: a throw fails its own call, the others stand.
    const single = new PlanStore(":memory:");
    const once = single.updateTaskStatus.bind(single);
    const storage = {
      location: single.location,
      insertPlan: single.insertPlan.bind(single),
      getTask: single.getTask.bind(single),
      listTasks: single.listTasks.bind(single),
      updateTaskStatus: (planId: string, taskId: string, status: TaskStatus, summary?: string) => {
        if (taskId === "t2") throw new Error("disk full");
        return once(planId, taskId, status, summary);
      },
      getPlanStatus: single.getPlanStatus.bind(single),
      getPlan: single.getPlan.bind(single),
      deletePlan: single.deletePlan.bind(single),
      listPlans: single.listPlans.bind(single),
      close: single.close.bind(single),
    };
    const plain = new PlanTool(storage);
    await plain.create_plan_from_structure("p", wideWorkflow(3));
    const each = await Promise.allSettled([1, 2, 3].map((i) => plain.update_task_status("p", `t${i}`, "inprogress")));
    expect(each.map((r) => (r.status === "rejected" ? String(r.reason) : r.value))).toEqual([true, "Error: disk full", true]);
    await tool.close();
    await plain.close();
  });

  it("a sink that throws fails its own call only; the batch is committed", async () => {
    const { tool } = countingTool(":memory:");
    await tool.create_plan_from_structure("p", wideWorkflow(3));
    const boom = () => {
      throw new Error("sink failed");
    };
    const [a, b, c] = await Promise.allSettled([
      tool.update_task_status("p", "t1", "inprogress"),
      tool.update_task_status("p", "t2", "inprogress", null, { emit: boom }),
      tool.update_task_status("p", "t3", "inprogress"),
    ]);
    expect(a).toEqual({ status: "fulfilled", value: true });
    expect(b).toMatchObject({ status: "rejected", reason: { message: "sink failed" } });
    expect(c).toEqual({ status: "fulfilled", value: true });
    expect((await tool.get_plan_structure("p"))?.revision).toBe(3);
    await tool.close();
  });
});

describe("several processes writing the same plans.db", () => {
  it.each([2, 4])(
    "%i processes racing over 1,000 tasks: each task won once, none lost",
    async (n) => {
      const file = join(dir, `multi-${n}.db`);
      const setup = openPlanFile(file);
      await setup.create_plan_from_structure("p", wideWorkflow(1000));
      // A fixed delay is no barrier on a loaded machine: start only once every child has opened the plan.
      const goFile = join(dir, `go-${n}`);
      const children = Array.from({ length: n }, (_, i) =>
        contender([child("contend.mjs"), modulePath, file, "p", "1000"], { ...process.env, REVERSE: String(i % 2), GO_FILE: goFile }),
      );
      await Promise.all(children.map((c) => c.ready));
      writeFileSync(goFile, "");
      const outputs = await Promise.all(children.map((c) => c.done));
      const counts = outputs.map((o) => JSON.parse(o.stdout) as { started: number; completed: number; first: number; last: number });
      expect(counts.reduce((sum, c) => sum + c.started, 0)).toBe(1000);
      expect(counts.every((c) => c.completed === c.started)).toBe(true);
      // The processes really ran at the same time: their working windows overlap.
      const latestFirst = Math.max(...counts.map((c) => c.first));
      const earliestLast = Math.min(...counts.map((c) => c.last));
      expect(latestFirst).toBeLessThan(earliestLast);
      const plan = await setup.get_plan_structure("p");
      expect(plan?.revision).toBe(2000);
      expect(plan?.status).toBe("completed");
      expect(plan?.steps[0]?.tasks.every((t) => t.status === "completed")).toBe(true);
      await setup.close();
    },
    120_000,
  );
});

describe("durability", () => {
  it("keeps a plan written by a process that was killed", async () => {
    const file = join(dir, "restart.db");
    await run(process.execPath, [child("crash.mjs"), modulePath, file, "p-restart", JSON.stringify(SAFETY_WORKFLOW)]).catch((err: { signal?: string }) => {
      if (err.signal !== "SIGKILL") throw err;
    });
    const tool = openPlanFile(file);
    expect(await tool.get_plan_status("p-restart")).toBe("running");
    expect(await tool.get_task("p-restart", "t1")).toMatchObject({ status: "completed", result_summary: "facts gathered" });
    expect(await tool.get_task("p-restart", "t3")).toMatchObject({ status: "error", result_summary: "reviewer unavailable" });
    // Work continues where the dead process left it: retry the failed task.
    expect(await tool.update_task_status("p-restart", "t3", "inprogress")).toBe(true);
    expect((await tool.get_plan_structure("p-restart"))?.revision).toBe(5);
    await tool.close();
  });

  it("refuses a database written by a newer schema_version", async () => {
    const file = join(dir, "future.db");
    const tool = openPlanFile(file);
    await tool.close();
    const { default: Database } = await import("better-sqlite3");
    const db = new Database(file);
    db.prepare("UPDATE meta SET value = '99' WHERE key = 'schema_version'").run();
    db.close();
    expect(() => openPlanFile(file)).toThrow(/schema_version 99; this runtime reads up to 3/);
  });

  it("upgrades a schema_version 2 database: its plans keep working, with no run recorded", async () => {
    const file = join(dir, "v2.db");
    const old = openPlanFile(file);
    await old.create_plan_from_structure("v2plan", SAFETY_WORKFLOW);
    await old.update_task_status("v2plan", "t1", "inprogress");
    await old.close();
    const { default: Database } = await import("better-sqlite3");
    const db = new Database(file);
    // Back to the v2 tables: no run_task_id column.
    db.exec("ALTER TABLE plans DROP COLUMN run_task_id; UPDATE meta SET value = '2' WHERE key = 'schema_version';");
    db.close();
    const tool = openPlanFile(file);
    expect(await tool.update_task_status("v2plan", "t1", "completed", "ok")).toBe(true);
    expect(await tool.get_plan_structure("v2plan")).toMatchObject({ revision: 2, run_task_id: null });
    expect((await tool.createPlan("v3plan", SAFETY_WORKFLOW, { run_task_id: "r1" })).ok).toBe(true);
    expect((await tool.list_plans()).map((p) => p.run_task_id).sort()).toEqual([null, "r1"].sort());
    await tool.close();
  });

  it("replaces the assignee index of an older file, which held the status; a role's tasks are still found by status", async () => {
    const file = join(dir, "old-index.db");
    const old = openPlanFile(file);
    await old.create_plan_from_structure("p", SAFETY_WORKFLOW);
    await old.update_task_status("p", "t1", "inprogress");
    await old.close();
    const { default: Database } = await import("better-sqlite3");
    const indexSql = (db: InstanceType<typeof Database>) =>
      (db.prepare("SELECT sql FROM sqlite_master WHERE name = 'plan_tasks_by_assignee'").get() as { sql: string }).sql;
    const db = new Database(file);
    expect(indexSql(db)).toMatch(/\(plan_id, assignee\)$/);
    // The index as earlier releases made it.
    db.exec("DROP INDEX plan_tasks_by_assignee; CREATE INDEX plan_tasks_by_assignee ON plan_tasks (plan_id, assignee, status);");
    db.close();
    const tool = openPlanFile(file);
    expect((await tool.get_tasks_for_role("p", "analyst")).map((t) => t.task_id)).toEqual(["t2"]);
    expect((await tool.get_tasks_for_role("p", "analyst", "inprogress")).map((t) => t.task_id)).toEqual(["t1"]);
    expect(await tool.update_task_status("p", "t1", "completed", "ok")).toBe(true);
    expect((await tool.get_tasks_for_role("p", "analyst", "completed")).map((t) => t.task_id)).toEqual(["t1"]);
    await tool.close();
    const check = new Database(file);
    expect(indexSql(check)).toMatch(/\(plan_id, assignee\)$/);
    // An earlier release opening the file runs its own DDL, which keeps the index as it is now.
    check.exec("CREATE INDEX IF NOT EXISTS plan_tasks_by_assignee ON plan_tasks (plan_id, assignee, status);");
    expect(indexSql(check)).toMatch(/\(plan_id, assignee\)$/);
    expect(check.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get()).toEqual({ value: "3" });
    check.close();
  });

  it("upgrades a schema_version 1 database and keeps deriving statuses from its tasks", async () => {
    const file = join(dir, "v1.db");
    const { default: Database } = await import("better-sqlite3");
    const db = new Database(file);
    // The v1 tables as shipped: no status counters on plans.
    db.exec(`
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO meta VALUES ('schema_version', '1');
      CREATE TABLE plans (plan_id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL,
        workflow_template_source TEXT NOT NULL, status TEXT NOT NULL, revision INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
      CREATE TABLE plan_steps (plan_id TEXT NOT NULL REFERENCES plans(plan_id) ON DELETE CASCADE, step_id TEXT NOT NULL,
        position INTEGER NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL, PRIMARY KEY (plan_id, step_id));
      CREATE TABLE plan_tasks (plan_id TEXT NOT NULL REFERENCES plans(plan_id) ON DELETE CASCADE, task_id TEXT NOT NULL,
        step_id TEXT NOT NULL, position INTEGER NOT NULL, name TEXT NOT NULL, assignee TEXT NOT NULL, description TEXT NOT NULL,
        optional INTEGER NOT NULL, status TEXT NOT NULL, result_summary TEXT, updated_at TEXT NOT NULL, PRIMARY KEY (plan_id, task_id));
      INSERT INTO plans VALUES ('old', 'Old', '', 'W', 'running', 3, '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z');
      INSERT INTO plan_steps VALUES ('old', 's1', 0, 'S', '');
      INSERT INTO plan_tasks VALUES
        ('old', 't1', 's1', 0, 'A', 'x', '', 0, 'error', 'broke', '2025-01-01T00:00:00.000Z'),
        ('old', 't2', 's1', 1, 'B', 'x', '', 0, 'inprogress', NULL, '2025-01-01T00:00:00.000Z'),
        ('old', 't3', 's1', 2, 'C', 'x', '', 1, 'ready', NULL, '2025-01-01T00:00:00.000Z');
    `);
    db.close();
    const tool = openPlanFile(file);
    expect(await tool.update_task_status("old", "t2", "completed")).toBe(true);
    expect(await tool.get_plan_status("old")).toBe("running");
    expect(await tool.update_task_status("old", "t3", "skipped")).toBe(true);
    expect(await tool.get_plan_status("old")).toBe("error");
    expect(await tool.update_task_status("old", "t1", "skipped", "gave up")).toBe(true);
    expect(await tool.get_plan_status("old")).toBe("completed");
    expect((await tool.get_plan_structure("old"))?.revision).toBe(6);
    expect((await tool.get_plan_structure("old"))?.run_task_id).toBeNull();
    await tool.close();
    const check = new Database(file);
    expect(check.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get()).toEqual({ value: "3" });
    check.close();
  });
});
