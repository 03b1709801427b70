import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeAll, describe, expect, test } from "vitest";
import { EventBus } from "../../src/events/bus.js";
import type { RunEvent } from "../../src/events/types.js";
import { TRACE_DB_FILE, TraceStore } from "../../src/store/sqlite/trace-store.js";
import { circleReactRun, steppingClock, todoRun } from "../support/trace-events.js";

const CHILD = fileURLToPath(new URL("./writer-child.mjs", import.meta.url));
const dirs: string[] = [];
const stores: TraceStore[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "trace-store-"));
  dirs.push(dir);
  return dir;
}

function openStore(dir: string): TraceStore {
  const store = TraceStore.open(dir);
  stores.push(store);
  return store;
}

/** The v5 statements that write and read events (d558ae3's src/trace/store.ts), as a process of that version prepared them. */
const V5_INSERT = "INSERT INTO events (task_id, seq, type, agent_id, step_id, parent_step_id, trace_id, ts, json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
const V5_READ = "SELECT json FROM events WHERE task_id = ? AND seq > ? ORDER BY seq";

/** A store of schema_version 5, with these events, as the runtime of that version wrote it. */
function writeV5Store(dir: string, events: readonly RunEvent[]): void {
  const db = new Database(join(dir, TRACE_DB_FILE));
  db.pragma("journal_mode = WAL");
  db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta VALUES ('schema_version', '5'), ('agent_index_version', '1'), ('session_index_version', '1');
    CREATE TABLE events (id INTEGER PRIMARY KEY, task_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, agent_id TEXT NOT NULL,
      step_id TEXT, parent_step_id TEXT, trace_id TEXT, ts TEXT NOT NULL, json TEXT NOT NULL);
    CREATE UNIQUE INDEX events_task ON events (task_id, seq);
    CREATE INDEX events_trace_id ON events (trace_id) WHERE trace_id IS NOT NULL;
    CREATE TABLE runs (task_id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, input TEXT NOT NULL, started_at TEXT NOT NULL, finished_at TEXT,
      result_type TEXT, answer TEXT, error TEXT, usage_json TEXT);
    CREATE INDEX runs_agent ON runs (agent_id, started_at);
    CREATE INDEX runs_started ON runs (started_at);
    CREATE TABLE journal (id INTEGER PRIMARY KEY, task_id TEXT NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL, ts TEXT NOT NULL, json TEXT NOT NULL);
    CREATE UNIQUE INDEX journal_key ON journal (task_id, key);
    CREATE TABLE approvals (task_id TEXT NOT NULL, key TEXT NOT NULL, decision TEXT NOT NULL, reason TEXT, ts TEXT NOT NULL, PRIMARY KEY (task_id, key)) WITHOUT ROWID;
    CREATE TABLE run_agents (agent_id TEXT NOT NULL, task_id TEXT NOT NULL, started_at TEXT NOT NULL, PRIMARY KEY (agent_id, task_id)) WITHOUT ROWID;
    CREATE TABLE run_sessions (session_id TEXT NOT NULL, task_id TEXT NOT NULL, started_at TEXT NOT NULL, PRIMARY KEY (session_id, task_id)) WITHOUT ROWID;`);
  const insert = db.prepare(V5_INSERT);
  db.transaction(() => {
    for (const e of events)
      insert.run(e.task_id, e.seq, e.type, e.agent_id, e.step_id ?? null, e.parent_step_id ?? null, e.trace_id ?? null, e.ts, JSON.stringify(e));
  })();
  db.close();
}

afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("TraceStore", () => {
  // What every adapter answers is in test/store/runs.test.ts; here, what is the SQLite adapter's own.
  test("creates its directory, takes events as a sink as it is, and matches shortened ids exactly", () => {
    const dir = join(tempDir(), "nested", ".runtime");
    const store = openStore(dir);
    const bus = new EventBus("task-a", steppingClock());
    bus.subscribe(store.append); // the store is a sink as it is
    const events = circleReactRun("task-a", bus);
    for (const e of todoRun("task-c", new EventBus("task-c", steppingClock("2025-03-01T12:00:00.000Z")))) store.append(e);
    expect(existsSync(join(dir, TRACE_DB_FILE))).toBe(true);
    expect(store.eventsOfTask("task-a")).toEqual(events);
    expect(store.runsOfAgent("solver").map((r) => r.task_id)).toEqual(["task-a"]);
    expect(store.runsOfAgent("nobody")).toEqual([]);
    expect(store.taskIdsMatching("task-")).toEqual(["task-a", "task-c"]);
    expect(store.taskIdsMatching("-c")).toEqual(["task-c"]); // the end of an id
    expect(store.taskIdsMatching("task_")).toEqual([]); // compared exactly: no wildcards
    expect(store.taskIdsMatching("TASK-")).toEqual([]); // nor case folding
  });

  test("a reopened store keeps what was written; a duplicate seq is refused", () => {
    const dir = tempDir();
    const first = TraceStore.open(dir);
    const events = todoRun("task-r");
    for (const e of events) first.append(e);
    first.close();
    first.close(); // idempotent
    const again = openStore(dir);
    expect(again.eventsOfTask("task-r")).toEqual(events);
    expect(() => again.append(events[0]!)).toThrow(/UNIQUE/);
  });

  test("a store written before the session index gets it from its events, once", () => {
    const dir = tempDir();
    const first = TraceStore.open(dir);
    const bus = new EventBus("task-s", steppingClock());
    bus.subscribe(first.append);
    bus.emit({ type: "run.started", input: "hello", session_id: "chat-1" }, { agent_id: "solver" });
    bus.emit(
      { type: "run.finished", result_type: "answer", answer: "hi", usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } },
      { agent_id: "solver" },
    );
    first.close();
    // As an older runtime left it: no session index.
    const db = new Database(join(dir, TRACE_DB_FILE));
    db.exec("DROP TABLE run_sessions; DELETE FROM meta WHERE key = 'session_index_version'");
    db.close();
    const again = openStore(dir);
    expect(again.runsOfSession("chat-1").map((r) => r.task_id)).toEqual(["task-s"]);
    const check = new Database(join(dir, TRACE_DB_FILE), { readonly: true });
    const rows = check.prepare("SELECT session_id, task_id, started_at FROM run_sessions").all();
    check.close();
    expect(rows).toEqual([{ session_id: "chat-1", task_id: "task-s", started_at: "2025-03-01T10:00:00.000Z" }]);
  });

  test("uses the WAL journal, records schema_version 7, stores a run's events in batches and indexes them by task and recursion", () => {
    const dir = tempDir();
    openStore(dir).append(todoRun("t")[0]!);
    const db = new Database(join(dir, TRACE_DB_FILE), { readonly: true });
    try {
      expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get()).toEqual({ value: "7" });
      const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
      expect(tables).toContain("event_batches");
      expect(tables).not.toContain("events");
      const indexes = (
        db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'event_batches' AND sql IS NOT NULL").all() as { name: string }[]
      ).map((r) => r.name);
      expect(indexes).toEqual(["event_batches_task"]);
      for (const table of ["event_batches", "journal"]) {
        expect(db.prepare(`SELECT sql FROM sqlite_master WHERE name = ?`).get(table)).toEqual({ sql: expect.not.stringContaining("WITHOUT ROWID") });
      }
      const byTask = db.prepare("EXPLAIN QUERY PLAN SELECT json FROM event_batches WHERE task_id = ? AND last_seq > ? ORDER BY last_seq").all("x", 0) as {
        detail: string;
      }[];
      expect(byTask.map((p) => p.detail).join(" ")).toContain("USING INDEX event_batches_task");
      const plan = db
        .prepare(
          "EXPLAIN QUERY PLAN SELECT b.json FROM event_traces t JOIN event_batches b ON b.id = t.batch_id WHERE t.trace_id = ? ORDER BY b.task_id, b.last_seq",
        )
        .all("x") as { detail: string }[];
      expect(plan.map((p) => p.detail).join(" ")).toMatch(/SEARCH t USING PRIMARY KEY \(trace_id=\?\).*SEARCH b USING INTEGER PRIMARY KEY/);
    } finally {
      db.close();
    }
  });

  test("the events of a commit are one row per run", () => {
    const dir = tempDir();
    const store = openStore(dir);
    const a = circleReactRun("task-a");
    const b = todoRun("task-b");
    // Two runs' events interleaved in one commit, then the rest of each in a second.
    store.appendAll([
      [a.slice(0, 6), []],
      [b.slice(0, 3), []],
    ]);
    store.appendMany([...a.slice(6), ...b.slice(3)]);
    const check = new Database(join(dir, TRACE_DB_FILE), { readonly: true });
    try {
      const rows = check.prepare("SELECT task_id, first_seq, last_seq FROM event_batches ORDER BY id").all();
      expect(rows).toEqual([
        { task_id: "task-a", first_seq: 1, last_seq: 6 },
        { task_id: "task-b", first_seq: 1, last_seq: 3 },
        { task_id: "task-a", first_seq: 7, last_seq: a.length },
        { task_id: "task-b", first_seq: 4, last_seq: b.length },
      ]);
    } finally {
      check.close();
    }
    // A seq inside a stored batch (not its last) is refused by the batches' trigger.
    expect(() => store.appendMany([a[2]!, b[1]!])).toThrow(/UNIQUE constraint failed: event_batches.first_seq/);
  });

  test("a store written by schema_version 1 (fixture) keeps loading, reading and taking appends, migrated to 7", () => {
    const dir = tempDir();
    const db = new Database(join(dir, TRACE_DB_FILE));
    db.exec(readFileSync(fileURLToPath(new URL("./fixtures/traces-v1.sql", import.meta.url)), "utf8"));
    db.close();
    const store = openStore(dir);
    const check = new Database(join(dir, TRACE_DB_FILE), { readonly: true });
    const names = (check.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND sql IS NOT NULL").all() as { name: string }[]).map(
      (r) => r.name,
    );
    check.close();
    expect(names).toEqual(expect.arrayContaining(["event_batches", "event_batches_task", "event_traces", "journal", "journal_key"]));
    expect(names.filter((n) => n.startsWith("events"))).toEqual([]);
    expect(store.eventsOfTask("v1-task").map((e) => e.type)).toEqual([
      "run.started",
      "agent.started",
      "recursion.started",
      "llm.response",
      "tool.finished",
      "agent.finished",
      "run.finished",
    ]);
    expect(store.eventsOfTrace("v1-tr-1")).toHaveLength(3);
    expect(store.runsOfAgent("solver")).toEqual([
      {
        task_id: "v1-task",
        agent_id: "solver",
        input: "radius 5?",
        started_at: "2025-01-01T00:00:00.000Z",
        finished_at: "2025-01-01T00:00:00.600Z",
        result_type: "answer",
        answer: "78.54",
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      },
    ]);
    for (const e of todoRun("after-v1")) store.append(e);
    expect(store.listRuns().map((r) => r.task_id)).toEqual(["after-v1", "v1-task"]);
  });

  test("a store written by schema_version 4 (WITHOUT ROWID events and journal) moves to batches and a rowid journal with every row, then takes appends", () => {
    const dir = tempDir();
    const db = new Database(join(dir, TRACE_DB_FILE));
    db.exec(readFileSync(fileURLToPath(new URL("./fixtures/traces-v1.sql", import.meta.url)), "utf8"));
    db.exec(`DROP INDEX events_agent; DROP INDEX events_trace;
      CREATE INDEX events_trace_id ON events (trace_id) WHERE trace_id IS NOT NULL;
      CREATE TABLE journal (task_id TEXT NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL, ts TEXT NOT NULL, json TEXT NOT NULL, PRIMARY KEY (task_id, key)) WITHOUT ROWID;
      CREATE TABLE approvals (task_id TEXT NOT NULL, key TEXT NOT NULL, decision TEXT NOT NULL, reason TEXT, ts TEXT NOT NULL, PRIMARY KEY (task_id, key)) WITHOUT ROWID;
      INSERT INTO journal VALUES ('v1-task', 'run', 'run', '2025-01-01T00:00:00.000Z', '{"input":"radius 5?"}');
      INSERT INTO journal VALUES ('v1-task', '0/m0', 'model.reply', '2025-01-01T00:00:00.300Z', '{"content":"x"}');
      UPDATE meta SET value = '4' WHERE key = 'schema_version';`);
    db.close();
    const store = openStore(dir);
    expect(store.eventsOfTask("v1-task").map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(store.eventsOfTrace("v1-tr-1")).toHaveLength(3);
    expect(store.journalOf("v1-task").map((e) => [e.key, e.kind, e.json])).toEqual([
      ["0/m0", "model.reply", '{"content":"x"}'],
      ["run", "run", '{"input":"radius 5?"}'],
    ]);
    for (const e of todoRun("after-v4")) store.append(e);
    store.appendMany([], [{ task_id: "v1-task", key: "0/m0", kind: "model.reply", ts: "2025-01-02T00:00:00.000Z", json: '{"content":"y"}' }]);
    expect(store.journalOf("v1-task").map((e) => e.json)).toEqual(['{"content":"y"}', '{"input":"radius 5?"}']);
    expect(() => store.append({ ...todoRun("after-v4")[0]! })).toThrow(/UNIQUE/);
    const check = new Database(join(dir, TRACE_DB_FILE), { readonly: true });
    try {
      expect(check.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get()).toEqual({ value: "7" });
      const tables = check.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string; sql: string }[];
      expect(tables.map((t) => t.name)).not.toContain("events_old");
      expect(tables.map((t) => t.name)).not.toContain("journal_old");
      expect(tables.map((t) => t.name)).not.toContain("events");
      expect(tables.find((t) => t.name === "journal")?.sql).not.toContain("WITHOUT ROWID");
      expect(check.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'journal' AND sql IS NOT NULL").all()).toEqual([
        { name: "journal_key" },
      ]);
    } finally {
      check.close();
    }
  });

  test("a store written by schema_version 5 (a row per event) moves to batches with every event, its journal, approvals and indexes kept, then takes appends", () => {
    const dir = tempDir();
    const old = circleReactRun("task-5");
    writeV5Store(dir, old);
    const db = new Database(join(dir, TRACE_DB_FILE));
    db.exec(`INSERT INTO runs (task_id, agent_id, input, started_at) VALUES ('task-5', 'solver', 'radius 5?', '2025-01-01T00:00:00.000Z');
      INSERT INTO run_agents VALUES ('solver', 'task-5', '2025-01-01T00:00:00.000Z');
      INSERT INTO journal (task_id, key, kind, ts, json) VALUES ('task-5', 'run', 'run', '2025-01-01T00:00:00.000Z', '{"input":"radius 5?"}');
      INSERT INTO approvals VALUES ('task-5', '0/t0', 'approve', NULL, '2025-01-01T00:00:01.000Z');`);
    db.close();
    const store = openStore(dir);
    expect(store.eventsOfTask("task-5")).toEqual(old);
    expect(store.eventsOfTask("task-5", 4)).toEqual(old.slice(4));
    expect(store.lastSeq("task-5")).toBe(old.length);
    const trace = old.find((e) => e.trace_id !== undefined)!.trace_id!;
    expect(store.eventsOfTrace(trace)).toEqual(old.filter((e) => e.trace_id === trace));
    expect(store.journalOf("task-5").map((e) => e.key)).toEqual(["run"]);
    expect([...store.approvalsOf("task-5").keys()]).toEqual(["0/t0"]);
    expect(store.runsOfAgent("solver").map((r) => r.task_id)).toEqual(["task-5"]);
    // The run goes on (a resume): its next events follow the migrated ones; a seq already stored is refused.
    const next = circleReactRun("task-5").map((e) => ({ ...e, seq: e.seq + old.length }));
    store.appendMany(next.slice(0, 3));
    expect(store.eventsOfTask("task-5", old.length)).toEqual(next.slice(0, 3));
    expect(() => store.appendMany([old[old.length - 1]!])).toThrow(/UNIQUE/);
    const check = new Database(join(dir, TRACE_DB_FILE), { readonly: true });
    try {
      expect(check.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get()).toEqual({ value: "7" });
      expect(check.prepare("SELECT type, name FROM sqlite_master WHERE name LIKE 'events%' ORDER BY name").all()).toEqual([
        { type: "view", name: "events" },
        { type: "trigger", name: "events_insert" },
      ]);
      expect(check.prepare("SELECT COUNT(*) AS n FROM event_batches").get()).toEqual({ n: old.length + 1 });
    } finally {
      check.close();
    }
  });

  test("a process of version 5 that had the store open when it was migrated goes on writing and reading its run through the events view", () => {
    const dir = tempDir();
    const run = circleReactRun("task-old");
    writeV5Store(dir, run.slice(0, 5));
    // The old process: its statements prepared on the version-5 table.
    const oldProcess = new Database(join(dir, TRACE_DB_FILE));
    const oldInsert = oldProcess.prepare(V5_INSERT);
    const oldRead = oldProcess.prepare(V5_READ);
    const oldLast = oldProcess.prepare("SELECT MAX(seq) AS seq FROM events WHERE task_id = ?");
    try {
      const store = openStore(dir);
      for (const e of run.slice(5)) {
        oldInsert.run(e.task_id, e.seq, e.type, e.agent_id, e.step_id ?? null, e.parent_step_id ?? null, e.trace_id ?? null, e.ts, JSON.stringify(e));
      }
      expect(store.eventsOfTask("task-old")).toEqual(run);
      const trace = run.slice(5).find((e) => e.trace_id !== undefined)!.trace_id!;
      expect(store.eventsOfTrace(trace)).toEqual(run.filter((e) => e.trace_id === trace));
      expect((oldRead.all("task-old", 0) as { json: string }[]).map((r) => JSON.parse(r.json))).toEqual(run);
      expect(oldLast.get("task-old")).toEqual({ seq: run.length });
      // A seq the run has is refused to the old process too.
      const again = run[2]!;
      expect(() => oldInsert.run(again.task_id, again.seq, again.type, again.agent_id, null, null, null, again.ts, JSON.stringify(again))).toThrow(/UNIQUE/);
    } finally {
      oldProcess.close();
    }
  });

  test("one append's events of a run must come in seq order, each once: else nothing of it is stored", () => {
    const store = openStore(tempDir());
    const [e1, e2, e3] = todoRun("task-o");
    expect(() => store.appendMany([e1!, e1!])).toThrow(/UNIQUE constraint failed: event_batches.first_seq \(seq 1 of run task-o after 1/);
    expect(() => store.appendMany([e1!, e3!, e2!])).toThrow(/seq 2 of run task-o after 3/);
    expect(store.lastSeq("task-o")).toBe(0);
    store.appendMany([e1!, e2!, e3!]);
    expect(store.eventsOfTask("task-o").map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  test("processes opening a version-5 store at once migrate it once: each opens it, every event is kept", async () => {
    const dir = tempDir();
    // Large enough that the migration takes a while (the processes start within a few ms of each other).
    const old: RunEvent[] = [];
    for (let t = 0; t < 300; t++) old.push(...circleReactRun(`old-${t}`));
    writeV5Store(dir, old);
    const writers = ["m1", "m2", "m3", "m4"];
    const results = await Promise.all(writers.map((t) => runWriter(dir, t, { count: 20 })));
    for (const r of results) {
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
    }
    const store = openStore(dir);
    for (const t of writers) expect(store.eventsOfTask(t).map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    for (const t of ["old-0", "old-150", "old-299"]) expect(store.eventsOfTask(t)).toEqual(old.filter((e) => e.task_id === t));
  });

  test("a store of schema_version 6 gains the runs' caller: its runs keep no owner, new runs are listed by caller", () => {
    const dir = tempDir();
    const [started] = todoRun("old");
    TraceStore.open(dir).close();
    const db = new Database(join(dir, TRACE_DB_FILE));
    // Version 6 as it was: no caller column, nor its index.
    db.exec("DROP INDEX runs_caller; ALTER TABLE runs DROP COLUMN caller; UPDATE meta SET value = '6' WHERE key = 'schema_version';");
    db.prepare("INSERT INTO runs (task_id, agent_id, input, started_at) VALUES ('old', 'a', 'q', '2025-01-01T00:00:00.000Z')").run();
    db.close();
    const store = openStore(dir);
    store.append({ ...started!, task_id: "new", caller: "alice" } as RunEvent);
    expect(store.run("old")?.caller).toBeUndefined();
    expect(store.run("new")?.caller).toBe("alice");
    expect(store.listRuns({ caller: "alice" }).map((r) => r.task_id)).toEqual(["new"]);
    const check = new Database(join(dir, TRACE_DB_FILE), { readonly: true });
    expect(check.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get()).toEqual({ value: "7" });
    check.close();
  });

  test("refuses a store written by a newer schema, with a clear message", () => {
    const dir = tempDir();
    TraceStore.open(dir).close();
    const db = new Database(join(dir, TRACE_DB_FILE));
    db.prepare("UPDATE meta SET value = '8' WHERE key = 'schema_version'").run();
    db.close();
    expect(() => TraceStore.open(dir)).toThrow(/schema_version 8, newer than this runtime supports \(7\)/);
  });

  test("a reader does not create a missing store, and a file that is not a database is reported in one line", () => {
    const dir = tempDir();
    expect(() => TraceStore.open(join(dir, "nope"), { create: false })).toThrow(/no trace store in .*nope/);
    expect(existsSync(join(dir, "nope"))).toBe(false);
    const garbage = join(dir, "bad");
    TraceStore.open(garbage).close();
    for (const f of readdirSync(garbage)) rmSync(join(garbage, f));
    writeFileSync(join(garbage, TRACE_DB_FILE), "this is not sqlite at all, just text that is long enough to be a header");
    expect(() => TraceStore.open(garbage)).toThrow(/^cannot open trace store .*traces\.db: file is not a database$/);
  });
});

/** Run the writer child; resolve with the seqs it printed (complete lines only) and how it ended. */
function runWriter(
  dir: string,
  taskId: string,
  options: { count?: number; killAfterSeqs?: number },
): Promise<{ printed: number[]; signal: NodeJS.Signals | null; code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const args = [CHILD, dir, taskId, ...(options.count !== undefined ? [String(options.count)] : [])];
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let stderr = "";
    let killed = false;
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (!killed && options.killAfterSeqs !== undefined && out.split("\n").length > options.killAfterSeqs) {
        killed = true;
        child.kill("SIGKILL");
      }
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const lines = out.split("\n");
      lines.pop(); // the text after the last newline is a line the kill cut short
      resolve({ printed: lines.map(Number), signal, code, stderr });
    });
  });
}

describe("TraceStore across processes", () => {
  beforeAll(() => {
    if (!existsSync(fileURLToPath(new URL("../../dist/store/sqlite/trace-store.js", import.meta.url)))) {
      throw new Error("dist/store/sqlite/trace-store.js is missing: run `npm run build` first");
    }
  });

  test("everything appended before a kill -9 is there after reopening, seqs contiguous", async () => {
    const dir = tempDir();
    const { printed, signal, stderr } = await runWriter(dir, "task-crash", { killAfterSeqs: 400 });
    expect(stderr).toBe("");
    expect(signal).toBe("SIGKILL");
    expect(printed.length).toBeGreaterThanOrEqual(400);
    const lastPrinted = printed[printed.length - 1]!;
    expect(printed).toEqual(Array.from({ length: lastPrinted }, (_, i) => i + 1));

    // The writer never closed its connection: what it committed sits in the WAL.
    expect(existsSync(join(dir, `${TRACE_DB_FILE}-wal`))).toBe(true);
    const store = openStore(dir);
    const seqs = store.eventsOfTask("task-crash").map((e) => e.seq);
    // Each printed seq was committed; at most one more was committed but not yet printed.
    expect(seqs.slice(0, lastPrinted)).toEqual(printed);
    expect(seqs.length - lastPrinted).toBeLessThanOrEqual(1);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(store.eventsOfTrace("task-crash-tr-2").map((e) => e.seq)).toEqual([11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    expect(store.listRuns()).toMatchObject([{ task_id: "task-crash", agent_id: "writer" }]);
    expect(store.listRuns()[0]?.finished_at).toBeUndefined();
  });

  test("several processes write one store at the same time without losing an event", async () => {
    const dir = tempDir();
    TraceStore.open(dir).close();
    const results = await Promise.all(["p1", "p2", "p3", "p4"].map((t) => runWriter(dir, t, { count: 300 })));
    for (const r of results) {
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
    }
    const store = openStore(dir);
    for (const t of ["p1", "p2", "p3", "p4"]) {
      expect(store.eventsOfTask(t).map((e) => e.seq)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
    }
    expect(store.runsOfAgent("writer", { limit: 10 })).toHaveLength(4);
  });
});

describe("secrets never reach the store", () => {
  test("keys and bearer tokens are masked in stored events and absent from the database files", () => {
    const dir = tempDir();
    const store = TraceStore.open(dir);
    // The bus is the one redaction stage; the store keeps what it is given.
    const bus = new EventBus("task-secret", steppingClock(), { secrets: ["configured-key-0123456789"] });
    bus.subscribe(store.append);
    const scope = { agent_id: "solver", step_id: "s1", trace_id: "tr-1" };
    bus.emit({ type: "run.started", input: "use key sk-proj-ABCDEFGHIJKLMNOP1234 please" }, { agent_id: "solver" });
    bus.emit(
      {
        type: "tool.started",
        tool: "http",
        call_id: "c1",
        arguments: { url: "https://x.test", headers: { Authorization: "Bearer tok-SECRET-0001", "X-API-Key": "xkey-SECRET-0002" }, apiKey: "ak-SECRET-0003" },
      },
      scope,
    );
    bus.emit(
      {
        type: "tool.finished",
        tool: "http",
        call_id: "c1",
        arguments: { nested: [{ password: "pw-SECRET-0004" }, { client_secret: "cs-SECRET-0005" }] },
        ok: false,
        error: "401 Unauthorized (sent authorization: Bearer tok-SECRET-0006, key configured-key-0123456789)",
        duration_ms: 12,
      },
      scope,
    );
    bus.emit(
      {
        type: "llm.response",
        model: "m",
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
        duration_ms: 1,
        content: '{"api_key": "raw-SECRET-0007"}',
      },
      scope,
    );
    bus.emit(
      { type: "run.finished", result_type: "error", error: "failed with token=abc", usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } },
      { agent_id: "solver" },
    );

    const stored = JSON.stringify(store.eventsOfTask("task-secret"));
    store.close();
    const secrets = ["SECRET-000", "sk-proj-ABCDEFGHIJKLMNOP1234", "configured-key-0123456789"];
    for (const s of secrets) expect(stored).not.toContain(s);
    expect(stored).toContain('"Authorization":"[REDACTED]"');
    expect(stored).toContain("Bearer [REDACTED]");
    expect(stored).toContain('"total_tokens":5'); // usage is not a secret
    // The raw bytes of every file of the store, WAL included.
    for (const file of readdirSync(dir)) {
      const bytes = readFileSync(join(dir, file)).toString("latin1");
      for (const s of secrets) expect(bytes, `${file} holds ${s}`).not.toContain(s);
    }
  });
});
