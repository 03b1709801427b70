/**
 * `listRuns` filters (GET /v1/runs?agent=&status=&session=, docs/server.md#run-history)
 * give the same runs, in the same order, on the embedded SQLite store and on
 * a real PostgreSQL, each filter done by the database: more runs than any
 * limit the store could read in one go and filter afterwards.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { RunEvent, RunEventBody } from "../../src/events/types.js";
import { createStore } from "../../src/store/create.js";
import type { RunQuery } from "../../src/store/runs.js";
import type { Store } from "../../src/store/store.js";
import { startPostgres, type TestPostgres } from "../support/postgres.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const USAGE = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
const OUTCOMES = ["answer", "error", "paused", "running"] as const;

/**
 * Run `i`: entry agent `pipeline` (every third run `solo`), which calls
 * `helper` in every other run; it ends by turns in answer, error, paused or
 * not at all; runs 0..9 belong to the session `chat`.
 */
function runEvents(i: number): RunEvent[] {
  const task = `task-${String(i).padStart(4, "0")}`;
  const entry = i % 3 === 0 ? "solo" : "pipeline";
  const minute = new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString();
  let seq = 0;
  const event = (body: RunEventBody, agent = entry): RunEvent => ({ ...body, seq: ++seq, ts: minute, task_id: task, agent_id: agent }) as RunEvent;
  const events = [event({ type: "run.started", input: `question ${i}`, ...(i < 10 ? { session_id: "chat" } : {}) }), event({ type: "agent.started", kind: "react", input: "" })];
  if (i % 2 === 0) events.push(event({ type: "agent.started", kind: "react", input: "" }, "helper"));
  const outcome = OUTCOMES[i % 4]!;
  if (outcome !== "running") events.push(event({ type: "run.finished", result_type: outcome, usage: USAGE, ...(outcome === "error" ? { error: "boom" } : {}) }));
  return events;
}

const RUNS = 1_200;
const ALL = Array.from({ length: RUNS }, (_, i) => runEvents(i));

/** What the filters should give, from the fixture's own rules, newest first. */
function expected(query: RunQuery): string[] {
  const ids: string[] = [];
  for (let i = RUNS - 1; i >= 0; i--) {
    const entry = i % 3 === 0 ? "solo" : "pipeline";
    const agents = i % 2 === 0 ? [entry, "helper"] : [entry];
    if (query.agent !== undefined && !agents.includes(query.agent)) continue;
    if (query.status !== undefined && OUTCOMES[i % 4] !== query.status) continue;
    if (query.session !== undefined && !(query.session === "chat" && i < 10)) continue;
    ids.push(`task-${String(i).padStart(4, "0")}`);
  }
  return ids.slice(0, query.limit ?? 20);
}

const QUERIES: RunQuery[] = [
  {},
  { limit: 5 },
  { status: "answer", limit: 1000 },
  { status: "running" },
  { status: "paused", agent: "helper", limit: 1000 },
  { status: "error", agent: "solo", limit: 1000 },
  { agent: "helper", limit: 7 },
  { session: "chat" },
  { session: "chat", status: "answer" },
  { session: "chat", agent: "helper", status: "running" },
  { status: "error", agent: "nobody" },
];

let postgres: TestPostgres;
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(() => postgres?.stop());

async function filled(store: Store): Promise<Store> {
  await store.runs.appendMany(ALL.flat());
  return store;
}

describe("run listing filters", () => {
  it("agent, status and session, alone and together, on SQLite and PostgreSQL", async () => {
    const stores = [await filled(await createStore(mkdtempSync(join(tmpdir(), "run-filters-")))), await filled(await createStore(await postgres.createDatabase("filters")))];
    try {
      expect(stores.map((s) => s.kind)).toEqual(["sqlite", "postgres"]);
      for (const store of stores) {
        for (const query of QUERIES) {
          const runs = await store.runs.listRuns(query);
          expect({ kind: store.kind, query, ids: runs.map((r) => r.task_id) }).toEqual({ kind: store.kind, query, ids: expected(query) });
          if (query.status === "running") expect(runs.every((r) => r.finished_at === undefined && r.result_type === undefined)).toBe(true);
          else if (query.status !== undefined) expect(runs.every((r) => r.result_type === query.status)).toBe(true);
        }
        // More answered runs than a store reading a thousand rows and filtering them could find.
        expect(await store.runs.listRuns({ status: "answer", limit: 1000 })).toHaveLength(300);
      }
    } finally {
      for (const s of stores) await s.close();
    }
  });
});

describe("a shortened task id", () => {
  it("names the one run whose id it begins or ends, compared exactly, on SQLite and PostgreSQL", async () => {
    const stores = [await filled(await createStore(mkdtempSync(join(tmpdir(), "run-ids-")))), await filled(await createStore(await postgres.createDatabase("shortened")))];
    // One id begins with what another ends with: neither way may win alone.
    const extra = ["ab12-first", "last-ab12"].map((task_id): RunEvent => ({ type: "run.started", input: "q", seq: 1, ts: "2026-02-01T00:00:00.000Z", task_id, agent_id: "solo" }) as RunEvent);
    try {
      for (const store of stores) {
        await store.runs.appendMany(extra);
        const resolve = (given: string) => store.runs.resolveTaskId(given);
        expect(await resolve("task-0042")).toBe("task-0042");
        expect(await resolve("task-1199")).toBe("task-1199");
        expect(await resolve("1199")).toBe("task-1199"); // the end of an id
        expect(await resolve("ab12-f")).toBe("ab12-first");
        await expect(resolve("ab12")).rejects.toThrow("task_id ab12 is ambiguous: it begins or ends ab12-first, last-ab12");
        await expect(resolve("task-004")).rejects.toThrow("task_id task-004 is ambiguous: it begins or ends task-0040, task-0041, task-0042, task-0043, task-0044, ...");
        await expect(resolve("99")).rejects.toThrow("task_id 99 is ambiguous: it begins or ends task-0099, task-0199, task-0299, task-0399, task-0499, ...");
        for (const given of ["TASK-0042", "%9", "task_0042", "nope"]) await expect(resolve(given)).rejects.toThrow(new RegExp(`^no run with task_id ${given} in `));
      }
    } finally {
      for (const s of stores) await s.close();
    }
  });
});
