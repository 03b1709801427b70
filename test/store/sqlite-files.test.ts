/**
 * SQLite files made by the runtime before its schemas moved into numbered
 * migrations (src/store/sqlite/schema.ts) keep opening, reading and taking
 * writes; and a new file made by the migrations has the same tables as
 * those files (docs/scale-out.md#migrations).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/events/types.js";
import { closePlanTool, sqliteStore } from "../../src/store/sqlite/store.js";
import type { Store } from "../../src/store/store.js";

const FILES = ["traces", "plans", "sessions"] as const;
const dirs: string[] = [];
const stores: Store[] = [];

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) {
    closePlanTool(d);
    rmSync(d, { recursive: true, force: true });
  }
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "sqlite-files-"));
  dirs.push(dir);
  return dir;
}

/** A trace directory holding the three files as the runtime at 0d68bcc left them. */
function oldDirectory(): string {
  const dir = tempDir();
  for (const name of FILES) {
    const db = new Database(join(dir, `${name}.db`));
    db.exec(readFileSync(new URL(`./fixtures/${name}-0d68bcc.sql`, import.meta.url), "utf8"));
    db.close();
  }
  return dir;
}

function open(dir: string): Store {
  const store = sqliteStore(dir);
  stores.push(store);
  return store;
}

/** Every table's columns (name, type, not null, default, key), by table, in name order. */
function tables(file: string): Record<string, unknown[]> {
  const db = new Database(file, { readonly: true });
  try {
    const names = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
    const out: Record<string, unknown[]> = {};
    for (const name of names) {
      const columns = db.prepare(`SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?) ORDER BY name`).all(name);
      out[name] = columns;
    }
    return out;
  } finally {
    db.close();
  }
}

function meta(file: string): Record<string, string> {
  const db = new Database(file, { readonly: true });
  try {
    return Object.fromEntries((db.prepare("SELECT key, value FROM meta").all() as { key: string; value: string }[]).map((r) => [r.key, r.value]));
  } finally {
    db.close();
  }
}

describe("SQLite files of the runtime before migrations", () => {
  it("runs: events, journal, decisions, summaries and the agent and session indexes read as written; appends go on", async () => {
    const store = open(oldDirectory());
    const runs = store.runs;
    const events = await runs.eventsOfTask("task-circle");
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
    expect((await runs.eventsOfTask("task-circle", 29)).map((e) => e.type)).toEqual(["agent.finished", "run.finished"]);
    expect((await runs.eventsOfTrace("tr-2")).map((e) => e.seq)).toEqual([10, 11, 12, 13, 14, 15, 16, 17]);
    expect((await runs.journalOf("task-circle")).map((j) => j.key)).toEqual(["run", "solver#1", "solver#1/m1"]);
    expect(await runs.approvalsOf("task-paused")).toEqual(
      new Map([["writer#1/t1", { key: "writer#1/t1", decision: "deny", reason: "not now", ts: "2025-03-02T11:00:00.000Z" }]]),
    );
    expect(await runs.run("task-circle")).toMatchObject({
      result_type: "answer",
      answer: "Area: 78.54 m², circumference: 31.42 m.",
      usage: { total_tokens: 1725 },
    });
    expect((await runs.listRuns({ agent: "helper" })).map((r) => r.task_id)).toEqual(["task-circle"]);
    expect((await runs.listRuns({ session: "chat" })).map((r) => r.task_id)).toEqual(["task-paused"]);
    expect((await runs.listRuns({ status: "paused" })).map((r) => r.task_id)).toEqual(["task-paused"]);
    expect(await runs.resolveTaskId("paused")).toBe("task-paused");

    const resumed = {
      type: "run.resumed",
      input: "write it",
      after_seq: 3,
      seq: 4,
      ts: "2025-03-03T10:00:00.000Z",
      task_id: "task-paused",
      agent_id: "writer",
    } as RunEvent;
    await runs.appendMany([resumed], [{ task_id: "task-paused", key: "run", kind: "run", ts: resumed.ts, json: "{}" }]);
    expect(await runs.lastSeq("task-paused")).toBe(4);
    expect((await runs.run("task-paused"))?.result_type).toBeUndefined();
    expect(meta(join(store.location, "traces.db"))).toEqual({ schema_version: "7", agent_index_version: "1", session_index_version: "1" });
  });

  it("plans, todo sessions and conversations read as written and take changes; sessions.db gains its schema_version", async () => {
    const dir = oldDirectory();
    const store = open(dir);
    const plans = store.planTool();
    expect(await plans.get_plan_structure("plan-1")).toMatchObject({ status: "running", revision: 2, run_task_id: "task-circle" });
    expect(await plans.update_task_status("plan-1", "t2", "skipped")).toBe(true);
    expect(await plans.get_plan_status("plan-1")).toBe("completed");

    const todos = store.todoSessions();
    expect(await todos.load("sess-1")).toEqual({
      version: 3,
      items: [{ index: 1, content: "Look", status: "completed", tool_calls_count: 1, successes: 1, recent_failures: 0 }],
      active: 1,
    });
    expect(todos.nextVersion("sess-1", 0, new Date())).toBe(4);
    await todos.close();

    const conversations = store.conversations();
    expect(await conversations.load("chat")).toEqual({
      turns: [
        { task_id: "task-a", input: "q1", answer: "a1", ts: "2025-03-01T10:00:00.000Z" },
        { task_id: "task-b", input: "q2", answer: "a2", ts: "2025-03-01T10:01:00.000Z" },
      ],
      summary: "they asked twice",
      through: 1,
    });
    await conversations.append("chat", { task_id: "task-c", input: "q3", answer: "a3", ts: "2025-03-01T10:03:00.000Z" });
    expect((await conversations.load("chat")).turns.map((t) => t.task_id)).toEqual(["task-a", "task-b", "task-c"]);
    await conversations.close();
    expect(meta(join(dir, "plans.db"))).toEqual({ schema_version: "3" });
    expect(meta(join(dir, "sessions.db"))).toEqual({ schema_version: "1" });
  });

  it("a new file made by the migrations has the tables of the old files, column for column", async () => {
    const old = oldDirectory();
    const fresh = tempDir();
    const store = open(fresh);
    await store.ping();
    store.planTool();
    await store.todoSessions().close();
    for (const name of FILES) {
      const { meta: _old, ...before } = tables(join(old, `${name}.db`));
      const { meta: _new, ...after } = tables(join(fresh, `${name}.db`));
      // Columns added by migrations after those files: the runs' caller (trace schema version 7).
      if (name === "traces") {
        const runs = [...(before.runs ?? []), { name: "caller", type: "TEXT", notnull: 0, dflt_value: null, pk: 0 }] as { name: string }[];
        before.runs = runs.sort((x, y) => (x.name < y.name ? -1 : 1));
      }
      expect({ name, tables: after }).toEqual({ name, tables: before });
    }
  });
});
